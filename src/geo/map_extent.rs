//! A map extent (the v2 `kartutsnitt`, the OGC `bbox`): a rectangle in its own coordinate
//! system, with what the index needs to find candidates and what decides them exactly.
//!
//! A rectangle in longitude/latitude (or another UTM zone) is not a rectangle in storage
//! coordinates (UTM 33): its edges are curves there. So a [`MapExtent`] keeps three things:
//!
//! - the rectangle itself, in its system: the answer holds exactly the geometries that
//!   intersect it there (touching counts), with the geometry's vertices transformed into that
//!   system and straight edges between them, as a client reading the answer in that system sees
//!   it (`geo`'s `Intersects`);
//! - an **outer** storage envelope that holds the whole rectangle (its edges sampled, plus a
//!   margin): candidates from the R-tree;
//! - an **inner** storage rectangle wholly inside the rectangle (checked by transforming its
//!   sampled edges back): a geometry with a vertex in it intersects without any transformation,
//!   so only candidates near the edge are tested exactly.
//!
//! For the storage system's own numbers (UTM 33 in any of its datums) all three are the
//! rectangle. Longitude/latitude rectangles are cut to 30° W … 60° E, 30° N … 88° N for the
//! candidate search (UTM 33 is not used farther from Norway; the vector tiles do the same).

use geo::{Coord, Intersects, LineString, Point, Polygon, Rect};

use super::srid::{from_storage, to_storage, Srid};
use super::Coord3;
use crate::error::Result;

/// Samples per rectangle edge when bounding its curved image.
const EDGE_SAMPLES: usize = 32;

/// Where longitude/latitude rectangles are searched (see the module doc).
const LON_LAT_SEARCH: [f64; 4] = [-30.0, 30.0, 60.0, 88.0];

/// A rectangle `[xmin, ymin, xmax, ymax]` in `srid` (for 4326: longitude, latitude).
#[derive(Debug, Clone, PartialEq)]
pub struct MapExtent {
    srid: Srid,
    rect: [f64; 4],
    outer: Option<[f64; 4]>,
    inner: Option<[f64; 4]>,
}

fn contains(b: &[f64; 4], x: f64, y: f64) -> bool {
    x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3]
}

/// Points along the edges of `b`, corners included.
fn edge_samples(b: [f64; 4]) -> impl Iterator<Item = (f64, f64)> {
    (0..=EDGE_SAMPLES).flat_map(move |i| {
        let t = i as f64 / EDGE_SAMPLES as f64;
        let x = b[0] + (b[2] - b[0]) * t;
        let y = b[1] + (b[3] - b[1]) * t;
        [(x, b[1]), (x, b[3]), (b[0], y), (b[2], y)]
    })
}

impl MapExtent {
    /// The rectangle `rect` (`[xmin, ymin, xmax, ymax]`, minimum before maximum, finite) in
    /// `srid`. Errs when the rectangle cannot be transformed into storage coordinates.
    pub fn new(srid: Srid, rect: [f64; 4]) -> Result<MapExtent> {
        if srid.is_native() {
            return Ok(MapExtent {
                srid,
                rect,
                outer: Some(rect),
                inner: Some(rect),
            });
        }
        let search = if srid.is_geographic() {
            let s = LON_LAT_SEARCH;
            let cut = [
                rect[0].max(s[0]),
                rect[1].max(s[1]),
                rect[2].min(s[2]),
                rect[3].min(s[3]),
            ];
            if cut[0] > cut[2] || cut[1] > cut[3] {
                return Ok(MapExtent {
                    srid,
                    rect,
                    outer: None,
                    inner: None,
                });
            }
            cut
        } else {
            rect
        };
        // outer: every edge sample, then a margin for the curve between samples
        let mut outer = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        // inner proposal: inside the left, bottom, right and top edges' images
        let mut inner = [
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::INFINITY,
        ];
        for (x, y) in edge_samples(search) {
            let (sx, sy) = to_storage(srid, x, y)?;
            outer = [
                outer[0].min(sx),
                outer[1].min(sy),
                outer[2].max(sx),
                outer[3].max(sy),
            ];
            if x == search[0] {
                inner[0] = inner[0].max(sx);
            }
            if x == search[2] {
                inner[2] = inner[2].min(sx);
            }
            if y == search[1] {
                inner[1] = inner[1].max(sy);
            }
            if y == search[3] {
                inner[3] = inner[3].min(sy);
            }
        }
        let margin = 1.0 + 1e-3 * (outer[2] - outer[0]).max(outer[3] - outer[1]);
        let outer = [
            outer[0] - margin,
            outer[1] - margin,
            outer[2] + margin,
            outer[3] + margin,
        ];
        let inner = [
            inner[0] + margin,
            inner[1] + margin,
            inner[2] - margin,
            inner[3] - margin,
        ];
        // keep the inner rectangle only when its sampled edges lie inside the searched part of
        // the rectangle (then, the image being simply connected, so does all of it)
        let inner = (inner[0] < inner[2]
            && inner[1] < inner[3]
            && edge_samples(inner).all(|(x, y)| {
                from_storage(srid, x, y).is_ok_and(|(a, b)| {
                    a > search[0] && a < search[2] && b > search[1] && b < search[3]
                })
            }))
        .then_some(inner);
        Ok(MapExtent {
            srid,
            rect,
            outer: Some(outer),
            inner,
        })
    }

