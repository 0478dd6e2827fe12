//! A polygon filter (`polygon=`): a (multi)polygon in its own coordinate system, with a storage
//! envelope for the candidate search and the exact tests the filter makes.
//!
//! As for a map extent ([`super::map_extent`]), the polygon is exact in its own system: a
//! geometry is in when, with its vertices transformed into that system and straight edges
//! between them, it intersects the polygon (touching the boundary counts; a hole is outside).
//! Cutting a line to the polygon finds, along each of its edges, the stretches inside; a
//! position along a storage edge is taken at the same fraction of the transformed edge.

use geo::{Coord, Intersects, Line, LineString, MultiPolygon, Point, Polygon};
use rstar::primitives::{GeomWithData, Line as RLine};
use rstar::{RTree, AABB};

use super::map_extent::MapExtent;
use super::srid::{from_storage, Srid};
use super::Coord3;
use crate::error::Result;

mod grid;
mod simple;
use grid::{Cell, CellGrid};
pub use simple::{polygon_fault, rings_meet, self_touch, Fault, RingsMeet, SelfTouch};

/// A polygon filter in `srid` with its storage envelope (None when nothing in storage can lie in
/// it).
#[derive(Debug, Clone)]
pub struct AreaPolygon {
    srid: Srid,
    shape: MultiPolygon<f64>,
    envelope: Option<[f64; 4]>,
    /// The edges of every ring, by their boxes: the crossings of a line and the ray of a point
    /// meet only the few edges near them.
    edges: RTree<Edge>,
    /// Cells of the polygon's rectangle wholly inside or outside it (None while it is made).
    grid: Option<CellGrid>,
    /// The edges by the grid's rows of cells their boxes cover (each with its polygon), and
    /// where each row's start (`CellGrid::ROWS + 1`): the ray of a point in the grid meets
    /// only edges of its row.
    bands: Vec<BandEdge>,
    band_starts: Vec<u32>,
}

/// An edge of a ring and the index of its polygon in the multipolygon.
type Edge = GeomWithData<RLine<[f64; 2]>, usize>;

/// An edge in a row of cells: its polygon's index and its two ends.
type BandEdge = (usize, [f64; 2], [f64; 2]);

impl PartialEq for AreaPolygon {
    fn eq(&self, other: &Self) -> bool {
        self.srid == other.srid && self.shape == other.shape
    }
}

fn coord(p: [f64; 2]) -> Coord<f64> {
    Coord { x: p[0], y: p[1] }
}

/// The bounding rectangle of a multipolygon, None when it has no vertex.
pub fn bounds(shape: &MultiPolygon<f64>) -> Option<[f64; 4]> {
    let mut b = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    for p in &shape.0 {
        for c in p.exterior().coords() {
            b = [b[0].min(c.x), b[1].min(c.y), b[2].max(c.x), b[3].max(c.y)];
        }
    }
    (b[0] <= b[2] && b[1] <= b[3]).then_some(b)
}

impl AreaPolygon {
    /// The polygon `shape` in `srid`. Errs when its bounding rectangle cannot be transformed
    /// into storage coordinates.
    pub fn new(srid: Srid, shape: MultiPolygon<f64>) -> Result<AreaPolygon> {
        let envelope = match bounds(&shape) {
            Some(b) => MapExtent::new(srid, b)?.storage_envelope(),
            None => None,
        };
        let edges = RTree::bulk_load(
            shape
                .0
                .iter()
                .enumerate()
                .flat_map(|(i, p)| {
                    std::iter::once(p.exterior())
                        .chain(p.interiors())
                        .flat_map(move |r| r.lines().map(move |l| (i, l)))
                })
                .map(|(i, l)| {
                    GeomWithData::new(RLine::new([l.start.x, l.start.y], [l.end.x, l.end.y]), i)
                })
                .collect(),
        );
        let mut a = AreaPolygon {
            srid,
            shape,
            envelope,
            edges,
            grid: None,
            bands: Vec::new(),
            band_starts: Vec::new(),
        };
        if let Some(b) = a.envelope_own() {
            let grid = CellGrid::build(
                b,
                a.edges.iter().map(|e| (e.geom().from, e.geom().to)),
                |y| a.crossings(y, b),
            );
            let mut rows: Vec<Vec<BandEdge>> = vec![Vec::new(); CellGrid::ROWS];
            for e in a.edges.iter() {
                let (p, q) = (e.geom().from, e.geom().to);
                for row in &mut rows[grid.row_of(p[1].min(q[1]))..=grid.row_of(p[1].max(q[1]))] {
                    row.push((e.data, p, q));
                }
            }
            a.band_starts.push(0);
            for row in rows {
                a.bands.extend(row);
                a.band_starts.push(a.bands.len() as u32);
            }
            a.grid = Some(grid);
        }
        Ok(a)
    }

