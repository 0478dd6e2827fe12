//! `polygon=` refuses a ring that crosses or touches itself (422/4011), and only such a ring.
//!
//! Oracle: a brute force over every pair of edges in integer arithmetic (the rings lie on a
//! small grid, so every orientation is exact): two edges that are not neighbours may share no
//! point, two neighbours may not double back along each other. Random rings on a 6 × 6 grid
//! (many collinear vertices, touches and crossings) and angle-sorted ones (mostly simple) are
//! parsed by `parse_polygon`, which must refuse exactly those the brute force faults and accept
//! the rest.

use proptest::prelude::*;
use vegdb::api::read::polygon::parse_polygon;
use vegdb::geo::srid::Srid;

type P = (i64, i64);

fn orient(a: P, b: P, c: P) -> i64 {
    ((b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)).signum()
}

fn on_segment(p: P, a: P, b: P) -> bool {
    orient(a, b, p) == 0
        && a.0.min(b.0) <= p.0
        && p.0 <= a.0.max(b.0)
        && a.1.min(b.1) <= p.1
        && p.1 <= a.1.max(b.1)
}

/// Do the closed segments ab and cd share a point?
fn meet(a: P, b: P, c: P, d: P) -> bool {
    let (o1, o2, o3, o4) = (
        orient(a, b, c),
        orient(a, b, d),
        orient(c, d, a),
        orient(c, d, b),
    );
    (o1 * o2 < 0 && o3 * o4 < 0)
        || on_segment(c, a, b)
        || on_segment(d, a, b)
        || on_segment(a, c, d)
        || on_segment(b, c, d)
}

