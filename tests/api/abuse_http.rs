//! Connection-level abuse (issue 10, items 11 and 17): slowloris and idle connections are closed
//! by the header-read timeout, a connection limit keeps the server reachable, and errors made
//! below the handlers (405, 414, 431, bad UTF-8 in the path) come in the API's error shape.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use vegdb::api::state::{ApiConfig, AppState, ConnectionLimits};

use crate::server::store;

/// A read-only server with the given connection limits; returns its address.
async fn start(limits: ConnectionLimits) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut config = ApiConfig::new(format!("http://{addr}"), Duration::from_secs(10));
    config.connections = limits;
    tokio::spawn(vegdb::server::serve(
        listener,
        AppState::read_only(store(), config),
        std::future::pending(),
    ));
    addr
}

/// True when the peer closed the connection within `within` (reads EOF or a reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).expect("timeout");
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a 408 or similar before closing is fine
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_and_idle_connections_are_closed_by_the_header_timeout() {
    let timeout = Duration::from_millis(800);
    let addr = start(ConnectionLimits {
        header_read_timeout: timeout,
        ..ConnectionLimits::default()
    })
    .await;
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        // 40 clients that send a request head one byte at a time, never finishing it.
        let mut slow: Vec<TcpStream> = (0..40)
            .map(|_| {
                let mut s = TcpStream::connect(addr).expect("connect");
                s.write_all(b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\n")
                    .expect("write");
                s
            })
            .collect();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(200));
            for s in &mut slow {
                let _ = s.write_all(b"X");
            }
        }
        // One client that completes a request and then stays idle on the kept-alive connection.
        let mut idle = TcpStream::connect(addr).expect("connect");
        idle.write_all(b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        let mut first = [0u8; 12];
        idle.read_exact(&mut first).expect("response");
        assert_eq!(&first, b"HTTP/1.1 200");
        let closed = slow
            .iter_mut()
            .map(|s| closed_within(s, Duration::from_secs(3)))
            .filter(|&c| c)
            .count();
        assert_eq!(closed, 40, "every slowloris connection is closed");
        assert!(
            closed_within(&mut idle, Duration::from_secs(3)),
            "an idle keep-alive connection is closed"
        );
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
    })
    .await
    .expect("client thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limit_keeps_the_server_reachable_when_idle_clients_fill_it() {
    let timeout = Duration::from_millis(700);
    let addr = start(ConnectionLimits {
        max_connections: 8,
        header_read_timeout: timeout,
        ..ConnectionLimits::default()
    })
    .await;
    tokio::task::spawn_blocking(move || {
        // 30 idle connections: 8 are served (and time out), the rest wait in the backlog.
        let _idle: Vec<TcpStream> = (0..30)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let started = Instant::now();
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("write");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("answer");
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        // Idle connections are dropped in rounds of 8 per timeout: 30 + 1 needs 4 rounds.
        assert!(
            started.elapsed() < timeout * 4 + Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    })
    .await
    .expect("client thread");
}

#[test]
fn soft_file_limit_is_raised_to_at_least_what_it_was() {
    let (before, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("getrlimit");
    let after = vegdb::server::raise_file_limit();
    assert!(after >= before, "{after} < {before}");
    assert!(after <= hard, "{after} > {hard}");
}

/// Send raw bytes and return (status, content type, body).
fn raw(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(request).expect("write");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text}"));
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, content_type, body.to_string())
}

