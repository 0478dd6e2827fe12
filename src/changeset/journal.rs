//! The changeset journal: every registered changeset on disk, durable before the client hears
//! about it.
//!
//! ```text
//! <data>/changesets/<uuid>.content.json   the changeset as registered (written once)
//! <data>/changesets/<uuid>.state.json     progress, owner, result (replaced atomically)
//! ```
//! Both are written to a temp file, fsynced and renamed into place; one fsync of the directory
//! after the state file makes the registration durable, and only then does the client get its
//! 201. One file without the other is an interrupted registration (never acknowledged) and is
//! removed at startup.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::model::Changeset;
use super::validate::{Outcome, Rights};
use crate::durable::{write_atomically, write_renamed};
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

pub struct Journal {
    dir: PathBuf,
    /// Held only for in-memory reads and inserts, never across disk writes, so readers of
    /// progress never wait for an fsync.
    records: Mutex<BTreeMap<String, Record>>,
    /// Serialises state changes (held across their fsync).
    transitions: Mutex<()>,
}

impl Journal {
    /// Open (creating) the journal in `dir` and read every record.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Journal> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        let mut records = BTreeMap::new();
        let mut contents = Vec::new();
        let mut states = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| EngineError::io(&dir, e))? {
            let entry = entry.map_err(|e| EngineError::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            let path = entry.path();
            if name.starts_with('.') && name.ends_with(".tmp") {
                fs::remove_file(&path).map_err(|e| EngineError::io(&path, e))?;
            } else if let Some(id) = name.strip_suffix(".state.json") {
                let text = fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
                let r: Record = serde_json::from_slice(&text)
                    .map_err(|e| EngineError::corrupt(&path, e.to_string()))?;
                records.insert(id.to_string(), slim(r));
                states.push((id.to_string(), path));
            } else if let Some(id) = name.strip_suffix(".content.json") {
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
        Ok(Journal {
            dir,
            records: Mutex::new(records),
            transitions: Mutex::new(()),
        })
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
        write_renamed(&self.content_path(&record.id), &bytes)?;
        self.persist(&record)?;
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
                let bytes = fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| EngineError::corrupt(&path, e.to_string()))
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
        let bytes = fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt(&path, e.to_string()))
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
        let mut next = current;
        change(&mut next);
        self.persist(&next)?;
        self.records
            .lock()
            .expect("journal lock")
            .insert(id.to_string(), slim(next.clone()));
        Ok(Ok(next))
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
    }
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
}
