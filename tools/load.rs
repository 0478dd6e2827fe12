//! vegdb-load: a small closed-loop HTTP/1.1 load generator for benchmarks on loopback.
//!
//! `vegdb-load --base http://127.0.0.1:8080 --paths queries.txt --connections 4 --seconds 10`
//! Each connection is kept alive and sends the request paths of the file round robin, one at a
//! time. The run stops after --seconds or --max-requests, whichever comes first. Prints
//! requests/s, latency percentiles and error counts. Only loopback addresses are accepted.
//! Bodies are read by their `content-length` or, for streamed pages, chunk by chunk.
//!
//! `--also http://127.0.0.1:8081/nvdb/api/v2` (repeatable) adds targets: connections are dealt
//! to `--base` and each `--also` round robin (e.g. two replicas behind one load generator), and
//! the report adds requests per target.
//!
//! With `--write-changeset FILE --token T`, one more connection meanwhile registers the
//! changeset, starts it and polls fremdrift (every 20 ms) until UTFØRT_OG_ETTERBEHANDLET, again
//! and again (pausing --write-pause-ms between), and reports start-to-visible times.

use std::time::{Duration, Instant};

use clap::Parser;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Parser, Debug)]
struct Args {
    /// Base URL, e.g. http://127.0.0.1:8080/nvdb/api/v2 (loopback only).
    #[arg(long)]
    base: String,
    /// File with one request path (relative to base) per line.
    #[arg(long, required_unless_present = "follow")]
    paths: Option<std::path::PathBuf>,
    /// Instead of a path file: GET this path and follow `metadata.neste.href` until a page
    /// returns 0 items; report pages and objects per second (one connection).
    #[arg(long)]
    follow: Option<String>,
    /// More targets like --base (same path prefix rule); connections are dealt round robin.
    #[arg(long)]
    also: Vec<String>,
    #[arg(long, default_value_t = 4)]
    connections: usize,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    #[arg(long, default_value_t = 5_000_000)]
    max_requests: usize,
    /// Warm-up seconds not counted.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    /// A changeset (JSON) to register and run repeatedly during the read load.
    #[arg(long, requires = "token")]
    write_changeset: Option<std::path::PathBuf>,
    /// Bearer token of a user who may write.
    #[arg(long)]
    token: Option<String>,
    /// Write interface path on the same host.
    #[arg(long, default_value = "/nvdb/apiskriv/rest/v2")]
    write_base: String,
    /// Pause between changesets, milliseconds.
    #[arg(long, default_value_t = 0)]
    write_pause_ms: u64,
}

struct Stats {
    latencies_us: Vec<u32>,
    errors: usize,
    bytes: usize,
}

async fn worker(
    addr: String,
    requests: std::sync::Arc<Vec<Vec<u8>>>,
    offset: usize,
    until: Instant,
    counted_from: Instant,
    max: usize,
) -> std::io::Result<Stats> {
    let stream = TcpStream::connect(&addr).await?;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::with_capacity(1 << 16, r);
    let mut stats = Stats {
        latencies_us: Vec::new(),
        errors: 0,
        bytes: 0,
    };
    // one buffer for the head's lines and one for the body, reused for every answer
    let (mut line, mut body) = (Vec::with_capacity(256), Vec::with_capacity(4096));
    let mut i = offset;
    while Instant::now() < until && stats.latencies_us.len() < max {
        let request = &requests[i % requests.len()];
        i += 1;
        let t = Instant::now();
        w.write_all(request).await?;
        let (status, _) = read_response_into(&mut r, &mut line, &mut body, false).await?;
        if t >= counted_from {
            stats.latencies_us.push(t.elapsed().as_micros() as u32);
            stats.bytes += body.len();
            if !(200..300).contains(&status) {
                stats.errors += 1;
            }
        }
    }
    Ok(stats)
}

/// The bytes of a keep-alive GET of `path` (made once per path, before the run).
fn get_request(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n").into_bytes()
}

/// One keep-alive GET; returns status and body.
async fn get(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    w: &mut tokio::net::tcp::OwnedWriteHalf,
    host: &str,
    path: &str,
) -> std::io::Result<(u16, Vec<u8>)> {
    w.write_all(&get_request(host, path)).await?;
    read_response(r).await.map(|(s, _, b)| (s, b))
}

/// One keep-alive request with extra header lines and a body.
async fn send(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    w: &mut tokio::net::tcp::OwnedWriteHalf,
    method: &str,
    host: &str,
    path: &str,
    headers: &str,
    body: &[u8],
) -> std::io::Result<(u16, Option<String>, Vec<u8>)> {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes()).await?;
    w.write_all(body).await?;
    read_response(r).await
}

