//! Rewriting a generation in the format this build writes (`vegdb snapshot upgrade`): the
//! generation is loaded as the server loads it and its tables are written again with today's
//! writers (network, object chunks with located geometry and `bbox`, deleted objects, data
//! dictionary). Everything else the generation says is carried over unchanged: its other files
//! (the changesets' results) are shared, and the manifest keeps its changesets, upstream event
//! ids, provenance, catalogue version and `created` (the data did not change, so neither does
//! `datagrunnlag.sist_oppdatert`); `origin` gains a note saying it was rewritten.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Generation;
use crate::error::{EngineError, Result};
use crate::snapshot::builder::{Description, GenerationBuilder};
use crate::snapshot::manifest::{Manifest, Provenance, FORMAT_VERSION};
use crate::snapshot::parquet_read::{has_every_declared_child, has_every_network_column};
use crate::snapshot::parquet_write::{DELETED_FILE, NETWORK_FILE};
use crate::snapshot::store::{DataDir, Staging};
use crate::util::hex;

/// Whether a generation's files (in `dir`) are those of the format this build writes (nothing
/// to upgrade): the layout, in every object file every struct child the tables declare
/// (format 3 files written before placements had `lanes` are rewritten) and in the network
/// file every column (`end_date` came with format 4).
pub fn is_current_format(m: &Manifest, dir: &Path) -> Result<bool> {
    if m.format_version != FORMAT_VERSION || Manifest::version_for(&m.files) != FORMAT_VERSION {
        return Ok(false);
    }
    for f in m.files.iter().filter(|f| f.type_id.is_some()) {
        if !has_every_declared_child(&dir.join(&f.path))? {
            return Ok(false);
        }
    }
    has_every_network_column(&dir.join(NETWORK_FILE))
}

/// The note `origin` gains.
pub fn origin_note() -> String {
    format!("rewritten in format {FORMAT_VERSION} by vegdb snapshot upgrade")
}

/// Write the loaded generation `g` into `staging` in the current format (its tables written
/// anew, its other files shared from `g.dir`) and publish it into `data` under `parent`; the
/// manifest keeps what `g`'s says (see the module doc). Returns the published directory.
pub fn upgrade(
    g: &Generation,
    staging: Staging,
    parent: Option<u64>,
    data: &DataDir,
) -> Result<PathBuf> {
    let source = &g.manifest;
    let mut builder = GenerationBuilder::rewrite(staging, g.as_parent(), parent);
    let deleted = source.files.iter().any(|f| f.path == DELETED_FILE);
    builder.write_tables(
        &g.network,
        g.objects.values().map(|d| &*d.table),
        deleted.then_some(&*g.deleted),
    )?;
    builder.write_history(
        &g.network,
        &g.network_history,
        g.history.values().map(|t| &**t),
    )?;
    builder.share_untouched()?;
    let version = builder.format_version();
    if version != FORMAT_VERSION {
        return Err(EngineError::Internal(format!(
            "the upgraded generation's files are format {version}, not {FORMAT_VERSION}"
        )));
    }
    let description = Description {
        origin: format!("{} ({})", source.origin, origin_note()),
        provenance: Provenance::new(source.made_by(), source.provenance.source.clone()),
        changesets: source.changesets.clone(),
        last_event_ids: source.last_event_ids.clone(),
    };
    Ok(builder.publish(data, description)?.dir)
}

/// What an upgrade must keep of a generation, small enough to hold while the upgraded one is
/// loaded: network rows, and per object type a hash of its ids and versions (and of the
/// deleted objects' ids); of the history, per type a hash of its closed versions' ids,
/// versions and dates, and a hash of the network's closed rows' links and dates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    pub network_rows: usize,
    /// type id -> (objects, SHA-256 of ids and versions in id order)
    pub types: BTreeMap<u32, (usize, String)>,
    pub deleted: (usize, String),
    /// type id -> (closed versions, SHA-256 of their ids, versions, start and end dates)
    pub history: BTreeMap<u32, (usize, String)>,
    /// (closed network rows, SHA-256 of their link ids, positions and dates)
    pub network_history: (usize, String),
}

