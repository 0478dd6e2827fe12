//! The replica's local cache: chunk files by content, and the generations made of them.
//!
//! ```text
//! <cache>/chunks/<sha256>       a downloaded file, named by its SHA-256 (checked on download)
//! <cache>/gen-NNNNNN/           a generation: MANIFEST.json + hard links into chunks/
//! <cache>/.tmp-*                downloads and generations being put together
//! ```
//! Files are found by content, so a chunk shared by consecutive generations (the same
//! SHA-256 in both manifests, whatever its path) is downloaded once. The size bound applies
//! to `chunks/`: when a download would exceed it, chunks referenced by neither the served nor
//! the loading generation are removed, least recently used first; referenced chunks are never
//! removed (a generation larger than the bound is still served, with a warning).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::error::{EngineError, Result};
use crate::snapshot::manifest::{FileEntry, Manifest, MANIFEST_FILE};
use crate::snapshot::store::generation_name;
use crate::util::hex;

pub const CHUNKS_DIR: &str = "chunks";

#[derive(Debug, Clone, Copy)]
struct Held {
    bytes: u64,
    used: SystemTime,
}

/// The chunk cache of one replica (one process owns a cache directory).
#[derive(Debug)]
pub struct ChunkCache {
    pub root: PathBuf,
    pub max_bytes: u64,
    held: HashMap<String, Held>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EngineError + '_ {
    move |e| EngineError::io(path, e)
}

