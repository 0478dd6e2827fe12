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
