//! The single writer: one thread takes started changesets in start order, validates and
//! applies them (a batch of those waiting at once) into a working state, writes the touched
//! type partitions into a new generation (sharing the other files with the parent by hard
//! link), publishes it crash-safely and swaps it in. Readers never wait for it.
//!
//! Recovery: a generation records the changesets it applied (manifest `changesets`) and their
//! results (`changesets.json`, inside the generation, so results and data publish atomically).
//! At startup, a started changeset found in the current generation is finished from that file;
//! any other started one is queued again in start order. Nothing registered is ever dropped.
//!
//! `mod.rs` is the handle the API uses (queueing, state changes); `run` schedules batches,
//! retries and failures on the writer thread; `process` validates and applies one batch;
//! `publish` writes its generation (the layout is `snapshot::plan`'s) and collects garbage.

mod process;
mod publish;
mod run;

pub use super::adopt::{HandoffStats, ReloadRequest, WatchOptions};
pub use super::journal::Retention;
pub use super::priority::{lower_priority, WriterPriority};
pub use publish::{read_results, RESULTS_FILE};

use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use super::journal::{Journal, Progress, Record, Transition};
use super::model::Changeset;
use super::validate::{validate, Context, Outcome};
use super::working::Working;
use crate::error::{EngineError, Result};
use crate::generation::GenerationStore;
use crate::snapshot::parquet_write::CHUNK_ROWS;
use crate::snapshot::store::DataDir;

/// Most changesets (and objects) one generation takes from the queue.
pub const MAX_BATCH_CHANGESETS: usize = 64;
pub const MAX_BATCH_OBJECTS: usize = 200_000;
/// Threads of the writer's own rayon pool.
pub const WRITER_THREADS: usize = 1;
pub use crate::snapshot::store::KEEP_OLD_GENERATIONS;
/// A batch that could not be published because the disk was full is tried again by itself
/// this many times, after 1, 2, 4, … seconds (at most `MAX_RETRY_DELAY_S` apart; about 15
/// minutes in all); after that it waits for `restart`.
pub const MAX_AUTO_RETRIES: u32 = 20;
pub const MAX_RETRY_DELAY_S: u64 = 60;

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

pub use crate::auth::RightsSource;

/// How one writer works: the server sets these from its command line; the defaults are for
/// library use and tests. Each writer keeps its own (two in one process do not share them).
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Rows per chunk file (tests use small chunks).
    pub chunk_rows: usize,
    /// The OS priority of the writer's threads (`--writer-priority`; default: the readers' own).
    pub priority: WriterPriority,
    /// How long finished changesets stay in the journal.
    pub retention: Retention,
    /// How the writer follows CURRENT moved by hand, between batches.
    pub watch: WatchOptions,
    /// With a store to publish to (`remote::publisher`): the newest generation in the store;
    /// the journal keeps each changeset until its generation is there.
    pub hold_until_published: Option<Arc<AtomicU64>>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            chunk_rows: CHUNK_ROWS,
            priority: WriterPriority::Normal,
            retention: Retention::default(),
            watch: WatchOptions::default(),
            hold_until_published: None,
        }
    }
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
    #[cfg(any(test, feature = "failpoints"))]
    fail_next_publish: std::sync::atomic::AtomicBool,
    /// Current rights of a changeset's owner; without it (library use) the rights recorded at
    /// registration apply.
    owner_rights: Option<RightsSource>,
    /// The writer thread runs (cleared when it ends, also by a panic); `/ready` reads it.
    running: std::sync::atomic::AtomicBool,
    /// Plain counters the metrics registry reads (the writer names no metrics module).
    pub stats: WriterStats,
    /// The store each published generation is uploaded to (`serve --publish-to`).
    publisher: OnceLock<Arc<crate::remote::publisher::Publisher>>,
    /// Generations handed over by producers and adopted between batches (`adopt`).
    pub handoffs: Arc<HandoffStats>,
    priority: WriterPriority,
    watch: WatchOptions,
    /// A one-thread pool at the writer's priority for other write-side work (made on first
    /// use; `background`).
    background: OnceLock<rayon::ThreadPool>,
}

/// What the writer tells the metrics registry: its queue and its publishing times.
#[derive(Default)]
pub struct WriterStats {
    /// Changesets sent to the writer thread and not yet taken by it.
    queued: std::sync::atomic::AtomicUsize,
    /// Seconds each publish took since the last `take_publish_seconds` (at most
    /// `MAX_KEPT_PUBLISH_TIMES`; later ones are dropped until taken).
    publish_seconds: Mutex<Vec<f64>>,
}

const MAX_KEPT_PUBLISH_TIMES: usize = 65_536;

impl WriterStats {
    /// Changesets waiting for the writer thread to take them.
    pub fn queue_len(&self) -> usize {
        self.queued.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// The publish durations (seconds) recorded since the last call.
    pub fn take_publish_seconds(&self) -> Vec<f64> {
        std::mem::take(&mut *self.publish_seconds.lock().expect("stats lock"))
    }
    fn queued(&self) {
        self.queued
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn taken(&self) {
        let _ = self.queued.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |n| Some(n.saturating_sub(1)),
        );
    }
    fn published(&self, seconds: f64) {
        let mut times = self.publish_seconds.lock().expect("stats lock");
        if times.len() < MAX_KEPT_PUBLISH_TIMES {
            times.push(seconds);
        }
    }
}

impl Writer {
    /// Open the journal, recover interrupted work and start the writer thread.
    pub fn start(data: DataDir, store: Arc<GenerationStore>) -> Result<Arc<Writer>> {
        Self::start_with_options(data, store, None, WriterOptions::default())
    }

