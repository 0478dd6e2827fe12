//! The single writer: one thread takes started changesets in start order, validates and
//! applies them (a batch of those waiting at once) into a working state, writes the touched
//! type partitions into a new generation (sharing the other files with the parent by hard
//! link), publishes it crash-safely and swaps it in. Readers never wait for it.
//!
//! Recovery: a generation records the changesets it applied (manifest `changesets`) and their
//! results (`changesets.json`, inside the generation, so results and data publish atomically).
//! At startup, a started changeset found in the current generation is finished from that file;
//! any other started one is queued again in start order. Nothing registered is ever dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::apply::apply;
use super::journal::{Journal, Progress, Record};
use super::model::Changeset;
use super::validate::{validate, Context, Issue, Outcome, Rights};
use super::working::Working;
use crate::error::{EngineError, Result};
use crate::snapshot::generation::{Generation, GenerationStore};
use crate::snapshot::manifest::{FileEntry, Manifest};
use crate::snapshot::parquet_write::{
    chunk_file, hex, write_deleted, write_objects_at, CHUNK_ROWS, DELETED_FILE,
};
use crate::snapshot::store::{fail_point, DataDir};

/// Results of the changesets a generation applied (inside the generation directory).
pub const RESULTS_FILE: &str = "changesets.json";
/// Most changesets (and objects) one generation takes from the queue.
pub const MAX_BATCH_CHANGESETS: usize = 64;
pub const MAX_BATCH_OBJECTS: usize = 200_000;
/// Threads of the writer's own rayon pool.
pub const WRITER_THREADS: usize = 1;
/// Generations kept on disk besides the current one.
pub const KEEP_OLD_GENERATIONS: usize = 1;
/// A batch that could not be published because the disk was full is tried again by itself
/// this many times, after 1, 2, 4, … seconds (at most `MAX_RETRY_DELAY_S` apart; about 15
/// minutes in all); after that it waits for `restart`.
pub const MAX_AUTO_RETRIES: u32 = 20;
pub const MAX_RETRY_DELAY_S: u64 = 60;
/// `kode` of the warning a changeset waiting for disk space carries in `resultat.advarsel`.
pub const STORAGE_FULL_CODE: &str = "LAGRINGSPLASS_FULL";

/// A changeset waiting to be tried again by itself (disk full).
#[derive(Debug, Clone, Copy)]
struct Retry {
    /// Epoch ms of the next attempt; None while that attempt is under way.
    due_ms: Option<i64>,
    attempt: u32,
}

/// Seconds before automatic attempt `attempt` (1-based).
fn retry_delay_s(attempt: u32) -> u64 {
    (1u64 << attempt.saturating_sub(1).min(16)).min(MAX_RETRY_DELAY_S)
}

/// Why a state change was refused.
#[derive(Debug)]
pub enum StateError {
    NotFound,
    /// The changeset is in a state that does not allow it.
    Conflict(Progress),
    Engine(EngineError),
}

impl From<EngineError> for StateError {
    fn from(e: EngineError) -> Self {
        StateError::Engine(e)
    }
}

/// The rights a user has now, by user name (None: no such user any more). The writer asks it
/// when it processes a changeset, so rights narrowed after registration apply.
pub type RightsSource = Arc<dyn Fn(&str) -> Option<Rights> + Send + Sync>;

/// Why a batch could not be processed.
enum BatchError {
    /// This changeset failed for a reason of its own; the batch goes on without it.
    One(String, EngineError),
    /// Materialising the batch failed; it cannot be pinned on one changeset yet.
    Materialise(EngineError),
    /// Writing or publishing the batch's generation failed: the whole batch waits.
    All(EngineError),
}

/// Handle for the API: queue changesets, follow them.
pub struct Writer {
    pub journal: Arc<Journal>,
    pub store: Arc<GenerationStore>,
    pub data: DataDir,
    pub binaries: Arc<super::binary::BinaryStore>,
    queue: Mutex<Sender<String>>,
    next_seq: Mutex<u64>,
    chunk_rows: usize,
    /// Make the next publish fail with an I/O-like error (tests of VENTER and restart).
    fail_next_publish: std::sync::atomic::AtomicBool,
    /// Current rights of a changeset's owner; without it (library use) the rights recorded at
    /// registration apply.
    owner_rights: Option<RightsSource>,
}

