//! The layout of a generation derived from its parent: which of the parent's files are shared
//! unchanged (hard links) and which row ranges of the touched types are written as new chunk
//! files, and how a range is cut into chunks. The writer carries the plan out; the decisions
//! are the snapshot's.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use super::columns::{ObjectTable, RoadNetwork};
use super::manifest::FileEntry;
use super::parquet_write::{chunk_file, write_objects_at};
use crate::error::Result;

/// A type whose table the new generation replaces.
#[derive(Debug, Clone, Copy)]
pub struct Touched<'t> {
    /// The new table's object ids, ascending.
    pub ids: &'t [u64],
    /// Ids the edits touched (changed, removed or added), ascending.
    pub edited_ids: &'t [u64],
}

/// What the new generation does with the parent's files.
#[derive(Debug, Default, PartialEq)]
pub struct ChunkPlan<'p> {
    /// Parent files shared unchanged, in the parent manifest's order, then per touched type.
    pub shared: Vec<&'p FileEntry>,
    /// Row ranges of touched types' new tables to write as chunk files.
    pub rewrite: Vec<(u32, Range<usize>)>,
}

/// Plan a generation from `parent_files`. Files of untouched types are shared, except the
/// untyped files named in `replaced` (the new generation writes its own). Of a touched type,
/// a chunk no edit falls in is shared and the rows of every other chunk are rewritten; a
/// single-file partition (the first format) is rewritten as chunks once.
pub fn plan<'p>(
    parent_files: &'p [FileEntry],
    touched: &BTreeMap<u32, Touched>,
    replaced: &[&str],
) -> ChunkPlan<'p> {
    let mut out = ChunkPlan::default();
    let mut chunks: BTreeMap<u32, Vec<&FileEntry>> = BTreeMap::new();
    for entry in parent_files {
        match entry.type_id {
            Some(t) if touched.contains_key(&t) => chunks.entry(t).or_default().push(entry),
            _ if replaced.contains(&entry.path.as_str()) => {}
            _ => out.shared.push(entry),
        }
    }
    for (&t, table) in touched {
        let mut parts = chunks.remove(&t).unwrap_or_default();
        parts.sort_by_key(|e| e.first_id.unwrap_or(0));
        if parts.iter().any(|e| e.first_id.is_none()) {
            parts.clear();
        }
        plan_type(t, &parts, table, &mut out);
    }
    out
}

/// One touched type with its parent chunks `parts` (sorted by first id).
fn plan_type<'p>(t: u32, parts: &[&'p FileEntry], table: &Touched, out: &mut ChunkPlan<'p>) {
    let ids = table.ids;
    let mut row = 0usize;
    for (i, entry) in parts.iter().enumerate() {
        let lo = entry.first_id.unwrap_or(0);
        let hi = parts
            .get(i + 1)
            .and_then(|e| e.first_id)
            .unwrap_or(u64::MAX);
        let end = row + ids[row..].partition_point(|&id| id < hi);
        // the first chunk also takes ids below its first id (new objects never are, but a
        // chunk's range starts at the previous chunk's end)
        let first = if i == 0 { 0 } else { lo };
        let start = ids.partition_point(|&id| id < first).max(row);
        let lo_edit = table.edited_ids.partition_point(|&id| id < first);
        let touched = table.edited_ids.get(lo_edit).is_some_and(|&id| id < hi);
        if touched {
            if end > start {
                out.rewrite.push((t, start..end));
            }
        } else {
            out.shared.push(entry);
        }
        row = end;
    }
    if parts.is_empty() && !ids.is_empty() {
        out.rewrite.push((t, 0..ids.len()));
    }
}

/// Write rows `rows` of a table as chunk files (located on `network`): one file, or pieces of
/// `chunk_rows` when the range has grown past twice that.
pub fn write_chunks(
    dir: &Path,
    network: &RoadNetwork,
    table: &ObjectTable,
    rows: Range<usize>,
    chunk_rows: usize,
) -> Result<Vec<FileEntry>> {
    let mut out = Vec::new();
    for piece in cut(rows, chunk_rows) {
        let part = table.slice(piece.clone());
        let path = chunk_file(table.type_id, table.id[piece.start]);
        out.push(write_objects_at(dir, &part, network, &path)?);
    }
    Ok(out)
}

