//! Read replicas: `vegdb serve --read-only --follow LOCATION` serves the generations a writer
//! publishes to a store (an object store bucket, or a local/NFS directory), without a data
//! directory of its own.
//!
//! At start the replica downloads the generation `CURRENT` names into its cache directory
//! (`cache`) and loads it. A thread then looks at `CURRENT` every `--watch-interval` seconds;
//! when it names another generation, the replica reads its manifest, downloads only the files
//! whose content (SHA-256) it does not hold, puts the generation together from its cache, and
//! loads it as a successor of the served one (`Generation::load_successor`: unchanged types
//! keep their tables and indexes, touched types reuse the rows of their unchanged chunks and
//! update their index), then swaps it in. Readers see the old generation or the new one,
//! never a mix. A failure (store unreachable, a download that does not match its checksum)
//! is logged and recorded in the status; the served generation stays and the next look tries
//! again.
//!
//! `FollowStatus` tells `/status` and `/ready` how far behind the store the replica is: the
//! generation served, the one `CURRENT` names, and for how long the store has been past the
//! served generation (from the time the store wrote `CURRENT`, see [`Lag::seconds_behind`]).
//! With `--max-lag` set, a replica behind for longer than that is not ready (`/ready` 503), so
//! a load balancer drains a replica that cannot catch up.

pub mod cache;
pub mod remote_source;
pub mod source;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

pub use source::Head;

use rayon::prelude::*;

use crate::error::{EngineError, Result};
use crate::generation::{Generation, GenerationStore};
use crate::snapshot::manifest::Manifest;
use crate::snapshot::store::generation_name;
use cache::ChunkCache;
use source::Source;

/// Default bound of the cache directory (`--cache-max-bytes`): 20 GiB.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 20 << 30;
/// Chunk downloads at a time.
pub const PARALLEL_DOWNLOADS: usize = 8;

/// How the replica stands against its store; shared with the API.
#[derive(Debug)]
pub struct FollowStatus {
    /// The followed location.
    pub source: String,
    poll: Mutex<Poll>,
    downloads: AtomicU64,
    downloaded_bytes: AtomicU64,
    cache_bytes: AtomicU64,
    swaps: AtomicU64,
    /// `--max-lag` (zero: no bound).
    max_lag: Duration,
}

#[derive(Debug, Default, Clone)]
struct Poll {
    /// The generation CURRENT named at the last successful look.
    store_generation: Option<u64>,
    /// Since when the store has been past the served generation (see `Lag::seconds_behind`).
    behind_since: Option<SystemTime>,
    last_look: Option<SystemTime>,
    last_error: Option<String>,
    last_catch_up_ms: Option<u64>,
}

/// A snapshot of the replica's standing, for `/status` and `/ready`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lag {
    pub source: String,
    /// The generation CURRENT named at the last look.
    pub store_generation: Option<u64>,
    pub served_generation: u64,
    /// Store generation − served generation (0 when current or ahead).
    pub generations_behind: u64,
    /// Seconds since the store's CURRENT moved past the served generation; 0 when serving
    /// what the store names. The move's time is when the store wrote CURRENT as first seen
    /// past the served generation (its own clock; the time of that sighting if the store
    /// gives none or its clock is ahead), so when CURRENT moved twice between two looks it
    /// is the second move's time.
    pub seconds_behind: f64,
    /// `--max-lag` in seconds (0: no bound).
    pub max_lag_s: f64,
    /// Time of the last successful look at CURRENT.
    pub last_look: Option<SystemTime>,
    /// The last failure since the last successful catch-up.
    pub last_error: Option<String>,
    /// Files downloaded since start, and their bytes.
    pub downloads: u64,
    pub downloaded_bytes: u64,
    /// Bytes held in the cache directory.
    pub cache_bytes: u64,
    /// Generations swapped in since start (after the first).
    pub swaps: u64,
    /// Milliseconds the last catch-up took (download + load + swap).
    pub last_catch_up_ms: Option<u64>,
}

impl Lag {
    /// Whether the replica has been behind the store for longer than `--max-lag` (never
    /// without a bound). A replica that cannot reach the store learns of no newer
    /// generation, so its lag grows only from a move it saw before: the store's outage would
    /// otherwise drain every replica at once (`last_look` and `last_error` show it).
    pub fn beyond_bound(&self) -> bool {
        self.max_lag_s > 0.0 && self.seconds_behind > self.max_lag_s
    }
}

