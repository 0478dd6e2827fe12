//! Loading a generation that descends from the one in memory, reusing what did not change.
//!
//! Files are compared by their manifest SHA-256: a type whose chunk files are all unchanged
//! keeps its loaded table and index (shared `Arc`, no copy); a touched type is assembled from
//! the old table's rows of its unchanged chunks plus the changed chunk files read from disk,
//! and its index is updated in place when the old ids are a prefix of the new ones (the rows
//! of changed chunks are re-indexed, new rows appended), else rebuilt for that type only. The
//! network and its indexes are shared when the network file is unchanged; otherwise the
//! generation is loaded whole. The new generation is put together by `Generation::derive`,
//! the writer's own way of deriving the next generation in memory, so both paths share it.
//!
//! Followers use it: `serve --read-only` following a data directory (`changeset::adopt`) and
//! replicas following a store (`replica`), so a 10-object changeset costs reading one chunk
//! and an incremental index update rather than a full reload.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::{Generation, LoadStats};
use crate::error::{EngineError, Result};
use crate::index::bitmaps::RowChanges;
use crate::snapshot::columns::{DeletedTable, ObjectTable};
use crate::snapshot::manifest::{FileEntry, Manifest};
use crate::snapshot::parquet_read::{read_deleted, read_objects};
use crate::snapshot::parquet_write::{
    history_type_of, DELETED_FILE, NETWORK_FILE, NETWORK_HISTORY_FILE,
};

/// What a successor load reused and read.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SuccessorStats {
    /// Loaded whole (the network changed, or nothing could be reused).
    pub full_load: bool,
    /// Object types whose table and index were shared unchanged.
    pub types_shared: usize,
    /// Object types assembled anew (index updated or rebuilt).
    pub types_rebuilt: usize,
    /// Of those, types whose index was updated incrementally.
    pub types_updated_incrementally: usize,
    /// Object chunk files read from disk.
    pub chunks_read: usize,
    /// Object chunk files whose rows came from the old table.
    pub chunks_reused: usize,
    pub millis: u128,
}

fn by_path(m: &Manifest, path: &str) -> Option<String> {
    m.files
        .iter()
        .find(|f| f.path == path)
        .map(|f| f.sha256.clone())
}

/// Object files of a manifest per type, sorted by first id.
fn object_files(m: &Manifest) -> BTreeMap<u32, Vec<&FileEntry>> {
    let mut out: BTreeMap<u32, Vec<&FileEntry>> = BTreeMap::new();
    for f in &m.files {
        if let Some(t) = f.type_id {
            out.entry(t).or_default().push(f);
        }
    }
    for files in out.values_mut() {
        files.sort_by_key(|f| f.first_id.unwrap_or(0));
    }
    out
}

/// Rows of `table` that a file of `files` (sorted by first id) holds, by the chunk rule of
/// `snapshot::plan`: chunk i holds the ids from its first id (the first chunk: from 0) below
/// the next chunk's first id. None when the rows found do not match the file's row count.
fn chunk_rows(
    table: &ObjectTable,
    files: &[&FileEntry],
    i: usize,
) -> Option<std::ops::Range<usize>> {
    let lo = if i == 0 {
        0
    } else {
        files[i].first_id.unwrap_or(0)
    };
    let hi = files
        .get(i + 1)
        .and_then(|f| f.first_id)
        .unwrap_or(u64::MAX);
    let start = table.id.partition_point(|&id| id < lo);
    let end = table.id.partition_point(|&id| id < hi);
    (end - start == files[i].rows as usize).then_some(start..end)
}

/// How a successor's type table is put together, part by part in chunk order: rows of the old
/// table (`Ok`) or a file to read (`Err`).
type Part<'m> = std::result::Result<std::ops::Range<usize>, &'m FileEntry>;

/// A type assembled anew: its table, the index update (None: rebuild), chunks reused and read.
type Assembled = (u32, ObjectTable, Option<RowChanges>, usize, usize);

