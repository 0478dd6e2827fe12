//! The writer's publishing to a store (`vegdb serve --publish-to URL`): a thread that uploads
//! the data directory's CURRENT generation whenever it is newer than the store's (woken by
//! the writer after each publish, and every `POLL` anyway), moves the store's CURRENT
//! conditionally, then removes the store's old generations.
//!
//! The local data directory stays the writer's truth: a changeset is accepted once its
//! generation is published locally (fsynced, as without a store), and its journal entry stays
//! on the local disk until a generation at least as new is in the store (`published`, which
//! the journal's retention respects). A writer killed during an upload uploads again at start
//! (files already there are kept; the claim is its own); the store's CURRENT only ever names a
//! generation whose manifest — uploaded after all its files — is there.
//!
//! Retention in the store: the `keep` newest complete generations up to CURRENT stay, every
//! older generation prefix is removed. A replica that read CURRENT = G and loads G has until
//! `keep` further generations are published to finish its downloads.
//!
//! Ownership: the store's CURRENT must be a generation this data directory published
//! (`<data>/PUBLISHED.json` names the last one) or one it has identically; otherwise another
//! writer owns the store and this one refuses to publish there (a conditional write guards
//! the race itself).
//!
//! One writer per prefix: the publisher takes the store's writer lease (`lease`) before the
//! server starts its writer, refuses to start while another writer holds it (naming it), keeps
//! it renewed, and uploads nothing while it does not hold it (the writer then accepts no
//! changeset, `Writer::store_problem`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::lease::{Lease, LeaseTimes, Taken};
use super::push::{upload_generation, writer_id, PushError, PushReport};
use super::{Current, Remote};
use crate::error::{EngineError, Result};
use crate::snapshot::manifest::Manifest;
use crate::snapshot::store::{generation_id, DataDir};

/// Generations kept in the store by default (`--store-keep`).
pub const DEFAULT_KEEP: usize = 5;
/// Look at the local CURRENT at least this often.
pub const POLL: Duration = Duration::from_secs(1);
/// How long `serve` waits at start for the store to confirm this writer owns it.
pub const START_CHECK: Duration = Duration::from_secs(15);
/// The record of the last generation published to a store.
pub const PUBLISHED_FILE: &str = "PUBLISHED.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Published {
    url: String,
    generation: u64,
}

/// What the publisher is doing (for `/status` and the tests).
#[derive(Debug, Clone, Default)]
pub struct PublisherStatus {
    /// The newest local generation known to be in the store (0: none yet).
    pub published: u64,
    /// The last failure, cleared by the next success.
    pub last_error: Option<String>,
    /// The last upload's report.
    pub last_upload: Option<PushReport>,
}

pub struct Publisher {
    remote: Remote,
    data: DataDir,
    writer: String,
    keep: usize,
    published: Arc<AtomicU64>,
    status: Mutex<PublisherStatus>,
    wake: (Mutex<bool>, Condvar),
    lease: Arc<Lease>,
}

