//! The operations layers of the request stack: Prometheus metrics at `/metrics`
//! (parsed with the independent `prometheus-parse` crate), the access log, ETag /
//! Cache-Control / 304, load shedding, the per-client rate limit, br and zstd (decoded with the
//! `brotli` and `zstd` crates), configured CORS origins and the `Server` header.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::routing::get;
use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState, OpsOptions};
use vegdb::generation::{Generation, GenerationStore};

use crate::server::{store, tiny_generation_dir};
use crate::write_server::{changeset, skiltpunkt, usable_link, WriteServer};

/// A read-only server with `ops` over `store`; returns its root URL.
async fn start(store: Arc<GenerationStore>, ops: OpsOptions) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut config = ApiConfig::new(format!("http://{addr}"), Duration::from_secs(10));
    config.ops = ops;
    let state = AppState::read_only(store, config);
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("http://{addr}")
}

/// A `/posisjon` query near the middle of the tiny network.
fn posisjon() -> String {
    let g = store().current();
    let c = g.network.coords[g.network.coords.len() / 2];
    format!(
        "/nvdb/api/v2/posisjon?nord={:.2}&ost={:.2}",
        c[1] + 3.0,
        c[0]
    )
}

/// A scrape: counters/gauges and untyped `_sum`/`_count` by (name, sorted labels), and
/// histograms' buckets.
struct Scrape {
    values: BTreeMap<(String, String), f64>,
    buckets: BTreeMap<(String, String), Vec<(f64, f64)>>,
    docs: BTreeMap<String, String>,
}

fn label_key(labels: &prometheus_parse::Labels) -> String {
    let mut pairs: Vec<(String, String)> =
        labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Scrape {
    fn get(&self, name: &str, labels: &str) -> f64 {
        self.values
            .get(&(name.to_string(), labels.to_string()))
            .copied()
            .unwrap_or(0.0)
    }
}

async fn scrape(client: &reqwest::Client, root: &str) -> Scrape {
    let r = client
        .get(format!("{root}/metrics"))
        .send()
        .await
        .expect("scrape");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = r.text().await.unwrap();
    let parsed =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parses");
    let mut values = BTreeMap::new();
    let mut buckets = BTreeMap::new();
    for s in parsed.samples {
        let key = (s.metric.clone(), label_key(&s.labels));
        match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => {
                values.insert(key, v);
            }
            prometheus_parse::Value::Histogram(hs) => {
                buckets.insert(key, hs.iter().map(|h| (h.less_than, h.count)).collect());
            }
            prometheus_parse::Value::Summary(_) => panic!("no summaries expected: {}", s.metric),
        }
    }
    Scrape {
        values,
        buckets,
        docs: parsed.docs.into_iter().collect(),
    }
}

const POSISJON_200: &str = "route=/nvdb/api/v2/posisjon,status=200";

