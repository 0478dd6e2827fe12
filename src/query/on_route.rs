//! `rute`: the objects along a route, given as the link intervals of its segments (each
//! segment's `kortform` of `/vegnett/rute`, comma-separated). Unlike `veglenke` it combines
//! with every other filter, and it segments: a stretch object is measured on its part inside
//! the intervals only, so `statistikk` along a route counts the metres of the drive.
//!
//! The intervals of one link are merged (a route passing a link twice, or overlapping
//! segments, counts its metres once). An object is on the route when a placement overlaps or
//! touches an interval, as the area filters count an object touching an area.

use roaring::RoaringBitmap;
use smallvec::SmallVec;

use super::vegref::LinkRef;
use crate::snapshot::columns::ObjectTable;
use crate::util::FastMap;

/// The merged intervals of a route per link.
#[derive(Debug, Clone, Default)]
pub struct RouteIntervals {
    by_link: FastMap<u64, SmallVec<[(f64, f64); 2]>>,
}

impl RouteIntervals {
    /// The intervals of `links`, merged per link.
    pub fn new(links: &[LinkRef]) -> RouteIntervals {
        let mut by_link: FastMap<u64, SmallVec<[(f64, f64); 2]>> = FastMap::default();
        for l in links {
            by_link.entry(l.link_id).or_default().push((l.from, l.to));
        }
        for v in by_link.values_mut() {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut merged: SmallVec<[(f64, f64); 2]> = SmallVec::new();
            for &(a, b) in v.iter() {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            *v = merged;
        }
        RouteIntervals { by_link }
    }

    pub fn is_empty(&self) -> bool {
        self.by_link.is_empty()
    }

    /// The merged intervals on `link`.
    pub fn on(&self, link: u64) -> &[(f64, f64)] {
        self.by_link.get(&link).map_or(&[], |v| v.as_slice())
    }

    /// Whether `from..=to` on `link` overlaps or touches an interval.
    pub fn meets(&self, link: u64, from: f64, to: f64) -> bool {
        self.on(link).iter().any(|&(a, b)| from <= b && to >= a)
    }

    /// The parts of `from..=to` on `link` inside the intervals (empty when none).
    pub fn clip(&self, link: u64, from: f64, to: f64) -> SmallVec<[(f64, f64); 2]> {
        self.on(link)
            .iter()
            .filter_map(|&(a, b)| {
                let (lo, hi) = (from.max(a), to.min(b));
                (lo <= hi).then_some((lo, hi))
            })
            .collect()
    }

    /// The objects of `candidates` with a placement on the route.
    pub fn select(&self, table: &ObjectTable, candidates: &RoaringBitmap) -> RoaringBitmap {
        let mut ticker = super::budget::Ticker::new();
        candidates
            .iter()
            .take_while(|_| !ticker.exhausted())
            .filter(|&o| {
                table
                    .placements(o as usize)
                    .any(|p| self.meets(table.loc_link[p], table.loc_from[p], table.loc_to[p]))
            })
            .collect()
    }
}
