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

/// GET `url` as JSON with the options' retries; `Ok(None)` for 404 (nothing there).
fn fetch_json(
    client: &reqwest::blocking::Client,
    url: &str,
    opts: &DownloadOptions,
    report: &mut StreamReport,
) -> Result<Option<serde_json::Value>> {
    let once = || -> std::result::Result<Option<serde_json::Value>, Failure> {
        let r = client
            .get(url)
            .header("X-Client", "vegdb")
            .header("Accept", "application/json")
            .send()
            .map_err(|e| Failure::Retry(format!("{url}: {e}")))?;
        let status = r.status();
        if status.as_u16() == 404 {
            return Ok(None);
        }
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(Failure::Retry(format!("{url}: HTTP {status}")));
        }
        if !status.is_success() {
            return Err(Failure::Fatal(format!("{url}: HTTP {status}")));
        }
        let body = r
            .text()
            .map_err(|e| Failure::Retry(format!("{url}: body: {e}")))?;
        serde_json::from_str(&body)
            .map(Some)
            .map_err(|e| Failure::Retry(format!("{url}: truncated or bad JSON: {e}")))
    };
    let mut wait = opts.backoff;
    let mut attempt = 1;
    loop {
        report.calls += 1;
        match once() {
            Ok(v) => return Ok(v),
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
    }
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
    let one = |(url, dir, name): &(String, PathBuf, String)| {
        download_stream(&client, url, dir, name, opts, progress)
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

fn client(opts: &DownloadOptions) -> Result<reqwest::blocking::Client> {
    reqwest::blocking::Client::builder()
        .timeout(opts.timeout)
        .build()
        .map_err(|e| EngineError::Internal(format!("HTTP client: {e}")))
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|e| EngineError::io(p, e))?;
    }
    let bytes = serde_json::to_vec(v).map_err(|e| EngineError::Internal(e.to_string()))?;
    write_atomically(path, &bytes)
}

/// Save the newest event id of every stream (`/hendelser/.../siste`) as
/// `hendelser/<stream>/siste.json`, so an import of `dest` records where a later refresh
/// starts. Asked before the data is downloaded (events during the download are applied again
/// by the refresh, which is harmless); kept when present (a resumed download keeps the first
/// answer). A stream without events (404) gets no file.
pub fn download_latest_events(
    base: &str,
    dest: &Path,
    types: &[u32],
    opts: &DownloadOptions,
) -> Result<StreamReport> {
    let base = base.trim_end_matches('/');
    let client = client(opts)?;
    let mut report = StreamReport {
        name: "hendelser/siste".into(),
        ..Default::default()
    };
    let mut wanted = vec![(
        format!("{base}/hendelser/veglenkesekvenser/siste"),
        super::events::sequence_events_dir(dest),
    )];
    for &t in types {
        wanted.push((
            format!("{base}/hendelser/vegobjekter/{t}/siste"),
            super::events::object_events_dir(dest, t),
        ));
    }
    for (url, dir) in wanted {
        let file = dir.join("siste.json");
        if file.exists() {
            continue;
        }
        if let Some(v) = fetch_json(&client, &url, opts, &mut report)? {
            write_json(&file, &v)?;
            report.records += 1;
        }
    }
    Ok(report)
}

/// Ids per `?ider=` call.
const IDS_PER_CALL: usize = 100;