impl Writer {
    /// Open the journal, recover interrupted work and start the writer thread.
    pub fn start(data: DataDir, store: Arc<GenerationStore>) -> Result<Arc<Writer>> {
        Self::start_with(data, store, CHUNK_ROWS)
    }

    /// As `start`, writing chunk files of `chunk_rows` rows (tests use small chunks).
    pub fn start_with(
        data: DataDir,
        store: Arc<GenerationStore>,
        chunk_rows: usize,
    ) -> Result<Arc<Writer>> {
        Self::start_full(data, store, chunk_rows, None)
    }

    /// As `start`, checking each changeset against its owner's rights as `rights` gives them
    /// when it is processed (the server passes the users file).
    pub fn start_with_rights(
        data: DataDir,
        store: Arc<GenerationStore>,
        rights: RightsSource,
    ) -> Result<Arc<Writer>> {
        Self::start_full(data, store, CHUNK_ROWS, Some(rights))
    }

    fn start_full(
        data: DataDir,
        store: Arc<GenerationStore>,
        chunk_rows: usize,
        owner_rights: Option<RightsSource>,
    ) -> Result<Arc<Writer>> {
        let journal = Arc::new(Journal::open(data.root.join("changesets"))?);
        let binaries = Arc::new(super::binary::BinaryStore::open(data.root.join("binaer"))?);
        let (tx, rx) = mpsc::channel();
        let writer = Arc::new(Writer {
            next_seq: Mutex::new(journal.last_start_seq() + 1),
            journal,
            store,
            data,
            binaries,
            queue: Mutex::new(tx),
            chunk_rows: chunk_rows.max(1),
            fail_next_publish: std::sync::atomic::AtomicBool::new(false),
            owner_rights,
        });
        writer.recover()?;
        let w = writer.clone();
        std::thread::Builder::new()
            .name("vegdb-writer".into())
            .spawn(move || w.run(rx))
            .map_err(|e| EngineError::Internal(format!("starting the writer thread: {e}")))?;
        Ok(writer)
    }

    fn recover(&self) -> Result<()> {
        let g = self.store.current();
        let results = read_results(&g)?;
        let mut pending: Vec<Record> = self
            .journal
            .list()
            .into_iter()
            .filter(|r| r.progress == Progress::Processing)
            .collect();
        pending.sort_by_key(|r| r.start_seq);
        for r in pending {
            if let Some(outcome) = results.get(&r.id) {
                tracing::info!(changeset = %r.id, generation = g.id, "finishing a changeset published before a restart");
                let outcome = outcome.clone();
                let _ = self.journal.transition(
                    &r.id,
                    |_| true,
                    |rec| {
                        rec.progress = Progress::DoneAndVisible;
                        rec.generation = Some(g.id);
                        rec.outcome = Arc::new(outcome);
                    },
                )?;
            } else {
                tracing::info!(changeset = %r.id, "re-queueing a started changeset after a restart");
                self.enqueue(&r.id);
            }
        }
        Ok(())
    }

    fn enqueue(&self, id: &str) {
        // the receiver lives as long as the writer thread, which lives as long as the process
        let _ = self.queue.lock().expect("queue lock").send(id.to_string());
    }

    /// `start`: IKKE_STARTET → BEHANDLES, queued.
    pub fn start_changeset(&self, id: &str) -> std::result::Result<Record, StateError> {
        let mut seq = self.next_seq.lock().expect("seq lock");
        let r = self.journal.transition(
            id,
            |r| r.progress == Progress::NotStarted,
            |r| {
                r.progress = Progress::Processing;
                r.start_seq = Some(*seq);
                r.started_ms = Some(chrono::Utc::now().timestamp_millis());
            },
        )?;
        let r = settle(r)?;
        *seq += 1;
        drop(seq);
        self.enqueue(id);
        Ok(r)
    }

