//! The data directory: generations, the CURRENT pointer, crash-safe publishing and cleanup.
//!
//! ```text
//! <data>/gen-000042/   *.parquet + MANIFEST.json   (immutable once renamed into place)
//! <data>/CURRENT       active generation id
//! <data>/.tmp-*        in-progress builds, removed at startup
//! <data>/*.deleted     being removed, ignored by loaders
//! ```
//! Publishing: build in `.tmp-<id>/` with every file fsynced; write MANIFEST.json last and
//! fsync it; rename the directory to `gen-<id>`; fsync the data dir; replace CURRENT through a
//! temp file + rename + fsync. Only then may the caller swap the in-memory generation.

use std::fs;
use std::path::{Path, PathBuf};

use super::manifest::{FileEntry, Manifest, MANIFEST_FILE};
use crate::durable::{fsync_dir, write_durably};
use crate::error::{EngineError, Result};

pub const CURRENT_FILE: &str = "CURRENT";

/// Named points between publishing steps. A test sets `VEGDB_FAIL_AT=<name>` to make the
/// process abort there, and then checks what a restart sees.
pub fn fail_point(name: &str) {
    if std::env::var("VEGDB_FAIL_AT").is_ok_and(|v| v == name) {
        eprintln!("fail point {name}: aborting");
        std::process::abort();
    }
}

pub fn generation_name(id: u64) -> String {
    format!("gen-{id:06}")
}

/// A generation being built in a temporary directory.
#[derive(Debug)]
pub struct Staging {
    pub id: u64,
    pub dir: PathBuf,
    pub files: Vec<FileEntry>,
}

impl Staging {
    /// Share an unchanged file of the parent generation (hard link, copy where links fail).
    pub fn share_from(&mut self, parent_dir: &Path, entry: &FileEntry) -> Result<()> {
        let src = parent_dir.join(&entry.path);
        let dst = self.dir.join(&entry.path);
        if let Some(p) = dst.parent() {
            fs::create_dir_all(p).map_err(|e| EngineError::io(p, e))?;
        }
        if fs::hard_link(&src, &dst).is_err() {
            fs::copy(&src, &dst).map_err(|e| EngineError::io(&src, e))?;
            fs::File::open(&dst)
                .and_then(|f| f.sync_all())
                .map_err(|e| EngineError::io(&dst, e))?;
        }
        self.files.push(entry.clone());
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct DataDir {
    pub root: PathBuf,
}

impl DataDir {
    /// A data directory to read only (the committed demo): no cleanup, nothing created.
    pub fn read_only(root: impl Into<PathBuf>) -> DataDir {
        DataDir { root: root.into() }
    }

    /// Open (creating if needed) a data directory and remove leftovers of interrupted work.
    pub fn open(root: impl Into<PathBuf>) -> Result<DataDir> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| EngineError::io(&root, e))?;
        let d = DataDir { root };
        d.remove_leftovers()?;
        Ok(d)
    }

