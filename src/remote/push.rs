//! Copying generations between a local data directory and a store: `vegdb snapshot push`
//! (and the writer's publishing, `publisher`) and `vegdb snapshot pull`.
//!
//! Upload order, so that a crash at any point leaves the store consistent: claim the
//! generation's prefix (`WRITER`, create-only), then its files (only those not there yet;
//! those an earlier generation in the store holds are copied inside the store), then
//! `MANIFEST.json`, then `CURRENT` (conditional). A generation without a manifest is
//! incomplete and never current; running the upload again completes it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use futures_util::{StreamExt, TryStreamExt};

use super::{Claim, Counts, Current, Remote, CONCURRENT_TRANSFERS};
use crate::error::{EngineError, Result};
use crate::failpoints::fail_point;
use crate::snapshot::manifest::{FileEntry, Manifest, MANIFEST_FILE};
use crate::snapshot::store::DataDir;

/// What an upload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushReport {
    pub generation: u64,
    /// Files sent to the store.
    pub uploaded: usize,
    pub uploaded_bytes: u64,
    /// Files copied inside the store from an earlier generation.
    pub copied: usize,
    /// Files already in place (an interrupted upload's, or the whole generation was there).
    pub present: usize,
    /// Whether CURRENT was moved to the generation.
    pub made_current: bool,
    /// Requests and bytes of the whole operation.
    pub counts: Counts,
}

/// What a download did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullReport {
    pub generation: u64,
    pub downloaded: usize,
    pub downloaded_bytes: u64,
    /// Files taken from generations already in the data directory (hard links).
    pub linked: usize,
    /// Whether the generation was already there (nothing downloaded).
    pub already_there: bool,
    pub counts: Counts,
}

/// Why an upload did not move CURRENT.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// Another writer holds the generation's prefix or moved CURRENT first.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The id a data directory uploads under (its claims in stores): `<data>/WRITER-ID`, a random
/// UUID made on first use.
pub fn writer_id(data: &Path) -> Result<String> {
    let path = data.join("WRITER-ID");
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => return Ok(s.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(EngineError::io(&path, e)),
    }
    let id = uuid::Uuid::new_v4().to_string();
    let stored = crate::durable::write_renamed(&path, format!("{id}\n").as_bytes())
        .and_then(|_| crate::durable::fsync_dir(data));
    match stored {
        Ok(()) => Ok(id),
        // a directory this process may not write (a read-only copy being pushed): an id of
        // its path, the same for every push of it
        Err(_) => {
            use sha2::Digest;
            let path = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
            let digest = sha2::Sha256::digest(path.to_string_lossy().as_bytes());
            Ok(format!("path-{}", &crate::util::hex(&digest)[..32]))
        }
    }
}

/// Where each file content (by SHA-256) already lies in the store: (generation, path), from
/// the manifests of the store's complete generations.
async fn store_contents(remote: &Remote, skip: u64) -> Result<HashMap<String, (u64, String)>> {
    let mut out = HashMap::new();
    for id in remote.generation_prefixes().await?.into_iter().rev() {
        if id == skip {
            continue;
        }
        if let Some(m) = remote.manifest(id).await? {
            for f in m.files {
                out.entry(f.sha256).or_insert((id, f.path));
            }
        }
    }
    Ok(out)
}

/// Upload generation `id` from `dir` (its MANIFEST.json and files) and move CURRENT to it if
/// CURRENT is older (conditionally on `expected`, the CURRENT read before: Conflict when
/// another writer moved it meanwhile). `writer` is the claim id (`writer_id`).
pub async fn upload_generation(
    remote: &Remote,
    dir: &Path,
    id: u64,
    writer: &str,
    expected: Option<&Current>,
) -> std::result::Result<PushReport, PushError> {
    let before = remote.stats.counts();
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest_bytes =
        std::fs::read(&manifest_path).map_err(|e| EngineError::io(&manifest_path, e))?;
    let manifest = Manifest::parse(&manifest_path, &String::from_utf8_lossy(&manifest_bytes))?;
    let mut report = PushReport {
        generation: id,
        ..Default::default()
    };
    match remote.manifest(id).await? {
        Some(there) if there == manifest => {
            report.present = manifest.files.len();
        }
        Some(_) => {
            return Err(PushError::Conflict(format!(
                "generation {id} in {} is a different generation than the one in {} (another \
                 writer published it)",
                remote.url(),
                dir.display()
            )))
        }
        None => {
            if let Claim::Theirs(other) = remote.claim(id, writer).await? {
                return Err(PushError::Conflict(format!(
                    "generation {id} in {} is being uploaded by another writer ({other})",
                    remote.url()
                )));
            }
            let present = remote.list_generation(id).await?;
            let known = store_contents(remote, id).await?;
            enum Step<'a> {
                Upload(&'a FileEntry),
                Copy(&'a FileEntry, u64, String),
            }
            let mut steps = Vec::new();
            for f in &manifest.files {
                if present.get(&f.path) == Some(&f.bytes) {
                    report.present += 1;
                } else if let Some((from, path)) = known.get(&f.sha256) {
                    steps.push(Step::Copy(f, *from, path.clone()));
                } else {
                    steps.push(Step::Upload(f));
                }
            }
            for s in &steps {
                match s {
                    Step::Upload(f) => {
                        report.uploaded += 1;
                        report.uploaded_bytes += f.bytes;
                    }
                    Step::Copy(..) => report.copied += 1,
                }
            }
            let done = std::sync::atomic::AtomicUsize::new(0);
            futures_util::stream::iter(steps)
                .map(|s| {
                    let done = &done;
                    async move {
                        match s {
                            Step::Upload(f) => {
                                remote.upload_file(id, f, &dir.join(&f.path)).await?
                            }
                            Step::Copy(f, from, path) => {
                                remote.copy_file(from, id, &path, &f.path).await?
                            }
                        }
                        if done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                            fail_point("store-after-first-file");
                        }
                        Ok::<(), EngineError>(())
                    }
                })
                .buffer_unordered(CONCURRENT_TRANSFERS)
                .try_collect::<Vec<()>>()
                .await?;
            fail_point("store-before-manifest");
            remote
                .put_raw(&remote.file_key(id, MANIFEST_FILE), manifest_bytes.into())
                .await?;
        }
    }
    fail_point("store-before-current");
    if expected.is_none_or(|c| c.generation < id) {
        if !remote.set_current(expected, id).await? {
            return Err(PushError::Conflict(format!(
                "CURRENT of {} was moved by another writer while generation {id} was uploaded",
                remote.url()
            )));
        }
        report.made_current = true;
        fail_point("store-after-current");
    }
    report.counts = diff(remote.stats.counts(), before);
    Ok(report)
}

