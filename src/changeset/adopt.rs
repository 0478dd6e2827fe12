//! Generations that arrive from outside the writer: hand-offs from `generate`, `import` and
//! `refresh` run against the directory this process owns (the inbox of `snapshot::handoff`),
//! and a CURRENT moved under a server that does not own its directory (`serve --read-only`)
//! or by hand. The owner's writer calls `Adopter::between_batches` between batches of
//! changesets, so adopting is ordered with changesets: a hand-off is acknowledged, the writer
//! applies nothing until its build is ready, then publishes it as the next generation and
//! serves it; changesets started meanwhile are processed afterwards, validated against it
//! (rejected with the validator's reason when they no longer apply). A read-only server runs
//! the same watch on a thread of its own (`watch`).
//!
//! CURRENT is compared with the served generation every `--watch-interval` seconds and on
//! SIGHUP (`ReloadRequest`); a change is loaded completely before it is swapped in (readers
//! see the old generation or the new one, never a mix), and the replaced generation is
//! dropped once its last reader lets go.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{EngineError, Result};
use crate::generation::{Generation, GenerationStore};
use crate::snapshot::handoff::{next_request, Refusal, Request, WaitOutcome, BUILD_TIMEOUT};
use crate::snapshot::store::DataDir;

/// Default seconds between looks at CURRENT (`--watch-interval`; 0: only on SIGHUP).
pub const DEFAULT_WATCH_INTERVAL_S: u64 = 2;
/// How often the owner looks into its inbox for hand-offs.
pub const INBOX_INTERVAL: Duration = Duration::from_millis(100);

/// A request to look at CURRENT (and the inbox) now, shared by whoever asks (the server's
/// SIGHUP handler) and whoever looks (the writer's `Adopter`, the read-only `watch`, a replica's
/// `replica::follow`). Each server has its own.
#[derive(Debug, Clone, Default)]
pub struct ReloadRequest(Arc<AtomicBool>);

impl ReloadRequest {
    /// Look at CURRENT (and the inbox) now: the server calls it on SIGHUP.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Take a pending request.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// How a follower of CURRENT looks for new generations.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How often CURRENT is compared with the served generation (zero: only on request).
    pub interval: Duration,
    /// Set on SIGHUP: look now.
    pub reload: ReloadRequest,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            interval: Duration::from_secs(DEFAULT_WATCH_INTERVAL_S),
            reload: ReloadRequest::default(),
        }
    }
}

/// Progress of generations handed over by producers (`generate`, `import`, `refresh`), for
/// the metrics registry; the writer owns them.
#[derive(Debug, Default)]
pub struct HandoffStats {
    /// Hand-offs published and served by this writer.
    adopted: AtomicU64,
    /// Whether a hand-off is acknowledged and its build not yet ready (changesets wait
    /// meanwhile).
    waiting: AtomicBool,
}

impl HandoffStats {
    /// (hand-offs published so far, whether one is being built now).
    pub fn progress(&self) -> (u64, bool) {
        (
            self.adopted.load(Ordering::Relaxed),
            self.waiting.load(Ordering::Relaxed),
        )
    }
}

/// Clears `HandoffStats::waiting` however a hand-off ends.
struct Waiting<'a>(&'a HandoffStats);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.store(false, Ordering::Relaxed);
    }
}

/// Adopts generations published outside the writer, for one data directory.
pub struct Adopter {
    data: DataDir,
    watch: WatchOptions,
    handoffs: Arc<HandoffStats>,
    last_inbox: Instant,
    last_watch: Instant,
}

impl Adopter {
    /// An adopter for `data`, looking at CURRENT as `watch` says and counting hand-offs into
    /// `handoffs`.
    pub fn new(data: DataDir, watch: WatchOptions, handoffs: Arc<HandoffStats>) -> Adopter {
        Adopter {
            data,
            watch,
            handoffs,
            last_inbox: Instant::now(),
            last_watch: Instant::now(),
        }
    }

    /// Take waiting hand-offs (owner) and follow CURRENT when it is time (or SIGHUP came).
    /// Replaced generations go to `retired`, whose owner drops them once no reader holds
    /// them. Failures are logged; the caller goes on.
    pub fn between_batches(&mut self, store: &GenerationStore, retired: &mut Vec<Arc<Generation>>) {
        let hup = self.watch.reload.take();
        if hup {
            tracing::info!("SIGHUP: looking for a new generation");
        }
        if self.data.is_owner() && (hup || self.last_inbox.elapsed() >= INBOX_INTERVAL) {
            self.last_inbox = Instant::now();
            if let Err(e) = self.take_handoffs(store, retired) {
                tracing::error!(error = %e, "taking a handed-over generation failed");
            }
        }
        let every = self.watch.interval;
        if hup || (!every.is_zero() && self.last_watch.elapsed() >= every) {
            self.last_watch = Instant::now();
            if let Err(e) = self.follow_current(store, retired) {
                tracing::error!(error = %e, "loading the generation CURRENT names failed; still serving the previous one");
            }
        }
    }

