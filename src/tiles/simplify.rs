//! Generalisation in layer units: Douglas–Peucker with a tolerance in layer units
//! (`geo::simplify`, the one the API's `geometritoleranse` uses too), then rounding to the integer grid of the layer and
//! dropping repeated points. What collapses below a segment (a line) or below three corners and
//! zero area (a ring) is gone.

use super::clip::Pt;

/// Which points Douglas–Peucker keeps (first and last always): `geo::simplify`'s.
fn keep(points: &[Pt], tolerance: f64) -> Vec<bool> {
    crate::geo::simplify::douglas_peucker(points, |p| *p, tolerance)
}

fn round(p: Pt) -> (i32, i32) {
    (p.0.round() as i32, p.1.round() as i32)
}

/// A line simplified and put on the integer grid; None when it collapses to one point.
pub fn line(points: &[Pt], tolerance: f64) -> Option<Vec<(i32, i32)>> {
    let kept = keep(points, tolerance);
    let mut out: Vec<(i32, i32)> = Vec::with_capacity(points.len());
    for (p, k) in points.iter().zip(kept) {
        let q = round(*p);
        if k && out.last() != Some(&q) {
            out.push(q);
        }
    }
    (out.len() >= 2).then_some(out)
}

/// Twice the signed area of an integer ring (positive: clockwise on screen, y down — the MVT
/// exterior orientation).
pub fn ring_area2(ring: &[(i32, i32)]) -> i64 {
    let n = ring.len();
    (0..n)
        .map(|i| {
            let (a, b) = (ring[i], ring[(i + 1) % n]);
            a.0 as i64 * b.1 as i64 - b.0 as i64 * a.1 as i64
        })
        .sum()
}

/// A closed ring (first point not repeated) simplified and put on the integer grid; None when
/// fewer than three corners or no area are left.
pub fn ring(points: &[Pt], tolerance: f64) -> Option<Vec<(i32, i32)>> {
    if points.len() < 3 {
        return None;
    }
    // simplify as a line closed on its first point
    let mut closed = points.to_vec();
    closed.push(points[0]);
    let kept = keep(&closed, tolerance);
    let mut out: Vec<(i32, i32)> = Vec::with_capacity(points.len());
    for (p, k) in closed.iter().zip(kept) {
        let q = round(*p);
        if k && out.last() != Some(&q) {
            out.push(q);
        }
    }
    while out.len() > 1 && out.first() == out.last() {
        out.pop();
    }
    (out.len() >= 3 && ring_area2(&out) != 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn straight_points_go_corners_stay() {
        let pts = [(0.0, 0.0), (5.0, 0.1), (10.0, 0.0), (10.0, 10.0)];
        assert_eq!(line(&pts, 1.0).unwrap(), vec![(0, 0), (10, 0), (10, 10)]);
        assert_eq!(line(&[(0.1, 0.1), (0.3, 0.2)], 1.0), None);
        let sq = [(0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0)];
        assert_eq!(ring(&sq, 1.0).unwrap().len(), 4);
        assert_eq!(ring(&[(0.0, 0.0), (0.2, 0.0), (0.2, 0.2)], 1.0), None);
    }

    proptest! {
        /// Every point of the input lies within the tolerance (plus rounding) of the
        /// simplified line, and the ends are kept.
        #[test]
        fn simplified_stays_within_tolerance(pts in prop::collection::vec((0.0f64..4096.0, 0.0f64..4096.0), 2..40), tol in 0.5f64..16.0) {
            if let Some(s) = line(&pts, tol) {
                prop_assert_eq!(s[0], round(pts[0]));
                prop_assert_eq!(*s.last().unwrap(), round(*pts.last().unwrap()));
                for p in &pts {
                    let d = s.windows(2).map(|w| {
                        let (a, b) = ((w[0].0 as f64, w[0].1 as f64), (w[1].0 as f64, w[1].1 as f64));
                        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
                        let l2 = dx * dx + dy * dy;
                        let t = if l2 == 0.0 { 0.0 } else { (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / l2).clamp(0.0, 1.0) };
                        ((p.0 - a.0 - t * dx).powi(2) + (p.1 - a.1 - t * dy).powi(2)).sqrt()
                    }).fold(f64::INFINITY, f64::min);
                    prop_assert!(d <= tol + 1.5, "{} > {}", d, tol);
                }
            }
        }
    }
}
