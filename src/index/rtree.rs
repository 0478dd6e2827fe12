//! R-tree over the straight pieces of every road link segment (rstar bulk load). Each entry is a
//! 2D line with the network row it belongs to, so nearest queries use the exact
//! point-to-segment distance.

use geo::Line;
use rstar::primitives::GeomWithData;
use rstar::RTree;

use crate::snapshot::columns::RoadNetwork;

pub type SegmentEntry = GeomWithData<Line<f64>, u32>;

/// Coordinates beyond this magnitude (or not finite) never enter the tree.
const SANE_ABS: f64 = 1e15;

#[derive(Debug)]
pub struct NetworkIndex {
    pub tree: RTree<SegmentEntry>,
}

impl NetworkIndex {
    pub fn build(network: &RoadNetwork) -> NetworkIndex {
        let mut entries = Vec::with_capacity(network.coords.len());
        for row in 0..network.len() {
            let g = network.geometry(row);
            for w in g.windows(2) {
                // rstar's envelope arithmetic turns values past ~1e154 into NaN and panics on
                // it; loading refuses such coordinates first (`geo::extent`), this keeps an
                // unchecked network from taking the process down
                if ![w[0][0], w[0][1], w[1][0], w[1][1]]
                    .iter()
                    .all(|v| v.abs() <= SANE_ABS)
                {
                    continue;
                }
                entries.push(GeomWithData::new(
                    Line::new((w[0][0], w[0][1]), (w[1][0], w[1][1])),
                    row as u32,
                ));
            }
        }
        NetworkIndex {
            tree: RTree::bulk_load(entries),
        }
    }

    pub fn len(&self) -> usize {
        self.tree.size()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.size() == 0
    }

    /// The network row nearest to (x, y), with its squared distance.
    pub fn nearest_row(&self, x: f64, y: f64) -> Option<(u32, f64)> {
        use rstar::PointDistance;
        self.tree
            .nearest_neighbor(&[x, y].into())
            .map(|e| (e.data, e.geom().distance_2(&[x, y].into())))
    }
}
