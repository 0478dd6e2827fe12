//! The in-process part of an HTTP request: one `/posisjon` request through the whole
//! request stack (`api::stack::App::handle`: request id, CORS, guard, timeout, request base,
//! gzip negotiation, routing, parameters, the query, JSON) against the same request through the
//! routes alone (`api::routes`, no stack), and a `/status`-free fixed answer for scale. No
//! network: the difference is the stack's own cost per request. Data: the tiny preset.
//!
//! The operations layers (metrics, access log, ETag/Cache-Control, the in-flight
//! limit, the rate limit) all switched on (`ops_on`; the access-log lines go to a sink through
//! the server's own buffered writer) against all off (`ops_off`), without a tracing subscriber
//! and with one at `info` writing to a sink (the `request` span exists at `info` in both), and a
//! 304 answered from `If-None-Match`.
//!
//! Instruction counts (noise-free on a busy machine): `STACK_ITERS=N` runs N requests of each
//! mode in its own function and exits without criterion (see `instruction_count_run`).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use criterion::{criterion_group, criterion_main, Criterion};
use tower::ServiceExt;
use vegdb::api::state::{ApiConfig, AppState, OpsOptions};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};

// the server's allocator
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn state_with(ops: OpsOptions) -> AppState {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 7, tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    std::mem::forget(tmp);
    let mut config = ApiConfig::new("http://127.0.0.1:8080", Duration::from_secs(30));
    config.base_from_request = true;
    config.ops = ops;
    AppState::read_only(std::sync::Arc::new(GenerationStore::new(g)), config)
}

/// Every operations layer on (the rate limit far above the bench's rate; the access log's
/// lines formatted and buffered as the server does, then written to a sink).
fn ops_on() -> OpsOptions {
    use vegdb::api::access_log::{AccessLog, LineFormat};
    OpsOptions {
        rate_limit: u32::MAX,
        access_log_to: Some(AccessLog::new(LineFormat::Text, Box::new(std::io::sink()))),
        ..OpsOptions::default()
    }
}

/// Every operations layer off.
fn ops_off() -> OpsOptions {
    OpsOptions {
        metrics: false,
        access_log: false,
        http_cache: false,
        max_in_flight: 0,
        rate_limit: 0,
        ..OpsOptions::default()
    }
}

/// A tracing subscriber at info that writes to a sink (formatting happens, I/O does not).
fn info_subscriber() -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_writer(std::io::sink)
        .finish()
}

/// One request through `app`, its body read.
async fn one(app: &vegdb::api::stack::App, path: &str) -> usize {
    let r = app.handle(request(path)).await;
    axum::body::to_bytes(r.into_body(), 1 << 20)
        .await
        .unwrap()
        .len()
}

/// The apps and the path of the instruction-count run.
struct Counted {
    routes: axum::Router,
    off: vegdb::api::stack::App,
    on: vegdb::api::stack::App,
    path: String,
}

async fn run_routes(c: &Counted, iters: usize) {
    for _ in 0..iters {
        let mut req = request(&c.path);
        vegdb::api::stack::rewrite_suffix_in_place(&mut req);
        let r = c.routes.clone().oneshot(req).await.unwrap();
        axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    }
}

async fn run_app(app: &vegdb::api::stack::App, path: &str, iters: usize) {
    for _ in 0..iters {
        one(app, path).await;
    }
}

// One function per mode, so that callgrind's inclusive cost of each is that mode's work.
#[inline(never)]
fn count_routes(rt: &tokio::runtime::Runtime, c: &Counted, n: usize) {
    rt.block_on(run_routes(c, n))
}
#[inline(never)]
fn count_ops_off(rt: &tokio::runtime::Runtime, c: &Counted, n: usize) {
    rt.block_on(run_app(&c.off, &c.path, n))
}
#[inline(never)]
fn count_ops_on(rt: &tokio::runtime::Runtime, c: &Counted, n: usize) {
    rt.block_on(run_app(&c.on, &c.path, n))
}
#[inline(never)]
fn count_ops_off_info(rt: &tokio::runtime::Runtime, c: &Counted, n: usize) {
    rt.block_on(run_app(&c.off, &c.path, n))
}
#[inline(never)]
fn count_ops_on_info(rt: &tokio::runtime::Runtime, c: &Counted, n: usize) {
    rt.block_on(run_app(&c.on, &c.path, n))
}

