//! Heavy pages must not starve cheap requests, on the real binary over the
//! demo snapshot: [`HEAVY`] raw TCP clients ask for the largest page of type 105 with
//! `inkluder=alle`, gzipped (half of them never read, half read slowly), and meanwhile
//! `/status` and `/posisjon` are asked one at a time, each on a new connection. Their p99 must
//! stay under [`P99_BOUND`].
//!
//! The bound is for a debug build on a loaded two-core CI machine; the README's limits table
//! states the release figure. Before the fix each heavy chunk was rendered and gzipped on the
//! async worker that owned the connection, and `/status` waited seconds behind them. The test
//! also checks that the load was real: the reading clients got less than [`MAX_SERVED`] of
//! what they were ready to read during the window, so heavy work was waiting all along (the
//! server was the bottleneck; how much CPU it got depends on the machine and is only printed).
//!
//! A test binary of its own (not in `tests/api`): it loads the machine on purpose and must not
//! run beside the other API tests, nor they beside it.
//!
//! `VEGDB_HEAVY_BIN` runs another build of vegdb (e.g. a release build), `VEGDB_HEAVY_P99_MS`
//! changes the bound: `VEGDB_HEAVY_BIN=target/release/vegdb VEGDB_HEAVY_P99_MS=50 cargo test
//! --test heavy_pages -- --nocapture` prints the figures.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Heavy clients at once.
const HEAVY: usize = 40;
/// p99 of `/status` and `/posisjon` under the load (debug build).
const P99_BOUND: Duration = Duration::from_millis(250);
/// How long the cheap requests are measured.
const WINDOW: Duration = Duration::from_secs(12);
/// Largest share of what the reading heavy clients could read that the server may have sent
/// them during the window for the load to count as saturating.
const MAX_SERVED: f64 = 0.5;
/// How much a reading heavy client reads at a time, and how often.
const READ_BYTES: usize = 16 * 1024;
const READ_EVERY: Duration = Duration::from_millis(20);
const HEAVY_PAGE: &str = "/nvdb/api/v2/vegobjekter/105?antall=10000&inkluder=alle";
const CHEAP: [&str; 2] = [
    "/nvdb/api/v2/status",
    "/nvdb/api/v2/posisjon?lat=63.3101&lon=10.5531&maks_avstand=200",
];

struct Server {
    child: Child,
    addr: SocketAddr,
    _tmp: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> String {
    std::env::var("VEGDB_HEAVY_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_vegdb").to_string())
}

/// `vegdb serve` on an empty data directory: it writes and serves the embedded demo.
async fn start() -> Server {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("free port")
        .local_addr()
        .expect("addr")
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let child = Command::new(binary())
        .args(["serve", "--listen", &addr.to_string(), "--data"])
        .arg(&data)
        .env("VEGDB_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("vegdb serve starts");
    let mut server = Server {
        child,
        addr,
        _tmp: tmp,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.child.try_wait().expect("child") {
            panic!("vegdb serve exited: {status}");
        }
        if let Ok((200, _)) = get(addr, CHEAP[0]).await {
            return server;
        }
        assert!(Instant::now() < deadline, "vegdb serve not ready in 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One request on a new connection: (status, time to the whole answer).
async fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, Duration)> {
    let started = Instant::now();
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await?;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .unwrap_or_default();
    Ok((status, started.elapsed()))
}

/// A heavy client: asks for the page gzipped; when `reads`, reads 16 KiB every 20 ms and asks
/// again when the page is complete, else never reads.
async fn heavy_client(addr: SocketAddr, reads: bool, read: Arc<AtomicUsize>) {
    loop {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        // a small receive buffer: a client that does not read holds little of the page
        let _ = socket.set_recv_buffer_size(16 * 1024);
        let Ok(mut s) = socket.connect(addr).await else {
            return;
        };
        let req = format!(
            "GET {HEAVY_PAGE} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"
        );
        if s.write_all(req.as_bytes()).await.is_err() {
            return;
        }
        if !reads {
            std::future::pending::<()>().await;
        }
        let mut buf = vec![0u8; READ_BYTES];
        loop {
            match s.read(&mut buf).await {
                Ok(0) => break,
                Err(_) => return,
                Ok(n) => {
                    read.fetch_add(n, Ordering::Relaxed);
                    tokio::time::sleep(READ_EVERY).await
                }
            }
        }
    }
}

/// CPU time (user + system) the process has used, in clock ticks of 10 ms.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    let rest = &stat[stat.rfind(')').expect("comm") + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields 14 and 15 (utime, stime); `rest` starts at field 3
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

fn p99(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let i = (samples.len() * 99).div_ceil(100).max(1) - 1;
    samples[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_posisjon_stay_fast_while_heavy_pages_render() {
    let server = start().await;
    let addr = server.addr;
    // the unloaded figures, for the report
    let mut quiet = Vec::new();
    for path in CHEAP.iter().cycle().take(20) {
        let (status, took) = get(addr, path).await.expect("cheap request");
        assert_eq!(status, 200, "{path}");
        quiet.push(took);
    }
    let read = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..HEAVY)
        .map(|i| tokio::spawn(heavy_client(addr, i % 2 == 0, read.clone())))
        .collect();
    // let every heavy request be read and its rendering begin
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = server.child.id();
    let cpu_before = cpu_ticks(pid);
    let read_before = read.load(Ordering::Relaxed);
    let started = Instant::now();
    let mut samples: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut i = 0;
    while started.elapsed() < WINDOW {
        let which = i % 2;
        i += 1;
        // an answer later than this counts as this late (the test's time stays bounded)
        let late = Duration::from_secs(5);
        let took = match tokio::time::timeout(late, get(addr, CHEAP[which])).await {
            Ok(answer) => {
                let (status, took) = answer.expect("cheap request");
                assert_eq!(status, 200, "{}", CHEAP[which]);
                took
            }
            Err(_) => late,
        };
        samples[which].push(took);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let window = started.elapsed();
    let busy = (cpu_ticks(pid) - cpu_before) as f64 * 0.01 / window.as_secs_f64();
    let readers = HEAVY.div_ceil(2) as f64;
    let could = readers * READ_BYTES as f64 * window.as_secs_f64() / READ_EVERY.as_secs_f64();
    let served = (read.load(Ordering::Relaxed) - read_before) as f64 / could;
    for c in &clients {
        c.abort();
    }
    let bound = std::env::var("VEGDB_HEAVY_P99_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(P99_BOUND, Duration::from_millis);
    println!(
        "unloaded p99 {:?}; under {HEAVY} heavy clients for {window:?} (server busy {busy:.2} cores, readers got {:.0} % of what they could read): /status p99 {:?} max {:?} ({} samples), /posisjon p99 {:?} max {:?} ({} samples)",
        p99(quiet),
        served * 100.0,
        p99(samples[0].clone()),
        samples[0].iter().max().expect("samples"),
        samples[0].len(),
        p99(samples[1].clone()),
        samples[1].iter().max().expect("samples"),
        samples[1].len(),
    );
    for (path, s) in CHEAP.iter().zip(samples) {
        let n = s.len();
        let p = p99(s);
        assert!(p < bound, "{path}: p99 {p:?} under load, bound {bound:?}");
        assert!(n >= 10, "{path}: only {n} answers in {window:?}");
    }
    assert!(
        served < MAX_SERVED,
        "the heavy clients got {:.0} % of what they could read: the server was not saturated, the test proves nothing",
        served * 100.0
    );
}