/// The brute force: is the ring (repeated consecutive vertices and the closing one dropped)
/// not simple? None when it has fewer than three distinct vertices.
fn faulty(ring: &[P]) -> Option<bool> {
    let mut v = ring.to_vec();
    v.dedup();
    if v.len() > 1 && v.first() == v.last() {
        v.pop();
    }
    let n = v.len();
    if n < 3 {
        return None;
    }
    let edge = |i: usize| (v[i], v[(i + 1) % n]);
    for i in 0..n {
        for j in i + 1..n {
            let ((a, b), (c, d)) = (edge(i), edge(j));
            if j == i + 1 || (i == 0 && j == n - 1) {
                // neighbours (p, q), (q, r): a fault when they double back along each other
                let (p, q, r) = if j == i + 1 { (a, b, d) } else { (c, d, b) };
                let back = (q.0 - p.0) * (r.0 - q.0) + (q.1 - p.1) * (r.1 - q.1) < 0;
                if orient(p, q, r) == 0 && back {
                    return Some(true);
                }
            } else if meet(a, b, c, d) {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// The ring as a plain coordinate list in UTM 33 (10 m per grid step, exact in f64).
fn text(ring: &[P], closed: bool) -> String {
    let mut pts: Vec<String> = ring
        .iter()
        .map(|&(x, y)| format!("{} {}", 270_000 + 10 * x, 7_030_000 + 10 * y))
        .collect();
    if closed {
        pts.push(pts[0].clone());
    }
    format!("POLYGON(({}))", pts.join(", "))
}

fn random_ring() -> impl Strategy<Value = Vec<P>> {
    prop::collection::vec((0i64..6, 0i64..6), 3..10)
}

/// Points sorted by their angle around the grid's centre: mostly simple rings.
fn sorted_ring() -> impl Strategy<Value = Vec<P>> {
    prop::collection::vec((0i64..6, 0i64..6), 3..12).prop_map(|mut v| {
        let angle = |p: &P| ((2 * p.1 - 5) as f64).atan2((2 * p.0 - 5) as f64);
        v.sort_by(|a, b| angle(a).total_cmp(&angle(b)));
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn refused_exactly_when_the_brute_force_finds_a_fault(
        ring in prop_oneof![random_ring(), sorted_ring()],
        closed in any::<bool>(),
    ) {
        let Some(fault) = faulty(&ring) else {
            return Ok(());
        };
        let t = text(&ring, closed);
        match parse_polygon(&t, Srid::Utm33Etrs89) {
            Ok(_) => prop_assert!(!fault, "{t}: accepted, but it is not simple"),
            Err(e) => {
                prop_assert_eq!(e.code, 4011);
                prop_assert_eq!(e.status.as_u16(), 422);
                let crossing = e.message.contains("krysser eller berører seg selv");
                prop_assert!(fault && crossing, "{}: refused ({}); brute force fault: {}", t, e.message, fault);
            }
        }
    }
}

#[test]
fn a_star_at_the_vertex_limit_is_checked_quickly() {
    // 999 long spikes (1,998 vertices; the limit counts the closing one twice) around one point: every edge's box meets every other's, the sweep's
    // worst case
    let n = 1_998;
    let pts: Vec<String> = (0..n)
        .map(|i| {
            let a = i as f64 / n as f64 * std::f64::consts::TAU;
            let r = if i % 2 == 0 { 50_000.0 } else { 1.0 };
            format!("{} {}", 270_000.0 + r * a.cos(), 7_030_000.0 + r * a.sin())
        })
        .collect();
    let t = format!("POLYGON(({}))", pts.join(", "));
    let start = std::time::Instant::now();
    parse_polygon(&t, Srid::Utm33Etrs89).expect("a star is simple");
    let took = start.elapsed();
    eprintln!("star of {n} vertices checked in {took:?}");
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}

/// Two rectangles (x0, y0, x1, y1) on the grid, x0 < x1 and y0 < y1.
type Rect = (i64, i64, i64, i64);

fn rect() -> impl Strategy<Value = Rect> {
    (0i64..8, 1i64..5, 0i64..8, 1i64..5).prop_map(|(x, w, y, h)| (x, y, x + w, y + h))
}

fn rect_ring(r: Rect) -> String {
    let (x0, y0, x1, y1) = r;
    let p = |x: i64, y: i64| format!("{} {}", 270_000 + 10 * x, 7_030_000 + 10 * y);
    format!(
        "({}, {}, {}, {}, {})",
        p(x0, y0),
        p(x1, y0),
        p(x1, y1),
        p(x0, y1),
        p(x0, y0)
    )
}

/// min(ends) − max(starts) of two ranges: > 0 they overlap, 0 they touch, < 0 they are apart.
fn overlap(a0: i64, a1: i64, b0: i64, b1: i64) -> i64 {
    a1.min(b1) - a0.max(b0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Two rectangles as a MULTIPOLYGON are valid exactly when their interiors are apart and
    /// they share no stretch of boundary: apart along an axis, or touching at a corner only.
    #[test]
    fn two_parts_are_refused_exactly_when_they_overlap_or_share_an_edge(a in rect(), b in rect()) {
        let (ox, oy) = (overlap(a.0, a.2, b.0, b.2), overlap(a.1, a.3, b.1, b.3));
        let valid = ox < 0 || oy < 0 || (ox == 0 && oy == 0);
        let t = format!("MULTIPOLYGON(({}), ({}))", rect_ring(a), rect_ring(b));
        match parse_polygon(&t, Srid::Utm33Etrs89) {
            Ok(_) => prop_assert!(valid, "{t}: accepted, but the parts overlap or share an edge"),
            Err(e) => {
                prop_assert_eq!(e.code, 4011);
                prop_assert!(!valid, "{}: refused ({})", t, e.message);
            }
        }
    }

    /// A rectangle hole in a rectangle is valid exactly when it lies strictly inside (a hole
    /// touching the exterior along a side, or outside it, is refused).
    #[test]
    fn a_hole_is_refused_exactly_when_not_strictly_inside(e in rect(), h in rect()) {
        let valid = e.0 < h.0 && h.2 < e.2 && e.1 < h.1 && h.3 < e.3;
        let t = format!("POLYGON({}, {})", rect_ring(e), rect_ring(h));
        match parse_polygon(&t, Srid::Utm33Etrs89) {
            Ok(_) => prop_assert!(valid, "{t}: accepted, but the hole is not inside"),
            Err(e) => {
                prop_assert_eq!(e.code, 4011);
                prop_assert!(!valid, "{}: refused ({})", t, e.message);
            }
        }
    }
}

/// A hole touching its exterior at one point, and a part inside another part's hole, are valid.
#[test]
fn touching_at_a_point_and_a_part_in_a_hole_are_accepted() {
    let p = |x: i64, y: i64| format!("{} {}", 270_000 + 10 * x, 7_030_000 + 10 * y);
    // a triangle hole with one vertex on the exterior's side
    let touching = format!(
        "POLYGON(({}, {}, {}, {}, {}), ({}, {}, {}, {}))",
        p(0, 0),
        p(10, 0),
        p(10, 10),
        p(0, 10),
        p(0, 0),
        p(5, 0),
        p(7, 4),
        p(3, 4),
        p(5, 0)
    );
    parse_polygon(&touching, Srid::Utm33Etrs89).expect("a hole may touch at a point");
    let island = format!(
        "MULTIPOLYGON((({}), ({})), (({})))",
        &rect_ring((0, 0, 10, 10))[1..rect_ring((0, 0, 10, 10)).len() - 1],
        &rect_ring((2, 2, 8, 8))[1..rect_ring((2, 2, 8, 8)).len() - 1],
        &rect_ring((4, 4, 6, 6))[1..rect_ring((4, 4, 6, 6)).len() - 1]
    );
    parse_polygon(&island, Srid::Utm33Etrs89).expect("a part in another part's hole");
    let nested = format!(
        "POLYGON({}, {}, {})",
        rect_ring((0, 0, 10, 10)),
        rect_ring((2, 2, 8, 8)),
        rect_ring((4, 4, 6, 6))
    );
    assert!(
        parse_polygon(&nested, Srid::Utm33Etrs89).is_err(),
        "a hole in a hole"
    );
}
