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

use geo::line_intersection::{line_intersection, LineIntersection};
use geo::{Coord, Line};

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
