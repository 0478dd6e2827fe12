//! Start-up and health (issue 14): the port answers before the data is loaded — `/health` 200,
//! `/ready` 503 and every API request 503 with `Retry-After` in the API's own error shape, on a
//! connection that is closed after the answer — and once the state is there `/ready` is 200,
//! saying what is ready, and `/status` names the version.

use std::time::Duration;

use serde_json::Value;
use vegdb::api::health::Starting;
use vegdb::api::{ApiConfig, AppState};

use crate::server::store;

const VERSION: &str = env!("CARGO_PKG_VERSION");

struct Starter {
    root: String,
    client: reqwest::Client,
    give: Option<tokio::sync::oneshot::Sender<anyhow::Result<AppState>>>,
    served: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn start(step: &str) -> Starter {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (give, take) = tokio::sync::oneshot::channel::<anyhow::Result<AppState>>();
    let loading = async move { take.await.unwrap() };
    let served = tokio::spawn(vegdb::server::serve_starting(
        listener,
        loading,
        Starting::new(step),
        Duration::from_secs(10),
        std::future::pending(),
        Vec::new(),
    ));
    Starter {
        root: format!("http://{addr}"),
        client: reqwest::Client::new(),
        give: Some(give),
        served,
    }
}

async fn get(s: &Starter, path: &str, accept: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let r = s
        .client
        .get(format!("{}{path}", s.root))
        .header("Accept", accept)
        .header("X-Client", "health-test")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn while_loading_every_request_is_503_in_the_api_shape_then_ready() {
    let mut s = start("loading generation 7 from /srv/data").await;

    let (st, h, body) = get(&s, "/health", "*/*").await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["phase"], "starting");
    assert_eq!(v["version"], VERSION);
    assert_eq!(header(&h, "connection"), "close");

    let (st, h, body) = get(&s, "/ready", "*/*").await;
    assert_eq!(st, 503, "{body}");
    assert_eq!(header(&h, "retry-after"), "2");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ready"], false);
    assert_eq!(v["generation"]["ready"], false);
    assert_eq!(
        v["generation"]["detail"],
        "loading generation 7 from /srv/data"
    );
    assert_eq!(v["writer"]["ready"], false);

    // the read API: its error array, code 5000, saying why
    for path in [
        "/nvdb/api/v2/status",
        "/nvdb/api/v2/vegobjekter/105/?antall=1",
        "/",
    ] {
        let (st, h, body) = get(&s, path, "application/json").await;
        assert_eq!(st, 503, "{path}: {body}");
        assert_eq!(header(&h, "retry-after"), "2", "{path}");
        assert_eq!(header(&h, "connection"), "close", "{path}");
        assert!(!header(&h, "x-request-id").is_empty(), "{path}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v[0]["code"], 5000, "{path}: {body}");
        assert!(
            v[0]["message"]
                .as_str()
                .unwrap()
                .contains("loading generation 7"),
            "{body}"
        );
    }
    // the write API: its fault entity, JSON or XML as asked
    let (st, h, body) = get(
        &s,
        "/nvdb/apiskriv/rest/v2/endringssett",
        "application/json",
    )
    .await;
    assert_eq!(st, 503, "{body}");
    assert_eq!(header(&h, "retry-after"), "2");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v["message"].as_str().unwrap().contains("starter"), "{body}");
    let (st, _, body) = get(&s, "/nvdb/apiskriv/rest/v2/endringssett", "application/xml").await;
    assert_eq!(st, 503);
    assert!(
        body.contains("<fault") && body.contains("http://nvdb.vegvesen.no/apiskriv/fault/v1"),
        "{body}"
    );

    // loaded: the same client (its connections were closed) now reaches the application
    let config = ApiConfig::new(s.root.clone(), Duration::from_secs(10));
    let state = AppState::read_only(store(), config);
    let id = state.store.current().id;
    s.give.take().unwrap().send(Ok(state)).ok().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (st, _, body) = get(&s, "/ready", "*/*").await;
        if st == 200 {
            break body;
        }
        assert!(std::time::Instant::now() < deadline, "never ready: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ready"], true, "{body}");
    assert_eq!(v["generation"]["id"], id);
    assert_eq!(v["writer"]["ready"], true, "read-only: no writer needed");
    assert!(v["writer"]["detail"]
        .as_str()
        .unwrap()
        .contains("read-only"));
    let (st, h, body) = get(&s, "/health", "*/*").await;
    assert_eq!(st, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["phase"],
        "serving"
    );
    assert_ne!(header(&h, "connection"), "close");
    let (st, _, body) = get(&s, "/nvdb/api/v2/status", "application/json").await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["tjeneste"]["navn"], "vegdb");
    assert_eq!(v["tjeneste"]["versjon"], VERSION);
    assert_eq!(
        v["datagrunnlag"]["generasjon"]["id"], id,
        "the v2 keys stay"
    );
    assert!(v["datakatalog"]["versjon"].is_string());
    s.served.abort();
}

#[tokio::test]
async fn a_failed_load_stops_the_server_with_its_error() {
    let mut s = start("loading").await;
    let (st, _, _) = get(&s, "/health", "*/*").await;
    assert_eq!(st, 200);
    s.give
        .take()
        .unwrap()
        .send(Err(anyhow::anyhow!("generation 3 is corrupt")))
        .ok()
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), &mut s.served)
        .await
        .expect("the server stops")
        .unwrap();
    let e = outcome.expect_err("the load error is returned");
    assert!(e.to_string().contains("generation 3 is corrupt"), "{e}");
    assert!(
        s.client
            .get(format!("{}/health", s.root))
            .send()
            .await
            .is_err(),
        "the port is closed"
    );
}