/// Every file of `manifest` in `dir` has the size the manifest says.
pub(super) fn check_sizes(dir: &Path, manifest: &Manifest) -> Result<()> {
    for f in &manifest.files {
        let p = dir.join(&f.path);
        let len = std::fs::metadata(&p)
            .map_err(|e| EngineError::io(&p, e))?
            .len();
        if len != f.bytes {
            return Err(EngineError::corrupt(
                &p,
                format!("size {len}, manifest says {}", f.bytes),
            ));
        }
    }
    Ok(())
}

impl Generation {
    /// Load the generation in `dir`, a successor of `self` (any generation whose files may
    /// share content with this one), reusing every unchanged file's loaded data. The result
    /// equals `Generation::load(dir)` (tests/changeset.rs and the unit test below compare).
    pub fn load_successor(&self, dir: &Path) -> Result<(Generation, SuccessorStats)> {
        let started = Instant::now();
        let manifest = Manifest::read(dir)?;
        check_sizes(dir, &manifest)?;
        let old = &self.manifest;
        let network_changed = |path: &str| by_path(old, path) != by_path(&manifest, path);
        if network_changed(NETWORK_FILE) || network_changed(NETWORK_HISTORY_FILE) {
            let (g, _): (Generation, LoadStats) = Generation::load(dir, &|_| {})?;
            let stats = SuccessorStats {
                full_load: true,
                types_rebuilt: g.objects.len(),
                millis: started.elapsed().as_millis(),
                ..Default::default()
            };
            return Ok((g, stats));
        }
        let mut stats = SuccessorStats::default();
        let work = self.parts_of(&manifest, &mut stats);
        use rayon::prelude::*;
        let built: Vec<Assembled> = work
            .into_par_iter()
            .map(|(t, parts)| self.assemble(dir, t, &parts))
            .collect::<Result<_>>()?;
        let mut tables = BTreeMap::new();
        let mut rebuilt_types = BTreeSet::new();
        for (t, table, changes, reused, read) in built {
            stats.types_rebuilt += 1;
            stats.types_updated_incrementally += usize::from(changes.is_some());
            stats.chunks_reused += reused;
            stats.chunks_read += read;
            rebuilt_types.insert(t);
            tables.insert(t, (table, changes));
        }
        let deleted = if by_path(old, DELETED_FILE) == by_path(&manifest, DELETED_FILE) {
            None
        } else if by_path(&manifest, DELETED_FILE).is_some() {
            Some(read_deleted(&dir.join(DELETED_FILE))?)
        } else {
            Some(DeletedTable::default())
        };
        let history = self.history_after(dir, &manifest)?;
        let parents = self.parents_after(&tables, &rebuilt_types);
        let g = self.derive(
            dir.to_path_buf(),
            manifest,
            tables,
            deleted,
            history,
            parents,
        );
        stats.millis = started.elapsed().as_millis();
        Ok((g, stats))
    }

    /// The types whose history file `manifest` changed (written anew, added or gone), each
    /// with its closed versions read from `dir` (empty when gone).
    fn history_after(&self, dir: &Path, manifest: &Manifest) -> Result<BTreeMap<u32, ObjectTable>> {
        let files = |m: &Manifest| -> BTreeMap<u32, String> {
            m.files
                .iter()
                .filter_map(|f| Some((history_type_of(&f.path)?, f.sha256.clone())))
                .collect()
        };
        let (before, after) = (files(&self.manifest), files(manifest));
        let mut out = BTreeMap::new();
        for (&t, sha) in &after {
            if before.get(&t) != Some(sha) {
                let path = dir.join(crate::snapshot::parquet_write::history_file(t));
                out.insert(
                    t,
                    crate::snapshot::parquet_read::read_history_objects(&path, t)?,
                );
            }
        }
        for &t in before.keys().filter(|t| !after.contains_key(t)) {
            out.insert(t, ObjectTable::new(t));
        }
        Ok(out)
    }

