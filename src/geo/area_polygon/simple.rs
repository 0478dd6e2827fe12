//! Is a ring simple? A polygon's ring may neither cross nor touch itself (OGC Simple Features):
//! with repeated consecutive vertices and the closing vertex dropped, two edges that are not
//! neighbours share no point, and two neighbours share only their common vertex (not a
//! stretch: a spike that doubles back is a touch).
//!
//! A sweep over x: the edges sorted by their smallest x, each compared with the later ones
//! whose x range starts before its own ends (and whose y range meets its own), the pair decided
//! by `geo`'s exact line intersection. It stops at the first fault. Its cost is the number of
//! pairs whose boxes meet: about n log n for ordinary rings, n² / 2 at worst (every edge's box
//! meeting every other's, as in a star of long spikes), which the callers' vertex limits bound.

use geo::coordinate_position::{CoordPos, CoordinatePosition};
use geo::line_intersection::{line_intersection, LineIntersection};
use geo::{Coord, Line, LineString, MultiPolygon, Polygon};

/// Where a ring is not simple: the edges that meet (indices along the ring without repeated
/// vertices, the lower first) and a point they share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelfTouch {
    pub edges: (usize, usize),
    pub at: Coord<f64>,
}

/// The first fault of `ring` found by the sweep, None when it is simple. A ring of fewer than
/// three distinct vertices is no ring; it is the caller's to refuse, and None here.
pub fn self_touch(ring: &[Coord<f64>]) -> Option<SelfTouch> {
    let mut v = ring.to_vec();
    v.dedup();
    if v.len() > 1 && v.first() == v.last() {
        v.pop();
    }
    let n = v.len();
    if n < 3 {
        return None;
    }
    let edges: Vec<Line<f64>> = (0..n).map(|i| Line::new(v[i], v[(i + 1) % n])).collect();
    let range = |l: &Line<f64>| {
        [
            l.start.x.min(l.end.x),
            l.start.x.max(l.end.x),
            l.start.y.min(l.end.y),
            l.start.y.max(l.end.y),
        ]
    };
    let boxes: Vec<[f64; 4]> = edges.iter().map(range).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| boxes[a][0].total_cmp(&boxes[b][0]));
    for (k, &i) in order.iter().enumerate() {
        let bi = boxes[i];
        for &j in &order[k + 1..] {
            let bj = boxes[j];
            if bj[0] > bi[1] {
                break;
            }
            if bj[2] > bi[3] || bj[3] < bi[2] {
                continue;
            }
            let (lo, hi) = (i.min(j), i.max(j));
            let neighbours = hi == lo + 1 || (lo == 0 && hi == n - 1);
            let at = match line_intersection(edges[lo], edges[hi]) {
                None => continue,
                Some(LineIntersection::SinglePoint { .. }) if neighbours => continue,
                Some(LineIntersection::SinglePoint { intersection, .. }) => intersection,
                Some(LineIntersection::Collinear { intersection }) => intersection.end,
            };
            return Some(SelfTouch {
                edges: (lo, hi),
                at,
            });
        }
    }
    None
}

/// Where two rings of a polygon (or of a multipolygon's parts) meet in more than single points:
/// the rings (indices into the list given, the lower first) and a point they share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingsMeet {
    pub rings: (usize, usize),
    pub at: Coord<f64>,
}

/// The first place where two of `rings` cross (their edges cross properly) or share a stretch
/// of boundary (collinear edges overlapping), None when any two meet at single points at most
/// (OGC Simple Features: a hole may touch its exterior, and two parts of a multipolygon each
/// other, at points only). The same sweep as [`self_touch`] over the edges of every ring,
/// comparing only edges of different rings.
pub fn rings_meet(rings: &[&[Coord<f64>]]) -> Option<RingsMeet> {
    let mut edges: Vec<(usize, Line<f64>, [f64; 4])> = Vec::new();
    for (r, ring) in rings.iter().enumerate() {
        for w in ring.windows(2).filter(|w| w[0] != w[1]) {
            let l = Line::new(w[0], w[1]);
            let b = [
                l.start.x.min(l.end.x),
                l.start.x.max(l.end.x),
                l.start.y.min(l.end.y),
                l.start.y.max(l.end.y),
            ];
            edges.push((r, l, b));
        }
    }
    edges.sort_by(|a, b| a.2[0].total_cmp(&b.2[0]));
    for (k, &(ri, li, bi)) in edges.iter().enumerate() {
        for &(rj, lj, bj) in &edges[k + 1..] {
            if bj[0] > bi[1] {
                break;
            }
            if ri == rj || bj[2] > bi[3] || bj[3] < bi[2] {
                continue;
            }
            let at = match line_intersection(li, lj) {
                Some(LineIntersection::SinglePoint {
                    intersection,
                    is_proper: true,
                }) => intersection,
                Some(LineIntersection::Collinear { intersection })
                    if intersection.start != intersection.end =>
                {
                    intersection.start
                }
                _ => continue,
            };
            return Some(RingsMeet {
                rings: (ri.min(rj), ri.max(rj)),
                at,
            });
        }
    }
    None
}