    /// The system the polygon is in.
    pub fn srid(&self) -> Srid {
        self.srid
    }

    /// The polygon in its own system.
    pub fn shape(&self) -> &MultiPolygon<f64> {
        &self.shape
    }

    /// A storage envelope holding every storage point that can lie in the polygon.
    pub fn storage_envelope(&self) -> Option<[f64; 4]> {
        self.envelope
    }

    /// Could these storage points' geometry reach the polygon (its box meets the envelope)?
    fn may_meet(&self, coords: &[Coord3]) -> bool {
        let Some(o) = self.envelope else {
            return false;
        };
        let b = coords.iter().fold(
            [
                f64::INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
            ],
            |b, c| {
                [
                    b[0].min(c[0]),
                    b[1].min(c[1]),
                    b[2].max(c[0]),
                    b[3].max(c[1]),
                ]
            },
        );
        b[0] <= o[2] && b[2] >= o[0] && b[1] <= o[3] && b[3] >= o[1]
    }

    /// Storage points in the polygon's system; None when one cannot be transformed.
    fn transformed(&self, coords: &[Coord3]) -> Option<Vec<Coord<f64>>> {
        coords
            .iter()
            .map(|c| {
                from_storage(self.srid, c[0], c[1])
                    .ok()
                    .map(|(x, y)| Coord { x, y })
            })
            .collect()
    }

    /// What a storage rectangle's cells say of every geometry inside it, when the polygon is
    /// in the storage system (a transformed rectangle is no rectangle): Some(true) when all of
    /// it is inside the polygon, Some(false) when none is, None when the exact test decides.
    pub fn storage_box(&self, b: [f64; 4]) -> Option<bool> {
        if !self.srid.is_native() {
            return None;
        }
        match self.grid.as_ref()?.of_box(b) {
            Cell::Inside => Some(true),
            Cell::Outside => Some(false),
            Cell::Edge => None,
        }
    }

    /// Does a point or a line (storage coordinates: one vertex is a point) intersect the
    /// polygon?
    pub fn meets_line(&self, line: &[Coord3]) -> bool {
        self.meets_lines(&[line])
    }

    /// Does a vertex of this line (storage coordinates) lie in a cell wholly inside the
    /// polygon (so the line meets it)? False when none does, or the polygon is in another
    /// system: the first test of [`Self::meets_lines`], cheap enough to make as each part of
    /// a geometry is found.
    pub fn vertex_inside(&self, line: &[Coord3]) -> bool {
        match &self.grid {
            Some(grid) if self.srid.is_native() => line
                .iter()
                .any(|c| grid.of_point(Coord { x: c[0], y: c[1] }) == Cell::Inside),
            _ => false,
        }
    }

    /// Does any of these points or lines (storage coordinates) intersect the polygon? Every
    /// vertex is tested before any edge: a vertex in a cell wholly inside, then one in a cell
    /// an edge of the polygon meets, then an edge of a line crossing the boundary.
    pub fn meets_lines(&self, lines: &[impl AsRef<[Coord3]>]) -> bool {
        let near = lines
            .iter()
            .map(AsRef::as_ref)
            .filter(|l| !l.is_empty() && self.may_meet(l));
        if self.srid.is_native() {
            let near: Vec<&[Coord3]> = near.collect();
            return self.meets_own(&near, |c| Coord { x: c[0], y: c[1] });
        }
        // a line with a vertex that cannot be transformed meets nothing
        let t: Vec<Vec<Coord<f64>>> = near.filter_map(|l| self.transformed(l)).collect();
        let t: Vec<&[Coord<f64>]> = t.iter().map(Vec::as_slice).collect();
        self.meets_own(&t, |c| *c)
    }