/// With `STACK_ITERS=N`: N requests of each mode (after 100 of warm-up), each mode in its own
/// `count_*` function, then exit; false without it. Under `valgrind --tool=callgrind`,
/// `callgrind_annotate --inclusive=yes` gives each function's instructions: divide by N.
fn instruction_count_run(rt: &tokio::runtime::Runtime) -> bool {
    let Ok(iters) = std::env::var("STACK_ITERS") else {
        return false;
    };
    let n: usize = iters.parse().unwrap();
    let s = state_with(ops_off());
    let path = path(&s);
    let c = Counted {
        routes: vegdb::api::router::routes(s.clone()),
        off: rt.block_on(vegdb::api::router::app(s)),
        on: rt.block_on(vegdb::api::router::app(state_with(ops_on()))),
        path,
    };
    // warm-up outside the counted functions
    rt.block_on(run_routes(&c, 100));
    count_routes(rt, &c, n);
    rt.block_on(run_app(&c.off, &c.path, 100));
    count_ops_off(rt, &c, n);
    rt.block_on(run_app(&c.on, &c.path, 100));
    count_ops_on(rt, &c, n);
    tracing::subscriber::with_default(info_subscriber(), || {
        rt.block_on(run_app(&c.off, &c.path, 100));
        count_ops_off_info(rt, &c, n);
        rt.block_on(run_app(&c.on, &c.path, 100));
        count_ops_on_info(rt, &c, n);
    });
    true
}

/// A point on a link of the tiny network (its first vertex), as `/posisjon` query.
fn path(s: &AppState) -> String {
    let g = s.store.current();
    let c = g.network.coords[g.network.coords.len() / 2];
    format!(
        "/nvdb/api/v2/posisjon?nord={:.2}&ost={:.2}",
        c[1] + 3.0,
        c[0] - 2.0
    )
}

fn request(path: &str) -> Request {
    Request::get(path)
        .header("host", "127.0.0.1:8080")
        .body(Body::empty())
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if instruction_count_run(&rt) {
        std::process::exit(0);
    }
    let s = state_with(OpsOptions::default());
    let path = path(&s);
    let app = rt.block_on(vegdb::api::router::app(s.clone()));
    let routes = vegdb::api::router::routes(s);
    let check = rt.block_on(app.handle(request(&path)));
    assert_eq!(check.status(), 200);
    let body = rt
        .block_on(axum::body::to_bytes(check.into_body(), 1 << 20))
        .unwrap();
    assert!(
        body.starts_with(b"[{"),
        "{}",
        String::from_utf8_lossy(&body)
    );

    let mut g = c.benchmark_group("posisjon_in_process");
    g.bench_function("whole_stack", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = app.handle(request(&path)).await;
                axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap()
            })
        })
    });
    g.bench_function("routes_only", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut req = request(&path);
                vegdb::api::stack::rewrite_suffix_in_place(&mut req);
                let r = routes.clone().oneshot(req).await.unwrap();
                axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap()
            })
        })
    });
    g.finish();

    // the operations layers on and off
    let on = rt.block_on(vegdb::api::router::app(state_with(ops_on())));
    let off = rt.block_on(vegdb::api::router::app(state_with(ops_off())));
    let tag = rt
        .block_on(on.handle(request(&path)))
        .headers()
        .get("etag")
        .cloned()
        .unwrap();
    let mut g = c.benchmark_group("posisjon_ops");
    for (name, app) in [("ops_off", &off), ("ops_on", &on)] {
        g.bench_function(name, |b| b.iter(|| rt.block_on(one(app, &path))));
    }
    tracing::subscriber::with_default(info_subscriber(), || {
        for (name, app) in [("ops_off_info", &off), ("ops_on_info", &on)] {
            g.bench_function(name, |b| b.iter(|| rt.block_on(one(app, &path))));
        }
    });
    g.bench_function("not_modified_304", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut req = request(&path);
                req.headers_mut().insert("if-none-match", tag.clone());
                let r = on.handle(req).await;
                assert_eq!(r.status(), 304);
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