impl FollowStatus {
    /// The status of a replica of `source` with `--max-lag` `max_lag` (zero: no bound).
    pub fn new(source: String, max_lag: Duration) -> FollowStatus {
        FollowStatus {
            source,
            poll: Mutex::new(Poll::default()),
            downloads: AtomicU64::new(0),
            downloaded_bytes: AtomicU64::new(0),
            cache_bytes: AtomicU64::new(0),
            swaps: AtomicU64::new(0),
            max_lag,
        }
    }

    fn with_poll<T>(&self, f: impl FnOnce(&mut Poll) -> T) -> T {
        match self.poll.lock() {
            Ok(mut p) => f(&mut p),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// The standing of a replica serving generation `served`.
    pub fn lag(&self, served: u64) -> Lag {
        let p = self.with_poll(|p| p.clone());
        let behind = p.store_generation.is_some_and(|s| s != served);
        Lag {
            source: self.source.clone(),
            store_generation: p.store_generation,
            served_generation: served,
            generations_behind: p
                .store_generation
                .map(|s| s.saturating_sub(served))
                .unwrap_or(0),
            seconds_behind: match (behind, p.behind_since) {
                (true, Some(t)) => SystemTime::now()
                    .duration_since(t)
                    .unwrap_or_default()
                    .as_secs_f64(),
                _ => 0.0,
            },
            max_lag_s: self.max_lag.as_secs_f64(),
            last_look: p.last_look,
            last_error: p.last_error,
            downloads: self.downloads.load(Ordering::Relaxed),
            downloaded_bytes: self.downloaded_bytes.load(Ordering::Relaxed),
            cache_bytes: self.cache_bytes.load(Ordering::Relaxed),
            swaps: self.swaps.load(Ordering::Relaxed),
            last_catch_up_ms: p.last_catch_up_ms,
        }
    }

    /// A successful look saw `head` while `served` was served (None: nothing yet).
    fn looked(&self, head: Option<Head>, served: Option<u64>) {
        let now = SystemTime::now();
        self.with_poll(|p| {
            p.last_look = Some(now);
            p.store_generation = head.map(|h| h.generation);
            match head {
                Some(h) if Some(h.generation) != served => {
                    p.behind_since.get_or_insert(match h.modified {
                        Some(m) if m <= now => m,
                        _ => now,
                    });
                }
                _ => p.behind_since = None,
            }
        });
    }

    fn failed(&self, error: &EngineError) {
        let text = error.to_string();
        self.with_poll(|p| p.last_error = Some(text));
    }

    fn caught_up(&self, generation: u64, took: Duration) {
        self.with_poll(|p| {
            p.last_error = None;
            p.last_catch_up_ms = Some(took.as_millis() as u64);
            if p.store_generation == Some(generation) {
                p.behind_since = None;
            }
        });
    }
}

/// `--max-lag`: seconds, finite and not negative (0: no bound).
pub fn parse_max_lag(text: &str) -> std::result::Result<f64, MaxLagError> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 && Duration::try_from_secs_f64(s).is_ok() => Ok(s),
        _ => Err(MaxLagError {
            text: text.to_string(),
        }),
    }
}

/// A `--max-lag` that is not a number of seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a number of seconds (0 or more; 0: no bound)")]
pub struct MaxLagError {
    pub text: String,
}

/// Settings of a replica (`serve --read-only --follow`).
#[derive(Debug, Clone)]
pub struct FollowConfig {
    /// `--follow`: a directory path, `file://…`, or an object store URL (`s3://bucket/prefix`).
    pub location: String,
    /// `--cache`: where chunks are kept.
    pub cache_dir: PathBuf,
    /// `--cache-max-bytes`.
    pub cache_max_bytes: u64,
    /// `--max-lag`: behind the store for longer than this, the replica is not ready (zero:
    /// no bound).
    pub max_lag: Duration,
    /// Seconds between looks at CURRENT (`--watch-interval`; zero: only at start and on
    /// SIGHUP).
    pub interval: Duration,
}

/// A replica's follower: its source, cache and status.
pub struct Follower {
    source: Box<dyn Source>,
    cache: ChunkCache,
    pub status: Arc<FollowStatus>,
}

impl Follower {
    pub fn open(config: &FollowConfig) -> Result<Follower> {
        Follower::with_source(open_source(&config.location)?, config)
    }

    pub fn with_source(source: Box<dyn Source>, config: &FollowConfig) -> Result<Follower> {
        let cache = ChunkCache::open(&config.cache_dir, config.cache_max_bytes)?;
        let status = Arc::new(FollowStatus::new(source.describe(), config.max_lag));
        status.cache_bytes.store(cache.bytes(), Ordering::Relaxed);
        Ok(Follower {
            source,
            cache,
            status,
        })
    }