impl Publisher {
    /// Take the store's writer lease and check that this data directory may publish to `remote`
    /// (fails when another writer holds the lease or owns the store; an unreachable store is
    /// only logged, the lease is then taken once it answers), then start the lease's renewal
    /// and the upload thread.
    pub fn start(
        data: DataDir,
        remote: Remote,
        keep: usize,
        lease_times: LeaseTimes,
    ) -> Result<Arc<Publisher>> {
        let writer = writer_id(&data.root)?;
        let recorded = read_published(&data, remote.url())?;
        let lease = Lease::new(remote.clone(), &writer, &data.root, lease_times);
        let p = Arc::new(Publisher {
            lease,
            remote,
            data,
            writer,
            keep: keep.max(1),
            published: Arc::new(AtomicU64::new(recorded.unwrap_or(0))),
            status: Mutex::new(PublisherStatus {
                published: recorded.unwrap_or(0),
                ..Default::default()
            }),
            wake: (Mutex::new(false), Condvar::new()),
        });
        let rt = super::runtime()?;
        // bounded: an unreachable store must not hold the server's start (its client retries
        // for minutes)
        let checked = rt.block_on(async {
            tokio::time::timeout(START_CHECK, async {
                if let Taken::Theirs(holder) = p.lease.try_acquire().await? {
                    return Err(PushError::Conflict(p.lease.held_by_message(&holder)));
                }
                let current = p.remote.current().await?;
                let owned = p.check_owner(current.as_ref()).await;
                if owned.is_err() {
                    p.lease.release().await;
                }
                owned
            })
            .await
        });
        match checked {
            Ok(Ok(())) => {}
            Ok(Err(PushError::Conflict(m))) => return Err(EngineError::input(m)),
            Ok(Err(PushError::Engine(e))) => {
                tracing::warn!(store = p.remote.url(), error = %e, "the store is not reachable now; publishing when it is")
            }
            Err(_) => {
                tracing::warn!(
                    store = p.remote.url(),
                    "the store did not answer within {} s; publishing when it does",
                    START_CHECK.as_secs()
                )
            }
        }
        p.lease.keep()?;
        let q = p.clone();
        std::thread::Builder::new()
            .name("vegdb-publisher".into())
            .spawn(move || q.run(rt))
            .map_err(|e| EngineError::Internal(format!("starting the publisher thread: {e}")))?;
        Ok(p)
    }

    /// The newest local generation in the store, shared with the journal's retention.
    pub fn published_watermark(&self) -> Arc<AtomicU64> {
        self.published.clone()
    }