/// The pieces `write_chunks` writes: the whole range, or `chunk_rows` each (the last one
/// shorter) once it holds more than twice that.
fn cut(rows: Range<usize>, chunk_rows: usize) -> Vec<Range<usize>> {
    let step = if rows.len() > 2 * chunk_rows {
        chunk_rows
    } else {
        rows.len()
    };
    let mut out = Vec::new();
    let mut a = rows.start;
    while a < rows.end {
        let b = (a + step).min(rows.end);
        out.push(a..b);
        a = b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, type_id: Option<u32>, first_id: Option<u64>) -> FileEntry {
        FileEntry {
            path: path.into(),
            rows: 0,
            bytes: 0,
            sha256: String::new(),
            type_id,
            first_id,
        }
    }

    /// Type 7 in three chunks starting at ids 1, 100 and 200; an untouched type 8; the
    /// network; the deleted table.
    fn parent() -> Vec<FileEntry> {
        vec![
            file("network.parquet", None, None),
            file("objects/type-7-1", Some(7), Some(1)),
            file("objects/type-7-200", Some(7), Some(200)),
            file("objects/type-7-100", Some(7), Some(100)),
            file("objects/type-8-1", Some(8), Some(1)),
            file("objects/deleted.parquet", None, None),
        ]
    }

    fn paths<'a>(p: &'a ChunkPlan) -> Vec<&'a str> {
        p.shared.iter().map(|e| e.path.as_str()).collect()
    }

    /// Only the chunk an edit falls in is rewritten (with its new rows); the rest is shared.
    #[test]
    fn only_edited_chunks_are_rewritten() {
        let files = parent();
        // ids of the new table: 1..=3 (chunk 1), 100, 150 (chunk 100, 150 edited), 200, 201
        let ids = [1, 2, 3, 100, 150, 200, 201];
        let touched = BTreeMap::from([(
            7,
            Touched {
                ids: &ids,
                edited_ids: &[150],
            },
        )]);
        let p = plan(&files, &touched, &["objects/deleted.parquet"]);
        assert_eq!(
            paths(&p),
            [
                "network.parquet",
                "objects/type-8-1",
                "objects/type-7-1",
                "objects/type-7-200"
            ]
        );
        assert_eq!(p.rewrite, vec![(7, 3..5)]);
    }

    /// New objects beyond the last chunk land in it; an edit in every chunk rewrites all.
    #[test]
    fn edits_everywhere_rewrite_every_chunk() {
        let files = parent();
        let ids = [1, 100, 200, 300];
        let touched = BTreeMap::from([(
            7,
            Touched {
                ids: &ids,
                edited_ids: &[1, 100, 300],
            },
        )]);
        let p = plan(&files, &touched, &[]);
        assert_eq!(
            paths(&p),
            [
                "network.parquet",
                "objects/type-8-1",
                "objects/deleted.parquet"
            ]
        );
        assert_eq!(p.rewrite, vec![(7, 0..1), (7, 1..2), (7, 2..4)]);
    }

    /// A single-file partition (first format) is rewritten whole, as chunks.
    #[test]
    fn a_single_file_partition_is_rewritten_whole() {
        let files = vec![file("objects/type-7.parquet", Some(7), None)];
        let ids = [5, 6, 7];
        let touched = BTreeMap::from([(
            7,
            Touched {
                ids: &ids,
                edited_ids: &[6],
            },
        )]);
        let p = plan(&files, &touched, &[]);
        assert!(p.shared.is_empty());
        assert_eq!(p.rewrite, vec![(7, 0..3)]);
        // a type that lost every object writes nothing
        let empty = BTreeMap::from([(
            7,
            Touched {
                ids: &[],
                edited_ids: &[6],
            },
        )]);
        assert_eq!(plan(&files, &empty, &[]).rewrite, vec![]);
    }

    #[test]
    fn ranges_are_cut_only_past_twice_the_chunk_size() {
        assert_eq!(cut(0..20, 10), vec![0..20]);
        assert_eq!(cut(5..26, 10), vec![5..15, 15..25, 25..26]);
        assert!(cut(3..3, 10).is_empty());
    }
}
