//! The changeset journal: every registered changeset on disk, durable before the client hears
//! about it.
//!
//! ```text
//! <data>/changesets/<uuid>.content.json     the changeset as registered (written once)
//! <data>/changesets/<uuid>.state.json       progress, owner, result (replaced atomically)
//! <data>/changesets/archive-000001.jsonl    finished changesets, compacted (append-only)
//! ```
//! Both loose files are written to a temp file, fsynced and renamed into place; one fsync of
//! the directory after the state file makes the registration durable, and only then does the
//! client get its 201. One file without the other is an interrupted registration (never
//! acknowledged) and is removed at startup.
//!
//! Compaction: a finished changeset (UTFØRT_OG_ETTERBEHANDLET, UTFØRT, AVVIST, KANSELLERT)
//! never changes again, so its two files are moved into an append-only segment, one JSON line
//! `{"record": …, "content": …}` each (at startup, and whenever `compact_after` finished ones
//! are loose). The lines are appended and fsynced before the loose files are removed; a crash
//! in between leaves both, and the next start drops the loose copy. A torn last line (crash
//! while appending) is skipped. Segments hold up to `segment_entries` changesets; retention
//! drops whole sealed segments once every changeset in them was received more than
//! `keep_days` ago, or while the changesets after them already number `keep_entries`. What
//! `GET /endringssett`, `/{id}`, `/status` and `/fremdrift` answer is the same before and after
//! compaction.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::model::Changeset;
use super::validate::{Outcome, Rights};
use crate::durable::{fsync_dir, write_atomically, write_renamed};
use crate::error::{EngineError, Result};

/// `fremdrift` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Progress {
    #[serde(rename = "IKKE_STARTET")]
    NotStarted,
    #[serde(rename = "BEHANDLES")]
    Processing,
    #[serde(rename = "VENTER")]
    Waiting,
    #[serde(rename = "KANSELLERT")]
    Cancelled,
    #[serde(rename = "AVVIST")]
    Rejected,
    #[serde(rename = "UTFØRT")]
    Done,
    #[serde(rename = "UTFØRT_OG_ETTERBEHANDLET")]
    DoneAndVisible,
}

impl Progress {
    pub fn api_name(self) -> &'static str {
        match self {
            Progress::NotStarted => "IKKE_STARTET",
            Progress::Processing => "BEHANDLES",
            Progress::Waiting => "VENTER",
            Progress::Cancelled => "KANSELLERT",
            Progress::Rejected => "AVVIST",
            Progress::Done => "UTFØRT",
            Progress::DoneAndVisible => "UTFØRT_OG_ETTERBEHANDLET",
        }
    }
    pub fn parse(text: &str) -> Option<Progress> {
        serde_json::from_value(serde_json::Value::String(text.to_uppercase())).ok()
    }
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Progress::Cancelled | Progress::Rejected | Progress::Done | Progress::DoneAndVisible
        )
    }
}

/// The mutable state of a changeset.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    /// RFC 3339 registration time (`mottatt`).
    pub received: String,
    pub received_ms: i64,
    pub progress: Progress,
    /// `venteårsak` (VENTER) and `avvistårsak` (AVVIST).
    #[serde(default)]
    pub waiting_reason: Option<String>,
    #[serde(default)]
    pub rejected_reason: Option<String>,
    /// `eier`: the registering user; `klient`: its X-Client.
    pub owner: String,
    #[serde(default)]
    pub client: Option<String>,
    /// The owner's rights when registering (processing checks the owner's rights as the users
    /// file says then; these apply only to a writer without a users file).
    #[serde(default)]
    pub rights: Rights,
    #[serde(default)]
    pub dry_run: bool,
    /// Order of `start` calls; the writer applies started changesets in this order.
    #[serde(default)]
    pub start_seq: Option<u64>,
    /// When `start` was called (epoch ms).
    #[serde(default)]
    pub started_ms: Option<i64>,
    /// `X-NVDB-Delay`: processing waits this many seconds after start.
    #[serde(default)]
    pub delay_s: u32,
    /// The generation that made the changes visible.
    #[serde(default)]
    pub generation: Option<u64>,
    /// Shared: a status poll clones the record, not 10,000 results.
    #[serde(default)]
    pub outcome: Arc<Outcome>,
    pub objects: usize,
    /// In memory only: the results of this finished changeset were dropped from memory (they
    /// are in its state file; `Journal::get_full` reads them back).
    #[serde(skip)]
    pub outcome_elided: bool,
}