    /// Download and load the generation CURRENT names (the replica's start).
    pub fn load_current(&mut self) -> Result<Generation> {
        let head = self.source.current()?.ok_or_else(|| {
            EngineError::NotFound(format!(
                "{} has no CURRENT generation yet",
                self.source.describe()
            ))
        })?;
        let id = head.generation;
        self.status.looked(Some(head), None);
        let started = Instant::now();
        let dir = self.fetch_generation(id, None)?;
        let (g, stats) = Generation::load(&dir, &|step| tracing::debug!(step, "loading"))?;
        check_id(&g, id)?;
        self.cache.remove_generations_except(id)?;
        self.status.caught_up(id, started.elapsed());
        tracing::info!(
            generation = id,
            source = %self.status.source,
            objects = stats.rows_objects,
            read_ms = stats.read_ms as u64,
            index_ms = stats.index_ms as u64,
            total_ms = started.elapsed().as_millis() as u64,
            "replica loaded the store's current generation"
        );
        Ok(g)
    }

    /// One look at CURRENT: catch up when it names a generation not served. Returns the id
    /// swapped in, if any.
    pub fn look(
        &mut self,
        store: &GenerationStore,
        retired: &mut Vec<Arc<Generation>>,
    ) -> Result<Option<u64>> {
        let served = store.current();
        let head = match self.source.current() {
            Ok(head) => head,
            Err(e) => {
                self.status.failed(&e);
                return Err(e);
            }
        };
        self.status.looked(head, Some(served.id));
        let Some(id) = head.map(|h| h.generation) else {
            return Ok(None);
        };
        if id == served.id {
            return Ok(None);
        }
        let started = Instant::now();
        let result = self
            .fetch_generation(id, Some(&served.manifest))
            .and_then(|dir| served.load_successor(&dir));
        let (g, stats) = match result {
            Ok(x) => x,
            Err(e) => {
                self.status.failed(&e);
                return Err(e);
            }
        };
        if let Err(e) = check_id(&g, id) {
            self.status.failed(&e);
            return Err(e);
        }
        store.swap(g);
        retired.push(served.clone());
        let took = started.elapsed();
        self.status.swaps.fetch_add(1, Ordering::Relaxed);
        self.status.caught_up(id, took);
        if let Err(e) = self.cache.remove_generations_except(id) {
            tracing::warn!(error = %e, "removing old generation directories of the cache failed");
        }
        tracing::info!(
            generation = id,
            previous = served.id,
            full_load = stats.full_load,
            types_shared = stats.types_shared,
            types_rebuilt = stats.types_rebuilt,
            chunks_read = stats.chunks_read,
            chunks_reused = stats.chunks_reused,
            took_ms = took.as_millis() as u64,
            "replica serves the store's new generation"
        );
        Ok(Some(id))
    }

    /// Download what generation `id` needs and put it together in the cache; its directory.
    fn fetch_generation(&mut self, id: u64, served: Option<&Manifest>) -> Result<PathBuf> {
        let manifest = self.source.manifest(id)?;
        if manifest.generation != id {
            return Err(EngineError::corrupt(
                format!("{}/{}", self.source.describe(), generation_name(id)),
                format!(
                    "CURRENT names generation {id}, its manifest says {}",
                    manifest.generation
                ),
            ));
        }
        let missing: Vec<_> = self.cache.missing(&manifest).into_iter().cloned().collect();
        let incoming: u64 = missing.iter().map(|f| f.bytes).sum();
        let keep: HashSet<&str> = manifest
            .files
            .iter()
            .chain(served.map(|m| m.files.iter()).into_iter().flatten())
            .map(|f| f.sha256.as_str())
            .collect();
        self.cache.make_room(&keep, incoming)?;
        let root = self.cache.root.clone();
        let source = &*self.source;
        let status = &*self.status;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(PARALLEL_DOWNLOADS)
            .thread_name(|i| format!("vegdb-download-{i}"))
            .build()
            .map_err(|e| EngineError::Internal(format!("download threads: {e}")))?;
        pool.install(|| {
            missing.par_iter().try_for_each(|f| {
                ChunkCache::download(&root, f, source.verifies(), |dst| source.fetch(id, f, dst))?;
                status.downloads.fetch_add(1, Ordering::Relaxed);
                status
                    .downloaded_bytes
                    .fetch_add(f.bytes, Ordering::Relaxed);
                Ok::<(), EngineError>(())
            })
        })?;
        for f in &missing {
            self.cache.add(f);
        }
        self.status
            .cache_bytes
            .store(self.cache.bytes(), Ordering::Relaxed);
        tracing::debug!(
            generation = id,
            downloaded = missing.len(),
            bytes = incoming,
            "generation downloaded"
        );
        self.cache.assemble(&manifest)
    }
}

