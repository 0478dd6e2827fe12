//! What several benches share: the generation they run on, the read-only state serving it,
//! and a GET through the routes in process.

use std::sync::Arc;
use std::time::Duration;

use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::store::DataDir;

/// The current generation of the data dir in `VEGDB_BENCH_DATA` ("national"), else the demo
/// preset (seed 42) generated into a temporary directory ("demo"), with its label.
pub fn load() -> (String, Generation) {
    if let Ok(root) = std::env::var("VEGDB_BENCH_DATA") {
        let data = DataDir::read_only(root);
        let dir = data.generation_dir(data.current().unwrap().expect("CURRENT"));
        return (
            "national".into(),
            Generation::load(&dir, &|_| {}).unwrap().0,
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Demo, 42, tmp.path()).unwrap();
    let g = Generation::load(&dir, &|_| {}).unwrap().0;
    std::mem::forget(tmp);
    ("demo".into(), g)
}

/// A read-only state serving `g` at `http://127.0.0.1:8080`.
#[allow(dead_code)] // each bench takes what it needs of this module
pub fn app_state(g: Generation) -> AppState {
    AppState::read_only(
        Arc::new(GenerationStore::new(g)),
        ApiConfig::new("http://127.0.0.1:8080", Duration::from_secs(30)),
    )
}

/// The body of `GET path` through the routes in process (200 asserted).
#[allow(dead_code)] // each bench takes what it needs of this module
pub async fn get_bytes(routes: &axum::Router, path: &str) -> axum::body::Bytes {
    use tower::ServiceExt;
    let req = axum::extract::Request::get(path)
        .header("host", "127.0.0.1:8080")
        .body(axum::body::Body::empty())
        .unwrap();
    let r = routes.clone().oneshot(req).await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    axum::body::to_bytes(r.into_body(), 1 << 26).await.unwrap()
}