fn diff(a: Counts, b: Counts) -> Counts {
    Counts {
        puts: a.puts - b.puts,
        copies: a.copies - b.copies,
        gets: a.gets - b.gets,
        deletes: a.deletes - b.deletes,
        bytes_up: a.bytes_up - b.bytes_up,
        bytes_down: a.bytes_down - b.bytes_down,
    }
}

/// `vegdb snapshot push`: upload generation `generation` (default CURRENT) of `data` to the
/// store and make it the store's CURRENT unless the store's is newer.
pub async fn push(
    data: &DataDir,
    remote: &Remote,
    generation: Option<u64>,
) -> std::result::Result<PushReport, PushError> {
    let pinned = data.pin_current_or(generation)?;
    let id = crate::snapshot::store::generation_id(&pinned.dir).ok_or_else(|| {
        EngineError::Internal(format!("{} is not a generation", pinned.dir.display()))
    })?;
    let writer = writer_id_for(data)?;
    let current = remote.current().await?;
    upload_generation(remote, &pinned.dir, id, &writer, current.as_ref()).await
}

/// The claim id of a data directory; a directory this process may not write into (another
/// process owns it) still has one once its owner has uploaded.
fn writer_id_for(data: &DataDir) -> Result<String> {
    writer_id(&data.root)
}

/// `vegdb snapshot pull`: download generation `generation` (default the store's CURRENT) into
/// `data` (its owner) and make it CURRENT there. Files a generation of `data` already has
/// (same SHA-256) are hard-linked, the others downloaded and checked.
pub async fn pull(data: &DataDir, remote: &Remote, generation: Option<u64>) -> Result<PullReport> {
    let before = remote.stats.counts();
    let id = match generation {
        Some(g) => g,
        None => {
            remote
                .current()
                .await?
                .ok_or_else(|| {
                    EngineError::NotFound(format!("{} has no CURRENT generation", remote.url()))
                })?
                .generation
        }
    };
    let manifest = remote.manifest(id).await?.ok_or_else(|| {
        EngineError::NotFound(format!(
            "generation {id} is not (completely) in {}",
            remote.url()
        ))
    })?;
    let mut report = PullReport {
        generation: id,
        ..Default::default()
    };
    let local = data.generations()?;
    if local.contains(&id) {
        let there = Manifest::read(&data.generation_dir(id))?;
        if there.files != manifest.files {
            return Err(EngineError::input(format!(
                "generation {id} of {} differs from generation {id} of {}",
                data.root.display(),
                remote.url()
            )));
        }
        if data.current()?.is_none_or(|c| c < id) {
            data.make_current(id)?;
        }
        report.already_there = true;
        report.counts = diff(remote.stats.counts(), before);
        return Ok(report);
    }
    if let Some(newest) = local.last().copied().max(data.current()?) {
        if newest > id {
            return Err(EngineError::input(format!(
                "{} already has generation {newest}, newer than generation {id} of {}",
                data.root.display(),
                remote.url()
            )));
        }
    }
    // contents the directory already has
    let mut have: HashMap<String, PathBuf> = HashMap::new();
    for g in local.iter().rev() {
        let Some(pin) = data.pin(*g)? else { continue };
        let m = Manifest::read(&pin.dir)?;
        for f in m.files {
            have.entry(f.sha256).or_insert(pin.dir.join(&f.path));
        }
    }
    let mut staging = data.begin(id)?;
    let mut fetch = Vec::new();
    for f in &manifest.files {
        let dst = staging.dir.join(&f.path);
        if let Some(src) = have.get(&f.sha256) {
            if let Some(p) = dst.parent() {
                std::fs::create_dir_all(p).map_err(|e| EngineError::io(p, e))?;
            }
            if std::fs::hard_link(src, &dst).is_err() {
                std::fs::copy(src, &dst).map_err(|e| EngineError::io(src, e))?;
                std::fs::File::open(&dst)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| EngineError::io(&dst, e))?;
            }
            report.linked += 1;
        } else {
            report.downloaded += 1;
            report.downloaded_bytes += f.bytes;
            fetch.push((f, dst));
        }
    }
    futures_util::stream::iter(fetch)
        .map(|(f, dst)| async move { remote.download_file(id, f, &dst).await })
        .buffer_unordered(CONCURRENT_TRANSFERS)
        .try_collect::<Vec<()>>()
        .await?;
    staging.files = manifest.files.clone();
    data.publish(staging, manifest)?;
    report.counts = diff(remote.stats.counts(), before);
    Ok(report)
}
