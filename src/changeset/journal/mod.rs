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

mod archive;
mod record;
#[cfg(test)]
mod tests;

pub use record::{Progress, Record, RejectionReason, WaitingReason, RESULTS_KEPT_IN_MEMORY};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use super::model::Changeset;
use crate::durable::{write_atomically, write_renamed};
use crate::error::{EngineError, Result};
use archive::{read_archive, Archive};
use record::slim;

/// What `Journal::transition` did.
#[derive(Debug)]
pub enum Transition {
    /// The change was made and stored: the new record.
    Changed(Record),
    /// The record's state did not allow the change: the record as it is.
    Refused(Record),
    /// No changeset has this id.
    NotFound,
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
    /// With a store to publish to (`remote::publisher`): the newest generation in the store.
    /// Retention keeps every changeset whose generation is newer.
    published: Option<Arc<AtomicU64>>,
}

impl Journal {
    /// Open (creating) the journal in `dir`, read every record and compact finished ones
    /// (the default retention).
    pub fn open(dir: impl Into<PathBuf>) -> Result<Journal> {
        Self::open_with(dir, Retention::default())
    }

    /// As `open`, with a retention policy.
    pub fn open_with(dir: impl Into<PathBuf>, retention: Retention) -> Result<Journal> {
        Self::open_holding(dir, retention, None)
    }

    /// As `open_with`, keeping each changeset until `published` (the newest generation in the
    /// store, when there is one) reaches its generation.
    pub fn open_holding(
        dir: impl Into<PathBuf>,
        retention: Retention,
        published: Option<Arc<AtomicU64>>,
    ) -> Result<Journal> {
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
            published,
        };
        journal.compact()?;
        Ok(journal)
    }

    /// The retention this journal applies.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// The newest generation in the store it publishes to, when it has one (retention keeps
    /// every changeset whose generation is newer).
    pub fn published_watermark(&self) -> Option<u64> {
        self.published
            .as_ref()
            .map(|p| p.load(std::sync::atomic::Ordering::Acquire))
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

    /// How many changesets the journal holds in each state (every state, zeros included).
    pub fn count_by_progress(&self) -> Vec<(Progress, usize)> {
        let mut counts: Vec<(Progress, usize)> = Progress::ALL.iter().map(|&p| (p, 0)).collect();
        for r in self.records.lock().expect("journal lock").values() {
            if let Some(c) = counts.iter_mut().find(|(p, _)| *p == r.progress) {
                c.1 += 1;
            }
        }
        counts
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
    /// returning. `Changed` carries the new record; `Refused` the record whose state did not
    /// allow the change; `NotFound` when there is no such changeset. Err only when reading or
    /// storing the state failed (or the changeset is compacted, and so final).
    pub fn transition(
        &self,
        id: &str,
        allowed: impl FnOnce(&Record) -> bool,
        change: impl FnOnce(&mut Record),
    ) -> Result<Transition> {
        let _serial = self.transitions.lock().expect("journal lock");
        let Some(current) = self.get_full(id)? else {
            return Ok(Transition::NotFound);
        };
        if !allowed(&current) {
            return Ok(Transition::Refused(current));
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
        Ok(Transition::Changed(next))
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