#[tokio::test]
async fn metrics_count_exactly_the_requests_sent() {
    let root = start(store(), OpsOptions::default()).await;
    let client = reqwest::Client::new();
    let before = scrape(&client, &root).await;
    for _ in 0..7 {
        let r = client
            .get(format!("{root}{}", posisjon()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    for _ in 0..3 {
        let r = client
            .get(format!("{root}/nvdb/api/v2/vegobjekttyper/999999"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    }
    let r = client
        .get(format!("{root}/no/such/path/4711"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let after = scrape(&client, &root).await;
    let delta = |name: &str, labels: &str| after.get(name, labels) - before.get(name, labels);
    let requests = "vegdb_http_requests_total";
    assert_eq!(delta(requests, POSISJON_200), 7.0);
    assert_eq!(
        delta(requests, "route=/nvdb/api/v2/vegobjekttyper*,status=404"),
        3.0
    );
    // the raw path never becomes a label
    assert_eq!(delta(requests, "route=other,status=404"), 1.0);
    assert!(!after
        .values
        .keys()
        .any(|(_, labels)| labels.contains("4711") || labels.contains("999999")));
    // the first scrape is counted once it was answered
    assert_eq!(delta(requests, "route=/metrics,status=200"), 1.0);
    // the whole total moved by exactly the 12 requests
    let total = |s: &Scrape| -> f64 {
        s.values
            .iter()
            .filter(|((n, _), _)| n == requests)
            .map(|(_, v)| v)
            .sum()
    };
    assert_eq!(total(&after) - total(&before), 12.0);
    // the latency histogram counts the same requests; buckets are cumulative up to +Inf
    let latency = "vegdb_http_request_duration_seconds";
    assert_eq!(
        after.get(&format!("{latency}_count"), POSISJON_200)
            - before.get(&format!("{latency}_count"), POSISJON_200),
        7.0
    );
    let b = &after.buckets[&(latency.to_string(), POSISJON_200.to_string())];
    assert!(
        b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "{b:?}"
    );
    let (le, count) = *b.last().unwrap();
    assert!(le.is_infinite());
    assert_eq!(count, after.get(&format!("{latency}_count"), POSISJON_200));
    assert!(after.get(&format!("{latency}_sum"), POSISJON_200) > 0.0);
    // state of the server
    let g = store().current();
    assert_eq!(after.get("vegdb_generation_id", ""), g.id as f64);
    let objects: usize = g.objects.values().map(|t| t.table.len()).sum();
    assert_eq!(after.get("vegdb_generation_objects", ""), objects as f64);
    assert_eq!(
        after.get("vegdb_generation_links", ""),
        g.network.link_id.len() as f64
    );
    assert!(after.get("vegdb_generation_load_seconds", "") > 0.0);
    assert!(after.get("vegdb_generation_age_seconds", "") > 0.0);
    // the scrape itself is not in flight, nothing else is
    assert_eq!(after.get("vegdb_http_requests_in_flight", ""), 0.0);
    assert_eq!(after.get("vegdb_http_requests_shed_total", ""), 0.0);
    for name in [
        requests,
        latency,
        "vegdb_generation_id",
        "vegdb_http_requests_in_flight",
    ] {
        assert!(after.docs.contains_key(name), "no HELP for {name}");
    }
}

#[tokio::test]
async fn metrics_can_be_switched_off() {
    let ops = OpsOptions {
        metrics: false,
        ..OpsOptions::default()
    };
    let root = start(store(), ops).await;
    let r = reqwest::get(format!("{root}/metrics")).await.unwrap();
    assert_eq!(r.status(), 404);
}

/// The writer's figures: a changeset through the write API moves the changeset states, the
/// publish histogram and the generation id, and the writer's queue is empty afterwards; the
/// read answer's ETag changes with the generation the changeset made.
#[tokio::test]
async fn writer_metrics_and_etags_follow_a_changeset() {
    let s = WriteServer::start().await;
    let client = &s.client;
    let before = scrape(client, &s.root).await;
    let url = format!("{}/nvdb/api/v2/vegobjekter/95?antall=2", s.root);
    let first = client.get(&url).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].clone();
    let (link, _) = usable_link(&s.store.current());
    let done = s
        .run(
            &s.writer_token,
            &changeset(
                serde_json::json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}),
            ),
        )
        .await;
    assert_eq!(done["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{done}");
    let after = scrape(client, &s.root).await;
    let state = |sc: &Scrape, st: &str| sc.get("vegdb_changesets", &format!("state={st}"));
    assert_eq!(
        state(&after, "UTFØRT_OG_ETTERBEHANDLET") - state(&before, "UTFØRT_OG_ETTERBEHANDLET"),
        1.0
    );
    assert_eq!(state(&after, "BEHANDLES"), 0.0);
    assert_eq!(after.get("vegdb_writer_queue_length", ""), 0.0);
    assert!(after.get("vegdb_journal_files", "") >= 1.0);
    let publish = "vegdb_publish_duration_seconds_count";
    assert_eq!(after.get(publish, "") - before.get(publish, ""), 1.0);
    assert_eq!(
        after.get("vegdb_generation_id", ""),
        s.store.current().id as f64
    );
    assert!(after.get("vegdb_generation_id", "") > before.get("vegdb_generation_id", ""));
    // the old tag no longer matches
    let again = client
        .get(&url)
        .header("If-None-Match", tag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    assert_ne!(again.headers()["etag"], tag);
    // the write API carries no cache headers
    let w = client
        .get(format!("{}/nvdb/apiskriv/rest/v2/endringssett", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .send()
        .await
        .unwrap();
    assert_eq!(w.status(), 200);
    assert!(w.headers().get("etag").is_none());
    assert!(w.headers().get("cache-control").is_none());
}

/// A store of its own (its generation is swapped by the test).
fn own_store() -> Arc<GenerationStore> {
    let (g, _) = Generation::load(&tiny_generation_dir(), &|_| {}).unwrap();
    Arc::new(GenerationStore::new(g))
}

#[tokio::test]
async fn etags_are_stable_per_generation_and_answer_304() {
    let store = own_store();
    let root = start(store.clone(), OpsOptions::default()).await;
    let client = reqwest::Client::new();
    let url = format!("{root}{}", posisjon());
    let a = client.get(&url).send().await.unwrap();
    let b = client.get(&url).send().await.unwrap();
    assert_eq!(a.status(), 200);
    let tag = a.headers()["etag"].clone();
    assert!(tag.to_str().unwrap().starts_with("W/\""), "{tag:?}");
    assert_eq!(b.headers()["etag"], tag);
    let head = client.head(&url).send().await.unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["etag"], tag);
    assert_eq!(a.headers()["cache-control"], "public, no-cache");
    assert!(a
        .headers()
        .get_all("vary")
        .iter()
        .flat_map(|v| v.to_str().unwrap().split(',').map(|s| s.trim().to_string()))
        .any(|v| v == "accept"));
    let body = a.text().await.unwrap();
    // a matching If-None-Match (also in a list, also strong) is 304 without a body
    for inm in [
        tag.to_str().unwrap().to_string(),
        format!("\"x\", {}", tag.to_str().unwrap()),
        tag.to_str().unwrap().trim_start_matches("W/").to_string(),
    ] {
        let r = client
            .get(&url)
            .header("If-None-Match", &inm)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 304, "{inm}");
        assert_eq!(r.headers()["etag"], tag);
        assert_eq!(r.headers()["cache-control"], "public, no-cache");
        assert!(r.text().await.unwrap().is_empty());
    }
    // another representation or another request has another tag
    let xml = client
        .get(&url)
        .header("Accept", "application/xml")
        .send()
        .await
        .unwrap();
    assert_ne!(xml.headers()["etag"], tag);
    let other = client
        .get(format!("{url}&maks_antall=2"))
        .send()
        .await
        .unwrap();
    assert_ne!(other.headers()["etag"], tag);
    let stale = client
        .get(&url)
        .header("If-None-Match", "W/\"g0-0000000000000000\"")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 200);
    assert_eq!(stale.text().await.unwrap(), body);
    // errors, /status and the metrics carry no tag
    for path in [
        "/nvdb/api/v2/vegobjekttyper/999999",
        "/nvdb/api/v2/status",
        "/metrics",
    ] {
        let r = client.get(format!("{root}{path}")).send().await.unwrap();
        assert!(r.headers().get("etag").is_none(), "{path}");
    }
    // a new generation: the same request gets a new tag, the old one is answered in full
    let (mut g, _) = Generation::load(&tiny_generation_dir(), &|_| {}).unwrap();
    g.id = store.current_id() + 1;
    store.swap(g);
    let r = client
        .get(&url)
        .header("If-None-Match", tag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let new_tag = r.headers()["etag"].clone();
    assert_ne!(new_tag, tag);
    assert_eq!(r.text().await.unwrap(), body);
    let r = client
        .get(&url)
        .header("If-None-Match", new_tag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    // credentials make the answer private
    let r = client
        .get(&url)
        .header("Authorization", "Bearer abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["cache-control"], "private, no-cache");
    assert_ne!(r.headers()["etag"], new_tag);
    // max-age and switching it off
    let root = start(
        store.clone(),
        OpsOptions {
            cache_max_age: 60,
            ..OpsOptions::default()
        },
    )
    .await;
    let r = client
        .get(format!("{root}{}", posisjon()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["cache-control"], "public, max-age=60");
    let root = start(
        store,
        OpsOptions {
            http_cache: false,
            ..OpsOptions::default()
        },
    )
    .await;
    let r = client
        .get(format!("{root}{}", posisjon()))
        .header("If-None-Match", new_tag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("etag").is_none());
}

/// The request stack over a router with a slow route, with `ops`.
async fn app_with_slow_route(ops: OpsOptions) -> vegdb::api::stack::App {
    let mut config = ApiConfig::new("http://127.0.0.1:1", Duration::from_secs(10));
    config.ops = ops;
    let state = AppState::read_only(store(), config);
    let router = vegdb::api::router::routes(state.clone()).merge(axum::Router::new().route(
        "/nvdb/api/v2/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            "slow"
        }),
    ));
    vegdb::api::stack::App::new(router, &state).await
}

fn request(path: &str) -> Request {
    Request::get(path)
        .header("host", "127.0.0.1:1")
        .body(Body::empty())
        .unwrap()
}

async fn body_json(r: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {bytes:?}"))
}

#[tokio::test]
async fn a_limit_of_one_sheds_while_a_slow_request_runs() {
    let app = app_with_slow_route(OpsOptions {
        max_in_flight: 1,
        retry_after: 3,
        ..OpsOptions::default()
    })
    .await;
    let slow = {
        let app = app.clone();
        tokio::spawn(async move { app.handle(request("/nvdb/api/v2/slow")).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    // a read request: 503, Retry-After, the read API's error array
    let r = app.handle(request(&posisjon())).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "3");
    let v = body_json(r).await;
    assert_eq!(v[0]["code"], 5000, "{v}");
    assert!(v[0]["message"].as_str().unwrap().contains("overbelastet"));
    // a write request: the write API's fault
    let r = app
        .handle(
            Request::post("/nvdb/apiskriv/rest/v2/endringssett")
                .header("content-type", "application/json")
                .body(Body::from("{}"))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status(), 503);
    let v = body_json(r).await;
    assert!(
        v["message"].as_str().unwrap().contains("overbelastet"),
        "{v}"
    );
    // the metrics are still served, and count the shed requests
    let r = app.handle(request("/metrics")).await;
    assert_eq!(r.status(), 200);
    let text = String::from_utf8(
        axum::body::to_bytes(r.into_body(), 1 << 20)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(
        text.lines()
            .any(|l| l == "vegdb_http_requests_shed_total 2"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l == "vegdb_http_requests_in_flight 1"),
        "{text}"
    );
    // the slow one finishes; then there is room again
    let r = slow.await.unwrap();
    assert_eq!(r.status(), 200);
    let r = app.handle(request(&posisjon())).await;
    assert_eq!(r.status(), 200);
    // without a limit nothing is shed
    let app = app_with_slow_route(OpsOptions {
        max_in_flight: 0,
        ..OpsOptions::default()
    })
    .await;
    let slow = {
        let app = app.clone();
        tokio::spawn(async move { app.handle(request("/nvdb/api/v2/slow")).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(app.handle(request(&posisjon())).await.status(), 200);
    assert_eq!(slow.await.unwrap().status(), 200);
}

/// A matching `If-None-Match` is answered before the handler runs: the slow route (400 ms)
/// answers its 304 at once.
#[tokio::test]
async fn a_304_does_not_run_the_handler() {
    let app = app_with_slow_route(OpsOptions::default()).await;
    let t = std::time::Instant::now();
    let r = app.handle(request("/nvdb/api/v2/slow")).await;
    assert!(t.elapsed() >= Duration::from_millis(400));
    assert_eq!(r.status(), 200);
    let tag = r.headers()["etag"].clone();
    let mut req = request("/nvdb/api/v2/slow");
    req.headers_mut().insert("if-none-match", tag.clone());
    let t = std::time::Instant::now();
    let r = app.handle(req).await;
    assert_eq!(r.status(), 304);
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(r.headers()["etag"], tag);
    // `*` matches any current answer: the handler runs and its 200 becomes a 304
    let mut req = request("/nvdb/api/v2/slow");
    req.headers_mut()
        .insert("if-none-match", "*".parse().unwrap());
    let r = app.handle(req).await;
    assert_eq!(r.status(), 304);
    let mut req = request("/nvdb/api/v2/vegobjekttyper/999999");
    req.headers_mut()
        .insert("if-none-match", "*".parse().unwrap());
    assert_eq!(app.handle(req).await.status(), 404);
}

#[tokio::test]
async fn the_rate_limit_is_per_client() {
    let root = start(
        store(),
        OpsOptions {
            rate_limit: 1,
            rate_burst: 2,
            ..OpsOptions::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    let url = format!("{root}{}", posisjon());
    let ask = |who: Option<&'static str>| {
        let mut r = client.get(&url);
        if let Some(w) = who {
            r = r.header("X-Client", w);
        }
        r.send()
    };
    for who in [Some("a"), Some("b"), None] {
        assert_eq!(ask(who).await.unwrap().status(), 200, "{who:?}");
        assert_eq!(ask(who).await.unwrap().status(), 200, "{who:?}");
        let r = ask(who).await.unwrap();
        assert_eq!(r.status(), 429, "{who:?}");
        let wait: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=2).contains(&wait), "{wait}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v[0]["code"], 4000, "{v}");
    }
    // the metrics are not limited, and count the refusals
    let sc = scrape(&client, &root).await;
    assert_eq!(sc.get("vegdb_http_requests_rate_limited_total", ""), 3.0);
    assert_eq!(
        sc.get(
            "vegdb_http_requests_total",
            "route=/nvdb/api/v2/posisjon,status=429"
        ),
        3.0
    );
    // after a second, one more
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(ask(Some("a")).await.unwrap().status(), 200);
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    accept_encoding: Option<&str>,
) -> (Option<String>, Vec<u8>) {
    let mut r = client.get(url);
    if let Some(a) = accept_encoding {
        r = r.header("Accept-Encoding", a);
    }
    let r = r.send().await.unwrap();
    assert_eq!(r.status(), 200);
    let enc = r
        .headers()
        .get("content-encoding")
        .map(|v| v.to_str().unwrap().to_string());
    (enc, r.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn br_and_zstd_bodies_decode_to_the_identity_body() {
    let root = start(store(), OpsOptions::default()).await;
    let client = reqwest::Client::new();
    for path in [
        "/nvdb/api/v2/vegobjekter/105?inkluder=alle&antall=50",
        "/nvdb/api/v2/vegobjekttyper/105",
    ] {
        let url = format!("{root}{path}");
        let (enc, identity) = fetch(&client, &url, None).await;
        assert_eq!(enc, None);
        assert!(identity.len() > 1000, "{path}");
        let (enc, br) = fetch(&client, &url, Some("br")).await;
        assert_eq!(enc.as_deref(), Some("br"));
        let mut decoded = Vec::new();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, identity, "{path}");
        assert!(br.len() < identity.len());
        let (enc, zs) = fetch(&client, &url, Some("zstd")).await;
        assert_eq!(enc.as_deref(), Some("zstd"));
        assert_eq!(zstd::decode_all(&zs[..]).unwrap(), identity, "{path}");
    }
    // q-values choose
    let url = format!("{root}/nvdb/api/v2/vegobjekttyper/105");
    for (accept, chosen) in [
        ("gzip;q=0.5, br;q=0.9, zstd;q=0.1", Some("br")),
        ("br;q=0, zstd", Some("zstd")),
        ("gzip;q=1, br;q=0.5, zstd;q=0.4", Some("gzip")),
        ("identity", None),
    ] {
        let (enc, _) = fetch(&client, &url, Some(accept)).await;
        assert_eq!(enc.as_deref(), chosen, "{accept}");
    }
}

#[tokio::test]
async fn cors_allows_only_the_configured_origins() {
    let allowed = "https://kart.example.no";
    let root = start(
        store(),
        OpsOptions {
            cors_origins: vec![allowed.to_string(), "https://andre.example.no".into()],
            ..OpsOptions::default()
        },
    )
    .await;
    let client = reqwest::Client::new();
    let url = format!("{root}{}", posisjon());
    let r = client
        .get(&url)
        .header("Origin", allowed)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["access-control-allow-origin"], allowed);
    let r = client
        .get(&url)
        .header("Origin", "https://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("access-control-allow-origin").is_none());
    for (origin, ok) in [(allowed, true), ("https://evil.example.com", false)] {
        let r = client
            .request(reqwest::Method::OPTIONS, &url)
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "GET")
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.headers()
                .get("access-control-allow-origin")
                .map(|v| v.to_str().unwrap().to_string()),
            ok.then(|| origin.to_string()),
            "{origin}"
        );
    }
    // the default stays any origin
    let root = start(store(), OpsOptions::default()).await;
    let r = client
        .get(format!("{root}{}", posisjon()))
        .header("Origin", "https://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn every_answer_names_the_server() {
    let root = start(store(), OpsOptions::default()).await;
    let want = format!("vegdb/{}", env!("CARGO_PKG_VERSION"));
    for path in [
        posisjon().as_str(),
        "/nvdb/api/v2/nothing",
        "/metrics",
        "/x",
    ] {
        let r = reqwest::get(format!("{root}{path}")).await.unwrap();
        assert_eq!(r.headers()["server"], want.as_str(), "{path}");
    }
}

/// Access-log output captured in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn access_lines(c: &Captured) -> Vec<Value> {
    String::from_utf8(c.0.lock().unwrap().clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .inspect(|v| assert_eq!(v["target"], "vegdb::access"))
        .collect()
}

/// One info line per request with method, path, status, bytes (as received), latency and
/// request id, also for streamed and compressed bodies; none when switched off.
#[test]
fn the_access_log_has_one_line_per_request() {
    use vegdb::api::access_log::{AccessLog, LineFormat};
    let captured = Captured::default();
    let log = AccessLog::new(LineFormat::Json, Box::new(captured.clone()));
    let ops = || OpsOptions {
        access_log_to: Some(log.clone()),
        ..OpsOptions::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let root = start(store(), ops()).await;
        let client = reqwest::Client::new();
        let asks = [
            (posisjon(), None),
            ("/nvdb/api/v2/vegobjekter/105?antall=20".to_string(), None),
            ("/nvdb/api/v2/vegobjekttyper/105".to_string(), Some("gzip")),
            ("/nvdb/api/v2/vegobjekttyper/999999".to_string(), None),
        ];
        let mut sent = Vec::new();
        for (path, enc) in &asks {
            let mut r = client.get(format!("{root}{path}"));
            if let Some(e) = enc {
                r = r.header("Accept-Encoding", *e);
            }
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            let id = r.headers()["x-request-id"].to_str().unwrap().to_string();
            let len = r.bytes().await.unwrap().len() as u64;
            sent.push((path.clone(), status, id, len));
        }
        // written out by the background flush
        tokio::time::sleep(vegdb::api::access_log::FLUSH_EVERY * 3).await;
        let lines = access_lines(&captured);
        assert_eq!(lines.len(), asks.len(), "{lines:?}");
        for (path, status, id, len) in &sent {
            let line = lines
                .iter()
                .find(|l| l["fields"]["request_id"] == id.as_str())
                .unwrap_or_else(|| panic!("no line for {path}: {lines:?}"));
            let f = &line["fields"];
            assert_eq!(line["level"], "INFO");
            assert_eq!(f["method"], "GET");
            assert_eq!(f["path"], path.as_str());
            assert_eq!(f["status"], *status);
            assert_eq!(f["bytes"], *len, "{path}");
            assert!(f["latency_us"].as_u64().is_some());
        }
        // switched off: no lines
        let root = start(
            store(),
            OpsOptions {
                access_log: false,
                ..ops()
            },
        )
        .await;
        let before = access_lines(&captured).len();
        let r = client
            .get(format!("{root}{}", posisjon()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let _ = r.bytes().await.unwrap();
        log.flush();
        assert_eq!(access_lines(&captured).len(), before);
    });
}

/// The flags reach the stack's options; `*` anywhere is any origin.
#[test]
fn the_flags_set_the_options() {
    use clap::Parser;
    let cli = vegdb::cli::Cli::try_parse_from([
        "vegdb",
        "serve",
        "--access-log",
        "false",
        "--metrics",
        "false",
        "--max-in-flight",
        "7",
        "--rate-limit",
        "5",
        "--rate-burst",
        "9",
        "--cache-max-age",
        "30",
        "--cors-origins",
        "https://a.example,https://b.example",
    ])
    .unwrap();
    let Some(vegdb::cli::Command::Serve(args)) = cli.command else {
        panic!("not serve");
    };
    let o = args.ops.options();
    assert!(!o.access_log && !o.metrics && o.http_cache);
    assert_eq!(
        (o.max_in_flight, o.rate_limit, o.rate_burst, o.cache_max_age),
        (7, 5, 9, 30)
    );
    assert_eq!(o.cors_origins, ["https://a.example", "https://b.example"]);
    let cli = vegdb::cli::Cli::try_parse_from([
        "vegdb",
        "serve",
        "--cors-origins",
        "https://a.example,*",
    ])
    .unwrap();
    let Some(vegdb::cli::Command::Serve(args)) = cli.command else {
        panic!("not serve");
    };
    assert!(args.ops.options().cors_origins.is_empty());
    let defaults = vegdb::cli::Cli::try_parse_from(["vegdb", "serve"]).unwrap();
    let Some(vegdb::cli::Command::Serve(args)) = defaults.command else {
        panic!("not serve");
    };
    let o = args.ops.options();
    let d = OpsOptions::default();
    assert_eq!(
        (
            o.metrics,
            o.access_log,
            o.http_cache,
            o.max_in_flight,
            o.rate_limit,
            o.retry_after
        ),
        (
            d.metrics,
            d.access_log,
            d.http_cache,
            d.max_in_flight,
            d.rate_limit,
            d.retry_after
        )
    );
    assert!(o.cors_origins.is_empty());
}
