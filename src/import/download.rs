//! `vegdb import --source URL`: download the Uberiket `/stream` endpoints into a local directory
//! in the layout `source.rs` reads, then import that directory.
//!
//! Both resources have NDJSON `/stream` variants (`/vegnett/veglenkesekvenser/stream`,
//! `/vegobjekter/{typeId}/stream`, `start` = last id read, `antall` per call), so no paged
//! endpoint is needed for the current state. The object streams hold only the active versions;
//! the sequences carry their closed veglenker, which the import keeps. With
//! [`Versions::All`] (`--history`) the imported types come from the paged
//! `/vegobjekter/{typeId}` list instead, which holds every version (`pages.rs`); 915/916/920 read
//! only for road references and side facilities stay on the stream. Every batch is written as `part-<start>.ndjson` (atomically), then the
//! stream's `progress.state` (last id, done) is replaced atomically: a killed download resumes
//! after the last id saved, and a batch written but not recorded is rewritten under the same
//! name. A batch is streamed into its part file as it is read (memory: one record), within
//! limits derived from `antall` (`stream_call_limit`); JSON pages are read whole within a limit
//! per kind. Retries with exponential backoff on connection errors, time-outs, 5xx and 429, and
//! on a body cut short unless the same cut comes twice in a row; deterministic failures (other
//! 4xx, a whole line that is not JSON, an answer over its limit, a redirect loop or one leaving
//! the source's scheme/host/port, TLS failures with their reason) fail at once. Every request
//! sends `X-Client: vegdb`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{OBJECTS_DIR, SEQUENCES_DIR};
use crate::durable::write_atomically;
use crate::error::{EngineError, Result};

mod events;
mod pages;
pub use events::{download_events, download_latest_events};
pub use pages::{MAX_OBJECT_PAGE_BYTES, MAX_PAGE_OBJECTS};

const STATE_FILE: &str = "progress.state";

#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// Records per call (`antall`, 1–10,000).
    pub batch: usize,
    /// Attempts per call before giving up.
    pub attempts: u32,
    /// First back-off; doubled after every failed attempt.
    pub backoff: Duration,
    pub timeout: Duration,
    /// Streams downloaded at the same time (`--concurrency`, at least 1).
    pub concurrency: usize,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            batch: 1000,
            attempts: 8,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(120),
            concurrency: 1,
        }
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
struct StreamState {
    last_id: Option<u64>,
    done: bool,
}

/// Per stream: records fetched in this run, calls made and retries needed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StreamReport {
    pub name: String,
    pub records: usize,
    pub calls: usize,
    pub retries: usize,
    pub resumed_from: Option<u64>,
}

/// The largest record (one NDJSON line) a `/stream` answer may hold.
pub const MAX_RECORD_BYTES: u64 = 16 << 20;
/// The most bytes one `/stream` call may answer, whatever its `antall`.
pub const MAX_STREAM_CALL_BYTES: u64 = 1 << 30;
/// The most bytes of an event page (at most 1,000 events of ~200 bytes each).
pub const MAX_EVENT_PAGE_BYTES: u64 = 32 << 20;
/// The most bytes of a `?ider=` page (at most 100 records).
pub const MAX_IDS_PAGE_BYTES: u64 = 256 << 20;
/// The most bytes of a `/siste` answer (one event).
pub const MAX_LATEST_BYTES: u64 = 1 << 20;
/// Redirects followed per call (only within the source's scheme, host and port).
pub const MAX_REDIRECTS: usize = 5;

/// The most bytes a `/stream` call of `antall` records may answer: `antall` records of at
/// most [`MAX_RECORD_BYTES`], never more than [`MAX_STREAM_CALL_BYTES`].
pub fn stream_call_limit(antall: usize) -> u64 {
    (antall.max(1) as u64)
        .saturating_mul(MAX_RECORD_BYTES)
        .min(MAX_STREAM_CALL_BYTES)
}

enum Failure {
    /// Transient: connection errors, time-outs, 5xx, 429. Retried.
    Retry(String),
    /// A body cut short (no final newline, or ended before its `Content-Length`): transient
    /// when the connection broke, deterministic when the upstream answers so every time. Retried;
    /// the same failure twice in a row (same bytes) is fatal.
    Cut(String),
    /// Deterministic (4xx, a whole line that is not JSON, a redirect loop or one to another
    /// host, an answer over its size limit, a TLS failure): fails at once.
    Fatal(String),
}

