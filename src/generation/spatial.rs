//! The objects of a type by where they lie: an R-tree of each object's geometry box (storage
//! coordinates; its own geometry, else the one located on the network), built on first use
//! and kept with the type's data (`TypeData::object_index`), so a generation derived by a
//! changeset, and the view of a past day that did not change a type, share it with the
//! table. Map-extent filters on object lists (`kartutsnitt`, OGC `bbox`) and the vector tiles
//! find their objects through it.

use rstar::primitives::{GeomWithData, Rectangle};
use rstar::RTree;

use crate::geo::grid_axes::{cell_ranges, CellRanges};

use super::feature::Geometry;
use super::{Generation, TypeData};

/// The geometry of object `row` of `data` in storage coordinates, as the shared feature view
/// (`generation::feature`) defines it: its own geometry, else where it lies on the network.
pub fn geometry(g: &Generation, data: &TypeData, row: usize) -> Option<Geometry> {
    let t = &data.table;
    Geometry::from_own(t.own_geometry(row)).or_else(|| {
        let pieces = g.placement_pieces(t, row, |_| true);
        g.located_geometry(&pieces)
    })
}

pub type BoxEntry = GeomWithData<Rectangle<[f64; 2]>, u32>;

/// The objects of one type by the box of their geometry (objects without one are absent).
#[derive(Debug)]
pub struct ObjectIndex {
    pub tree: RTree<BoxEntry>,
    /// Each row's box, rounded outwards to `f32` (a box that holds the geometry's), empty
    /// (no point in it) for a row without geometry: a page in row order reads them in order.
    boxes: Vec<[f32; 4]>,
    /// The rows by where their boxes lie, in row order: see [`Tiles`].
    tiles: Tiles,
}

/// Tiles per axis of [`Tiles`].
const TILES: usize = 128;

/// A `TILES` × `TILES` grid over the rectangle of every row's box, each tile the ascending
/// rows whose box meets it: the rows near a rectangle in row order, for a page that reads
/// only as far as it fills. A tile is the set of points its index function maps to it
/// (`floor((x - x0) / w)` clamped), so a box meets a rectangle only if they
/// share a tile.
#[derive(Debug, Default)]
struct Tiles {
    bounds: [f64; 4],
    w: f64,
    h: f64,
    /// Where each tile's rows start in `rows` (`TILES² + 1`, the last the end).
    starts: Vec<u32>,
    /// The rows of every tile, tile by tile, each tile's ascending.
    rows: Vec<u32>,
}

impl Tiles {
    /// The tiles of `boxes` (indexed by row).
    fn build(boxes: &[[f32; 4]]) -> Tiles {
        let mut bounds = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for b in boxes.iter().filter(|b| b[0] <= b[2]) {
            bounds = [
                bounds[0].min(b[0].into()),
                bounds[1].min(b[1].into()),
                bounds[2].max(b[2].into()),
                bounds[3].max(b[3].into()),
            ];
        }
        if bounds[0] > bounds[2] {
            return Tiles::default();
        }
        let step = |span: f64| if span > 0.0 { span / TILES as f64 } else { 1.0 };
        let mut t = Tiles {
            bounds,
            w: step(bounds[2] - bounds[0]),
            h: step(bounds[3] - bounds[1]),
            starts: vec![0; TILES * TILES + 1],
            rows: Vec::new(),
        };
        let tiles_of = |t: &Tiles, b: &[f32; 4]| {
            let (cx, cy) = t.range(b.map(f64::from));
            cy.flat_map(move |j| cx.clone().map(move |i| j * TILES + i))
        };
        // counted, then placed (in row order, so each tile's rows ascend)
        let with_box = || boxes.iter().enumerate().filter(|(_, b)| b[0] <= b[2]);
        let mut ends = vec![0u32; TILES * TILES];
        for (_, b) in with_box() {
            for k in tiles_of(&t, b) {
                ends[k] += 1;
            }
        }
        let mut at = 0u32;
        for (k, n) in ends.iter_mut().enumerate() {
            t.starts[k] = at;
            at += *n;
            *n = t.starts[k];
        }
        t.starts[TILES * TILES] = at;
        t.rows = vec![0; at as usize];
        for (row, b) in with_box() {
            for k in tiles_of(&t, b) {
                t.rows[ends[k] as usize] = row as u32;
                ends[k] += 1;
            }
        }
        t
    }