    /// `kanseller`: only before processing begins.
    pub fn cancel(&self, id: &str) -> std::result::Result<Record, StateError> {
        let r = self.journal.transition(
            id,
            |r| r.progress == Progress::NotStarted,
            |r| r.progress = Progress::Cancelled,
        )?;
        settle(r)
    }

    /// `restart`: VENTER → BEHANDLES, queued again.
    pub fn restart(&self, id: &str) -> std::result::Result<Record, StateError> {
        let r = self.journal.transition(
            id,
            |r| r.progress == Progress::Waiting,
            |r| {
                r.progress = Progress::Processing;
                r.waiting_reason = None;
            },
        )?;
        let r = settle(r)?;
        self.enqueue(id);
        Ok(r)
    }

    /// Let the next publish fail as a full disk would (for tests of VENTER and restart).
    pub fn fail_next_publish(&self) {
        self.fail_next_publish
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Validate without registering (the validator endpoint).
    pub fn validate_now(&self, c: &Changeset, ctx: &Context) -> Outcome {
        let g = self.store.current();
        let mut work = Working::new(&g);
        validate(&mut work, c, ctx).0
    }

    fn run(self: Arc<Self>, rx: Receiver<String>) {
        // The writer's parallel work runs on its own pool of `WRITER_THREADS`, so publishing
        // never takes every core from the readers.
        lower_priority();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(WRITER_THREADS)
            .thread_name(|i| format!("vegdb-writer-{i}"))
            .start_handler(|_| lower_priority())
            .build();
        let pool = match pool {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "the writer pool could not start; writes wait");
                return;
            }
        };
        // Replaced generations are dropped here, once no reader holds them, so freeing a large
        // table never lands on a request's thread.
        let mut retired: Vec<Arc<Generation>> = Vec::new();
        // changesets registered with X-NVDB-Delay, held back until (epoch ms, id)
        let mut delayed: Vec<(i64, String)> = Vec::new();
        // started changesets left over when a batch reached its size, first in line next time
        let mut carry: Vec<String> = Vec::new();
        // changesets that failed for lack of disk space, tried again by themselves
        let mut retries: BTreeMap<String, Retry> = BTreeMap::new();
        loop {
            retired.retain(|g| Arc::strong_count(g) > 1);
            let now = chrono::Utc::now().timestamp_millis();
            self.resume_due(&mut retries, now);
            let mut ids: Vec<String> = std::mem::take(&mut carry);
            delayed.retain(|(due, id)| {
                let ready = *due <= now;
                if ready {
                    ids.push(id.clone());
                }
                !ready
            });
            if ids.is_empty() {
                match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                    Ok(id) => ids.push(id),
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
            while ids.len() < MAX_BATCH_CHANGESETS {
                match rx.try_recv() {
                    Ok(id) => ids.push(id),
                    Err(_) => break,
                }
            }
            ids.retain(|id| match self.journal.get(id) {
                Some(r) if r.delay_s > 0 => {
                    let due = r.started_ms.unwrap_or(now) + r.delay_s as i64 * 1000;
                    if due > now {
                        delayed.push((due, id.clone()));
                        return false;
                    }
                    true
                }
                _ => true,
            });
            // a batch is a prefix in start order, up to MAX_BATCH_OBJECTS objects
            let mut batch_objects = 0usize;
            let mut cut = ids.len();
            for (i, id) in ids.iter().enumerate() {
                let n = self.journal.get(id).map_or(0, |r| r.objects);
                if i > 0 && batch_objects + n > MAX_BATCH_OBJECTS {
                    cut = i;
                    break;
                }
                batch_objects += n;
            }
            carry = ids.split_off(cut);
            if ids.is_empty() {
                continue;
            }
            retired.push(self.store.current());
            // a bug must not take the writer down with changesets stuck in BEHANDLES
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| self.process(&ids))
            }))
            .unwrap_or_else(|_| {
                Err(EngineError::Internal(
                    "the writer panicked while processing".into(),
                ))
            });
            if let Err(e) = result {
                self.failed(&ids, &e, &mut retries);
            }
        }
    }

    /// A batch could not be processed: its changesets wait (VENTER, SYSTEMFEIL). When the disk
    /// was full they are tried again by themselves with backoff (said in `resultat.advarsel`);
    /// other failures wait for `restart`. The half-built generation is removed at once to give
    /// its space back.
    fn failed(&self, ids: &[String], e: &EngineError, retries: &mut BTreeMap<String, Retry>) {
        let full = crate::durable::is_storage_full(e);
        if let Err(e) = self.data.discard_staging() {
            tracing::warn!(error = %e, "removing the half-built generation failed");
        }
        let now = chrono::Utc::now().timestamp_millis();
        for id in ids {
            let attempt = retries.get(id).map_or(0, |r| r.attempt) + 1;
            let warning = if !full {
                None
            } else if attempt <= MAX_AUTO_RETRIES {
                let delay = retry_delay_s(attempt);
                retries.insert(
                    id.clone(),
                    Retry {
                        due_ms: Some(now + delay as i64 * 1000),
                        attempt,
                    },
                );
                Some(format!(
                    "Lagringsplassen er full: endringssettet prøves igjen automatisk om {delay} s (automatisk forsøk {attempt} av {MAX_AUTO_RETRIES})"
                ))
            } else {
                retries.remove(id);
                Some(format!(
                    "Lagringsplassen er full: ingen flere automatiske forsøk etter {MAX_AUTO_RETRIES}; start det igjen med restart når det er plass"
                ))
            };
            // the wait must show even when the disk is too full to store it (the journal then
            // still says BEHANDLES, which a restart of the service queues again)
            let changed = self.journal.transition_best_effort(
                id,
                |r| r.progress == Progress::Processing,
                |r| {
                    r.progress = Progress::Waiting;
                    r.waiting_reason = Some("SYSTEMFEIL".into());
                    if let Some(message) = &warning {
                        let mut outcome = (*r.outcome).clone();
                        outcome.warnings.retain(|w| w.code != STORAGE_FULL_CODE);
                        outcome.warnings.push(super::validate::Issue {
                            code: STORAGE_FULL_CODE.into(),
                            message: message.clone(),
                            reference: String::new(),
                            property_type_id: None,
                        });
                        r.outcome = Arc::new(outcome);
                    }
                },
            );
            if !changed {
                retries.remove(id);
            }
        }
        if full {
            tracing::warn!(error = %e, changesets = ids.len(), "no space left while processing changesets; they are tried again by themselves");
        } else {
            tracing::error!(error = %e, "processing changesets failed; they wait for restart");
        }
    }

    /// Queue again the changesets whose automatic retry is due (VENTER → BEHANDLES).
    fn resume_due(&self, retries: &mut BTreeMap<String, Retry>, now: i64) {
        let due: Vec<String> = retries
            .iter()
            .filter(|(_, r)| r.due_ms.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let resumed = self.journal.transition_best_effort(
                &id,
                |r| r.progress == Progress::Waiting,
                |r| {
                    r.progress = Progress::Processing;
                    r.waiting_reason = None;
                },
            );
            if resumed {
                tracing::info!(changeset = %id, "trying a changeset again after a full disk");
                if let Some(r) = retries.get_mut(&id) {
                    r.due_ms = None;
                }
                self.enqueue(&id);
            } else {
                // restarted by hand, cancelled or finished meanwhile
                retries.remove(&id);
            }
        }
        // forget changesets that finished
        retries.retain(|id, _| self.journal.get(id).is_some_and(|r| !r.progress.is_final()));
    }

    /// Process a batch. Each changeset is isolated: when one fails unexpectedly (its content
    /// cannot be read, validating or applying it fails or panics) it alone goes to VENTER
    /// (SYSTEMFEIL) and the batch is processed again without it. Only a failure to write the
    /// batch's generation holds the whole batch back.
    fn process(&self, ids: &[String]) -> Result<()> {
        let mut ids = ids.to_vec();
        loop {
            match self.process_batch(&ids) {
                Ok(()) => return Ok(()),
                Err(BatchError::All(e)) => return Err(e),
                Err(BatchError::One(id, e)) => {
                    tracing::error!(changeset = %id, error = %e, "processing one changeset failed; it waits for restart, the rest of its batch goes on");
                    self.wait_for_restart(&id)?;
                    ids.retain(|i| *i != id);
                    if ids.is_empty() {
                        return Ok(());
                    }
                }
                Err(BatchError::Materialise(e)) if ids.len() > 1 => {
                    tracing::warn!(error = %e, "a batch could not be materialised; its changesets go one by one");
                    for id in &ids {
                        self.process(std::slice::from_ref(id))?;
                    }
                    return Ok(());
                }
                Err(BatchError::Materialise(e)) => {
                    tracing::error!(changeset = %ids[0], error = %e, "materialising a changeset failed; it waits for restart");
                    self.wait_for_restart(&ids[0])?;
                    return Ok(());
                }
            }
        }
    }

    /// One changeset failed for a reason of its own: VENTER (SYSTEMFEIL), restartable.
    fn wait_for_restart(&self, id: &str) -> Result<()> {
        let _ = self.journal.transition(
            id,
            |r| r.progress == Progress::Processing,
            |r| {
                r.progress = Progress::Waiting;
                r.waiting_reason = Some("SYSTEMFEIL".into());
            },
        )?;
        Ok(())
    }

    /// The owner's rights now (the users file), or those recorded at registration.
    fn rights_of(&self, rec: &Record) -> Rights {
        match &self.owner_rights {
            Some(source) => source(&rec.owner).unwrap_or_else(Rights::none),
            None => rec.rights.clone(),
        }
    }

    /// Validate (and, when valid, apply) one changeset into `work`; None when it was finished
    /// without changes (rejected, dry run, not ours to process).
    fn process_one(
        &self,
        id: &str,
        base: &Generation,
        work: &mut Working,
        now: i64,
    ) -> std::result::Result<Option<(Outcome, usize)>, BatchError> {
        let one = |e: EngineError| BatchError::One(id.to_string(), e);
        let Some(rec) = self.journal.get(id) else {
            return Ok(None);
        };
        if rec.progress != Progress::Processing {
            return Ok(None); // queued twice (restart) or already finished
        }
        let content = self.journal.content(id).map_err(one)?;
        let rights = self.rights_of(&rec);
        let binaries = self.binaries.clone();
        let exists = move |r: &str| binaries.exists(r);
        let ctx = Context {
            rights: &rights,
            binary_exists: &exists,
            skip_location: false,
            skip_associations: false,
        };
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || -> Result<(Outcome, Option<Vec<u64>>)> {
                if rec.dry_run {
                    // a dry run sees the batch so far but leaves no trace in it
                    let mut scratch = Working::new(base);
                    let (outcome, plan) = validate(&mut scratch, &content, &ctx);
                    let done = plan.is_some();
                    if let Some(plan) = plan {
                        apply(&mut scratch, &plan, now);
                        scratch.materialise()?;
                    }
                    return Ok((outcome, done.then(Vec::new)));
                }
                let (outcome, plan) = validate(work, &content, &ctx);
                Ok((outcome, plan.map(|plan| apply(work, &plan, now))))
            },
        ))
        .unwrap_or_else(|_| {
            Err(EngineError::Internal(
                "the writer panicked while validating or applying".into(),
            ))
        });
        let (mut outcome, applied) = checked.map_err(one)?;
        if !rights.write {
            outcome.unauthorized = true;
            outcome.errors.push(Issue {
                code: "MANGLER_TILGANG".into(),
                message: format!("Brukeren {} har ikke (lenger) skriverett", rec.owner),
                reference: "endringssett".into(),
                property_type_id: None,
            });
        }
        let finished = |outcome, done| -> std::result::Result<_, BatchError> {
            self.finish(id, outcome, done, None)
                .map_err(BatchError::All)?;
            Ok(None)
        };
        match applied {
            _ if rec.dry_run => {
                let done = applied.is_some() && !outcome.has_errors();
                finished(outcome, done.then_some(Progress::Done))
            }
            None => finished(outcome, None),
            Some(nvdb_ids) => {
                for (o, nvdb_id) in outcome.objects.iter_mut().zip(nvdb_ids) {
                    o.nvdb_id = Some(nvdb_id);
                }
                Ok(Some((outcome, rec.objects)))
            }
        }
    }

    fn process_batch(&self, ids: &[String]) -> std::result::Result<(), BatchError> {
        let started = Instant::now();
        let base = self.store.current();
        let mut work = Working::new(&base);
        let mut applied: Vec<(String, Outcome)> = Vec::new();
        let mut objects = 0usize;
        let now = chrono::Utc::now().timestamp();
        for id in ids {
            if let Some((outcome, n)) = self.process_one(id, &base, &mut work, now)? {
                objects += n;
                applied.push((id.clone(), outcome));
            }
        }
        if applied.is_empty() {
            return Ok(());
        }
        let validated_ms = started.elapsed().as_millis() as u64;
        let materialised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            work.materialise()
                .map(|(tables, deleted)| (work.parents(&tables), tables, deleted))
        }))
        .unwrap_or_else(|_| {
            Err(EngineError::Internal(
                "the writer panicked while materialising".into(),
            ))
        });
        let (parents, tables, deleted) = materialised.map_err(BatchError::Materialise)?;
        let materialised_ms = started.elapsed().as_millis() as u64;
        let new = self
            .publish(&base, tables, deleted, parents, &applied)
            .map_err(BatchError::All)?;
        let generation = new.id;
        self.store.swap(new);
        let visible_ms = started.elapsed().as_millis() as u64;
        fail_point("after-swap");
        for (id, outcome) in applied {
            self.finish(
                &id,
                outcome,
                Some(Progress::DoneAndVisible),
                Some(generation),
            )
            .map_err(BatchError::All)?;
        }
        tracing::info!(
            generation,
            changesets = ids.len(),
            objects,
            validated_ms,
            materialised_ms,
            visible_ms,
            ms = started.elapsed().as_millis() as u64,
            "changesets applied"
        );
        self.collect_garbage();
        Ok(())
    }

    fn finish(
        &self,
        id: &str,
        outcome: Outcome,
        done: Option<Progress>,
        generation: Option<u64>,
    ) -> Result<()> {
        let allowed = |r: &Record| r.progress == Progress::Processing;
        let change = |r: &mut Record| {
            match done {
                Some(p) => r.progress = p,
                None => {
                    r.progress = Progress::Rejected;
                    r.rejected_reason = Some(
                        if outcome.unauthorized {
                            "IKKE_AUTORISERT"
                        } else {
                            "VALIDERINGSFEIL"
                        }
                        .into(),
                    );
                }
            }
            r.generation = generation;
            r.outcome = Arc::new(outcome);
        };
        if generation.is_some() {
            // published: never fail (and so never retry) a visible changeset because its state
            // cannot be stored now; recovery after a restart finishes it from the generation
            self.journal.transition_best_effort(id, allowed, change);
            return Ok(());
        }
        let _ = self.journal.transition(id, allowed, change)?;
        Ok(())
    }

    /// Write the touched partitions into a new generation and publish it.
    fn publish(
        &self,
        base: &Generation,
        tables: BTreeMap<u32, super::working::Merged>,
        deleted: Option<crate::snapshot::columns::DeletedTable>,
        parents: Arc<std::collections::HashMap<u64, (u32, u64)>>,
        applied: &[(String, Outcome)],
    ) -> Result<Generation> {
        use rayon::prelude::*;
        let t0 = Instant::now();
        let id = self.data.next_id()?;
        let mut staging = self.data.begin(id)?;
        // shared: files of untouched types, and the chunks of touched types no edit falls in
        let mut rewrite: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
        let mut chunks: BTreeMap<u32, Vec<&FileEntry>> = BTreeMap::new();
        for entry in &base.manifest.files {
            match entry.type_id {
                Some(t) if tables.contains_key(&t) => chunks.entry(t).or_default().push(entry),
                _ => {
                    let replaced = (entry.path == DELETED_FILE && deleted.is_some())
                        || entry.path == RESULTS_FILE;
                    if !replaced {
                        staging.share_from(&base.dir, entry)?;
                    }
                }
            }
        }
        for (&t, merged) in &tables {
            let mut parts = chunks.remove(&t).unwrap_or_default();
            parts.sort_by_key(|e| e.first_id.unwrap_or(0));
            // a single-file partition (first format) is rewritten as chunks once
            if parts.iter().any(|e| e.first_id.is_none()) {
                parts.clear();
            }
            let table = &merged.table;
            let mut row = 0usize;
            for (i, entry) in parts.iter().enumerate() {
                let lo = entry.first_id.expect("chunked");
                let hi = parts
                    .get(i + 1)
                    .and_then(|e| e.first_id)
                    .unwrap_or(u64::MAX);
                let end = row + table.id[row..].partition_point(|&id| id < hi);
                let first = if i == 0 { 0 } else { lo };
                let start = table.id.partition_point(|&id| id < first).max(row);
                let lo_edit = merged.edited_ids.partition_point(|&id| id < first);
                let touched = merged.edited_ids.get(lo_edit).is_some_and(|&id| id < hi);
                if touched {
                    if end > start {
                        rewrite.push((t, start..end));
                    }
                } else {
                    staging.share_from(&base.dir, entry)?;
                }
                row = end;
            }
            if parts.is_empty() && !table.is_empty() {
                rewrite.push((t, 0..table.len()));
            }
        }
        let dir = staging.dir.clone();
        let written: Vec<Vec<FileEntry>> = rewrite
            .par_iter()
            .map(|(t, rows)| write_chunks(&dir, &tables[t].table, rows.clone(), self.chunk_rows))
            .collect::<Result<_>>()?;
        staging.files.extend(written.into_iter().flatten());
        if let Some(d) = &deleted {
            staging.files.push(write_deleted(&dir, d)?);
        }
        let results: BTreeMap<&str, &Outcome> =
            applied.iter().map(|(id, o)| (id.as_str(), o)).collect();
        let bytes =
            serde_json::to_vec(&results).map_err(|e| EngineError::Internal(e.to_string()))?;
        staging.files.push(write_results(&dir, &bytes)?);
        fail_point("before-publish");
        if self
            .fail_next_publish
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return Err(EngineError::io(
                &dir,
                std::io::Error::other("injected failure: no space left on device"),
            ));
        }
        let manifest = Manifest {
            format_version: base.manifest.format_version,
            generation: id,
            parent: Some(base.id),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            datakatalog_versjon: base.manifest.datakatalog_versjon.clone(),
            origin: format!("{} changeset(s)", applied.len()),
            changesets: applied.iter().map(|(id, _)| id.clone()).collect(),
            last_event_ids: base.manifest.last_event_ids.clone(),
            files: Vec::new(),
        };
        let written_ms = t0.elapsed().as_millis() as u64;
        let final_dir: PathBuf = self.data.publish(staging, manifest)?;
        let published_ms = t0.elapsed().as_millis() as u64;
        let manifest = Manifest::read(&final_dir)?;
        let tables = tables
            .into_iter()
            .map(|(t, m)| (t, (m.table, m.changes)))
            .collect();
        let g = base.derive(final_dir, manifest, tables, deleted, parents);
        tracing::debug!(
            generation = id,
            written_ms,
            published_ms,
            indexed_ms = t0.elapsed().as_millis() as u64,
            "generation published"
        );
        Ok(g)
    }

    fn collect_garbage(&self) {
        let result = (|| -> Result<usize> {
            let mut ids = self.data.generations()?;
            let current = self.data.current()?.unwrap_or(0);
            ids.retain(|&g| g <= current);
            let keep: Vec<u64> = ids
                .iter()
                .rev()
                .take(KEEP_OLD_GENERATIONS + 1)
                .copied()
                .collect();
            self.data.collect_garbage(&keep)
        })();
        if let Err(e) = result {
            tracing::warn!(error = %e, "removing old generations failed");
        }
    }
}

