//! `vegdb import --source URL` and `vegdb refresh --source URL` against upstreams that
//! misbehave: bodies that never end, whole lines that are not JSON, a
//! `Content-Length` that lies, redirect loops and redirects to another port, HTTPS with a CA of
//! the test's own (trusted, untrusted, wrong name, no CA store at all), a refresh with no new
//! events and event ids that jump absurdly; and that a download fetches what the network's
//! attributes need (920 Sideanleggsdel). Each upstream is a local stand-in.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use vegdb::import::download::{download, DownloadOptions};
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::manifest::Manifest;
use vegdb::snapshot::store::DataDir;

/// The README's limits: a record (line) of at most 16 MiB; a call of `antall` records at most
/// `antall` × 16 MiB.
const MAX_RECORD_BYTES: u64 = 16 << 20;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uberiket")
}

fn opts(batch: usize) -> DownloadOptions {
    DownloadOptions {
        batch,
        attempts: 4,
        backoff: Duration::from_millis(20),
        timeout: Duration::from_secs(20),
        concurrency: 1,
    }
}

/// Calls answered and body bytes handed to the connection by a stand-in.
#[derive(Default)]
struct Counts {
    calls: AtomicUsize,
    sent: AtomicU64,
}

async fn start(app: axum::Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A body that never ends: `chunk` again and again, counted into `counts.sent`.
fn endless(chunk: Vec<u8>, counts: Arc<Counts>) -> Response {
    let chunk = bytes::Bytes::from(chunk);
    let stream = futures_util::stream::repeat(chunk).map(move |c| {
        counts.sent.fetch_add(c.len() as u64, SeqCst);
        Ok::<_, std::io::Error>(c)
    });
    axum::body::Body::from_stream(stream).into_response()
}

use futures_util::StreamExt;

/// Records with ids from `from` on, one line each, without end.
fn endless_records(counts: Arc<Counts>) -> Response {
    let next = Arc::new(AtomicU64::new(1));
    let stream = futures_util::stream::repeat(()).map(move |_| {
        let id = next.fetch_add(1, SeqCst);
        let line = format!("{{\"id\":{id},\"versjon\":1}}\n");
        counts.sent.fetch_add(line.len() as u64, SeqCst);
        Ok::<_, std::io::Error>(bytes::Bytes::from(line))
    });
    axum::body::Body::from_stream(stream).into_response()
}

async fn download_from(base: String, dest: PathBuf, o: DownloadOptions) -> (String, Duration) {
    let started = Instant::now();
    let r = tokio::task::spawn_blocking(move || download(&base, &dest, &[105], &o, &|_| {}))
        .await
        .unwrap();
    (
        r.map(|_| "ok".to_string())
            .unwrap_or_else(|e| e.to_string()),
        started.elapsed(),
    )
}

/// A `/stream` answer that never ends (one endless line, endless records, endless blank
/// lines) fails the download on the first call, quickly, having read at most the call's limit:
/// `antall` records of at most `MAX_RECORD_BYTES` (today the whole body is buffered: GBs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_body_fails_at_once_having_read_at_most_the_limit() {
    for (kind, want) in [
        ("line", "longer than"),
        ("records", "more than the 5 records asked for"),
        ("blank", "more than 5 blank lines"),
    ] {
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let app = axum::Router::new().fallback(move |uri: Uri| {
            let c = c.clone();
            async move {
                c.calls.fetch_add(1, SeqCst);
                if !uri.path().ends_with("/stream") {
                    return StatusCode::NOT_FOUND.into_response();
                }
                match kind {
                    "line" => endless(vec![b'x'; 1 << 16], c),
                    "records" => endless_records(c),
                    _ => endless(vec![b'\n'; 1 << 16], c),
                }
            }
        });
        let addr = start(app).await;
        let tmp = tempfile::tempdir().unwrap();
        let (err, took) = download_from(
            format!("http://{addr}/api/v1"),
            tmp.path().join("dl"),
            opts(5),
        )
        .await;
        assert!(err.contains(want), "{kind}: {err}");
        assert_eq!(counts.calls.load(SeqCst), 1, "{kind}: not retried: {err}");
        assert!(took < Duration::from_secs(15), "{kind}: took {took:?}");
        // what the stand-in handed over: the limit plus what sockets and buffers hold
        let limit = match kind {
            "line" => MAX_RECORD_BYTES,
            _ => 5 * MAX_RECORD_BYTES,
        };
        let sent = counts.sent.load(SeqCst);
        assert!(
            sent <= limit + (16 << 20),
            "{kind}: {sent} bytes sent, limit {limit}"
        );
        // nothing of the failed call is kept as a part
        let parts: Vec<_> = std::fs::read_dir(tmp.path().join("dl/veglenkesekvenser"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.contains("part-"))
            .collect();
        assert!(parts.is_empty(), "{kind}: {parts:?}");
    }
}

/// Peak resident memory (kB) of a running process, polled until it ends; the process is
/// killed when it passes `kill_kb` or `deadline`.
fn watch_peak_rss(child: &mut std::process::Child, kill_kb: u64, deadline: Duration) -> u64 {
    let started = Instant::now();
    let mut peak = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            for l in status.lines() {
                if let Some(v) = l.strip_prefix("VmHWM:") {
                    let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                    peak = peak.max(kb);
                }
            }
        }
        if child.try_wait().unwrap().is_some() {
            return peak;
        }
        if peak > kill_kb || started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return peak;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The command against an endless body: it fails by itself, and its peak memory stays far
/// below what buffering the body would take (today: GBs within seconds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_import_command_stays_bounded_on_an_endless_body() {
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let c = c.clone();
        async move {
            if uri.path().ends_with("/stream") {
                endless(vec![b'7'; 1 << 16], c)
            } else {
                StatusCode::NOT_FOUND.into_response()
            }
        }
    });
    let addr = start(app).await;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
        .args(["import", "--types", "105", "--source"])
        .arg(format!("http://{addr}/api/v1"))
        .arg("--data")
        .arg(tmp.path().join("data"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let peak_kb = tokio::task::block_in_place(|| {
        watch_peak_rss(&mut child, 1 << 20, Duration::from_secs(60))
    });
    let took = started.elapsed();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success());
    assert!(err.contains("longer than"), "{err}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert!(peak_kb < 256 * 1024, "peak RSS {peak_kb} kB");
}

/// A whole line that is not JSON is the upstream's answer, not a broken connection: the
/// download fails on the first call, naming the line (today: 8 retries over a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_line_fails_at_once() {
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let c = c.clone();
        async move {
            c.calls.fetch_add(1, SeqCst);
            if uri.path().ends_with("/stream") {
                "{\"id\":1}\n<html>busy</html>\n".into_response()
            } else {
                StatusCode::NOT_FOUND.into_response()
            }
        }
    });
    let addr = start(app).await;
    let tmp = tempfile::tempdir().unwrap();
    let (err, _) = download_from(
        format!("http://{addr}/api/v1"),
        tmp.path().join("dl"),
        opts(5),
    )
    .await;
    assert!(err.contains("line 2 is not a JSON record"), "{err}");
    assert_eq!(counts.calls.load(SeqCst), 1, "{err}");
}