    /// The types of `manifest` that cannot be shared with `self`, each with its parts (the
    /// shared ones counted in `stats`).
    fn parts_of<'m>(
        &self,
        manifest: &'m Manifest,
        stats: &mut SuccessorStats,
    ) -> Vec<(u32, Vec<Part<'m>>)> {
        let old_files = object_files(&self.manifest);
        let new_files = object_files(manifest);
        let types: BTreeSet<u32> = old_files.keys().chain(new_files.keys()).copied().collect();
        let mut work: Vec<(u32, Vec<Part>)> = Vec::new();
        for t in types {
            let before = old_files.get(&t).map(Vec::as_slice).unwrap_or(&[]);
            let after = new_files.get(&t).map(Vec::as_slice).unwrap_or(&[]);
            let same = before.len() == after.len()
                && before
                    .iter()
                    .zip(after)
                    .all(|(a, b)| a.sha256 == b.sha256 && a.first_id == b.first_id);
            if same && (after.is_empty() || self.objects.contains_key(&t)) {
                stats.types_shared += usize::from(!after.is_empty());
                continue;
            }
            let old_table = self.objects.get(&t).map(|d| &d.table);
            let parts = after
                .iter()
                .map(|f| {
                    let reused = old_table.and_then(|table| {
                        let i = before.iter().position(|o| {
                            o.sha256 == f.sha256 && o.first_id == f.first_id && o.rows == f.rows
                        })?;
                        chunk_rows(table, before, i)
                    });
                    reused.ok_or(*f)
                })
                .collect();
            work.push((t, parts));
        }
        work
    }

    /// Type `t` put together from `parts`, with the update of its index when the old ids are a
    /// prefix of the new ones.
    fn assemble(&self, dir: &Path, t: u32, parts: &[Part]) -> Result<Assembled> {
        let old_table = self.objects.get(&t).map(|d| &d.table);
        let mut pieces = Vec::with_capacity(parts.len());
        // rows of the new table that came from files (re-indexed)
        let mut read_rows: Vec<std::ops::Range<usize>> = Vec::new();
        let (mut reused, mut read, mut row) = (0, 0, 0usize);
        for part in parts {
            let piece = match (part, old_table) {
                (Ok(rows), Some(table)) => {
                    reused += 1;
                    table.slice(rows.clone())
                }
                (Err(f), _) => {
                    read += 1;
                    read_objects(&dir.join(&f.path), t)?
                }
                (Ok(_), None) => {
                    return Err(EngineError::Internal(
                        "rows reused from a type that was not loaded".into(),
                    ))
                }
            };
            if part.is_err() {
                read_rows.push(row..row + piece.len());
            }
            row += piece.len();
            pieces.push(piece);
        }
        let table = if pieces.is_empty() {
            ObjectTable::new(t)
        } else {
            ObjectTable::concat(t, pieces).map_err(|e| EngineError::corrupt(dir, e))?
        };
        // old ids a prefix of the new ones: rows keep their numbers, so the index can
        // be updated (rows read from files replaced or appended)
        let changes = old_table
            .filter(|old| old.len() <= table.len() && old.id[..] == table.id[..old.len()])
            .map(|old| RowChanges {
                replaced: read_rows
                    .iter()
                    .flat_map(|r| r.clone())
                    .filter(|&r| r < old.len())
                    .collect(),
                appended_from: old.len(),
            });
        Ok((t, table, changes, reused, read))
    }

    /// The parents map of the successor: `self`'s, with the children of the rebuilt types
    /// taken from their new tables.
    fn parents_after(
        &self,
        tables: &BTreeMap<u32, (ObjectTable, Option<RowChanges>)>,
        rebuilt_types: &BTreeSet<u32>,
    ) -> Arc<HashMap<u64, (u32, u64)>> {
        if rebuilt_types.is_empty() {
            return self.parents.clone();
        }
        let mut p: HashMap<u64, (u32, u64)> = self
            .parents
            .iter()
            .filter(|(_, (t, _))| !rebuilt_types.contains(t))
            .map(|(&k, &v)| (k, v))
            .collect();
        for (table, _) in tables.values() {
            for row in 0..table.len() {
                for c in table.children(row) {
                    p.insert(table.child_id[c], (table.type_id, table.id[row]));
                }
            }
        }
        Arc::new(p)
    }
}
