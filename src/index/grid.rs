//! A uniform grid over the straight pieces of every road link segment, for nearest-position
//! queries with a bounded search radius (`maks_avstand`, 30 m by default). Pieces are stored
//! flat, grouped by cell, so a query reads a few contiguous runs and computes exact
//! point-to-segment distances. Radii spanning more than `MAX_CELLS_PER_AXIS` cells are
//! answered by the R-tree instead.

use std::collections::HashMap;

use crate::snapshot::columns::RoadNetwork;

pub const CELL_M: f64 = 64.0;
pub const MAX_CELLS_PER_AXIS: i64 = 9;

#[derive(Debug, Clone, Copy)]
pub struct Piece {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
    pub row: u32,
}

/// Squared distance from (x, y) to the segment (x0, y0)-(x1, y1). The one formula used by the
/// grid, the R-tree path and the brute-force oracle, so equal inputs give equal answers.
#[inline]
pub fn segment_distance2(x: f64, y: f64, x0: f64, y0: f64, x1: f64, y1: f64) -> f64 {
    let (dx, dy) = (x1 - x0, y1 - y0);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((x - x0) * dx + (y - y0) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (px, py) = (x0 + t * dx - x, y0 + t * dy - y);
    px * px + py * py
}

#[inline]
fn cell_of(v: f64) -> i64 {
    (v / CELL_M).floor() as i64
}

#[inline]
fn key(cx: i64, cy: i64) -> u64 {
    ((cx as u64 & 0xFFFF_FFFF) << 32) | (cy as u64 & 0xFFFF_FFFF)
}

#[derive(Debug, Default)]
pub struct SegmentGrid {
    pieces: Vec<Piece>,
    /// cell key -> (start, len) into `pieces`
    cells: HashMap<u64, (u32, u32)>,
}

impl SegmentGrid {
    pub fn build(n: &RoadNetwork) -> SegmentGrid {
        let mut keyed: Vec<(u64, Piece)> = Vec::with_capacity(n.coords.len() + n.len() / 2);
        for row in 0..n.len() {
            for w in n.geometry(row).windows(2) {
                let p = Piece {
                    x0: w[0][0],
                    y0: w[0][1],
                    x1: w[1][0],
                    y1: w[1][1],
                    row: row as u32,
                };
                let (cx0, cx1) = (cell_of(p.x0.min(p.x1)), cell_of(p.x0.max(p.x1)));
                let (cy0, cy1) = (cell_of(p.y0.min(p.y1)), cell_of(p.y0.max(p.y1)));
                for cx in cx0..=cx1 {
                    for cy in cy0..=cy1 {
                        keyed.push((key(cx, cy), p));
                    }
                }
            }
        }
        keyed.sort_unstable_by_key(|(k, p)| (*k, p.row));
        let mut cells = HashMap::with_capacity(keyed.len() / 4);
        let mut pieces = Vec::with_capacity(keyed.len());
        let mut i = 0;
        while i < keyed.len() {
            let k = keyed[i].0;
            let start = pieces.len() as u32;
            while i < keyed.len() && keyed[i].0 == k {
                pieces.push(keyed[i].1);
                i += 1;
            }
            cells.insert(k, (start, pieces.len() as u32 - start));
        }
        SegmentGrid { pieces, cells }
    }

    /// Can a query of this radius be answered from the grid?
    pub fn covers(&self, radius: f64) -> bool {
        ((2.0 * radius / CELL_M).ceil() as i64) < MAX_CELLS_PER_AXIS
    }

    /// Call `visit(row, d2)` for every piece within `radius` of (x, y) (a row may come more than
    /// once).
    #[inline]
    pub fn visit_within(&self, x: f64, y: f64, radius: f64, mut visit: impl FnMut(u32, f64)) {
        let r2 = radius * radius;
        for cx in cell_of(x - radius)..=cell_of(x + radius) {
            for cy in cell_of(y - radius)..=cell_of(y + radius) {
                if let Some(&(start, len)) = self.cells.get(&key(cx, cy)) {
                    for p in &self.pieces[start as usize..(start + len) as usize] {
                        let d2 = segment_distance2(x, y, p.x0, p.y0, p.x1, p.y1);
                        if d2 <= r2 {
                            visit(p.row, d2);
                        }
                    }
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
}