/// A raw HTTP/1.1 server answering every request with `answer` and closing; counts requests.
fn raw_server(answer: &'static [u8]) -> (String, Arc<Counts>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            c.calls.fetch_add(1, SeqCst);
            let _ = conn.write_all(answer);
            let _ = conn.flush();
        }
    });
    (format!("http://{addr}/api/v1"), counts)
}

/// A `Content-Length` that promises more than the body holds: retried once (a broken
/// connection looks the same), then failed since it came twice in the same way (today: 8
/// attempts over a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_length_lie_fails_after_one_confirming_retry() {
    let (base, counts) = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n{\"id\":1}\n{\"id\":2}\n",
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut o = opts(5);
    o.attempts = 8;
    o.backoff = Duration::from_millis(200);
    let (err, took) = download_from(base, tmp.path().join("dl"), o).await;
    assert!(
        err.contains("body ended after 18 bytes of the 5000 its Content-Length announced")
            && err.contains("twice in the same way"),
        "{err}"
    );
    assert_eq!(counts.calls.load(SeqCst), 2, "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// Redirects: one within the source's host and port is followed; a loop fails at once; one to
/// another port is refused without calling it (today: followed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_stay_on_the_source_and_a_loop_fails_at_once() {
    // the other server: must never be called
    let other = Arc::new(Counts::default());
    let o2 = other.clone();
    let other_addr = start(axum::Router::new().fallback(move || {
        let o2 = o2.clone();
        async move {
            o2.calls.fetch_add(1, SeqCst);
            String::new().into_response()
        }
    }))
    .await;
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let c = c.clone();
        async move {
            c.calls.fetch_add(1, SeqCst);
            let p = uri.path().to_string();
            let to = |loc: String| {
                (StatusCode::FOUND, [(axum::http::header::LOCATION, loc)]).into_response()
            };
            if let Some(rest) = p.strip_prefix("/old") {
                return to(format!("{rest}?{}", uri.query().unwrap_or("")));
            }
            if p.starts_with("/loop") {
                return to(uri.to_string());
            }
            if let Some(rest) = p.strip_prefix("/away") {
                return to(format!("http://{other_addr}{rest}"));
            }
            if p.ends_with("/stream") {
                // one record per stream, then nothing
                return if uri.query().is_some_and(|q| q.contains("start=")) {
                    String::new().into_response()
                } else {
                    "{\"id\":7}\n".into_response()
                };
            }
            StatusCode::NOT_FOUND.into_response()
        }
    });
    let addr = start(app).await;
    let tmp = tempfile::tempdir().unwrap();

    let (ok, _) = download_from(
        format!("http://{addr}/old/api/v1"),
        tmp.path().join("a"),
        opts(5),
    )
    .await;
    assert_eq!(ok, "ok");
    assert!(tmp
        .path()
        .join("a/veglenkesekvenser/part-00000000000000000000.ndjson")
        .is_file());

    counts.calls.store(0, SeqCst);
    let (err, took) = download_from(
        format!("http://{addr}/loop/api/v1"),
        tmp.path().join("b"),
        opts(5),
    )
    .await;
    assert!(err.contains("redirect loop"), "{err}");
    assert_eq!(counts.calls.load(SeqCst), 1, "{err}");
    assert!(took < Duration::from_secs(5));

    counts.calls.store(0, SeqCst);
    let (err, _) = download_from(
        format!("http://{addr}/away/api/v1"),
        tmp.path().join("c"),
        opts(5),
    )
    .await;
    assert!(
        err.contains("refused") && err.contains(&format!("{}", other_addr.port())),
        "{err}"
    );
    assert_eq!(counts.calls.load(SeqCst), 1, "{err}");
    assert_eq!(other.calls.load(SeqCst), 0, "the other port was called");
}

