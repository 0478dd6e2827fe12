//! The network attribute filters (LES v4's `typeveg`, `detaljniva`, `trafikantgruppe`,
//! `adskiltelop`, `sideanlegg`, `konnekteringslenker`, `vegsystemreferanse`): which network
//! rows pass. Road links
//! are selected by them directly; road objects qualify by their placements on passing rows and
//! stretch objects are cut to those rows when segmenting (`query::objects::ObjectFilter`).

use roaring::RoaringBitmap;

use super::system_ref::{self, SystemRefFilter};
use crate::index::network::NetworkIndexes;
use crate::snapshot::columns::RoadNetwork;

/// Network attribute filters, each AND-ed onto the others; a list passes a row holding any of
/// its values; an empty list (or None) does not filter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetworkAttributeFilter {
    /// typeVeg: indexes into `ROAD_TYPES`. A v4 value vegdb does not store (`sti`, …) is
    /// `NO_ROAD_TYPE`: it matches no row.
    pub road_types: Vec<u8>,
    /// detaljnivå: indexes into `DETAIL_LEVELS`.
    pub detail_levels: Vec<u8>,
    /// trafikantgruppe letters (K, G).
    pub traffic_groups: Vec<u8>,
    /// adskilte løp: indexes into `SEPARATE_CARRIAGEWAYS`.
    pub separate_carriageways: Vec<u8>,
    /// sideanlegg: Some(true) only rows of side facilities, Some(false) none of them.
    pub side_facility: Option<bool>,
    /// konnekteringslenker=false: connection links left out.
    pub without_connection_links: bool,
    /// vegsystemreferanse: rows matching any of these.
    pub system_refs: Vec<SystemRefFilter>,
}

/// A `typeveg` value of LES v4 no stored row has (the stored ones are v2's seven).
pub const NO_ROAD_TYPE: u8 = u8::MAX;

/// LES v4's `typeveg` values (`TypeVegSosi`) and the index into `ROAD_TYPES` of those vegdb
/// stores (v2's seven); the others are valid and match no row.
pub const ROAD_TYPE_NAMES: [(&str, u8); 17] = [
    ("kanalisertVeg", 1),
    ("enkelBilveg", 0),
    ("rampe", 2),
    ("rundkjøring", 3),
    ("bilferje", 5),
    ("passasjerferje", NO_ROAD_TYPE),
    ("gangOgSykkelveg", 4),
    ("sykkelveg", NO_ROAD_TYPE),
    ("gangveg", NO_ROAD_TYPE),
    ("gågate", NO_ROAD_TYPE),
    ("fortau", NO_ROAD_TYPE),
    ("trapp", NO_ROAD_TYPE),
    ("gangfelt", NO_ROAD_TYPE),
    ("gatetun", 6),
    ("traktorveg", NO_ROAD_TYPE),
    ("sti", NO_ROAD_TYPE),
    ("annet", NO_ROAD_TYPE),
];

/// `trafikantgruppe` values.
pub const TRAFFIC_GROUP_NAMES: [&str; 2] = ["K", "G"];

impl NetworkAttributeFilter {
    /// No attribute filter given: every row passes.
    pub fn is_empty(&self) -> bool {
        self.road_types.is_empty()
            && self.detail_levels.is_empty()
            && self.traffic_groups.is_empty()
            && self.separate_carriageways.is_empty()
            && self.side_facility.is_none()
            && !self.without_connection_links
            && self.system_refs.is_empty()
    }

    /// Does network row `r` pass?
    #[inline]
    pub fn passes(&self, n: &RoadNetwork, r: usize) -> bool {
        self.passes_but_system_refs(n, r)
            && (self.system_refs.is_empty() || self.system_refs.iter().any(|f| f.matches(n, r)))
    }

    /// Does network row `r` pass every filter but `vegsystemreferanse`?
    #[inline]
    fn passes_but_system_refs(&self, n: &RoadNetwork, r: usize) -> bool {
        let any = |list: &[u8], v: u8| list.is_empty() || list.contains(&v);
        any(&self.road_types, n.road_type[r])
            && any(&self.detail_levels, n.detail_level[r])
            && any(&self.traffic_groups, n.traffic_group[r])
            && any(&self.separate_carriageways, n.separate_carriageways[r])
            && self.side_facility.is_none_or(|s| n.side_facility[r] == s)
            && !(self.without_connection_links && n.is_connection[r])
    }

