//! A uniform grid over the straight pieces of every road link segment, for nearest-position
//! queries with a bounded search radius (`maks_avstand`, 30 m by default). Pieces are stored
//! flat, grouped by cell, and a hash table of the non-empty cells gives each cell's run, so a
//! query reads a few contiguous runs and computes exact point-to-segment distances. Radii
//! spanning more than `MAX_CELLS_PER_AXIS` cells are answered by the R-tree instead.

use crate::snapshot::columns::RoadNetwork;

pub const CELL_M: f64 = 128.0;
pub const MAX_CELLS_PER_AXIS: i64 = 9;

/// A piece whose bounding box spans more cells than this is entered only in the cells its
/// line passes through (a column at a time), not in every cell of its box: a long diagonal
/// (a ferry link) costs cells in proportion to its length, not to its area.
const MAX_BOX_CELLS: i128 = 4096;

/// The most cell entries a grid holds: four per piece plus a fixed allowance. Past it (or
/// past 2^31 cells along an axis) the grid gives up and every query takes the R-tree, so no
/// geometry can make the build's memory unbounded (loading refuses coordinates
/// outside the storage extent before this is reached, this is the second line).
fn max_entries(pieces: usize) -> usize {
    pieces.saturating_mul(4).saturating_add(1 << 22)
}

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
/// the national network each was a cache miss: `nearest`'s largest cost.
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
    /// The build gave up (see [`max_entries`]): the grid is empty and covers no radius.
    gave_up: bool,
}

/// Enter `p` in the cells its line passes through: per column of cells, the rows between the
/// line's lowest and highest y within the column (widened by a millimetre against rounding).
/// False when `keyed` would grow past `limit`.
fn push_along(
    keyed: &mut Vec<(i64, i64, Piece)>,
    p: Piece,
    (cx0, cx1): (i64, i64),
    limit: usize,
) -> bool {
    const EPS: f64 = 1e-3;
    let (xa, ya, xb, yb) = if p.x0 <= p.x1 {
        (p.x0, p.y0, p.x1, p.y1)
    } else {
        (p.x1, p.y1, p.x0, p.y0)
    };
    let dx = xb - xa;
    let y_at = |x: f64| {
        if dx > 0.0 {
            ya + (x.clamp(xa, xb) - xa) / dx * (yb - ya)
        } else {
            ya
        }
    };
    for cx in cx0..=cx1 {
        let (sx0, sx1) = if cx0 == cx1 {
            (xa, xb)
        } else {
            (
                (cx as f64 * CELL_M - EPS).max(xa),
                ((cx + 1) as f64 * CELL_M + EPS).min(xb),
            )
        };
        let (mut lo, mut hi) = (y_at(sx0), y_at(sx1));
        if cx0 == cx1 {
            (lo, hi) = (ya, yb);
        }
        if lo > hi {
            std::mem::swap(&mut lo, &mut hi);
        }
        let (cy0, cy1) = (cell_of(lo - EPS), cell_of(hi + EPS));
        let rows = (cy1 as i128 - cy0 as i128 + 1).max(0);
        if keyed.len() as i128 + rows > limit as i128 {
            return false;
        }
        for cy in cy0..=cy1 {
            keyed.push((cx, cy, p));
        }
    }
    true
}

impl SegmentGrid {
    /// A grid that answers no query (the R-tree takes them all).
    fn given_up() -> SegmentGrid {
        SegmentGrid {
            gave_up: true,
            ..Default::default()
        }
    }