/// Finished changesets with more object results than this keep them on disk only.
pub const RESULTS_KEPT_IN_MEMORY: usize = 100;

/// The in-memory form of a record: large results of finished changesets stay on disk.
fn slim(mut r: Record) -> Record {
    if r.progress.is_final() && r.outcome.objects.len() > RESULTS_KEPT_IN_MEMORY {
        r.outcome = Arc::default();
        r.outcome_elided = true;
    }
    r
}

impl Record {
    /// A new, not yet started changeset of `objects` objects, received now.
    pub fn new(id: String, owner: String, client: Option<String>, objects: usize) -> Record {
        let received = chrono::Utc::now();
        Record {
            id,
            received: received.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            received_ms: received.timestamp_millis(),
            progress: Progress::NotStarted,
            waiting_reason: None,
            rejected_reason: None,
            owner,
            client,
            rights: Rights::default(),
            dry_run: false,
            start_seq: None,
            started_ms: None,
            delay_s: 0,
            generation: None,
            outcome: Arc::default(),
            objects,
            outcome_elided: false,
        }
    }
}

/// How long finished changesets are kept, and when they are compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Finished changesets received within this many days are kept.
    pub keep_days: u32,
    /// Older ones are kept while fewer than this many finished changesets are newer.
    pub keep_entries: usize,
    /// Compact once this many finished changesets are loose (also at every start).
    pub compact_after: usize,
    /// Changesets per segment file.
    pub segment_entries: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_days: 30,
            keep_entries: 100_000,
            compact_after: 64,
            segment_entries: 4096,
        }
    }
}

static DEFAULT_RETENTION: std::sync::OnceLock<Retention> = std::sync::OnceLock::new();

/// Set the retention journals opened from now on use (the server sets it from the command
/// line before the writer opens its journal; the first call wins).
pub fn set_default_retention(r: Retention) {
    let _ = DEFAULT_RETENTION.set(r);
}

const SEGMENT_PREFIX: &str = "archive-";
const SEGMENT_SUFFIX: &str = ".jsonl";

fn segment_name(n: u64) -> String {
    format!("{SEGMENT_PREFIX}{n:06}{SEGMENT_SUFFIX}")
}

/// Where an archived changeset's line is.
#[derive(Debug, Clone, Copy)]
struct Location {
    segment: u64,
    offset: u64,
    len: u64,
}

#[derive(Debug, Default)]
struct Segment {
    ids: Vec<String>,
    newest_received_ms: i64,
    bytes: u64,
}

#[derive(Debug, Default)]
struct Archive {
    segments: BTreeMap<u64, Segment>,
    locations: HashMap<String, Location>,
}

/// One line of a segment.
#[derive(Serialize, Deserialize)]
struct ArchivedEntry {
    record: Record,
    content: serde_json::Value,
}

/// A segment line read for its record only.
#[derive(Deserialize)]
struct ArchivedRecord {
    record: Record,
}

pub struct Journal {
    dir: PathBuf,
    /// Held only for in-memory reads and inserts, never across disk writes, so readers of
    /// progress never wait for an fsync.
    records: Mutex<BTreeMap<String, Record>>,
    /// Serialises state changes (held across their fsync).
    transitions: Mutex<()>,
    /// Compacted changesets; the lock is held across compaction (appends, removals).
    archive: Mutex<Archive>,
    /// Finished changesets still in loose files.
    loose_finished: Mutex<BTreeSet<String>>,
    retention: Retention,
    /// Highest start sequence number ever seen (also of changesets dropped by retention).
    max_start_seq: u64,
}