/// `e` and its causes, joined by ": " (repeats dropped).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// The TLS failure in `e`'s causes, in words. An `io::Error` hides its inner error from
/// `source()`, so each one is opened too.
fn tls_reason(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        let inner = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|i| i.downcast_ref::<rustls::Error>());
        if let Some(t) = err.downcast_ref::<rustls::Error>().or(inner) {
            use rustls::CertificateError as C;
            return Some(match t {
                rustls::Error::InvalidCertificate(C::UnknownIssuer) => format!(
                    "TLS: the server's certificate is not issued by a CA this machine trusts (untrusted issuer; {t}); install the CA store (Debian: ca-certificates) or point SSL_CERT_FILE at a PEM file holding the CA"
                ),
                rustls::Error::InvalidCertificate(
                    C::NotValidForName | C::NotValidForNameContext { .. },
                ) => format!(
                    "TLS: the server's certificate is not valid for the host name of the source (name mismatch; {t})"
                ),
                other => format!("TLS: {other}"),
            });
        }
        cur = err.source();
    }
    // the TLS error may sit behind a wrapper that hides it from `source()`: its text then
    let text = chain(e);
    if text.contains("invalid peer certificate: UnknownIssuer") {
        return Some(format!(
            "TLS: the server's certificate is not issued by a CA this machine trusts (untrusted issuer; {text}); install the CA store (Debian: ca-certificates) or point SSL_CERT_FILE at a PEM file holding the CA"
        ));
    }
    if text.contains("certificate not valid for name") || text.contains("NotValidForName") {
        return Some(format!(
            "TLS: the server's certificate is not valid for the host name of the source (name mismatch; {text})"
        ));
    }
    text.contains("invalid peer certificate")
        .then(|| format!("TLS: {text}"))
}

/// How a failed `send` is taken: a TLS failure, a refused redirect and a bad URL are fatal;
/// the rest (connection refused or reset, time-outs) is retried.
fn send_failure(url: &str, e: reqwest::Error) -> Failure {
    if let Some(reason) = tls_reason(&e) {
        return Failure::Fatal(format!("{url}: {reason}"));
    }
    if e.is_redirect() || e.is_builder() {
        return Failure::Fatal(format!("{url}: {}", chain(&e)));
    }
    Failure::Retry(format!("{url}: {}", chain(&e)))
}

/// Send a GET and sort out the status: `Ok(None)` for 404 when `missing_ok`.
fn get(
    client: &reqwest::blocking::Client,
    url: &str,
    accept: &str,
    missing_ok: bool,
) -> std::result::Result<Option<reqwest::blocking::Response>, Failure> {
    let r = client
        .get(url)
        .header("X-Client", "vegdb")
        .header("Accept", accept)
        .send()
        .map_err(|e| send_failure(url, e))?;
    let status = r.status();
    if missing_ok && status.as_u16() == 404 {
        return Ok(None);
    }
    if status.is_server_error() || status.as_u16() == 429 {
        return Err(Failure::Retry(format!("{url}: HTTP {status}")));
    }
    if !status.is_success() {
        return Err(Failure::Fatal(format!("{url}: HTTP {status}")));
    }
    Ok(Some(r))
}

/// A failed read of the body after `read` bytes: a time-out is retried, anything else (the
/// connection closed before the announced `Content-Length`, a reset) is a cut body.
fn body_failure(url: &str, e: &std::io::Error, read: u64, announced: Option<u64>) -> Failure {
    let timed_out = e.kind() == std::io::ErrorKind::TimedOut
        || chain(e).contains("timed out")
        || chain(e).contains("operation timed out");
    let of = announced
        .map(|n| format!(" of the {n} its Content-Length announced"))
        .unwrap_or_default();
    let msg = format!("{url}: body ended after {read} bytes{of}: {}", chain(e));
    if timed_out {
        Failure::Retry(msg)
    } else {
        Failure::Cut(msg)
    }
}

/// Fail at once when the announced length is over `limit`.
fn check_announced(
    url: &str,
    announced: Option<u64>,
    limit: u64,
) -> std::result::Result<(), Failure> {
    match announced {
        Some(n) if n > limit => Err(Failure::Fatal(format!(
            "{url}: answer of {n} bytes, more than the {limit} allowed"
        ))),
        _ => Ok(()),
    }
}

