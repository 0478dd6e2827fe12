//! The hand-written request stack (`api::stack`) against the tower-http layers it
//! replaced: the CORS headers of ordinary and preflight requests are those `CorsLayer::permissive`
//! gives, request ids are UUID v4 and unique, and the per-core runtime serves connections spread
//! over several runtimes and shuts down gracefully.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use tower::{Layer, ServiceExt};
use tower_http::cors::CorsLayer;
use vegdb::api::state::{ApiConfig, AppState};

use crate::server::{store, TestServer};

/// The headers tower-http's permissive CORS layer puts on a response to `req`.
async fn cors_layer_headers(req: Request) -> Vec<(String, String)> {
    let inner = tower::service_fn(|_req: Request| async {
        Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
    });
    let r = CorsLayer::permissive()
        .layer(inner)
        .oneshot(req)
        .await
        .unwrap();
    r.headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect()
}

fn cors_of(r: &reqwest::Response) -> BTreeSet<(String, String)> {
    r.headers()
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("access-control-"))
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect()
}

fn vary_of(r: &reqwest::Response) -> BTreeSet<String> {
    r.headers()
        .get_all("vary")
        .iter()
        .flat_map(|v| {
            v.to_str()
                .unwrap()
                .split(',')
                .map(|s| s.trim().to_lowercase())
        })
        .collect()
}

#[tokio::test]
async fn cors_headers_are_those_of_the_permissive_layer() {
    let s = TestServer::start().await;
    let url = format!("{}/posisjon?lat=63.43&lon=10.39&maks_avstand=5000", s.base);
    // an ordinary request, with and without Origin
    for origin in [None, Some("https://example.org")] {
        let mut req = Request::get("/x");
        let mut get = s.client.get(&url);
        if let Some(o) = origin {
            req = req.header("origin", o);
            get = get.header("Origin", o);
        }
        let expected = cors_layer_headers(req.body(Body::empty()).unwrap()).await;
        let r = get.send().await.unwrap();
        assert_eq!(r.status(), 200);
        let want: BTreeSet<_> = expected
            .iter()
            .filter(|(k, _)| k.starts_with("access-control-"))
            .cloned()
            .collect();
        assert!(!want.is_empty());
        assert_eq!(cors_of(&r), want, "{origin:?}");
        let vary = vary_of(&r);
        for (_, v) in expected.iter().filter(|(k, _)| k == "vary") {
            for item in v.split(',') {
                assert!(
                    vary.contains(&item.trim().to_lowercase()),
                    "{vary:?} lacks {v}"
                );
            }
        }
    }
    // a preflight
    let req = Request::options("/x")
        .header("origin", "https://example.org")
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "x-client, accept")
        .body(Body::empty())
        .unwrap();
    let expected: BTreeSet<_> = cors_layer_headers(req)
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with("access-control-"))
        .collect();
    let r = s
        .client
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://example.org")
        .header("Access-Control-Request-Method", "GET")
        .header("Access-Control-Request-Headers", "x-client, accept")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(cors_of(&r), expected);
    assert!(r.headers().contains_key("x-request-id"));
}

/// Both things an answer varies by are one `Vary` line (one header to write per answer), on
/// the direct route, the general path and a compressed answer alike. (A small answer to a
/// client that accepts gzip is not compressed, and the compression layer then adds no
/// `accept-encoding` to it.)
#[tokio::test]
async fn vary_is_one_line_naming_accept_encoding_and_accept() {
    let s = TestServer::start().await;
    for (path, encoding) in [
        ("/posisjon?lat=63.43&lon=10.39&maks_avstand=5000", None),
        ("/vegobjekter/105?antall=20", None),
        ("/vegobjekter/105?antall=20", Some("gzip")),
        ("/status", None),
    ] {
        let mut get = s.client.get(format!("{}{path}", s.base));
        if let Some(e) = encoding {
            get = get.header("Accept-Encoding", e);
        }
        let r = get.send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        if let Some(e) = encoding {
            assert_eq!(r.headers()["content-encoding"], e, "{path} is compressed");
        }
        let lines: Vec<_> = r.headers().get_all("vary").iter().collect();
        assert_eq!(lines.len(), 1, "{path} {encoding:?}: {lines:?}");
        assert_eq!(
            vary_of(&r),
            BTreeSet::from(["accept".to_string(), "accept-encoding".to_string()]),
            "{path} {encoding:?}"
        );
    }
}