    /// As `start`, writing chunk files of `chunk_rows` rows (tests use small chunks).
    pub fn start_with(
        data: DataDir,
        store: Arc<GenerationStore>,
        chunk_rows: usize,
    ) -> Result<Arc<Writer>> {
        let options = WriterOptions {
            chunk_rows,
            ..WriterOptions::default()
        };
        Self::start_with_options(data, store, None, options)
    }

    /// As `start`, checking each changeset against its owner's rights as `rights` gives them
    /// when it is processed (the server passes the users file).
    pub fn start_with_rights(
        data: DataDir,
        store: Arc<GenerationStore>,
        rights: RightsSource,
    ) -> Result<Arc<Writer>> {
        Self::start_with_options(data, store, Some(rights), WriterOptions::default())
    }

    /// As `start`, with `owner_rights` (see `start_with_rights`) and `options`.
    pub fn start_with_options(
        data: DataDir,
        store: Arc<GenerationStore>,
        owner_rights: Option<RightsSource>,
        options: WriterOptions,
    ) -> Result<Arc<Writer>> {
        let journal = Arc::new(Journal::open_holding(
            data.root.join("changesets"),
            options.retention,
            options.hold_until_published,
        )?);
        let binaries = Arc::new(super::binary::BinaryStore::open(data.root.join("binaer"))?);
        let (tx, rx) = mpsc::channel();
        let writer = Arc::new(Writer {
            next_seq: Mutex::new(journal.last_start_seq() + 1),
            journal,
            store,
            data,
            binaries,
            queue: Mutex::new(tx),
            chunk_rows: options.chunk_rows.max(1),
            #[cfg(any(test, feature = "failpoints"))]
            fail_next_publish: std::sync::atomic::AtomicBool::new(false),
            owner_rights,
            running: std::sync::atomic::AtomicBool::new(true),
            stats: WriterStats::default(),
            publisher: OnceLock::new(),
            handoffs: Arc::default(),
            priority: options.priority,
            watch: options.watch,
            background: OnceLock::new(),
        });
        writer.recover()?;
        let w = writer.clone();
        std::thread::Builder::new()
            .name("vegdb-writer".into())
            .spawn(move || {
                // cleared however the thread ends (a panic unwinds through it)
                struct Running(Arc<Writer>);
                impl Drop for Running {
                    fn drop(&mut self) {
                        self.0
                            .running
                            .store(false, std::sync::atomic::Ordering::Release);
                    }
                }
                let guard = Running(w.clone());
                w.run(rx);
                drop(guard);
            })
            .map_err(|e| EngineError::Internal(format!("starting the writer thread: {e}")))?;
        Ok(writer)
    }

    /// Run `work` on the writer's low-priority background thread (parsing and journalling
    /// large changesets), so that it never competes with readers for a core.
    pub fn background(&self, work: impl FnOnce() + Send + 'static) -> Result<()> {
        let pool = match self.background.get() {
            Some(pool) => pool,
            None => {
                let pool = super::priority::background_pool(self.priority).map_err(|e| {
                    EngineError::Internal(format!("starting the writer's background thread: {e}"))
                })?;
                // another request may have made one meanwhile: the first one made is kept
                let _ = self.background.set(pool);
                self.background.get().ok_or_else(|| {
                    EngineError::Internal("the writer's background thread is gone".into())
                })?
            }
        };
        pool.spawn(work);
        Ok(())
    }

    /// Release the writer lease of the store it publishes to, if any (a clean stop).
    pub fn release_store_lease(&self) {
        if let Some(p) = self.publisher.get() {
            p.release_lease();
        }
    }

    /// Whether the writer thread still runs (`/ready`).
    pub fn is_running(&self) -> bool {
        self.running.load(std::sync::atomic::Ordering::Acquire)
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
        self.stats.queued();
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

    /// Upload every generation this writer publishes to `publisher`'s store (woken after
    /// each publish; see `remote::publisher`).
    pub fn publish_to(&self, publisher: Arc<crate::remote::publisher::Publisher>) {
        publisher.notify();
        let _ = self.publisher.set(publisher);
    }

    /// Why the writer may not take changesets now: with a store to publish to, it does not
    /// hold the store's writer lease (`remote::lease`). None: it may.
    pub fn store_problem(&self) -> Option<String> {
        self.publisher.get().and_then(|p| p.lease_problem())
    }

    #[cfg(any(test, feature = "failpoints"))]
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
}

/// A transition the API asked for: the new record, or why not.
fn settle(t: Transition) -> std::result::Result<Record, StateError> {
    match t {
        Transition::Changed(r) => Ok(r),
        Transition::NotFound => Err(StateError::NotFound),
        Transition::Refused(r) => Err(StateError::Conflict(r.progress)),
    }
}
