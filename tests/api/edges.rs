//! Edges real clients hit: the empty-named parameter of LtGlahn's nvdbapi-V2, hrefs built from
//! the request's `Host`, link positions echoed as sent, and valid references that name no road.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState};

use crate::server::{store, TestServer};

/// A read-only server on 127.0.0.1:0; `public_url` is the configured `--public-url` (None: hrefs
/// from the request, with `http://127.0.0.1:<port>` as the fallback, as `vegdb serve` does).
async fn start(public_url: Option<&str>) -> (u16, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut config = ApiConfig::new(
        public_url
            .map(str::to_string)
            .unwrap_or_else(|| format!("http://{addr}")),
        Duration::from_secs(10),
    );
    config.base_from_request = public_url.is_none();
    let state = AppState::read_only(store(), config);
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    (addr.port(), format!("http://{addr}"))
}

/// The headers nvdbapi-V2's `nvdbVegnett.__init__` sets (nvdbapi.py, `self.headers`).
fn nvdbapi_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        "accept",
        HeaderValue::from_static("application/vnd.vegvesen.nvdb-v2+json"),
    );
    h.insert("X-Client", HeaderValue::from_static("nvdbapi.py"));
    h.insert("X-Kontaktperson", HeaderValue::from_static("Anonymous"));
    h
}

async fn get(client: &reqwest::Client, url: &str, status: u16) -> Value {
    let r = client.get(url).send().await.expect("request");
    let got = r.status().as_u16();
    let text = r.text().await.expect("body");
    assert_eq!(got, status, "GET {url}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: {e}: {text}"))
}

/// LtGlahn/nvdbapi-V2 nvdbapi.py, `nvdbFagdata.nesteForekomst`: the first request merges
/// geofilter, `self.respons = {'inkluder': ['alle'], 'geometritoleranse': None, '': True}` and
/// `{'antall': 1000}`, which `requests` encodes as below (None dropped, '' kept as `=True`); the
/// client then reads `metadata.antall` / `returnert` and follows `metadata.neste.href`
/// verbatim when it contains its `apiurl` (`anrope`: `if not self.apiurl in path`).
#[tokio::test]
async fn nvdbapi_v2_lists_objects_with_its_empty_named_parameter() {
    let (port, _) = start(None).await;
    let apiurl = format!("http://localhost:{port}/nvdb/api/v2/");
    let client = reqwest::Client::builder()
        .default_headers(nvdbapi_headers())
        .build()
        .expect("client");
    let first = get(
        &client,
        &format!("{apiurl}vegobjekter/105?kommune=5031&inkluder=alle&=True&antall=1000"),
        200,
    )
    .await;
    let total = first["metadata"]["antall"].as_u64().expect("rev0 antall");
    let returned = first["metadata"]["returnert"].as_u64().expect("returnert");
    assert!(total > 0 && returned > 0, "{}", first["metadata"]);
    assert!(first["objekter"][0]["egenskaper"].is_array());
    let next = first["metadata"]["neste"]["href"].as_str().expect("href");
    assert!(
        next.contains(&apiurl),
        "the client would not follow {next} (its apiurl is {apiurl})"
    );
    let second = get(&client, next, 200).await;
    assert!(second["metadata"]["returnert"].is_u64());
    // statistikk (nvdbFagdata.statistikk: allfilters only) and a named unknown parameter
    let stat = get(
        &client,
        &format!("{apiurl}vegobjekter/105/statistikk?kommune=5031"),
        200,
    )
    .await;
    assert_eq!(stat["antall"].as_u64(), Some(total));
    let err = get(
        &client,
        &format!("{apiurl}vegobjekter/105?kommune=5031&=True&ukjent=1"),
        422,
    )
    .await;
    assert_eq!(err[0]["code"], 4013, "{err}");
    assert!(err[0]["message"].as_str().unwrap().contains("ukjent"));
}

