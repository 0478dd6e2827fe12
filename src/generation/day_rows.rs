//! How a day's view answers nearest-position questions without indexes of its own.
//!
//! A view's network (`time`) is made of the generation's current rows that had started that
//! day and its closed rows valid then, merged in (link, from) order. Building that network's
//! R-tree and segment grid took seconds and hundreds of megabytes per day on the national
//! preset (BENCHMARKS.md, the road on a past day). Instead, every row of the view is either a
//! current row or a closed row of the generation, so a view keeps two maps (the view's row of
//! each current row and of each closed row, or [`NOT_THAT_DAY`]) and answers from today's
//! indexes and from the closed rows' own indexes, keeping only candidates valid that day
//! (`query::network::nearest_at_day`). The closed rows are few (2 % of the national preset's
//! link rows), so their indexes are built once per generation, in milliseconds, and shared by
//! every day's view. The maps cost 4 bytes per link row (current and closed) per view.

use std::sync::Arc;

use crate::index::network::NetworkIndexes;
use crate::index::rtree::NetworkIndex;
use crate::snapshot::columns::RoadNetwork;

/// The map's value for a row not valid on the view's day.
pub const NOT_THAT_DAY: u32 = u32::MAX;

/// A network with its nearest-position indexes.
#[derive(Debug)]
pub struct IndexedNetwork {
    pub network: Arc<RoadNetwork>,
    pub indexes: Arc<NetworkIndexes>,
    pub tree: Arc<NetworkIndex>,
}

impl IndexedNetwork {
    /// `network` with indexes built for it.
    pub fn build(network: Arc<RoadNetwork>) -> IndexedNetwork {
        let (indexes, tree) = rayon::join(
            || Arc::new(NetworkIndexes::build(&network)),
            || Arc::new(NetworkIndex::build(&network)),
        );
        IndexedNetwork {
            network,
            indexes,
            tree,
        }
    }
}

/// A day's view's rows as the generation's current and closed rows (see the module doc).
#[derive(Debug)]
pub struct DayRows {
    /// Today's network and indexes (the generation's own).
    pub current: IndexedNetwork,
    /// The generation's closed rows and their indexes (shared by its views).
    pub closed: Arc<IndexedNetwork>,
    /// The view's row of each current row, or [`NOT_THAT_DAY`].
    pub of_current: Vec<u32>,
    /// The view's row of each closed row, or [`NOT_THAT_DAY`].
    pub of_closed: Vec<u32>,
}

impl DayRows {
    /// The view's row of row `row` of the current network (`closed` false) or of the closed
    /// rows (`closed` true), when valid that day.
    #[inline]
    pub fn view_row(&self, closed: bool, row: u32) -> Option<u32> {
        let map = if closed {
            &self.of_closed
        } else {
            &self.of_current
        };
        map.get(row as usize)
            .copied()
            .filter(|&r| r != NOT_THAT_DAY)
    }
}
