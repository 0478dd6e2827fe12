//! What tiles keep between requests: per object type, an R-tree of the objects' geometry boxes
//! (storage coordinates), built on the first tile of that type and shared as long as the type's
//! table is (a generation derived by a changeset shares untouched types, so their indexes stay).
//! Entries are keyed by the table's and the network's `Arc`s (held weakly) and dropped once a
//! table is freed. The indexes are kept in a [`TileIndexes`] value its server owns (the API
//! state's), not in the process: two servers in one process build their own.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use rstar::primitives::{GeomWithData, Rectangle};
use rstar::RTree;

use crate::generation::feature::Geometry;
use crate::generation::{Generation, TypeData};
use crate::snapshot::columns::RoadNetwork;

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

/// The objects of one type by the box of their geometry.
#[derive(Debug)]
pub struct ObjectIndex {
    pub tree: RTree<BoxEntry>,
}

impl ObjectIndex {
    pub fn build(g: &Generation, data: &TypeData) -> ObjectIndex {
        let entries = (0..data.table.len())
            .filter_map(|row| {
                let b = geometry(g, data, row)?.bbox();
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

/// The object indexes one server has built, by the table and network they were built from.
#[derive(Default)]
pub struct TileIndexes {
    entries: Mutex<Vec<Entry>>,
}

impl std::fmt::Debug for TileIndexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileIndexes")
            .field("kept", &self.kept())
            .finish()
    }
}

impl TileIndexes {
    /// The index of type `type_id` of `g` (built on first use; an empty one when the type has
    /// no objects).
    pub fn object_index(&self, g: &Generation, type_id: u32) -> Arc<ObjectIndex> {
        let Some(data) = g.objects.get(&type_id) else {
            return Arc::new(ObjectIndex { tree: RTree::new() });
        };
        let slot = {
            let mut r = self.entries.lock().unwrap_or_else(|e| e.into_inner());
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
        slot.get_or_init(|| Arc::new(ObjectIndex::build(g, data)))
            .clone()
    }

    /// Number of object indexes kept (of tables still alive).
    pub fn kept(&self) -> usize {
        let r = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        r.iter().filter(|(d, _, _)| d.strong_count() > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn demo() -> Generation {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
        let current = std::fs::read_to_string(root.join("CURRENT")).expect("demo CURRENT");
        let id: u64 = current.trim().parse().expect("id");
        let dir = root.join(format!("gen-{id:06}"));
        Generation::load(&dir, &|_| {}).expect("the demo loads").0
    }

    #[test]
    fn each_owner_keeps_its_own_indexes_until_the_tables_go() {
        let g = demo();
        let (t, data) = g
            .objects
            .iter()
            .find(|(_, d)| !d.table.is_empty())
            .expect("a type with objects");
        let (t, rows) = (*t, data.table.len());
        let (a, b) = (TileIndexes::default(), TileIndexes::default());
        let first = a.object_index(&g, t);
        assert!(Arc::ptr_eq(&first, &a.object_index(&g, t)), "built twice");
        assert_eq!((a.kept(), b.kept()), (1, 0));
        let other = b.object_index(&g, t);
        assert!(!Arc::ptr_eq(&first, &other), "two owners share an index");
        assert_eq!((a.kept(), b.kept()), (1, 1));
        assert!(first.tree.size() > 0 && first.tree.size() <= rows);
        assert_eq!(first.tree.size(), other.tree.size());
        drop(g);
        assert_eq!((a.kept(), b.kept()), (0, 0));
    }
}
