//! vegdb-load: a small closed-loop HTTP/1.1 load generator for benchmarks on loopback.
//!
//! `vegdb-load --base http://127.0.0.1:8080 --paths queries.txt --connections 4 --seconds 10`
//! Each connection is kept alive and sends the request paths of the file round robin, one at a
//! time. The run stops after --seconds or --max-requests, whichever comes first. Prints
//! requests/s, latency percentiles and error counts. Only loopback addresses are accepted.

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
    #[arg(long, default_value_t = 4)]
    connections: usize,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    #[arg(long, default_value_t = 5_000_000)]
    max_requests: usize,
    /// Warm-up seconds not counted.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
}

struct Stats {
    latencies_us: Vec<u32>,
    errors: usize,
    bytes: usize,
}

async fn worker(
    addr: String,
    prefix: String,
    paths: std::sync::Arc<Vec<String>>,
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
    let mut i = offset;
    while Instant::now() < until && stats.latencies_us.len() < max {
        let path = &paths[i % paths.len()];
        i += 1;
        let full = format!("{prefix}{path}");
        let t = Instant::now();
        let (status, body) = get(&mut r, &mut w, &addr, &full).await?;
        let len = body.len();
        if t >= counted_from {
            stats.latencies_us.push(t.elapsed().as_micros() as u32);
            stats.bytes += len;
            if !(200..300).contains(&status) {
                stats.errors += 1;
            }
        }
    }
    Ok(stats)
}

/// One keep-alive GET; returns status and body.
async fn get(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    w: &mut tokio::net::tcp::OwnedWriteHalf,
    host: &str,
    path: &str,
) -> std::io::Result<(u16, Vec<u8>)> {
    w.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n").as_bytes(),
    )
    .await?;
    let (mut status, mut len, mut first) = (0u16, 0usize, true);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        if first {
            status = line
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            first = false;
        } else if line == "\r\n" {
            break;
        } else if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await?;
    Ok((status, body))
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

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rest = args
        .base
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
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for c in 0..args.connections {
            tasks.push(tokio::spawn(worker(
                hostport.clone(),
                prefix.clone(),
                paths.clone(),
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
        out
    });
    let elapsed = Instant::now()
        .saturating_duration_since(counted_from)
        .as_secs_f64()
        .min(args.seconds as f64)
        .max(1e-9);
    let mut lat = Vec::new();
    let (mut errors, mut bytes, mut failed) = (0, 0, 0);
    for r in results {
        match r {
            Ok(Ok(s)) => {
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
    Ok(())
}
