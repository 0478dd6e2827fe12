//! One writer per store prefix: the writer's lease `<prefix>/WRITER-LEASE`.
//!
//! A writer (`vegdb serve --publish-to URL`) takes the lease before it accepts a changeset and
//! keeps it while it runs. The lease is a small JSON object naming its holder (the data
//! directory's writer id, host, process id, data directory) and when it expires (the holder's
//! clock, epoch ms):
//!
//! - taken with a create-only write (`If-None-Match: *`) when there is none, or with `If-Match`
//!   on the ETag of the one read when that one has expired, was released, or is this data
//!   directory's own (a restart after a crash: one process owns a data directory at a time);
//!   any other holder's lease is respected, and `serve` refuses to start, naming the holder;
//! - renewed every `renew` seconds with `If-Match` on the ETag of the last write, moving its
//!   expiry `ttl` seconds ahead;
//! - lost when a renewal finds the object changed or gone (another writer took it over, or it
//!   was removed): for good, the writer then accepts no changeset until it is restarted;
//! - lapsed when no renewal has succeeded for `ttl - renew` seconds (the store cannot be
//!   reached): the holder counts itself as not holding it a whole renewal interval before
//!   another writer may take it over (that interval is the margin for the writers' clocks), and
//!   holds it again once a renewal with the last ETag succeeds (nobody took it meanwhile);
//! - released on a clean shutdown (rewritten as expired, conditionally), so the next writer
//!   need not wait for the expiry.
//!
//! While the lease is not held the writer answers changesets 503, `/ready` answers 503, the
//! writer thread processes nothing and the publisher uploads nothing.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};

use super::Remote;
use crate::error::{EngineError, Result};

/// The lease object under the store's prefix.
pub const LEASE_FILE: &str = "WRITER-LEASE";
/// Seconds a lease lasts after its last renewal (`--store-lease-ttl`).
pub const DEFAULT_TTL_S: f64 = 30.0;
/// Seconds between renewals (`--store-lease-renew`).
pub const DEFAULT_RENEW_S: f64 = 10.0;

/// How long a lease lasts and how often it is renewed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaseTimes {
    pub ttl: Duration,
    pub renew: Duration,
}

impl Default for LeaseTimes {
    fn default() -> Self {
        LeaseTimes {
            ttl: Duration::from_secs_f64(DEFAULT_TTL_S),
            renew: Duration::from_secs_f64(DEFAULT_RENEW_S),
        }
    }
}

impl LeaseTimes {
    /// Checked: both positive and finite, the renewal at most half the lease's life (so one
    /// failed renewal does not lose it).
    pub fn new(ttl_s: f64, renew_s: f64) -> Result<LeaseTimes> {
        let ok = |s: f64| s.is_finite() && s > 0.0 && s <= 86_400.0;
        if !ok(ttl_s) || !ok(renew_s) {
            return Err(EngineError::input(format!(
                "--store-lease-ttl ({ttl_s}) and --store-lease-renew ({renew_s}) must be seconds \
                 above 0 and at most a day"
            )));
        }
        if renew_s * 2.0 > ttl_s {
            return Err(EngineError::input(format!(
                "--store-lease-renew ({renew_s} s) must be at most half of --store-lease-ttl \
                 ({ttl_s} s)"
            )));
        }
        Ok(LeaseTimes {
            ttl: Duration::from_secs_f64(ttl_s),
            renew: Duration::from_secs_f64(renew_s),
        })
    }

    /// How long after a successful renewal was sent the holder counts itself as holding.
    fn hold_for(&self) -> Duration {
        self.ttl.saturating_sub(self.renew)
    }
}

/// The lease object's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// The holder's writer id (`<data>/WRITER-ID`).
    pub holder: String,
    pub host: String,
    pub pid: u32,
    /// The holder's data directory (absolute).
    pub data: String,
    /// When the holder took the lease and last renewed it (RFC 3339, its clock).
    pub acquired: String,
    pub renewed: String,
    /// Epoch milliseconds (the holder's clock) after which another writer may take it.
    pub expires_ms: i64,
    pub ttl_s: f64,
    /// Given up on a clean shutdown: free at once.
    #[serde(default)]
    pub released: bool,
}

