//! The direct routes of the request stack (`api::stack::direct`) against the general
//! path as the oracle: two stacks over the same data, one with `direct_routes` and one without,
//! get the same generated requests (`/posisjon` and `/veg` with valid, out-of-range and
//! malformed parameters; the media types clients send; `Origin`, credentials, request ids,
//! `Accept-Encoding`, `If-None-Match`, format suffixes, `HEAD`). Every answer must be the same:
//! status, body and every header (a request id the server makes is checked for its form, as it
//! differs by design). Requests the direct route must leave to the general path are checked to
//! be given back, and the others to be taken. The metrics of both stacks count the same.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use proptest::prelude::*;
use vegdb::api::stack::App;
use vegdb::api::state::{ApiConfig, AppState, OpsOptions};

use crate::server::store;

const BASE: &str = "/nvdb/api/v2";

async fn app(direct_routes: bool) -> App {
    app_with(direct_routes, OpsOptions::default()).await
}

async fn app_with(direct_routes: bool, ops: OpsOptions) -> App {
    let mut config = ApiConfig::new("http://127.0.0.1:1", Duration::from_secs(10));
    config.ops = OpsOptions {
        direct_routes,
        ..ops
    };
    let state = AppState::read_only(store(), config);
    vegdb::api::router::app(state).await
}

/// Valid road references and link positions of the tiny data (from `/posisjon` answers at
/// network coordinates), for `/veg`.
fn positions() -> &'static (Vec<String>, Vec<String>) {
    static P: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    P.get_or_init(|| {
        let g = store().current();
        let coords = &g.network.coords;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let app = app(false).await;
            let (mut roads, mut links) = (Vec::new(), Vec::new());
            for i in (0..coords.len()).step_by((coords.len() / 40).max(1)) {
                let [x, y] = [coords[i][0], coords[i][1]];
                let uri = format!("{BASE}/posisjon?nord={y:.2}&ost={x:.2}&maks_avstand=100");
                let r = app
                    .handle(Request::get(uri).body(Body::empty()).unwrap())
                    .await;
                let v: serde_json::Value = serde_json::from_slice(&body_of(r).await.1).unwrap();
                for p in v.as_array().into_iter().flatten() {
                    if let Some(k) = p["vegreferanse"]["kortform"].as_str() {
                        roads.push(k.to_string());
                    }
                    if let Some(k) = p["veglenke"]["kortform"].as_str() {
                        links.push(k.to_string());
                    }
                }
            }
            assert!(roads.len() > 10 && links.len() > 10, "{roads:?} {links:?}");
            (roads, links)
        })
    })
}

async fn body_of(r: Response) -> (axum::http::response::Parts, Vec<u8>) {
    let (parts, body) = r.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 24).await.unwrap();
    (parts, bytes.to_vec())
}

/// One generated request.
#[derive(Debug, Clone)]
struct Case {
    head: bool,
    path: &'static str,
    params: Vec<(String, String)>,
    headers: Vec<(&'static str, String)>,
}

impl Case {
    fn request(&self) -> Request {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&self.params)
            .finish();
        let uri = format!("{BASE}{}?{query}", self.path);
        let mut b = if self.head {
            Request::head(uri)
        } else {
            Request::get(uri)
        };
        for (k, v) in &self.headers {
            b = b.header(*k, v);
        }
        b.header("host", "127.0.0.1:1").body(Body::empty()).unwrap()
    }

    /// Whether the direct route must take it (the module's conditions, written out again).
    fn direct(&self) -> bool {
        !self.head
            && (self.path == "/posisjon"
                || self.path == "/veg"
                || (self.path.starts_with("/vegobjekter/")
                    && self.path.ends_with("/statistikk")
                    && !self.path.contains('%')))
            && self.headers.iter().all(|(k, v)| {
                *k != "accept-encoding"
                    && *k != "if-none-match"
                    && !(*k == "accept" && v.to_ascii_lowercase().contains("xml"))
            })
    }
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1.0e7..1.0e7f64).prop_map(|v| format!("{v:.2}")),
        Just("abc".to_string()),
        Just(String::new()),
        Just("NaN".to_string()),
        Just(" 12 ".to_string()),
    ]
}

