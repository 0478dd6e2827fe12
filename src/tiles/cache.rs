//! What tiles keep between requests: per object type, an R-tree of the objects' geometry boxes
//! (storage coordinates), built on the first tile of that type and shared as long as the type's
//! table is (a generation derived by a changeset shares untouched types, so their indexes stay).
//! Entries are keyed by the table's and the network's `Arc`s (held weakly) and dropped once a
//! table is freed.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use rstar::primitives::{GeomWithData, Rectangle};
use rstar::RTree;

use crate::generation::{Generation, TypeData};
use crate::geo::{surface, Coord3};
use crate::snapshot::columns::RoadNetwork;

/// The located geometry of an object in storage coordinates.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Points(Vec<Coord3>),
    Lines(Vec<Vec<Coord3>>),
    /// Polygons, each a list of rings (exterior first), rings closed.
    Polygons(Vec<Vec<Vec<Coord3>>>),
}

impl Shape {
    fn bbox(&self) -> Option<[f64; 4]> {
        let mut b = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut add = |c: &Coord3| {
            b[0] = b[0].min(c[0]);
            b[1] = b[1].min(c[1]);
            b[2] = b[2].max(c[0]);
            b[3] = b[3].max(c[1]);
        };
        match self {
            Shape::Points(p) => p.iter().for_each(&mut add),
            Shape::Lines(l) => l.iter().flatten().for_each(&mut add),
            Shape::Polygons(p) => p.iter().flatten().flatten().for_each(&mut add),
        }
        (b[0] <= b[2] && b[1] <= b[3]).then_some(b)
    }
}

/// The geometry of object `row` of `data`: its own geometry when it has one (a point, a line
/// or a surface), else where it lies on the network (points for point placements, the covered
/// pieces of the link segments for stretches).
pub fn shape(network: &RoadNetwork, data: &TypeData, row: usize) -> Shape {
    let t = &data.table;
    let own = t.own_geometry(row);
    if surface::is_surface(own) {
        return Shape::Polygons(surface::polygons(own));
    }
    match own.len() {
        0 => {}
        1 => return Shape::Points(own.to_vec()),
        _ => return Shape::Lines(vec![own.to_vec()]),
    }
    let mut points = Vec::new();
    let mut lines = Vec::new();
    for p in t.placements(row) {
        let (link, from, to) = (t.loc_link[p], t.loc_from[p], t.loc_to[p]);
        for seg in network.rows_overlapping(link, from, to) {
            let (rf, rt) = (network.from_pos[seg], network.to_pos[seg]);
            let span = (rt - rf).max(1e-12);
            let g = network.geometry(seg);
            if from == to {
                points.push(crate::geo::linref::point_at(g, (from - rf) / span));
                break;
            }
            let (a, b) = (from.max(rf), to.min(rt));
            if b > a {
                lines.push(crate::geo::linref::sub_line(
                    g,
                    (a - rf) / span,
                    (b - rf) / span,
                ));
            }
        }
    }
    if lines.is_empty() {
        Shape::Points(points)
    } else {
        Shape::Lines(lines)
    }
}

pub type BoxEntry = GeomWithData<Rectangle<[f64; 2]>, u32>;

/// The objects of one type by the box of their geometry.
#[derive(Debug)]
pub struct ObjectIndex {
    pub tree: RTree<BoxEntry>,
}

impl ObjectIndex {
    pub fn build(network: &RoadNetwork, data: &TypeData) -> ObjectIndex {
        let entries = (0..data.table.len())
            .filter_map(|row| {
                let b = shape(network, data, row).bbox()?;
                Some(GeomWithData::new(
                    Rectangle::from_corners([b[0], b[1]], [b[2], b[3]]),
                    row as u32,
                ))
            })
            .collect();
        ObjectIndex {
            tree: RTree::bulk_load(entries),
        }
    }
}

type Entry = (
    Weak<TypeData>,
    Weak<RoadNetwork>,
    Arc<OnceLock<Arc<ObjectIndex>>>,
);

fn registry() -> &'static Mutex<Vec<Entry>> {
    static R: OnceLock<Mutex<Vec<Entry>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(Vec::new()))
}

/// The index of type `type_id` of `g` (built on first use; an empty one when the type has no
/// objects).
pub fn object_index(g: &Generation, type_id: u32) -> Arc<ObjectIndex> {
    let Some(data) = g.objects.get(&type_id) else {
        return Arc::new(ObjectIndex { tree: RTree::new() });
    };
    let slot = {
        let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
        r.retain(|(d, n, _)| d.strong_count() > 0 && n.strong_count() > 0);
        let found = r.iter().find(|(d, n, _)| {
            d.upgrade().is_some_and(|d| Arc::ptr_eq(&d, data))
                && n.upgrade().is_some_and(|n| Arc::ptr_eq(&n, &g.network))
        });
        match found {
            Some((_, _, slot)) => slot.clone(),
            None => {
                let slot = Arc::new(OnceLock::new());
                r.push((
                    Arc::downgrade(data),
                    Arc::downgrade(&g.network),
                    slot.clone(),
                ));
                slot
            }
        }
    };
    slot.get_or_init(|| Arc::new(ObjectIndex::build(&g.network, data)))
        .clone()
}

/// Number of object indexes kept (for tests).
pub fn cached_indexes() -> usize {
    let r = registry().lock().unwrap_or_else(|e| e.into_inner());
    r.iter().filter(|(d, _, _)| d.strong_count() > 0).count()
}
