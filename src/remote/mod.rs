//! Generations on object storage: a data location is a local directory (`snapshot::store`,
//! unchanged) or an object store URL (`s3://bucket/prefix`, `az://container/prefix`,
//! `gs://bucket/prefix`; `memory://` for tests), reached through the `object_store` crate with
//! credentials and endpoint from the usual environment variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL` /
//! `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`; `AZURE_STORAGE_*`; `GOOGLE_*`).
//!
//! The store has the names of a local data directory:
//! ```text
//! <prefix>/CURRENT                    the current generation id ("42\n"), moved conditionally
//! <prefix>/WRITER-LEASE               the publishing writer's lease (`lease`): one writer at a time
//! <prefix>/gen-000042/WRITER          the claim: id of the data directory that uploads gen 42
//! <prefix>/gen-000042/<file>          every file of the generation (parquet chunks, results)
//! <prefix>/gen-000042/MANIFEST.json   uploaded last: a generation with a manifest is complete
//! ```
//! Every generation is complete under its own prefix (engines can glob it); a file that an
//! earlier generation in the store already holds (same SHA-256, from the manifests) is copied
//! inside the store (S3 CopyObject: no bytes through the uploader) instead of uploaded.
//! Downloads are checked against the manifest's size and SHA-256.
//!
//! Two writers never both win: a generation's prefix is claimed first with a create-only write
//! (`If-None-Match: *`) of `WRITER`, and `CURRENT` is replaced only if its ETag is still the
//! one read before the upload (`If-Match`), or created only if absent. Beyond that, one writer
//! publishes to a prefix at all: `lease` (a writer without the lease accepts no changeset).

pub mod lease;
pub mod publisher;
pub mod push;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::StreamExt;
use object_store::path::Path as Key;
use object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion, WriteMultipart,
};
use sha2::Digest;

use crate::error::{EngineError, Result};
use crate::snapshot::manifest::{FileEntry, Manifest, MANIFEST_FILE};
use crate::snapshot::store::{generation_name, CURRENT_FILE};
use crate::util::hex;

/// The claim object of a generation prefix.
pub const WRITER_FILE: &str = "WRITER";
/// Files larger than this are uploaded in parts.
const MULTIPART_BYTES: u64 = 32 << 20;
/// Part size of multipart uploads.
const PART_BYTES: usize = 16 << 20;
/// Transfers under way at once in a push, pull or publish.
pub const CONCURRENT_TRANSFERS: usize = 8;

/// Where generations live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local data directory (`snapshot::store::DataDir`).
    Local(std::path::PathBuf),
    /// An object store URL.
    Store(String),
}

impl Location {
    /// `s3://…`, `s3a://…`, `az://…`, `abfs(s)://…`, `gs://…`, `memory://…` are stores;
    /// anything else is a local path.
    pub fn parse(text: &str) -> Location {
        if is_store_url(text) {
            Location::Store(text.to_string())
        } else {
            Location::Local(text.into())
        }
    }
}

/// Whether `text` names an object store (rather than a local path).
pub fn is_store_url(text: &str) -> bool {
    const SCHEMES: [&str; 7] = [
        "s3://",
        "s3a://",
        "az://",
        "abfs://",
        "abfss://",
        "gs://",
        "memory://",
    ];
    let lower = text.to_ascii_lowercase();
    SCHEMES.iter().any(|s| lower.starts_with(s))
}

/// Requests and bytes a `Remote` made (tests count them; push and pull report them).
#[derive(Debug, Default)]
pub struct Stats {
    pub puts: AtomicU64,
    pub copies: AtomicU64,
    pub gets: AtomicU64,
    pub deletes: AtomicU64,
    pub bytes_up: AtomicU64,
    pub bytes_down: AtomicU64,
}

/// A snapshot of `Stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub puts: u64,
    pub copies: u64,
    pub gets: u64,
    pub deletes: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
}

impl Stats {
    pub fn counts(&self) -> Counts {
        Counts {
            puts: self.puts.load(Ordering::Relaxed),
            copies: self.copies.load(Ordering::Relaxed),
            gets: self.gets.load(Ordering::Relaxed),
            deletes: self.deletes.load(Ordering::Relaxed),
            bytes_up: self.bytes_up.load(Ordering::Relaxed),
            bytes_down: self.bytes_down.load(Ordering::Relaxed),
        }
    }
}