/// Status, Location and body of a response.
async fn read_response(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> std::io::Result<(u16, Option<String>, Vec<u8>)> {
    let (mut line, mut body) = (Vec::new(), Vec::new());
    let (status, location) = read_response_into(r, &mut line, &mut body, true).await?;
    Ok((status, location, body))
}

/// Reads one response: its status, its `Location` when `want_location`, and its body into
/// `body`. The head is read line by line into `line`; header names are compared without
/// copies, so a long head costs the load generator no allocation.
async fn read_response_into(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    line: &mut Vec<u8>,
    body: &mut Vec<u8>,
    want_location: bool,
) -> std::io::Result<(u16, Option<String>)> {
    let (mut status, mut len, mut first, mut chunked) = (0u16, 0usize, true, false);
    let mut location = None;
    loop {
        line.clear();
        if r.read_until(b'\n', line).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        if first {
            status = line
                .split(|&b| b == b' ')
                .nth(1)
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            first = false;
        } else if line.as_slice() == b"\r\n" {
            break;
        } else if let Some(v) = value_of(line, b"transfer-encoding:") {
            chunked = v.to_ascii_lowercase().windows(7).any(|w| w == b"chunked");
        } else if let Some(v) = value_of(line, b"content-length:") {
            len = std::str::from_utf8(v)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
        } else if want_location {
            if let Some(v) = value_of(line, b"location:") {
                location = Some(String::from_utf8_lossy(v).trim().to_string());
            }
        }
    }
    body.clear();
    if chunked {
        read_chunks(r, line, body).await?;
    } else {
        body.resize(len, 0);
        r.read_exact(body).await?;
    }
    Ok((status, location))
}

/// Reads a chunked body (RFC 9112 section 7.1) into `body`: each chunk's size line, its data and
/// CRLF, up to the last (empty) chunk and the trailer section's end.
async fn read_chunks(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    line: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> std::io::Result<()> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    loop {
        line.clear();
        r.read_until(b'\n', line).await?;
        let digits: Vec<u8> = line
            .iter()
            .copied()
            .take_while(|b| b.is_ascii_hexdigit())
            .collect();
        let size = std::str::from_utf8(&digits)
            .ok()
            .and_then(|d| usize::from_str_radix(d, 16).ok())
            .ok_or_else(|| bad("bad chunk size line"))?;
        if size == 0 {
            // trailer fields, then the empty line
            loop {
                line.clear();
                if r.read_until(b'\n', line).await? == 0 || line.as_slice() == b"\r\n" {
                    return Ok(());
                }
            }
        }
        let at = body.len();
        body.resize(at + size + 2, 0);
        r.read_exact(&mut body[at..]).await?;
        if &body[at + size..] != b"\r\n" {
            return Err(bad("chunk data not followed by CRLF"));
        }
        body.truncate(at + size);
    }
}

/// The value of a header line named `name` (lower case, with its colon), any case.
fn value_of<'l>(line: &'l [u8], name: &[u8]) -> Option<&'l [u8]> {
    (line.len() >= name.len() && line[..name.len()].eq_ignore_ascii_case(name))
        .then(|| &line[name.len()..])
}

/// Register, start and follow `changeset` until `until`; start-to-visible times in ms.
async fn write_loop(
    hostport: String,
    base: String,
    token: String,
    changeset: Vec<u8>,
    pause: Duration,
    until: Instant,
) -> anyhow::Result<Vec<f64>> {
    let stream = TcpStream::connect(&hostport).await?;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::with_capacity(1 << 16, r);
    let auth = format!("X-Client: vegdb-load\r\nAuthorization: Bearer {token}\r\n");
    let json = format!("{auth}Content-Type: application/json\r\n");
    let mut times = Vec::new();
    while Instant::now() < until {
        let (status, location, body) = send(
            &mut r,
            &mut w,
            "POST",
            &hostport,
            &format!("{base}/endringssett"),
            &json,
            &changeset,
        )
        .await?;
        anyhow::ensure!(
            status == 201,
            "register: {status} {}",
            String::from_utf8_lossy(&body)
        );
        let location = location.ok_or_else(|| anyhow::anyhow!("no Location"))?;
        let id = location.rsplit('/').next().unwrap_or_default().to_string();
        let started = Instant::now();
        let (status, _, _) = send(
            &mut r,
            &mut w,
            "POST",
            &hostport,
            &format!("{base}/endringssett/{id}/start"),
            &auth,
            b"",
        )
        .await?;
        anyhow::ensure!(status == 200, "start: {status}");
        loop {
            let (_, _, body) = send(
                &mut r,
                &mut w,
                "GET",
                &hostport,
                &format!("{base}/endringssett/{id}/fremdrift"),
                &auth,
                b"",
            )
            .await?;
            let p = String::from_utf8_lossy(&body).to_string();
            if p == "\"UTFØRT_OG_ETTERBEHANDLET\"" {
                break;
            }
            anyhow::ensure!(
                !p.contains("AVVIST") && !p.contains("KANSELLERT"),
                "changeset {id} ended {p}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        tokio::time::sleep(pause).await;
    }
    Ok(times)
}

async fn follow(hostport: &str, prefix: &str, first: &str) -> anyhow::Result<()> {
    let stream = TcpStream::connect(hostport).await?;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::with_capacity(1 << 20, r);
    let started = Instant::now();
    let mut path = format!("{prefix}{first}");
    let (mut pages, mut objects, mut bytes) = (0usize, 0u64, 0usize);
    loop {
        let (status, body) = get(&mut r, &mut w, hostport, &path).await?;
        anyhow::ensure!(status == 200, "GET {path}: status {status}");
        bytes += body.len();
        let v: serde_json::Value = serde_json::from_slice(&body)?;
        let n = v["metadata"]["returnert"].as_u64().unwrap_or(0);
        pages += 1;
        if n == 0 {
            break;
        }
        objects += n;
        let href = v["metadata"]["neste"]["href"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("no neste.href"))?;
        path = href
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_string()))
            .ok_or_else(|| anyhow::anyhow!("bad href {href}"))?;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{objects} objects in {pages} pages in {secs:.2} s: {:.0} objects/s, {:.1} MB",
        objects as f64 / secs,
        bytes as f64 / 1e6
    );
    Ok(())
}