    fn take_handoffs(
        &self,
        store: &GenerationStore,
        retired: &mut Vec<Arc<Generation>>,
    ) -> Result<()> {
        while let Some(request) = next_request(&self.data.root)? {
            self.adopt(&request, store, retired)?;
        }
        Ok(())
    }

    /// One hand-off: acknowledge (the caller, the writer, applies nothing until this returns),
    /// wait for the build, publish it as the next generation and serve it; answer the producer.
    fn adopt(
        &self,
        request: &Request,
        store: &GenerationStore,
        retired: &mut Vec<Arc<Generation>>,
    ) -> Result<()> {
        let base = store.current();
        request.acknowledge(Some(base.id))?;
        self.handoffs.waiting.store(true, Ordering::Relaxed);
        let _waiting = Waiting(&self.handoffs);
        tracing::info!(request = %request.dir.display(), base = base.id, "a generation is being handed over; changesets wait for it");
        let waited = Instant::now();
        match request.wait_ready(BUILD_TIMEOUT) {
            WaitOutcome::Ready => {}
            WaitOutcome::ProducerGone => {
                tracing::warn!(request = %request.dir.display(), "the producer of a hand-off ended before it was ready; changesets go on");
                return request.remove();
            }
            WaitOutcome::TimedOut => {
                return request.answer(Err(Refusal::NotReady {
                    seconds: BUILD_TIMEOUT.as_secs(),
                }));
            }
        }
        let built = crate::snapshot::manifest::Manifest::read(&request.build_dir());
        match built {
            Ok(m) if m.parent.is_some() && m.parent != Some(base.id) => {
                return request.answer(Err(Refusal::WrongBase {
                    built_on: m.parent.unwrap_or_default(),
                    served: base.id,
                }));
            }
            Ok(_) => {}
            Err(e) => return request.answer(Err(e.into())),
        }
        let (id, dir) = match self.data.install(&request.build_dir()) {
            Ok(x) => x,
            Err(e) => return request.answer(Err(e.into())),
        };
        let loaded = Generation::load(&dir, &|step| tracing::debug!(step, "loading"))
            .and_then(|(g, stats)| self.data.make_current(id).map(|()| (g, stats)));
        match loaded {
            Ok((g, stats)) => {
                let made_by = g.manifest.made_by();
                retired.push(store.current());
                store.swap(g);
                self.handoffs.adopted.fetch_add(1, Ordering::Relaxed);
                request.answer(Ok(id))?;
                tracing::info!(
                    generation = id,
                    parent = base.id,
                    made_by = ?made_by,
                    objects = stats.rows_objects,
                    waited_ms = waited.elapsed().as_millis() as u64,
                    "handed-over generation published and served"
                );
                self.collect_garbage();
                Ok(())
            }
            Err(e) => {
                if let Err(r) = self.data.remove_generation(id) {
                    tracing::warn!(error = %r, generation = id, "removing a refused generation failed");
                }
                request.answer(Err(Refusal::DoesNotLoad(e)))
            }
        }
    }

    /// Serve the generation CURRENT names when it is not the one served.
    fn follow_current(
        &self,
        store: &GenerationStore,
        retired: &mut Vec<Arc<Generation>>,
    ) -> Result<()> {
        let Some(id) = self.data.current()? else {
            return Ok(());
        };
        if id == store.current().id {
            return Ok(());
        }
        // a reader pins it while loading (the directory's owner may move on meanwhile)
        let pinned = if self.data.is_owner() {
            None
        } else {
            match self.data.pin(id)? {
                Some(p) => Some(p),
                None => return Ok(()), // gone already: the next look finds its successor
            }
        };
        let started = Instant::now();
        let previous = store.current();
        // only what changed is read and re-indexed (unchanged files keep their loaded data)
        let (g, _) = previous.load_successor(&self.data.generation_dir(id))?;
        drop(pinned);
        if g.id != id {
            return Err(EngineError::corrupt(
                self.data.generation_dir(id),
                format!("its manifest says generation {}", g.id),
            ));
        }
        store.swap(g);
        tracing::info!(
            generation = id,
            previous = previous.id,
            load_ms = started.elapsed().as_millis() as u64,
            "serving the generation CURRENT names"
        );
        retired.push(previous);
        Ok(())
    }

    /// Keep CURRENT and `KEEP_OLD_GENERATIONS` before it, as the writer does.
    fn collect_garbage(&self) {
        if let Err(e) = self.data.collect_old_generations() {
            tracing::warn!(error = %e, "removing old generations failed");
        }
    }
}

