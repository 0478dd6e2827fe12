//! The in-process part of an HTTP request (issue 11): one `/posisjon` request through the whole
//! request stack (`api::stack::App::handle`: request id, CORS, guard, timeout, request base,
//! gzip negotiation, routing, parameters, the query, JSON) against the same request through the
//! routes alone (`api::routes`, no stack), and a `/status`-free fixed answer for scale. No
//! network: the difference is the stack's own cost per request. Data: the tiny preset.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use criterion::{criterion_group, criterion_main, Criterion};
use tower::ServiceExt;
use vegdb::api::{ApiConfig, AppState};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};

// the server's allocator
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn state() -> AppState {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 7, tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    std::mem::forget(tmp);
    let mut config = ApiConfig::new("http://127.0.0.1:8080", Duration::from_secs(30));
    config.base_from_request = true;
    AppState::read_only(std::sync::Arc::new(GenerationStore::new(g)), config)
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
    let s = state();
    let path = path(&s);
    let app = rt.block_on(vegdb::api::app(s.clone()));
    let routes = vegdb::api::routes(s);
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
                vegdb::api::rewrite_suffix_in_place(&mut req);
                let r = routes.clone().oneshot(req).await.unwrap();
                axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap()
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