impl LeaseRecord {
    /// Whether another writer may take it at `now_ms`.
    pub fn free_at(&self, now_ms: i64) -> bool {
        self.released || self.expires_ms <= now_ms
    }

    /// The holder, for messages.
    pub fn describe(&self) -> String {
        format!(
            "writer {} (host {}, pid {}, data directory {})",
            self.holder, self.host, self.pid, self.data
        )
    }

    fn expires_text(&self) -> String {
        chrono::DateTime::from_timestamp_millis(self.expires_ms)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_else(|| self.expires_ms.to_string())
    }
}

/// What a look at the lease found when it could not be taken.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// Ours now.
    Ours,
    /// Another writer holds it and it has not expired.
    Theirs(LeaseRecord),
}

struct Mine {
    record: LeaseRecord,
    /// The version of our last write (None: not taken yet, or released).
    version: Option<UpdateVersion>,
    /// Held until then (monotonic), unless lost.
    held_until: Option<Instant>,
    /// Lost for good (why).
    lost: Option<String>,
    /// Why it is not held now (the last failure or the holder), while not lost.
    waiting: Option<String>,
}

/// This writer's lease on a store (see the module doc).
pub struct Lease {
    remote: Remote,
    times: LeaseTimes,
    mine: Mutex<Mine>,
    stop: (Mutex<bool>, Condvar),
}

