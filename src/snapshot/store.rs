//! The data directory: generations, the CURRENT pointer, crash-safe publishing and cleanup.
//!
//! ```text
//! <data>/gen-000042/   *.parquet + MANIFEST.json   (immutable once renamed into place)
//! <data>/CURRENT       active generation id
//! <data>/.tmp-*        in-progress builds, removed by the owner at startup
//! <data>/*.deleted     being removed, ignored by loaders
//! <data>/LOCK          the owner's lock (pid inside)
//! ```
//! One process owns a data directory: `DataDir::open` takes an exclusive OS lock on
//! `<data>/LOCK` (flock, released when the process ends, however it ends) and only then removes
//! leftovers; only an owner may publish, initialise or collect garbage. `DataDir::read_only`
//! (the snapshot tools, `serve --read-only`) takes no lock and never creates, writes or removes
//! anything.
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

/// The lock file of a data directory.
pub const LOCK_FILE: &str = "LOCK";

/// The exclusive lock of a data directory's owner, held while this value lives (the OS drops
/// it when the process ends, also on SIGKILL).
#[derive(Debug)]
pub struct OwnerLock {
    _file: fs::File,
}

/// Take the owner lock of `root` at once, or fail naming the process that holds it.
fn lock_owner(root: &Path) -> Result<OwnerLock> {
    use std::io::{Seek, Write};
    let path = root.join(LOCK_FILE);
    // no truncation before the lock is ours: the file names the current owner
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| EngineError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            return Err(EngineError::io(
                &path,
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!(
                        "the data directory {} is owned by another vegdb process ({}); one \
                         process owns a data directory for writing: stop it first, or read \
                         the directory with `serve --read-only` or `snapshot inspect|verify|load`",
                        root.display(),
                        describe_owner(&path)
                    ),
                ),
            ))
        }
        Err(fs::TryLockError::Error(e)) => return Err(EngineError::io(&path, e)),
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = format!(
        "{}\n{}\n{}\n",
        std::process::id(),
        args.join(" "),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    file.set_len(0)
        .and_then(|_| file.rewind())
        .and_then(|_| file.write_all(text.as_bytes()))
        .map_err(|e| EngineError::io(&path, e))?;
    Ok(OwnerLock { _file: file })
}

/// "pid 1234: serve --data data, since …" from a lock file (the owner writes it right after
/// locking; a few short waits cover that moment).
fn describe_owner(path: &Path) -> String {
    for _ in 0..20 {
        let text = fs::read_to_string(path).unwrap_or_default();
        let mut lines = text.lines();
        if let Some(pid) = lines.next().filter(|p| p.parse::<u32>().is_ok()) {
            let command = lines.next().unwrap_or("").trim();
            let since = lines.next().unwrap_or("").trim();
            return format!("pid {pid}: vegdb {command}, since {since}");
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    "pid unknown".into()
}

/// Who owns a data directory according to its lock file (for messages; a stale file of an
/// ended owner still names it).
pub fn owner_pid(root: &Path) -> Option<u32> {
    fs::read_to_string(root.join(LOCK_FILE))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// A generation pinned by a reader: the owner does not remove it while this lives.
#[derive(Debug)]
pub struct Pinned {
    pub dir: PathBuf,
    _manifest: fs::File,
}

#[derive(Debug, Clone)]
pub struct DataDir {
    pub root: PathBuf,
    /// Some for the owner (the lock lives as long as any clone).
    owner: Option<std::sync::Arc<OwnerLock>>,
}

impl DataDir {
    /// A data directory to read only (snapshot tools, `serve --read-only`, the committed
    /// demo): no lock, no cleanup, nothing created or written.
    pub fn read_only(root: impl Into<PathBuf>) -> DataDir {
        DataDir {
            root: root.into(),
            owner: None,
        }
    }

    /// Open (creating if needed) a data directory as its owner: take the lock (failing at once
    /// when another process holds it, naming its pid), then remove leftovers of interrupted
    /// work. The lock is held as long as this value or a clone lives.
    pub fn open(root: impl Into<PathBuf>) -> Result<DataDir> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| EngineError::io(&root, e))?;
        let lock = lock_owner(&root)?;
        let d = DataDir {
            root,
            owner: Some(std::sync::Arc::new(lock)),
        };
        d.remove_leftovers()?;
        Ok(d)
    }

    /// Whether this process owns the directory (may publish and clean up).
    pub fn is_owner(&self) -> bool {
        self.owner.is_some()
    }

    fn ensure_owner(&self, what: &str) -> Result<()> {
        if self.is_owner() {
            Ok(())
        } else {
            Err(EngineError::Internal(format!(
                "{what} in {} needs the owner lock (opened read-only)",
                self.root.display()
            )))
        }
    }

    fn remove_leftovers(&self) -> Result<()> {
        self.ensure_owner("removing leftovers")?;
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

    /// Remove generations being built (after a failed publish, to give the space back).
    /// Only the owner builds them, so none is in progress while its writer calls this.
    pub fn discard_staging(&self) -> Result<()> {
        self.remove_leftovers()
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
        self.ensure_owner("publishing a generation")?;
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
        self.ensure_owner("publishing a generation")?;
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
            last_event_ids: Default::default(),
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
        drop(d); // the owner ends (its lock with it)
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

    #[test]
    fn one_owner_per_directory_and_readers_change_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let owner = DataDir::open(tmp.path()).unwrap();
        let building = owner.begin(1).unwrap();
        // a second owner is refused at once, naming this process
        let err = DataDir::open(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert_eq!(owner_pid(tmp.path()), Some(std::process::id()));
        // a reader neither removes the owner's build nor may publish or collect
        let reader = DataDir::read_only(tmp.path());
        assert!(!reader.is_owner());
        assert!(reader.begin(2).is_err());
        assert!(reader.collect_garbage(&[]).is_err());
        assert!(reader.discard_staging().is_err());
        assert!(building.dir.exists());
        owner.publish(building, manifest()).unwrap();
        assert_eq!(reader.current().unwrap(), Some(1));
        // the lock ends with the owner (and every clone of it)
        let clone = owner.clone();
        drop(owner);
        assert!(DataDir::open(tmp.path()).is_err());
        drop(clone);
        let again = DataDir::open(tmp.path()).unwrap();
        assert_eq!(again.current().unwrap(), Some(1));
        // a pinned generation survives garbage collection until the reader lets go
        let s2 = again.begin(2).unwrap();
        again.publish(s2, manifest()).unwrap();
        let pin = reader.pin(1).unwrap().expect("generation 1 is there");
        assert_eq!(again.collect_garbage(&[2]).unwrap(), 0);
        assert!(pin.dir.exists());
        drop(pin);
        assert_eq!(again.collect_garbage(&[2]).unwrap(), 1);
        assert!(reader.pin(1).unwrap().is_none());
        assert_eq!(
            reader.pin_current_or(None).unwrap().dir,
            again.generation_dir(2)
        );
    }
}
