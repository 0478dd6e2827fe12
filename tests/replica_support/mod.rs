//! Real `vegdb` processes for the replica tests: a writer, replicas, HTTP helpers.
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_vegdb");
pub const READ: &str = "/nvdb/api/v2";
pub const WRITE: &str = "/nvdb/apiskriv/rest/v2";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `vegdb serve` with `args` on a free port; wait until /status answers.
pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("VEGDB_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vegdb starts");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if client()
            .get(format!("{base}{READ}/status"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            return Server { child, base };
        }
        if let Ok(Some(code)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("server exited with {code} at startup: {err}");
        }
        assert!(Instant::now() < deadline, "server did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub fn get(base: &str, path_and_query: &str) -> Value {
    let r = client()
        .get(format!("{base}{READ}{path_and_query}"))
        .header("X-Client", "replica-test")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{path_and_query}");
    r.json().unwrap()
}

/// `/status` of a server.
pub fn status(base: &str) -> Value {
    get(base, "/status")
}

/// The generation a server serves.
pub fn served_generation(base: &str) -> u64 {
    status(base)["datagrunnlag"]["generasjon"]["id"]
        .as_u64()
        .unwrap()
}

/// Wait until `base` serves generation `id` at least; the time it took.
pub fn wait_for_generation(base: &str, id: u64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let g = served_generation(base);
        if g >= id {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{base} still serves generation {g} after {limit:?} (waiting for {id})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn user(users_file: &Path) -> String {
    vegdb::users::add_user(
        users_file,
        "skriver",
        vec![vegdb::users::Role::Write],
        None,
        None,
    )
    .unwrap()
}