/// Follow CURRENT on a thread of its own (a server without a writer: `--read-only`).
pub fn watch(data: DataDir, store: Arc<GenerationStore>, options: WatchOptions) -> Result<()> {
    std::thread::Builder::new()
        .name("vegdb-watch".into())
        .spawn(move || {
            // not the owner: it takes no hand-offs, its counters stay at zero
            let mut adopter = Adopter::new(data, options, Arc::default());
            let mut retired: Vec<Arc<Generation>> = Vec::new();
            loop {
                retired.retain(|g| Arc::strong_count(g) > 1);
                adopter.between_batches(&store, &mut retired);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .map_err(|e| EngineError::Internal(format!("starting the watch thread: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate_into, Scale};

    #[test]
    fn a_replaced_generation_is_freed_once_its_last_reader_lets_go() {
        let tmp = tempfile::tempdir().unwrap();
        let first = generate_into(Scale::Tiny, 3, tmp.path()).unwrap();
        let (g, _) = Generation::load(&first, &|_| {}).unwrap();
        let store = GenerationStore::new(g);
        let generation = Arc::downgrade(&store.current());
        let network = Arc::downgrade(&store.current().network);
        let reader = store.current(); // a request in flight
                                      // another process publishes the next generation
        generate_into(Scale::Tiny, 4, tmp.path()).unwrap();
        let adopter = Adopter::new(
            DataDir::read_only(tmp.path()),
            WatchOptions::default(),
            Arc::default(),
        );
        let mut retired = Vec::new();
        adopter.follow_current(&store, &mut retired).unwrap();
        assert_eq!(store.current().id, 2);
        assert_eq!(
            reader.id, 1,
            "a reader keeps the generation it started with"
        );
        retired.retain(|g| Arc::strong_count(g) > 1);
        assert!(generation.upgrade().is_some(), "still read");
        drop(reader);
        retired.retain(|g| Arc::strong_count(g) > 1);
        assert!(retired.is_empty());
        assert!(generation.upgrade().is_none(), "the generation is freed");
        assert!(network.upgrade().is_none(), "and its tables with it");
        // nothing moved: nothing reloaded
        adopter.follow_current(&store, &mut retired).unwrap();
        assert!(retired.is_empty());
    }

    /// Copy the files of a generation directory (flat: Parquet files and MANIFEST.json).
    fn copy_files(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_files(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    /// Two servers in one process (here their adopters): each looks at CURRENT as its own
    /// options say, a SIGHUP request to one is not the other's, and hand-offs are counted by
    /// the one that took them (these were process-wide statics: the last interval set, one
    /// SIGHUP flag, one counter).
    #[test]
    fn two_adopters_keep_their_own_watch_interval_reload_request_and_hand_off_counters() {
        let (a_tmp, b_tmp, elsewhere) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let load = |dir: &std::path::Path| Generation::load(dir, &|_| {}).unwrap().0;
        let a_store =
            GenerationStore::new(load(&generate_into(Scale::Tiny, 3, a_tmp.path()).unwrap()));
        let b_store =
            GenerationStore::new(load(&generate_into(Scale::Tiny, 3, b_tmp.path()).unwrap()));
        // A owns its directory and looks at CURRENT only when asked; B follows its every 1 ms
        let a_data = DataDir::open(a_tmp.path()).unwrap();
        let a_watch = WatchOptions {
            interval: Duration::ZERO,
            reload: ReloadRequest::default(),
        };
        let b_watch = WatchOptions {
            interval: Duration::from_millis(1),
            reload: ReloadRequest::default(),
        };
        let (a_handoffs, b_handoffs) = (Arc::new(HandoffStats::default()), Arc::default());
        let mut a = Adopter::new(a_data.clone(), a_watch.clone(), a_handoffs.clone());
        let mut b = Adopter::new(
            DataDir::read_only(b_tmp.path()),
            b_watch.clone(),
            Arc::clone(&b_handoffs),
        );
        let mut retired = Vec::new();

        // a producer hands a generation to A
        let built = generate_into(Scale::Tiny, 5, elsewhere.path()).unwrap();
        let ticket = crate::snapshot::handoff::Ticket::announce(a_tmp.path()).unwrap();
        copy_files(&built, &ticket.build_dir());
        ticket.mark_ready().unwrap();
        std::thread::sleep(INBOX_INTERVAL + Duration::from_millis(10));
        a.between_batches(&a_store, &mut retired);
        b.between_batches(&b_store, &mut retired);
        assert_eq!(a_store.current().id, 2, "A published the hand-off");
        assert_eq!(a_handoffs.progress(), (1, false));
        assert_eq!(b_handoffs.progress(), (0, false), "B took no hand-off");

        // CURRENT moves under both: B follows at its interval, A (interval zero) does not
        generate_into(Scale::Tiny, 4, b_tmp.path()).unwrap();
        a_data.make_current(1).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        a.between_batches(&a_store, &mut retired);
        b.between_batches(&b_store, &mut retired);
        assert_eq!(
            b_store.current().id,
            2,
            "B follows CURRENT every millisecond"
        );
        assert_eq!(a_store.current().id, 2, "A looks only when asked");
        // a SIGHUP to B's server is not one to A's
        b_watch.reload.request();
        a.between_batches(&a_store, &mut retired);
        assert_eq!(a_store.current().id, 2);
        a_watch.reload.request();
        a.between_batches(&a_store, &mut retired);
        assert_eq!(
            a_store.current().id,
            1,
            "asked, A serves what CURRENT names"
        );
    }
}