/// One `/stream` call: the body is read line by line (at most `antall` records of at most
/// [`MAX_RECORD_BYTES`], at most `stream_call_limit(antall)` bytes) and written to `tmp` as it
/// comes, so memory holds one record. Returns the number of records and the last id.
fn fetch(
    client: &reqwest::blocking::Client,
    url: &str,
    antall: usize,
    tmp: &Path,
) -> std::result::Result<(usize, Option<u64>), Failure> {
    use std::io::{BufRead, Read, Write};
    let Some(r) = get(client, url, "application/x-ndjson", false)? else {
        return Err(Failure::Fatal(format!("{url}: HTTP 404")));
    };
    let limit = stream_call_limit(antall);
    let announced = r.content_length();
    check_announced(url, announced, limit)?;
    let io_fail = |e: std::io::Error| Failure::Fatal(format!("{}: {e}", tmp.display()));
    let mut out = std::io::BufWriter::new(std::fs::File::create(tmp).map_err(io_fail)?);
    // one byte over the limit tells an answer over it from one exactly at it
    let mut body = std::io::BufReader::with_capacity(1 << 16, r).take(limit + 1);
    let (mut read, mut count, mut blank, mut last) = (0u64, 0usize, 0usize, None);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut body)
            .take(MAX_RECORD_BYTES + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| body_failure(url, &e, read + line.len() as u64, announced))?;
        read += n as u64;
        if n == 0 {
            break;
        }
        if read > limit {
            return Err(Failure::Fatal(format!(
                "{url}: answer longer than {limit} bytes ({antall} records of at most {MAX_RECORD_BYTES} bytes)"
            )));
        }
        if !line.ends_with(b"\n") {
            if line.len() as u64 > MAX_RECORD_BYTES {
                return Err(Failure::Fatal(format!(
                    "{url}: record {} is longer than {MAX_RECORD_BYTES} bytes",
                    count + 1
                )));
            }
            return Err(Failure::Cut(format!(
                "{url}: truncated body ({read} bytes, no final newline)"
            )));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            blank += 1;
            if blank > antall {
                return Err(Failure::Fatal(format!(
                    "{url}: answer holds more than {antall} blank lines"
                )));
            }
            continue;
        }
        count += 1;
        if count > antall {
            return Err(Failure::Fatal(format!(
                "{url}: answer holds more than the {antall} records asked for"
            )));
        }
        #[derive(Deserialize)]
        struct Id {
            id: Option<serde_json::Value>,
        }
        let rec: Id = serde_json::from_slice(&line).map_err(|e| {
            Failure::Fatal(format!("{url}: line {count} is not a JSON record: {e}"))
        })?;
        let id = rec
            .id
            .as_ref()
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| Failure::Fatal(format!("{url}: record without an id")))?;
        last = Some(id);
        out.write_all(&line).map_err(io_fail)?;
    }
    let file = out.into_inner().map_err(|e| io_fail(e.into_error()))?;
    file.sync_all().map_err(io_fail)?;
    Ok((count, last))
}

/// Call `once` with the options' retries: transient failures are retried with back-off, a
/// cut body too unless the same cut comes twice in a row, fatal ones end at once.
fn with_retries<T>(
    opts: &DownloadOptions,
    report: &mut StreamReport,
    mut once: impl FnMut() -> std::result::Result<T, Failure>,
) -> Result<T> {
    let mut wait = opts.backoff;
    let mut attempt = 1;
    let mut last_cut: Option<String> = None;
    loop {
        report.calls += 1;
        let (m, cut) = match once() {
            Ok(v) => return Ok(v),
            Err(Failure::Fatal(m)) => {
                return Err(EngineError::Internal(format!("download failed: {m}")))
            }
            Err(Failure::Cut(m)) if last_cut.as_deref() == Some(m.as_str()) => {
                return Err(EngineError::Internal(format!(
                    "download failed: {m} (twice in the same way: the upstream answers so every time)"
                )))
            }
            Err(Failure::Cut(m)) => (m, true),
            Err(Failure::Retry(m)) => (m, false),
        };
        if attempt >= opts.attempts {
            return Err(EngineError::Internal(format!(
                "download failed after {attempt} attempts: {m}"
            )));
        }
        tracing::warn!("{m}; retrying in {wait:?}");
        last_cut = cut.then_some(m);
        report.retries += 1;
        std::thread::sleep(wait);
        wait *= 2;
        attempt += 1;
    }
}

