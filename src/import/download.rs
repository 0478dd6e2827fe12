//! `vegdb import --source URL`: download the Uberiket `/stream` endpoints into a local directory
//! in the layout `source.rs` reads, then import that directory.
//!
//! Both resources have NDJSON `/stream` variants (`/vegnett/veglenkesekvenser/stream`,
//! `/vegobjekter/{typeId}/stream`, `start` = last id read, `antall` per call), so no paged
//! endpoint is needed. Every batch is written as `part-<start>.ndjson` (atomically), then the
//! stream's `progress.state` (last id, done) is replaced atomically: a killed download resumes
//! after the last id saved, and a batch written but not recorded is rewritten under the same
//! name. Retries with exponential backoff on connection errors, time-outs, 5xx, 429 and bodies
//! that are not whole NDJSON (truncated); other 4xx fail at once. Every request sends
//! `X-Client: vegdb`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{OBJECTS_DIR, SEQUENCES_DIR};
use crate::durable::write_atomically;
use crate::error::{EngineError, Result};

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
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            batch: 1000,
            attempts: 8,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(120),
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

enum Failure {
    Retry(String),
    Fatal(String),
}

fn fetch(
    client: &reqwest::blocking::Client,
    url: &str,
) -> std::result::Result<Vec<(u64, String)>, Failure> {
    let r = client
        .get(url)
        .header("X-Client", "vegdb")
        .header("Accept", "application/x-ndjson")
        .send()
        .map_err(|e| Failure::Retry(format!("{url}: {e}")))?;
    let status = r.status();
    if status.is_server_error() || status.as_u16() == 429 {
        return Err(Failure::Retry(format!("{url}: HTTP {status}")));
    }
    if !status.is_success() {
        return Err(Failure::Fatal(format!("{url}: HTTP {status}")));
    }
    let body = r
        .text()
        .map_err(|e| Failure::Retry(format!("{url}: body: {e}")))?;
    let mut out = Vec::new();
    if !body.is_empty() && !body.ends_with('\n') {
        return Err(Failure::Retry(format!(
            "{url}: truncated body (no final newline)"
        )));
    }
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| Failure::Retry(format!("{url}: truncated or bad line: {e}")))?;
        let id = v
            .get("id")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| Failure::Fatal(format!("{url}: record without an id")))?;
        out.push((id, line.to_string()));
    }
    Ok(out)
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
        let mut wait = opts.backoff;
        let mut attempt = 1;
        let records = loop {
            report.calls += 1;
            match fetch(client, &call) {
                Ok(r) => break r,
                Err(Failure::Fatal(m)) => {
                    return Err(EngineError::Internal(format!("download failed: {m}")))
                }
                Err(Failure::Retry(m)) if attempt >= opts.attempts => {
                    return Err(EngineError::Internal(format!(
                        "download failed after {attempt} attempts: {m}"
                    )))
                }
                Err(Failure::Retry(m)) => {
                    tracing::warn!("{m}; retrying in {wait:?}");
                    report.retries += 1;
                    std::thread::sleep(wait);
                    wait *= 2;
                    attempt += 1;
                }
            }
        };
        match records.last() {
            None => state.done = true,
            Some((last, _)) => {
                if state.last_id.is_some_and(|prev| *last <= prev) {
                    return Err(EngineError::Internal(format!(
                        "download failed: {call} did not advance past id {last}"
                    )));
                }
                let start = state.last_id.unwrap_or(0);
                let mut body = String::new();
                for (_, line) in &records {
                    body.push_str(line);
                    body.push('\n');
                }
                write_atomically(
                    &dir.join(format!("part-{start:020}.ndjson")),
                    body.as_bytes(),
                )?;
                report.records += records.len();
                state.last_id = Some(*last);
            }
        }
        let bytes = serde_json::to_vec(&state).map_err(|e| EngineError::Internal(e.to_string()))?;
        write_atomically(&dir.join(STATE_FILE), &bytes)?;
        progress(&report);
    }
    Ok(report)
}

/// Download sequences and the object types `types` (915 and 916 always) from `base` (the API
/// root, e.g. `https://…/uberiket/api/v1`) into `dest`.
pub fn download(
    base: &str,
    dest: &Path,
    types: &[u32],
    opts: &DownloadOptions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<Vec<StreamReport>> {
    let base = base.trim_end_matches('/');
    let client = reqwest::blocking::Client::builder()
        .timeout(opts.timeout)
        .build()
        .map_err(|e| EngineError::Internal(format!("HTTP client: {e}")))?;
    let mut streams: Vec<(String, PathBuf, String)> = vec![(
        format!("{base}/vegnett/veglenkesekvenser/stream"),
        dest.join(SEQUENCES_DIR),
        SEQUENCES_DIR.to_string(),
    )];
    let mut all: Vec<u32> = types.to_vec();
    all.extend([super::roadref::VEGSYSTEM, super::roadref::STREKNING]);
    all.sort_unstable();
    all.dedup();
    for t in all {
        streams.push((
            format!("{base}/vegobjekter/{t}/stream"),
            dest.join(OBJECTS_DIR).join(t.to_string()),
            format!("{OBJECTS_DIR}/{t}"),
        ));
    }
    streams
        .iter()
        .map(|(url, dir, name)| download_stream(&client, url, dir, name, opts, progress))
        .collect()
}
