//! Per object type, each object's pieces: the network rows its placements overlap (the rule of
//! the area bitmaps, `bitmaps.rs`) with the length of the placement on each row, in placement
//! order, as flat arrays. Built on first use by the grouped statistics
//! (`generation::TypeData::pieces`), so a grouping pass reads them in order instead of looking
//! up every placement's link in the network.

use std::ops::Range;

use super::bitmaps::part_length;
use crate::snapshot::columns::{ObjectTable, RoadNetwork};

/// Object row `o`'s pieces are `rows[offsets[o]..offsets[o + 1]]` with `length_m` alike.
#[derive(Debug, Default)]
pub struct ObjectPieces {
    offsets: Vec<u32>,
    /// The network row of each piece.
    pub rows: Vec<u32>,
    /// The placement's length on that row, meters (0 for a point).
    pub length_m: Vec<f64>,
}

impl ObjectPieces {
    pub fn build(table: &ObjectTable, network: &RoadNetwork) -> ObjectPieces {
        let mut out = ObjectPieces {
            offsets: Vec::with_capacity(table.len() + 1),
            rows: Vec::with_capacity(table.loc_link.len()),
            length_m: Vec::with_capacity(table.loc_link.len()),
        };
        out.offsets.push(0);
        for row in 0..table.len() {
            for p in table.placements(row) {
                let (from, to) = (table.loc_from[p], table.loc_to[p]);
                for r in network.rows_overlapping(table.loc_link[p], from, to) {
                    out.rows.push(r as u32);
                    out.length_m.push(part_length(network, r, from, to));
                }
            }
            out.offsets.push(out.rows.len() as u32);
        }
        out
    }

    /// The pieces of object row `o` (indexes into `rows` and `length_m`).
    pub fn of(&self, o: usize) -> Range<usize> {
        self.offsets[o] as usize..self.offsets[o + 1] as usize
    }
}

/// A type's stretch placements (`from < to`) ordered by (link, placement): `links[i]` is the
/// link of placement `placements[i]` (an index into the table's `loc_*` columns) of object row
/// `rows[i]`. 16 bytes per placement; the overlay gathers a link's placements with two binary
/// searches instead of a pass over every object.
#[derive(Debug, Default)]
pub struct LinkPlacements {
    pub links: Vec<u64>,
    pub placements: Vec<u32>,
    pub rows: Vec<u32>,
}

impl LinkPlacements {
    pub fn build(table: &ObjectTable) -> LinkPlacements {
        let mut all: Vec<(u64, u32, u32)> = Vec::new();
        for row in 0..table.len() {
            for p in table.placements(row) {
                if table.loc_from[p] < table.loc_to[p] {
                    all.push((table.loc_link[p], p as u32, row as u32));
                }
            }
        }
        all.sort_unstable();
        LinkPlacements {
            links: all.iter().map(|a| a.0).collect(),
            placements: all.iter().map(|a| a.1).collect(),
            rows: all.iter().map(|a| a.2).collect(),
        }
    }

    /// The entries of `link` (indexes into the three lists).
    pub fn on(&self, link: u64) -> Range<usize> {
        let start = self.links.partition_point(|&l| l < link);
        let end = start + self.links[start..].partition_point(|&l| l == link);
        start..end
    }
}

/// Each object's distinct codes of one area kind (municipality, county, ...) with the length of
/// its placements inside each: the pieces of [`ObjectPieces`] merged by their network row's
/// code. A grouping by that area reads one entry per object and area instead of one per piece.
#[derive(Debug, Default)]
pub struct AreaRuns {
    offsets: Vec<u32>,
    /// The object row of each entry (a pass over every object reads the entries in order).
    pub owners: Vec<u32>,
    /// The end of each run of consecutive entries with one code (objects in a row are mostly
    /// in one area, so a pass over every object reads an area's slot once per run).
    pub code_runs: Vec<u32>,
    /// The area code of each entry.
    pub codes: Vec<u32>,
    /// The object's length inside that area, meters (0 for a point or a touching end).
    pub length_m: Vec<f64>,
}

impl AreaRuns {
    /// The runs of `objects` objects from their pieces, `code_of_row` giving a network row's
    /// area code. Codes are in the order of the object's first piece in each.
    pub fn build(
        pieces: &ObjectPieces,
        objects: usize,
        code_of_row: impl Fn(usize) -> u32,
    ) -> AreaRuns {
        let mut out = AreaRuns {
            offsets: Vec::with_capacity(objects + 1),
            owners: Vec::with_capacity(objects),
            code_runs: Vec::new(),
            codes: Vec::with_capacity(objects),
            length_m: Vec::with_capacity(objects),
        };
        out.offsets.push(0);
        for o in 0..objects {
            let start = out.codes.len();
            for k in pieces.of(o) {
                let code = code_of_row(pieces.rows[k] as usize);
                match out.codes[start..].iter().position(|&c| c == code) {
                    Some(i) => out.length_m[start + i] += pieces.length_m[k],
                    None => {
                        out.owners.push(o as u32);
                        out.codes.push(code);
                        out.length_m.push(pieces.length_m[k]);
                    }
                }
            }
            out.offsets.push(out.codes.len() as u32);
        }
        for k in 1..=out.codes.len() {
            if k == out.codes.len() || out.codes[k] != out.codes[k - 1] {
                out.code_runs.push(k as u32);
            }
        }
        out
    }

    /// Runs from their entries (ascending owners, each entry's code and length), for tests.
    #[cfg(test)]
    pub fn from_entries(owners: &[u32], codes: &[u32], length_m: &[f64]) -> AreaRuns {
        let objects = owners.last().map_or(0, |&o| o as usize + 1);
        let offsets = (0..=objects)
            .map(|o| owners.partition_point(|&x| (x as usize) < o) as u32)
            .collect();
        let code_runs = (1..=codes.len())
            .filter(|&k| k == codes.len() || codes[k] != codes[k - 1])
            .map(|k| k as u32)
            .collect();
        AreaRuns {
            offsets,
            owners: owners.to_vec(),
            code_runs,
            codes: codes.to_vec(),
            length_m: length_m.to_vec(),
        }
    }

    /// The entries of object row `o` (indexes into `codes` and `length_m`).
    pub fn of(&self, o: usize) -> Range<usize> {
        self.offsets[o] as usize..self.offsets[o + 1] as usize
    }
}