#[tokio::test]
async fn hrefs_follow_the_host_the_client_connected_to() {
    let (port, listen) = start(None).await;
    let client = reqwest::Client::new();
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let base = format!("http://{host}/nvdb/api/v2");
        let page = get(
            &client,
            &format!("{base}/vegobjekter/105?kommune=5031&antall=2"),
            200,
        )
        .await;
        let next = page["metadata"]["neste"]["href"].as_str().unwrap();
        assert!(
            next.starts_with(&format!("{base}/vegobjekter/105?")),
            "{next}"
        );
        let href = page["objekter"][0]["href"].as_str().unwrap();
        assert!(
            href.starts_with(&format!("{base}/vegobjekter/105/")),
            "{href}"
        );
        let types = get(&client, &format!("{base}/vegobjekter"), 200).await;
        assert!(
            types[0]["href"].as_str().unwrap().starts_with(&base),
            "{}",
            types[0]
        );
        // the redirect of /vegobjekt?id= is absolute on the same host
        let id = page["objekter"][0]["id"].as_u64().unwrap();
        let r = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(format!("{base}/vegobjekt?id={id}"))
            .send()
            .await
            .unwrap();
        let location = r.headers()["location"].to_str().unwrap();
        assert_eq!(location, format!("{base}/vegobjekter/105/{id}"));
    }
    // a Host that is not a plain authority falls back to the listen address
    let r = client
        .get(format!("{listen}/nvdb/api/v2/vegobjekter"))
        .header("host", "evil.example/x")
        .send()
        .await
        .unwrap();
    // hyper may refuse the header itself; if it passes, the fallback is used
    if r.status().is_success() {
        let v: Value = r.json().await.unwrap();
        assert!(v[0]["href"].as_str().unwrap().starts_with(&listen), "{v}");
    } else {
        assert_eq!(r.status().as_u16(), 400);
    }
}

#[tokio::test]
async fn a_configured_public_url_wins_over_the_host() {
    let (port, _) = start(Some("https://vegdb.example.no/prefiks")).await;
    let v = get(
        &reqwest::Client::new(),
        &format!("http://localhost:{port}/nvdb/api/v2/vegobjekter/105?kommune=5031&antall=1"),
        200,
    )
    .await;
    let next = v["metadata"]["neste"]["href"].as_str().unwrap();
    assert!(
        next.starts_with("https://vegdb.example.no/prefiks/nvdb/api/v2/vegobjekter/105?"),
        "{next}"
    );
}

#[tokio::test]
async fn a_link_position_is_echoed_as_sent_and_only_kortform_rounded() {
    let s = TestServer::start().await;
    let link = s.get_json("/vegnett/lenker?antall=1", 200).await;
    let l = &link["objekter"][0];
    let id = l["veglenkeid"].as_u64().unwrap();
    let (a, b) = (
        l["startposisjon"].as_f64().unwrap(),
        l["sluttposisjon"].as_f64().unwrap(),
    );
    // a position with nine decimals inside the segment
    let pos = ((a + (b - a) * 0.4) * 1e9).round() / 1e9 + 1e-9;
    let sent = format!("{pos:.9}");
    let v = s.get_json(&format!("/veg?veglenke={sent}@{id}"), 200).await;
    assert_eq!(
        v["veglenke"]["posisjon"].as_f64(),
        Some(sent.parse::<f64>().unwrap()),
        "{v}"
    );
    let short = v["veglenke"]["kortform"].as_str().unwrap();
    let (short_pos, short_id) = short.split_once('@').unwrap();
    assert_eq!(short_id, id.to_string());
    assert!(short_pos.len() <= "0.12345678".len(), "{short}");
    assert!((short_pos.parse::<f64>().unwrap() - pos).abs() <= 5e-9);
    // the same in /veg/batch
    let batch = s
        .get_json(&format!("/veg/batch?veglenker={sent}@{id}"), 200)
        .await;
    let key = format!("{sent}@{id}");
    assert_eq!(
        batch[&key]["veglenke"]["posisjon"].as_f64(),
        Some(sent.parse::<f64>().unwrap()),
        "{batch}"
    );
}

#[tokio::test]
async fn a_valid_reference_that_names_no_road_is_204() {
    let s = TestServer::start().await;
    let link = s.get_json("/vegnett/lenker?antall=1", 200).await;
    let kortform = link["objekter"][0]["vegreferanse"]["kortform"]
        .as_str()
        .unwrap()
        .replace(' ', "");
    // `5001Kv1234hp1m40-120` -> `5001Kv1234hp1` and 40
    let at = kortform.rfind('m').unwrap();
    let hp = &kortform[..at];
    let from = kortform[at + 1..].split('-').next().unwrap();
    s.get_json(&format!("/veg?vegreferanse={hp}m{from}"), 200)
        .await;
    for meter in ["12345678", "99999999999"] {
        let r = s.get(&format!("/veg?vegreferanse={hp}m{meter}")).await;
        assert_eq!(r.status().as_u16(), 204, "{hp}m{meter}");
        assert!(r.bytes().await.unwrap().is_empty());
    }
    let batch = s
        .get_json(&format!("/veg/batch?vegreferanser={hp}m12345678"), 200)
        .await;
    assert!(batch[format!("{hp}m12345678")].is_null(), "{batch}");
    // still malformed: 422
    s.expect_error(&format!("/veg?vegreferanse={hp}m12x"), 422, 4005)
        .await;
}