    /// The system the rectangle is in.
    pub fn srid(&self) -> Srid {
        self.srid
    }

    /// The rectangle in its own system.
    pub fn rect(&self) -> [f64; 4] {
        self.rect
    }

    /// A storage envelope holding every storage point that can lie in the rectangle; None when
    /// none can.
    pub fn storage_envelope(&self) -> Option<[f64; 4]> {
        self.outer
    }

    /// Does every one of these storage points surely lie in the rectangle (known without
    /// transforming them)? False for none.
    pub fn surely_holds(&self, coords: &[Coord3]) -> bool {
        self.inner
            .is_some_and(|b| !coords.is_empty() && coords.iter().all(|c| contains(&b, c[0], c[1])))
    }

    /// Does the storage box `[x0, y0, x1, y1]` surely lie in the rectangle, so that every
    /// point of a geometry with that box does (see [`Self::surely_holds`])? False for an empty
    /// box.
    pub fn surely_holds_box(&self, b: [f64; 4]) -> bool {
        self.inner.is_some_and(|i| {
            b[0] <= b[2] && b[1] <= b[3] && contains(&i, b[0], b[1]) && contains(&i, b[2], b[3])
        })
    }

    /// Does a storage point surely lie in the rectangle (see [`Self::surely_holds`])?
    fn surely_in(&self, c: &Coord3) -> bool {
        self.inner.is_some_and(|b| contains(&b, c[0], c[1]))
    }

    /// Could any of these storage points' geometry reach the rectangle (its envelope meets the
    /// outer envelope)?
    fn may_meet(&self, coords: &[Coord3]) -> bool {
        let Some(o) = self.outer else {
            return false;
        };
        let (mut x0, mut y0, mut x1, mut y1) = (
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        );
        for c in coords {
            x0 = x0.min(c[0]);
            y0 = y0.min(c[1]);
            x1 = x1.max(c[0]);
            y1 = y1.max(c[1]);
        }
        x0 <= o[2] && x1 >= o[0] && y0 <= o[3] && y1 >= o[1]
    }

    fn rect_geo(&self) -> Rect<f64> {
        let r = self.rect;
        Rect::new(Coord { x: r[0], y: r[1] }, Coord { x: r[2], y: r[3] })
    }

    /// Storage points in the rectangle's system; None when one cannot be transformed.
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

    /// Does a point or a line (storage coordinates: one vertex is a point) intersect the
    /// rectangle?
    pub fn meets_line(&self, line: &[Coord3]) -> bool {
        if line.iter().any(|c| self.surely_in(c)) {
            return true;
        }
        if line.is_empty() || !self.may_meet(line) {
            return false;
        }
        let Some(t) = self.transformed(line) else {
            return false;
        };
        let r = self.rect_geo();
        match t.as_slice() {
            [p] => Point::from(*p).intersects(&r),
            _ => LineString::new(t).intersects(&r),
        }
    }