/// A coordinate near the network (in range for the tiny data), or a value of `number()`.
fn coordinate(axis: usize) -> impl Strategy<Value = String> {
    let g = store().current();
    let n = g.network.coords.len();
    prop_oneof![
        9 => (0..n, -50.0..50.0f64).prop_map(move |(i, d)| {
            format!("{:.2}", store().current().network.coords[i][axis] + d)
        }),
        1 => number(),
    ]
}

fn posisjon_params() -> impl Strategy<Value = Vec<(String, String)>> {
    let opt = |s: BoxedStrategy<String>| proptest::option::weighted(0.2, s);
    let rare = |s: BoxedStrategy<String>| proptest::option::weighted(0.06, s);
    (
        proptest::option::weighted(0.9, (coordinate(1), coordinate(0))),
        rare(
            prop_oneof![Just("63.43"), Just("91"), Just("x")]
                .prop_map(str::to_string)
                .boxed(),
        ),
        rare(
            prop_oneof![Just("10.39"), Just("-5")]
                .prop_map(str::to_string)
                .boxed(),
        ),
        opt(prop_oneof![
            8 => (0i64..2_000).prop_map(|v| v.to_string()),
            1 => (-5i64..200_000).prop_map(|v| v.to_string()),
            1 => Just("ti".to_string())
        ]
        .boxed()),
        opt(prop_oneof![
            8 => (1i64..30).prop_map(|v| v.to_string()),
            1 => (-1i64..1200).prop_map(|v| v.to_string()),
            1 => Just("2.5".into())
        ]
        .boxed()),
        opt(prop_oneof![Just("true"), Just("false"), Just("ja")]
            .prop_map(str::to_string)
            .boxed()),
        opt(prop_oneof![Just("true"), Just("false")]
            .prop_map(str::to_string)
            .boxed()),
        rare(
            prop_oneof![
                Just("1EV6"),
                Just("1200KV1018"),
                Just("E6,rv3"),
                Just("ugyldig!")
            ]
            .prop_map(str::to_string)
            .boxed(),
        ),
        opt(prop_oneof![
            Just("32633"),
            Just("4326"),
            Just("5973"),
            Just("wgs84"),
            Just("utm33"),
            Just("9999")
        ]
        .prop_map(str::to_string)
        .boxed()),
        rare(
            prop_oneof![Just("ukjent"), Just("pretty")]
                .prop_map(str::to_string)
                .boxed(),
        ),
    )
        .prop_map(
            |(xy, lat, lon, dist, count, conn, det, road, srid, extra)| {
                let mut p = Vec::new();
                if let Some((nord, ost)) = xy {
                    p.push(("nord".into(), nord));
                    p.push(("ost".into(), ost));
                }
                for (k, v) in [
                    ("lat", lat),
                    ("lon", lon),
                    ("maks_avstand", dist),
                    ("maks_antall", count),
                    ("konnekteringslenker", conn),
                    ("detaljerte_lenker", det),
                    ("vegreferanse", road),
                    ("srid", srid),
                ] {
                    if let Some(v) = v {
                        p.push((k.to_string(), v));
                    }
                }
                if let Some(e) = extra {
                    p.push((e, "true".into()));
                }
                p
            },
        )
}

fn veg_params() -> impl Strategy<Value = Vec<(String, String)>> {
    let (roads, links) = positions();
    let road = prop_oneof![
        4 => proptest::sample::select(roads.clone()),
        1 => Just("1200 EV6 hp1 m99999999".to_string()),
        1 => Just("x y z".to_string()),
    ];
    let link = prop_oneof![
        4 => proptest::sample::select(links.clone()),
        1 => Just("0.1-0.5@123".to_string()),
        1 => Just("1.5@1".to_string()),
        1 => Just("@@".to_string()),
    ];
    let srid = proptest::option::weighted(
        0.3,
        prop_oneof![Just("4326"), Just("25833"), Just("nei")].prop_map(str::to_string),
    );
    let which = prop_oneof![
        11 => (road.clone(), Just(None)).prop_map(|(r, l)| (Some(r), l)),
        6 => (Just(None), link.clone()).prop_map(|(r, l)| (r, Some(l))),
        1 => (road, link).prop_map(|(r, l)| (Some(r), Some(l))),
        1 => Just((None, None)),
    ];
    (which, srid).prop_map(|((r, l), srid)| {
        let mut p = Vec::new();
        for (k, v) in [("vegreferanse", r), ("veglenke", l), ("srid", srid)] {
            if let Some(v) = v {
                p.push((k.to_string(), v));
            }
        }
        p
    })
}

