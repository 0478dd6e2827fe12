//! A followed object store (`s3://bucket/prefix`, `az://…`, `gs://…`) through
//! `remote::Remote`: the writer's store layout (`CURRENT`, `gen-NNNNNN/…`), credentials and
//! endpoint from the environment.

use std::path::Path;

use super::source::{Head, Source};
use crate::error::{EngineError, Result};
use crate::remote::Remote;
use crate::snapshot::manifest::{FileEntry, Manifest};

pub struct RemoteSource {
    remote: Remote,
    /// Drives the store's requests; callers block on it (several at once: downloads run
    /// in parallel).
    runtime: tokio::runtime::Runtime,
}

impl RemoteSource {
    pub fn new(remote: Remote) -> Result<RemoteSource> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("vegdb-store")
            .enable_all()
            .build()
            .map_err(|e| EngineError::Internal(format!("starting an async runtime: {e}")))?;
        Ok(RemoteSource { remote, runtime })
    }

    /// Requests and bytes the store was asked for so far.
    pub fn counts(&self) -> crate::remote::Counts {
        self.remote.stats.counts()
    }
}

impl Source for RemoteSource {
    fn describe(&self) -> String {
        self.remote.url().to_string()
    }

    fn current(&self) -> Result<Option<Head>> {
        Ok(self.runtime.block_on(self.remote.current())?.map(|c| Head {
            generation: c.generation,
            modified: Some(c.modified),
        }))
    }

    fn manifest(&self, id: u64) -> Result<Manifest> {
        self.runtime
            .block_on(self.remote.manifest(id))?
            .ok_or_else(|| {
                EngineError::NotFound(format!(
                    "generation {id} has no manifest in {}",
                    self.remote.url()
                ))
            })
    }

    fn fetch(&self, id: u64, entry: &FileEntry, dest: &Path) -> Result<()> {
        self.runtime
            .block_on(self.remote.download_file(id, entry, dest))
    }

    fn verifies(&self) -> bool {
        // `Remote::download_file` checks size and SHA-256 while streaming
        true
    }
}

/// The source an object store URL names.
pub fn open(url: &str) -> Result<Box<dyn Source>> {
    Ok(Box::new(RemoteSource::new(Remote::open(url)?)?))
}