    pub fn build(n: &RoadNetwork) -> SegmentGrid {
        let pieces = n.coords.len().saturating_sub(n.len());
        let limit = max_entries(pieces);
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
                let box_cells =
                    (cx1 as i128 - cx0 as i128 + 1).saturating_mul(cy1 as i128 - cy0 as i128 + 1);
                if box_cells > MAX_BOX_CELLS {
                    if !push_along(&mut keyed, p, (cx0, cx1), limit) {
                        return SegmentGrid::given_up();
                    }
                    continue;
                }
                if keyed.len() as i128 + box_cells > limit as i128 {
                    return SegmentGrid::given_up();
                }
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
        // cell keys hold 32 bits per axis
        if g.cx_max as i128 - g.cx_min as i128 >= 1 << 31
            || g.cy_max as i128 - g.cy_min as i128 >= 1 << 31
        {
            return SegmentGrid::given_up();
        }
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
        !self.gave_up && ((2.0 * radius / CELL_M).ceil() as i64) < MAX_CELLS_PER_AXIS
    }

    /// Did the build give up (too many cell entries: every query takes the R-tree)?
    pub fn gave_up(&self) -> bool {
        self.gave_up
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::Coord3;

    fn network(lines: &[Vec<Coord3>]) -> RoadNetwork {
        let mut n = RoadNetwork {
            geom_offsets: vec![0],
            ..Default::default()
        };
        for (i, l) in lines.iter().enumerate() {
            n.link_id.push(i as u64 + 1);
            n.is_connection.push(false);
            n.topology_level.push(0);
            n.coords.extend_from_slice(l);
            n.geom_offsets.push(n.coords.len() as u32);
        }
        n
    }

    /// Rows within `r` of (x, y) by the grid, and by every piece.
    fn both(g: &SegmentGrid, n: &RoadNetwork, x: f64, y: f64, r: f64) -> (Vec<u32>, Vec<u32>) {
        let mut got = Vec::new();
        g.visit_within(x, y, r, |p, _| got.push(p.row));
        got.sort_unstable();
        got.dedup();
        let mut want = Vec::new();
        for row in 0..n.len() {
            if n.geometry(row)
                .windows(2)
                .any(|w| segment_distance2(x, y, w[0][0], w[0][1], w[1][0], w[1][1]) <= r * r)
            {
                want.push(row as u32);
            }
        }
        (got, want)
    }

    /// A 300 km diagonal (a box of 5.5 million cells) costs cells along its line only, and is
    /// found from every point beside it like a short piece is.
    #[test]
    fn a_long_diagonal_is_entered_along_its_line() {
        let (x0, y0) = (100_000.0, 6_600_000.0);
        let n = network(&[
            vec![[x0, y0, 0.0], [x0 + 300_000.0, y0 + 240_000.0, 0.0]],
            vec![[x0 + 50.0, y0, 0.0], [x0 + 60.0, y0 + 70.0, 0.0]],
        ]);
        let g = SegmentGrid::build(&n);
        assert!(!g.gave_up());
        assert!(g.len() < 10_000, "{}", g.len());
        for i in 0..2_000 {
            let t = i as f64 / 2_000.0;
            let off = (i % 7) as f64 * 9.0 - 30.0;
            let (x, y) = (x0 + t * 300_000.0 + off, y0 + t * 240_000.0 - off);
            let (got, want) = both(&g, &n, x, y, 30.0);
            assert_eq!(got, want, "at {x} {y}");
        }
    }

    /// Absurd coordinates (which loading refuses before this) cannot make the build's memory
    /// unbounded: it gives up and covers no radius.
    #[test]
    fn absurd_coordinates_give_up_instead_of_growing() {
        for far in [
            [1e20, 6_600_000.0, 0.0],
            [1e308, -1e308, 0.0],
            [100_000.0, 1e12, 0.0],
        ] {
            let n = network(&[vec![[100_000.0, 6_600_000.0, 0.0], far]]);
            let g = SegmentGrid::build(&n);
            assert!(g.gave_up() && !g.covers(30.0), "{far:?}");
        }
        // two sane pieces 1e15 m apart: no cell key can hold the span
        let n = network(&[
            vec![[0.0, 0.0, 0.0], [10.0, 0.0, 0.0]],
            vec![[1e15, 0.0, 0.0], [1e15 + 10.0, 0.0, 0.0]],
        ]);
        assert!(SegmentGrid::build(&n).gave_up());
    }
}
