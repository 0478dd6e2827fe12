//! Handing a generation to the process that owns a data directory (a running server), through
//! a file inbox inside the directory:
//!
//! ```text
//! <data>/incoming/h-<nanos>-<pid>/PRODUCER   flocked by the producer while it lives
//! <data>/incoming/h-<nanos>-<pid>/ACK        owner: "I hold my writer; CURRENT is <base>"
//! <data>/incoming/h-<nanos>-<pid>/gen/       the producer's build (files + MANIFEST.json)
//! <data>/incoming/h-<nanos>-<pid>/READY      producer: the build is complete and fsynced
//! <data>/incoming/h-<nanos>-<pid>/RESULT     owner: "generation <id>" or "error <reason>"
//! ```
//! The producer (`generate`, `import`, `refresh` against an owned directory) announces itself
//! (the request directory appears by rename, its lock already held), waits for ACK, builds in
//! `gen/`, writes READY and waits for RESULT. The owner's writer takes requests one at a time
//! between batches of changesets: it acknowledges, applies no changeset until the build is
//! READY (or its producer is gone), then installs it as the next generation (parent: its
//! CURRENT), serves it and answers. So a hand-off is published in sequence with changesets, a
//! refresh builds on a base that does not move under it, and changesets started meanwhile are
//! validated against the new generation. A producer that dies leaves a request whose lock is
//! free: the owner removes it. An owner that ends while a producer waits leaves the directory
//! unowned: the producer takes the lock and publishes itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::durable::{fsync_dir, write_durably};
use crate::error::{EngineError, Result};

/// Why the writer refused a handed-off generation (written to the producer as text).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the generation was not ready within {seconds} s; changesets went on")]
    NotReady { seconds: u64 },
    #[error("it was built on generation {built_on} but {served} is served")]
    WrongBase { built_on: u64, served: u64 },
    #[error("the generation does not load: {0}")]
    DoesNotLoad(EngineError),
    /// Its manifest cannot be read or it cannot be installed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

pub const INCOMING_DIR: &str = "incoming";
const REQUEST_PREFIX: &str = "h-";
const PRODUCER_LOCK: &str = "PRODUCER";
const ACK_FILE: &str = "ACK";
pub const BUILD_DIR: &str = "gen";
const READY_FILE: &str = "READY";
const RESULT_FILE: &str = "RESULT";
/// How often both sides look at the inbox while a hand-off is under way.
pub const POLL: Duration = Duration::from_millis(20);
/// Longest a producer waits for the owner to acknowledge (its writer finishes the batch in
/// hand first); past it the producer gives up with an error naming the owner.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(600);

/// A `.new-` inbox entry younger than this is a producer still announcing itself (a died one
/// is removed once it is older).
pub const NEW_ENTRY_GRACE: Duration = Duration::from_secs(60);
/// Longest the owner's writer waits, acknowledged, for a live producer's build; past it the
/// request is refused and changesets go on.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(3600);

/// The producer's side of one hand-off (the request directory and its held lock).
#[derive(Debug)]
pub struct Ticket {
    pub dir: PathBuf,
    _lock: fs::File,
    /// The owner's CURRENT when it acknowledged (None before, or when it had none).
    pub base: Option<u64>,
}

/// What the producer learned while waiting.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// ACK, with the owner's CURRENT then.
    Acknowledged(Option<u64>),
    /// RESULT: published as this generation.
    Published(u64),
    /// RESULT: refused, with the owner's reason.
    Refused(String),
}

fn incoming(root: &Path) -> PathBuf {
    root.join(INCOMING_DIR)
}