impl Journal {
    /// Open (creating) the journal in `dir`, read every record and compact finished ones.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Journal> {
        Self::open_with(dir, DEFAULT_RETENTION.get().copied().unwrap_or_default())
    }

    /// As `open`, with a retention policy.
    pub fn open_with(dir: impl Into<PathBuf>, retention: Retention) -> Result<Journal> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        let mut records = BTreeMap::new();
        let archive = read_archive(&dir, &mut records)?;
        let mut contents = Vec::new();
        let mut states = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| EngineError::io(&dir, e))? {
            let entry = entry.map_err(|e| EngineError::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            let path = entry.path();
            if name.starts_with('.') && name.ends_with(".tmp") {
                fs::remove_file(&path).map_err(|e| EngineError::io(&path, e))?;
            } else if let Some(id) = name.strip_suffix(".state.json") {
                if archive.locations.contains_key(id) {
                    // compacted, the loose copy not yet removed when the process stopped
                    fs::remove_file(&path).map_err(|e| EngineError::io(&path, e))?;
                    continue;
                }
                let text = fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
                let r: Record = serde_json::from_slice(&text)
                    .map_err(|e| EngineError::corrupt(&path, e.to_string()))?;
                records.insert(id.to_string(), slim(r));
                states.push((id.to_string(), path));
            } else if let Some(id) = name.strip_suffix(".content.json") {
                if archive.locations.contains_key(id) {
                    fs::remove_file(&path).map_err(|e| EngineError::io(&path, e))?;
                    continue;
                }
                contents.push((id.to_string(), path));
            }
        }
        // a registration is complete with both files; one alone was never acknowledged
        let with_content: std::collections::HashSet<&String> =
            contents.iter().map(|(id, _)| id).collect();
        for (id, path) in &states {
            if !with_content.contains(id) {
                tracing::warn!(changeset = %id, "removing an interrupted registration");
                records.remove(id);
                fs::remove_file(path).map_err(|e| EngineError::io(path, e))?;
            }
        }
        for (id, path) in &contents {
            if !records.contains_key(id) {
                tracing::warn!(changeset = %id, "removing an interrupted registration");
                fs::remove_file(path).map_err(|e| EngineError::io(path, e))?;
            }
        }
        let loose_finished = records
            .iter()
            .filter(|(id, r)| r.progress.is_final() && !archive.locations.contains_key(*id))
            .map(|(id, _)| id.clone())
            .collect();
        let max_start_seq = records
            .values()
            .filter_map(|r| r.start_seq)
            .max()
            .unwrap_or(0);
        let journal = Journal {
            dir,
            records: Mutex::new(records),
            transitions: Mutex::new(()),
            archive: Mutex::new(archive),
            loose_finished: Mutex::new(loose_finished),
            retention,
            max_start_seq,
        };
        journal.compact()?;
        Ok(journal)
    }

    /// The retention this journal applies.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// Move every finished changeset from its loose files into the segments, then apply the
    /// retention. Returns how many were moved.
    pub fn compact(&self) -> Result<usize> {
        let mut archive = self.archive.lock().expect("archive lock");
        let mut ids: Vec<String> = self
            .loose_finished
            .lock()
            .expect("journal lock")
            .iter()
            .cloned()
            .collect();
        ids.sort_by_key(|id| (self.get(id).map_or(0, |r| r.received_ms), id.clone()));
        let mut moved = 0;
        for batch in ids.chunks(self.retention.segment_entries.max(1)) {
            moved += self.compact_batch(&mut archive, batch)?;
        }
        self.apply_retention(&mut archive)?;
        Ok(moved)
    }

    /// Append `ids` (finished, loose) to the open segment (a new one when it is full), fsync,
    /// then remove their loose files.
    fn compact_batch(&self, archive: &mut Archive, ids: &[String]) -> Result<usize> {
        let mut lines: Vec<(String, i64, Vec<u8>)> = Vec::new();
        for id in ids {
            let state = self.state_path(id);
            let record: Record = match fs::read(&state) {
                Ok(b) => serde_json::from_slice(&b)
                    .map_err(|e| EngineError::corrupt(&state, e.to_string()))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(EngineError::io(&state, e)),
            };
            if !record.progress.is_final() {
                continue;
            }
            let content_path = self.content_path(id);
            let content: serde_json::Value = fs::read(&content_path)
                .map_err(|e| EngineError::io(&content_path, e))
                .and_then(|b| {
                    serde_json::from_slice(&b)
                        .map_err(|e| EngineError::corrupt(&content_path, e.to_string()))
                })?;
            let received = record.received_ms;
            let mut line = serde_json::to_vec(&ArchivedEntry { record, content })
                .map_err(|e| EngineError::Internal(e.to_string()))?;
            line.push(b'\n');
            lines.push((id.clone(), received, line));
        }
        if lines.is_empty() {
            return Ok(0);
        }
        let open = archive
            .segments
            .iter()
            .next_back()
            .filter(|(_, s)| s.ids.len() + lines.len() <= self.retention.segment_entries.max(1))
            .map(|(n, _)| *n);
        let (number, fresh) = match open {
            Some(n) => (n, false),
            None => (
                archive.segments.keys().next_back().map_or(1, |n| n + 1),
                true,
            ),
        };
        let path = self.dir.join(segment_name(number));
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(|e| EngineError::io(&path, e))?;
        let mut offset = file
            .seek(SeekFrom::End(0))
            .map_err(|e| EngineError::io(&path, e))?;
        let start = offset;
        // after a torn line (a crash or a full disk while appending), start on a fresh line
        let mut prefix = Vec::new();
        if offset > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(offset - 1))
                .and_then(|_| file.read_exact(&mut last))
                .map_err(|e| EngineError::io(&path, e))?;
            if last[0] != b'\n' {
                prefix.push(b'\n');
            }
        }
        let mut buf = prefix.clone();
        offset += prefix.len() as u64;
        let mut placed = Vec::new();
        for (id, received, line) in &lines {
            placed.push((
                id.clone(),
                *received,
                Location {
                    segment: number,
                    offset,
                    len: line.len() as u64 - 1,
                },
            ));
            offset += line.len() as u64;
            buf.extend_from_slice(line);
        }
        let written = file.write_all(&buf).and_then(|_| file.sync_all());
        if let Err(e) = written {
            // leave no half line behind when possible; the loose files still hold everything
            let _ = file.set_len(start);
            return Err(EngineError::io(&path, e));
        }
        if fresh {
            fsync_dir(&self.dir)?;
        }
        crate::snapshot::store::fail_point("journal-after-append");
        let segment = archive.segments.entry(number).or_default();
        segment.bytes = offset;
        for (id, received, loc) in &placed {
            segment.ids.push(id.clone());
            segment.newest_received_ms = segment.newest_received_ms.max(*received);
            archive.locations.insert(id.clone(), *loc);
        }
        {
            let mut loose = self.loose_finished.lock().expect("journal lock");
            for (id, _, _) in &placed {
                loose.remove(id);
            }
        }
        for (id, _, _) in &placed {
            for p in [self.state_path(id), self.content_path(id)] {
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(EngineError::io(&p, e)),
                }
            }
        }
        fsync_dir(&self.dir)?;
        Ok(placed.len())
    }

    /// Drop sealed segments past the retention (every changeset in them older than
    /// `keep_days`, or `keep_entries` newer finished changesets without them).
    fn apply_retention(&self, archive: &mut Archive) -> Result<()> {
        let cutoff =
            chrono::Utc::now().timestamp_millis() - self.retention.keep_days as i64 * 86_400_000;
        let loose = self.loose_finished.lock().expect("journal lock").len();
        let mut total: usize = loose
            + archive
                .segments
                .values()
                .map(|s| s.ids.len())
                .sum::<usize>();
        let last = archive.segments.keys().next_back().copied();
        let mut doomed = Vec::new();
        for (&n, seg) in &archive.segments {
            if Some(n) == last {
                break; // the open segment is never dropped
            }
            let expired = seg.newest_received_ms < cutoff;
            let surplus = total - seg.ids.len() >= self.retention.keep_entries;
            if !(expired || surplus) {
                break;
            }
            total -= seg.ids.len();
            doomed.push(n);
        }
        for n in doomed {
            let seg = archive.segments.remove(&n).expect("listed");
            {
                let mut records = self.records.lock().expect("journal lock");
                for id in &seg.ids {
                    records.remove(id);
                    archive.locations.remove(id);
                }
            }
            let path = self.dir.join(segment_name(n));
            tracing::info!(segment = %path.display(), changesets = seg.ids.len(), "dropping finished changesets past the retention");
            fs::remove_file(&path).map_err(|e| EngineError::io(&path, e))?;
            fsync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Compact when enough finished changesets are loose (called after state changes; never
    /// waits for a compaction already running).
    fn maybe_compact(&self) {
        let due = self.loose_finished.lock().expect("journal lock").len()
            >= self.retention.compact_after.max(1);
        if due {
            if let Err(e) = self.compact() {
                tracing::warn!(error = %e, "compacting the changeset journal failed; the loose files stay");
            }
        }
    }

    /// A record became final (loose until the next compaction).
    fn note_final(&self, r: &Record) {
        if r.progress.is_final() {
            self.loose_finished
                .lock()
                .expect("journal lock")
                .insert(r.id.clone());
        }
    }

    fn archived_at(&self, id: &str) -> Option<Location> {
        self.archive
            .lock()
            .expect("archive lock")
            .locations
            .get(id)
            .copied()
    }

    fn read_line(&self, loc: Location) -> Result<Vec<u8>> {
        let path = self.dir.join(segment_name(loc.segment));
        let mut f = fs::File::open(&path).map_err(|e| EngineError::io(&path, e))?;
        let mut buf = vec![0u8; loc.len as usize];
        f.seek(SeekFrom::Start(loc.offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| EngineError::io(&path, e))?;
        Ok(buf)
    }

    fn read_archived(&self, id: &str) -> Result<Option<ArchivedEntry>> {
        let Some(loc) = self.archived_at(id) else {
            return Ok(None);
        };
        let line = self.read_line(loc)?;
        serde_json::from_slice(&line).map(Some).map_err(|e| {
            EngineError::corrupt(self.dir.join(segment_name(loc.segment)), e.to_string())
        })
    }

    /// The loose file, or the archived entry when compaction moved it meanwhile.
    fn read_loose_or_archived<T>(
        &self,
        id: &str,
        path: &Path,
        loose: impl Fn(&[u8]) -> Result<T>,
        archived: impl Fn(ArchivedEntry) -> Result<T>,
    ) -> Result<Option<T>> {
        if let Some(e) = self.read_archived(id)? {
            return archived(e).map(Some);
        }
        match fs::read(path) {
            Ok(b) => loose(&b).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match self.read_archived(id)? {
                Some(e) => archived(e).map(Some),
                None => Ok(None),
            },
            Err(e) => Err(EngineError::io(path, e)),
        }
    }

    fn content_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.content.json"))
    }
    fn state_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.state.json"))
    }

    /// Store a new changeset durably. `record.id` names it.
    pub fn register(&self, mut content: Changeset, record: Record) -> Result<Record> {
        content.id = Some(record.id.clone());
        let bytes =
            serde_json::to_vec(&content).map_err(|e| EngineError::Internal(e.to_string()))?;
        // the state file's directory fsync makes both renames durable
        let content_path = self.content_path(&record.id);
        write_renamed(&content_path, &bytes)?;
        if let Err(e) = self.persist(&record) {
            // not registered (the client hears so): give the space back
            let _ = fs::remove_file(&content_path);
            return Err(e);
        }
        self.records
            .lock()
            .expect("journal lock")
            .insert(record.id.clone(), slim(record.clone()));
        Ok(record)
    }

    fn persist(&self, r: &Record) -> Result<()> {
        let bytes = serde_json::to_vec(r).map_err(|e| EngineError::Internal(e.to_string()))?;
        write_atomically(&self.state_path(&r.id), &bytes)
    }

    /// The record as kept in memory (results of large finished changesets elided).
    pub fn get(&self, id: &str) -> Option<Record> {
        self.records.lock().expect("journal lock").get(id).cloned()
    }

    /// The record with all its results (read from disk when they were elided).
    pub fn get_full(&self, id: &str) -> Result<Option<Record>> {
        match self.get(id) {
            Some(r) if r.outcome_elided => {
                let path = self.state_path(id);
                self.read_loose_or_archived(
                    id,
                    &path,
                    |b| {
                        serde_json::from_slice(b)
                            .map_err(|e| EngineError::corrupt(&path, e.to_string()))
                    },
                    |e| Ok(e.record),
                )
            }
            other => Ok(other),
        }
    }

    pub fn list(&self) -> Vec<Record> {
        self.records
            .lock()
            .expect("journal lock")
            .values()
            .cloned()
            .collect()
    }

    /// The registered content, read from disk (nothing is cached: a changeset may be large and
    /// is read once by the writer).
    pub fn content(&self, id: &str) -> Result<Changeset> {
        let path = self.content_path(id);
        self.read_loose_or_archived(
            id,
            &path,
            |b| serde_json::from_slice(b).map_err(|e| EngineError::corrupt(&path, e.to_string())),
            |e| {
                serde_json::from_value(e.content)
                    .map_err(|e| EngineError::corrupt(&self.dir, e.to_string()))
            },
        )?
        .ok_or_else(|| EngineError::io(&path, std::io::ErrorKind::NotFound.into()))
    }

    /// Change a record under the lock if `allowed` accepts its current state; persists before
    /// returning. Err(Ok(record)) = the state did not allow the change.
    pub fn transition(
        &self,
        id: &str,
        allowed: impl FnOnce(&Record) -> bool,
        change: impl FnOnce(&mut Record),
    ) -> Result<std::result::Result<Record, Option<Record>>> {
        let _serial = self.transitions.lock().expect("journal lock");
        let Some(current) = self.get_full(id)? else {
            return Ok(Err(None));
        };
        if !allowed(&current) {
            return Ok(Err(Some(current)));
        }
        if self.archived_at(id).is_some() {
            return Err(EngineError::Internal(format!(
                "changeset {id} is finished and compacted; its state cannot change"
            )));
        }
        let mut next = current;
        change(&mut next);
        self.persist(&next)?;
        self.records
            .lock()
            .expect("journal lock")
            .insert(id.to_string(), slim(next.clone()));
        self.note_final(&next);
        drop(_serial);
        self.maybe_compact();
        Ok(Ok(next))
    }

    /// As `transition`, for the writer's own bookkeeping when the disk may be full: when the
    /// new state cannot be stored, it is kept in memory only (the stored state stays what it
    /// was, which a restart of the service handles). Whether the state allowed the change.
    pub fn transition_best_effort(
        &self,
        id: &str,
        allowed: impl FnOnce(&Record) -> bool,
        change: impl FnOnce(&mut Record),
    ) -> bool {
        let _serial = self.transitions.lock().expect("journal lock");
        let current = match self.get_full(id) {
            Ok(Some(r)) => r,
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(changeset = %id, error = %e, "reading a changeset's state failed");
                match self.get(id) {
                    Some(r) => r,
                    None => return false,
                }
            }
        };
        if !allowed(&current) {
            return false;
        }
        if self.archived_at(id).is_some() {
            return false;
        }
        let mut next = current;
        change(&mut next);
        match self.persist(&next) {
            // only what is stored may be compacted
            Ok(()) => self.note_final(&next),
            Err(e) => {
                tracing::warn!(changeset = %id, error = %e, "the new state is kept in memory only")
            }
        }
        self.records
            .lock()
            .expect("journal lock")
            .insert(id.to_string(), slim(next));
        drop(_serial);
        self.maybe_compact();
        true
    }

    /// Highest start sequence number handed out so far.
    pub fn last_start_seq(&self) -> u64 {
        self.records
            .lock()
            .expect("journal lock")
            .values()
            .filter_map(|r| r.start_seq)
            .max()
            .unwrap_or(0)
            .max(self.max_start_seq)
    }

    /// Files in the journal directory (loose files and segments).
    pub fn file_count(&self) -> usize {
        fs::read_dir(&self.dir).map_or(0, |d| d.count())
    }
}