/// GET `url` as JSON of at most `limit` bytes with the options' retries; `Ok(None)` for 404
/// (nothing there).
fn fetch_json(
    client: &reqwest::blocking::Client,
    url: &str,
    limit: u64,
    opts: &DownloadOptions,
    report: &mut StreamReport,
) -> Result<Option<serde_json::Value>> {
    use std::io::Read;
    with_retries(opts, report, || {
        let Some(r) = get(client, url, "application/json", true)? else {
            return Ok(None);
        };
        let announced = r.content_length();
        check_announced(url, announced, limit)?;
        let mut body = Vec::new();
        r.take(limit + 1)
            .read_to_end(&mut body)
            .map_err(|e| body_failure(url, &e, body.len() as u64, announced))?;
        if body.len() as u64 > limit {
            return Err(Failure::Fatal(format!(
                "{url}: answer longer than {limit} bytes"
            )));
        }
        serde_json::from_slice(&body).map(Some).map_err(|e| {
            if e.is_eof() {
                Failure::Cut(format!("{url}: truncated JSON ({} bytes): {e}", body.len()))
            } else {
                Failure::Fatal(format!("{url}: not JSON: {e}"))
            }
        })
    })
}

fn read_state(dir: &Path) -> Result<StreamState> {
    let p = dir.join(STATE_FILE);
    match std::fs::read(&p) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt(&p, e.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StreamState::default()),
        Err(e) => Err(EngineError::io(&p, e)),
    }
}

/// Download one stream into `dir` (resuming from its saved state).
fn download_stream(
    client: &reqwest::blocking::Client,
    url: &str,
    dir: &Path,
    name: &str,
    opts: &DownloadOptions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<StreamReport> {
    std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    pages::refuse_paged(dir)?;
    let mut state = read_state(dir)?;
    let mut report = StreamReport {
        name: name.to_string(),
        resumed_from: state.last_id,
        ..Default::default()
    };
    while !state.done {
        let call = match state.last_id {
            Some(id) => format!("{url}?start={id}&antall={}", opts.batch),
            None => format!("{url}?antall={}", opts.batch),
        };
        let start = state.last_id.unwrap_or(0);
        let part = dir.join(format!("part-{start:020}.ndjson"));
        // written as it is read, renamed into place once whole
        let tmp = dir.join(format!(".part-{start:020}.ndjson.tmp"));
        let fetched = with_retries(opts, &mut report, || fetch(client, &call, opts.batch, &tmp));
        let (count, last) = match fetched {
            Ok(v) => v,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        match last {
            None => {
                let _ = std::fs::remove_file(&tmp);
                state.done = true;
            }
            Some(last) => {
                if state.last_id.is_some_and(|prev| last <= prev) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(EngineError::Internal(format!(
                        "download failed: {call} did not advance past id {last}"
                    )));
                }
                std::fs::rename(&tmp, &part).map_err(|e| EngineError::io(&part, e))?;
                crate::durable::fsync_dir(dir)?;
                report.records += count;
                state.last_id = Some(last);
            }
        }
        let bytes = serde_json::to_vec(&state).map_err(|e| EngineError::Internal(e.to_string()))?;
        write_atomically(&dir.join(STATE_FILE), &bytes)?;
        progress(&report);
    }
    Ok(report)
}

/// Which versions of the imported object types a download fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Versions {
    /// The active ones: `/vegobjekter/{typeId}/stream` (fast; no object history).
    #[default]
    Active,
    /// Every version: the paged `/vegobjekter/{typeId}` list (`--history`; slower: at most
    /// 1,000 objects per call, each page read whole).
    All,
}

