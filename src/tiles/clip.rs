//! Clipping in layer units against an axis-aligned rectangle (the tile plus its buffer): lines
//! by Liang–Barsky per segment (a line leaving and re-entering gives several parts), polygon
//! rings by Sutherland–Hodgman (one ring per ring; edges along the rectangle where it cut).

pub type Pt = (f64, f64);

/// `[min x, min y, max x, max y]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub min_x: f64,
    pub min_y: f64,
    pub max_x: f64,
    pub max_y: f64,
}

impl Rect {
    pub fn contains(&self, p: Pt) -> bool {
        p.0 >= self.min_x && p.0 <= self.max_x && p.1 >= self.min_y && p.1 <= self.max_y
    }
}

/// The part of segment a–b inside `r` as parameters (t0, t1) along it, if any.
fn clip_segment(a: Pt, b: Pt, r: &Rect) -> Option<(f64, f64)> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let mut t0 = 0.0f64;
    let mut t1 = 1.0f64;
    for (p, q) in [
        (-dx, a.0 - r.min_x),
        (dx, r.max_x - a.0),
        (-dy, a.1 - r.min_y),
        (dy, r.max_y - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1).then_some((t0, t1))
}

fn lerp(a: Pt, b: Pt, t: f64) -> Pt {
    (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t)
}

/// The parts of a polyline inside `r` (each with at least two points; a single point inside
/// gives nothing).
pub fn clip_line(line: &[Pt], r: &Rect) -> Vec<Vec<Pt>> {
    let mut parts: Vec<Vec<Pt>> = Vec::new();
    let mut current: Vec<Pt> = Vec::new();
    for w in line.windows(2) {
        let (a, b) = (w[0], w[1]);
        match clip_segment(a, b, r) {
            None => {
                if current.len() >= 2 {
                    parts.push(std::mem::take(&mut current));
                }
                current.clear();
            }
            Some((t0, t1)) => {
                let p0 = if t0 > 0.0 { lerp(a, b, t0) } else { a };
                let p1 = if t1 < 1.0 { lerp(a, b, t1) } else { b };
                if current.is_empty() {
                    current.push(p0);
                } else if t0 > 0.0 {
                    // re-entered: a new part
                    if current.len() >= 2 {
                        parts.push(std::mem::take(&mut current));
                    }
                    current.clear();
                    current.push(p0);
                }
                current.push(p1);
                if t1 < 1.0 {
                    if current.len() >= 2 {
                        parts.push(std::mem::take(&mut current));
                    }
                    current.clear();
                }
            }
        }
    }
    if current.len() >= 2 {
        parts.push(current);
    }
    parts
}

/// Whether any part of the polyline (or the single point) lies inside `r`.
pub fn line_touches(line: &[Pt], r: &Rect) -> bool {
    match line {
        [] => false,
        [p] => r.contains(*p),
        _ => line
            .windows(2)
            .any(|w| clip_segment(w[0], w[1], r).is_some()),
    }
}

/// A closed ring (first point not repeated at the end) clipped to `r`; empty when nothing is
/// left.
pub fn clip_ring(ring: &[Pt], r: &Rect) -> Vec<Pt> {
    let mut out: Vec<Pt> = ring.to_vec();
    // (inside test, intersection) per edge
    for edge in 0..4 {
        if out.is_empty() {
            break;
        }
        let inside = |p: Pt| match edge {
            0 => p.0 >= r.min_x,
            1 => p.0 <= r.max_x,
            2 => p.1 >= r.min_y,
            _ => p.1 <= r.max_y,
        };
        let cross = |a: Pt, b: Pt| -> Pt {
            let t = match edge {
                0 => (r.min_x - a.0) / (b.0 - a.0),
                1 => (r.max_x - a.0) / (b.0 - a.0),
                2 => (r.min_y - a.1) / (b.1 - a.1),
                _ => (r.max_y - a.1) / (b.1 - a.1),
            };
            lerp(a, b, t)
        };
        let input = std::mem::take(&mut out);
        let n = input.len();
        for i in 0..n {
            let cur = input[i];
            let prev = input[(i + n - 1) % n];
            match (inside(prev), inside(cur)) {
                (true, true) => out.push(cur),
                (true, false) => out.push(cross(prev, cur)),
                (false, true) => {
                    out.push(cross(prev, cur));
                    out.push(cur);
                }
                (false, false) => {}
            }
        }
    }
    if out.len() < 3 {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const R: Rect = Rect {
        min_x: 0.0,
        min_y: 0.0,
        max_x: 10.0,
        max_y: 10.0,
    };

    #[test]
    fn line_leaving_and_reentering_gives_two_parts() {
        let line = [(1.0, 1.0), (15.0, 1.0), (15.0, 5.0), (5.0, 5.0)];
        let parts = clip_line(&line, &R);
        assert_eq!(
            parts,
            vec![vec![(1.0, 1.0), (10.0, 1.0)], vec![(10.0, 5.0), (5.0, 5.0)]]
        );
        assert!(clip_line(&[(11.0, 0.0), (20.0, 20.0)], &R).is_empty());
        assert!(line_touches(&[(-5.0, 5.0), (15.0, 5.0)], &R));
        assert!(!line_touches(&[(-5.0, -5.0), (-1.0, 15.0)], &R));
    }

    #[test]
    fn square_ring_clipped_to_corner() {
        let ring = [(5.0, 5.0), (15.0, 5.0), (15.0, 15.0), (5.0, 15.0)];
        let c = clip_ring(&ring, &R);
        let area: f64 = (0..c.len())
            .map(|i| {
                let (a, b) = (c[i], c[(i + 1) % c.len()]);
                a.0 * b.1 - b.0 * a.1
            })
            .sum::<f64>()
            / 2.0;
        assert!((area - 25.0).abs() < 1e-9, "{c:?}");
    }

    proptest! {
        /// Every clipped point lies in the rectangle, and every clipped part lies on the
        /// original line (each point is on one of its segments).
        #[test]
        fn clipped_parts_are_inside_and_on_the_line(pts in prop::collection::vec((-20.0f64..30.0, -20.0f64..30.0), 2..12)) {
            for part in clip_line(&pts, &R) {
                prop_assert!(part.len() >= 2);
                for &p in &part {
                    prop_assert!(p.0 >= -1e-9 && p.0 <= 10.0 + 1e-9 && p.1 >= -1e-9 && p.1 <= 10.0 + 1e-9, "{:?}", p);
                    let on = pts.windows(2).any(|w| {
                        let (a, b) = (w[0], w[1]);
                        let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
                        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
                        let within = p.0 >= a.0.min(b.0) - 1e-6 && p.0 <= a.0.max(b.0) + 1e-6
                            && p.1 >= a.1.min(b.1) - 1e-6 && p.1 <= a.1.max(b.1) + 1e-6;
                        within && cross.abs() <= 1e-6 * len.max(1.0)
                    });
                    prop_assert!(on, "{:?} not on {:?}", p, pts);
                }
            }
            // a line with a point inside the rectangle always yields something
            if pts.iter().any(|&p| R.contains(p)) {
                prop_assert!(line_touches(&pts, &R));
            }
        }
    }
}
