//! Shortest routes along the road network by length: A* over the generation's routing graph
//! (`index::graph::RouteGraph`) from a point on one row to a point on another.
//!
//! The estimate is the larger of two lower bounds of the distance to the nearer end of the
//! target's row: `k ×` the straight distance, `k` the graph's bound factor (no row is shorter
//! than `k ×` the straight distance between its ends), and the landmarks' triangle inequality
//! (`index::landmarks`); both are consistent, so it never overestimates and the first time the best candidate is not beaten by the
//! smallest open estimate the route is the shortest. The search keeps its labels in arrays over
//! the graph's vertices, stamped per search and kept per thread for the next one, so a short
//! route costs what it visits, not the network's size.
//!
//! Which rows a route may use (`RouteFilter`): without detailed links the rows of topology
//! level 0 (`detaljnivå` VEGTRASE and VEGTRASE_OG_KJOREBANE); with detailed links every row
//! but VEGTRASE-only ones (KJOREBANE, KJOREFELT and VEGTRASE_OG_KJOREBANE: the carriageways
//! and lanes instead of the trace between them); connection links unless left out; the rows
//! of one traffic group when asked. A corridor (`omkrets`) leaves out vertices farther than
//! that from the straight line between the two points.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

mod hierarchy;

use crate::generation::Generation;
use crate::index::graph::RouteGraph;
use crate::index::landmarks::Landmarks;
use crate::snapshot::columns::{RoadNetwork, DETAIL_VT};

/// Which rows a route may use (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteFilter {
    pub detailed: bool,
    pub connection_links: bool,
    /// `K` or `G`; None: both.
    pub traffic_group: Option<u8>,
}

impl Default for RouteFilter {
    fn default() -> Self {
        RouteFilter {
            detailed: false,
            connection_links: true,
            traffic_group: None,
        }
    }
}

impl RouteFilter {
    #[inline]
    pub fn passes(&self, n: &RoadNetwork, r: usize) -> bool {
        let level = if self.detailed {
            n.detail_level[r] != DETAIL_VT
        } else {
            n.topology_level[r] == 0
        };
        level
            && (self.connection_links || !n.is_connection[r])
            && self.traffic_group.is_none_or(|t| n.traffic_group[r] == t)
    }
}

/// A point on a row: the row and the link position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoutePoint {
    pub row: u32,
    pub position: f64,
}

/// One stretch of a route on one row: link positions `from_pos <= to_pos`, travelled along
/// the link's direction (`along`) or against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteSegment {
    pub row: u32,
    pub from_pos: f64,
    pub to_pos: f64,
    pub along: bool,
    pub length_m: f64,
}

impl RouteSegment {
    /// Where the segment is entered and left (link positions in travel order).
    pub fn entry_exit(&self) -> (f64, f64) {
        if self.along {
            (self.from_pos, self.to_pos)
        } else {
            (self.to_pos, self.from_pos)
        }
    }
}

/// A route: its segments in travel order and its length.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub segments: Vec<RouteSegment>,
    pub length_m: f64,
}

/// A route question between two points on rows that pass `filter`.
#[derive(Debug, Clone, Copy)]
pub struct RouteQuery {
    pub start: RoutePoint,
    pub end: RoutePoint,
    pub filter: RouteFilter,
    /// Corridor half-width in metres around the straight line between the points.
    pub corridor_m: Option<f64>,
}