/// Download sequences and the object types `types` (915, 916 and 920 always) from `base` (the API
/// root, e.g. `https://…/uberiket/api/v1`) into `dest`, the objects' active versions only.
pub fn download(
    base: &str,
    dest: &Path,
    types: &[u32],
    opts: &DownloadOptions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<Vec<StreamReport>> {
    download_versions(base, dest, types, opts, Versions::Active, progress)
}

/// [`download`] with the `versions` of the types `types` to fetch: with [`Versions::All`] the
/// `types` come from the paged list (every version), 915/916/920 when not in `types` (read
/// for road references and side facilities only) and the sequences from their streams as
/// always.
pub fn download_versions(
    base: &str,
    dest: &Path,
    types: &[u32],
    opts: &DownloadOptions,
    versions: Versions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<Vec<StreamReport>> {
    let base = base.trim_end_matches('/');
    let client = client(base, opts)?;
    // (url, directory, name, paged)
    let mut streams: Vec<(String, PathBuf, String, bool)> = vec![(
        format!("{base}/vegnett/veglenkesekvenser/stream"),
        dest.join(SEQUENCES_DIR),
        SEQUENCES_DIR.to_string(),
        false,
    )];
    let mut all: Vec<u32> = types.to_vec();
    // what a directory import reads for the network's road references and attributes
    all.extend([
        super::roadref::VEGSYSTEM,
        super::roadref::STREKNING,
        super::roadref::SIDEANLEGGSDEL,
    ]);
    all.sort_unstable();
    all.dedup();
    for t in all {
        let paged = versions == Versions::All && types.contains(&t);
        let url = if paged {
            format!("{base}/vegobjekter/{t}")
        } else {
            format!("{base}/vegobjekter/{t}/stream")
        };
        streams.push((
            url,
            dest.join(OBJECTS_DIR).join(t.to_string()),
            format!("{OBJECTS_DIR}/{t}"),
            paged,
        ));
    }
    let one = |(url, dir, name, paged): &(String, PathBuf, String, bool)| {
        if *paged {
            pages::download_pages(&client, url, dir, name, opts, progress)
        } else {
            download_stream(&client, url, dir, name, opts, progress)
        }
    };
    if opts.concurrency <= 1 {
        return streams.iter().map(one).collect();
    }
    // at most `concurrency` streams at a time; reports stay in stream order
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.concurrency)
        .thread_name(|i| format!("vegdb-download-{i}"))
        .build()
        .map_err(|e| EngineError::Internal(format!("download threads: {e}")))?;
    pool.install(|| streams.par_iter().map(one).collect())
}

/// Follow a redirect only to the scheme, host and port of the call it came from, at most
/// [`MAX_REDIRECTS`] times and never back to a URL already seen (a loop).
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.follow();
        };
        let origin = |u: &reqwest::Url| {
            (
                u.scheme().to_string(),
                u.host_str().map(str::to_string),
                u.port_or_known_default(),
            )
        };
        let (to, from) = (attempt.url().clone(), first.clone());
        if origin(&to) != origin(&from) {
            let why = format!(
                "redirect to {to} refused: only redirects within the source's scheme, host and port ({}://{}) are followed",
                from.scheme(),
                from.host_str().map_or(String::new(), |h| match from.port() {
                    Some(p) => format!("{h}:{p}"),
                    None => h.to_string(),
                })
            );
            attempt.error(why)
        } else if attempt.previous().contains(&to) {
            let why = format!("redirect loop: {to} again");
            attempt.error(why)
        } else if attempt.previous().len() > MAX_REDIRECTS {
            let why = format!("more than {MAX_REDIRECTS} redirects");
            attempt.error(why)
        } else {
            attempt.follow()
        }
    })
}

/// The HTTP client for `base`. An `http://` source needs no CA store (and redirects never leave
/// its scheme); an `https://` one verifies the server with the system's CA store (rustls;
/// `SSL_CERT_FILE` names a PEM file to use instead) and fails here, naming the cause, when
/// there is none.
fn client(base: &str, opts: &DownloadOptions) -> Result<reqwest::blocking::Client> {
    let mut b = reqwest::blocking::Client::builder()
        .timeout(opts.timeout)
        .redirect(same_origin_redirects());
    let https = base.starts_with("https://");
    if !https {
        b = b.tls_certs_only(Vec::<reqwest::Certificate>::new());
    }
    b.build().map_err(|e| {
        let hint = if https {
            "; install the CA store (Debian: ca-certificates) or point SSL_CERT_FILE at a PEM file of the CAs to trust"
        } else {
            ""
        };
        EngineError::Internal(format!("HTTP client: {}{hint}", chain(&e)))
    })
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|e| EngineError::io(p, e))?;
    }
    let bytes = serde_json::to_vec(v).map_err(|e| EngineError::Internal(e.to_string()))?;
    write_atomically(path, &bytes)
}
