//! Road network queries: where a road reference or link position lies, the nearest positions
//! to a coordinate, and which link segments an area filter selects.

use roaring::RoaringBitmap;
use smallvec::SmallVec;

use super::attributes::NetworkAttributeFilter;
use super::system_ref::{point_in_row, SystemPoint};
use super::vegref::RoadRefFilter;
use crate::area::AreaKind;
use crate::generation::day_rows::{DayRows, IndexedNetwork};
use crate::generation::Generation;
use crate::geo::area_polygon::AreaPolygon;
use crate::geo::linref::{point_at, project};
use crate::geo::map_extent::MapExtent;
use crate::geo::Coord3;
use crate::index::grid::{segment_distance2, Piece, FLAG_CONNECTION, FLAG_DETAILED};
use crate::index::network::{row_key, NetworkIndexes, RoadKey, RowInfo};
use crate::index::rtree::NetworkIndex;
use crate::snapshot::columns::{RoadNetwork, NO_ROAD_REF};

/// A point on the network: the segment row, its link position, the point, and the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkPosition {
    pub row: u32,
    pub link_id: crate::ids::LinkId,
    /// Relative position on the link, 0..=1.
    pub position: f64,
    pub point: Coord3,
    pub road: RoadKey,
    pub meter: u32,
    /// Only for nearest queries: meters from the query point.
    pub distance_m: f64,
    /// The road system reference (vegsystemreferanse) at the point.
    pub system: Option<SystemPoint>,
}

/// The meter value (unrounded) of a link position within a segment row: the inverse of
/// `locate_road_ref`'s meter → position mapping.
pub fn meter_exact(n: &RoadNetwork, row: usize, position: f64) -> f64 {
    let span = n.to_pos[row] - n.from_pos[row];
    let f = if span > 0.0 {
        ((position - n.from_pos[row]) / span).clamp(0.0, 1.0)
    } else {
        0.0
    };
    n.from_m[row] as f64 + f * (n.to_m[row] as f64 - n.from_m[row] as f64)
}

fn meter_at(n: &RoadNetwork, row: usize, position: f64) -> u32 {
    meter_exact(n, row, position).round() as u32
}

fn position_in_row(n: &RoadNetwork, row: usize, position: f64, distance_m: f64) -> NetworkPosition {
    let span = n.to_pos[row] - n.from_pos[row];
    let f = if span > 0.0 {
        ((position - n.from_pos[row]) / span).clamp(0.0, 1.0)
    } else {
        0.0
    };
    NetworkPosition {
        row: row as u32,
        link_id: crate::ids::LinkId(n.link_id[row]),
        position,
        point: point_at(n.geometry(row), f),
        road: row_key(n, row),
        meter: meter_at(n, row, position),
        distance_m,
        system: point_in_row(n, row, position),
    }
}

/// Where a fully qualified road reference point lies (level-0 links only).
pub fn locate_road_ref(
    n: &RoadNetwork,
    idx: &NetworkIndexes,
    f: &RoadRefFilter,
) -> Option<NetworkPosition> {
    let from = f.from?;
    let key = RoadKey {
        county: f.county?,
        municipality_part: f.municipality_part?,
        category: f.category?,
        status: f.status?,
        number: f.number?,
        hp: from.hp,
    };
    let m = from.meter? as f64;
    // the first (by from_m, then link id) that covers the meter; none past the meter can
    let row = idx
        .roads
        .get(&key)?
        .iter()
        .take_while(|r| r.from_m as f64 <= m)
        .find(|r| m <= r.to_m as f64)?
        .row as usize;
    let meters = (n.to_m[row] - n.from_m[row]) as f64;
    let f = if meters > 0.0 {
        (m - n.from_m[row] as f64) / meters
    } else {
        0.0
    };
    let position = n.from_pos[row] + f * (n.to_pos[row] - n.from_pos[row]);
    let mut p = position_in_row(n, row, position, 0.0);
    p.meter = m as u32;
    Some(p)
}

/// Where a link position lies; None also on a row without a road reference (a position
/// answer always carries one).
pub fn locate_link(n: &RoadNetwork, link_id: u64, position: f64) -> Option<NetworkPosition> {
    let rows = n.rows_of_link(link_id);
    let row = rows.clone().find(|&r| {
        n.from_pos[r] <= position && position <= n.to_pos[r] && n.road_category[r] != NO_ROAD_REF
    })?;
    Some(position_in_row(n, row, position, 0.0))
}

/// Which rows a nearest query may return.
#[derive(Debug, Clone, Default)]
pub struct NearestFilter {
    pub include_connection_links: bool,
    pub include_detailed_links: bool,
    /// Any of these references (empty = all roads).
    pub roads: Vec<RoadRefFilter>,
}