/// A one-thread pool at the writer's priority for other write-side work that must not compete
/// with readers (parsing large changeset bodies, journalling them).
pub fn background_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "vegdb-write-bg".into())
            .start_handler(|_| lower_priority())
            .build()
            .expect("a one-thread pool starts")
    })
}

/// How the writer's threads are scheduled against the readers'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WriterPriority {
    /// Linux SCHED_IDLE: a reader waking up preempts the writer at once and the writer uses
    /// only cores the readers leave idle (under a saturating read load, writes wait).
    #[default]
    Idle,
    /// Niceness 19: readers get most of a contended core, writes still progress.
    Low,
    /// The readers' own priority.
    Normal,
}

static PRIORITY: std::sync::OnceLock<WriterPriority> = std::sync::OnceLock::new();

/// Choose the writer threads' priority (before `Writer::start`; the first call wins). The
/// server sets it from `--writer-priority` (default idle); without a call it is normal.
pub fn set_writer_priority(p: WriterPriority) {
    let _ = PRIORITY.set(p);
}

/// Give the calling thread the writer's scheduling priority.
pub fn lower_priority() {
    use thread_priority::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadPriority, ThreadSchedulePolicy,
    };
    // unset (library use, tests): the readers' own priority
    let (priority, policy) = match PRIORITY.get().copied().unwrap_or(WriterPriority::Normal) {
        WriterPriority::Normal => return,
        #[cfg(target_os = "linux")]
        WriterPriority::Idle => (
            ThreadPriority::Min,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
        ),
        _ => (
            ThreadPriority::Min,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other),
        ),
    };
    if let Err(e) = set_thread_priority_and_policy(thread_native_id(), priority, policy) {
        tracing::warn!(error = ?e, "could not lower the writer's priority");
    }
}