/// `CURRENT` of a store as read: the generation and the version a conditional update needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    pub generation: u64,
    pub version: UpdateVersion,
    /// When the store last wrote `CURRENT` (its clock): when it moved to `generation`.
    pub modified: std::time::SystemTime,
}

/// Who holds a generation's prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This writer (claimed now, or earlier by an upload that did not finish).
    Ours,
    /// Another writer, by its id.
    Theirs(String),
}

/// A generation store on object storage.
#[derive(Clone)]
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    prefix: Key,
    url: String,
    pub stats: Arc<Stats>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).finish()
    }
}

fn store_error(what: impl std::fmt::Display, e: impl std::fmt::Display) -> EngineError {
    EngineError::io(
        what.to_string(),
        std::io::Error::other(format!("object store: {e}")),
    )
}

impl Remote {
    /// Open the store a URL names, configured from the environment (see the module doc).
    pub fn open(url: &str) -> Result<Remote> {
        Remote::open_with_options(url, &[])
    }

    /// As `open`, with configuration keys of the `object_store` builders on top of the
    /// environment's (e.g. `("aws_endpoint", "http://127.0.0.1:9000")`, `("aws_allow_http",
    /// "true")`; tests and callers that must not depend on the process environment).
    pub fn open_with_options(url: &str, options: &[(&str, &str)]) -> Result<Remote> {
        let parsed = url::Url::parse(url)
            .map_err(|e| EngineError::input(format!("'{url}' is not a store URL: {e}")))?;
        let scheme = parsed.scheme().to_ascii_lowercase();
        let store: Arc<dyn ObjectStore> = match scheme.as_str() {
            "s3" | "s3a" => {
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(url);
                for (k, v) in options {
                    b = b.with_config(parse_key(k)?, *v);
                }
                Arc::new(b.build().map_err(|e| store_error(url, e))?)
            }
            "az" | "abfs" | "abfss" => {
                let mut b = object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url);
                for (k, v) in options {
                    b = b.with_config(parse_key(k)?, *v);
                }
                Arc::new(b.build().map_err(|e| store_error(url, e))?)
            }
            "gs" => {
                let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url);
                for (k, v) in options {
                    b = b.with_config(parse_key(k)?, *v);
                }
                Arc::new(b.build().map_err(|e| store_error(url, e))?)
            }
            "memory" => Arc::new(object_store::memory::InMemory::new()),
            other => {
                return Err(EngineError::input(format!(
                    "unsupported store scheme '{other}' in '{url}' (s3://, az://, gs://)"
                )))
            }
        };
        let prefix = parsed.path().trim_matches('/');
        let prefix = Key::parse(prefix)
            .map_err(|e| EngineError::input(format!("bad prefix in '{url}': {e}")))?;
        Ok(Remote::with_store(store, prefix, url))
    }

    /// A store over any `ObjectStore` (tests: `InMemory`).
    pub fn with_store(store: Arc<dyn ObjectStore>, prefix: Key, url: &str) -> Remote {
        Remote {
            store,
            prefix,
            url: url.to_string(),
            stats: Arc::new(Stats::default()),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The underlying object store and the prefix everything lives under.
    pub fn object_store(&self) -> (&Arc<dyn ObjectStore>, &Key) {
        (&self.store, &self.prefix)
    }

    /// The key of `rel` (a `/`-separated name relative to the prefix).
    pub fn key(&self, rel: &str) -> Key {
        let mut parts: Vec<String> = self
            .prefix
            .parts()
            .map(|p| p.as_ref().to_string())
            .collect();
        parts.extend(rel.split('/').filter(|p| !p.is_empty()).map(str::to_string));
        Key::from_iter(parts)
    }

    /// The key of file `rel` of generation `id`.
    pub fn file_key(&self, id: u64, rel: &str) -> Key {
        self.key(&format!("{}/{rel}", generation_name(id)))
    }

    /// `CURRENT`, with the version to update it conditionally; None when the store has none.
    pub async fn current(&self) -> Result<Option<Current>> {
        let key = self.key(CURRENT_FILE);
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        let got = match self.store.get(&key).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(store_error(&key, e)),
        };
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        let modified = got.meta.last_modified.into();
        let bytes = got.bytes().await.map_err(|e| store_error(&key, e))?;
        let text = String::from_utf8_lossy(&bytes);
        let generation = text.trim().parse().map_err(|_| {
            EngineError::corrupt(key.to_string(), format!("CURRENT holds '{}'", text.trim()))
        })?;
        Ok(Some(Current {
            generation,
            version,
            modified,
        }))
    }

    /// Move `CURRENT` to `id` if it is still `expected` (None: only if there is none).
    /// Ok(false) when another writer moved (or created) it first: nothing was changed.
    pub async fn set_current(&self, expected: Option<&Current>, id: u64) -> Result<bool> {
        let key = self.key(CURRENT_FILE);
        let mode = match expected {
            None => PutMode::Create,
            Some(c) => PutMode::Update(c.version.clone()),
        };
        let opts = PutOptions {
            mode,
            ..Default::default()
        };
        self.stats.puts.fetch_add(1, Ordering::Relaxed);
        match self
            .store
            .put_opts(&key, PutPayload::from(format!("{id}\n")), opts)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::Precondition { .. })
            | Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(store_error(&key, e)),
        }
    }

    /// Claim generation `id`'s prefix for `writer` (create-only). A claim by the same writer
    /// (an interrupted upload) is ours again.
    pub async fn claim(&self, id: u64, writer: &str) -> Result<Claim> {
        let key = self.file_key(id, WRITER_FILE);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        self.stats.puts.fetch_add(1, Ordering::Relaxed);
        match self
            .store
            .put_opts(&key, PutPayload::from(writer.to_string()), opts)
            .await
        {
            Ok(_) => Ok(Claim::Ours),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => {
                let holder = String::from_utf8_lossy(&self.get(&key).await?)
                    .trim()
                    .to_string();
                Ok(if holder == writer {
                    Claim::Ours
                } else {
                    Claim::Theirs(holder)
                })
            }
            Err(e) => Err(store_error(&key, e)),
        }
    }

    async fn get(&self, key: &Key) -> Result<bytes::Bytes> {
        self.get_opt(key)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("{key} is not in {}", self.url)))
    }

    /// The object at `key`; None when there is none.
    pub async fn get_opt(&self, key: &Key) -> Result<Option<bytes::Bytes>> {
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        let got = match self.store.get(key).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(store_error(key, e)),
        };
        let bytes = got.bytes().await.map_err(|e| store_error(key, e))?;
        self.stats
            .bytes_down
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(Some(bytes))
    }

    /// Whether generation `id` is complete in the store (has its manifest).
    pub async fn has_manifest(&self, id: u64) -> Result<bool> {
        self.exists(&self.file_key(id, MANIFEST_FILE)).await
    }

    /// The manifest of generation `id`; None when it has none (absent or not complete).
    pub async fn manifest(&self, id: u64) -> Result<Option<Manifest>> {
        let key = self.file_key(id, MANIFEST_FILE);
        let Some(bytes) = self.get_opt(&key).await? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        Manifest::parse(Path::new(key.as_ref()), &text).map(Some)
    }

    async fn exists(&self, key: &Key) -> Result<bool> {
        match self.store.head(key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_error(key, e)),
        }
    }

    /// Upload the manifest of generation `id` (the last object of an upload).
    pub async fn put_manifest(&self, id: u64, manifest: &Manifest) -> Result<()> {
        let text = serde_json::to_vec_pretty(manifest)
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        self.put_raw(&self.file_key(id, MANIFEST_FILE), text.into())
            .await
    }

    pub async fn put_raw(&self, key: &Key, bytes: bytes::Bytes) -> Result<()> {
        self.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.stats
            .bytes_up
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.store
            .put(key, PutPayload::from(bytes))
            .await
            .map_err(|e| store_error(key, e))?;
        Ok(())
    }

    /// Generation ids with anything under their prefix, ascending (complete or not).
    pub async fn generation_prefixes(&self) -> Result<Vec<u64>> {
        let listed = self
            .store
            .list_with_delimiter(Some(&self.prefix))
            .await
            .map_err(|e| store_error(&self.prefix, e))?;
        let mut ids: Vec<u64> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename()?.strip_prefix("gen-")?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Names (relative to the generation) and sizes of the objects under generation `id`.
    pub async fn list_generation(&self, id: u64) -> Result<std::collections::HashMap<String, u64>> {
        let dir = self.key(&generation_name(id));
        let mut out = std::collections::HashMap::new();
        let mut listing = self.store.list(Some(&dir));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| store_error(&dir, e))?;
            let rel: Option<Vec<String>> = meta
                .location
                .prefix_match(&dir)
                .map(|rel| rel.map(|p| p.as_ref().to_string()).collect());
            if let Some(rel) = rel {
                out.insert(rel.join("/"), meta.size);
            }
        }
        Ok(out)
    }

    /// Upload a local file as file `entry.path` of generation `id`, checking it against the
    /// entry's size and SHA-256 first (a damaged local file is never published).
    pub async fn upload_file(&self, id: u64, entry: &FileEntry, src: &Path) -> Result<()> {
        let key = self.file_key(id, &entry.path);
        let size = tokio::fs::metadata(src)
            .await
            .map_err(|e| EngineError::io(src, e))?
            .len();
        if size != entry.bytes {
            return Err(EngineError::corrupt(
                src,
                format!("{size} bytes, the manifest says {}", entry.bytes),
            ));
        }
        if size <= MULTIPART_BYTES {
            let bytes = tokio::fs::read(src)
                .await
                .map_err(|e| EngineError::io(src, e))?;
            check_sha(src, &bytes, &entry.sha256)?;
            return self.put_raw(&key, bytes.into()).await;
        }
        // large: hash while streaming the parts
        use tokio::io::AsyncReadExt;
        let mut file = tokio::fs::File::open(src)
            .await
            .map_err(|e| EngineError::io(src, e))?;
        let upload = self
            .store
            .put_multipart(&key)
            .await
            .map_err(|e| store_error(&key, e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut hasher = sha2::Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file
                .read(&mut buf)
                .await
                .map_err(|e| EngineError::io(src, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            writer
                .wait_for_capacity(CONCURRENT_TRANSFERS)
                .await
                .map_err(|e| store_error(&key, e))?;
            writer.write(&buf[..n]);
        }
        let sha = hex(&hasher.finalize());
        if sha != entry.sha256 {
            let _ = writer.abort().await;
            return Err(EngineError::corrupt(
                src,
                format!("SHA-256 {sha}, the manifest says {}", entry.sha256),
            ));
        }
        self.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes_up.fetch_add(size, Ordering::Relaxed);
        writer.finish().await.map_err(|e| store_error(&key, e))?;
        Ok(())
    }

    /// Copy file `rel` of generation `from` to generation `to` inside the store.
    pub async fn copy_file(&self, from: u64, to: u64, rel_from: &str, rel_to: &str) -> Result<()> {
        let (src, dst) = (self.file_key(from, rel_from), self.file_key(to, rel_to));
        self.stats.copies.fetch_add(1, Ordering::Relaxed);
        self.store
            .copy(&src, &dst)
            .await
            .map_err(|e| store_error(&dst, e))
    }

    /// Download file `entry.path` of generation `id` to `dst` (created, fsynced), checked
    /// against the entry's size and SHA-256; a mismatch removes `dst` and is an error.
    pub async fn download_file(&self, id: u64, entry: &FileEntry, dst: &Path) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        let key = self.file_key(id, &entry.path);
        if let Some(p) = dst.parent() {
            tokio::fs::create_dir_all(p)
                .await
                .map_err(|e| EngineError::io(p, e))?;
        }
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        let got = self
            .store
            .get(&key)
            .await
            .map_err(|e| store_error(&key, e))?;
        let mut stream = got.into_stream();
        let mut file = tokio::fs::File::create(dst)
            .await
            .map_err(|e| EngineError::io(dst, e))?;
        let mut hasher = sha2::Sha256::new();
        let mut size = 0u64;
        let result: Result<()> = async {
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| store_error(&key, e))?;
                hasher.update(&chunk);
                size += chunk.len() as u64;
                file.write_all(&chunk)
                    .await
                    .map_err(|e| EngineError::io(dst, e))?;
            }
            file.sync_all().await.map_err(|e| EngineError::io(dst, e))?;
            let sha = hex(&hasher.finalize());
            if size != entry.bytes || sha != entry.sha256 {
                return Err(EngineError::corrupt(
                    key.to_string(),
                    format!(
                        "downloaded {size} bytes with SHA-256 {sha}; the manifest says {} bytes, {}",
                        entry.bytes, entry.sha256
                    ),
                ));
            }
            Ok(())
        }
        .await;
        self.stats.bytes_down.fetch_add(size, Ordering::Relaxed);
        if result.is_err() {
            drop(file);
            let _ = tokio::fs::remove_file(dst).await;
        }
        result
    }

    /// Remove everything under generation `id`'s prefix, the manifest first (so a reader
    /// never finds a manifest whose files are going).
    pub async fn remove_generation(&self, id: u64) -> Result<()> {
        let manifest = self.file_key(id, MANIFEST_FILE);
        match self.store.delete(&manifest).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(store_error(&manifest, e)),
        }
        self.stats.deletes.fetch_add(1, Ordering::Relaxed);
        let dir = self.key(&generation_name(id));
        let keys: Vec<Key> = self
            .store
            .list(Some(&dir))
            .map(|m| m.map(|m| m.location))
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| store_error(&dir, e))?;
        for key in keys {
            self.stats.deletes.fetch_add(1, Ordering::Relaxed);
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_error(&key, e)),
            }
        }
        Ok(())
    }
}

