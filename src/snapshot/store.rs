//! The data directory: generations, the CURRENT pointer, crash-safe publishing and cleanup.
//!
//! ```text
//! <data>/gen-000042/   *.parquet + MANIFEST.json   (immutable once renamed into place)
//! <data>/CURRENT       active generation id
//! <data>/.tmp-*        in-progress builds, removed by the owner at startup
//! <data>/*.deleted     being removed, ignored by loaders
//! <data>/LOCK          the owner's lock (pid inside)
//! <data>/incoming/      generations handed to the owner by other processes (`handoff`)
//! ```
//! One process owns a data directory: `DataDir::open` takes an exclusive OS lock on
//! `<data>/LOCK` (flock, released when the process ends, however it ends) and only then removes
//! leftovers; only an owner may publish, initialise or collect garbage. `DataDir::read_only`
//! (the snapshot tools, `serve --read-only`) takes no lock and never creates, writes or removes
//! anything.
//! Publishing: build in `.tmp-<id>/` with every file fsynced; write MANIFEST.json last and
//! fsync it; rename the directory to `gen-<id>`; fsync the data dir; replace CURRENT through a
//! temp file + rename + fsync. Only then may the caller swap the in-memory generation.
//!
//! A producer (`generate`, `import`, `refresh`) opens the directory with
//! `DataDir::open_for_publishing`: it owns it when nobody else does, and otherwise hands its
//! generation to the owner through the inbox (`super::handoff`); `begin` and `publish` do the
//! same for both, so producers need no second code path.
//!
//! This file: the directory, its owner and publishing. `producer`: a producer's side of a
//! hand-off. `retention`: pinning by readers and the owner's garbage collection.

mod producer;
mod retention;

use std::fs;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex, OnceLock};

use super::handoff::Ticket;
use super::manifest::{FileEntry, Manifest, MANIFEST_FILE};
pub use super::owner::{describe_owner_of, owner_pid, OwnerLock, LOCK_FILE};
use super::owner::{lock_owner, try_lock_owner};
use crate::durable::{fsync_dir, write_durably};
use crate::error::{EngineError, Result};
use producer::{poisoned, withdraw};
pub use retention::{Pinned, KEEP_OLD_GENERATIONS};

pub const CURRENT_FILE: &str = "CURRENT";

/// Named points between publishing steps (`crate::failpoints`; only with the `failpoints`
/// feature).
pub use crate::failpoints::fail_point;

pub fn generation_name(id: u64) -> String {
    format!("gen-{id:06}")
}

/// The id of a generation directory (`…/gen-000042` → 42).
pub fn generation_id(dir: &Path) -> Option<u64> {
    dir.file_name()?
        .to_str()?
        .strip_prefix("gen-")?
        .parse()
        .ok()
}

/// Sort `files` into `manifest` and fsync the build's subdirectories (the steps before its
/// manifest is written).
fn complete_build(dir: &Path, manifest: &mut Manifest, files: Vec<FileEntry>) -> Result<()> {
    manifest.files = files;
    manifest.files.sort_by(|a, b| a.path.cmp(&b.path));
    for sub in ["network", "objects"] {
        let p = dir.join(sub);
        if p.exists() {
            fsync_dir(&p)?;
        }
    }
    Ok(())
}

/// Write `dir`'s MANIFEST.json durably.
fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let text =
        serde_json::to_vec_pretty(manifest).map_err(|e| EngineError::Internal(e.to_string()))?;
    write_durably(&dir.join(MANIFEST_FILE), &text)
}

/// Copy `src` to `dst` and fsync the copy.
fn copy_durably(src: &Path, dst: &Path) -> Result<()> {
    fs::copy(src, dst).map_err(|e| EngineError::io(src, e))?;
    fs::File::open(dst)
        .and_then(|f| f.sync_all())
        .map_err(|e| EngineError::io(dst, e))
}

/// A generation being built in a temporary directory.
#[derive(Debug)]
pub struct Staging {
    /// The id it will be published as (for a hand-off, provisional: the owner numbers it).
    pub id: u64,
    pub dir: PathBuf,
    pub files: Vec<FileEntry>,
    /// The generation CURRENT named when the build began; it does not move before publishing
    /// (an owner publishes in order; a hand-off's owner holds its writer meanwhile).
    pub base: Option<u64>,
    /// Built in the inbox for a hand-off: the hand-off, withdrawn (the owner's writer goes on)
    /// when the staging is dropped without being published.
    handoff: Option<Arc<Mutex<Option<Ticket>>>>,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(slot) = self.handoff.take() {
            withdraw(&slot);
        }
    }
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
            copy_durably(&src, &dst)?;
        }
        self.files.push(entry.clone());
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct DataDir {
    pub root: PathBuf,
    /// Set for the owner (the lock lives as long as any clone); a producer sets it when it
    /// takes the directory over from an owner that ended.
    owner: Arc<OnceLock<OwnerLock>>,
    /// Some for a producer that hands its generation to the owner: the hand-off under way.
    handoff: Option<Arc<Mutex<Option<Ticket>>>>,
}