/// SHA-256 of a file, lower-case hex.
pub fn file_sha256(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).map_err(io(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

impl ChunkCache {
    /// Open (creating) a cache directory: keep the chunks that are there, remove unfinished
    /// downloads and every generation directory (they are put together again from chunks).
    pub fn open(root: impl Into<PathBuf>, max_bytes: u64) -> Result<ChunkCache> {
        let root = root.into();
        let chunks = root.join(CHUNKS_DIR);
        fs::create_dir_all(&chunks).map_err(io(&chunks))?;
        for entry in fs::read_dir(&root).map_err(io(&root))? {
            let entry = entry.map_err(io(&root))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with(".tmp-") || name.starts_with("gen-") {
                let p = entry.path();
                fs::remove_dir_all(&p).map_err(io(&p))?;
            }
        }
        let mut held = HashMap::new();
        for entry in fs::read_dir(&chunks).map_err(io(&chunks))? {
            let entry = entry.map_err(io(&chunks))?;
            let name = entry.file_name().to_string_lossy().to_string();
            let meta = entry.metadata().map_err(io(&chunks))?;
            if name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
                let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                held.insert(
                    name,
                    Held {
                        bytes: meta.len(),
                        used,
                    },
                );
            } else {
                let p = entry.path();
                fs::remove_file(&p).map_err(io(&p))?;
            }
        }
        Ok(ChunkCache {
            root,
            max_bytes,
            held,
        })
    }

    fn chunk_path(&self, sha256: &str) -> PathBuf {
        self.root.join(CHUNKS_DIR).join(sha256)
    }

    pub fn generation_dir(&self, id: u64) -> PathBuf {
        self.root.join(generation_name(id))
    }

    /// Bytes of all chunks held.
    pub fn bytes(&self) -> u64 {
        self.held.values().map(|h| h.bytes).sum()
    }

    /// Chunks held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Whether a file with this content (and size) is held.
    pub fn has(&self, entry: &FileEntry) -> bool {
        self.held
            .get(&entry.sha256)
            .is_some_and(|h| h.bytes == entry.bytes)
    }

    /// The files of `manifest` not held, one per content.
    pub fn missing<'m>(&self, manifest: &'m Manifest) -> Vec<&'m FileEntry> {
        let mut seen = HashSet::new();
        manifest
            .files
            .iter()
            .filter(|f| !self.has(f) && seen.insert(f.sha256.as_str()))
            .collect()
    }

    /// Make room for `incoming` more bytes: remove chunks not in `keep` (the contents of the
    /// served and the loading generation), least recently used first, until the cache with
    /// the incoming bytes fits its bound or nothing more may go. Returns the chunks removed.
    pub fn make_room(&mut self, keep: &HashSet<&str>, incoming: u64) -> Result<usize> {
        let mut total = self.bytes() + incoming;
        if total <= self.max_bytes {
            return Ok(0);
        }
        let mut candidates: Vec<(String, Held)> = self
            .held
            .iter()
            .filter(|(sha, _)| !keep.contains(sha.as_str()))
            .map(|(sha, h)| (sha.clone(), *h))
            .collect();
        candidates.sort_by_key(|(_, h)| h.used);
        let mut removed = 0;
        for (sha, h) in candidates {
            if total <= self.max_bytes {
                break;
            }
            let p = self.chunk_path(&sha);
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EngineError::io(&p, e)),
            }
            self.held.remove(&sha);
            total -= h.bytes;
            removed += 1;
        }
        if total > self.max_bytes {
            tracing::warn!(
                bytes = total,
                bound = self.max_bytes,
                "the served and the loading generation together exceed the cache bound; keeping them"
            );
        }
        Ok(removed)
    }

    /// Download `entry` with `fetch` (writing the file it is given) and keep it after checking
    /// its size and SHA-256. Safe to call from several threads for different contents.
    /// `verified`: `fetch` checked the SHA-256 already.
    pub fn download(
        root: &Path,
        entry: &FileEntry,
        verified: bool,
        fetch: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<()> {
        let tmp = root.join(format!(".tmp-{}", entry.sha256));
        let _ = fs::remove_file(&tmp);
        let result = fetch(&tmp).and_then(|()| {
            let len = fs::metadata(&tmp).map_err(io(&tmp))?.len();
            if len != entry.bytes {
                return Err(EngineError::corrupt(
                    &entry.path,
                    format!("downloaded {len} bytes, the manifest says {}", entry.bytes),
                ));
            }
            let sha = if verified {
                entry.sha256.clone()
            } else {
                file_sha256(&tmp)?
            };
            if sha != entry.sha256 {
                return Err(EngineError::corrupt(
                    &entry.path,
                    format!(
                        "downloaded content has SHA-256 {sha}, the manifest says {}",
                        entry.sha256
                    ),
                ));
            }
            fs::File::open(&tmp)
                .and_then(|f| f.sync_all())
                .map_err(io(&tmp))?;
            let dst = root.join(CHUNKS_DIR).join(&entry.sha256);
            fs::rename(&tmp, &dst).map_err(io(&dst))
        });
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Note a downloaded chunk (after `download`).
    pub fn add(&mut self, entry: &FileEntry) {
        self.held.insert(
            entry.sha256.clone(),
            Held {
                bytes: entry.bytes,
                used: SystemTime::now(),
            },
        );
    }

    /// Put generation `manifest` together from held chunks: `gen-NNNNNN/` with its manifest
    /// and a hard link per file. Marks its chunks as used now.
    pub fn assemble(&mut self, manifest: &Manifest) -> Result<PathBuf> {
        let id = manifest.generation;
        let tmp = self.root.join(format!(".tmp-{}", generation_name(id)));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
        }
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let now = SystemTime::now();
        for f in &manifest.files {
            let src = self.chunk_path(&f.sha256);
            let dst = tmp.join(&f.path);
            if let Some(p) = dst.parent() {
                fs::create_dir_all(p).map_err(io(p))?;
            }
            fs::hard_link(&src, &dst).map_err(io(&src))?;
            if let Some(h) = self.held.get_mut(&f.sha256) {
                h.used = now;
            }
        }
        let mpath = tmp.join(MANIFEST_FILE);
        let text = serde_json::to_vec_pretty(manifest)
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        fs::write(&mpath, text).map_err(io(&mpath))?;
        let dir = self.generation_dir(id);
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        fs::rename(&tmp, &dir).map_err(io(&dir))?;
        Ok(dir)
    }

    /// Remove every generation directory but `keep` (links only: the chunks stay).
    pub fn remove_generations_except(&self, keep: u64) -> Result<()> {
        for entry in fs::read_dir(&self.root).map_err(io(&self.root))? {
            let entry = entry.map_err(io(&self.root))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("gen-") && name != generation_name(keep) {
                let p = entry.path();
                fs::remove_dir_all(&p).map_err(io(&p))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: &[u8], path: &str) -> FileEntry {
        FileEntry {
            path: path.into(),
            rows: 0,
            bytes: content.len() as u64,
            sha256: hex(&Sha256::digest(content)),
            type_id: None,
            first_id: None,
        }
    }

    fn put(cache: &mut ChunkCache, content: &[u8], path: &str) -> FileEntry {
        let e = entry(content, path);
        ChunkCache::download(&cache.root, &e, false, |dst| {
            fs::write(dst, content).map_err(|x| EngineError::io(dst, x))
        })
        .unwrap();
        cache.add(&e);
        e
    }

    #[test]
    fn downloads_are_checked_and_eviction_spares_referenced_chunks() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cache = ChunkCache::open(tmp.path(), 25).unwrap();
        let a = put(&mut cache, b"aaaaaaaaaa", "a");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = put(&mut cache, b"bbbbbbbbbb", "b");
        assert_eq!(cache.bytes(), 20);
        // a wrong content is refused and leaves nothing behind
        let bad = entry(b"cccccccccc", "c");
        let err = ChunkCache::download(&cache.root, &bad, false, |dst| {
            fs::write(dst, b"xxxxxxxxxx").map_err(|x| EngineError::io(dst, x))
        })
        .unwrap_err();
        assert!(err.to_string().contains("SHA-256"), "{err}");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1, "only chunks/");
        // room for 10 more: the least recently used unreferenced chunk goes (a)
        let keep: HashSet<&str> = HashSet::new();
        assert_eq!(cache.make_room(&keep, 10).unwrap(), 1);
        assert!(!cache.has(&a) && cache.has(&b));
        // a referenced chunk stays even past the bound
        let keep: HashSet<&str> = [b.sha256.as_str()].into();
        assert_eq!(cache.make_room(&keep, 100).unwrap(), 0);
        assert!(cache.has(&b));
        // generations are assembled from chunks by content, whatever the path
        let m = crate::snapshot::builder::bare_manifest(
            2,
            7,
            vec![entry(b"bbbbbbbbbb", "x/one"), entry(b"bbbbbbbbbb", "two")],
        );
        assert!(cache.missing(&m).is_empty());
        let dir = cache.assemble(&m).unwrap();
        assert_eq!(fs::read(dir.join("x/one")).unwrap(), b"bbbbbbbbbb");
        assert_eq!(fs::read(dir.join("two")).unwrap(), b"bbbbbbbbbb");
        // reopening keeps the chunks and drops the assembled generation
        drop(cache);
        let cache = ChunkCache::open(tmp.path(), 25).unwrap();
        assert_eq!(cache.len(), 1);
        assert!(!dir.exists());
    }
}