fn parse_key<K: std::str::FromStr>(key: &str) -> Result<K> {
    key.parse()
        .map_err(|_| EngineError::input(format!("unknown object store option '{key}'")))
}

fn check_sha(path: &Path, bytes: &[u8], expected: &str) -> Result<()> {
    let sha = hex(&sha2::Sha256::digest(bytes));
    if sha != expected {
        return Err(EngineError::corrupt(
            path,
            format!("SHA-256 {sha}, the manifest says {expected}"),
        ));
    }
    Ok(())
}

/// A runtime for the blocking callers (the CLI, the writer's uploader thread).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| EngineError::Internal(format!("starting an async runtime: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Remote {
        Remote::with_store(
            Arc::new(object_store::memory::InMemory::new()),
            Key::from("vegdb/test"),
            "memory://vegdb/test",
        )
    }

    #[tokio::test]
    async fn current_moves_only_from_the_version_read() {
        let r = memory();
        assert_eq!(r.current().await.unwrap(), None);
        assert!(r.set_current(None, 1).await.unwrap());
        // a second create loses
        assert!(!r.set_current(None, 2).await.unwrap());
        let c1 = r.current().await.unwrap().unwrap();
        assert_eq!(c1.generation, 1);
        assert!(r.set_current(Some(&c1), 2).await.unwrap());
        // the version read before the other move is stale now
        assert!(!r.set_current(Some(&c1), 3).await.unwrap());
        assert_eq!(r.current().await.unwrap().unwrap().generation, 2);
    }

    #[tokio::test]
    async fn a_claim_is_ours_again_and_theirs_for_others() {
        let r = memory();
        assert_eq!(r.claim(5, "a").await.unwrap(), Claim::Ours);
        assert_eq!(r.claim(5, "a").await.unwrap(), Claim::Ours);
        assert_eq!(r.claim(5, "b").await.unwrap(), Claim::Theirs("a".into()));
        assert_eq!(r.generation_prefixes().await.unwrap(), vec![5]);
        r.remove_generation(5).await.unwrap();
        assert!(r.generation_prefixes().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn downloads_are_checked_against_the_manifest() {
        let r = memory();
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("a.parquet");
        std::fs::write(&src, b"hello").unwrap();
        let mut entry = FileEntry {
            path: "objects/a.parquet".into(),
            rows: 0,
            bytes: 5,
            sha256: hex(&sha2::Sha256::digest(b"hello")),
            type_id: None,
            first_id: None,
        };
        r.upload_file(1, &entry, &src).await.unwrap();
        let dst = tmp.path().join("out/a.parquet");
        r.download_file(1, &entry, &dst).await.unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), b"hello");
        // a file that does not match its entry is neither uploaded nor kept when downloaded
        entry.sha256 = hex(&sha2::Sha256::digest(b"other"));
        assert!(r.upload_file(2, &entry, &src).await.is_err());
        assert!(r.download_file(1, &entry, &dst).await.is_err());
        assert!(!dst.exists());
        assert_eq!(
            r.list_generation(1).await.unwrap().get("objects/a.parquet"),
            Some(&5)
        );
    }
}
