//! Publishing a batch's generation through the generation builder (`snapshot::builder`: the
//! parent's files shared or rewritten as `snapshot::plan` decides, the deleted table written,
//! the generation published crash-safely) with the changesets' results; and removing old
//! generations.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::Writer;
use crate::changeset::validate::Outcome;
use crate::changeset::working::Merged;
use crate::error::{EngineError, Result};
use crate::failpoints::fail_point;
use crate::generation::Generation;
use crate::snapshot::builder::{Changes, Description, GenerationBuilder};
use crate::snapshot::columns::{DeletedTable, ObjectTable};
use crate::snapshot::manifest::{Manifest, Provenance};

/// Results of the changesets a generation applied (inside the generation directory).
pub use crate::snapshot::builder::RESULTS_FILE;

/// What a batch changes of its base generation (`Working::materialise`, `parents`, `history`).
pub(super) struct Batch {
    pub tables: BTreeMap<u32, Merged>,
    pub deleted: Option<DeletedTable>,
    pub parents: Arc<HashMap<u64, (u32, u64)>>,
    /// The complete new history of each type whose versions the batch ended.
    pub history: BTreeMap<u32, ObjectTable>,
}

impl Writer {
    /// Write the touched partitions (and the touched types' history) into a new generation
    /// and publish it.
    pub(super) fn publish(
        &self,
        base: &Generation,
        batch: Batch,
        applied: &[(String, Outcome)],
    ) -> Result<Generation> {
        let Batch {
            tables,
            deleted,
            parents,
            history,
        } = batch;
        let t0 = Instant::now();
        let staging = self.data.begin(self.data.next_id()?)?;
        let id = staging.id;
        let mut builder = GenerationBuilder::derive(staging, base.as_parent());
        // shared: files of untouched types, and the chunks of touched types no edit falls in
        builder.write_changes(&Changes {
            tables: tables.iter().map(|(&t, m)| (t, m.touched())).collect(),
            network: None,
            deleted: deleted.as_ref(),
            history: history.iter().map(|(&t, h)| (t, h)).collect(),
            network_history: None,
            chunk_rows: self.chunk_rows,
        })?;
        let results: BTreeMap<&str, &Outcome> =
            applied.iter().map(|(id, o)| (id.as_str(), o)).collect();
        let bytes =
            serde_json::to_vec(&results).map_err(|e| EngineError::Internal(e.to_string()))?;
        builder.write_results(&bytes)?;
        fail_point("before-publish");
        #[cfg(any(test, feature = "failpoints"))]
        if self
            .fail_next_publish
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return Err(EngineError::io(
                builder.dir(),
                std::io::Error::other("injected failure: no space left on device"),
            ));
        }
        let description = Description {
            origin: format!("{} changeset(s)", applied.len()),
            provenance: Provenance::changeset(&base.manifest),
            changesets: applied.iter().map(|(id, _)| id.clone()).collect(),
            last_event_ids: base.manifest.last_event_ids.clone(),
        };
        let written_ms = t0.elapsed().as_millis() as u64;
        let final_dir = builder.publish(&self.data, description)?.dir;
        if let Some(p) = self.publisher.get() {
            p.notify(); // upload it to the store (the changesets are accepted already)
        }
        let published_ms = t0.elapsed().as_millis() as u64;
        let manifest = Manifest::read(&final_dir)?;
        let tables = tables
            .into_iter()
            .map(|(t, m)| (t, (m.table, m.changes)))
            .collect();
        let g = base.derive(final_dir, manifest, tables, deleted, history, parents);
        self.stats.published(t0.elapsed().as_secs_f64());
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

/// The results file of a generation (empty when it applied no changesets).
pub fn read_results(g: &Generation) -> Result<BTreeMap<String, Outcome>> {
    let path = g.dir.join(RESULTS_FILE);
    if !g.manifest.files.iter().any(|f| f.path == RESULTS_FILE) {
        return Ok(BTreeMap::new());
    }
    let bytes = std::fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| EngineError::corrupt(&path, e.to_string()))
}
