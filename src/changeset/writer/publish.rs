//! Publishing a batch's generation: the parent's files shared or rewritten as
//! `snapshot::plan` decides, the deleted table and the changesets' results written, the
//! generation published crash-safely; and removing old generations.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::Writer;
use crate::changeset::validate::Outcome;
use crate::changeset::working::Merged;
use crate::error::{EngineError, Result};
use crate::failpoints::fail_point;
use crate::generation::Generation;
use crate::snapshot::columns::DeletedTable;
use crate::snapshot::manifest::{FileEntry, Manifest};
use crate::snapshot::parquet_write::{write_deleted, DELETED_FILE};
use crate::snapshot::plan::{plan, write_chunks, Touched};
use crate::util::hex;

/// Results of the changesets a generation applied (inside the generation directory).
pub const RESULTS_FILE: &str = "changesets.json";

impl Writer {
    /// Write the touched partitions into a new generation and publish it.
    pub(super) fn publish(
        &self,
        base: &Generation,
        tables: BTreeMap<u32, Merged>,
        deleted: Option<DeletedTable>,
        parents: Arc<HashMap<u64, (u32, u64)>>,
        applied: &[(String, Outcome)],
    ) -> Result<Generation> {
        use rayon::prelude::*;
        let t0 = Instant::now();
        let id = self.data.next_id()?;
        let mut staging = self.data.begin(id)?;
        // shared: files of untouched types, and the chunks of touched types no edit falls in
        let touched: BTreeMap<u32, Touched> = tables
            .iter()
            .map(|(&t, m)| {
                let touched = Touched {
                    ids: &m.table.id,
                    edited_ids: &m.edited_ids,
                };
                (t, touched)
            })
            .collect();
        let mut replaced = vec![RESULTS_FILE];
        if deleted.is_some() {
            replaced.push(DELETED_FILE);
        }
        let layout = plan(&base.manifest.files, &touched, &replaced);
        for entry in layout.shared {
            staging.share_from(&base.dir, entry)?;
        }
        let rewrite = layout.rewrite;
        let dir = staging.dir.clone();
        let written: Vec<Vec<FileEntry>> = rewrite
            .par_iter()
            .map(|(t, rows)| write_chunks(&dir, &tables[t].table, rows.clone(), self.chunk_rows))
            .collect::<Result<_>>()?;
        staging.files.extend(written.into_iter().flatten());
        if let Some(d) = &deleted {
            staging.files.push(write_deleted(&dir, d)?);
        }
        let results: BTreeMap<&str, &Outcome> =
            applied.iter().map(|(id, o)| (id.as_str(), o)).collect();
        let bytes =
            serde_json::to_vec(&results).map_err(|e| EngineError::Internal(e.to_string()))?;
        staging.files.push(write_results(&dir, &bytes)?);
        fail_point("before-publish");
        #[cfg(any(test, feature = "failpoints"))]
        if self
            .fail_next_publish
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return Err(EngineError::io(
                &dir,
                std::io::Error::other("injected failure: no space left on device"),
            ));
        }
        let manifest = Manifest {
            format_version: Manifest::version_for(&staging.files),
            generation: id,
            parent: Some(base.id),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            datakatalog_versjon: base.manifest.datakatalog_versjon.clone(),
            origin: format!("{} changeset(s)", applied.len()),
            provenance: crate::snapshot::manifest::Provenance::changeset(&base.manifest),
            changesets: applied.iter().map(|(id, _)| id.clone()).collect(),
            last_event_ids: base.manifest.last_event_ids.clone(),
            files: Vec::new(),
        };
        let written_ms = t0.elapsed().as_millis() as u64;
        let final_dir: PathBuf = self.data.publish(staging, manifest)?;
        if let Some(p) = self.publisher.get() {
            p.notify(); // upload it to the store (the changesets are accepted already)
        }
        let published_ms = t0.elapsed().as_millis() as u64;
        let manifest = Manifest::read(&final_dir)?;
        let tables = tables
            .into_iter()
            .map(|(t, m)| (t, (m.table, m.changes)))
            .collect();
        let g = base.derive(final_dir, manifest, tables, deleted, parents);
        tracing::debug!(
            generation = id,
            written_ms,
            published_ms,
            indexed_ms = t0.elapsed().as_millis() as u64,
            "generation published"
        );
        Ok(g)
    }

    pub(super) fn collect_garbage(&self) {
        if let Err(e) = self.data.collect_old_generations() {
            tracing::warn!(error = %e, "removing old generations failed");
        }
    }
}

/// Write the results file of a staged generation; its manifest entry.
fn write_results(dir: &std::path::Path, bytes: &[u8]) -> Result<FileEntry> {
    use sha2::Digest;
    crate::durable::write_durably(&dir.join(RESULTS_FILE), bytes)?;
    Ok(FileEntry {
        path: RESULTS_FILE.into(),
        rows: 0,
        bytes: bytes.len() as u64,
        sha256: hex(&sha2::Sha256::digest(bytes)),
        type_id: None,
        first_id: None,
    })
}

/// The results file of a generation (empty when it applied no changesets).
pub fn read_results(g: &Generation) -> Result<BTreeMap<String, Outcome>> {
    let path = g.dir.join(RESULTS_FILE);
    if !g.manifest.files.iter().any(|f| f.path == RESULTS_FILE) {
        return Ok(BTreeMap::new());
    }
    let bytes = std::fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt(&path, e.to_string()))
}
