//! Routing against an independent expectation: a plain Dijkstra written here over the network
//! rows (vertices keyed by node id or link position, no estimate, no shared code with the
//! engine's graph) gives the same length for random pairs on the tiny and the demo data, both
//! by the contraction hierarchy (the default filter) and by A*, and every route is a connected
//! chain from the start point to the end point.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::geo::linref::{length_2d, point_at, sub_line};
use vegdb::query::route::{
    row_at, shortest_route, shortest_route_searching, Route, RouteFilter, RoutePoint, RouteQuery,
    RouteSegment,
};
use vegdb::query::route_match::match_track;
use vegdb::snapshot::columns::RoadNetwork;

fn tiny() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, 99, tmp.path()).unwrap();
        let g = Generation::load(&dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        g
    })
}

fn demo() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
        let current = std::fs::read_to_string(root.join("CURRENT")).unwrap();
        let dir = root.join(format!("gen-{:06}", current.trim().parse::<u64>().unwrap()));
        Generation::load(&dir, &|_| {}).unwrap().0
    })
}

/// A vertex of the oracle: a network node, or a position inside a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Node(u64),
    Inside(u64, u64),
}

/// The rule written out: which rows a route may use.
fn usable(n: &RoadNetwork, r: usize, f: &RouteFilter) -> bool {
    let level = if f.detailed {
        n.detail_level[r] != 0
    } else {
        n.topology_level[r] == 0
    };
    level
        && (f.connection_links || !n.is_connection[r])
        && f.traffic_group.is_none_or(|t| n.traffic_group[r] == t)
}

/// Per row its two vertices: a row's start is its start node where no row of the same link and
/// nodes starts earlier, else the position inside the link; likewise its end.
fn keys(n: &RoadNetwork) -> Vec<(Key, Key)> {
    let mut span: HashMap<(u64, u64, u64), (f64, f64)> = HashMap::new();
    for r in 0..n.len() {
        let e = span
            .entry((n.link_id[r], n.start_node[r], n.end_node[r]))
            .or_insert((f64::MAX, f64::MIN));
        e.0 = e.0.min(n.from_pos[r]);
        e.1 = e.1.max(n.to_pos[r]);
    }
    (0..n.len())
        .map(|r| {
            let (lo, hi) = span[&(n.link_id[r], n.start_node[r], n.end_node[r])];
            let a = if n.from_pos[r] == lo {
                Key::Node(n.start_node[r])
            } else {
                Key::Inside(n.link_id[r], n.from_pos[r].to_bits())
            };
            let b = if n.to_pos[r] == hi {
                Key::Node(n.end_node[r])
            } else {
                Key::Inside(n.link_id[r], n.to_pos[r].to_bits())
            };
            (a, b)
        })
        .collect()
}

fn frac(n: &RoadNetwork, r: usize, pos: f64) -> f64 {
    let span = n.to_pos[r] - n.from_pos[r];
    if span > 0.0 {
        (pos - n.from_pos[r]) / span
    } else {
        0.0
    }
}

/// The shortest length from `s` to `e` by plain Dijkstra over every usable row.
fn oracle(
    n: &RoadNetwork,
    ks: &[(Key, Key)],
    f: &RouteFilter,
    s: RoutePoint,
    e: RoutePoint,
) -> f64 {
    let mut adj: HashMap<Key, Vec<(Key, f64)>> = HashMap::new();
    for (r, &(a, b)) in ks.iter().enumerate() {
        if usable(n, r, f) {
            adj.entry(a).or_default().push((b, n.length_m[r]));
            adj.entry(b).or_default().push((a, n.length_m[r]));
        }
    }
    let (rs, re) = (s.row as usize, e.row as usize);
    let mut dist: HashMap<Key, f64> = HashMap::new();
    let mut heap = BinaryHeap::new();
    let fs = frac(n, rs, s.position);
    for (k, d) in [
        (ks[rs].0, fs * n.length_m[rs]),
        (ks[rs].1, (1.0 - fs) * n.length_m[rs]),
    ] {
        if d < *dist.get(&k).unwrap_or(&f64::INFINITY) {
            dist.insert(k, d);
            heap.push(Reverse((ordered(d), k_id(k), k)));
        }
    }
    while let Some(Reverse((d, _, k))) = heap.pop() {
        let d = f64::from_bits(d);
        if d > dist[&k] {
            continue;
        }
        for &(w, l) in adj.get(&k).map(|v| v.as_slice()).unwrap_or(&[]) {
            if d + l < *dist.get(&w).unwrap_or(&f64::INFINITY) {
                dist.insert(w, d + l);
                heap.push(Reverse((ordered(d + l), k_id(w), w)));
            }
        }
    }
    let fe = frac(n, re, e.position);
    let at = |k: Key| *dist.get(&k).unwrap_or(&f64::INFINITY);
    let mut best =
        (at(ks[re].0) + fe * n.length_m[re]).min(at(ks[re].1) + (1.0 - fe) * n.length_m[re]);
    if rs == re {
        best = best.min((fe - fs).abs() * n.length_m[rs]);
    }
    best
}

