//! Douglas–Peucker simplification, the one implementation behind `geometritoleranse`
//! (`api::object_json`, in meters) and the tiles' generalisation (`tiles::simplify`, in layer
//! units). Iterative, so a long line cannot overflow the stack.

/// Which of `points` Douglas–Peucker keeps with `tolerance` (the first and last always; `xy`
/// gives a point's plane coordinates). A point is kept when it lies farther than `tolerance`
/// from the segment between the kept points around it (squared distances are compared; of
/// points equally far, the first). A tolerance of zero or less keeps every point.
pub fn douglas_peucker<P>(
    points: &[P],
    xy: impl Fn(&P) -> (f64, f64),
    tolerance: f64,
) -> Vec<bool> {
    let n = points.len();
    if tolerance <= 0.0 {
        return vec![true; n];
    }
    let mut kept = vec![false; n];
    if n == 0 {
        return kept;
    }
    kept[0] = true;
    kept[n - 1] = true;
    let tol2 = tolerance * tolerance;
    let mut stack = vec![(0usize, n - 1)];
    while let Some((a, b)) = stack.pop() {
        if b <= a + 1 {
            continue;
        }
        let (pa, pb) = (xy(&points[a]), xy(&points[b]));
        let (dx, dy) = (pb.0 - pa.0, pb.1 - pa.1);
        let len2 = dx * dx + dy * dy;
        let mut worst = (0.0f64, a);
        for (i, p) in points.iter().enumerate().take(b).skip(a + 1) {
            let p = xy(p);
            let d2 = if len2 == 0.0 {
                (p.0 - pa.0).powi(2) + (p.1 - pa.1).powi(2)
            } else {
                let t = (((p.0 - pa.0) * dx + (p.1 - pa.1) * dy) / len2).clamp(0.0, 1.0);
                let (qx, qy) = (pa.0 + t * dx, pa.1 + t * dy);
                (p.0 - qx).powi(2) + (p.1 - qy).powi(2)
            };
            if d2 > worst.0 {
                worst = (d2, i);
            }
        }
        if worst.0 > tol2 {
            kept[worst.1] = true;
            stack.push((a, worst.1));
            stack.push((worst.1, b));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use geo::SimplifyIdx;
    use proptest::prelude::*;

    proptest! {
        /// The same points as the `geo` crate's Douglas–Peucker (random coordinates: no two
        /// points equally far, where the two may pick differently).
        #[test]
        fn keeps_what_the_geo_crate_keeps(pts in prop::collection::vec((0.0f64..1000.0, 0.0f64..1000.0), 2..60), tol in 0.1f64..200.0) {
            let ours: Vec<usize> = douglas_peucker(&pts, |p| *p, tol)
                .into_iter()
                .enumerate()
                .filter_map(|(i, k)| k.then_some(i))
                .collect();
            let line: geo::LineString<f64> = pts.clone().into();
            prop_assert_eq!(ours, line.simplify_idx(tol));
        }
    }

    #[test]
    fn no_tolerance_keeps_every_point() {
        let pts = [(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)];
        assert_eq!(douglas_peucker(&pts, |p| *p, 0.0), [true; 3]);
        assert_eq!(douglas_peucker(&pts, |p| *p, 0.5), [true, false, true]);
    }
}