// ---------------------------------------------------------------------------------------
// HTTPS with a CA of the test's own

/// Every record of the json pages of `dir`.
fn page_records(dir: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let v: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        match ["veglenkesekvenser", "vegobjekter", "objekter"]
            .iter()
            .find_map(|k| v.get(*k))
        {
            Some(list) => out.extend(list.as_array().unwrap().iter().cloned()),
            None => out.push(v),
        }
    }
    out
}

/// The samples as `/stream` answers by path.
fn sample_streams() -> BTreeMap<String, Vec<(u64, String)>> {
    let mut streams = BTreeMap::new();
    let mut put = |name: String, recs: Vec<Value>| {
        let mut v: Vec<(u64, String)> = recs
            .into_iter()
            .map(|r| (r["id"].as_u64().unwrap(), r.to_string()))
            .collect();
        v.sort();
        streams.insert(name, v);
    };
    put(
        "/api/v1/vegnett/veglenkesekvenser/stream".into(),
        page_records(&samples().join("veglenkesekvenser")),
    );
    for e in std::fs::read_dir(samples().join("vegobjekter")).unwrap() {
        let p = e.unwrap().path();
        let t = p.file_name().unwrap().to_string_lossy().to_string();
        put(format!("/api/v1/vegobjekter/{t}/stream"), page_records(&p));
    }
    streams
}