/// Download what `vegdb refresh` applies into `dest` (emptied first): the events after
/// `last_event_ids` of the sequences and of `types` (`/hendelser/...?start=&antall=`, paged by
/// the highest event id read until a page is empty), then the current state of every id they
/// name (`/vegnett/veglenkesekvenser?ider=`, `/vegobjekter/{type}?ider=&inkluder=alle`). Ids
/// the upstream no longer has are simply absent, which the refresh reads as removed.
///
/// Object streams go first: when a 915 Vegsystem or 916 Strekning changes, the sequences under
/// it (before: `road_system(id)`, the stored generation's placements; after: the fetched
/// object's) are fetched with the named ones, so their road references are derived again.
pub fn download_events(
    base: &str,
    dest: &Path,
    last_event_ids: &std::collections::BTreeMap<String, u64>,
    types: &[u32],
    road_system: &(dyn Fn(u64) -> Vec<u64> + Sync),
    opts: &DownloadOptions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<Vec<StreamReport>> {
    use super::events::{object_stream, SEQUENCE_STREAM};
    use super::roadref::{STREKNING, VEGSYSTEM};
    let base = base.trim_end_matches('/');
    let client = client(opts)?;
    if dest.exists() {
        std::fs::remove_dir_all(dest).map_err(|e| EngineError::io(dest, e))?;
    }
    let antall = opts.batch.clamp(1, 1000);
    // (stream name, events url, events dir, id field, current-state url, current-state dir)
    let mut streams = Vec::new();
    for &t in types {
        streams.push((
            object_stream(t),
            format!("{base}/hendelser/vegobjekter/{t}"),
            super::events::object_events_dir(dest, t),
            "vegobjektId",
            format!("{base}/vegobjekter/{t}?antall=1000&inkluder=alle&ider="),
            dest.join(OBJECTS_DIR).join(t.to_string()),
        ));
    }
    streams.push((
        SEQUENCE_STREAM.to_string(),
        format!("{base}/hendelser/veglenkesekvenser"),
        super::events::sequence_events_dir(dest),
        "nettelementId",
        format!("{base}/vegnett/veglenkesekvenser?antall=1000&ider="),
        dest.join(SEQUENCES_DIR),
    ));
    let mut under_road_system: std::collections::BTreeSet<u64> = Default::default();
    let mut reports = Vec::new();
    for (name, url, dir, id_field, current_url, current_dir) in streams {
        let road_system_stream = [VEGSYSTEM, STREKNING]
            .iter()
            .any(|t| name == object_stream(*t));
        let mut report = StreamReport {
            name: name.clone(),
            resumed_from: last_event_ids.get(&name).copied(),
            ..Default::default()
        };
        let mut start = report.resumed_from;
        let mut named: std::collections::BTreeSet<u64> = Default::default();
        loop {
            let call = match start {
                Some(s) => format!("{url}?start={s}&antall={antall}"),
                None => format!("{url}?antall={antall}"),
            };
            let page = fetch_json(&client, &call, opts, &mut report)?.ok_or_else(|| {
                EngineError::Internal(format!("download failed: {call}: HTTP 404"))
            })?;
            let events = page
                .get("hendelser")
                .and_then(serde_json::Value::as_array)
                .ok_or_else(|| {
                    EngineError::Internal(format!("download failed: {call}: no hendelser list"))
                })?;
            if events.is_empty() {
                break;
            }
            let mut max = start.unwrap_or(0);
            for e in events {
                let (Some(eid), Some(id)) = (
                    e.get("hendelseId").and_then(serde_json::Value::as_u64),
                    e.get(id_field).and_then(serde_json::Value::as_u64),
                ) else {
                    return Err(EngineError::Internal(format!(
                        "download failed: {call}: event without hendelseId or {id_field}"
                    )));
                };
                max = max.max(eid);
                named.insert(id);
            }
            if start.is_some_and(|s| max <= s) {
                return Err(EngineError::Internal(format!(
                    "download failed: {call} did not advance past event id {max}"
                )));
            }
            write_json(
                &dir.join(format!("page-{:020}.json", start.unwrap_or(0))),
                &page,
            )?;
            report.records += events.len();
            start = Some(max);
            progress(&report);
        }
        if name == SEQUENCE_STREAM {
            named.extend(under_road_system.iter().copied());
        }
        if road_system_stream {
            for &id in &named {
                under_road_system.extend(road_system(id));
            }
        }
        let ids: Vec<u64> = named.into_iter().collect();
        for (i, group) in ids.chunks(IDS_PER_CALL).enumerate() {
            let list: Vec<String> = group.iter().map(u64::to_string).collect();
            let call = format!("{current_url}{}", list.join(","));
            if let Some(page) = fetch_json(&client, &call, opts, &mut report)? {
                if road_system_stream {
                    for o in page
                        .get("vegobjekter")
                        .and_then(serde_json::Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let lines = o
                            .pointer("/stedfesting/linjer")
                            .and_then(serde_json::Value::as_array);
                        for l in lines.into_iter().flatten() {
                            under_road_system
                                .extend(l.get("id").and_then(serde_json::Value::as_u64));
                        }
                    }
                }
                write_json(&current_dir.join(format!("ider-{i:06}.json")), &page)?;
            }
            progress(&report);
        }
        reports.push(report);
    }
    Ok(reports)
}
