//! A uniform grid over the straight pieces of every road link segment, for nearest-position
//! queries with a bounded search radius (`maks_avstand`, 30 m by default). Pieces are stored
//! flat, grouped by cell, and a hash table of the non-empty cells gives each cell's run, so a
//! query reads a few contiguous runs and computes exact point-to-segment distances. Radii
//! spanning more than `MAX_CELLS_PER_AXIS` cells are answered by the R-tree instead.

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

/// A non-empty cell: its key (`cell_key`) and its run of pieces.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    start: u32,
    len: u32,
}

/// The key of a free slot (no cell has it: cell keys are below 2^63).
const FREE: u64 = u64::MAX;

/// Cells a query of the largest grid radius touches at most.
const MAX_CELLS: usize = (MAX_CELLS_PER_AXIS * MAX_CELLS_PER_AXIS) as usize;

/// Pieces grouped by cell, sorted by (column, row of cells, link row), in one flat array; the
/// non-empty cells in an open-addressing hash table (linear probing, at most half full) that
/// gives a cell's run of pieces.
///
/// A query looks up its few cells first, all at once (their table slots are independent
/// loads, so their cache misses overlap), then reads their runs: two dependent memory reads
/// per cell. The former layout (a dense index per column and block of 64 rows, pointing into
/// a sorted list of cells, pointing into the pieces) took three, one after the other, and on
/// the national network each was a cache miss: `nearest`'s largest cost (issue 11).
#[derive(Debug, Default)]
pub struct SegmentGrid {
    pieces: Vec<Piece>,
    /// A power of two long.
    slots: Vec<Slot>,
    /// 64 − log2(slots.len()): the hash's top bits pick the home slot.
    shift: u32,
    cx_min: i64,
    cx_max: i64,
    cy_min: i64,
    cy_max: i64,
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
        let mut g = SegmentGrid {
            cx_min: keyed[0].0,
            cx_max: keyed[keyed.len() - 1].0,
            cy_min: keyed.iter().map(|k| k.1).min().expect("non-empty"),
            cy_max: keyed.iter().map(|k| k.1).max().expect("non-empty"),
            pieces: Vec::with_capacity(keyed.len()),
            ..Default::default()
        };
        let mut runs: Vec<Slot> = Vec::new();
        let mut i = 0;
        while i < keyed.len() {
            let (cx, cy) = (keyed[i].0, keyed[i].1);
            let start = g.pieces.len();
            while i < keyed.len() && keyed[i].0 == cx && keyed[i].1 == cy {
                g.pieces.push(keyed[i].2);
                i += 1;
            }
            runs.push(Slot {
                key: g.cell_key(cx, cy),
                start: start as u32,
                len: (g.pieces.len() - start) as u32,
            });
        }
        let size = (runs.len() * 2).next_power_of_two().max(2);
        g.shift = 64 - size.trailing_zeros();
        g.slots = vec![
            Slot {
                key: FREE,
                start: 0,
                len: 0
            };
            size
        ];
        let mask = size - 1;
        for run in runs {
            let mut at = g.home(run.key);
            while g.slots[at].key != FREE {
                at = (at + 1) & mask;
            }
            g.slots[at] = run;
        }
        g
    }

    /// The key of cell (cx, cy) of this grid's extent.
    #[inline]
    fn cell_key(&self, cx: i64, cy: i64) -> u64 {
        (((cx - self.cx_min) as u64) << 32) | (cy - self.cy_min) as u64
    }

    /// The slot where a key's probe starts (Fibonacci hashing: the product's top bits).
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The run of pieces of a cell (empty for a cell without pieces).
    #[inline]
    fn run(&self, key: u64) -> (u32, u32) {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let s = self.slots[at];
            if s.key == key {
                return (s.start, s.len);
            }
            if s.key == FREE {
                return (0, 0);
            }
            at = (at + 1) & mask;
        }
    }

    /// Can a query of this radius be answered from the grid?
    pub fn covers(&self, radius: f64) -> bool {
        ((2.0 * radius / CELL_M).ceil() as i64) < MAX_CELLS_PER_AXIS
    }

    /// Call `visit(piece, d2)` for every piece within `radius` of (x, y) (a row may come more
    /// than once), cell by cell in (column, row) order. Any radius works; past what the grid
    /// [`covers`](Self::covers) it is slow (`nearest` takes the R-tree then).
    #[inline]
    pub fn visit_within(&self, x: f64, y: f64, radius: f64, mut visit: impl FnMut(&Piece, f64)) {
        if self.slots.is_empty() {
            return;
        }
        let r2 = radius * radius;
        let (cx_lo, cx_hi) = (
            cell_of(x - radius).max(self.cx_min),
            cell_of(x + radius).min(self.cx_max),
        );
        let (cy_lo, cy_hi) = (
            cell_of(y - radius).max(self.cy_min),
            cell_of(y + radius).min(self.cy_max),
        );
        if cx_lo > cx_hi || cy_lo > cy_hi {
            return;
        }
        let mut scan = |(start, len): (u32, u32)| {
            for p in &self.pieces[start as usize..(start + len) as usize] {
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
        };
        // the runs of up to MAX_CELLS cells (all of a covered radius's) looked up before any is
        // read: the slot loads do not wait for each other
        let mut runs = [(0u32, 0u32); MAX_CELLS];
        let mut n = 0;
        for cx in cx_lo..=cx_hi {
            for cy in cy_lo..=cy_hi {
                runs[n] = self.run(self.cell_key(cx, cy));
                n += 1;
                if n == MAX_CELLS {
                    runs.iter().for_each(|&run| scan(run));
                    n = 0;
                }
            }
        }
        runs[..n].iter().for_each(|&run| scan(run));
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
}