    fn remove_leftovers(&self) -> Result<()> {
        for entry in fs::read_dir(&self.root).map_err(|e| EngineError::io(&self.root, e))? {
            let entry = entry.map_err(|e| EngineError::io(&self.root, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with(".tmp-") || name.ends_with(".deleted") {
                let p = entry.path();
                fs::remove_dir_all(&p).map_err(|e| EngineError::io(&p, e))?;
            }
        }
        Ok(())
    }

    pub fn generation_dir(&self, id: u64) -> PathBuf {
        self.root.join(generation_name(id))
    }

    /// The generation CURRENT names, if any.
    pub fn current(&self) -> Result<Option<u64>> {
        let path = self.root.join(CURRENT_FILE);
        match fs::read_to_string(&path) {
            Ok(text) => text.trim().parse().map(Some).map_err(|_| {
                EngineError::corrupt(&path, format!("CURRENT holds '{}'", text.trim()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(EngineError::io(&path, e)),
        }
    }

    /// Ids of all complete generation directories, ascending.
    pub fn generations(&self) -> Result<Vec<u64>> {
        let mut ids = Vec::new();
        for entry in fs::read_dir(&self.root).map_err(|e| EngineError::io(&self.root, e))? {
            let entry = entry.map_err(|e| EngineError::io(&self.root, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(id) = name
                .strip_prefix("gen-")
                .and_then(|s| s.parse::<u64>().ok())
            {
                if entry.path().join(MANIFEST_FILE).exists() {
                    ids.push(id);
                }
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    pub fn next_id(&self) -> Result<u64> {
        Ok(self
            .generations()?
            .last()
            .copied()
            .unwrap_or(0)
            .max(self.current()?.unwrap_or(0))
            + 1)
    }

    /// Start building generation `id`.
    pub fn begin(&self, id: u64) -> Result<Staging> {
        let dir = self.root.join(format!(".tmp-{}", generation_name(id)));
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        }
        fs::create_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        Ok(Staging {
            id,
            dir,
            files: Vec::new(),
        })
    }

    /// Steps 2-4 of publishing: manifest, rename, CURRENT. Returns the generation directory.
    pub fn publish(&self, staging: Staging, mut manifest: Manifest) -> Result<PathBuf> {
        manifest.generation = staging.id;
        manifest.files = staging.files;
        manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
        for sub in ["network", "objects"] {
            let p = staging.dir.join(sub);
            if p.exists() {
                fsync_dir(&p)?;
            }
        }
        fail_point("before-manifest");
        let text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        write_durably(&staging.dir.join(MANIFEST_FILE), &text)?;
        fsync_dir(&staging.dir)?;
        fail_point("before-rename");
        let final_dir = self.generation_dir(staging.id);
        fs::rename(&staging.dir, &final_dir).map_err(|e| EngineError::io(&final_dir, e))?;
        fsync_dir(&self.root)?;
        fail_point("before-current");
        self.set_current(staging.id)?;
        fail_point("after-current");
        Ok(final_dir)
    }

    fn set_current(&self, id: u64) -> Result<()> {
        let tmp = self.root.join(".CURRENT.tmp");
        write_durably(&tmp, format!("{id}\n").as_bytes())?;
        let path = self.root.join(CURRENT_FILE);
        fs::rename(&tmp, &path).map_err(|e| EngineError::io(&path, e))?;
        fsync_dir(&self.root)
    }

    /// Initialise an empty data dir with a copy of another one's current generation (used to
    /// start from the committed demo snapshot without ever writing into it).
    pub fn init_from(&self, source: &DataDir) -> Result<u64> {
        let id = source.current()?.ok_or_else(|| {
            EngineError::corrupt(&source.root, "no CURRENT in the source snapshot")
        })?;
        let src_dir = source.generation_dir(id);
        let manifest = Manifest::read(&src_dir)?;
        let mut staging = self.begin(id)?;
        for entry in &manifest.files {
            let src = src_dir.join(&entry.path);
            let dst = staging.dir.join(&entry.path);
            if let Some(p) = dst.parent() {
                fs::create_dir_all(p).map_err(|e| EngineError::io(p, e))?;
            }
            fs::copy(&src, &dst).map_err(|e| EngineError::io(&src, e))?;
            fs::File::open(&dst)
                .and_then(|f| f.sync_all())
                .map_err(|e| EngineError::io(&dst, e))?;
            staging.files.push(entry.clone());
        }
        self.publish(staging, manifest)?;
        Ok(id)
    }

    /// Remove generations other than `keep` (rename to *.deleted first, then delete).
    pub fn collect_garbage(&self, keep: &[u64]) -> Result<usize> {
        let mut removed = 0;
        for id in self.generations()? {
            if keep.contains(&id) {
                continue;
            }
            let dir = self.generation_dir(id);
            let doomed = self.root.join(format!("{}.deleted", generation_name(id)));
            fs::rename(&dir, &doomed).map_err(|e| EngineError::io(&dir, e))?;
            fsync_dir(&self.root)?;
            fs::remove_dir_all(&doomed).map_err(|e| EngineError::io(&doomed, e))?;
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::manifest::FORMAT_VERSION;

    fn manifest() -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            generation: 0,
            parent: None,
            created: "2026-01-01T00:00:00Z".into(),
            datakatalog_versjon: "2.38".into(),
            origin: "test".into(),
            changesets: vec![],
            files: vec![],
        }
    }

    #[test]
    fn publish_moves_current_and_leftovers_are_cleaned() {
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(tmp.path()).unwrap();
        assert_eq!(d.current().unwrap(), None);
        let s = d.begin(1).unwrap();
        d.publish(s, manifest()).unwrap();
        assert_eq!(d.current().unwrap(), Some(1));
        // an interrupted build leaves a .tmp dir that the next open removes
        let s2 = d.begin(2).unwrap();
        assert!(s2.dir.exists());
        let d = DataDir::open(tmp.path()).unwrap();
        assert!(!s2.dir.exists());
        assert_eq!(d.generations().unwrap(), vec![1]);
        assert_eq!(d.next_id().unwrap(), 2);
        let s3 = d.begin(2).unwrap();
        d.publish(s3, manifest()).unwrap();
        assert_eq!(d.collect_garbage(&[2]).unwrap(), 1);
        assert_eq!(d.generations().unwrap(), vec![2]);
        assert_eq!(Manifest::read(&d.generation_dir(2)).unwrap().generation, 2);
    }
}