    pub fn status(&self) -> PublisherStatus {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// Stop renewing the store's writer lease and release it (a clean stop: the next writer
    /// need not wait it out).
    pub fn release_lease(&self) {
        self.lease.stop_and_release();
    }

    /// Why the writer may not accept changesets now: it does not hold the store's writer lease
    /// (None: it does).
    pub fn lease_problem(&self) -> Option<String> {
        self.lease.problem()
    }

    /// A new local generation is there: upload it now.
    pub fn notify(&self) {
        if let Ok(mut w) = self.wake.0.lock() {
            *w = true;
            self.wake.1.notify_all();
        }
    }

    fn run(self: Arc<Self>, rt: tokio::runtime::Runtime) {
        let mut failures = 0u32;
        loop {
            let result = rt.block_on(self.sync_once());
            let delay = match result {
                Ok(_) => {
                    failures = 0;
                    POLL
                }
                Err(e) => {
                    failures += 1;
                    tracing::warn!(store = self.remote.url(), error = %e, "publishing to the store failed; trying again");
                    if let Ok(mut s) = self.status.lock() {
                        s.last_error = Some(e.to_string());
                    }
                    // 1, 2, 4 … 30 s
                    Duration::from_secs((1u64 << failures.min(5)).min(30))
                }
            };
            let Ok(mut woken) = self.wake.0.lock() else {
                return;
            };
            if !*woken {
                woken = match self.wake.1.wait_timeout(woken, delay) {
                    Ok((w, _)) => w,
                    Err(_) => return,
                };
            }
            *woken = false;
        }
    }

    /// Upload the local CURRENT if the store's is older; then collect the store's garbage.
    /// Returns the upload's report (None when there was nothing to upload).
    pub async fn sync_once(&self) -> std::result::Result<Option<PushReport>, PushError> {
        if let Some(why) = self.lease.problem() {
            return Err(PushError::Conflict(why));
        }
        let Some(local) = self.data.current()? else {
            return Ok(None);
        };
        let current = self.remote.current().await?;
        self.check_owner(current.as_ref()).await?;
        if current.as_ref().is_some_and(|c| c.generation >= local) {
            self.mark_published(local.min(current.map_or(0, |c| c.generation)))?;
            return Ok(None);
        }
        let Some(pin) = self.data.pin(local)? else {
            return Ok(None); // replaced meanwhile: the next round takes the newer one
        };
        let id = generation_id(&pin.dir).unwrap_or(local);
        let report =
            upload_generation(&self.remote, &pin.dir, id, &self.writer, current.as_ref()).await?;
        drop(pin);
        self.mark_published(id)?;
        tracing::info!(
            store = self.remote.url(),
            generation = id,
            uploaded = report.uploaded,
            copied = report.copied,
            bytes = report.uploaded_bytes,
            "generation published to the store"
        );
        if let Ok(mut s) = self.status.lock() {
            s.last_upload = Some(report.clone());
        }
        if let Err(e) = collect_garbage(&self.remote, self.keep).await {
            tracing::warn!(store = self.remote.url(), error = %e, "removing old generations from the store failed");
        }
        Ok(Some(report))
    }

    /// The store's CURRENT is one this directory published, or absent.
    async fn check_owner(&self, current: Option<&Current>) -> std::result::Result<(), PushError> {
        let Some(c) = current else { return Ok(()) };
        if read_published(&self.data, self.remote.url())? == Some(c.generation) {
            return Ok(());
        }
        // published by this directory (or `snapshot push`/`pull`) but not recorded yet: the
        // same manifest on both sides
        if let Some(pin) = self.data.pin(c.generation)? {
            let ours = Manifest::read(&pin.dir)?;
            if let Some(theirs) = self.remote.manifest(c.generation).await? {
                if theirs == ours {
                    return Ok(());
                }
            }
        }
        Err(PushError::Conflict(format!(
            "the store {} is at generation {}, which {} did not publish: another writer owns \
             it (start from it with `vegdb snapshot pull`, or publish to another prefix)",
            self.remote.url(),
            c.generation,
            self.data.root.display()
        )))
    }

    fn mark_published(&self, id: u64) -> Result<()> {
        if read_published(&self.data, self.remote.url())? != Some(id) {
            let record = Published {
                url: self.remote.url().to_string(),
                generation: id,
            };
            let bytes =
                serde_json::to_vec(&record).map_err(|e| EngineError::Internal(e.to_string()))?;
            crate::durable::write_renamed(&self.data.root.join(PUBLISHED_FILE), &bytes)?;
            crate::durable::fsync_dir(&self.data.root)?;
        }
        self.published.fetch_max(id, Ordering::SeqCst);
        if let Ok(mut s) = self.status.lock() {
            s.published = self.published.load(Ordering::SeqCst);
            s.last_error = None;
        }
        Ok(())
    }

    /// Wait until generation `id` (or a newer one) is in the store (tests, shutdown).
    pub fn wait_published(&self, id: u64, timeout: Duration) -> bool {
        let until = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < until {
            if self.published.load(Ordering::SeqCst) >= id {
                return true;
            }
            self.notify();
            std::thread::sleep(Duration::from_millis(20));
        }
        self.published.load(Ordering::SeqCst) >= id
    }
}

fn read_published(data: &DataDir, url: &str) -> Result<Option<u64>> {
    let path: PathBuf = data.root.join(PUBLISHED_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            let p: Published = serde_json::from_slice(&bytes)
                .map_err(|e| EngineError::corrupt(&path, e.to_string()))?;
            Ok((p.url == url).then_some(p.generation))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EngineError::io(&path, e)),
    }
}

/// The store's retention: keep the `keep` newest complete generations up to CURRENT and
/// remove every older generation prefix (complete or an abandoned upload). Prefixes newer
/// than CURRENT (uploads under way) are never touched. Returns the removed ids.
pub async fn collect_garbage(remote: &Remote, keep: usize) -> Result<Vec<u64>> {
    let Some(current) = remote.current().await? else {
        return Ok(Vec::new());
    };
    let prefixes = remote.generation_prefixes().await?;
    let mut complete = Vec::new();
    for &id in prefixes
        .iter()
        .rev()
        .filter(|&&id| id <= current.generation)
    {
        if complete.len() == keep.max(1) {
            break;
        }
        if remote.has_manifest(id).await? {
            complete.push(id);
        }
    }
    let Some(&oldest_kept) = complete.last() else {
        return Ok(Vec::new());
    };
    if complete.len() < keep.max(1) {
        return Ok(Vec::new());
    }
    let mut removed = Vec::new();
    for id in prefixes.into_iter().filter(|&id| id < oldest_kept) {
        remote.remove_generation(id).await?;
        removed.push(id);
    }
    Ok(removed)
}