fn samples_app() -> axum::Router {
    streams_app(sample_streams())
}

fn streams_app(streams: BTreeMap<String, Vec<(u64, String)>>) -> axum::Router {
    let streams = Arc::new(streams);
    axum::Router::new().fallback(move |uri: Uri| {
        let streams = streams.clone();
        async move {
            let q: BTreeMap<String, String> = uri
                .query()
                .unwrap_or("")
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let start: u64 = q.get("start").map_or(0, |v| v.parse().unwrap());
            let antall: usize = q.get("antall").map_or(1000, |v| v.parse().unwrap());
            match streams.get(uri.path()) {
                Some(v) => v
                    .iter()
                    .filter(|(id, _)| *id > start)
                    .take(antall)
                    .map(|(_, l)| format!("{l}\n"))
                    .collect::<String>()
                    .into_response(),
                // a stream without samples is empty
                None if uri.path().ends_with("/stream") => String::new().into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
    })
}

/// A CA: its PEM and the issuer that signs server certificates.
fn make_ca(name: &str) -> (String, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), rcgen::Issuer::new(params, key))
}

/// Serve `app` over TLS with a certificate for `names` signed by `ca`; returns the port.
async fn serve_tls(
    app: axum::Router,
    ca: &rcgen::Issuer<'static, rcgen::KeyPair>,
    names: &[&str],
) -> u16 {
    use tokio_rustls::rustls;
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return; // the client refused the certificate
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    port
}

/// `vegdb import` with `SSL_CERT_FILE` set to `ca_file` (and no `SSL_CERT_DIR`).
fn import_cmd(source: &str, data: &Path, ca_file: &Path) -> (bool, String, String, Duration) {
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
        .args(["import", "--types", "105", "--source", source, "--data"])
        .arg(data)
        .env("SSL_CERT_FILE", ca_file)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        started.elapsed(),
    )
}