/// The fraction of row `r`'s length from its `from_pos` to `position`.
pub fn fraction_in_row(n: &RoadNetwork, r: usize, position: f64) -> f64 {
    let span = n.to_pos[r] - n.from_pos[r];
    if span > 0.0 {
        ((position - n.from_pos[r]) / span).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The row of `link_id` covering `position` that passes `filter` (the first one at a
/// boundary).
pub fn row_at(n: &RoadNetwork, filter: &RouteFilter, link_id: u64, position: f64) -> Option<u32> {
    n.rows_of_link(link_id)
        .find(|&r| n.from_pos[r] <= position && position <= n.to_pos[r] && filter.passes(n, r))
        .map(|r| r as u32)
}

/// How a label was reached: from the start point (towards the row's from end or its to end)
/// or from another vertex by a row.
#[derive(Debug, Clone, Copy)]
enum Via {
    Start { to_end: bool },
    Row { from: u32, row: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Label {
    cost: f64,
    via: Via,
    closed: bool,
}

/// The labels of one search, by vertex: arrays over every vertex of the graph, reused by the
/// next search on the same thread (a label counts when its stamp is the search's).
struct Labels {
    stamp: u32,
    stamps: Vec<u32>,
    labels: Vec<Label>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Option<Labels>> = const { std::cell::RefCell::new(None) };
}

impl Labels {
    /// Labels for `vertices` vertices, none set: the thread's spare arrays when they fit.
    fn take(vertices: usize) -> Labels {
        let spare = SPARE.with(|s| s.borrow_mut().take());
        let mut l = match spare {
            Some(l) if l.stamps.len() == vertices => l,
            _ => Labels {
                stamp: 0,
                stamps: vec![0; vertices],
                labels: vec![
                    Label {
                        cost: 0.0,
                        via: Via::Start { to_end: false },
                        closed: false,
                    };
                    vertices
                ],
            },
        };
        l.stamp = l.stamp.wrapping_add(1);
        if l.stamp == 0 {
            l.stamps.iter_mut().for_each(|s| *s = 0);
            l.stamp = 1;
        }
        l
    }

    fn give_back(self) {
        SPARE.with(|s| *s.borrow_mut() = Some(self));
    }

    #[inline]
    fn get(&self, v: &u32) -> Option<&Label> {
        let v = *v as usize;
        (self.stamps[v] == self.stamp).then(|| &self.labels[v])
    }

    #[inline]
    fn get_mut(&mut self, v: &u32) -> Option<&mut Label> {
        let v = *v as usize;
        (self.stamps[v] == self.stamp).then(|| &mut self.labels[v])
    }

    #[inline]
    fn insert(&mut self, v: u32, label: Label) {
        self.stamps[v as usize] = self.stamp;
        self.labels[v as usize] = label;
    }
}

/// A heap entry: estimate, cost, vertex; the smallest estimate first.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Open(f64, f64, u32);

impl Eq for Open {}
impl Ord for Open {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(o.2.cmp(&self.2))
    }
}
impl PartialOrd for Open {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// How the best route found so far ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Finish {
    None,
    /// Start and end on one row: along it.
    Direct,
    /// At vertex v, then along the end row from its from end (`from_end`) or its to end.
    At {
        vertex: u32,
        from_end: bool,
    },
}

/// Distance from p to the segment a–b.
fn to_segment(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    let t = if l2 > 0.0 {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    ((p[0] - a[0] - t * dx).powi(2) + (p[1] - a[1] - t * dy).powi(2)).sqrt()
}

struct Search<'a> {
    g: &'a RouteGraph,
    n: &'a RoadNetwork,
    q: &'a RouteQuery,
    labels: Labels,
    heap: BinaryHeap<Open>,
    /// The end row's vertices and the cost from each to the end point.
    ends: [(u32, f64); 2],
    corridor: Option<([f64; 2], [f64; 2], f64)>,
}

impl Search<'_> {
    fn estimate(&self, v: u32) -> f64 {
        let [(a, _), (b, _)] = self.ends;
        let straight = self.g.bound_factor * self.g.straight(v, a).min(self.g.straight(v, b));
        if self.g.landmarks.count == 0 {
            return straight;
        }
        let at = self.g.landmarks.of(v);
        let by_landmarks = Landmarks::bound(at, self.g.landmarks.of(a))
            .min(Landmarks::bound(at, self.g.landmarks.of(b)));
        straight.max(by_landmarks)
    }

    fn push(&mut self, v: u32, cost: f64, via: Via) {
        if let Some(l) = self.labels.get(&v) {
            if l.closed || l.cost <= cost {
                return;
            }
        }
        self.labels.insert(
            v,
            Label {
                cost,
                via,
                closed: false,
            },
        );
        let f = cost + self.estimate(v);
        self.heap.push(Open(f, cost, v));
    }

    fn outside(&self, v: u32) -> bool {
        match self.corridor {
            None => false,
            Some((a, b, width)) => {
                v != self.ends[0].0
                    && v != self.ends[1].0
                    && to_segment(self.g.xy[v as usize], a, b) > width
            }
        }
    }

    /// Runs the search: the best finish and its length.
    fn run(&mut self) -> (Finish, f64) {
        let (n, q) = (self.n, self.q);
        let (s, e) = (q.start, q.end);
        let (mut finish, mut best) = (Finish::None, f64::INFINITY);
        if s.row == e.row {
            let fs = fraction_in_row(n, s.row as usize, s.position);
            let fe = fraction_in_row(n, e.row as usize, e.position);
            best = (fe - fs).abs() * n.length_m[s.row as usize];
            finish = Finish::Direct;
        }
        let rs = s.row as usize;
        let fs = fraction_in_row(n, rs, s.position);
        let len = n.length_m[rs];
        self.push(self.g.row_from[rs], fs * len, Via::Start { to_end: false });
        self.push(
            self.g.row_to[rs],
            (1.0 - fs) * len,
            Via::Start { to_end: true },
        );
        while let Some(Open(f, cost, v)) = self.heap.pop() {
            if f >= best {
                break;
            }
            let Some(label) = self.labels.get_mut(&v) else {
                continue;
            };
            if label.closed || label.cost < cost {
                continue;
            }
            label.closed = true;
            for (i, &(end, rest)) in self.ends.iter().enumerate() {
                if v == end && cost + rest < best {
                    best = cost + rest;
                    finish = Finish::At {
                        vertex: v,
                        from_end: i == 0,
                    };
                }
            }
            for &(w, row) in self.g.edges(v) {
                if !q.filter.passes(n, row as usize) || self.outside(w) {
                    continue;
                }
                self.push(
                    w,
                    cost + n.length_m[row as usize],
                    Via::Row { from: v, row },
                );
            }
        }
        (finish, best)
    }

    /// The segments of the route ending as `finish`.
    fn segments(&self, finish: Finish) -> Vec<RouteSegment> {
        let (n, q) = (self.n, self.q);
        let (vertex, from_end) = match finish {
            Finish::None => return Vec::new(),
            Finish::Direct => return vec![part(n, q.start.row, q.start.position, q.end.position)],
            Finish::At { vertex, from_end } => (vertex, from_end),
        };
        // (row, vertex entered at), from the end back to the start
        let mut rows = Vec::new();
        let mut v = vertex;
        let mut to_end = false;
        while let Some(label) = self.labels.get(&v) {
            match label.via {
                Via::Row { from, row } => {
                    rows.push((row, from));
                    v = from;
                }
                Via::Start { to_end: t } => {
                    to_end = t;
                    break;
                }
            }
        }
        rows.reverse();
        assemble(self.g, n, q, to_end, &rows, from_end)
    }
}

/// The stretch of row `row` from link position `a` to `b`.
pub(crate) fn part(n: &RoadNetwork, row: u32, a: f64, b: f64) -> RouteSegment {
    let r = row as usize;
    let len = (fraction_in_row(n, r, a) - fraction_in_row(n, r, b)).abs() * n.length_m[r];
    RouteSegment {
        row,
        from_pos: a.min(b),
        to_pos: a.max(b),
        along: b >= a,
        length_m: len,
    }
}

/// The segments of a route that leaves the start row at its to end (`to_end`) or its from
/// end, runs along `rows` (each with the vertex it is entered at) and enters the end row at its
/// from end (`from_end`) or its to end.
pub(crate) fn assemble(
    g: &RouteGraph,
    n: &RoadNetwork,
    q: &RouteQuery,
    to_end: bool,
    rows: &[(u32, u32)],
    from_end: bool,
) -> Vec<RouteSegment> {
    let (sr, er) = (q.start.row as usize, q.end.row as usize);
    let edge = if to_end { n.to_pos[sr] } else { n.from_pos[sr] };
    let mut out = Vec::with_capacity(rows.len() + 2);
    out.push(part(n, q.start.row, q.start.position, edge));
    for &(row, entered) in rows {
        let r = row as usize;
        out.push(RouteSegment {
            row,
            from_pos: n.from_pos[r],
            to_pos: n.to_pos[r],
            along: g.row_from[r] == entered,
            length_m: n.length_m[r],
        });
    }
    out.push(if from_end {
        part(n, q.end.row, n.from_pos[er], q.end.position)
    } else {
        part(n, q.end.row, n.to_pos[er], q.end.position)
    });
    let total = out.len();
    // a stretch of no length where the route only touches a row's end says nothing
    let mut kept: Vec<RouteSegment> = out
        .into_iter()
        .filter(|s| s.from_pos < s.to_pos || total == 1)
        .collect();
    if kept.is_empty() {
        kept.push(part(n, q.start.row, q.start.position, q.start.position));
    }
    kept
}

/// The shortest route for `q` on graph `g` of network `n`, None when the points are not
/// connected by passing rows (within the corridor).
pub fn shortest_route(g: &RouteGraph, n: &RoadNetwork, q: &RouteQuery) -> Option<Route> {
    if let Some(h) = g.hierarchy() {
        if q.filter == RouteFilter::default() && q.corridor_m.is_none() {
            return hierarchy::shortest_route(g, h, n, q);
        }
    }
    shortest_route_searching(g, n, q)
}

/// The shortest route for `q` by A* over the graph, whatever the hierarchy.
pub fn shortest_route_searching(g: &RouteGraph, n: &RoadNetwork, q: &RouteQuery) -> Option<Route> {
    let er = q.end.row as usize;
    let fe = fraction_in_row(n, er, q.end.position);
    let ends = [
        (g.row_from[er], fe * n.length_m[er]),
        (g.row_to[er], (1.0 - fe) * n.length_m[er]),
    ];
    let corridor = q.corridor_m.map(|w| {
        let point = |p: RoutePoint| {
            let r = p.row as usize;
            let c = crate::geo::linref::point_at(n.geometry(r), fraction_in_row(n, r, p.position));
            [c[0], c[1]]
        };
        (point(q.start), point(q.end), w)
    });
    let mut search = Search {
        g,
        n,
        q,
        labels: Labels::take(g.vertex_count()),
        heap: BinaryHeap::new(),
        ends,
        corridor,
    };
    let (finish, length_m) = search.run();
    let route = (finish != Finish::None).then(|| Route {
        segments: search.segments(finish),
        length_m,
    });
    search.labels.give_back();
    route
}

impl Generation {
    /// The shortest route for `q` on this generation's network (its graph made on first use).
    pub fn shortest_route(&self, q: &RouteQuery) -> Option<Route> {
        shortest_route(&self.route_graph, &self.network, q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corridor_distance_is_to_the_segment() {
        assert_eq!(to_segment([5.0, 3.0], [0.0, 0.0], [10.0, 0.0]), 3.0);
        assert_eq!(to_segment([13.0, 4.0], [0.0, 0.0], [10.0, 0.0]), 5.0);
    }

    #[test]
    fn heap_pops_the_smallest_estimate() {
        let mut h = BinaryHeap::new();
        h.push(Open(3.0, 0.0, 1));
        h.push(Open(1.0, 0.0, 2));
        h.push(Open(2.0, 0.0, 3));
        assert_eq!(h.pop().map(|o| o.2), Some(2));
    }
}