fn statistikk_params() -> impl Strategy<Value = Vec<(String, String)>> {
    let filter = prop_oneof![
        Just(("kommune", "5001")),
        Just(("kommune", "5001,301")),
        Just(("fylke", "50")),
        Just(("vegsystemreferanse", "EV6")),
        Just(("egenskap", "2021!=null")),
        Just(("overlapp", "105")),
        Just(("segmentering", "false")),
        Just(("antall", "10")),
        Just(("kommune", "x")),
        Just(("srid", "4326")),
    ];
    proptest::collection::vec(filter, 0..3).prop_map(|f| {
        f.into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    })
}

fn headers() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    let accept = prop_oneof![
        Just("application/json"),
        Just("application/vnd.vegvesen.nvdb-v2+json"),
        Just("application/vnd.vegvesen.nvdb-v2-rev0+json"),
        Just("application/vnd.vegvesen.nvdb-v2-rev1+json"),
        Just("application/geo+json"),
        Just("application/xml"),
        Just("application/vnd.vegvesen.nvdb-v2-rev1+xml"),
        Just("text/html,application/xhtml+xml"),
        Just("*/*"),
        Just("image/png"),
    ];
    (
        proptest::option::weighted(0.6, accept),
        proptest::option::weighted(0.2, Just("gzip")),
        proptest::option::weighted(0.2, Just("W/\"g1-0000000000000000\", *")),
        proptest::option::weighted(0.3, Just("https://kart.example.no")),
        proptest::option::weighted(0.2, Just("Bearer abc")),
        proptest::option::weighted(0.3, Just("klient-id-7")),
    )
        .prop_map(|(accept, enc, inm, origin, auth, id)| {
            let mut h = Vec::new();
            for (k, v) in [
                ("accept", accept),
                ("accept-encoding", enc),
                ("if-none-match", inm),
                ("origin", origin),
                ("authorization", auth),
                ("x-request-id", id),
            ] {
                if let Some(v) = v {
                    h.push((k, v.to_string()));
                }
            }
            h
        })
}

fn case() -> impl Strategy<Value = Case> {
    let path = prop_oneof![
        6 => Just("/posisjon"),
        4 => Just("/veg"),
        1 => Just("/posisjon.json"),
        1 => Just("/veg.xml"),
        2 => Just("/vegobjekter/105/statistikk"),
        2 => Just("/vegobjekter/95/statistikk"),
        1 => Just("/vegobjekter/999999/statistikk"),
        1 => Just("/vegobjekter/1%30%35/statistikk"),
        1 => Just("/vegobjekter/105/statistikk/"),
    ];
    (
        path,
        any::<bool>(),
        posisjon_params(),
        veg_params(),
        statistikk_params(),
        headers(),
    )
        .prop_map(|(path, head, pp, vp, sp, headers)| Case {
            head: head && path == "/veg",
            path,
            params: if path.starts_with("/posisjon") {
                pp
            } else if path.starts_with("/vegobjekter") {
                sp
            } else {
                vp
            },
            headers,
        })
}

/// Headers as comparable text; a request id the server made is replaced by its form.
fn headers_of(parts: &axum::http::response::Parts, sent_id: bool) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in &parts.headers {
        let mut v = v.to_str().unwrap().to_string();
        if k == "x-request-id" && !sent_id {
            let u = uuid::Uuid::parse_str(&v).expect("a UUID request id");
            assert_eq!(u.get_version_num(), 4);
            v = "<uuid v4>".into();
        }
        // the router states the length; on the direct route hyper does (from the body)
        if k != "content-length" {
            out.entry(k.to_string()).or_default().push(v);
        }
    }
    out
}

#[test]
fn direct_answers_are_the_general_paths() {
    same_answers(OpsOptions::default());
}

/// With listed CORS origins and a cache lifetime the stack's headers differ by request.
#[test]
fn direct_answers_are_the_general_paths_with_listed_origins() {
    same_answers(OpsOptions {
        cors_origins: vec!["https://kart.example.no".into(), "https://a.example".into()],
        cache_max_age: 60,
        ..OpsOptions::default()
    });
}

