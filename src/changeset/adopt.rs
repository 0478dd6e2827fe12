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
//! SIGHUP (`request_reload`); a change is loaded completely before it is swapped in (readers
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

static RELOAD: AtomicBool = AtomicBool::new(false);
static WATCH_MS: AtomicU64 = AtomicU64::new(DEFAULT_WATCH_INTERVAL_S * 1000);

/// Hand-offs (from `generate`, `import`, `refresh`) published and served by this process.
static HANDOFFS_ADOPTED: AtomicU64 = AtomicU64::new(0);
/// Whether a hand-off is acknowledged and its build not yet ready (changesets wait meanwhile).
static HANDOFF_WAITING: AtomicBool = AtomicBool::new(false);

/// Progress of generations handed over by producers, for the metrics registry: (hand-offs
/// published so far, whether one is being built now).
pub fn handoff_progress() -> (u64, bool) {
    (
        HANDOFFS_ADOPTED.load(Ordering::Relaxed),
        HANDOFF_WAITING.load(Ordering::Relaxed),
    )
}

/// Clears `HANDOFF_WAITING` however a hand-off ends.
struct Waiting;

impl Drop for Waiting {
    fn drop(&mut self) {
        HANDOFF_WAITING.store(false, Ordering::Relaxed);
    }
}

/// Look at CURRENT (and the inbox) now: the server calls it on SIGHUP.
pub fn request_reload() {
    RELOAD.store(true, Ordering::SeqCst);
}

/// Take a pending SIGHUP request (a follower without an `Adopter`: `replica::follow`).
pub fn take_reload_request() -> bool {
    RELOAD.swap(false, Ordering::SeqCst)
}

/// How often CURRENT is compared with the served generation (zero: only on SIGHUP).
pub fn set_watch_interval(every: Duration) {
    WATCH_MS.store(every.as_millis() as u64, Ordering::SeqCst);
}

/// Adopts generations published outside the writer, for one data directory.
pub struct Adopter {
    data: DataDir,
    last_inbox: Instant,
    last_watch: Instant,
}

impl Adopter {
    pub fn new(data: DataDir) -> Adopter {
        Adopter {
            data,
            last_inbox: Instant::now(),
            last_watch: Instant::now(),
        }
    }

    /// Take waiting hand-offs (owner) and follow CURRENT when it is time (or SIGHUP came).
    /// Replaced generations go to `retired`, whose owner drops them once no reader holds
    /// them. Failures are logged; the caller goes on.
    pub fn between_batches(&mut self, store: &GenerationStore, retired: &mut Vec<Arc<Generation>>) {
        let hup = RELOAD.swap(false, Ordering::SeqCst);
        if hup {
            tracing::info!("SIGHUP: looking for a new generation");
        }
        if self.data.is_owner() && (hup || self.last_inbox.elapsed() >= INBOX_INTERVAL) {
            self.last_inbox = Instant::now();
            if let Err(e) = self.take_handoffs(store, retired) {
                tracing::error!(error = %e, "taking a handed-over generation failed");
            }
        }
        let every = Duration::from_millis(WATCH_MS.load(Ordering::SeqCst));
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
        HANDOFF_WAITING.store(true, Ordering::Relaxed);
        let _waiting = Waiting;
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
                HANDOFFS_ADOPTED.fetch_add(1, Ordering::Relaxed);
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
pub fn watch(data: DataDir, store: Arc<GenerationStore>) -> Result<()> {
    std::thread::Builder::new()
        .name("vegdb-watch".into())
        .spawn(move || {
            let mut adopter = Adopter::new(data);
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
        let adopter = Adopter::new(DataDir::read_only(tmp.path()));
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
}