/// Why a polygon whose every ring is simple is still not valid (OGC Simple Features).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Two rings cross or share a stretch: (part, ring) of each (ring 0 the exterior).
    RingsMeet {
        a: (usize, usize),
        b: (usize, usize),
        at: Coord<f64>,
    },
    /// A hole (ring ≥ 1) lies outside its part's exterior.
    HoleOutside { part: usize, hole: usize },
    /// A hole lies inside another hole of the same part.
    HolesNested { part: usize },
    /// One part's interior overlaps another's (one lies inside the other).
    PartsOverlap { parts: (usize, usize) },
}

/// A vertex of `ring` not on `of`'s boundary, and where it lies against `of` (None: every
/// vertex is on the boundary).
fn position_off_boundary(ring: &LineString<f64>, of: &Polygon<f64>) -> Option<CoordPos> {
    ring.0
        .iter()
        .map(|c| of.coordinate_position(c))
        .find(|&p| p != CoordPos::OnBoundary)
}

/// The first fault of `shape` whose rings are each simple ([`self_touch`]): rings crossing or
/// sharing a stretch ([`rings_meet`]); then, since no two rings cross, a ring lies wholly on
/// one side of another, so one vertex off the other's boundary tells a hole outside its
/// exterior, a hole inside another, or a part inside another part (not in its hole).
pub fn polygon_fault(shape: &MultiPolygon<f64>) -> Option<Fault> {
    let mut ids = Vec::new();
    let mut rings: Vec<&[Coord<f64>]> = Vec::new();
    for (p, poly) in shape.0.iter().enumerate() {
        for (r, ring) in std::iter::once(poly.exterior())
            .chain(poly.interiors())
            .enumerate()
        {
            ids.push((p, r));
            rings.push(&ring.0);
        }
    }
    if let Some(m) = rings_meet(&rings) {
        return Some(Fault::RingsMeet {
            a: ids[m.rings.0],
            b: ids[m.rings.1],
            at: m.at,
        });
    }
    for (p, poly) in shape.0.iter().enumerate() {
        let outer = Polygon::new(poly.exterior().clone(), vec![]);
        for (h, hole) in poly.interiors().iter().enumerate() {
            if position_off_boundary(hole, &outer) == Some(CoordPos::Outside) {
                return Some(Fault::HoleOutside {
                    part: p,
                    hole: h + 1,
                });
            }
            for (k, other) in poly.interiors().iter().enumerate() {
                let inside = Polygon::new(other.clone(), vec![]);
                if k != h && position_off_boundary(hole, &inside) == Some(CoordPos::Inside) {
                    return Some(Fault::HolesNested { part: p });
                }
            }
        }
        for (q, other) in shape.0.iter().enumerate() {
            if q != p && position_off_boundary(poly.exterior(), other) == Some(CoordPos::Inside) {
                return Some(Fault::PartsOverlap {
                    parts: (p.min(q), p.max(q)),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(pts: &[(f64, f64)]) -> Vec<Coord<f64>> {
        pts.iter().map(|&(x, y)| Coord { x, y }).collect()
    }

    #[test]
    fn simple_rings_pass_and_crossings_touches_and_spikes_do_not() {
        let square = ring(&[(0., 0.), (4., 0.), (4., 4.), (0., 4.), (0., 0.)]);
        assert_eq!(self_touch(&square), None);
        // repeated vertices and a straight vertex are no fault
        let repeated = ring(&[(0., 0.), (2., 0.), (2., 0.), (4., 0.), (4., 4.), (0., 4.)]);
        assert_eq!(self_touch(&repeated), None);
        let bowtie = ring(&[(0., 0.), (4., 4.), (4., 0.), (0., 4.), (0., 0.)]);
        let t = self_touch(&bowtie).expect("bowtie crosses");
        assert_eq!(t.at, Coord { x: 2., y: 2. });
        // a vertex on another edge
        let touch = ring(&[(0., 0.), (4., 0.), (4., 4.), (2., 0.), (0., 4.)]);
        assert!(self_touch(&touch).is_some());
        // a spike doubling back along its own edge
        let spike = ring(&[(0., 0.), (4., 0.), (6., 0.), (5., 0.), (4., 4.)]);
        assert!(self_touch(&spike).is_some());
        // a figure eight through one vertex twice
        let eight = ring(&[(0., 0.), (2., 2.), (4., 0.), (4., 4.), (2., 2.), (0., 4.)]);
        assert!(self_touch(&eight).is_some());
    }
}