    /// The tile index ranges a rectangle covers (clamped to the grid).
    fn range(&self, b: [f64; 4]) -> CellRanges {
        let [x0, y0, ..] = self.bounds;
        cell_ranges(b, [x0, y0], [self.w, self.h], TILES)
    }

    /// The rows of tile `k`, ascending.
    fn tile(&self, k: usize) -> &[u32] {
        &self.rows[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    /// Every row from row `first` on whose box meets the rectangle `b`, and some more near
    /// it, in row order: see [`RowsNear`].
    fn near(&self, b: [f64; 4], first: u32) -> RowsNear<'_> {
        let o = self.bounds;
        let tiles =
            if self.starts.is_empty() || b[2] < o[0] || b[0] > o[2] || b[3] < o[1] || b[1] > o[3] {
                Vec::new()
            } else {
                let (cx, cy) = self.range(b);
                cy.flat_map(|j| cx.clone().map(move |i| self.tile(j * TILES + i)))
                    .map(|t| &t[t.partition_point(|&r| r < first)..])
                    .filter(|t| !t.is_empty())
                    .collect()
            };
        RowsNear {
            tiles,
            next: u64::from(first),
            block: None,
            words: [0; BLOCK_WORDS],
        }
    }
}

/// Rows per block of [`RowsNear`].
const BLOCK: u32 = 1024;
const BLOCK_WORDS: usize = (BLOCK / 64) as usize;

/// The union of some tiles' rows from a row on, in row order, made a block of `BLOCK` rows at
/// a time as the reader gets there: a page that fills early unites only the blocks it reads.
pub struct RowsNear<'a> {
    /// What is left of each tile's rows (those before the block being read are taken).
    tiles: Vec<&'a [u32]>,
    /// The next row to look at (past every row when `u32::MAX + 1`).
    next: u64,
    /// The block `words` holds, a bit per row.
    block: Option<u32>,
    words: [u64; BLOCK_WORDS],
}

impl RowsNear<'_> {
    /// Unites the tiles' rows of block `k` (taking them from each tile) into `words`; when it
    /// has none, moves `next` to the first row a tile still holds (past every row when none).
    fn fill(&mut self, k: u32) {
        self.words = [0; BLOCK_WORDS];
        self.block = Some(k);
        let lo = k * BLOCK;
        let mut any = false;
        for t in &mut self.tiles {
            let n = t
                .iter()
                .take_while(|&&r| r.wrapping_sub(lo) < BLOCK)
                .inspect(|&&r| {
                    let at = r - lo;
                    self.words[(at / 64) as usize] |= 1 << (at % 64);
                })
                .count();
            any |= n > 0;
            *t = &t[n..];
        }
        if !any {
            self.next = self
                .tiles
                .iter()
                .filter_map(|t| t.first())
                .min()
                .map_or(1 << 32, |&r| u64::from(r));
        }
    }
}

impl Iterator for RowsNear<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        loop {
            let row = u32::try_from(self.next).ok()?;
            let k = row / BLOCK;
            if self.block != Some(k) {
                self.fill(k);
                if self.next != u64::from(row) {
                    continue;
                }
            }
            let lo = k * BLOCK;
            let mut w = ((row - lo) / 64) as usize;
            let mut bits = self.words[w] & (!0u64 << (row % 64));
            loop {
                if bits != 0 {
                    let found = lo + w as u32 * 64 + bits.trailing_zeros();
                    self.next = u64::from(found) + 1;
                    return Some(found);
                }
                w += 1;
                if w == BLOCK_WORDS {
                    break;
                }
                bits = self.words[w];
            }
            self.next = u64::from(lo) + u64::from(BLOCK);
        }
    }
}

/// A box no point lies in.
const NO_BOX: [f32; 4] = [
    f32::INFINITY,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NEG_INFINITY,
];

/// `v` as `f32`, rounded down (`up` false) or up.
fn outwards(v: f64, up: bool) -> f32 {
    let f = v as f32;
    match (f as f64).partial_cmp(&v) {
        Some(std::cmp::Ordering::Greater) if !up => f.next_down(),
        Some(std::cmp::Ordering::Less) if up => f.next_up(),
        _ => f,
    }
}