    /// Does a polygon (rings in storage coordinates, the exterior first) intersect the
    /// rectangle (its area: a rectangle inside a hole does not)?
    pub fn meets_polygon(&self, rings: &[Vec<Coord3>]) -> bool {
        let Some(exterior) = rings.first() else {
            return false;
        };
        if exterior.iter().any(|c| self.surely_in(c)) {
            return true;
        }
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
        Polygon::new(exterior, t).intersects(&self.rect_geo())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(lon: f64, lat: f64) -> Coord3 {
        let (x, y) = to_storage(Srid::Wgs84, lon, lat).expect("transforms");
        [x, y, 0.0]
    }

    #[test]
    fn lon_lat_rectangle_is_exact_in_lon_lat() {
        let e = MapExtent::new(Srid::Wgs84, [10.5, 63.28, 10.6, 63.34]).expect("extent");
        let outer = e.storage_envelope().expect("outer");
        // every sampled point of the rectangle is in the outer envelope
        for (lon, lat) in edge_samples([10.5, 63.28, 10.6, 63.34]) {
            let c = storage(lon, lat);
            assert!(contains(&outer, c[0], c[1]), "{lon},{lat}");
        }
        // a point just outside a corner, inside the corners' UTM envelope: not in
        let out = storage(10.4999, 63.2801);
        assert!(!e.meets_line(&[out]));
        let inside = storage(10.55, 63.31);
        assert!(e.meets_line(&[inside]) && e.surely_holds(&[inside]));
        // a line crossing the box with both ends outside meets it
        assert!(e.meets_line(&[storage(10.45, 63.31), storage(10.65, 63.31)]));
        // a line passing outside a corner does not
        assert!(!e.meets_line(&[storage(10.49, 63.275), storage(10.501, 63.2795)]));
        // a polygon around the whole box meets it; one beside it does not
        let ring = |a: f64, b: f64, c: f64, d: f64| {
            vec![
                storage(a, b),
                storage(c, b),
                storage(c, d),
                storage(a, d),
                storage(a, b),
            ]
        };
        assert!(e.meets_polygon(&[ring(10.0, 63.0, 11.0, 64.0)]));
        assert!(!e.meets_polygon(&[ring(10.61, 63.0, 11.0, 64.0)]));
        // ... nor one whose hole holds the box
        assert!(!e.meets_polygon(&[ring(10.0, 63.0, 11.0, 64.0), ring(10.4, 63.2, 10.7, 63.4)]));
    }

    #[test]
    fn inner_rectangle_lies_inside_and_far_boxes_find_nothing() {
        let e = MapExtent::new(Srid::Wgs84, [5.0, 58.0, 31.0, 71.0]).expect("extent");
        let inner = e.inner.expect("an inner rectangle");
        for (x, y) in edge_samples(inner) {
            let (lon, lat) = from_storage(Srid::Wgs84, x, y).expect("back");
            assert!(lon > 5.0 && lon < 31.0 && lat > 58.0 && lat < 71.0);
        }
        let world = MapExtent::new(Srid::Wgs84, [-180.0, -90.0, 180.0, 90.0]).expect("world");
        assert!(world.storage_envelope().is_some());
        assert!(world.meets_line(&[storage(10.4, 63.43)]));
        let south = MapExtent::new(Srid::Wgs84, [0.0, -60.0, 10.0, -50.0]).expect("south");
        assert_eq!(south.storage_envelope(), None);
        assert!(!south.meets_line(&[storage(10.4, 63.43)]));
    }

    #[test]
    fn storage_rectangle_is_the_rectangle() {
        let e = MapExtent::new(Srid::Utm33Etrs89, [0.0, 0.0, 10.0, 10.0]).expect("extent");
        assert_eq!(e.storage_envelope(), Some([0.0, 0.0, 10.0, 10.0]));
        assert!(e.meets_line(&[[10.0, 5.0, 0.0]]));
        assert!(e.meets_line(&[[-5.0, 5.0, 0.0], [15.0, 5.0, 0.0]]));
        // a diagonal whose envelope covers a corner but which passes beside it
        assert!(!e.meets_line(&[[8.0, 13.0, 0.0], [13.0, 8.0, 0.0]]));
        assert!(e.meets_line(&[[8.0, 11.0, 0.0], [11.0, 8.0, 0.0]]));
    }
}