/// The source a `--follow` value names: a directory path (or `file://` URL), or an object
/// store URL.
pub fn open_source(location: &str) -> Result<Box<dyn Source>> {
    if let Some(path) = location.strip_prefix("file://") {
        return Ok(Box::new(source::DirSource::new(path)));
    }
    if crate::remote::is_store_url(location) {
        return remote_source::open(location);
    }
    if location.contains("://") {
        return Err(EngineError::input(format!(
            "--follow '{location}': not a directory or an object store URL (s3://, az://, gs://)"
        )));
    }
    Ok(Box::new(source::DirSource::new(location)))
}

fn check_id(g: &Generation, id: u64) -> Result<()> {
    if g.id != id {
        return Err(EngineError::corrupt(
            &g.dir,
            format!("its manifest says generation {}, CURRENT {id}", g.id),
        ));
    }
    Ok(())
}

/// Follow the store on a thread of its own: a look every `watch.interval` (zero: only on
/// SIGHUP, through `watch.reload`).
pub fn follow(
    mut follower: Follower,
    store: Arc<GenerationStore>,
    watch: crate::changeset::adopt::WatchOptions,
) -> Result<()> {
    let interval = watch.interval;
    std::thread::Builder::new()
        .name("vegdb-follow".into())
        .spawn(move || {
            let mut retired: Vec<Arc<Generation>> = Vec::new();
            let mut last = Instant::now();
            loop {
                retired.retain(|g| Arc::strong_count(g) > 1);
                let hup = watch.reload.take();
                if hup || (!interval.is_zero() && last.elapsed() >= interval) {
                    last = Instant::now();
                    if let Err(e) = follower.look(&store, &mut retired) {
                        tracing::error!(error = %e, source = %follower.status.source, "catching up with the store failed; still serving the previous generation");
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .map_err(|e| EngineError::Internal(format!("starting the follow thread: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_lag_is_a_number_of_seconds_not_negative() {
        assert_eq!(parse_max_lag("0"), Ok(0.0));
        assert_eq!(parse_max_lag("2.5"), Ok(2.5));
        for bad in ["-1", "NaN", "inf", "", "2s", "1e300"] {
            let err = parse_max_lag(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn the_lag_counts_from_when_the_store_moved_past_the_served_generation() {
        let status = FollowStatus::new("s".into(), Duration::from_secs(30));
        let now = SystemTime::now();
        let head = |generation, ago: i64| Head {
            generation,
            modified: Some(if ago >= 0 {
                now - Duration::from_secs(ago as u64)
            } else {
                now + Duration::from_secs((-ago) as u64)
            }),
        };
        // serving what the store names: no lag, whenever CURRENT was written
        status.looked(Some(head(4, 100)), Some(4));
        let lag = status.lag(4);
        assert_eq!((lag.generations_behind, lag.seconds_behind), (0, 0.0));
        assert!(!lag.beyond_bound());
        // the store moved 40 s ago: behind since then, beyond a 30 s bound
        status.looked(Some(head(6, 40)), Some(4));
        let lag = status.lag(4);
        assert_eq!(lag.generations_behind, 2);
        assert!((40.0..41.0).contains(&lag.seconds_behind), "{lag:?}");
        assert!(lag.beyond_bound());
        // a later look at a newer move keeps the first move's time
        status.looked(Some(head(7, 1)), Some(4));
        assert!(status.lag(4).seconds_behind >= 40.0);
        // caught up with what the store names: no lag
        status.caught_up(7, Duration::from_millis(5));
        status.looked(Some(head(7, 1)), Some(7));
        assert_eq!(status.lag(7).seconds_behind, 0.0);
        // a store clock ahead of ours: the lag counts from the sighting
        status.looked(Some(head(8, -3600)), Some(7));
        let lag = status.lag(7);
        assert!(lag.seconds_behind < 1.0, "{lag:?}");
        assert!(!lag.beyond_bound());
        // without a bound nobody is beyond it
        let free = FollowStatus::new("s".into(), Duration::ZERO);
        free.looked(Some(head(9, 1000)), Some(1));
        assert!(free.lag(1).seconds_behind > 999.0 && !free.lag(1).beyond_bound());
    }
}
