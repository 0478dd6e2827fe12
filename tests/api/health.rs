//! Start-up and health: the port answers before the data is loaded — `/health` 200,
//! `/ready` 503 and every API request 503 with `Retry-After` in the API's own error shape, on a
//! connection that is closed after the answer — and once the state is there `/ready` is 200,
//! saying what is ready, and `/status` names the version.

use std::time::Duration;

use serde_json::Value;
use vegdb::api::health::Starting;
use vegdb::api::state::{ApiConfig, AppState};

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
    let mut s = start("loading generation 7").await;

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
    assert_eq!(v["generation"]["detail"], "loading generation 7");
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

/// Replace a file by a FIFO holding the same text: whoever opens it for reading waits until
/// [`feed`] writes the text.
fn fifo_in_place_of(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::remove_file(path).unwrap();
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
    text
}

/// On one connection to the loading server at `port`: a good request and, pipelined behind it,
/// a head with a raw 0xff byte. Returns the first answer and whatever follows it, as text (read
/// until the server closes).
fn pipelined_bad_head(port: u16) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let good = b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\n\r\n";
    let bad = b"GET /nvdb/api/v2/status?\xff=1 HTTP/1.1\r\nHost: x\r\n\r\n";
    s.write_all(&[&good[..], bad].concat()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all).into_owned();
    let second = text[1..]
        .find("HTTP/1.1 ")
        .map(|i| i + 1)
        .unwrap_or(text.len());
    (text[..second].to_string(), text[second..].to_string())
}

/// Write `text` into the FIFO at `path` (blocks until the server opens it).
fn feed(path: std::path::PathBuf, text: String) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::fs::write(&path, text).unwrap();
    })
}

/// While the real binary loads, `/ready`, `/status` and the write API answer
/// 503 saying "loading", and none of them names a path of the server (its data directory).
#[tokio::test]
async fn a_loading_server_says_loading_and_names_no_path_of_its_own() {
    let bin = env!("CARGO_BIN_EXE_vegdb");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("hemmelig-datakatalog");
    let data_arg = data.to_str().unwrap().to_string();
    let out = std::process::Command::new(bin)
        .args(["generate", "--scale", "tiny", "--data", &data_arg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // CURRENT and the generation's manifest as FIFOs: the load stops at each until fed
    let current_path = data.join("CURRENT");
    let current = fifo_in_place_of(&current_path);
    let generation = format!("gen-{:06}", current.trim().parse::<u64>().unwrap());
    let manifest_path = data.join(&generation).join("MANIFEST.json");
    let manifest = fifo_in_place_of(&manifest_path);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = std::process::Command::new(bin)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
        .arg(&data)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let root = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let secrets = [data_arg.clone(), tmp.path().display().to_string()];
    // every answer while loading: 503, "loading", no path
    let answers_while_loading = |expect: &'static str| {
        let (client, root, secrets) = (client.clone(), root.clone(), secrets.clone());
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            // until the server answers at all, and has reached the step
            loop {
                let r = client.get(format!("{root}/ready")).send().await;
                if let Ok(r) = r {
                    let body = r.text().await.unwrap();
                    if body.contains(expect) {
                        break;
                    }
                }
                assert!(std::time::Instant::now() < deadline, "never at {expect}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let requests = [
                client.get(format!("{root}/ready")),
                client.get(format!("{root}/nvdb/api/v2/status")),
                client
                    .post(format!("{root}/nvdb/apiskriv/rest/v2/endringssett"))
                    .header("Content-Type", "application/json")
                    .body("{}"),
                client
                    .get(format!("{root}/nvdb/apiskriv/rest/v2/endringssett"))
                    .header("Accept", "application/xml"),
            ];
            for request in requests {
                let r = request.send().await.unwrap();
                let status = r.status().as_u16();
                let body = r.text().await.unwrap();
                assert_eq!(status, 503, "{body}");
                assert!(body.contains("loading"), "says it is loading: {body}");
                for secret in &secrets {
                    assert!(!body.contains(secret.as_str()), "names {secret}: {body}");
                }
                assert!(!body.contains("hemmelig"), "names the directory: {body}");
            }
        }
    };
    answers_while_loading("opening the data directory").await;
    let fed = feed(current_path, current);
    answers_while_loading("loading generation").await;
    let (first, refusal) = tokio::task::spawn_blocking(move || pipelined_bad_head(port))
        .await
        .unwrap();
    assert!(
        first.starts_with("HTTP/1.1 503"),
        "the loading answer first: {first:.300}"
    );
    // the loading answer closes the connection, so the bad head behind it is never read:
    // no bare status from the HTTP server follows
    assert!(
        first.to_ascii_lowercase().contains("connection: close"),
        "{first:.300}"
    );
    assert!(
        refusal.is_empty(),
        "nothing after the loading answer: {refusal:.300}"
    );
    fed.join().unwrap();
    feed(manifest_path, manifest).join().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(format!("{root}/ready")).send().await {
            if r.status() == 200 {
                break;
            }
        }
        assert!(std::time::Instant::now() < deadline, "never ready");
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}