fn settle(
    r: std::result::Result<Record, Option<Record>>,
) -> std::result::Result<Record, StateError> {
    match r {
        Ok(r) => Ok(r),
        Err(None) => Err(StateError::NotFound),
        Err(Some(r)) => Err(StateError::Conflict(r.progress)),
    }
}

/// Write the results file of a staged generation; its manifest entry.
fn write_results(dir: &std::path::Path, bytes: &[u8]) -> Result<FileEntry> {
    use sha2::Digest;
    crate::durable::write_durably(&dir.join(RESULTS_FILE), bytes)?;
    Ok(FileEntry {
        path: RESULTS_FILE.into(),
        rows: 0,
        bytes: bytes.len() as u64,
        sha256: hex(&sha2::Sha256::digest(bytes)),
        type_id: None,
        first_id: None,
    })
}

/// The results file of a generation (empty when it applied no changesets).
pub fn read_results(g: &Generation) -> Result<BTreeMap<String, Outcome>> {
    let path = g.dir.join(RESULTS_FILE);
    if !g.manifest.files.iter().any(|f| f.path == RESULTS_FILE) {
        return Ok(BTreeMap::new());
    }
    let bytes = std::fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt(&path, e.to_string()))
}

/// Write rows `rows` of a table as chunk files: one file, or pieces of `chunk_rows` when the
/// range has grown past twice that.
fn write_chunks(
    dir: &std::path::Path,
    table: &crate::snapshot::columns::ObjectTable,
    rows: std::ops::Range<usize>,
    chunk_rows: usize,
) -> Result<Vec<FileEntry>> {
    let step = if rows.len() > 2 * chunk_rows {
        chunk_rows
    } else {
        rows.len()
    };
    let mut out = Vec::new();
    let mut a = rows.start;
    while a < rows.end {
        let b = (a + step).min(rows.end);
        let part = table.slice(a..b);
        out.push(write_objects_at(
            dir,
            &part,
            &chunk_file(table.type_id, table.id[a]),
        )?);
        a = b;
    }
    Ok(out)
}