impl ObjectIndex {
    /// The index of `data`, a type of `g` (located on `g`'s network).
    pub fn build(g: &Generation, data: &TypeData) -> ObjectIndex {
        let mut boxes = vec![NO_BOX; data.table.len()];
        let entries = (0..data.table.len())
            .filter_map(|row| {
                let b = geometry(g, data, row)?.bbox();
                boxes[row] = [
                    outwards(b[0], false),
                    outwards(b[1], false),
                    outwards(b[2], true),
                    outwards(b[3], true),
                ];
                Some(GeomWithData::new(
                    Rectangle::from_corners([b[0], b[1]], [b[2], b[3]]),
                    row as u32,
                ))
            })
            .collect();
        ObjectIndex {
            tree: RTree::bulk_load(entries),
            tiles: Tiles::build(&boxes),
            boxes,
        }
    }

    /// Every row from row `first` on whose box ([`Self::box_of`]) meets the rectangle
    /// `[x0, y0, x1, y1]`, and some more near it (those that share a tile of a coarse grid
    /// with it), in row order.
    pub fn rows_near(&self, b: [f64; 4], first: u32) -> RowsNear<'_> {
        self.tiles.near(b, first)
    }

    /// A box holding the geometry of object `row` (none for a row without geometry: no point
    /// lies in it, `x0 > x1`), as `[x0, y0, x1, y1]`.
    pub fn box_of(&self, row: u32) -> [f64; 4] {
        self.boxes
            .get(row as usize)
            .unwrap_or(&NO_BOX)
            .map(f64::from)
    }

    /// The rows whose box meets the rectangle `[x0, y0, x1, y1]`, each with its box, in the
    /// tree's order.
    pub fn boxes_meeting(&self, b: [f64; 4]) -> impl Iterator<Item = (u32, [f64; 4])> + '_ {
        let env = rstar::AABB::from_corners([b[0], b[1]], [b[2], b[3]]);
        self.tree.locate_in_envelope_intersecting(&env).map(|e| {
            let (lo, hi) = (e.geom().lower(), e.geom().upper());
            (e.data, [lo[0], lo[1], hi[0], hi[1]])
        })
    }

    /// Rows whose box meets the rectangle `[x0, y0, x1, y1]`, ascending.
    pub fn rows_meeting(&self, b: [f64; 4]) -> Vec<u32> {
        let env = rstar::AABB::from_corners([b[0], b[1]], [b[2], b[3]]);
        let mut rows: Vec<u32> = self
            .tree
            .locate_in_envelope_intersecting(&env)
            .map(|e| e.data)
            .collect();
        rows.sort_unstable();
        rows
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use roaring::RoaringBitmap;

    use super::*;

    fn demo() -> Generation {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
        let current = std::fs::read_to_string(root.join("CURRENT")).expect("demo CURRENT");
        let id: u64 = current.trim().parse().expect("id");
        let dir = root.join(format!("gen-{id:06}"));
        Generation::load(&dir, &|_| {}).expect("the demo loads").0
    }

    /// The rows near a rectangle from any row on are the union of its tiles' rows from
    /// there, over rows in many blocks with long empty stretches between them; each tile
    /// holds, ascending, the rows whose box meets it (brute force over the boxes).
    #[test]
    fn rows_near_unite_the_tiles_block_by_block() {
        // 60,000 rows: the first 20,000 spread over the grid, then 25,000 without a box,
        // then boxes in one corner
        let boxes: Vec<[f32; 4]> = (0..60_000u32)
            .map(|r| match r {
                0..20_000 => {
                    let (x, y) = ((r * 7919 % 1000) as f32, (r * 104_729 % 1000) as f32);
                    [x, y, x + (r % 13) as f32, y + (r % 7) as f32 * 3.0]
                }
                20_000..45_000 => NO_BOX,
                _ => [(r % 50) as f32, (r % 40) as f32, 60.0, 45.0],
            })
            .collect();
        let tiles = Tiles::build(&boxes);
        for k in (0..TILES * TILES).step_by(97) {
            let (i, j) = ((k % TILES) as f64, (k / TILES) as f64);
            let [x0, y0, ..] = tiles.bounds;
            let cell = [
                x0 + i * tiles.w,
                y0 + j * tiles.h,
                x0 + (i + 1.0) * tiles.w,
                y0 + (j + 1.0) * tiles.h,
            ];
            let want: Vec<u32> = (0..boxes.len() as u32)
                .filter(|&r| {
                    let b = boxes[r as usize].map(f64::from);
                    b[0] <= b[2] && {
                        let (cx, cy) = tiles.range(b);
                        cx.contains(&(k % TILES)) && cy.contains(&(k / TILES))
                    }
                })
                .collect();
            assert_eq!(tiles.tile(k), &want[..], "tile {k} {cell:?}");
        }
        for q in [
            [0.0, 0.0, 30.0, 30.0],
            [100.0, 200.0, 180.0, 260.0],
            [500.0, 0.0, 1000.0, 1000.0],
            [-50.0, -50.0, 2000.0, 2000.0],
            [2000.0, 2000.0, 3000.0, 3000.0],
        ] {
            let (cx, cy) = tiles.range(q);
            let all: RoaringBitmap = if q[0] > 1100.0 {
                RoaringBitmap::new()
            } else {
                cy.flat_map(|j| cx.clone().map(move |i| j * TILES + i))
                    .flat_map(|k| tiles.tile(k).iter().copied())
                    .collect()
            };
            for from in [
                0, 1, 4095, 4096, 4097, 19_999, 20_000, 33_000, 45_000, 59_999, 60_000,
            ] {
                let got: Vec<u32> = tiles.near(q, from).collect();
                let want: Vec<u32> = all.range(from..).collect();
                assert_eq!(got, want, "{q:?} from {from}");
            }
        }
    }

    /// Built once per type, then shared; every object with a geometry is in it, under its
    /// geometry's box (the brute-force check over every row).
    #[test]
    fn each_type_builds_its_index_once_with_every_located_object() {
        let g = demo();
        let data = &g.objects[&105];
        let first = data.object_index(&g);
        assert!(Arc::ptr_eq(&first, &data.object_index(&g)), "built twice");
        let mut with_geometry = 0;
        for row in 0..data.table.len() {
            let Some(geom) = geometry(&g, data, row) else {
                continue;
            };
            with_geometry += 1;
            let b = geom.bbox();
            assert!(first.rows_meeting(b).contains(&(row as u32)), "row {row}");
            // the row's own box holds the geometry's, by less than a metre more
            let o = first.box_of(row as u32);
            assert!(
                o[0] <= b[0] && o[1] <= b[1] && o[2] >= b[2] && o[3] >= b[3],
                "row {row}"
            );
            assert!(
                (0..4).all(|i| (o[i] - b[i]).abs() < 1.0),
                "row {row}: {o:?} {b:?}"
            );
        }
        assert_eq!(first.tree.size(), with_geometry);
        // the rows near a rectangle hold every row whose box meets it
        let n = data.table.len() as u32;
        for k in 0..40u32 {
            let o = first.box_of(k * 7919 % n);
            if o[0] > o[2] {
                continue;
            }
            let r = f64::from(k * 150);
            let q = [o[0] - r, o[1] - r * 0.5, o[0] + r * 0.7, o[1] + r];
            let near: RoaringBitmap = first.rows_near(q, 0).collect();
            let meeting = (0..n).filter(|&row| {
                let b = first.box_of(row);
                b[0] <= q[2] && b[2] >= q[0] && b[1] <= q[3] && b[3] >= q[1]
            });
            let mut some = 0;
            for row in meeting {
                assert!(near.contains(row), "row {row} near {q:?}");
                some += 1;
            }
            assert!(some > 0 && near.len() < u64::from(n), "{q:?}");
            // from any row on: the union's rows from there, in order, each once
            for from in [1, k * 131, n / 3, n - 1, n, n + 5000] {
                let got: Vec<u32> = first.rows_near(q, from).collect();
                let want: Vec<u32> = near.range(from..).collect();
                assert_eq!(got, want, "{q:?} from {from}");
            }
        }
        for row in 0..data.table.len() {
            if geometry(&g, data, row).is_none() {
                assert!(first.box_of(row as u32)[0] > first.box_of(row as u32)[2]);
            }
        }
    }
}