/// `--source https://` against a local HTTPS stand-in with its own CA: trusted through
/// `SSL_CERT_FILE` it imports; a certificate of another CA or for another name fails at once
/// with the TLS reason (today: "error sending request" after 8 retries over a minute); with no
/// CA store at all an `https://` source fails naming the fix and an `http://` one still works
/// (today: "HTTP client: builder error" for both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_sources_are_verified_and_tls_failures_are_named_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (ca_pem, ca) = make_ca("vegdb test CA");
    let (other_pem, _) = make_ca("some other CA");
    let ca_file = tmp.path().join("ca.pem");
    let other_file = tmp.path().join("other.pem");
    let empty_file = tmp.path().join("empty.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    std::fs::write(&other_file, other_pem).unwrap();
    std::fs::write(&empty_file, "").unwrap();
    let good = serve_tls(samples_app(), &ca, &["localhost"]).await;
    let wrong_name = serve_tls(samples_app(), &ca, &["elsewhere.example"]).await;
    let run = |source: String, data: &str, ca_file: &Path| {
        let (data, ca_file) = (tmp.path().join(data), ca_file.to_path_buf());
        tokio::task::spawn_blocking(move || import_cmd(&source, &data, &ca_file))
    };

    let (ok, out, err, _) = run(
        format!("https://localhost:{good}/api/v1"),
        "trusted",
        &ca_file,
    )
    .await
    .unwrap();
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("downloaded veglenkesekvenser: "), "{out}");
    let m = Manifest::read(
        &DataDir::open(tmp.path().join("trusted"))
            .unwrap()
            .generation_dir(1),
    )
    .unwrap();
    assert!(m.total_rows("network/") > 0);

    let (ok, _, err, took) = run(
        format!("https://localhost:{good}/api/v1"),
        "untrusted",
        &other_file,
    )
    .await
    .unwrap();
    assert!(!ok);
    assert!(err.contains("untrusted issuer"), "{err}");
    assert!(!err.contains("attempts"), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");

    let (ok, _, err, took) = run(
        format!("https://localhost:{wrong_name}/api/v1"),
        "mismatch",
        &ca_file,
    )
    .await
    .unwrap();
    assert!(!ok);
    assert!(
        err.contains("name mismatch") && err.contains("localhost"),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // no CA store (the state of an image without ca-certificates)
    let (ok, _, err, took) = run(
        format!("https://localhost:{good}/api/v1"),
        "no-store",
        &empty_file,
    )
    .await
    .unwrap();
    assert!(!ok);
    assert!(
        err.contains("No CA certificates") && err.contains("SSL_CERT_FILE"),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let plain = start(samples_app()).await;
    let (ok, out, err, _) = run(format!("http://{plain}/api/v1"), "plain", &empty_file)
        .await
        .unwrap();
    assert!(ok, "{out}\n{err}");
}

// ---------------------------------------------------------------------------------------
// refresh: no new events, absurd event ids

/// An import of the samples whose recorded last event id of the sequences is 100 (the
/// directory is not held open: a command run on it must not see an owner).
fn imported(tmp: &Path) -> DataDir {
    let src = tmp.join("source");
    copy_dir(&samples(), &src);
    let events = src.join("hendelser/veglenkesekvenser");
    std::fs::create_dir_all(&events).unwrap();
    std::fs::write(
        events.join("siste.json"),
        network_event(100, 41423).to_string(),
    )
    .unwrap();
    let data = DataDir::open(tmp.join("data")).unwrap();
    import_dir(&src, &data, &TypeSelection::Only(vec![105]), &|_| {}).unwrap();
    drop(data);
    DataDir::read_only(tmp.join("data"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn network_event(id: u64, sequence: u64) -> Value {
    json!({"hendelseId": id, "hendelseType": "VeglenkesekvensEndret", "nettelementId": sequence,
           "nettelementType": 1, "tidspunkt": "2026-01-01T00:00:00Z"})
}

/// A stand-in whose only events are `events` on the sequence stream.
async fn events_stand_in(events: Vec<Value>) -> String {
    let events = Arc::new(events);
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let events = events.clone();
        async move {
            let start: u64 = uri
                .query()
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("start="))
                .map_or(0, |v| v.parse().unwrap());
            if uri.path().starts_with("/api/v1/hendelser/") {
                let page: Vec<&Value> = if uri.path() == "/api/v1/hendelser/veglenkesekvenser" {
                    events
                        .iter()
                        .filter(|e| e["hendelseId"].as_u64().unwrap() > start)
                        .collect()
                } else {
                    Vec::new()
                };
                return axum::Json(json!({"hendelser": page})).into_response();
            }
            StatusCode::NOT_FOUND.into_response()
        }
    });
    format!("http://{}/api/v1", start(app).await)
}

fn refresh_cmd(source: &str, data: &Path) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vegdb"))
        .args(["refresh", "--source", source, "--data"])
        .arg(data)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `vegdb refresh --source URL` with nothing new upstream succeeds and publishes nothing, as
/// the README says (today: exit 1, "--source …/refresh-download is not a directory").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_with_no_new_events_succeeds_and_publishes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = imported(tmp.path());
    let url = events_stand_in(vec![network_event(90, 41423), network_event(100, 41423)]).await;
    let root = data.root.clone();
    let (ok, out, err) = tokio::task::spawn_blocking(move || refresh_cmd(&url, &root))
        .await
        .unwrap();
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("nothing published"), "{out}");
    assert_eq!(data.current().unwrap(), Some(1));
}