    /// The rows matching any `vegsystemreferanse` filter, through the rows sorted by road
    /// system reference (`idx`'s, built on the first call); None without such a filter.
    fn system_ref_rows(&self, n: &RoadNetwork, idx: &NetworkIndexes) -> Option<RoaringBitmap> {
        if self.system_refs.is_empty() {
            return None;
        }
        let sorted = idx.system_refs(n);
        let mut rows: Vec<u32> = self
            .system_refs
            .iter()
            .flat_map(|f| system_ref::select(n, sorted, f))
            .collect();
        rows.sort_unstable();
        rows.dedup();
        Some(RoaringBitmap::from_sorted_iter(rows).unwrap_or_default())
    }

    /// The rows of `n` that pass (`idx`: the indexes built on `n`).
    pub fn rows(&self, n: &RoadNetwork, idx: &NetworkIndexes) -> RoaringBitmap {
        match self.system_ref_rows(n, idx) {
            Some(found) => found
                .iter()
                .filter(|&r| self.passes_but_system_refs(n, r as usize))
                .collect(),
            None => self.rows_scan(n),
        }
    }

    /// The rows of `n` that pass, by a check of every row: [`rows`](Self::rows)' brute-force
    /// twin, the test oracle.
    pub fn rows_scan(&self, n: &RoadNetwork) -> RoaringBitmap {
        (0..n.len())
            .filter(|&r| self.passes(n, r))
            .map(|r| r as u32)
            .collect()
    }

    /// The rows of `rows` that pass (`idx`: the indexes built on `n`).
    pub fn retain(
        &self,
        n: &RoadNetwork,
        idx: &NetworkIndexes,
        rows: &RoaringBitmap,
    ) -> RoaringBitmap {
        if self.is_empty() {
            return rows.clone();
        }
        match self.system_ref_rows(n, idx) {
            Some(found) => (rows & found)
                .iter()
                .filter(|&r| self.passes_but_system_refs(n, r as usize))
                .collect(),
            None => rows
                .iter()
                .filter(|&r| self.passes(n, r as usize))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network() -> RoadNetwork {
        let mut n = RoadNetwork::default();
        // (road type, detail, group, separate, side, connection)
        let rows = [
            (0u8, 3u8, b'K', 0u8, false, false),
            (4, 3, b'G', 0, false, false),
            (1, 1, b'K', 1, false, false),
            (1, 1, b'K', 2, false, false),
            (0, 3, b'K', 0, true, false),
            (0, 3, b'K', 0, false, true),
        ];
        for (t, d, g, s, side, c) in rows {
            n.road_type.push(t);
            n.detail_level.push(d);
            n.traffic_group.push(g);
            n.separate_carriageways.push(s);
            n.side_facility.push(side);
            n.is_connection.push(c);
            n.link_id.push(n.link_id.len() as u64);
        }
        n
    }

    fn passing(f: &NetworkAttributeFilter) -> Vec<u32> {
        f.rows_scan(&network()).iter().collect()
    }

    #[test]
    fn each_attribute_selects_its_rows_and_they_combine_with_and() {
        let all = NetworkAttributeFilter::default();
        assert!(all.is_empty());
        assert_eq!(passing(&all), [0, 1, 2, 3, 4, 5]);
        let f = |g: fn(&mut NetworkAttributeFilter)| {
            let mut f = NetworkAttributeFilter::default();
            g(&mut f);
            assert!(!f.is_empty());
            passing(&f)
        };
        assert_eq!(f(|f| f.traffic_groups = vec![b'G']), [1]);
        assert_eq!(f(|f| f.detail_levels = vec![1]), [2, 3]);
        assert_eq!(f(|f| f.separate_carriageways = vec![0, 1]), [0, 1, 2, 4, 5]);
        assert_eq!(f(|f| f.side_facility = Some(true)), [4]);
        assert_eq!(f(|f| f.side_facility = Some(false)), [0, 1, 2, 3, 5]);
        assert_eq!(f(|f| f.without_connection_links = true), [0, 1, 2, 3, 4]);
        assert_eq!(f(|f| f.road_types = vec![NO_ROAD_TYPE]), Vec::<u32>::new());
        assert_eq!(
            f(|f| {
                f.road_types = vec![0];
                f.side_facility = Some(false);
                f.without_connection_links = true;
            }),
            [0]
        );
    }
}