fn store_error(what: impl std::fmt::Display, e: impl std::fmt::Display) -> EngineError {
    EngineError::io(
        what.to_string(),
        std::io::Error::other(format!("object store: {e}")),
    )
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn now_text() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Lease {
    /// A lease for writer `holder` (its writer id) of data directory `data`; not taken yet.
    pub fn new(remote: Remote, holder: &str, data: &Path, times: LeaseTimes) -> Arc<Lease> {
        let data = std::path::absolute(data).unwrap_or_else(|_| data.to_path_buf());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown".into());
        Arc::new(Lease {
            remote,
            times,
            mine: Mutex::new(Mine {
                record: LeaseRecord {
                    holder: holder.to_string(),
                    host,
                    pid: std::process::id(),
                    data: data.display().to_string(),
                    acquired: String::new(),
                    renewed: String::new(),
                    expires_ms: 0,
                    ttl_s: times.ttl.as_secs_f64(),
                    released: false,
                },
                version: None,
                held_until: None,
                lost: None,
                waiting: Some("the store's writer lease is not taken yet".into()),
            }),
            stop: (Mutex::new(false), Condvar::new()),
        })
    }

    fn mine(&self) -> std::sync::MutexGuard<'_, Mine> {
        self.mine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why this writer may not accept changesets now (None: it holds the lease).
    pub fn problem(&self) -> Option<String> {
        let m = self.mine();
        if let Some(lost) = &m.lost {
            return Some(lost.clone());
        }
        match m.held_until {
            Some(until) if Instant::now() < until => None,
            _ => Some(
                m.waiting
                    .clone()
                    .unwrap_or_else(|| "the store's writer lease lapsed".into()),
            ),
        }
    }

    /// The message of a lease another writer holds.
    pub fn held_by_message(&self, theirs: &LeaseRecord) -> String {
        format!(
            "another writer holds the writer lease of the store {} ({}/{LEASE_FILE}): {}, \
             renewed {}, expiring {} unless renewed. One writer per store prefix: stop that \
             writer (a clean stop releases the lease; a killed writer's lease expires {} s after \
             its last renewal), or publish to another prefix",
            self.remote.url(),
            self.remote.url().trim_end_matches('/'),
            theirs.describe(),
            theirs.renewed,
            theirs.expires_text(),
            theirs.ttl_s
        )
    }

    /// The record to write now (renewed, expiring a `ttl` ahead).
    fn fresh_record(&self, m: &Mine, taking: bool) -> LeaseRecord {
        let mut r = m.record.clone();
        let now = now_text();
        if taking || r.acquired.is_empty() {
            r.acquired = now.clone();
        }
        r.renewed = now;
        r.expires_ms = now_ms() + self.times.ttl.as_millis() as i64;
        r.released = false;
        r
    }

    async fn read(&self) -> Result<Option<(LeaseRecord, UpdateVersion)>> {
        let key = self.remote.key(LEASE_FILE);
        let (store, _) = self.remote.object_store();
        let got = match store.get(&key).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(store_error(&key, e)),
        };
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        let bytes = got.bytes().await.map_err(|e| store_error(&key, e))?;
        let record: LeaseRecord = serde_json::from_slice(&bytes).map_err(|e| {
            EngineError::corrupt(
                key.to_string(),
                format!(
                    "not a vegdb writer lease ({e}); remove it if no writer publishes to {}",
                    self.remote.url()
                ),
            )
        })?;
        Ok(Some((record, version)))
    }

    /// Write `record` conditionally; Ok(None) when the condition failed.
    async fn write(
        &self,
        record: &LeaseRecord,
        mode: PutMode,
    ) -> Result<Option<object_store::PutResult>> {
        let key = self.remote.key(LEASE_FILE);
        let (store, _) = self.remote.object_store();
        let body =
            serde_json::to_vec_pretty(record).map_err(|e| EngineError::Internal(e.to_string()))?;
        let update = matches!(mode, PutMode::Update(_));
        let opts = PutOptions {
            mode,
            ..Default::default()
        };
        match store.put_opts(&key, PutPayload::from(body), opts).await {
            Ok(r) => Ok(Some(r)),
            Err(object_store::Error::Precondition { .. })
            | Err(object_store::Error::AlreadyExists { .. }) => Ok(None),
            // an update of an object that is gone (a create finding nothing is a missing bucket)
            Err(object_store::Error::NotFound { .. }) if update => Ok(None),
            Err(e) => Err(store_error(&key, e)),
        }
    }

    fn now_held(
        &self,
        m: &mut Mine,
        record: LeaseRecord,
        put: object_store::PutResult,
        t0: Instant,
    ) {
        m.record = record;
        m.version = Some(UpdateVersion {
            e_tag: put.e_tag,
            version: put.version,
        });
        m.held_until = Some(t0 + self.times.hold_for());
        m.waiting = None;
    }

    /// Take the lease if it is free (absent, expired, released or this directory's own).
    pub async fn try_acquire(&self) -> Result<Taken> {
        if let Some(lost) = self.mine().lost.clone() {
            return Err(EngineError::input(lost));
        }
        for _ in 0..8 {
            let t0 = Instant::now();
            let found = self.read().await?;
            let (record, mode) = {
                let m = self.mine();
                match &found {
                    None => (self.fresh_record(&m, true), PutMode::Create),
                    Some((theirs, version)) => {
                        let own = theirs.holder == m.record.holder;
                        if !own && !theirs.free_at(now_ms()) {
                            return Ok(Taken::Theirs(theirs.clone()));
                        }
                        (
                            self.fresh_record(&m, true),
                            PutMode::Update(version.clone()),
                        )
                    }
                }
            };
            if let Some(put) = self.write(&record, mode).await? {
                let mut m = self.mine();
                self.now_held(&mut m, record, put, t0);
                tracing::info!(store = self.remote.url(), holder = %m.record.holder, "took the store's writer lease");
                return Ok(Taken::Ours);
            }
            // another writer wrote it between the read and the write: look again
        }
        Err(EngineError::input(format!(
            "the writer lease of {} kept changing while it was being taken",
            self.remote.url()
        )))
    }

    /// Renew the lease (held or lapsed). Err: the store could not be asked (try again);
    /// Ok(false): lost for good.
    pub async fn renew(&self) -> Result<bool> {
        let t0 = Instant::now();
        let (record, version) = {
            let m = self.mine();
            if m.lost.is_some() {
                return Ok(false);
            }
            let Some(v) = m.version.clone() else {
                return Err(EngineError::input("the writer lease is not taken"));
            };
            (self.fresh_record(&m, false), v)
        };
        if let Some(put) = self.write(&record, PutMode::Update(version)).await? {
            let mut m = self.mine();
            self.now_held(&mut m, record, put, t0);
            return Ok(true);
        }
        let why = match self.read().await {
            Ok(None) => format!(
                "the writer lease of {} was removed from the store",
                self.remote.url()
            ),
            Ok(Some((theirs, _))) => format!(
                "the writer lease of {} was taken over by {}",
                self.remote.url(),
                theirs.describe()
            ),
            Err(e) => format!(
                "the writer lease of {} was changed by someone else ({e})",
                self.remote.url()
            ),
        };
        let why = format!(
            "{why}: this writer accepts no changeset until it is restarted (it then waits for \
             the lease)"
        );
        tracing::error!(store = self.remote.url(), "{why}");
        let mut m = self.mine();
        m.lost = Some(why);
        m.held_until = None;
        m.version = None;
        Ok(false)
    }

    /// Give the lease up (rewritten as released, only if it is still our write).
    pub async fn release(&self) {
        let (record, version) = {
            let mut m = self.mine();
            let Some(v) = m.version.take() else { return };
            m.held_until = None;
            m.waiting = Some("the writer lease was released (shutting down)".into());
            let mut r = m.record.clone();
            r.released = true;
            r.renewed = now_text();
            r.expires_ms = now_ms();
            (r, v)
        };
        match self.write(&record, PutMode::Update(version)).await {
            Ok(Some(_)) => {
                tracing::info!(
                    store = self.remote.url(),
                    "released the store's writer lease"
                )
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(store = self.remote.url(), error = %e, "releasing the store's writer lease failed; it expires by itself")
            }
        }
    }

    /// Start the thread that renews the lease (and takes it, while it is not held yet).
    pub fn keep(self: &Arc<Self>) -> Result<()> {
        let rt = super::runtime()?;
        let lease = self.clone();
        std::thread::Builder::new()
            .name("vegdb-lease".into())
            .spawn(move || lease.run(rt))
            .map_err(|e| EngineError::Internal(format!("starting the lease thread: {e}")))?;
        Ok(())
    }

    fn stopped(&self, wait: Duration) -> bool {
        let Ok(stop) = self.stop.0.lock() else {
            return true;
        };
        if *stop {
            return true;
        }
        match self.stop.1.wait_timeout(stop, wait) {
            Ok((s, _)) => *s,
            Err(_) => true,
        }
    }

    fn run(self: Arc<Self>, rt: tokio::runtime::Runtime) {
        let renew = self.times.renew;
        // a request may take at most a renewal interval (the client would retry for minutes)
        let late = || EngineError::input("the store did not answer in time");
        let mut wait = renew;
        while !self.stopped(wait) {
            wait = renew;
            let taken = self.mine().version.is_some();
            if self.mine().lost.is_some() {
                return;
            }
            if taken {
                let renewed =
                    rt.block_on(async { tokio::time::timeout(renew, self.renew()).await });
                match renewed.unwrap_or_else(|_| Err(late())) {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        tracing::warn!(store = self.remote.url(), error = %e, "renewing the store's writer lease failed; trying again");
                        self.mine().waiting = Some(format!(
                            "the writer lease of {} could not be renewed ({e})",
                            self.remote.url()
                        ));
                        wait = renew / 2;
                    }
                }
            } else {
                let taken =
                    rt.block_on(async { tokio::time::timeout(renew, self.try_acquire()).await });
                let why = match taken.unwrap_or_else(|_| Err(late())) {
                    Ok(Taken::Ours) => continue,
                    Ok(Taken::Theirs(theirs)) => self.held_by_message(&theirs),
                    Err(e) => format!(
                        "the writer lease of {} could not be taken ({e})",
                        self.remote.url()
                    ),
                };
                self.mine().waiting = Some(why);
            }
        }
    }

    fn stop(&self) {
        if let Ok(mut s) = self.stop.0.lock() {
            *s = true;
            self.stop.1.notify_all();
        }
    }
}

