//! A real S3-protocol server for tests: `moto_server` (PyPI `moto[server]` 5.2.5, which
//! implements the conditional writes vegdb relies on: `If-None-Match: *` and `If-Match` on
//! PutObject answer 412 when they do not hold), started on a free port of 127.0.0.1 with a
//! bucket of its own, stopped when the value is dropped.
//!
//! The server is `$VEGDB_S3_SERVER` (path of `moto_server`; `.ci/run` installs it and sets
//! it), else `moto_server` on `PATH`. Without one the test FAILS, unless `VEGDB_SKIP_S3=1`
//! (a local escape: the test then returns early, saying so on stderr).
//!
//! Use from a test file: `#[path = "s3/mod.rs"] mod s3;` then `let Some(s3) = s3::S3Server::start()
//! else { return };`.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const REGION: &str = "us-east-1";
pub const ACCESS_KEY: &str = "vegdb-test";
pub const SECRET_KEY: &str = "vegdb-test-secret";

pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    pub bucket: String,
}

fn find_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VEGDB_S3_SERVER") {
        let p = PathBuf::from(p);
        assert!(p.exists(), "VEGDB_S3_SERVER={} does not exist", p.display());
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("moto_server"))
            .find(|p| p.is_file())
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl S3Server {
    /// Start a server with an empty bucket. None only when no server is installed and
    /// `VEGDB_SKIP_S3=1`.
    pub fn start() -> Option<S3Server> {
        let Some(bin) = find_server() else {
            if std::env::var("VEGDB_SKIP_S3").is_ok_and(|v| v == "1") {
                eprintln!("VEGDB_SKIP_S3=1 and no moto_server: S3 test skipped");
                return None;
            }
            panic!(
                "no S3 test server: install it (python3 -m venv /tmp/s3 && /tmp/s3/bin/pip install \
                 'moto[server]==5.2.5') and set VEGDB_S3_SERVER=/tmp/s3/bin/moto_server, or set \
                 VEGDB_SKIP_S3=1 to skip the S3 tests locally"
            );
        };
        let port = free_port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let endpoint = format!("http://127.0.0.1:{port}");
        let mut server = S3Server {
            child,
            endpoint,
            bucket: format!("vegdb-{port}"),
        };
        let client = reqwest::blocking::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if client.get(&server.endpoint).send().is_ok() {
                break;
            }
            if let Ok(Some(code)) = server.child.try_wait() {
                panic!("{} exited with {code} at start", bin.display());
            }
            assert!(Instant::now() < deadline, "the S3 server did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        let r = client
            .put(format!("{}/{}", server.endpoint, server.bucket))
            .send()
            .expect("create bucket");
        assert!(r.status().is_success(), "create bucket: {}", r.status());
        Some(server)
    }

    /// `s3://<bucket>/<prefix>`
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// Environment for a `vegdb` child process reaching this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", REGION.into()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
        ]
    }

    /// `object_store` options reaching this server (for `Remote::open_with_options`).
    pub fn options(&self) -> Vec<(&'static str, String)> {
        vec![
            ("aws_endpoint", self.endpoint.clone()),
            ("aws_allow_http", "true".into()),
            ("aws_region", REGION.into()),
            ("aws_access_key_id", ACCESS_KEY.into()),
            ("aws_secret_access_key", SECRET_KEY.into()),
        ]
    }

    /// A `vegdb::remote::Remote` on `prefix` of the bucket.
    pub fn remote(&self, prefix: &str) -> vegdb::remote::Remote {
        let opts = self.options();
        let opts: Vec<(&str, &str)> = opts.iter().map(|(k, v)| (*k, v.as_str())).collect();
        vegdb::remote::Remote::open_with_options(&self.url(prefix), &opts).expect("remote")
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