/// Read every segment of `dir` into `records` (slim); the archive's index.
fn read_archive(dir: &Path, records: &mut BTreeMap<String, Record>) -> Result<Archive> {
    let mut archive = Archive::default();
    let mut numbers = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| EngineError::io(dir, e))? {
        let entry = entry.map_err(|e| EngineError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if let Some(n) = name
            .strip_prefix(SEGMENT_PREFIX)
            .and_then(|r| r.strip_suffix(SEGMENT_SUFFIX))
            .and_then(|n| n.parse::<u64>().ok())
        {
            numbers.push(n);
        }
    }
    numbers.sort_unstable();
    for n in numbers {
        let path = dir.join(segment_name(n));
        let bytes = fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
        let mut segment = Segment {
            bytes: bytes.len() as u64,
            ..Segment::default()
        };
        let mut offset = 0usize;
        while offset < bytes.len() {
            let end = bytes[offset..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|p| offset + p);
            let Some(end) = end else {
                tracing::warn!(segment = %path.display(), offset, "skipping a torn last line");
                break;
            };
            let line = &bytes[offset..end];
            match serde_json::from_slice::<ArchivedRecord>(line) {
                Ok(ArchivedRecord { record }) => {
                    let id = record.id.clone();
                    segment.newest_received_ms = segment.newest_received_ms.max(record.received_ms);
                    if !archive.locations.contains_key(&id) {
                        segment.ids.push(id.clone());
                    }
                    archive.locations.insert(
                        id.clone(),
                        Location {
                            segment: n,
                            offset: offset as u64,
                            len: line.len() as u64,
                        },
                    );
                    records.insert(id, slim(record));
                }
                Err(e) if !line.is_empty() => {
                    tracing::warn!(segment = %path.display(), offset, error = %e, "skipping a damaged line");
                }
                Err(_) => {}
            }
            offset = end + 1;
        }
        archive.segments.insert(n, segment);
    }
    Ok(archive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changeset::validate::ObjectResult;

    fn changeset() -> Changeset {
        serde_json::from_str(r#"{"effektDato":"2026-11-01","datakatalogversjon":"2.38"}"#).unwrap()
    }

    #[test]
    fn large_results_of_finished_changesets_live_on_disk_and_survive_reopening() {
        let tmp = tempfile::tempdir().unwrap();
        let j = Journal::open(tmp.path()).unwrap();
        let r = j
            .register(
                changeset(),
                Record::new("a".into(), "kari".into(), None, 150),
            )
            .unwrap();
        assert_eq!(j.get(&r.id).unwrap().progress, Progress::NotStarted);
        let outcome = Outcome {
            objects: (0..150)
                .map(|i| ObjectResult {
                    temp_id: Some(i.to_string()),
                    nvdb_id: Some(1000 + i),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        // a refused transition changes nothing
        let refused = j
            .transition("a", |r| r.progress == Progress::Waiting, |_| {})
            .unwrap();
        assert!(matches!(refused, Err(Some(_))));
        j.transition(
            "a",
            |r| r.progress == Progress::NotStarted,
            |r| {
                r.progress = Progress::DoneAndVisible;
                r.outcome = Arc::new(outcome.clone());
            },
        )
        .unwrap()
        .unwrap();
        let slim = j.get("a").unwrap();
        assert!(slim.outcome_elided && slim.outcome.objects.is_empty());
        assert_eq!(*j.get_full("a").unwrap().unwrap().outcome, outcome);
        // interrupted registrations (one file without the other) are dropped at reopening
        std::fs::write(tmp.path().join("b.content.json"), b"{}").unwrap();
        let state = std::fs::read(tmp.path().join("a.state.json")).unwrap();
        std::fs::write(tmp.path().join("c.state.json"), state).unwrap();
        let j = Journal::open(tmp.path()).unwrap();
        assert!(!tmp.path().join("b.content.json").exists());
        assert!(!tmp.path().join("c.state.json").exists());
        assert!(j.get("b").is_none() && j.get("c").is_none());
        assert!(j.get("a").unwrap().outcome_elided);
        assert_eq!(*j.get_full("a").unwrap().unwrap().outcome, outcome);
        assert_eq!(j.content("a").unwrap().id.as_deref(), Some("a"));
    }

    fn finish(j: &Journal, id: &str, progress: Progress) {
        j.transition(
            id,
            |_| true,
            |r| {
                r.progress = progress;
                r.outcome = Arc::new(Outcome {
                    objects: vec![ObjectResult {
                        temp_id: Some(id.into()),
                        nvdb_id: Some(7),
                        ..Default::default()
                    }],
                    ..Default::default()
                });
            },
        )
        .unwrap()
        .unwrap();
    }

    /// What the API shows of every changeset: records with all results, and contents.
    fn shown(j: &Journal) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = j
            .list()
            .iter()
            .map(|r| {
                let full = j.get_full(&r.id).unwrap().unwrap();
                let content = j.content(&r.id).unwrap();
                (
                    serde_json::to_string(&full).unwrap(),
                    serde_json::to_string(&content).unwrap(),
                )
            })
            .collect();
        out.sort();
        out
    }

    fn files(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn compaction_keeps_what_is_shown_and_bounds_the_files() {
        let tmp = tempfile::tempdir().unwrap();
        let policy = Retention {
            compact_after: 10,
            segment_entries: 25,
            ..Retention::default()
        };
        let j = Journal::open_with(tmp.path(), policy).unwrap();
        for i in 0..60 {
            let id = format!("c{i:03}");
            let n = if i % 7 == 0 { 150 } else { 1 }; // some with results kept on disk only
            j.register(changeset(), Record::new(id.clone(), "kari".into(), None, n))
                .unwrap();
            match i % 4 {
                0 => finish(&j, &id, Progress::DoneAndVisible),
                1 => finish(&j, &id, Progress::Rejected),
                2 => finish(&j, &id, Progress::Cancelled),
                _ => {} // stays IKKE_STARTET
            }
        }
        // 15 unfinished (2 files each), segments, fewer than `compact_after` loose finished
        let names = files(tmp.path());
        let loose = names.iter().filter(|n| n.ends_with(".json")).count();
        let segments = names.iter().filter(|n| n.ends_with(".jsonl")).count();
        assert!(loose <= 2 * 15 + 2 * 10, "{names:?}");
        assert!((1..=2).contains(&segments), "{names:?}");
        let before = shown(&j);
        j.compact().unwrap();
        assert_eq!(shown(&j), before, "compaction changes nothing shown");
        assert_eq!(
            files(tmp.path())
                .iter()
                .filter(|n| n.ends_with(".json"))
                .count(),
            2 * 15
        );
        // reopening reads the same from the segments
        drop(j);
        let j = Journal::open_with(tmp.path(), policy).unwrap();
        assert_eq!(shown(&j), before);
        // an unfinished one still changes state, and is compacted once finished
        finish(&j, "c003", Progress::Cancelled);
        j.compact().unwrap();
        assert!(!tmp.path().join("c003.state.json").exists());
        assert_eq!(j.get("c003").unwrap().progress, Progress::Cancelled);
        // a compacted one cannot change any more
        assert!(j.transition("c000", |_| true, |_| {}).is_err());
    }

    #[test]
    fn interrupted_compaction_and_torn_lines_lose_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let policy = Retention {
            compact_after: usize::MAX,
            ..Retention::default()
        };
        let j = Journal::open_with(tmp.path(), policy).unwrap();
        for id in ["a", "b", "c"] {
            j.register(changeset(), Record::new(id.into(), "kari".into(), None, 1))
                .unwrap();
            finish(&j, id, Progress::DoneAndVisible);
        }
        let before = shown(&j);
        // a crash after appending, before removing the loose files: keep the loose copies
        let loose: Vec<(String, Vec<u8>)> = files(tmp.path())
            .into_iter()
            .map(|n| (n.clone(), std::fs::read(tmp.path().join(&n)).unwrap()))
            .collect();
        j.compact().unwrap();
        drop(j);
        for (n, b) in &loose {
            std::fs::write(tmp.path().join(n), b).unwrap();
        }
        // and a torn line at the end of the segment (a crash while appending more)
        let seg = tmp.path().join(segment_name(1));
        let mut f = fs::OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(br#"{"record": {"id": "d", "rec"#).unwrap();
        drop(f);
        let j = Journal::open_with(tmp.path(), policy).unwrap();
        assert_eq!(shown(&j), before, "each changeset once, nothing lost");
        assert_eq!(files(tmp.path()), vec![segment_name(1)]);
        // appending after the torn line starts on a fresh line
        j.register(changeset(), Record::new("e".into(), "kari".into(), None, 1))
            .unwrap();
        finish(&j, "e", Progress::Rejected);
        j.compact().unwrap();
        drop(j);
        let j = Journal::open_with(tmp.path(), policy).unwrap();
        assert_eq!(j.list().len(), 4);
        assert_eq!(j.get("e").unwrap().progress, Progress::Rejected);
        assert_eq!(j.content("e").unwrap().id.as_deref(), Some("e"));
    }

    #[test]
    fn retention_drops_whole_old_segments_only() {
        let tmp = tempfile::tempdir().unwrap();
        let policy = Retention {
            keep_days: 30,
            keep_entries: 20,
            compact_after: usize::MAX,
            segment_entries: 10,
        };
        let j = Journal::open_with(tmp.path(), policy).unwrap();
        let old = chrono::Utc::now().timestamp_millis() - 40 * 86_400_000;
        for i in 0..45 {
            let id = format!("r{i:03}");
            let mut r = Record::new(id.clone(), "kari".into(), None, 1);
            if i < 10 {
                r.received_ms = old + i; // the first segment is past keep_days
            }
            j.register(changeset(), r).unwrap();
            finish(&j, &id, Progress::DoneAndVisible);
        }
        j.register(
            changeset(),
            Record::new("open".into(), "kari".into(), None, 1),
        )
        .unwrap();
        j.compact().unwrap();
        // segments of 10: r000-r009 (expired), r010-r019 (surplus: 25 newer), r020-r029,
        // r030-r039, r040-r044 (open segment)
        let ids: Vec<String> = j.list().into_iter().map(|r| r.id).collect();
        assert!(!ids.contains(&"r000".to_string()) && !ids.contains(&"r019".to_string()));
        assert!(ids.contains(&"r020".to_string()) && ids.contains(&"r044".to_string()));
        assert!(
            ids.contains(&"open".to_string()),
            "unfinished ones are never dropped"
        );
        assert_eq!(ids.len(), 25 + 1);
        assert_eq!(
            files(tmp.path())
                .iter()
                .filter(|n| n.ends_with(".jsonl"))
                .count(),
            3
        );
        assert!(j.last_start_seq() == 0);
    }
}