fn assert_read_error(r: &(u16, String, String), status: u16) {
    assert_eq!(r.0, status, "{r:?}");
    assert!(r.1.starts_with("application/json"), "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.2).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    let first = &v.as_array().unwrap_or_else(|| panic!("{r:?}"))[0];
    assert!(first["code"].is_u64(), "{r:?}");
    assert!(!first["message"].as_str().unwrap_or("").is_empty(), "{r:?}");
    assert!(first["help_url"].is_string(), "{r:?}");
}

fn assert_fault(r: &(u16, String, String), status: u16) {
    assert_eq!(r.0, status, "{r:?}");
    assert!(r.1.starts_with("application/json"), "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.2).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    assert!(!v["message"].as_str().unwrap_or("").is_empty(), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_layer_errors_come_in_the_api_error_shape() {
    let addr = start(ConnectionLimits::default()).await;
    tokio::task::spawn_blocking(move || {
        let close = "Host: x\r\nConnection: close\r\n";
        // 405: a route that exists, with a method it does not have.
        let r = raw(addr, format!("POST /nvdb/api/v2/status HTTP/1.1\r\n{close}Content-Length: 0\r\n\r\n").as_bytes());
        assert_read_error(&r, 405);
        // Invalid UTF-8 in a path parameter.
        let r = raw(addr, format!("GET /nvdb/api/v2/vegobjekttyper/%FF%FE HTTP/1.1\r\n{close}\r\n").as_bytes());
        assert!((400..500).contains(&r.0), "{r:?}");
        assert_read_error(&r, r.0);
        // 414: a request target beyond the limit.
        let long = "x".repeat(vegdb::api::guard::MAX_URI_BYTES + 10);
        let r = raw(addr, format!("GET /nvdb/api/v2/status?a={long} HTTP/1.1\r\n{close}\r\n").as_bytes());
        assert_read_error(&r, 414);
        // 431: one huge header, and too many headers.
        let big = "y".repeat(vegdb::api::guard::MAX_HEADER_BYTES + 10);
        let r = raw(addr, format!("GET /nvdb/api/v2/status HTTP/1.1\r\n{close}X-Big: {big}\r\n\r\n").as_bytes());
        assert_read_error(&r, 431);
        let many: String = (0..vegdb::api::guard::MAX_HEADERS + 5)
            .map(|i| format!("X-H{i}: v\r\n"))
            .collect();
        let r = raw(addr, format!("GET /nvdb/api/v2/status HTTP/1.1\r\n{close}{many}\r\n").as_bytes());
        assert_read_error(&r, 431);
        // The write API answers the same conditions with fault entities.
        let r = raw(addr, format!("DELETE /nvdb/apiskriv/rest/v2/endringssett/validator HTTP/1.1\r\n{close}Accept: application/json\r\n\r\n").as_bytes());
        assert_fault(&r, 405);
        let r = raw(addr, format!("GET /nvdb/apiskriv/rest/v2/endringssett?a={long} HTTP/1.1\r\n{close}Accept: application/json\r\n\r\n").as_bytes());
        assert_fault(&r, 414);
        // A healthy request still answers normally afterwards.
        let r = raw(addr, format!("GET /nvdb/api/v2/status HTTP/1.1\r\n{close}\r\n").as_bytes());
        assert_eq!(r.0, 200, "{r:?}");
    })
    .await
    .expect("client thread");
}

/// Issue 26 item 7: an unknown parameter name of 20 KB is echoed cut at 200 characters (`…`),
/// by the read API, the OGC API and the write API alike.
#[tokio::test]
async fn a_rejected_parameter_name_is_echoed_cut_at_200_characters() {
    use crate::write_server::{WriteServer, WRITE};
    let s = WriteServer::start().await;
    let long = "x".repeat(20_000);
    let cut = format!("{}…", "x".repeat(200));
    let check = |what: &str, status: u16, body: &str| {
        assert!((400..500).contains(&status), "{what}: {status} {body:.300}");
        assert!(
            body.len() < 1_000,
            "{what}: {} bytes: {body:.300}",
            body.len()
        );
        assert!(body.contains(&cut), "{what}: {body}");
        assert!(!body.contains(&"x".repeat(201)), "{what}: {body}");
    };
    for path in [
        format!("/nvdb/api/v2/vegobjekter/105?{long}=1"),
        format!("/nvdb/api/v2/vegobjekttyper?{long}=1"),
        format!("/ogc/collections/105/items?{long}=1"),
        format!("/ogc/collections?{long}=1"),
    ] {
        let r = s
            .client
            .get(format!("{}{path}", s.root))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        check(&path[..30], status, &r.text().await.unwrap());
    }
    let r = s
        .client
        .post(format!("{}{WRITE}/endringssett?{long}=1", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    check("write", status, &r.text().await.unwrap());
}

/// Send `request` on a new connection and read the answer to its end (the server closes).
fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(request).expect("write");
    let mut text = Vec::new();
    let _ = s.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// Issue 26 item 7: heads hyper cannot take (a target over its 64 KB, a raw 0xff byte, a head
/// over its buffer) are answered in the API's shape — the read API's error array, the write
/// API's fault — not with hyper's bare status and empty body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_hyper_cannot_parse_get_the_api_error_shape() {
    let addr = start(ConnectionLimits::default()).await;
    tokio::task::spawn_blocking(move || {
        let long = "a".repeat(70_000);
        let huge = "h".repeat(300 << 10);
        let read_cases: Vec<(Vec<u8>, u16)> = vec![
            (
                format!("GET /nvdb/api/v2/vegobjekter/105?x={long} HTTP/1.1\r\nHost: x\r\n\r\n")
                    .into_bytes(),
                414,
            ),
            (
                b"GET /nvdb/api/v2/status?\xff=1 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                400,
            ),
            (b"G\xffT /nvdb/api/v2/status HTTP/1.1\r\n\r\n".to_vec(), 400),
            (
                format!("GET /nvdb/api/v2/status HTTP/1.1\r\nX-Big: {huge}\r\n\r\n").into_bytes(),
                431,
            ),
        ];
        for (request, want) in read_cases {
            let what = String::from_utf8_lossy(&request[..request.len().min(40)]).into_owned();
            let (status, head, body) = raw_exchange(addr, &request);
            assert_eq!(status, want, "{what}: {head}\n{body}");
            assert!(head.contains("content-type: application/json"), "{what}: {head}");
            let v: serde_json::Value = serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("{what}: {e}: {body:.300}"));
            assert_eq!(v[0]["code"], 4000, "{what}: {body}");
            assert!(v[0]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
            assert!(v[0]["help_url"].is_string(), "{body}");
            assert!(body.len() < 1_000, "{what}: {} bytes", body.len());
        }
        // the write API: its fault, in the format asked for
        let (status, _, body) = raw_exchange(
            addr,
            format!(
                "GET /nvdb/apiskriv/rest/v2/endringssett?x={long} HTTP/1.1\r\nAccept: application/json\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_eq!(status, 414, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).expect("json fault");
        assert!(v["message"].as_str().is_some_and(|m| m.contains("64000")), "{body}");
        assert!(v.is_object(), "a fault, not the read API's array: {body}");
        let (status, _, body) = raw_exchange(
            addr,
            b"POST /nvdb/apiskriv/rest/v2/endringssett\xff HTTP/1.1\r\nAccept: application/xml\r\n\r\n",
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("<fault"), "{body}");
        // a good request on the same server still works, kept alive as before
        let (status, _, body) = raw_exchange(
            addr,
            b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(status, 200, "{body:.300}");
    })
    .await
    .expect("client thread");
}