impl Ticket {
    /// Announce a hand-off in `root`'s inbox.
    pub fn announce(root: &Path) -> Result<Ticket> {
        let inbox = incoming(root);
        fs::create_dir_all(&inbox).map_err(|e| EngineError::io(&inbox, e))?;
        let nanos = chrono::Utc::now()
            .timestamp_nanos_opt()
            .unwrap_or_default()
            .max(0);
        let name = format!("{REQUEST_PREFIX}{nanos:020}-{}", std::process::id());
        let new = inbox.join(format!(".new-{name}"));
        fs::create_dir_all(&new).map_err(|e| EngineError::io(&new, e))?;
        let lock_path = new.join(PRODUCER_LOCK);
        let lock = fs::File::create(&lock_path).map_err(|e| EngineError::io(&lock_path, e))?;
        lock.lock().map_err(|e| EngineError::io(&lock_path, e))?;
        let dir = inbox.join(&name);
        fs::rename(&new, &dir).map_err(|e| EngineError::io(&dir, e))?;
        Ok(Ticket {
            dir,
            _lock: lock,
            base: None,
        })
    }

    pub fn build_dir(&self) -> PathBuf {
        self.dir.join(BUILD_DIR)
    }

    /// The owner's answer so far (None: nothing yet).
    pub fn answer(&self) -> Result<Option<Answer>> {
        if let Some(text) = read_opt(&self.dir.join(RESULT_FILE))? {
            let text = text.trim();
            if let Some(id) = text.strip_prefix("generation ") {
                let id = id.parse().map_err(|_| {
                    EngineError::corrupt(&self.dir, format!("hand-off result '{text}'"))
                })?;
                return Ok(Some(Answer::Published(id)));
            }
            let reason = text.strip_prefix("error ").unwrap_or(text);
            return Ok(Some(Answer::Refused(reason.to_string())));
        }
        if let Some(text) = read_opt(&self.dir.join(ACK_FILE))? {
            let base = text.trim().parse().ok();
            return Ok(Some(Answer::Acknowledged(base)));
        }
        Ok(None)
    }

    /// The build in `build_dir()` is complete (every file and its MANIFEST.json fsynced).
    pub fn mark_ready(&self) -> Result<()> {
        fsync_dir(&self.build_dir())?;
        write_durably(&self.dir.join(READY_FILE), b"ready\n")?;
        fsync_dir(&self.dir)
    }

    /// Withdraw the request (after the answer, or when the producer publishes itself).
    pub fn withdraw(self) -> Result<()> {
        let dir = self.dir.clone();
        fs::remove_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        drop(self);
        Ok(())
    }
}

fn read_opt(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EngineError::io(path, e)),
    }
}

/// The owner's view of one request.
#[derive(Debug, Clone)]
pub struct Request {
    pub dir: PathBuf,
}

impl Request {
    /// Whether the producer still holds its lock.
    pub fn producer_alive(&self) -> bool {
        let path = self.dir.join(PRODUCER_LOCK);
        let Ok(file) = fs::File::open(&path) else {
            return false;
        };
        matches!(file.try_lock(), Err(fs::TryLockError::WouldBlock))
    }

    /// Whether the entry was last modified longer than `age` ago (unknown: yes).
    fn older_than(&self, age: Duration) -> bool {
        fs::metadata(&self.dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|e| e > age)
    }

    pub fn is_ready(&self) -> bool {
        self.dir.join(READY_FILE).exists()
    }

    fn is_answered(&self) -> bool {
        self.dir.join(RESULT_FILE).exists()
    }

    pub fn build_dir(&self) -> PathBuf {
        self.dir.join(BUILD_DIR)
    }

    /// Tell the producer its build may begin on `base` (the writer now waits for it).
    pub fn acknowledge(&self, base: Option<u64>) -> Result<()> {
        let text = base.map_or_else(|| "none".to_string(), |b| b.to_string());
        write_durably(&self.dir.join(ACK_FILE), format!("{text}\n").as_bytes())
    }

    /// Answer the producer: published as `id`, or refused with a reason.
    pub fn answer(&self, result: std::result::Result<u64, Refusal>) -> Result<()> {
        let text = match result {
            Ok(id) => format!("generation {id}\n"),
            Err(reason) => format!("error {}\n", reason.to_string().replace('\n', " ")),
        };
        write_durably(&self.dir.join(RESULT_FILE), text.as_bytes())
    }