    /// Does any of these lines, their vertices `at` in the polygon's own system, meet it: a
    /// vertex in it, or an edge crossing the boundary (an edge whose box has only cells
    /// outside crosses none)?
    fn meets_own<T>(&self, lines: &[&[T]], at: impl Fn(&T) -> Coord<f64>) -> bool {
        let cell = |c: Coord<f64>| self.grid.as_ref().map_or(Cell::Edge, |g| g.of_point(c));
        let vertices = || lines.iter().flat_map(|l| l.iter()).map(&at);
        if vertices().any(|c| cell(c) == Cell::Inside)
            || vertices().any(|c| cell(c) == Cell::Edge && self.holds(c))
        {
            return true;
        }
        lines.iter().any(|l| {
            l.windows(2).any(|w| {
                let (p, c) = (at(&w[0]), at(&w[1]));
                let b = [p.x.min(c.x), p.y.min(c.y), p.x.max(c.x), p.y.max(c.y)];
                self.grid.as_ref().map(|g| g.of_box(b)) != Some(Cell::Outside)
                    && self.edges_near(Line::new(p, c)).next().is_some()
            })
        })
    }

    /// The polygon's edges that meet `edge`.
    fn edges_near(&self, edge: Line<f64>) -> impl Iterator<Item = Line<f64>> + '_ {
        let env = AABB::from_corners(
            [edge.start.x.min(edge.end.x), edge.start.y.min(edge.end.y)],
            [edge.start.x.max(edge.end.x), edge.start.y.max(edge.end.y)],
        );
        self.edges
            .locate_in_envelope_intersecting(&env)
            .map(|l| Line::new(coord(l.geom().from), coord(l.geom().to)))
            .filter(move |l| l.intersects(&edge))
    }

    /// The edges the line at `y` across the rectangle `e` crosses, as [`Self::holds`] counts
    /// them: each with its polygon and the `x` where it crosses.
    fn crossings(&self, y: f64, e: [f64; 4]) -> Vec<(usize, f64)> {
        let line = AABB::from_corners([e[0], y], [e[2], y]);
        self.edges
            .locate_in_envelope_intersecting(&line)
            .filter_map(|entry| {
                let (a, b) = (entry.geom().from, entry.geom().to);
                ((a[1] > y) != (b[1] > y)).then(|| {
                    (
                        entry.data,
                        a[0] + (y - a[1]) / (b[1] - a[1]) * (b[0] - a[0]),
                    )
                })
            })
            .collect()
    }

    /// Is a point (in the polygon's system) in the polygon or on its boundary? In one of the
    /// polygons of the multipolygon: an odd count of its rings' edges a ray to +x crosses
    /// (inside its exterior and outside its holes).
    fn holds(&self, c: Coord<f64>) -> bool {
        let Some(e) = self.envelope_own() else {
            return false;
        };
        if c.x < e[0] || c.x > e[2] || c.y < e[1] || c.y > e[3] {
            return false;
        }
        match self.grid.as_ref().map(|g| g.of_point(c)) {
            Some(Cell::Inside) => return true,
            Some(Cell::Outside) => return false,
            _ => {}
        }
        // the edges a ray to +x can meet: those of the point's row of cells (the edges whose
        // y-range holds the point's, and more), else those whose boxes meet the ray
        let band;
        let near: &mut dyn Iterator<Item = BandEdge> = match &self.grid {
            Some(g) => {
                let j = g.row_of(c.y);
                let (s, t) = (
                    self.band_starts[j] as usize,
                    self.band_starts[j + 1] as usize,
                );
                band = self.bands[s..t].iter().copied();
                &mut { band }
            }
            None => {
                let ray = AABB::from_corners([c.x, c.y], [e[2].max(c.x), c.y]);
                &mut self
                    .edges
                    .locate_in_envelope_intersecting(&ray)
                    .map(|entry| (entry.data, entry.geom().from, entry.geom().to))
            }
        };
        let mut inside = smallvec::SmallVec::<[bool; 4]>::from_elem(false, self.shape.0.len());
        for (polygon, a, b) in near {
            if Line::new(coord(a), coord(b)).intersects(&Point::from(c)) {
                return true;
            }
            if (a[1] > c.y) != (b[1] > c.y) {
                let x = a[0] + (c.y - a[1]) / (b[1] - a[1]) * (b[0] - a[0]);
                if x > c.x {
                    inside[polygon] = !inside[polygon];
                }
            }
        }
        inside.contains(&true)
    }

    /// The polygon's bounding rectangle in its own system.
    fn envelope_own(&self) -> Option<[f64; 4]> {
        let e = self.edges.root().envelope();
        let (lo, hi) = (e.lower(), e.upper());
        (lo[0] <= hi[0] && lo[1] <= hi[1]).then_some([lo[0], lo[1], hi[0], hi[1]])
    }

    /// Does a polygon (rings in storage coordinates, the exterior first) intersect this one?
    pub fn meets_polygon(&self, rings: &[Vec<Coord3>]) -> bool {
        let Some(exterior) = rings.first() else {
            return false;
        };
        if !self.may_meet(exterior) {
            return false;
        }
        let mut t = Vec::with_capacity(rings.len());
        for ring in rings {
            match self.transformed(ring) {
                Some(c) => t.push(LineString::new(c)),
                None => return false,
            }
        }
        let exterior = t.remove(0);
        Polygon::new(exterior, t).intersects(&self.shape)
    }

    /// The stretches of a line (storage coordinates, at least two vertices) inside the
    /// polygon, as fractions `(from, to)` of its 2D storage length, in order, merged where they
    /// meet. A line the polygon only touches in a point gives an empty stretch `(f, f)`.
    pub fn inside_fractions(&self, line: &[Coord3]) -> Vec<(f64, f64)> {
        if line.len() < 2 || !self.may_meet(line) {
            return Vec::new();
        }
        let Some(t) = self.transformed(line) else {
            return Vec::new();
        };
        let lengths: Vec<f64> = line
            .windows(2)
            .map(|w| ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt())
            .collect();
        let total: f64 = lengths.iter().sum();
        let mut out: Vec<(f64, f64)> = Vec::new();
        let mut walked = 0.0;
        for (i, w) in t.windows(2).enumerate() {
            let edge = Line::new(w[0], w[1]);
            let at = |s: f64| {
                if total > 0.0 {
                    (walked + s * lengths[i]) / total
                } else {
                    0.0
                }
            };
            for (a, b) in self.edge_inside(edge) {
                let (fa, fb) = (at(a), at(b));
                match out.last_mut() {
                    Some(last) if fa <= last.1 + 1e-12 => last.1 = last.1.max(fb),
                    _ => out.push((fa, fb)),
                }
            }
            walked += lengths[i];
        }
        out
    }

    /// The parameter ranges `0..=1` of one edge (in the polygon's system) inside the polygon.
    fn edge_inside(&self, edge: Line<f64>) -> Vec<(f64, f64)> {
        let d = edge.delta();
        let len2 = d.x * d.x + d.y * d.y;
        let point = |s: f64| Coord {
            x: edge.start.x + s * d.x,
            y: edge.start.y + s * d.y,
        };
        if len2 == 0.0 {
            return if self.holds(point(0.0)) {
                vec![(0.0, 0.0)]
            } else {
                Vec::new()
            };
        }
        let b = [
            edge.start.x.min(edge.end.x),
            edge.start.y.min(edge.end.y),
            edge.start.x.max(edge.end.x),
            edge.start.y.max(edge.end.y),
        ];
        match self.grid.as_ref().map(|g| g.of_box(b)) {
            Some(Cell::Inside) => return vec![(0.0, 1.0)],
            Some(Cell::Outside) => return Vec::new(),
            _ => {}
        }
        let mut cuts = vec![0.0, 1.0];
        for e in self.edges_near(edge) {
            if let Some(hit) = geo::line_intersection::line_intersection(edge, e) {
                let points = match hit {
                    geo::LineIntersection::SinglePoint { intersection, .. } => {
                        vec![intersection]
                    }
                    geo::LineIntersection::Collinear { intersection } => {
                        vec![intersection.start, intersection.end]
                    }
                };
                for p in points {
                    let s = ((p.x - edge.start.x) * d.x + (p.y - edge.start.y) * d.y) / len2;
                    cuts.push(s.clamp(0.0, 1.0));
                }
            }
        }
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        let mut out: Vec<(f64, f64)> = Vec::new();
        for w in cuts.windows(2) {
            let (a, b) = (w[0], w[1]);
            if self.holds(point((a + b) / 2.0)) {
                match out.last_mut() {
                    Some(last) if last.1 >= a => last.1 = b,
                    _ => out.push((a, b)),
                }
            }
        }
        if out.is_empty() {
            // touching in single points only
            for &s in &cuts {
                if self.holds(point(s)) {
                    return vec![(s, s)];
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x0: f64, y0: f64, x1: f64, y1: f64) -> Polygon<f64> {
        Polygon::new(
            LineString::from(vec![(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)]),
            vec![],
        )
    }

    #[test]
    fn cuts_a_line_to_the_inside() {
        let p = AreaPolygon::new(
            Srid::Utm33Etrs89,
            MultiPolygon(vec![square(0.0, 0.0, 10.0, 10.0)]),
        )
        .expect("polygon");
        // 20 m across the square, 5 m before it: 5..15 of 20 is inside
        let line = [[-5.0, 5.0, 0.0], [15.0, 5.0, 0.0]];
        let f = p.inside_fractions(&line);
        assert_eq!(f.len(), 1);
        assert!(
            (f[0].0 - 0.25).abs() < 1e-9 && (f[0].1 - 0.75).abs() < 1e-9,
            "{f:?}"
        );
        assert!(p.meets_line(&line));
        assert!(!p.meets_line(&[[11.0, 5.0, 0.0], [15.0, 5.0, 0.0]]));
        assert!(p
            .inside_fractions(&[[11.0, 5.0, 0.0], [15.0, 5.0, 0.0]])
            .is_empty());
        // a bent line leaving and coming back: two stretches
        let bent = [
            [5.0, 5.0, 0.0],
            [15.0, 5.0, 0.0],
            [15.0, 8.0, 0.0],
            [5.0, 8.0, 0.0],
        ];
        let f = p.inside_fractions(&bent);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!((f[0].1 * 23.0 - 5.0).abs() < 1e-9 && (f[1].0 * 23.0 - 18.0).abs() < 1e-9);
    }

    #[test]
    fn a_hole_is_outside() {
        let outer = square(0.0, 0.0, 10.0, 10.0);
        let hole = square(4.0, 4.0, 6.0, 6.0);
        let holed = Polygon::new(outer.exterior().clone(), vec![hole.exterior().clone()]);
        let p = AreaPolygon::new(Srid::Utm33Etrs89, MultiPolygon(vec![holed])).expect("polygon");
        assert!(!p.meets_line(&[[5.0, 5.0, 0.0]]));
        assert!(p.meets_line(&[[4.0, 5.0, 0.0]]));
        let f = p.inside_fractions(&[[0.0, 5.0, 0.0], [10.0, 5.0, 0.0]]);
        assert_eq!(f.len(), 2, "{f:?}");
    }

    /// A star polygon around (500, 500) with `radii` at even angles, with a square hole when
    /// `hole`; and its twin without the grid (every test exact).
    fn star(radii: &[f64], hole: bool) -> (AreaPolygon, AreaPolygon) {
        let n = radii.len();
        let mut ring: Vec<(f64, f64)> = radii
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let a = i as f64 / n as f64 * std::f64::consts::TAU;
                (500.0 + r * a.cos(), 500.0 + r * a.sin())
            })
            .collect();
        ring.push(ring[0]);
        let holes = if hole {
            vec![square(490.0, 490.0, 510.0, 510.0).exterior().clone()]
        } else {
            vec![]
        };
        let shape = MultiPolygon(vec![Polygon::new(LineString::from(ring), holes)]);
        let with = AreaPolygon::new(Srid::Utm33Etrs89, shape).expect("polygon");
        let mut without = with.clone();
        without.grid = None;
        (with, without)
    }

    proptest::proptest! {
        /// The grid decides only what the exact tests decide: points (vertices and random
        /// points, some on edges), and the stretches of random lines.
        #[test]
        fn the_grid_answers_as_the_exact_tests(
            radii in proptest::collection::vec(30.0f64..400.0, 3..40),
            hole in proptest::bool::ANY,
            points in proptest::collection::vec((0.0f64..1000.0, 0.0f64..1000.0), 1..40),
        ) {
            let (with, without) = star(&radii, hole);
            let mut probes: Vec<Coord<f64>> = points.iter().map(|&(x, y)| Coord { x, y }).collect();
            for e in with.edges.iter() {
                let (a, b) = (e.geom().from, e.geom().to);
                probes.push(coord(a));
                probes.push(Coord { x: (a[0] + b[0]) / 2.0, y: (a[1] + b[1]) / 2.0 });
            }
            for c in &probes {
                proptest::prop_assert_eq!(with.holds(*c), without.holds(*c), "{:?}", c);
            }
            let short = points.iter().map(|&(x, y)| [[x, y, 0.0], [x + 5.0, y + 3.0, 0.0]]);
            let long = points.windows(2).map(|w| [[w[0].0, w[0].1, 0.0], [w[1].0, w[1].1, 0.0]]);
            for line in short.chain(long) {
                proptest::prop_assert_eq!(with.inside_fractions(&line), without.inside_fractions(&line));
                proptest::prop_assert_eq!(with.meets_line(&line), without.meets_line(&line));
            }
        }
    }
}