impl Content {
    pub fn of(g: &Generation) -> Content {
        let types = g
            .objects
            .iter()
            .filter(|(_, d)| !d.table.is_empty())
            .map(|(&t, d)| {
                let mut h = Sha256::new();
                for (id, v) in d.table.id.iter().zip(&d.table.version) {
                    h.update(id.to_le_bytes());
                    h.update(v.to_le_bytes());
                }
                (t, (d.table.len(), hex(&h.finalize())))
            })
            .collect();
        let mut h = Sha256::new();
        for id in &g.deleted.id {
            h.update(id.to_le_bytes());
        }
        let history = g
            .history
            .iter()
            .filter(|(_, t)| !t.is_empty())
            .map(|(&type_id, t)| {
                let mut h = Sha256::new();
                for r in 0..t.len() {
                    h.update(t.id[r].to_le_bytes());
                    h.update(t.version[r].to_le_bytes());
                    h.update(t.start_date[r].to_le_bytes());
                    h.update(t.end_date[r].to_le_bytes());
                }
                (type_id, (t.len(), hex(&h.finalize())))
            })
            .collect();
        let n = &g.network_history;
        let mut nh = Sha256::new();
        for r in 0..n.len() {
            nh.update(n.link_id[r].to_le_bytes());
            nh.update(n.from_pos[r].to_le_bytes());
            nh.update(n.to_pos[r].to_le_bytes());
            nh.update(n.start_date[r].to_le_bytes());
            nh.update(n.end_date[r].to_le_bytes());
        }
        Content {
            network_rows: g.network.len(),
            types,
            deleted: (g.deleted.id.len(), hex(&h.finalize())),
            history,
            network_history: (n.len(), hex(&nh.finalize())),
        }
    }

    /// How `after` differs from `self` (empty when it kept everything).
    pub fn differences(&self, after: &Content) -> Vec<String> {
        let mut problems = Vec::new();
        if self.network_rows != after.network_rows {
            problems.push(format!(
                "network: {} rows before, {} after",
                self.network_rows, after.network_rows
            ));
        }
        let keys: BTreeSet<&u32> = self.types.keys().chain(after.types.keys()).collect();
        for t in keys {
            match (self.types.get(t), after.types.get(t)) {
                (Some(a), Some(b)) if a == b => {}
                (Some((n, _)), Some((m, _))) => problems.push(format!(
                    "type {t}: object ids or versions differ ({n} objects before, {m} after)"
                )),
                (Some((n, _)), None) => {
                    problems.push(format!("type {t}: {n} objects before, none after"))
                }
                (None, _) => problems.push(format!("type {t}: no objects before, some after")),
            }
        }
        if self.deleted != after.deleted {
            problems.push(format!(
                "deleted objects differ ({} before, {} after)",
                self.deleted.0, after.deleted.0
            ));
        }
        let keys: BTreeSet<&u32> = self.history.keys().chain(after.history.keys()).collect();
        for t in keys {
            let (a, b) = (self.history.get(t), after.history.get(t));
            if a != b {
                let n = |c: Option<&(usize, String)>| c.map_or(0, |c| c.0);
                problems.push(format!(
                    "type {t}: closed versions differ ({} before, {} after)",
                    n(a),
                    n(b)
                ));
            }
        }
        if self.network_history != after.network_history {
            problems.push(format!(
                "closed network rows differ ({} before, {} after)",
                self.network_history.0, after.network_history.0
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content() -> Content {
        Content {
            network_rows: 10,
            types: [(105, (3, "aa".to_string())), (95, (2, "bb".to_string()))].into(),
            deleted: (1, "cc".to_string()),
            history: [(105, (4, "ee".to_string()))].into(),
            network_history: (2, "ff".to_string()),
        }
    }

    #[test]
    fn content_differences_name_what_changed() {
        let before = content();
        assert!(before.differences(&content()).is_empty());
        let mut after = content();
        after.network_rows = 9;
        after.types.insert(105, (3, "ab".to_string()));
        after.types.remove(&95);
        after.types.insert(7, (1, "dd".to_string()));
        after.deleted = (2, "ce".to_string());
        after.history.insert(105, (4, "ef".to_string()));
        after.history.insert(95, (1, "gg".to_string()));
        after.network_history = (0, "00".to_string());
        let found = before.differences(&after);
        assert_eq!(
            found,
            vec![
                "network: 10 rows before, 9 after".to_string(),
                "type 7: no objects before, some after".to_string(),
                "type 95: 2 objects before, none after".to_string(),
                "type 105: object ids or versions differ (3 objects before, 3 after)".to_string(),
                "deleted objects differ (1 before, 2 after)".to_string(),
                "type 95: closed versions differ (0 before, 1 after)".to_string(),
                "type 105: closed versions differ (4 before, 4 after)".to_string(),
                "closed network rows differ (2 before, 0 after)".to_string(),
            ]
        );
    }
}
