//! Map matching: the route a noisy track (GPS points) most likely drove, as one route.
//!
//! A hidden-Markov matcher with Viterbi: each track point's candidates are the nearest rows the
//! route may use within the snap distance (one position per row, the closest [`CANDIDATES`]);
//! a point without any (off the road) is left out. A candidate costs its distance squared over
//! 2σ² (σ = [`SIGMA_M`], GPS noise); a step from a candidate of one point to one of the next
//! costs the difference between their shortest route length and the points' straight distance
//! over β ([`BETA_M`]): a route about as long as the step is likely, a detour is not. The path
//! of least total cost wins; the answer joins the shortest routes between its candidates, and
//! consecutive stretches of one row in one direction are merged.

use super::route::{shortest_route, RouteFilter, RoutePoint, RouteQuery, RouteSegment};
use crate::generation::Generation;
use crate::query::network::{NearestFilter, NearestQuery};

/// Candidates kept per track point.
pub const CANDIDATES: usize = 5;
/// GPS noise (standard deviation), metres.
pub const SIGMA_M: f64 = 10.0;
/// Scale of the route/straight difference, metres.
pub const BETA_M: f64 = 20.0;
/// Track points a match takes at most.
pub const MAX_POINTS: usize = 1000;

/// A matched track: the route and the number of points that had candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    pub segments: Vec<RouteSegment>,
    pub length_m: f64,
    pub start: RoutePoint,
    pub end: RoutePoint,
    /// Metres from the first and the last used track point to where the route starts and ends.
    pub start_distance_m: f64,
    pub end_distance_m: f64,
    pub points_used: usize,
}

/// One candidate: where on the network and how far from its point.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    at: RoutePoint,
    distance_m: f64,
}

fn candidates(g: &Generation, x: f64, y: f64, filter: &RouteFilter, max_m: f64) -> Vec<Candidate> {
    let q = NearestQuery {
        x,
        y,
        max_distance_m: max_m,
        max_count: 8 * CANDIDATES,
        filter: NearestFilter {
            include_connection_links: true,
            include_detailed_links: true,
            roads: Vec::new(),
        },
    };
    g.nearest(&q)
        .into_iter()
        .filter(|p| filter.passes(&g.network, p.row as usize))
        .take(CANDIDATES)
        .map(|p| Candidate {
            at: RoutePoint {
                row: p.row,
                position: p.position,
            },
            distance_m: p.distance_m,
        })
        .collect()
}

/// The route between two candidates within a corridor (None: not connected).
fn between(
    g: &Generation,
    a: RoutePoint,
    b: RoutePoint,
    filter: RouteFilter,
    corridor: f64,
) -> Option<super::route::Route> {
    let q = RouteQuery {
        start: a,
        end: b,
        filter,
        corridor_m: Some(corridor),
    };
    shortest_route(&g.route_graph, &g.network, &q)
}

/// The best route for a track of storage points (see the module doc); None when fewer than two
/// points have candidates or the chosen ones cannot be joined.
pub fn match_track(
    g: &Generation,
    track: &[(f64, f64)],
    filter: RouteFilter,
    max_m: f64,
) -> Option<Matched> {
    let steps: Vec<((f64, f64), Vec<Candidate>)> = track
        .iter()
        .take(MAX_POINTS)
        .map(|&(x, y)| ((x, y), candidates(g, x, y, &filter, max_m)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if steps.len() < 2 {
        return None;
    }
    let emission = |c: &Candidate| c.distance_m * c.distance_m / (2.0 * SIGMA_M * SIGMA_M);
    // Viterbi: cost and back pointer per candidate of each step
    let mut cost: Vec<f64> = steps[0].1.iter().map(emission).collect();
    let mut back: Vec<Vec<usize>> = vec![vec![0; steps[0].1.len()]];
    for w in 1..steps.len() {
        let ((x0, y0), prev) = &steps[w - 1];
        let ((x1, y1), next) = &steps[w];
        let straight = (x1 - x0).hypot(y1 - y0);
        // routes stay within a corridor around the step (as long as twice the step, at least
        // 500 m), so a step costs a local search, not the network's
        let corridor = (2.0 * straight).max(500.0);
        let mut here = vec![f64::INFINITY; next.len()];
        let mut from = vec![0usize; next.len()];
        for (j, b) in next.iter().enumerate() {
            for (i, a) in prev.iter().enumerate() {
                if !cost[i].is_finite() {
                    continue;
                }
                let Some(r) = between(g, a.at, b.at, filter, corridor) else {
                    continue;
                };
                let c = cost[i] + (r.length_m - straight).abs() / BETA_M + emission(b);
                if c < here[j] {
                    here[j] = c;
                    from[j] = i;
                }
            }
        }
        if here.iter().all(|c| !c.is_finite()) {
            // a break in the track (no candidate reachable): start again from this point
            here = next.iter().map(emission).collect();
        }
        cost = here;
        back.push(from);
    }
    let mut j = (0..cost.len()).min_by(|&a, &b| cost[a].total_cmp(&cost[b]))?;
    let mut chosen = vec![steps[0].1[0]; steps.len()];
    for w in (0..steps.len()).rev() {
        chosen[w] = steps[w].1[j];
        j = back[w][j];
    }
    join(g, &chosen, filter)
}

/// The shortest routes between consecutive chosen points, joined and merged.
fn join(g: &Generation, chosen: &[Candidate], filter: RouteFilter) -> Option<Matched> {
    let mut segments: Vec<RouteSegment> = Vec::new();
    let mut length_m = 0.0;
    for w in chosen.windows(2) {
        let q = RouteQuery {
            start: w[0].at,
            end: w[1].at,
            filter,
            corridor_m: None,
        };
        let r = shortest_route(&g.route_graph, &g.network, &q)?;
        length_m += r.length_m;
        for s in r.segments {
            push_merged(&mut segments, s);
        }
    }
    if segments.len() > 1 {
        segments.retain(|s| s.from_pos < s.to_pos);
    }
    let (first, last) = (chosen.first()?, chosen.last()?);
    Some(Matched {
        segments,
        length_m,
        start: first.at,
        end: last.at,
        start_distance_m: first.distance_m,
        end_distance_m: last.distance_m,
        points_used: chosen.len(),
    })
}

/// Appends `s`, merged into the last segment when it continues it (same row and direction,
/// entered where the last was left).
fn push_merged(out: &mut Vec<RouteSegment>, s: RouteSegment) {
    if let Some(last) = out.last_mut() {
        if last.row == s.row && last.along == s.along && last.entry_exit().1 == s.entry_exit().0 {
            last.from_pos = last.from_pos.min(s.from_pos);
            last.to_pos = last.to_pos.max(s.to_pos);
            last.length_m += s.length_m;
            return;
        }
        if s.from_pos == s.to_pos {
            return;
        }
    }
    out.push(s);
}