impl DataDir {
    /// A data directory to read only (snapshot tools, `serve --read-only`, the committed
    /// demo): no lock, no cleanup, nothing created or written.
    pub fn read_only(root: impl Into<PathBuf>) -> DataDir {
        DataDir {
            root: root.into(),
            owner: Arc::new(OnceLock::new()),
            handoff: None,
        }
    }

    /// Open (creating if needed) a data directory as its owner: take the lock (failing at once
    /// when another process holds it, naming its pid), then remove leftovers of interrupted
    /// work. The lock is held as long as this value or a clone lives.
    pub fn open(root: impl Into<PathBuf>) -> Result<DataDir> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| EngineError::io(&root, e))?;
        let lock = lock_owner(&root)?;
        let owner = OnceLock::new();
        let _ = owner.set(lock);
        let d = DataDir {
            root,
            owner: Arc::new(owner),
            handoff: None,
        };
        d.remove_leftovers()?;
        Ok(d)
    }

    /// Open a data directory to publish generations into (`generate`, `import`, `refresh`):
    /// as its owner when no other process owns it, otherwise as a producer whose `begin` and
    /// `publish` hand the generation to the owner (a running server), which publishes it in
    /// sequence with its changesets. `handed_to()` tells which it is.
    ///
    /// A producer that builds on the current generation (`refresh`) calls `begin` first and
    /// builds on `staging.base` (pin it, load it, `share_from` its directory): the owner holds
    /// its writer from then until `publish`, so that base is still CURRENT when the generation
    /// is published. `publish` returns the published directory; `generation_id` tells its id.
    pub fn open_for_publishing(root: impl Into<PathBuf>) -> Result<DataDir> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| EngineError::io(&root, e))?;
        if let Some(lock) = try_lock_owner(&root)? {
            let owner = OnceLock::new();
            let _ = owner.set(lock);
            let d = DataDir {
                root,
                owner: Arc::new(owner),
                handoff: None,
            };
            d.remove_leftovers()?;
            return Ok(d);
        }
        Ok(DataDir {
            root,
            owner: Arc::new(OnceLock::new()),
            handoff: Some(Arc::new(Mutex::new(None))),
        })
    }

    /// Whether this process owns the directory (may publish and clean up).
    pub fn is_owner(&self) -> bool {
        self.owner.get().is_some()
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

    /// Start building generation `id`. A producer that hands off announces itself to the owner
    /// and waits until the owner holds its writer (its staging then lies in the inbox, `id` is
    /// provisional and `base` is the owner's CURRENT, which stays put until `publish`).
    pub fn begin(&self, id: u64) -> Result<Staging> {
        if let (false, Some(slot)) = (self.is_owner(), &self.handoff) {
            if let Some(staging) = self.begin_handoff(slot)? {
                return Ok(staging);
            }
        }
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
            base: self.current()?,
            handoff: None,
        })
    }

    /// Steps 2-4 of publishing: manifest, rename, CURRENT. Returns the generation directory
    /// (its name tells the id: `generation_id`). A manifest without a parent gets the
    /// generation it replaces (CURRENT), so the chain of parents has every generation. A
    /// producer that hands off returns once the owner published the generation.
    pub fn publish(&self, mut staging: Staging, mut manifest: Manifest) -> Result<PathBuf> {
        let handoff = staging.handoff.take();
        if let (false, Some(slot)) = (self.is_owner(), &handoff) {
            match self.publish_handoff(slot, &staging, &manifest) {
                Ok(Some(dir)) => return Ok(dir),
                Ok(None) => {} // the owner ended: this process owns the directory now
                Err(e) => {
                    withdraw(slot);
                    return Err(e);
                }
            }
        }
        self.ensure_owner("publishing a generation")?;
        if handoff.is_some() {
            // built for a hand-off, published by this process after all: number it now
            staging.id = self.next_id()?;
            manifest.parent = None;
        }
        if manifest.parent.is_none() {
            manifest.parent = self.current()?;
        }
        let ticket = match &handoff {
            Some(slot) => slot.lock().map_err(|_| poisoned())?.take(),
            None => None,
        };
        manifest.generation = staging.id;
        complete_build(
            &staging.dir,
            &mut manifest,
            std::mem::take(&mut staging.files),
        )?;
        fail_point("before-manifest");
        write_manifest(&staging.dir, &manifest)?;
        fsync_dir(&staging.dir)?;
        fail_point("before-rename");
        let final_dir = self.generation_dir(staging.id);
        fs::rename(&staging.dir, &final_dir).map_err(|e| EngineError::io(&final_dir, e))?;
        fsync_dir(&self.root)?;
        fail_point("before-current");
        self.set_current(staging.id)?;
        fail_point("after-current");
        if let Some(t) = ticket {
            t.withdraw()?;
        }
        Ok(final_dir)
    }

    /// Install a hand-off's complete build as the next generation, not yet CURRENT: its
    /// manifest renumbered (id, parent: CURRENT) and its directory renamed into place.
    pub fn install(&self, build: &Path) -> Result<(u64, PathBuf)> {
        self.ensure_owner("installing a handed-over generation")?;
        let mut m = Manifest::read(build)?;
        let id = self.next_id()?;
        m.generation = id;
        m.parent = self.current()?;
        write_manifest(build, &m)?;
        fsync_dir(build)?;
        let final_dir = self.generation_dir(id);
        fs::rename(build, &final_dir).map_err(|e| EngineError::io(&final_dir, e))?;
        fsync_dir(&self.root)?;
        Ok((id, final_dir))
    }

    /// Make an installed generation CURRENT.
    pub fn make_current(&self, id: u64) -> Result<()> {
        self.ensure_owner("moving CURRENT")?;
        self.set_current(id)
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
            copy_durably(&src, &dst)?;
            staging.files.push(entry.clone());
        }
        self.publish(staging, manifest)?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builder::bare_manifest;
    use crate::snapshot::manifest::FORMAT_VERSION;

    #[test]
    fn publish_moves_current_and_leftovers_are_cleaned() {
        let tmp = tempfile::tempdir().unwrap();
        let d = DataDir::open(tmp.path()).unwrap();
        assert_eq!(d.current().unwrap(), None);
        let s = d.begin(1).unwrap();
        d.publish(s, bare_manifest(FORMAT_VERSION, 0, vec![]))
            .unwrap();
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
        d.publish(s3, bare_manifest(FORMAT_VERSION, 0, vec![]))
            .unwrap();
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
        owner
            .publish(building, bare_manifest(FORMAT_VERSION, 0, vec![]))
            .unwrap();
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
        again
            .publish(s2, bare_manifest(FORMAT_VERSION, 0, vec![]))
            .unwrap();
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

    fn built(d: &DataDir) -> Staging {
        let mut s = d.begin(0).unwrap();
        std::fs::write(s.dir.join("data.txt"), b"x").unwrap();
        s.files.push(FileEntry {
            path: "data.txt".into(),
            rows: 0,
            bytes: 1,
            sha256: String::new(),
            type_id: None,
            first_id: None,
        });
        s
    }

    #[test]
    fn a_handed_generation_is_numbered_by_the_owner_and_taken_over_when_it_ends() {
        use crate::snapshot::handoff::next_request;
        let tmp = tempfile::tempdir().unwrap();
        let owner = DataDir::open(tmp.path()).unwrap();
        owner
            .publish(
                owner.begin(1).unwrap(),
                bare_manifest(FORMAT_VERSION, 0, vec![]),
            )
            .unwrap();
        // owned: a producer hands its generation to the owner
        let p = DataDir::open_for_publishing(tmp.path()).unwrap();
        assert!(p
            .handed_to()
            .unwrap()
            .contains(&format!("pid {}", std::process::id())));
        assert!(!p.is_owner());
        // the owner acknowledges and answers in another thread, as the server's writer does
        let (root, o) = (tmp.path().to_path_buf(), owner.clone());
        let server = std::thread::spawn(move || loop {
            if let Some(r) = next_request(&root).unwrap() {
                r.acknowledge(o.current().unwrap()).unwrap();
                assert!(
                    r.wait_ready(std::time::Duration::from_secs(30))
                        == crate::snapshot::handoff::WaitOutcome::Ready
                );
                let (id, _) = o.install(&r.build_dir()).unwrap();
                o.make_current(id).unwrap();
                r.answer(Ok(id)).unwrap();
                return id;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        });
        let s = built(&p);
        assert_eq!(s.base, Some(1));
        let dir = p
            .publish(s, bare_manifest(FORMAT_VERSION, 0, vec![]))
            .unwrap();
        assert_eq!(server.join().unwrap(), 2);
        assert_eq!(generation_id(&dir), Some(2));
        let m = Manifest::read(&dir).unwrap();
        assert_eq!((m.generation, m.parent), (2, Some(1)));
        assert_eq!(owner.current().unwrap(), Some(2));
        assert_eq!(
            std::fs::read_dir(tmp.path().join("incoming"))
                .unwrap()
                .count(),
            0
        );

        // the owner ends after acknowledging: the producer takes over and publishes itself
        let r = {
            let (root, o) = (tmp.path().to_path_buf(), owner.clone());
            std::thread::spawn(move || loop {
                if let Some(r) = next_request(&root).unwrap() {
                    r.acknowledge(o.current().unwrap()).unwrap();
                    return r;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            })
        };
        let p = DataDir::open_for_publishing(tmp.path()).unwrap();
        let s = built(&p);
        r.join().unwrap();
        drop(owner);
        let dir = p
            .publish(s, bare_manifest(FORMAT_VERSION, 0, vec![]))
            .unwrap();
        assert!(p.is_owner());
        let m = Manifest::read(&dir).unwrap();
        assert_eq!((m.generation, m.parent), (3, Some(2)));
        assert_eq!(p.current().unwrap(), Some(3));
        assert_eq!(
            std::fs::read_dir(tmp.path().join("incoming"))
                .unwrap()
                .count(),
            0
        );
    }
}