/// An upstream event id of 2^64 − 1 (or one 2^33 past the cursor) is refused with a clear
/// error and nothing is published, so the cursor stays where later events are still fetched
/// (today: the id becomes the cursor and no event is ever fetched again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_event_ids_are_refused_and_the_cursor_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let data = imported(tmp.path());
    for absurd in [u64::MAX, 100 + (1 << 33)] {
        let url = events_stand_in(vec![
            network_event(101, 41423),
            network_event(absurd, 41423),
        ])
        .await;
        let root = data.root.clone();
        let (ok, out, err) = tokio::task::spawn_blocking(move || refresh_cmd(&url, &root))
            .await
            .unwrap();
        assert!(!ok, "{out}");
        assert!(
            err.contains(&format!("event id {absurd}")) && err.contains("refused"),
            "{err}"
        );
        assert_eq!(data.current().unwrap(), Some(1));
        let m = Manifest::read(&data.generation_dir(1)).unwrap();
        assert_eq!(m.last_event_ids.get("veglenkesekvenser"), Some(&100));
    }

    // the same from a directory source
    let src = tmp.path().join("events");
    let dir = src.join("hendelser/veglenkesekvenser");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("page-1.json"),
        json!({"hendelser": [network_event(101, 41423), network_event(u64::MAX, 41423)]})
            .to_string(),
    )
    .unwrap();
    let err = vegdb::import::refresh::refresh_dir(
        &src,
        &DataDir::open(data.root.clone()).unwrap(),
        "test",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("larger than any real event id"), "{err}");
    assert_eq!(data.current().unwrap(), Some(1));

    // and an import whose saved siste answer holds one
    let src = tmp.path().join("source");
    std::fs::write(
        src.join("hendelser/veglenkesekvenser/siste.json"),
        network_event(u64::MAX, 41423).to_string(),
    )
    .unwrap();
    let other = DataDir::open(tmp.path().join("other")).unwrap();
    let err = import_dir(&src, &other, &TypeSelection::Only(vec![105]), &|_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("larger than any real event id"), "{err}");
    assert_eq!(other.current().unwrap(), None);
}

// ---------------------------------------------------------------------------------------
// what the network attributes need

/// A URL import fetches 920 Sideanleggsdel as a directory import reads it: a Sideanleggsdel
/// on a sample sequence (a stream of its own on the stand-in) makes that sequence's rows, and
/// only those, side facilities (before, the download never asked for 920: none was marked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_import_marks_the_side_facilities_of_920() {
    let tmp = tempfile::tempdir().unwrap();
    let mut streams = sample_streams();
    // a sequence a sample 915 Vegsystem lies on (so it has network rows)
    let vegsystem = &streams["/api/v1/vegobjekter/915/stream"][0].1;
    let vegsystem: Value = serde_json::from_str(vegsystem).unwrap();
    let on = vegsystem["stedfesting"]["linjer"][0]["id"]
        .as_u64()
        .unwrap();
    let side = json!({
        "id": 3, "versjon": 1, "typeId": 920,
        "gyldighetsperiode": {"startdato": "2020-01-01"},
        "egenskaper": {"11291": {"type": "EnumEgenskap", "verdi": 19045}},
        "stedfesting": {"type": "StedfestingLinjer", "linjer": [
            {"id": on, "startposisjon": 0.0, "sluttposisjon": 1.0, "retning": "MED"}]},
        "sistEndret": "2025-01-01T00:00:00Z"
    });
    streams.insert(
        "/api/v1/vegobjekter/920/stream".into(),
        vec![(3, side.to_string())],
    );
    let addr = start(streams_app(streams)).await;
    let dest = tmp.path().join("download");
    let (answer, _) = download_from(format!("http://{addr}/api/v1"), dest.clone(), opts(100)).await;
    assert_eq!(answer, "ok");
    assert!(dest.join("vegobjekter/920").is_dir(), "920 not downloaded");
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let summary = import_dir(&dest, &data, &TypeSelection::Only(vec![105]), &|_| {}).unwrap();
    let (g, _) =
        vegdb::generation::Generation::load(&data.generation_dir(summary.generation), &|_| {})
            .unwrap();
    let n = &g.network;
    let marked: Vec<usize> = (0..n.len()).filter(|&r| n.side_facility[r]).collect();
    let under: Vec<usize> = (0..n.len()).filter(|&r| n.link_id[r] == on).collect();
    assert!(!under.is_empty(), "sequence {on} has no rows");
    assert_eq!(
        marked, under,
        "side facilities are the rows of sequence {on}"
    );
}
