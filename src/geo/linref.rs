//! Linear referencing along a polyline by 2D length: a relative position `0..=1` on a link maps
//! to a point and back. Heights are interpolated but do not count towards length.

use super::Coord3;

/// 2D length of a polyline in meters.
pub fn length_2d(coords: &[Coord3]) -> f64 {
    coords
        .windows(2)
        .map(|w| ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt())
        .sum()
}

/// The point at `fraction` (clamped to 0..=1) of the 2D length.
pub fn point_at(coords: &[Coord3], fraction: f64) -> Coord3 {
    match coords.len() {
        0 => return [f64::NAN; 3],
        1 => return coords[0],
        _ => {}
    }
    let total = length_2d(coords);
    let target = fraction.clamp(0.0, 1.0) * total;
    let mut walked = 0.0;
    for w in coords.windows(2) {
        let seg = ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt();
        if walked + seg >= target && seg > 0.0 {
            let t = (target - walked) / seg;
            return [
                w[0][0] + t * (w[1][0] - w[0][0]),
                w[0][1] + t * (w[1][1] - w[0][1]),
                w[0][2] + t * (w[1][2] - w[0][2]),
            ];
        }
        walked += seg;
    }
    coords[coords.len() - 1]
}

/// The part of the polyline between two fractions (from < to), endpoints interpolated: the
/// points [`point_at`] gives at `from` and `to` with the vertices strictly between them, found
/// in one walk (the same sums in the same order as `point_at`'s, so the same points).
pub fn sub_line(coords: &[Coord3], from: f64, to: f64) -> Vec<Coord3> {
    let (from, to) = (from.clamp(0.0, 1.0), to.clamp(0.0, 1.0));
    if coords.len() < 2 || to <= from {
        return vec![point_at(coords, from)];
    }
    let total = length_2d(coords);
    let (a, b) = (from * total, to * total);
    let at = |w: &[Coord3], t: f64| {
        [
            w[0][0] + t * (w[1][0] - w[0][0]),
            w[0][1] + t * (w[1][1] - w[0][1]),
            w[0][2] + t * (w[1][2] - w[0][2]),
        ]
    };
    let mut out = Vec::with_capacity(coords.len().min(16));
    let mut walked = 0.0;
    for w in coords.windows(2) {
        let seg = ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt();
        let next = walked + seg;
        if out.is_empty() && next >= a && seg > 0.0 {
            out.push(at(w, (a - walked) / seg));
        }
        if next >= b && seg > 0.0 {
            // the end lies on this edge: no vertex from here on is before it
            out.push(at(w, (b - walked) / seg));
            return out;
        }
        if next > a && next < b {
            out.push(w[1]);
        }
        walked = next;
    }
    // a position past the summed length (rounding): the last vertex, as `point_at` gives it
    let last = coords[coords.len() - 1];
    if out.is_empty() {
        out.push(last);
    }
    out.push(last);
    out
}

/// Closest point on the polyline to (x, y): returns (fraction along the 2D length, distance).
pub fn project(coords: &[Coord3], x: f64, y: f64) -> (f64, f64) {
    let total = length_2d(coords);
    let mut best = (0.0, f64::INFINITY);
    let mut walked = 0.0;
    for w in coords.windows(2) {
        let (dx, dy) = (w[1][0] - w[0][0], w[1][1] - w[0][1]);
        let seg2 = dx * dx + dy * dy;
        let t = if seg2 > 0.0 {
            (((x - w[0][0]) * dx + (y - w[0][1]) * dy) / seg2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let (px, py) = (w[0][0] + t * dx, w[0][1] + t * dy);
        let d = ((x - px).powi(2) + (y - py).powi(2)).sqrt();
        let seg = seg2.sqrt();
        if d < best.1 {
            let f = if total > 0.0 {
                (walked + t * seg) / total
            } else {
                0.0
            };
            best = (f, d);
        }
        walked += seg;
    }
    if coords.len() == 1 {
        let d = ((x - coords[0][0]).powi(2) + (y - coords[0][1]).powi(2)).sqrt();
        best = (0.0, d);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn point_at_walks_the_2d_length() {
        let line = [[0.0, 0.0, 0.0], [3.0, 4.0, 10.0], [3.0, 14.0, 10.0]];
        assert_eq!(length_2d(&line), 15.0);
        let p = point_at(&line, 1.0 / 3.0);
        assert!((p[0] - 3.0).abs() < 1e-12 && (p[1] - 4.0).abs() < 1e-12);
        assert_eq!(point_at(&line, 1.0), [3.0, 14.0, 10.0]);
    }

    /// The part between two fractions as it was made before the one walk: both ends by
    /// `point_at`, the vertices between by a walk of their own.
    fn sub_line_by_parts(coords: &[Coord3], from: f64, to: f64) -> Vec<Coord3> {
        let (from, to) = (from.clamp(0.0, 1.0), to.clamp(0.0, 1.0));
        if coords.len() < 2 || to <= from {
            return vec![point_at(coords, from)];
        }
        let total = length_2d(coords);
        let (a, b) = (from * total, to * total);
        let mut out = vec![point_at(coords, from)];
        let mut walked = 0.0;
        for w in coords.windows(2) {
            walked += ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt();
            if walked > a && walked < b {
                out.push(w[1]);
            }
        }
        out.push(point_at(coords, to));
        out
    }

    proptest! {
        /// The one walk gives, bit for bit, the points of the ends and the walk between,
        /// on lines with repeated vertices and ends at, before and past their vertices.
        #[test]
        fn sub_line_is_its_parts(
            pts in prop::collection::vec((-50i32..50, -50i32..50, 0i32..4), 1..12),
            ends in (-0.2f64..1.2, -0.2f64..1.2),
            snap in 0usize..3,
        ) {
            let coords: Vec<Coord3> = pts
                .iter()
                .map(|&(x, y, z)| [f64::from(x) * 7.5, f64::from(y) * 3.25, f64::from(z)])
                .collect();
            let total = length_2d(&coords);
            // fractions at a vertex exactly, as link positions often are
            let at_vertex = |k: usize| {
                let upto: f64 = length_2d(&coords[..=k.min(coords.len() - 1)]);
                if total > 0.0 { upto / total } else { 0.0 }
            };
            let (mut from, mut to) = ends;
            if snap == 1 {
                from = at_vertex(1);
            } else if snap == 2 {
                to = at_vertex(coords.len() / 2);
            }
            let got = sub_line(&coords, from, to);
            let want = sub_line_by_parts(&coords, from, to);
            prop_assert_eq!(
                got.iter().map(|c| c.map(f64::to_bits)).collect::<Vec<_>>(),
                want.iter().map(|c| c.map(f64::to_bits)).collect::<Vec<_>>()
            );
        }

        /// point_at and project are inverses within 1 mm on a 2 km polyline.
        #[test]
        fn project_inverts_point_at(f in 0.0f64..=1.0, bend in -500.0f64..500.0) {
            let line = [[0.0, 0.0, 0.0], [800.0, bend, 5.0], [1500.0, 200.0, 9.0], [2000.0, -100.0, 1.0]];
            let p = point_at(&line, f);
            let (f2, d) = project(&line, p[0], p[1]);
            prop_assert!(d < 1e-6);
            prop_assert!(((f - f2) * length_2d(&line)).abs() < 1e-3, "{} vs {}", f, f2);
        }
    }
}
