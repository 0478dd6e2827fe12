//! Connection-level abuse: slowloris and idle connections are closed
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

/// An unknown parameter name of 20 KB is echoed cut at 200 characters (`…`),
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

/// Heads hyper cannot take (a target over its 64 KB, a raw 0xff byte, a head
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

/// One answer read from `r`: status, head (lower case) and body (`Content-Length` or chunked);
/// None at the end of the stream.
fn next_answer(r: &mut impl std::io::BufRead) -> Option<(u16, String, Vec<u8>)> {
    let mut head = String::new();
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        if line == b"\r\n" && !head.is_empty() {
            break;
        }
        head.push_str(&String::from_utf8_lossy(&line).to_ascii_lowercase());
    }
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let field = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let mut body = Vec::new();
    if let Some(n) = field("content-length:") {
        body.resize(n.parse().ok()?, 0);
        r.read_exact(&mut body).ok()?;
    } else if field("transfer-encoding:").as_deref() == Some("chunked") {
        loop {
            let mut line = String::new();
            r.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some((status, head, body))
}

/// A connection with a reader over it.
fn connect(addr: std::net::SocketAddr) -> (TcpStream, std::io::BufReader<TcpStream>) {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let reader = std::io::BufReader::new(s.try_clone().expect("clone"));
    (s, reader)
}

/// The read API's error array with `status`, and the connection closed after it.
fn assert_shaped_last(r: &mut impl std::io::BufRead, status: u16, write: bool, what: &str) {
    let (got, head, body) = next_answer(r).unwrap_or_else(|| panic!("{what}: no answer"));
    let body = String::from_utf8_lossy(&body);
    assert_eq!(got, status, "{what}: {head}{body}");
    assert!(head.contains("connection: close"), "{what}: {head}");
    assert!(
        head.contains("content-type: application/json"),
        "{what}: {head}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: {e}: {body:.300}"));
    if write {
        assert!(
            v.is_object() && v["message"].is_string(),
            "{what}: a fault: {body}"
        );
    } else {
        assert_eq!(v[0]["code"], 4000, "{what}: {body}");
        assert!(
            v[0]["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert!(v[0]["help_url"].is_string(), "{body}");
    }
    assert!(
        next_answer(r).is_none(),
        "{what}: the connection ends after the refusal"
    );
}

/// A write-API server (its validator reads request bodies) and its address.
async fn write_server() -> (crate::write_server::WriteServer, std::net::SocketAddr) {
    let server = crate::write_server::WriteServer::start().await;
    let addr = server
        .root
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    (server, addr)
}

/// A body whose bytes would be refused as a head: bodies are not read as heads.
const BODY: &[u8] = br#"{"datakatalogversjon":"\u00ff GET / HTTP/1.1"}"#;

/// A validator request for `BODY` with `Content-Length` (`extra` header lines added).
fn with_length(token: &str, extra: &str) -> Vec<u8> {
    [
        format!(
            "POST /nvdb/apiskriv/rest/v2/endringssett/validator HTTP/1.1\r\nHost: x\r\nX-Client: vegdb-test\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n",
            BODY.len()
        )
        .into_bytes(),
        BODY.to_vec(),
    ]
    .concat()
}

/// A validator request for `BODY`, chunked (an extension, a trailer): head and body.
fn chunked(token: &str) -> (Vec<u8>, Vec<u8>) {
    let head = format!(
        "POST /nvdb/apiskriv/rest/v2/endringssett/validator HTTP/1.1\r\nHost: x\r\nX-Client: vegdb-test\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let body = [
        b"a;ext=1\r\n".to_vec(),
        BODY[..10].to_vec(),
        format!("\r\n{:X}\r\n", BODY.len() - 10).into_bytes(),
        BODY[10..].to_vec(),
        b"\r\n0\r\nX-Trailer: 1\r\n\r\n".to_vec(),
    ]
    .concat();
    (head.into_bytes(), body)
}

/// What the validator answers `BODY`, on a connection of its own.
fn validator_status(addr: std::net::SocketAddr, token: &str) -> u16 {
    let (mut s, mut r) = connect(addr);
    s.write_all(&with_length(token, "Connection: close\r\n"))
        .expect("write");
    let status = next_answer(&mut r).expect("validator").0;
    assert!((200..500).contains(&status), "{status}");
    status
}

/// A head hyper cannot take that comes later on a kept-alive connection —
/// after an answered request, pipelined behind good requests, after a request with a
/// `Content-Length` or chunked body — gets the API's shape as the first head does, after the
/// answers to every request before it, and the connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_heads_hyper_cannot_parse_get_the_api_error_shape() {
    let (server, addr) = write_server().await;
    let token = server.writer_token.clone();
    tokio::task::spawn_blocking(move || {
        let validated = validator_status(addr, &token);
        let good = b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\n\r\n";
        let bad = b"GET /nvdb/api/v2/status?\xff=1 HTTP/1.1\r\nHost: x\r\n\r\n";
        let long = "a".repeat(70_000);
        let long_write = format!(
            "GET /nvdb/apiskriv/rest/v2/endringssett?x={long} HTTP/1.1\r\nAccept: application/json\r\n\r\n"
        );
        let huge = format!(
            "GET /nvdb/api/v2/status HTTP/1.1\r\nX-Big: {}\r\n\r\n",
            "h".repeat(300 << 10)
        );

        // after an answered request
        let (mut s, mut r) = connect(addr);
        s.write_all(good).expect("write");
        let first = next_answer(&mut r).expect("first");
        assert_eq!(first.0, 200, "{first:?}");
        s.write_all(bad).expect("write");
        assert_shaped_last(&mut r, 400, false, "0xff after an answer");

        // pipelined behind good requests, in one write
        let (mut s, mut r) = connect(addr);
        s.write_all(&[&good[..], good, good, bad].concat())
            .expect("write");
        for i in 0..3 {
            let a = next_answer(&mut r).expect("answer");
            assert_eq!(a.0, 200, "pipelined {i}: {a:?}");
        }
        assert_shaped_last(&mut r, 400, false, "0xff pipelined");

        // pipelined behind a streamed page: the refusal follows the page's last chunk
        let (mut s, mut r) = connect(addr);
        let page = b"GET /nvdb/api/v2/vegobjekter/105?antall=1000&inkluder=alle HTTP/1.1\r\nHost: x\r\n\r\n";
        s.write_all(&[&page[..], bad].concat()).expect("write");
        let (status, head, body) = next_answer(&mut r).expect("page");
        assert_eq!(status, 200, "{head}");
        let page: serde_json::Value = serde_json::from_slice(&body).expect("the whole page");
        assert!(page["objekter"].as_array().is_some_and(|o| !o.is_empty()), "{page:.300}");
        assert_shaped_last(&mut r, 400, false, "0xff behind a page");

        // after a Content-Length body: the write API's fault for a target over 64 KB
        let (mut s, mut r) = connect(addr);
        s.write_all(&[&with_length(&token, "")[..], long_write.as_bytes()].concat())
            .expect("write");
        let a = next_answer(&mut r).expect("answer");
        assert_eq!(a.0, validated, "{a:?}");
        assert_shaped_last(&mut r, 414, true, "long target after a Content-Length body");

        // after a chunked body: a head over the buffer
        let (mut s, mut r) = connect(addr);
        let (head, body) = chunked(&token);
        s.write_all(&[head, body].concat()).expect("write");
        s.write_all(huge.as_bytes()).expect("write");
        let a = next_answer(&mut r).expect("answer");
        assert_eq!(a.0, validated, "{a:?}");
        assert_shaped_last(&mut r, 431, false, "huge head after a chunked body");

        // a later target over 64 KB on the read API, the head split across writes
        let (mut s, mut r) = connect(addr);
        s.write_all(good).expect("write");
        assert_eq!(next_answer(&mut r).expect("first").0, 200);
        let later =
            format!("GET /nvdb/api/v2/vegobjekter/105?x={long} HTTP/1.1\r\nHost: x\r\n\r\n");
        let (a, b) = later.as_bytes().split_at(1_000);
        s.write_all(a).expect("write");
        std::thread::sleep(Duration::from_millis(50));
        s.write_all(b).expect("write");
        assert_shaped_last(&mut r, 414, false, "long target, later, split");
    })
    .await
    .expect("client thread");
}

/// Good traffic on one kept-alive connection passes the later-head check unchanged: many
/// requests, bodies of both framings (read by the handler, with 100-continue, and not read),
/// heads and bodies split across writes, pipelined batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_alive_connections_serve_every_good_request() {
    let (server, addr) = write_server().await;
    let token = server.writer_token.clone();
    tokio::task::spawn_blocking(move || {
        let body = BODY;
        let with_length = |extra: &str| with_length(&token, extra);
        let (chunked_head, chunked_body) = chunked(&token);
        let status = b"GET /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\n\r\n";

        let want = validator_status(addr, &token);
        let (mut s, mut r) = connect(addr);
        let expect = |s: &mut TcpStream,
                      r: &mut std::io::BufReader<TcpStream>,
                      bytes: &[u8],
                      statuses: &[u16],
                      what: &str| {
            s.write_all(bytes).expect("write");
            for (i, want) in statuses.iter().enumerate() {
                let a = next_answer(r).unwrap_or_else(|| panic!("{what} {i}: no answer"));
                assert_eq!(a.0, *want, "{what} {i}: {} {}", a.1, String::from_utf8_lossy(&a.2));
            }
        };
        for i in 0..40 {
            expect(&mut s, &mut r, status, &[200], &format!("status {i}"));
        }
        expect(&mut s, &mut r, &with_length(""), &[want], "Content-Length body");
        expect(&mut s, &mut r, &[&chunked_head[..], &chunked_body].concat(), &[want], "chunked body");
        // split: the head, then the body a few bytes at a time
        s.write_all(&chunked_head).expect("write");
        for part in chunked_body.chunks(7) {
            std::thread::sleep(Duration::from_millis(5));
            s.write_all(part).expect("write");
        }
        expect(&mut s, &mut r, b"", &[want], "chunked body in pieces");
        // a head in pieces
        for part in status.chunks(9) {
            std::thread::sleep(Duration::from_millis(5));
            s.write_all(part).expect("write");
        }
        expect(&mut s, &mut r, b"", &[200], "head in pieces");
        // 100-continue: the head, the interim answer, then the body
        s.write_all(&with_length("Expect: 100-continue\r\n")[..with_length("Expect: 100-continue\r\n").len() - body.len()])
            .expect("write");
        let interim = next_answer(&mut r).expect("100");
        assert_eq!(interim.0, 100, "{interim:?}");
        expect(&mut s, &mut r, body, &[want], "after 100-continue");
        // a pipelined batch of every kind in one write
        let batch = [
            &status[..],
            &with_length(""),
            status,
            &chunked_head[..],
            &chunked_body,
            b"\r\n",
            status,
        ]
        .concat();
        expect(&mut s, &mut r, &batch, &[200, want, 200, want, 200], "pipelined");
        // a body the handler does not read (405), then more requests
        let unread = b"POST /nvdb/api/v2/status HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n\xff\xff\xff\xff\xff";
        expect(&mut s, &mut r, &[&unread[..], status].concat(), &[405, 200], "unread body");
        // an HTTP/1.0 request kept alive
        expect(
            &mut s,
            &mut r,
            b"GET /nvdb/api/v2/status HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            &[200],
            "HTTP/1.0",
        );
        expect(&mut s, &mut r, status, &[200], "last");
    })
    .await
    .expect("client thread");
}