fn same_answers(ops: OpsOptions) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    positions();
    let (direct, routed) = rt.block_on(async {
        (
            app_with(true, ops.clone()).await,
            app_with(false, ops).await,
        )
    });
    let (taken, left) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 800,
        ..ProptestConfig::default()
    });
    runner
        .run(&case(), |c| {
            rt.block_on(async {
                let must = c.direct();
                let answered = match direct.try_direct(c.request()) {
                    Ok(r) if must => {
                        taken.set(taken.get() + 1);
                        r
                    }
                    Err(req) if !must => {
                        left.set(left.get() + 1);
                        direct.handle_routed(req, None).await
                    }
                    // a statistics selection longer than its quick slice on the worker (a slow
                    // machine): given back, marked for the blocking pool
                    Err(req)
                        if req
                            .extensions()
                            .get::<vegdb::api::read::vegobjekter::QuickSliceSpent>()
                            .is_some() =>
                    {
                        direct.handle_routed(req, None).await
                    }
                    Ok(_) => panic!("taken directly but must not be: {c:?}"),
                    Err(_) => panic!("not taken directly: {c:?}"),
                };
                let (dp, db) = body_of(answered).await;
                let (rp, rb) = body_of(routed.handle(c.request()).await).await;
                let sent_id = c.headers.iter().any(|(k, _)| *k == "x-request-id");
                prop_assert_eq!(dp.status, rp.status, "{:?}", c);
                prop_assert_eq!(
                    String::from_utf8_lossy(&db),
                    String::from_utf8_lossy(&rb),
                    "{:?}",
                    c
                );
                prop_assert_eq!(
                    headers_of(&dp, sent_id),
                    headers_of(&rp, sent_id),
                    "{:?}",
                    c
                );
                if let Some(len) = rp.headers.get("content-length").filter(|_| !c.head) {
                    prop_assert_eq!(len.to_str().unwrap(), db.len().to_string());
                }
                Ok(())
            })
        })
        .unwrap();
    // both kinds were drawn often enough to mean something
    let (taken, left) = (taken.get(), left.get());
    assert!(taken > 150 && left > 150, "taken {taken}, left {left}");
    // every request counted alike
    let counts = |app: &App| {
        rt.block_on(async {
            let r = app
                .handle(Request::get("/metrics").body(Body::empty()).unwrap())
                .await;
            let text = String::from_utf8(body_of(r).await.1).unwrap();
            text.lines()
                .filter(|l| l.starts_with(vegdb::metrics::REQUESTS))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
    };
    let (mut d, mut r) = (counts(&direct), counts(&routed));
    d.sort();
    r.sort();
    assert!(r.iter().any(|l| l.contains("posisjon")), "{r:?}");
    assert_eq!(d, r);
    // and enough of them were answers with data
    let ok = |route: &str| {
        r.iter()
            .filter(|l| l.contains(&format!("{route}\",status=\"200\"")))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum::<u64>()
    };
    assert!(ok("/posisjon") > 50 && ok("/veg") > 30, "{r:?}");
    assert!(ok("/vegobjekter*") > 30, "{r:?}");
}

/// A statistics request whose quick slice cannot run (a query budget no longer than the slice)
/// is given back by the direct route, marked so that the handler goes to the blocking pool at
/// once; and answered there as the general path answers it.
#[tokio::test]
async fn a_statistics_request_for_the_blocking_pool_is_given_back_marked() {
    let app = |direct_routes| async move {
        let mut config = ApiConfig::new("http://127.0.0.1:1", Duration::from_secs(10));
        config.query_budget = Duration::from_micros(100);
        config.ops.direct_routes = direct_routes;
        vegdb::api::router::app(AppState::read_only(store(), config)).await
    };
    let (direct, routed) = (app(true).await, app(false).await);
    let req = || {
        Request::get(format!("{BASE}/vegobjekter/105/statistikk?kommune=5001"))
            .body(Body::empty())
            .unwrap()
    };
    let given_back = direct.try_direct(req()).expect_err("not answered directly");
    assert!(given_back
        .extensions()
        .get::<vegdb::api::read::vegobjekter::QuickSliceSpent>()
        .is_some());
    // the general path of the same app and of an app without direct routes agree on the status
    // (200, or 503 when 100 µs were not enough on this machine)
    let a = direct.handle_routed(given_back, None).await.status();
    let b = routed.handle(req()).await.status();
    assert!(a == 200 || a == 503, "{a}");
    assert!(b == 200 || b == 503, "{b}");
}