/// Non-negative floats order as their bits.
fn ordered(d: f64) -> u64 {
    d.to_bits()
}

fn k_id(k: Key) -> (u64, u64) {
    match k {
        Key::Node(id) => (0, id),
        Key::Inside(l, p) => (l, p),
    }
}

/// Each segment starts where the previous ended (at the same vertex of the oracle: the
/// generator's links meeting at one node do not always share the node's coordinates, so the
/// chain is checked on the topology), the first at the start point, the last at the end
/// point; the lengths add up.
fn assert_chain(n: &RoadNetwork, ks: &[(Key, Key)], q: &RouteQuery, route: &Route) {
    assert_joined(n, ks, (q.start, q.end), &route.segments, route.length_m);
}

/// The chain check of [`assert_chain`] on segments from `ends.0` to `ends.1`: consecutive
/// segments meet at one vertex, or at one position of one row (a turn inside a row).
fn assert_joined(
    n: &RoadNetwork,
    ks: &[(Key, Key)],
    ends: (RoutePoint, RoutePoint),
    segments: &[RouteSegment],
    length_m: f64,
) {
    // the vertex at a link position that is one of the row's ends
    let key_at = |row: u32, pos: f64| -> Option<Key> {
        let r = row as usize;
        if pos == n.from_pos[r] {
            Some(ks[r].0)
        } else if pos == n.to_pos[r] {
            Some(ks[r].1)
        } else {
            None
        }
    };
    let meets = |a: (u32, f64), b: (u32, f64)| {
        a == b || {
            let (ka, kb) = (key_at(a.0, a.1), key_at(b.0, b.1));
            ka.is_some() && ka == kb
        }
    };
    let first = segments.first().unwrap();
    let last = segments.last().unwrap();
    let (start, end) = ends;
    assert!(
        meets(
            (first.row, first.entry_exit().0),
            (start.row, start.position)
        ),
        "{first:?} does not start at {start:?}"
    );
    assert!(
        meets((last.row, last.entry_exit().1), (end.row, end.position)),
        "{last:?} does not end at {end:?}"
    );
    for w in segments.windows(2) {
        assert!(
            meets(
                (w[0].row, w[0].entry_exit().1),
                (w[1].row, w[1].entry_exit().0)
            ),
            "gap between {:?} and {:?}",
            w[0],
            w[1]
        );
    }
    let sum: f64 = segments.iter().map(|s| s.length_m).sum();
    assert!((sum - length_m).abs() < 1e-6, "{sum} vs {length_m}");
}

fn check(g: &Generation, ks: &[(Key, Key)], f: RouteFilter, a: (usize, f64), b: (usize, f64)) {
    let n = &g.network;
    let usable_rows: Vec<usize> = (0..n.len()).filter(|&r| usable(n, r, &f)).collect();
    let pick = |(i, t): (usize, f64)| {
        let r = usable_rows[i % usable_rows.len()];
        let pos = n.from_pos[r] + t * (n.to_pos[r] - n.from_pos[r]);
        // the engine's own row lookup for the link position
        let row = row_at(n, &f, n.link_id[r], pos).unwrap();
        RoutePoint { row, position: pos }
    };
    let q = RouteQuery {
        start: pick(a),
        end: pick(b),
        filter: f,
        corridor_m: None,
    };
    let want = oracle(n, ks, &f, q.start, q.end);
    // the contraction hierarchy's answer (the default filter) and A*'s
    g.route_graph.wait_for_hierarchy();
    for found in [
        shortest_route(&g.route_graph, n, &q),
        shortest_route_searching(&g.route_graph, n, &q),
    ] {
        match found {
            None => assert!(
                want.is_infinite(),
                "no route, the oracle found {want}: {q:?}"
            ),
            Some(route) => {
                assert!(
                    (route.length_m - want).abs() < 1e-3,
                    "{} vs {want}: {q:?}",
                    route.length_m
                );
                assert_chain(n, ks, &q, &route);
            }
        }
    }
}

