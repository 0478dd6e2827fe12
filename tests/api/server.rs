//! Test helpers: one tiny generated dataset per test binary, a real server per test on
//! 127.0.0.1:0, and golden-file comparison.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};

pub const SEED: u64 = 7;

/// The tiny dataset, generated once; the directory lives for the whole test run.
pub fn tiny_generation_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = generate_into(Scale::Tiny, SEED, tmp.path()).expect("tiny dataset generates");
        std::mem::forget(tmp);
        dir
    })
    .clone()
}

pub fn store() -> Arc<GenerationStore> {
    static STORE: OnceLock<Arc<GenerationStore>> = OnceLock::new();
    STORE
        .get_or_init(|| {
            let (g, _) =
                Generation::load(&tiny_generation_dir(), &|_| {}).expect("tiny generation loads");
            Arc::new(GenerationStore::new(g))
        })
        .clone()
}

pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = AppState::read_only(
            store(),
            ApiConfig::new(format!("http://{addr}"), Duration::from_secs(10)),
        );
        tokio::spawn(vegdb::server::serve(
            listener,
            state,
            std::future::pending(),
        ));
        TestServer {
            base: format!("http://{addr}/nvdb/api/v2"),
            client: reqwest::Client::new(),
        }
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request")
    }

    /// GET expecting `status`; returns the parsed body. Prints everything on mismatch.
    pub async fn get_json(&self, path: &str, status: u16) -> serde_json::Value {
        let r = self.get(path).await;
        let got = r.status().as_u16();
        let headers = format!("{:?}", r.headers());
        let text = r.text().await.expect("body");
        assert_eq!(got, status, "GET {path}\nheaders: {headers}\nbody: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {text}"))
    }

    /// Assert the API error shape and code.
    pub async fn expect_error(&self, path: &str, status: u16, code: u64) -> String {
        let body = self.get_json(path, status).await;
        let arr = body
            .as_array()
            .unwrap_or_else(|| panic!("GET {path}: error body is not an array: {body}"));
        assert_eq!(arr.len(), 1, "{body}");
        assert_eq!(arr[0]["code"], code, "GET {path}: {body}");
        assert!(arr[0]["help_url"].is_string(), "{body}");
        arr[0]["message"].as_str().expect("message").to_string()
    }
}

/// Compare with `tests/golden/<name>.json` (parsed). `VEGDB_UPDATE_GOLDEN=1` rewrites the file;
/// review the diff before committing.
/// Replace `http://127.0.0.1:<port>` (the test server's random port) with `http://HOST`.
fn normalize_hosts(v: &serde_json::Value) -> serde_json::Value {
    let text = serde_json::to_string(v).expect("json");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("http://127.0.0.1:") {
        out.push_str(&rest[..at]);
        out.push_str("http://HOST");
        rest = &rest[at + "http://127.0.0.1:".len()..];
        rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    serde_json::from_str(&out).expect("json")
}

pub fn golden(name: &str, actual: &serde_json::Value) {
    let actual = &normalize_hosts(actual);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    if std::env::var("VEGDB_UPDATE_GOLDEN").is_ok() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &path,
            serde_json::to_string_pretty(actual).expect("json") + "\n",
        )
        .expect("write golden");
        return;
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}", path.display()));
    let expected: serde_json::Value = serde_json::from_str(&text).expect("golden parses");
    assert_eq!(
        &expected,
        actual,
        "response differs from {}",
        path.display()
    );
}
