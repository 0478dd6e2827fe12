//! Where a replica reads generations from: a store location (a local or NFS directory laid
//! out as a data directory, or an object store URL). The replica asks only three things of
//! it: which generation `CURRENT` names, a generation's manifest, and a file of it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{EngineError, Result};
use crate::snapshot::manifest::{FileEntry, Manifest};
use crate::snapshot::store::{DataDir, CURRENT_FILE};

/// What `CURRENT` of a store says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The generation it names.
    pub generation: u64,
    /// When it was last written, by the store's clock (None: the store does not say).
    pub modified: Option<SystemTime>,
}

/// A followed store. Calls block (the follower runs on a thread of its own) and may be made
/// from several threads at once (chunk downloads run in parallel).
pub trait Source: Send + Sync {
    /// The location, for logs and `/status`.
    fn describe(&self) -> String;
    /// The generation CURRENT names and when it moved there (None: the store has none yet).
    fn current(&self) -> Result<Option<Head>>;
    /// Generation `id`'s manifest (read and checked like a local one).
    fn manifest(&self, id: u64) -> Result<Manifest>;
    /// Copy the file `entry` of generation `id` to `dest` (a new file).
    fn fetch(&self, id: u64, entry: &FileEntry, dest: &Path) -> Result<()>;
    /// Whether `fetch` itself checks size and SHA-256 against the entry (then the cache
    /// does not hash the file a second time).
    fn verifies(&self) -> bool {
        false
    }
}

/// A store in a directory of the file system (local or NFS), laid out as a data directory:
/// `CURRENT`, `gen-NNNNNN/MANIFEST.json`, the generation's files beside it.
#[derive(Debug, Clone)]
pub struct DirSource {
    data: DataDir,
}

impl DirSource {
    pub fn new(root: impl Into<PathBuf>) -> DirSource {
        DirSource {
            data: DataDir::read_only(root),
        }
    }
}

impl Source for DirSource {
    fn describe(&self) -> String {
        self.data.root.display().to_string()
    }

    fn current(&self) -> Result<Option<Head>> {
        let Some(generation) = self.data.current()? else {
            return Ok(None);
        };
        // the owner replaces CURRENT by a rename: its modification time is the move
        let modified = std::fs::metadata(self.data.root.join(CURRENT_FILE))
            .and_then(|m| m.modified())
            .ok();
        Ok(Some(Head {
            generation,
            modified,
        }))
    }

    fn manifest(&self, id: u64) -> Result<Manifest> {
        Manifest::read(&self.data.generation_dir(id))
    }

    fn fetch(&self, id: u64, entry: &FileEntry, dest: &Path) -> Result<()> {
        // pinned while copying, so the directory's owner does not remove it meanwhile
        let pinned = self.data.pin(id)?.ok_or_else(|| {
            EngineError::NotFound(format!(
                "generation {id} is no longer in {}",
                self.data.root.display()
            ))
        })?;
        let src = pinned.dir.join(&entry.path);
        std::fs::copy(&src, dest).map_err(|e| EngineError::io(&src, e))?;
        Ok(())
    }
}