fn filters() -> impl Strategy<Value = RouteFilter> {
    (any::<bool>(), any::<bool>(), 0u8..3).prop_map(|(detailed, connection_links, t)| RouteFilter {
        detailed,
        connection_links,
        traffic_group: [None, Some(b'K'), Some(b'G')][t as usize],
    })
}

fn tiny_keys() -> &'static [(Key, Key)] {
    static K: OnceLock<Vec<(Key, Key)>> = OnceLock::new();
    K.get_or_init(|| keys(&tiny().network))
}

fn demo_keys() -> &'static [(Key, Key)] {
    static K: OnceLock<Vec<(Key, Key)>> = OnceLock::new();
    K.get_or_init(|| keys(&demo().network))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn tiny_routes_are_shortest(f in filters(), a in (0usize..1_000_000, 0.0..=1.0f64), b in (0usize..1_000_000, 0.0..=1.0f64)) {
        check(tiny(), tiny_keys(), f, a, b);
    }

    #[test]
    fn demo_routes_are_shortest(a in (0usize..1_000_000, 0.0..=1.0f64), b in (0usize..1_000_000, 0.0..=1.0f64)) {
        check(demo(), demo_keys(), RouteFilter::default(), a, b);
    }
}

#[test]
fn a_route_on_one_row_runs_along_it() {
    let g = tiny();
    let n = &g.network;
    let f = RouteFilter::default();
    let r = (0..n.len())
        .find(|&r| usable(n, r, &f) && n.length_m[r] > 10.0)
        .unwrap();
    let pos = |t: f64| n.from_pos[r] + t * (n.to_pos[r] - n.from_pos[r]);
    let q = RouteQuery {
        start: RoutePoint {
            row: r as u32,
            position: pos(0.8),
        },
        end: RoutePoint {
            row: r as u32,
            position: pos(0.2),
        },
        filter: f,
        corridor_m: None,
    };
    let route = g.shortest_route(&q).unwrap();
    assert_eq!(route.segments.len(), 1);
    assert!(!route.segments[0].along);
    assert!((route.length_m - 0.6 * n.length_m[r]).abs() < 1e-6);
}

/// Many more pairs than the oracle's: the hierarchy's length is A*'s (itself checked against
/// the oracle above) and its answer a connected chain.
#[test]
fn the_hierarchy_agrees_with_a_star_on_the_demo() {
    let g = demo();
    let n = &g.network;
    let ks = demo_keys();
    let f = RouteFilter::default();
    let rows: Vec<usize> = (0..n.len()).filter(|&r| usable(n, r, &f)).collect();
    g.route_graph.wait_for_hierarchy();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..1_000 {
        let mut point = || {
            let r = rows[next() as usize % rows.len()];
            let t = (next() % 1_001) as f64 / 1_000.0;
            RoutePoint {
                row: r as u32,
                position: n.from_pos[r] + t * (n.to_pos[r] - n.from_pos[r]),
            }
        };
        let q = RouteQuery {
            start: point(),
            end: point(),
            filter: f,
            corridor_m: None,
        };
        let by_hierarchy = shortest_route(&g.route_graph, n, &q);
        let by_search = shortest_route_searching(&g.route_graph, n, &q);
        match (by_hierarchy, by_search) {
            (None, None) => {}
            (Some(h), Some(a)) => {
                assert!(
                    (h.length_m - a.length_m).abs() < 1e-3,
                    "{} vs {}: {q:?}",
                    h.length_m,
                    a.length_m
                );
                assert_chain(n, ks, &q, &h);
            }
            (h, a) => panic!("found {} vs {}: {q:?}", h.is_some(), a.is_some()),
        }
    }
}

