//! What stays on disk: readers pin generations (a shared lock on the manifest), and the
//! owner's garbage collection removes the others (rename to `*.deleted`, then delete), never
//! one that is pinned or CURRENT.

use std::fs;
use std::path::PathBuf;

use super::{generation_name, DataDir};
use crate::durable::fsync_dir;
use crate::error::{EngineError, Result};
use crate::snapshot::manifest::MANIFEST_FILE;

/// Generations the owner keeps on disk besides the current one (its garbage collection).
pub const KEEP_OLD_GENERATIONS: usize = 1;

/// A generation pinned by a reader: the owner does not remove it while this lives.
#[derive(Debug)]
pub struct Pinned {
    pub dir: PathBuf,
    _manifest: fs::File,
}

impl DataDir {
    /// Remove a generation that never became CURRENT (an installed hand-off that failed to load).
    pub fn remove_generation(&self, id: u64) -> Result<()> {
        self.ensure_owner("removing a generation")?;
        if self.current()? == Some(id) {
            return Err(EngineError::Internal(format!(
                "generation {id} is CURRENT and stays"
            )));
        }
        let dir = self.generation_dir(id);
        let doomed = self.root.join(format!("{}.deleted", generation_name(id)));
        fs::rename(&dir, &doomed).map_err(|e| EngineError::io(&dir, e))?;
        fsync_dir(&self.root)?;
        fs::remove_dir_all(&doomed).map_err(|e| EngineError::io(&doomed, e))
    }
    /// Pin generation `id` for reading (no writes: a shared lock on its manifest, which the
    /// owner's garbage collection respects). None when it is gone or being removed.
    pub fn pin(&self, id: u64) -> Result<Option<Pinned>> {
        let dir = self.generation_dir(id);
        let path = dir.join(MANIFEST_FILE);
        let file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(EngineError::io(&path, e)),
        };
        match file.try_lock_shared() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Ok(None),
            Err(fs::TryLockError::Error(e)) => return Err(EngineError::io(&path, e)),
        }
        // the owner renames a generation away only while holding the lock exclusively
        if !path.exists() {
            return Ok(None);
        }
        Ok(Some(Pinned {
            dir,
            _manifest: file,
        }))
    }

    /// Pin `generation`, or CURRENT (following it when the owner moves on meanwhile).
    pub fn pin_current_or(&self, generation: Option<u64>) -> Result<Pinned> {
        for _ in 0..50 {
            let id = match generation {
                Some(g) => g,
                None => self.current()?.ok_or_else(|| {
                    EngineError::NotFound(format!(
                        "{} has no CURRENT generation",
                        self.root.display()
                    ))
                })?,
            };
            if let Some(p) = self.pin(id)? {
                return Ok(p);
            }
            if generation.is_some() {
                return Err(EngineError::NotFound(format!(
                    "generation {id} is not in {}",
                    self.root.display()
                )));
            }
        }
        Err(EngineError::Internal(format!(
            "the current generation of {} kept changing",
            self.root.display()
        )))
    }

    /// The owner's retention: remove every generation but CURRENT and the
    /// `KEEP_OLD_GENERATIONS` before it, with the rules of [`DataDir::collect_garbage`].
    /// Returns how many were removed.
    pub fn collect_old_generations(&self) -> Result<usize> {
        let mut ids = self.generations()?;
        let current = self.current()?.unwrap_or(0);
        ids.retain(|&g| g <= current);
        let keep: Vec<u64> = ids
            .iter()
            .rev()
            .take(KEEP_OLD_GENERATIONS + 1)
            .copied()
            .collect();
        self.collect_garbage(&keep)
    }

    /// Remove generations other than `keep` (rename to *.deleted first, then delete).
    pub fn collect_garbage(&self, keep: &[u64]) -> Result<usize> {
        self.ensure_owner("removing generations")?;
        let mut removed = 0;
        for id in self.generations()? {
            if keep.contains(&id) {
                continue;
            }
            let dir = self.generation_dir(id);
            // a reader (snapshot verify, load) pins a generation with a shared lock on its
            // manifest: such a generation stays until a later collection
            let manifest_path = dir.join(MANIFEST_FILE);
            let manifest =
                fs::File::open(&manifest_path).map_err(|e| EngineError::io(&manifest_path, e))?;
            match manifest.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    tracing::debug!(generation = id, "kept: a reader holds it");
                    continue;
                }
                Err(fs::TryLockError::Error(e)) => return Err(EngineError::io(&manifest_path, e)),
            }
            let doomed = self.root.join(format!("{}.deleted", generation_name(id)));
            fs::rename(&dir, &doomed).map_err(|e| EngineError::io(&dir, e))?;
            drop(manifest);
            fsync_dir(&self.root)?;
            fs::remove_dir_all(&doomed).map_err(|e| EngineError::io(&doomed, e))?;
            removed += 1;
        }
        Ok(removed)
    }
}
