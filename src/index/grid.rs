//! A uniform grid over the straight pieces of every road link segment, for nearest-position
//! queries with a bounded search radius (`maks_avstand`, 30 m by default). Pieces are stored
//! flat, grouped by cell, so a query reads a few contiguous runs and computes exact
//! point-to-segment distances. Radii spanning more than `MAX_CELLS_PER_AXIS` cells are
//! answered by the R-tree instead.

use crate::snapshot::columns::RoadNetwork;

pub const CELL_M: f64 = 128.0;
pub const MAX_CELLS_PER_AXIS: i64 = 9;

#[derive(Debug, Clone, Copy)]
pub struct Piece {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
    /// 2D length along the row's geometry to (x0, y0).
    pub along_m: f64,
    pub z0: f32,
    pub z1: f32,
    pub row: u32,
    /// `FLAG_*` bits of the row, so common filters need no lookup.
    pub flags: u8,
}

impl Piece {
    /// Parameter 0..=1 of the closest point on this piece to (x, y).
    #[inline]
    pub fn closest_t(&self, x: f64, y: f64) -> f64 {
        let (dx, dy) = (self.x1 - self.x0, self.y1 - self.y0);
        let len2 = dx * dx + dy * dy;
        if len2 > 0.0 {
            (((x - self.x0) * dx + (y - self.y0) * dy) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    #[inline]
    pub fn length(&self) -> f64 {
        ((self.x1 - self.x0).powi(2) + (self.y1 - self.y0).powi(2)).sqrt()
    }
}

pub const FLAG_CONNECTION: u8 = 1;
pub const FLAG_DETAILED: u8 = 2;

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

/// Rows of cells per block of the dense block index (64 cells = 4 km).
const BLOCK_SHIFT: i64 = 6;

#[derive(Debug, Clone, Copy)]
struct Cell {
    cy: i32,
    start: u32,
}

/// Non-empty cells sorted by (column, row), with their pieces stored contiguously. A dense
/// index over (column, block of 64 rows) points at the first cell of each block, so a query
/// reads one index entry and one short run of cells and pieces per column.
#[derive(Debug, Default)]
pub struct SegmentGrid {
    pieces: Vec<Piece>,
    /// One extra cell at the end holds the end of the last run.
    cells: Vec<Cell>,
    cx_min: i64,
    cx_count: i64,
    cy_min: i64,
    blocks_per_column: i64,
    /// First cell of each (column, block); one extra entry at the end.
    blocks: Vec<u32>,
}

impl SegmentGrid {
    pub fn build(n: &RoadNetwork) -> SegmentGrid {
        let mut keyed: Vec<(i64, i64, Piece)> = Vec::with_capacity(n.coords.len() + n.len() / 2);
        for row in 0..n.len() {
            let flags = if n.is_connection[row] {
                FLAG_CONNECTION
            } else {
                0
            } | if n.topology_level[row] > 0 {
                FLAG_DETAILED
            } else {
                0
            };
            let mut along_m = 0.0;
            for w in n.geometry(row).windows(2) {
                let p = Piece {
                    x0: w[0][0],
                    y0: w[0][1],
                    x1: w[1][0],
                    y1: w[1][1],
                    along_m,
                    z0: w[0][2] as f32,
                    z1: w[1][2] as f32,
                    row: row as u32,
                    flags,
                };
                along_m += p.length();
                let (cx0, cx1) = (cell_of(p.x0.min(p.x1)), cell_of(p.x0.max(p.x1)));
                let (cy0, cy1) = (cell_of(p.y0.min(p.y1)), cell_of(p.y0.max(p.y1)));
                for cx in cx0..=cx1 {
                    for cy in cy0..=cy1 {
                        keyed.push((cx, cy, p));
                    }
                }
            }
        }
        if keyed.is_empty() {
            return SegmentGrid::default();
        }
        keyed.sort_unstable_by_key(|(cx, cy, p)| (*cx, *cy, p.row));
        let cx_min = keyed[0].0;
        let cx_count = keyed[keyed.len() - 1].0 - cx_min + 1;
        let cy_min = keyed.iter().map(|k| k.1).min().expect("non-empty");
        let cy_max = keyed.iter().map(|k| k.1).max().expect("non-empty");
        let blocks_per_column = ((cy_max - cy_min) >> BLOCK_SHIFT) + 1;
        let mut g = SegmentGrid {
            cx_min,
            cx_count,
            cy_min,
            blocks_per_column,
            pieces: Vec::with_capacity(keyed.len()),
            ..Default::default()
        };
        let block_of = |cx: i64, cy: i64| {
            ((cx - cx_min) * blocks_per_column + ((cy - cy_min) >> BLOCK_SHIFT)) as usize
        };
        let total_blocks = (cx_count * blocks_per_column) as usize;
        g.blocks = Vec::with_capacity(total_blocks + 1);
        let mut i = 0;
        while i < keyed.len() {
            let (cx, cy) = (keyed[i].0, keyed[i].1);
            // blocks up to this cell's block start here
            while g.blocks.len() <= block_of(cx, cy) {
                g.blocks.push(g.cells.len() as u32);
            }
            g.cells.push(Cell {
                cy: cy as i32,
                start: g.pieces.len() as u32,
            });
            while i < keyed.len() && keyed[i].0 == cx && keyed[i].1 == cy {
                g.pieces.push(keyed[i].2);
                i += 1;
            }
        }
        while g.blocks.len() <= total_blocks {
            g.blocks.push(g.cells.len() as u32);
        }
        g.cells.push(Cell {
            cy: i32::MAX,
            start: g.pieces.len() as u32,
        });
        g
    }

    /// Can a query of this radius be answered from the grid?
    pub fn covers(&self, radius: f64) -> bool {
        ((2.0 * radius / CELL_M).ceil() as i64) < MAX_CELLS_PER_AXIS
    }

    /// Call `visit(piece, d2)` for every piece within `radius` of (x, y) (a row may come more
    /// than once).
    #[inline]
    pub fn visit_within(&self, x: f64, y: f64, radius: f64, mut visit: impl FnMut(&Piece, f64)) {
        if self.blocks.is_empty() {
            return;
        }
        let r2 = radius * radius;
        let cy_lo = cell_of(y - radius).max(self.cy_min);
        let cy_hi = cell_of(y + radius);
        let cy_max = self.cy_min + (self.blocks_per_column << BLOCK_SHIFT) - 1;
        if cy_lo > cy_hi.min(cy_max) {
            return;
        }
        let (b_lo, b_hi) = (
            (cy_lo - self.cy_min) >> BLOCK_SHIFT,
            (cy_hi.min(cy_max) - self.cy_min) >> BLOCK_SHIFT,
        );
        for cx in cell_of(x - radius).max(self.cx_min)
            ..=cell_of(x + radius).min(self.cx_min + self.cx_count - 1)
        {
            let col = (cx - self.cx_min) * self.blocks_per_column;
            let first = self.blocks[(col + b_lo) as usize] as usize;
            let last = self.blocks[(col + b_hi + 1) as usize] as usize;
            for c in first..last {
                let cell = self.cells[c];
                let cy = cell.cy as i64;
                if cy < cy_lo {
                    continue;
                }
                if cy > cy_hi {
                    break;
                }
                for p in &self.pieces[cell.start as usize..self.cells[c + 1].start as usize] {
                    // cheap reject on the piece's bounding box before the exact distance
                    let ox = (p.x0.min(p.x1) - x).max(x - p.x0.max(p.x1)).max(0.0);
                    let oy = (p.y0.min(p.y1) - y).max(y - p.y0.max(p.y1)).max(0.0);
                    if ox * ox + oy * oy > r2 {
                        continue;
                    }
                    let d2 = segment_distance2(x, y, p.x0, p.y0, p.x1, p.y1);
                    if d2 <= r2 {
                        visit(p, d2);
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