#[test]
fn a_narrow_corridor_is_never_shorter() {
    let g = tiny();
    let n = &g.network;
    let f = RouteFilter::default();
    let rows: Vec<usize> = (0..n.len()).filter(|&r| usable(n, r, &f)).collect();
    let (mut narrowed, mut found) = (0, 0);
    for i in 0..40 {
        let (a, b) = (
            rows[(i * 7919) % rows.len()],
            rows[(i * 104_729 + 13) % rows.len()],
        );
        let mut q = RouteQuery {
            start: RoutePoint {
                row: a as u32,
                position: n.from_pos[a],
            },
            end: RoutePoint {
                row: b as u32,
                position: n.to_pos[b],
            },
            filter: f,
            corridor_m: None,
        };
        let Some(free) = g.shortest_route(&q) else {
            continue;
        };
        found += 1;
        q.corridor_m = Some(50.0);
        match g.shortest_route(&q) {
            Some(r) => assert!(r.length_m >= free.length_m - 1e-6),
            None => narrowed += 1,
        }
    }
    assert!(found > 30, "only {found} of 40 random pairs connected");
    assert!(
        narrowed > 0,
        "a 50 m corridor should cut some of 40 random routes"
    );
}

/// The polyline of a route's segments in travel order.
fn route_line(n: &RoadNetwork, segments: &[RouteSegment]) -> Vec<[f64; 3]> {
    let mut line = Vec::new();
    for s in segments {
        let r = s.row as usize;
        let mut part = sub_line(n.geometry(r), frac(n, r, s.from_pos), frac(n, r, s.to_pos));
        if !s.along {
            part.reverse();
        }
        line.extend(part);
    }
    line
}

/// Length of `truth` also covered by `got` (per row, interval overlaps).
fn covered(n: &RoadNetwork, truth: &[RouteSegment], got: &[RouteSegment]) -> f64 {
    truth
        .iter()
        .map(|t| {
            let r = t.row as usize;
            let span = n.to_pos[r] - n.from_pos[r];
            got.iter()
                .filter(|s| s.row == t.row)
                .map(|s| {
                    let overlap = (t.to_pos.min(s.to_pos) - t.from_pos.max(s.from_pos)).max(0.0);
                    if span > 0.0 {
                        overlap / span * n.length_m[r]
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
                .min(t.length_m)
        })
        .sum()
}

#[test]
fn noisy_tracks_along_known_routes_match_back() {
    use rand::{Rng, SeedableRng};
    let g = tiny();
    let n = &g.network;
    let ks = tiny_keys();
    let f = RouteFilter::default();
    let rows: Vec<usize> = (0..n.len()).filter(|&r| usable(n, r, &f)).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let (mut total, mut hit, mut tracks) = (0.0, 0.0, 0);
    while tracks < 6 {
        let (a, b) = (
            rows[rng.random_range(0..rows.len())],
            rows[rng.random_range(0..rows.len())],
        );
        let mid = |r: usize| RoutePoint {
            row: r as u32,
            position: (n.from_pos[r] + n.to_pos[r]) / 2.0,
        };
        let q = RouteQuery {
            start: mid(a),
            end: mid(b),
            filter: f,
            corridor_m: None,
        };
        let Some(truth) = g.shortest_route(&q) else {
            continue;
        };
        if !(1500.0..=6000.0).contains(&truth.length_m) {
            continue;
        }
        // a point every 25 m along the route, each moved up to 15 m on each axis
        let line = route_line(n, &truth.segments);
        let length = length_2d(&line);
        let steps = (length / 25.0) as usize;
        let track: Vec<(f64, f64)> = (0..=steps)
            .map(|i| {
                let c = point_at(&line, i as f64 / steps as f64);
                (
                    c[0] + rng.random_range(-15.0..15.0),
                    c[1] + rng.random_range(-15.0..15.0),
                )
            })
            .collect();
        let m = match_track(g, &track, f, 50.0).expect("a track along a road matches");
        assert_joined(n, ks, (m.start, m.end), &m.segments, m.length_m);
        let c = covered(n, &truth.segments, &m.segments);
        eprintln!(
            "track of {} points, route {:.0} m: matched {:.0} m, {:.1} % of the route covered",
            track.len(),
            truth.length_m,
            m.length_m,
            100.0 * c / truth.length_m
        );
        total += truth.length_m;
        hit += c;
        tracks += 1;
    }
    assert!(hit >= 0.95 * total, "{hit:.0} of {total:.0} m matched back");
}