    /// Remove the request (its producer is gone).
    pub fn remove(&self) -> Result<()> {
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(EngineError::io(&self.dir, e)),
        }
    }

    /// Wait (the writer holds meanwhile) until the build is ready; false when the producer
    /// went away or took longer than `BUILD_TIMEOUT` without finishing.
    pub fn wait_ready(&self, timeout: Duration) -> WaitOutcome {
        let started = std::time::Instant::now();
        loop {
            if self.is_ready() {
                return WaitOutcome::Ready;
            }
            if !self.producer_alive() {
                return if self.is_ready() {
                    WaitOutcome::Ready
                } else {
                    WaitOutcome::ProducerGone
                };
            }
            if started.elapsed() > timeout {
                return WaitOutcome::TimedOut;
            }
            std::thread::sleep(POLL);
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    Ready,
    ProducerGone,
    TimedOut,
}

/// The first request waiting for the owner, oldest first. Requests whose producer is gone
/// (answered, or abandoned mid-build) are removed on the way, as are announcements that never
/// became requests.
pub fn next_request(root: &Path) -> Result<Option<Request>> {
    let inbox = incoming(root);
    let entries = match fs::read_dir(&inbox) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EngineError::io(&inbox, e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    for name in names {
        let r = Request {
            dir: inbox.join(&name),
        };
        if name.starts_with(".new-") {
            // the lock is taken before the rename: a free one is a producer that died there —
            // unless it is young: between its `mkdir` and its lock a live producer's entry has
            // no lock yet, and removing it then races the producer's rename
            if !r.producer_alive() && r.older_than(NEW_ENTRY_GRACE) {
                r.remove()?;
            }
            continue;
        }
        if !name.starts_with(REQUEST_PREFIX) {
            continue;
        }
        if !r.producer_alive() {
            if !r.is_answered() {
                tracing::warn!(request = %r.dir.display(), "a hand-off was abandoned by its producer; removed");
            }
            r.remove()?;
            continue;
        }
        if r.is_answered() {
            continue; // the producer has yet to collect its answer
        }
        return Ok(Some(r));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_go_in_order_and_a_dead_producers_request_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(next_request(tmp.path()).unwrap().is_none(), "no inbox yet");
        let first = Ticket::announce(tmp.path()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let second = Ticket::announce(tmp.path()).unwrap();
        let r = next_request(tmp.path()).unwrap().unwrap();
        assert_eq!(r.dir, first.dir, "oldest first");
        assert!(r.producer_alive());
        assert_eq!(first.answer().unwrap(), None);
        r.acknowledge(Some(7)).unwrap();
        assert_eq!(first.answer().unwrap(), Some(Answer::Acknowledged(Some(7))));
        assert!(!r.is_ready());
        std::fs::create_dir_all(first.build_dir()).unwrap();
        first.mark_ready().unwrap();
        assert_eq!(r.wait_ready(Duration::from_secs(5)), WaitOutcome::Ready);
        r.answer(Err(EngineError::NotFound("no\nway".into()).into()))
            .unwrap();
        assert_eq!(
            first.answer().unwrap(),
            Some(Answer::Refused("no way".into()))
        );
        // answered: the owner moves on to the next while the producer collects its answer
        assert_eq!(next_request(tmp.path()).unwrap().unwrap().dir, second.dir);
        first.withdraw().unwrap();
        // a producer killed mid-build: its lock goes, its directory stays; the owner's wait
        // ends and the next look removes it
        let dir = second.dir.clone();
        let r = next_request(tmp.path()).unwrap().unwrap();
        drop(second);
        assert_eq!(
            r.wait_ready(Duration::from_secs(5)),
            WaitOutcome::ProducerGone
        );
        assert!(dir.exists());
        assert!(next_request(tmp.path()).unwrap().is_none());
        assert!(!dir.exists());
        assert_eq!(
            std::fs::read_dir(tmp.path().join(INCOMING_DIR))
                .unwrap()
                .count(),
            0
        );
    }
}
