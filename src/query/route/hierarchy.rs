//! Shortest routes of the default filter over the contraction hierarchy
//! (`index::contraction`): a Dijkstra over upward edges from the start point's row ends and
//! one from the end point's row ends, taken in turn by the smaller open distance, until neither
//! has an open distance below the best meeting found. A shortest route climbs from both ends
//! to its most important vertex, so that vertex is settled by both searches and the best
//! meeting is the shortest route. Labels live in hash maps: a search settles a few hundred
//! vertices, not a region. The route's upward edges then unpack to rows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{assemble, fraction_in_row, part, Route, RouteQuery};
use crate::index::contraction::Hierarchy;
use crate::index::graph::RouteGraph;
use crate::snapshot::columns::RoadNetwork;
use crate::util::FastMap;

/// Marks a label made by a row end of the query (no upward edge).
const END: u32 = u32::MAX;

/// A search label: cost, and the vertex and upward edge it came by (`edge == END`: a row end
/// of the query, `from` 1 for its to end, 0 for its from end).
#[derive(Debug, Clone, Copy)]
struct Label {
    cost: f64,
    from: u32,
    edge: u32,
    settled: bool,
}

#[derive(Default)]
struct Side {
    labels: FastMap<u32, Label>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Side {
    fn reach(&mut self, v: u32, cost: f64, from: u32, edge: u32) {
        let better = self.labels.get(&v).is_none_or(|l| cost < l.cost);
        if better {
            self.labels.insert(
                v,
                Label {
                    cost,
                    from,
                    edge,
                    settled: false,
                },
            );
            self.heap.push(Reverse((cost.to_bits(), v)));
        }
    }

    /// The smallest open distance (non-negative, so its bits order as the value).
    fn top(&self) -> f64 {
        self.heap
            .peek()
            .map_or(f64::INFINITY, |Reverse((b, _))| f64::from_bits(*b))
    }

    /// The upward edges from `v` back to a row end: (lower vertex, edge) nearest `v` first,
    /// and whether that row end is the row's to end.
    fn chain(&self, mut v: u32) -> (Vec<(u32, usize)>, bool) {
        let mut out = Vec::new();
        while let Some(l) = self.labels.get(&v) {
            if l.edge == END {
                return (out, l.from == 1);
            }
            out.push((l.from, l.edge as usize));
            v = l.from;
        }
        (out, false)
    }
}

/// The shortest route for `q` (default filter, no corridor) on `g`'s hierarchy.
pub fn shortest_route(
    g: &RouteGraph,
    h: &Hierarchy,
    n: &RoadNetwork,
    q: &RouteQuery,
) -> Option<Route> {
    let (rs, re) = (q.start.row as usize, q.end.row as usize);
    let (mut best, mut meet) = (f64::INFINITY, None);
    if rs == re {
        let fs = fraction_in_row(n, rs, q.start.position);
        let fe = fraction_in_row(n, re, q.end.position);
        best = (fe - fs).abs() * n.length_m[rs];
    }
    let mut sides = [Side::default(), Side::default()];
    for (side, r, position) in [(0, rs, q.start.position), (1, re, q.end.position)] {
        let f = fraction_in_row(n, r, position);
        sides[side].reach(g.row_from[r], f * n.length_m[r], 0, END);
        sides[side].reach(g.row_to[r], (1.0 - f) * n.length_m[r], 1, END);
    }
    loop {
        let (t0, t1) = (sides[0].top(), sides[1].top());
        let s = if t0 <= t1 { 0 } else { 1 };
        if t0.min(t1) >= best {
            break;
        }
        let Some(Reverse((bits, v))) = sides[s].heap.pop() else {
            break;
        };
        let d = f64::from_bits(bits);
        match sides[s].labels.get_mut(&v) {
            Some(l) if !l.settled && l.cost >= d => l.settled = true,
            _ => continue,
        }
        if let Some(other) = sides[1 - s].labels.get(&v) {
            if d + other.cost < best {
                best = d + other.cost;
                meet = Some(v);
            }
        }
        for e in h.up(v) {
            sides[s].reach(h.up_to[e], d + h.up_len[e], v, e as u32);
        }
    }
    if best.is_infinite() {
        return None;
    }
    let Some(top) = meet else {
        // start and end on one row, along it
        return Some(Route {
            segments: vec![part(n, q.start.row, q.start.position, q.end.position)],
            length_m: best,
        });
    };
    let (up, to_end) = sides[0].chain(top);
    let (down, to_end_of_end) = sides[1].chain(top);
    let mut rows = Vec::new();
    for &(low, e) in up.iter().rev() {
        h.unpack(low, e, true, &mut rows);
    }
    for &(low, e) in &down {
        h.unpack(low, e, false, &mut rows);
    }
    Some(Route {
        segments: assemble(g, n, q, to_end, &rows, !to_end_of_end),
        length_m: best,
    })
}
