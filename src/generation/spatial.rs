//! The objects of a type by where they lie: an R-tree of each object's geometry box (storage
//! coordinates; its own geometry, else the one located on the network), built on first use
//! and kept with the type's data (`TypeData::object_index`), so a generation derived by a
//! changeset, and the view of a past day that did not change a type, share it with the
//! table. Map-extent filters on object lists (`kartutsnitt`, OGC `bbox`) and the vector tiles
//! find their objects through it.

use roaring::RoaringBitmap;
use rstar::primitives::{GeomWithData, Rectangle};
use rstar::RTree;

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

/// A `TILES` × `TILES` grid over the rectangle of every row's box, each tile the bitmap of the
/// rows whose box meets it: the rows near a rectangle in row order, for a page that reads
/// only as far as it fills. A tile is the set of points its index function maps to it (as the
/// polygon's cells, `floor((x - x0) / w)` clamped), so a box meets a rectangle only if they
/// share a tile.
#[derive(Debug, Default)]
struct Tiles {
    bounds: [f64; 4],
    w: f64,
    h: f64,
    rows: Vec<RoaringBitmap>,
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
            rows: vec![RoaringBitmap::new(); TILES * TILES],
        };
        for (row, b) in boxes.iter().enumerate() {
            if b[0] > b[2] {
                continue;
            }
            let (cx, cy) = t.range(b.map(f64::from));
            for j in cy {
                for i in cx.clone() {
                    t.rows[j * TILES + i].insert(row as u32);
                }
            }
        }
        t
    }

    /// The tile index ranges a rectangle covers (clamped to the grid).
    fn range(
        &self,
        b: [f64; 4],
    ) -> (
        std::ops::RangeInclusive<usize>,
        std::ops::RangeInclusive<usize>,
    ) {
        let [x0, y0, ..] = self.bounds;
        crate::geo::grid_axes::cell_ranges(b, [x0, y0], [self.w, self.h], TILES)
    }

    /// Every row whose box meets the rectangle `b`, and some more near it.
    fn near(&self, b: [f64; 4]) -> RoaringBitmap {
        let o = self.bounds;
        if self.rows.is_empty() || b[2] < o[0] || b[0] > o[2] || b[3] < o[1] || b[1] > o[3] {
            return RoaringBitmap::new();
        }
        let (cx, cy) = self.range(b);
        let tiles = cy.flat_map(|j| cx.clone().map(move |i| &self.rows[j * TILES + i]));
        roaring::MultiOps::union(tiles)
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

    /// Every row whose box ([`Self::box_of`]) meets the rectangle `[x0, y0, x1, y1]`, and
    /// some more near it (those that share a tile of a coarse grid with it), in row order.
    pub fn rows_near(&self, b: [f64; 4]) -> RoaringBitmap {
        self.tiles.near(b)
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

    use super::*;

    fn demo() -> Generation {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
        let current = std::fs::read_to_string(root.join("CURRENT")).expect("demo CURRENT");
        let id: u64 = current.trim().parse().expect("id");
        let dir = root.join(format!("gen-{id:06}"));
        Generation::load(&dir, &|_| {}).expect("the demo loads").0
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
            let near = first.rows_near(q);
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
        }
        for row in 0..data.table.len() {
            if geometry(&g, data, row).is_none() {
                assert!(first.box_of(row as u32)[0] > first.box_of(row as u32)[2]);
            }
        }
    }
}