/// `http://host:port/prefix` → (host:port, /prefix); loopback only.
fn target(base: &str) -> anyhow::Result<(String, String)> {
    let rest = base
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("--base must start with http://"))?;
    let (hostport, prefix) = rest
        .split_once('/')
        .map(|(h, p)| (h.to_string(), format!("/{p}")))
        .unwrap_or((rest.to_string(), String::new()));
    let host = hostport.split(':').next().unwrap_or("");
    if !(host == "localhost" || host == "[::1]" || host.starts_with("127.")) {
        anyhow::bail!("refusing to load {host}: only loopback addresses are allowed");
    }
    Ok((hostport, prefix))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (hostport, prefix) = target(&args.base)?;
    let mut targets = vec![(hostport.clone(), prefix.clone())];
    for t in &args.also {
        targets.push(target(t)?);
    }
    if let Some(first) = &args.follow {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return rt.block_on(follow(&hostport, &prefix, first));
    }
    let path_file = args
        .paths
        .clone()
        .expect("clap requires --paths without --follow");
    let paths: Vec<String> = std::fs::read_to_string(&path_file)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    anyhow::ensure!(!paths.is_empty(), "no paths in {}", path_file.display());
    let paths = std::sync::Arc::new(paths);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let counted_from = started + Duration::from_secs(args.warmup);
    let until = counted_from + Duration::from_secs(args.seconds);
    let per = args.max_requests / args.connections.max(1);
    let changeset = match &args.write_changeset {
        Some(p) => Some(std::fs::read(p)?),
        None => None,
    };
    let (results, writes) = rt.block_on(async {
        let writes = changeset.map(|body| {
            tokio::spawn(write_loop(
                hostport.clone(),
                args.write_base.clone(),
                args.token.clone().unwrap_or_default(),
                body,
                Duration::from_millis(args.write_pause_ms),
                until,
            ))
        });
        // every request's bytes made once per target, before the clock starts
        let requests: Vec<std::sync::Arc<Vec<Vec<u8>>>> = targets
            .iter()
            .map(|(hostport, prefix)| {
                std::sync::Arc::new(
                    paths
                        .iter()
                        .map(|p| get_request(hostport, &format!("{prefix}{p}")))
                        .collect(),
                )
            })
            .collect();
        let mut tasks = Vec::new();
        for c in 0..args.connections {
            let t = c % targets.len();
            tasks.push(tokio::spawn(worker(
                targets[t].0.clone(),
                requests[t].clone(),
                c * 7919,
                until,
                counted_from,
                per,
            )));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await);
        }
        let writes = match writes {
            Some(t) => Some(t.await),
            None => None,
        };
        (out, writes)
    });
    let elapsed = Instant::now()
        .saturating_duration_since(counted_from)
        .as_secs_f64()
        .min(args.seconds as f64)
        .max(1e-9);
    let mut lat = Vec::new();
    let (mut errors, mut bytes, mut failed) = (0, 0, 0);
    let mut per_target = vec![0usize; targets.len()];
    for (c, r) in results.into_iter().enumerate() {
        match r {
            Ok(Ok(s)) => {
                per_target[c % targets.len()] += s.latencies_us.len();
                lat.extend(s.latencies_us);
                errors += s.errors;
                bytes += s.bytes;
            }
            _ => failed += 1,
        }
    }
    lat.sort_unstable();
    anyhow::ensure!(!lat.is_empty(), "no request completed");
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
    println!(
        "{} requests in {:.1} s over {} connections: {:.0} requests/s, latency ms p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}; {} non-2xx, {} connections failed, {:.1} MB received",
        lat.len(),
        elapsed,
        args.connections,
        lat.len() as f64 / elapsed,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0),
        errors,
        failed,
        bytes as f64 / 1e6
    );
    if targets.len() > 1 {
        for ((hostport, _), n) in targets.iter().zip(&per_target) {
            println!("  {hostport}: {:.0} requests/s", *n as f64 / elapsed);
        }
    }
    if let Some(w) = writes {
        let mut times = w??;
        times.sort_by(f64::total_cmp);
        anyhow::ensure!(!times.is_empty(), "no changeset finished");
        let at = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
        println!(
            "{} changesets during the run: start to visible ms p50 {:.0} max {:.0}",
            times.len(),
            at(0.5),
            at(1.0)
        );
    }
    Ok(())
}