#[tokio::test]
async fn request_ids_are_fresh_uuids_unless_sent() {
    let s = TestServer::start().await;
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        let r = s
            .client
            .get(format!("{}/status", s.base))
            .send()
            .await
            .unwrap();
        let id = r.headers()["x-request-id"].to_str().unwrap().to_string();
        let u = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(u.get_version_num(), 4, "{id}");
        assert!(seen.insert(id));
    }
}

/// Connections handed round robin to three single-threaded runtimes on their own threads are
/// all served, and a shutdown lets a request in flight finish.
#[test]
fn per_core_runtimes_share_the_connections() {
    let mut handles = Vec::new();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut threads = Vec::new();
    for _ in 0..3 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        handles.push(rt.handle().clone());
        let mut stopped = stopped.clone();
        threads.push(std::thread::spawn(move || {
            rt.block_on(async move {
                let _ = stopped.wait_for(|s| *s).await;
            })
        }));
    }
    let main = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    main.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = AppState::read_only(
            store(),
            ApiConfig::new(format!("http://{addr}"), Duration::from_secs(10)),
        );
        let (quit, quitting) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(vegdb::server::serve_on(
            listener,
            state,
            async {
                let _ = quitting.await;
            },
            handles,
        ));
        // a point 3 m off a vertex of the network
        let c = {
            let g = store().current();
            g.network.coords[g.network.coords.len() / 2]
        };
        let url = format!(
            "http://{addr}/nvdb/api/v2/posisjon?nord={:.2}&ost={:.2}",
            c[1] + 3.0,
            c[0]
        );
        // six clients (own connection pools): two connections per runtime
        let mut clients = Vec::new();
        for _ in 0..6 {
            clients.push(reqwest::Client::new());
        }
        for round in 0..3 {
            for (i, c) in clients.iter().enumerate() {
                let r = c.get(&url).send().await.unwrap();
                assert_eq!(r.status(), 200, "client {i} round {round}");
                let v: serde_json::Value = r.json().await.unwrap();
                assert!(v.as_array().is_some_and(|a| a.len() == 1), "{v}");
            }
        }
        let _ = quit.send(());
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("graceful shutdown finishes")
            .unwrap()
            .unwrap();
    });
    let _ = stop.send(true);
    for t in threads {
        t.join().unwrap();
    }
}

/// A child process killed when dropped (also when an assertion fails).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `vegdb serve --runtime shared|per-core --workers N`: both serve requests on several
/// connections at once and name their runtime in the start-up log.
#[tokio::test]
async fn both_runtimes_serve_from_the_command_line() {
    for (runtime, workers) in [("shared", "2"), ("per-core", "3")] {
        let tmp = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let log_path = tmp.path().join("serve.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/demo");
        let mut child = Killed(
            std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
                .args([
                    "--log",
                    "info",
                    "--log-json",
                    "serve",
                    "--read-only",
                    "--listen",
                ])
                .arg(format!("127.0.0.1:{port}"))
                .arg("--data")
                .arg(tmp.path().join("none"))
                .args(["--demo", demo, "--runtime", runtime, "--workers", workers])
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        let base = format!("http://127.0.0.1:{port}/nvdb/api/v2");
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                panic!(
                    "{runtime}: exited {status}: {}",
                    std::fs::read_to_string(&log_path).unwrap()
                );
            }
            if let Ok(r) = reqwest::get(format!("{base}/status")).await {
                if r.status().is_success() {
                    break;
                }
            }
            assert!(std::time::Instant::now() < deadline, "{runtime}: not ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // five clients at once, each with its own connection
        let asks: Vec<_> = (0..5)
            .map(|_| {
                let url = format!("{base}/vegobjekttyper/105");
                tokio::spawn(async move {
                    let r = reqwest::Client::new().get(url).send().await.unwrap();
                    (r.status(), r.headers().contains_key("x-request-id"))
                })
            })
            .collect();
        for ask in asks {
            let (status, has_id) = ask.await.unwrap();
            assert_eq!(status, 200, "{runtime}");
            assert!(has_id, "{runtime}");
        }
        let text = std::fs::read_to_string(&log_path).unwrap();
        let named = match runtime {
            "shared" => "\"runtime\":\"Shared\"",
            _ => "\"runtime\":\"PerCore\"",
        };
        assert!(
            text.contains(named) && text.contains(&format!("\"workers\":{workers}")),
            "{text}"
        );
        drop(child);
    }
}