impl Lease {
    /// Stop renewing the lease and release it (clean shutdown), within a few seconds.
    pub fn stop_and_release(&self) {
        let Ok(rt) = super::runtime() else { return };
        self.stop();
        let _ = rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), self.release()).await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::path::Path as Key;

    fn remote(store: &Arc<object_store::memory::InMemory>) -> Remote {
        Remote::with_store(store.clone(), Key::from("p"), "memory://b/p")
    }

    fn lease(store: &Arc<object_store::memory::InMemory>, holder: &str) -> Arc<Lease> {
        Lease::new(
            remote(store),
            holder,
            Path::new("/data"),
            LeaseTimes::new(2.0, 0.5).unwrap(),
        )
    }

    #[tokio::test]
    async fn one_holder_at_a_time_and_a_stolen_lease_is_lost() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let a = lease(&store, "a");
        let b = lease(&store, "b");
        assert!(a.problem().is_some(), "not held before it is taken");
        assert_eq!(a.try_acquire().await.unwrap(), Taken::Ours);
        assert_eq!(a.problem(), None);
        let Taken::Theirs(held) = b.try_acquire().await.unwrap() else {
            panic!("b took a held lease")
        };
        assert_eq!(held.holder, "a");
        assert!(b.held_by_message(&held).contains("writer a (host"));
        assert!(b.problem().is_some());
        // renewals keep it
        assert!(a.renew().await.unwrap());
        assert!(a.renew().await.unwrap());
        // the same data directory (a restart) takes its own lease at once
        let a2 = lease(&store, "a");
        assert_eq!(a2.try_acquire().await.unwrap(), Taken::Ours);
        // ... and the old process's next renewal finds it lost
        assert!(!a.renew().await.unwrap());
        let why = a.problem().unwrap();
        assert!(why.contains("taken over by writer a"), "{why}");
        // lost for good: a later renewal does not take it back
        assert!(!a.renew().await.unwrap());
        assert!(a.problem().is_some());
        assert_eq!(a2.problem(), None);
    }

    #[tokio::test]
    async fn a_removed_lease_is_lost_an_expired_or_released_one_is_free() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let a = lease(&store, "a");
        assert_eq!(a.try_acquire().await.unwrap(), Taken::Ours);
        store.delete(&a.remote.key(LEASE_FILE)).await.unwrap();
        assert!(!a.renew().await.unwrap());
        assert!(a.problem().unwrap().contains("was removed"));

        // an expired lease of another writer is taken over
        let b = lease(&store, "b");
        assert_eq!(b.try_acquire().await.unwrap(), Taken::Ours);
        let c = lease(&store, "c");
        assert!(matches!(c.try_acquire().await.unwrap(), Taken::Theirs(_)));
        let (mut rec, v) = b.read().await.unwrap().unwrap();
        rec.expires_ms = now_ms() - 1;
        b.write(&rec, PutMode::Update(v)).await.unwrap().unwrap();
        assert_eq!(c.try_acquire().await.unwrap(), Taken::Ours);
        assert!(!b.renew().await.unwrap(), "b's lease was taken over");

        // a released lease is free at once
        c.release().await;
        assert!(c.problem().is_some());
        let d = lease(&store, "d");
        assert_eq!(d.try_acquire().await.unwrap(), Taken::Ours);
    }

    #[test]
    fn lease_times_are_checked() {
        assert!(LeaseTimes::new(30.0, 10.0).is_ok());
        assert!(LeaseTimes::new(30.0, 20.0).is_err());
        assert!(LeaseTimes::new(0.0, 0.0).is_err());
        assert!(LeaseTimes::new(f64::NAN, 1.0).is_err());
        let t = LeaseTimes::default();
        assert_eq!(t.hold_for(), Duration::from_secs(20));
    }
}
