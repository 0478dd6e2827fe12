//! Surfaces (GeomFlate) in the flat own-geometry column of an object table.
//!
//! An object's own geometry is a run of coordinates: one = a point, several = a line. A surface
//! (multipolygon) is kept in the same run: every ring is preceded by a marker coordinate
//! `[NaN, NaN, tag]` (`tag` 0 = the exterior ring of a new polygon, 1 = a hole of the current
//! one). Points and lines never hold NaN, so a run that starts with a marker is a surface.

use geo::{Coord, LineString, MultiPolygon, Polygon};

use super::srid::Srid;
use super::{wkb, wkt, Coord3};
use crate::error::Result;

const EXTERIOR: f64 = 0.0;
const HOLE: f64 = 1.0;

fn marker(tag: f64) -> Coord3 {
    [f64::NAN, f64::NAN, tag]
}

/// Whether `c` is a ring marker (`[NaN, NaN, 0 or 1]`).
pub fn is_marker(c: &Coord3) -> bool {
    c[0].is_nan() && c[1].is_nan() && (c[2] == EXTERIOR || c[2] == HOLE)
}

/// Whether an own-geometry run is a surface.
pub fn is_surface(coords: &[Coord3]) -> bool {
    coords.first().is_some_and(|c| c[0].is_nan())
}

/// Encode a multipolygon (2D; heights 0) as a marked run.
pub fn encode(shape: &MultiPolygon<f64>) -> Vec<Coord3> {
    let mut out = Vec::new();
    for poly in &shape.0 {
        let rings = std::iter::once((EXTERIOR, poly.exterior()))
            .chain(poly.interiors().iter().map(|r| (HOLE, r)));
        for (tag, ring) in rings {
            if ring.0.len() < 4 {
                continue;
            }
            out.push(marker(tag));
            out.extend(ring.coords().map(|c| [c.x, c.y, 0.0]));
        }
    }
    out
}

/// Polygons of a marked run, each a list of rings (the first the exterior).
pub fn polygons(coords: &[Coord3]) -> Vec<Vec<Vec<Coord3>>> {
    let mut out: Vec<Vec<Vec<Coord3>>> = Vec::new();
    for c in coords {
        if c[0].is_nan() {
            if c[2] == HOLE && !out.is_empty() {
                if let Some(p) = out.last_mut() {
                    p.push(Vec::new());
                }
            } else {
                out.push(vec![Vec::new()]);
            }
        } else if let Some(ring) = out.last_mut().and_then(|p| p.last_mut()) {
            ring.push(*c);
        }
    }
    out
}

/// The marked run as a `geo` multipolygon.
pub fn decode(coords: &[Coord3]) -> MultiPolygon<f64> {
    let ring =
        |r: &Vec<Coord3>| LineString::new(r.iter().map(|c| Coord { x: c[0], y: c[1] }).collect());
    MultiPolygon::new(
        polygons(coords)
            .iter()
            .map(|p| Polygon::new(ring(&p[0]), p[1..].iter().map(ring).collect()))
            .collect(),
    )
}

/// `POLYGON ((...))` for one polygon, `MULTIPOLYGON (((...)), ((...)))` for several.
pub fn to_wkt(srid: Srid, coords: &[Coord3]) -> Result<String> {
    let polys: Vec<Vec<Vec<(f64, f64)>>> = polygons(coords)
        .iter()
        .map(|p| {
            p.iter()
                .map(|r| r.iter().map(|c| (c[0], c[1])).collect())
                .collect()
        })
        .collect();
    if polys.len() == 1 {
        return wkt::polygon(srid, &polys[0]);
    }
    let mut s = String::from("MULTIPOLYGON (");
    for (i, p) in polys.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let one = wkt::polygon(srid, p)?;
        s.push_str(one.trim_start_matches("POLYGON "));
    }
    s.push(')');
    Ok(s)
}

/// ISO WKB `MultiPolygon` (2D) of a marked run.
pub fn to_wkb(coords: &[Coord3]) -> Vec<u8> {
    let polys = polygons(coords);
    let mut out = Vec::with_capacity(9 + coords.len() * 16 + polys.len() * 9);
    out.push(1);
    out.extend_from_slice(&wkb::MULTIPOLYGON.to_le_bytes());
    out.extend_from_slice(&(polys.len() as u32).to_le_bytes());
    for p in &polys {
        out.push(1);
        out.extend_from_slice(&wkb::POLYGON.to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        for r in p {
            out.extend_from_slice(&(r.len() as u32).to_le_bytes());
            for c in r {
                out.extend_from_slice(&c[0].to_le_bytes());
                out.extend_from_slice(&c[1].to_le_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use geo::{Contains, Point};

    fn square(x: f64, y: f64, d: f64) -> LineString<f64> {
        LineString::from(vec![(x, y), (x + d, y), (x + d, y + d), (x, y + d), (x, y)])
    }

    #[test]
    fn marked_runs_round_trip_through_wkb() {
        let shape = MultiPolygon::new(vec![
            Polygon::new(square(0.0, 0.0, 10.0), vec![square(2.0, 2.0, 2.0)]),
            Polygon::new(square(20.0, 0.0, 5.0), vec![]),
        ]);
        let run = encode(&shape);
        assert!(is_surface(&run));
        assert!(!is_surface(&[[1.0, 2.0, 3.0]]));
        assert_eq!(decode(&run), shape);
        let mut back = Vec::new();
        assert_eq!(wkb::decode_into(&to_wkb(&run), &mut back), Some(run.len()));
        assert_eq!(back.len(), run.len());
        assert_eq!(decode(&back), shape);
        let d = decode(&run);
        assert!(d.contains(&Point::new(1.0, 1.0)));
        assert!(!d.contains(&Point::new(3.0, 3.0)), "in the hole");
        assert!(d.contains(&Point::new(21.0, 1.0)));
        let text = to_wkt(Srid::Utm33Wgs84, &run).unwrap();
        assert!(
            text.starts_with("MULTIPOLYGON (((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, "),
            "{text}"
        );
        let single = encode(&MultiPolygon::new(vec![Polygon::new(
            square(0.0, 0.0, 1.0),
            vec![],
        )]));
        assert_eq!(
            to_wkt(Srid::Utm33Wgs84, &single).unwrap(),
            "POLYGON ((0 0, 1 0, 1 1, 0 1, 0 0))"
        );
    }
}