impl NearestFilter {
    /// The connection/detail part of the filter, from a grid piece's flags.
    #[inline]
    pub fn accepts_flags(&self, flags: u8) -> bool {
        (self.include_connection_links || flags & FLAG_CONNECTION == 0)
            && (self.include_detailed_links || flags & FLAG_DETAILED == 0)
    }

    /// The road-reference part of the filter (a row without a road reference never passes:
    /// a position answer always carries one).
    #[inline]
    pub fn accepts_road(&self, ri: &RowInfo) -> bool {
        ri.key.has_road_ref()
            && (self.roads.is_empty()
                || self
                    .roads
                    .iter()
                    .any(|f| f.matches(&ri.key, ri.from_m, ri.to_m)))
    }

    pub fn accepts(&self, n: &RoadNetwork, row: usize) -> bool {
        (self.include_connection_links || !n.is_connection[row])
            && (self.include_detailed_links || n.topology_level[row] == 0)
            && n.road_category[row] != NO_ROAD_REF
            && (self.roads.is_empty() || {
                let key = row_key(n, row);
                self.roads
                    .iter()
                    .any(|f| f.matches(&key, n.from_m[row], n.to_m[row]))
            })
    }
}

/// A nearest-position question: up to `max_count` rows within `max_distance_m` of (x, y)
/// (storage coordinates) that pass `filter`.
#[derive(Debug, Clone)]
pub struct NearestQuery {
    pub x: f64,
    pub y: f64,
    pub max_distance_m: f64,
    pub max_count: usize,
    pub filter: NearestFilter,
}

/// A row found near a point: squared distance, the row in the answering network, the row in
/// the network searched, and the closest piece when it came from the grid.
type Candidate = (f64, u32, u32, Option<Piece>);

/// Up to `max_count` positions within `max_distance_m` of (x, y), nearest first; ties by row
/// (link id, then position). One result per segment row.
pub fn nearest(
    n: &RoadNetwork,
    idx: &NetworkIndexes,
    rtree: &NetworkIndex,
    q: &NearestQuery,
) -> Vec<NetworkPosition> {
    let mut found = candidates(n, idx, rtree, q, Some);
    found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    found.truncate(q.max_count);
    found
        .into_iter()
        .map(|c| position_of(n, idx, c, q.x, q.y))
        .collect()
}

/// [`nearest`] in a day's view whose rows are today's and closed rows (`DayRows`): each part
/// searched with its own indexes, keeping the rows valid that day, answered with the view's
/// rows. Equal to [`nearest`] over the view's own network and indexes.
pub fn nearest_at_day(d: &DayRows, q: &NearestQuery) -> Vec<NetworkPosition> {
    let parts = [(&d.current, false), (&*d.closed, true)];
    let mut found: SmallVec<[(Candidate, &IndexedNetwork); 8]> = SmallVec::new();
    for (part, closed) in parts {
        let (n, idx, tree) = (&*part.network, &*part.indexes, &*part.tree);
        let day_row = |row: u32| d.view_row(closed, row);
        found.extend(
            candidates(n, idx, tree, q, day_row)
                .into_iter()
                .map(|c| (c, part)),
        );
    }
    found.sort_by(|a, b| a.0 .0.total_cmp(&b.0 .0).then(a.0 .1.cmp(&b.0 .1)));
    found.truncate(q.max_count);
    found
        .into_iter()
        .map(|(c, part)| position_of(&part.network, &part.indexes, c, q.x, q.y))
        .collect()
}

/// The rows of `n` within the query's distance that pass its filter and that `answer_row`
/// names a row of the answering network (rows it gives None are left out), unsorted.
fn candidates(
    n: &RoadNetwork,
    idx: &NetworkIndexes,
    rtree: &NetworkIndex,
    q: &NearestQuery,
    answer_row: impl Fn(u32) -> Option<u32>,
) -> SmallVec<[Candidate; 8]> {
    let NearestQuery {
        x,
        y,
        max_distance_m,
        ref filter,
        ..
    } = *q;
    let mut best: SmallVec<[Candidate; 8]> = SmallVec::new();
    if idx.grid.covers(max_distance_m) {
        idx.grid.visit_within(x, y, max_distance_m, |p, d2| {
            if let Some(e) = best.iter_mut().find(|e| e.2 == p.row) {
                if d2 < e.0 {
                    *e = (d2, e.1, p.row, Some(*p));
                }
            } else if filter.accepts_flags(p.flags)
                && filter.accepts_road(&idx.rows[p.row as usize])
            {
                if let Some(r) = answer_row(p.row) {
                    best.push((d2, r, p.row, Some(*p)));
                }
            }
        });
    } else {
        let r2 = max_distance_m * max_distance_m;
        for (e, _) in rtree
            .tree
            .nearest_neighbor_iter_with_distance_2(&geo::Point::new(x, y))
        {
            let l = e.geom();
            let d2 = segment_distance2(x, y, l.start.x, l.start.y, l.end.x, l.end.y);
            if d2 > r2 {
                break;
            }
            if let Some(b) = best.iter_mut().find(|b| b.2 == e.data) {
                b.0 = b.0.min(d2);
            } else if filter.accepts(n, e.data as usize) {
                if let Some(r) = answer_row(e.data) {
                    best.push((d2, r, e.data, None));
                }
            }
        }
    }
    best
}

