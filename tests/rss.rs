//! Memory held for clients that do not read, on the real binary: N raw TCP
//! clients (with a small receive buffer) send a request for the largest page of the tiny
//! dataset and never read. The server's RSS may grow by at most [`MAX_GROWTH_PER_CLIENT`] per
//! such client (README, limits: memory per slow client), far below N × the page size; it comes
//! back down once they close, and clients reading normally still get complete, correct pages.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");
const CLIENTS: usize = 40;
/// README limits table: memory per slow client.
const MAX_GROWTH_PER_CLIENT: u64 = 1 << 20;
/// The largest page of the tiny dataset (type 241, all of it).
const PAGE: &str = "/nvdb/api/v2/vegobjekter/241?antall=10000&inkluder=alle&pretty=true";

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

/// A whole response read by a normal client: (head, body).
fn get(addr: SocketAddr, path: &str) -> (String, Vec<u8>) {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let r = client
        .get(format!("http://{addr}{path}"))
        .send()
        .expect("request");
    let head = format!("{} {:?}", r.status(), r.headers());
    assert!(r.status().is_success(), "{path}: {head}");
    (head, r.bytes().expect("body").to_vec())
}

fn start() -> (Server, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let data = data.to_str().expect("utf-8 path");
    let out = Command::new(BIN)
        .args(["generate", "--scale", "tiny", "--data", data])
        .output()
        .expect("generate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("free port")
        .local_addr()
        .expect("addr")
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let child = Command::new(BIN)
        .args(["serve", "--data", data, "--listen", &addr.to_string()])
        .env("VEGDB_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve runs");
    let server = Server { child, addr };
    let deadline = Instant::now() + Duration::from_secs(60);
    // the port opens before the data is loaded: wait for /ready
    while !reqwest::blocking::get(format!("http://{addr}/ready"))
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, tmp)
}

/// A client that sends the request and never reads, with a small receive buffer so the
/// kernel cannot take the page off the server's hands.
fn unread_client(addr: SocketAddr) -> TcpStream {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    socket.connect(&addr.into()).expect("connect");
    let mut stream: TcpStream = socket.into();
    write!(stream, "GET {PAGE} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send request");
    stream
}

/// RSS once it stops rising (the server has rendered what it will for the clients).
fn settled_rss(pid: u32) -> u64 {
    let mut seen = vec![rss_bytes(pid)];
    for _ in 0..120 {
        std::thread::sleep(Duration::from_millis(500));
        seen.push(rss_bytes(pid));
        let recent = &seen[seen.len().saturating_sub(4)..];
        let (lo, hi) = (recent.iter().min(), recent.iter().max());
        if seen.len() >= 4 && hi.zip(lo).is_some_and(|(h, l)| h - l < (2 << 20)) {
            break;
        }
    }
    seen.last().copied().unwrap_or(0)
}

#[test]
fn unread_pages_hold_bounded_memory() {
    let (server, _tmp) = start();
    let pid = server.child.id();
    // the page as a normal client gets it (also warms the server up)
    let (_, page) = get(server.addr, PAGE);
    let page_size = page.len() as u64;
    let parsed: serde_json::Value = serde_json::from_slice(&page).expect("page is JSON");
    let returned = parsed["metadata"]["returnert"].as_u64().expect("returnert");
    assert_eq!(
        parsed["objekter"].as_array().map(|a| a.len() as u64),
        Some(returned)
    );
    assert!(
        page_size > 8 << 20,
        "page of {page_size} bytes is too small to tell"
    );
    let _ = get(server.addr, PAGE);
    let before = settled_rss(pid);

    let clients: Vec<TcpStream> = (0..CLIENTS).map(|_| unread_client(server.addr)).collect();
    let held = settled_rss(pid);
    let growth = held.saturating_sub(before);
    let per_client = growth / CLIENTS as u64;
    eprintln!(
        "page {page_size} bytes; RSS {before} -> {held} with {CLIENTS} unread clients: {per_client} bytes per client"
    );
    assert!(
        per_client < MAX_GROWTH_PER_CLIENT,
        "{per_client} bytes per unread client (bound {MAX_GROWTH_PER_CLIENT}, page {page_size})"
    );
    assert!(growth < CLIENTS as u64 * page_size / 8);

    // clients reading normally are served in full while the others hang
    let addr = server.addr;
    let readers: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || get(addr, PAGE).1))
        .collect();
    for r in readers {
        let got = r.join().expect("reader");
        assert!(
            got == page,
            "a normal reader got {} bytes, not the page",
            got.len()
        );
    }

    drop(clients);
    let after = settled_rss(pid);
    eprintln!("RSS {after} after the clients closed");
    assert!(
        after < before + (64 << 20),
        "RSS {after} after the clients closed, {before} before they came"
    );
    // and the server still answers
    assert_eq!(get(addr, PAGE).1, page);
}
