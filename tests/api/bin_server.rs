//! The real `vegdb` binary as a user runs it: `generate` a tiny dataset into a temporary data
//! directory, optionally `user add` with a password on stdin, then `serve` on a free port of
//! 127.0.0.1 without `--public-url`. Killed when dropped.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");

pub struct BinServer {
    pub port: u16,
    /// `http://127.0.0.1:<port>`
    pub root: String,
    child: Child,
    _tmp: tempfile::TempDir,
}

/// A user to create before the server starts: (name, roles, password).
pub struct NewUser<'a> {
    pub name: &'a str,
    pub roles: &'a str,
    pub password: &'a str,
}

fn run(args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vegdb runs");
    if let Some(text) = stdin {
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(text.as_bytes()).expect("write stdin");
    }
    let out = child.wait_with_output().expect("vegdb finishes");
    assert!(
        out.status.success(),
        "vegdb {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl BinServer {
    pub async fn start(users: &[NewUser<'_>]) -> BinServer {
        let tmp = tempfile::tempdir().expect("temp dir");
        let data = tmp.path().join("data");
        let data_arg = data.to_str().expect("utf-8 path");
        run(&["generate", "--scale", "tiny", "--data", data_arg], None);
        for u in users {
            // README: `vegdb user add NAME --roles ... --password-stdin`.
            run(
                &[
                    "user",
                    "add",
                    u.name,
                    "--roles",
                    u.roles,
                    "--password-stdin",
                    "--data",
                    data_arg,
                ],
                Some(&format!("{}\n", u.password)),
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let log = std::fs::File::create(tmp.path().join("serve.log")).expect("log file");
        let child = Command::new(BIN)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data",
                data_arg,
            ])
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("vegdb serve starts");
        let mut server = BinServer {
            port,
            root: format!("http://127.0.0.1:{port}"),
            child,
            _tmp: tmp,
        };
        server.wait_ready().await;
        server
    }

    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let client = reqwest::Client::new();
        loop {
            if let Some(status) = self.child.try_wait().expect("child status") {
                panic!("vegdb serve exited with {status}:\n{}", self.log());
            }
            let url = format!("{}/nvdb/api/v2/status", self.root);
            if let Ok(r) = client.get(url).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "vegdb serve not ready:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self._tmp.path().join("serve.log")).unwrap_or_default()
    }
}

impl Drop for BinServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