/// The position of candidate `c` (found in `n` with `idx`) nearest to (x, y).
fn position_of(
    n: &RoadNetwork,
    idx: &NetworkIndexes,
    (d2, answer_row, row, piece): Candidate,
    x: f64,
    y: f64,
) -> NetworkPosition {
    let ri = &idx.rows[row as usize];
    let (f, point) = match piece {
        // the answer straight from the closest piece: no walk over the geometry
        Some(p) => {
            let t = p.closest_t(x, y);
            let f = if ri.length_2d > 0.0 {
                ((p.along_m + t * p.length()) / ri.length_2d).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let z = p.z0 as f64 + t * (p.z1 as f64 - p.z0 as f64);
            (
                f,
                [
                    p.x0 + t * (p.x1 - p.x0),
                    p.y0 + t * (p.y1 - p.y0),
                    (z * 1000.0).round() / 1000.0,
                ],
            )
        }
        None => {
            let geometry = n.geometry(row as usize);
            let (f, _) = project(geometry, x, y);
            (f, point_at(geometry, f))
        }
    };
    let meter = ri.from_m as f64 + f * (ri.to_m as f64 - ri.from_m as f64);
    let position = ri.from_pos + f * (ri.to_pos - ri.from_pos);
    NetworkPosition {
        row: answer_row,
        link_id: crate::ids::LinkId(ri.link_id),
        position,
        point,
        road: ri.key,
        meter: meter.round() as u32,
        distance_m: d2.sqrt(),
        system: point_in_row(n, row as usize, position),
    }
}

/// The same answer by scanning every segment (the test oracle).
pub fn nearest_brute_force(n: &RoadNetwork, q: &NearestQuery) -> Vec<(u32, f64)> {
    let NearestQuery {
        x,
        y,
        max_distance_m,
        max_count,
        ref filter,
    } = *q;
    let r2 = max_distance_m * max_distance_m;
    let mut all: Vec<(f64, u32)> = (0..n.len())
        .filter(|&r| filter.accepts(n, r))
        .filter_map(|r| {
            let d2 = n
                .geometry(r)
                .windows(2)
                .map(|w| segment_distance2(x, y, w[0][0], w[0][1], w[1][0], w[1][1]))
                .fold(f64::INFINITY, f64::min);
            (d2 <= r2).then_some((d2, r as u32))
        })
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.truncate(max_count);
    all.into_iter().map(|(d2, r)| (r, d2)).collect()
}

/// Rows selected by the network area filters: the OR group (region, county, road department,
/// municipality) intersected with road references, a map extent (the rows whose geometry
/// intersects its rectangle in the rectangle's own system) and the network attributes.
#[derive(Debug, Clone, Default)]
pub struct NetworkAreaFilter {
    pub any_of: Vec<(AreaKind, u32)>,
    pub roads: Vec<RoadRefFilter>,
    pub bbox: Option<MapExtent>,
    /// The network attributes (typeveg, detaljniva, …), AND-ed onto the rest.
    pub attributes: NetworkAttributeFilter,
    /// polygon: the rows whose geometry intersects it (in its own system).
    pub polygon: Option<std::sync::Arc<AreaPolygon>>,
}

pub fn select_rows(
    n: &RoadNetwork,
    idx: &NetworkIndexes,
    rtree: &NetworkIndex,
    f: &NetworkAreaFilter,
) -> RoaringBitmap {
    let mut rows = if f.any_of.is_empty() {
        let mut all = RoaringBitmap::new();
        all.insert_range(0..n.len() as u32);
        all
    } else {
        let mut u = RoaringBitmap::new();
        for k in &f.any_of {
            if let Some(b) = idx.areas.get(k) {
                u |= b;
            }
        }
        u
    };
    if !f.roads.is_empty() {
        let mut matched = RoaringBitmap::new();
        for r in rows.iter() {
            let key = row_key(n, r as usize);
            if f.roads
                .iter()
                .any(|q| q.matches(&key, n.from_m[r as usize], n.to_m[r as usize]))
            {
                matched.insert(r);
            }
        }
        rows = matched;
    }
    if let Some(e) = &f.bbox {
        let (inside, edge) = extent_candidates(n, rtree, e);
        let mut kept = &rows & &inside;
        for r in (&rows & &edge).iter() {
            if e.meets_line(n.geometry(r as usize)) {
                kept.insert(r);
            }
        }
        rows = kept;
    }
    if let Some(a) = &f.polygon {
        rows = in_polygon_rows(n, rtree, &rows, a);
    }
    f.attributes.retain(n, idx, &rows)
}

/// The rows of `rows` whose geometry intersects polygon `a` (R-tree candidates, then exact).
fn in_polygon_rows(
    n: &RoadNetwork,
    rtree: &NetworkIndex,
    rows: &RoaringBitmap,
    a: &AreaPolygon,
) -> RoaringBitmap {
    let Some([x0, y0, x1, y1]) = a.storage_envelope() else {
        return RoaringBitmap::new();
    };
    let env = rstar::AABB::from_corners(geo::Point::new(x0, y0), geo::Point::new(x1, y1));
    let mut found = RoaringBitmap::new();
    for entry in rtree.tree.locate_in_envelope_intersecting(&env) {
        found.insert(entry.data);
    }
    found &= rows;
    found
        .iter()
        .filter(|&r| a.meets_line(n.geometry(r as usize)))
        .collect()
}

/// The network rows the R-tree finds for map extent `e` (its outer storage envelope), split
/// into those whose every vertex surely lies in the rectangle and the rest, near or past its
/// edge, which are to be tested exactly ([`MapExtent`]).
pub fn extent_candidates(
    n: &RoadNetwork,
    rtree: &NetworkIndex,
    e: &MapExtent,
) -> (RoaringBitmap, RoaringBitmap) {
    let (mut inside, mut edge) = (RoaringBitmap::new(), RoaringBitmap::new());
    let Some([x0, y0, x1, y1]) = e.storage_envelope() else {
        return (inside, edge);
    };
    use rstar::AABB;
    let env = AABB::from_corners(geo::Point::new(x0, y0), geo::Point::new(x1, y1));
    let mut found = RoaringBitmap::new();
    for entry in rtree.tree.locate_in_envelope_intersecting(&env) {
        found.insert(entry.data);
    }
    for r in found.iter() {
        if e.surely_holds(n.geometry(r as usize)) {
            inside.insert(r);
        } else {
            edge.insert(r);
        }
    }
    (inside, edge)
}

/// The network queries as methods of the generation they run on, so callers pass one
/// generation rather than its columns and indexes one by one.
impl Generation {
    /// The nearest positions to `q`'s point (see [`nearest`]).
    pub fn nearest(&self, q: &NearestQuery) -> Vec<NetworkPosition> {
        if let Some(d) = &self.day_rows {
            return nearest_at_day(d, q);
        }
        nearest(&self.network, &self.network_indexes, &self.network_index, q)
    }

    /// Where a point road reference lies (see [`locate_road_ref`]).
    pub fn locate_road_ref(&self, f: &RoadRefFilter) -> Option<NetworkPosition> {
        locate_road_ref(&self.network, &self.network_indexes, f)
    }

    /// Where a point road system reference lies (`SystemRefFilter::parse_point`'s form):
    /// the position with the reference's own metre.
    pub fn locate_system_ref(
        &self,
        f: &super::system_ref::SystemRefFilter,
    ) -> Option<NetworkPosition> {
        let idx = self.network_indexes.system_refs(&self.network);
        let (row, position) = super::system_ref::locate(&self.network, idx, f)?;
        let mut p = position_in_row(&self.network, row, position, 0.0);
        if let (Some(s), Some((m, _))) = (p.system.as_mut(), f.metres) {
            s.meter = m;
        }
        Some(p)
    }

    /// Where a link position lies (see [`locate_link`]).
    pub fn locate_link(
        &self,
        link_id: crate::ids::LinkId,
        position: f64,
    ) -> Option<NetworkPosition> {
        locate_link(&self.network, link_id.get(), position)
    }

    /// The segment rows an area filter selects (see [`select_rows`]).
    pub fn select_segments(&self, f: &NetworkAreaFilter) -> RoaringBitmap {
        select_rows(&self.network, &self.network_indexes, &self.network_index, f)
    }

    /// Segment rows of `link_id` overlapping the link positions `from..=to`.
    pub fn segments_overlapping(
        &self,
        link_id: u64,
        from: f64,
        to: f64,
    ) -> impl Iterator<Item = usize> + '_ {
        self.network.rows_overlapping(link_id, from, to)
    }

    /// The first segment row after (link id, start position) in the network's order.
    pub fn first_segment_after(&self, link_id: crate::ids::LinkId, from_pos: f64) -> usize {
        self.network.first_row_after(link_id.get(), from_pos)
    }

    /// The meter value (unrounded) of a link position within segment row `row`.
    pub fn meter_at(&self, row: usize, position: f64) -> f64 {
        meter_exact(&self.network, row, position)
    }
}
