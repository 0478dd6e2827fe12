//! The `polygon` parameter of object lists, their statistics and `/vegnett/lenker`: a WKT
//! `POLYGON` or `MULTIPOLYGON`, or a plain coordinate list `x1 y1, x2 y2, …` (one ring, as LES
//! v3 accepts it), in the request's `srid`; rings are closed when they are not. Limits: at most
//! [`MAX_POLYGON_VERTICES`] vertices and an envelope of at most [`MAX_POLYGON_SPAN_M`] in each
//! direction in storage coordinates; every ring has three distinct vertices, crosses and
//! touches itself nowhere (`geo::area_polygon::self_touch`, checked in the request's srid),
//! rings meet each other at points at most, holes lie inside their exterior and outside each
//! other, and parts of a multipolygon do not overlap (`geo::area_polygon::polygon_fault`), and
//! the polygon has an area. All refusals are 422/4011.

use std::sync::Arc;

use geo::{Area, LineString, MultiPolygon, Polygon};

use crate::api::error::{echoed, ApiError, ApiResult};
use crate::generation::Generation;
use crate::geo::area_polygon::{polygon_fault, self_touch, AreaPolygon, Fault};
use crate::geo::srid::Srid;
use crate::query::limits::{MAX_POLYGON_SPAN_M, MAX_POLYGON_VERTICES};

type Ring = Vec<(f64, f64)>;

fn bad(text: &str, why: impl std::fmt::Display) -> ApiError {
    let shown: String = echoed(text).chars().take(80).collect();
    ApiError::bad(4011, format!("Ugyldig polygon '{shown}': {why}"))
}

/// `polygon=` in `srid`, prepared: the one generation `g` keeps for the same text and srid
/// (`generation::polygons`), else parsed, checked and kept.
pub fn prepared_polygon(g: &Generation, text: &str, srid: Srid) -> ApiResult<Arc<AreaPolygon>> {
    g.polygons
        .get_or_try(srid, text, || parse_polygon(text, srid))
}

/// Parse `polygon=` in `srid`.
pub fn parse_polygon(text: &str, srid: Srid) -> ApiResult<AreaPolygon> {
    let t = text.trim().trim_matches('"').trim();
    let upper = t.to_ascii_uppercase();
    let polygons = if let Some(rest) = upper.strip_prefix("MULTIPOLYGON") {
        nested(text, &t[t.len() - rest.len()..], 3)?
    } else if let Some(rest) = upper.strip_prefix("POLYGON") {
        nested(text, &t[t.len() - rest.len()..], 2)?
    } else if t.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.') {
        vec![vec![coords(text, t)?]]
    } else {
        return Err(bad(
            text,
            "forventet WKT POLYGON/MULTIPOLYGON eller koordinatliste 'x1 y1, x2 y2, ...'",
        ));
    };
    let vertices: usize = polygons.iter().flatten().map(|r| r.len() + 1).sum();
    if vertices > MAX_POLYGON_VERTICES {
        return Err(bad(
            text,
            format!("{vertices} hjørner; høyst {MAX_POLYGON_VERTICES} er tillatt"),
        ));
    }
    let mut shape = Vec::with_capacity(polygons.len());
    for (p, rings) in polygons.into_iter().enumerate() {
        let mut lines = Vec::with_capacity(rings.len());
        for (r, ring) in rings.into_iter().enumerate() {
            let mut distinct = ring.clone();
            distinct.dedup();
            if distinct.first() == distinct.last() {
                distinct.pop();
            }
            if distinct.len() < 3 {
                return Err(bad(text, "en ring må ha minst tre ulike hjørner"));
            }
            let line = LineString::from(ring);
            if let Some(t) = self_touch(&line.0) {
                return Err(bad(
                    text,
                    format!(
                        "ring {} i polygon {} krysser eller berører seg selv ved ({} {}); \
                         et polygon må være enkelt",
                        r + 1,
                        p + 1,
                        t.at.x,
                        t.at.y
                    ),
                ));
            }
            lines.push(line);
        }
        let exterior = lines.remove(0);
        shape.push(Polygon::new(exterior, lines));
    }
    let shape = MultiPolygon(shape);
    if let Some(f) = polygon_fault(&shape) {
        return Err(bad(text, fault_text(f)));
    }
    let area = shape.unsigned_area();
    if area.is_nan() || area <= 0.0 {
        return Err(bad(text, "polygonet har ikke noe areal"));
    }
    let a = AreaPolygon::new(srid, shape).map_err(|e| bad(text, e))?;
    if let Some(e) = a.storage_envelope() {
        if e[2] - e[0] > MAX_POLYGON_SPAN_M || e[3] - e[1] > MAX_POLYGON_SPAN_M {
            return Err(bad(
                text,
                format!(
                    "for stort: høyst {} km i hver retning",
                    MAX_POLYGON_SPAN_M / 1000.0
                ),
            ));
        }
    }
    Ok(a)
}

/// A polygon fault in the API's words (polygons and rings counted from 1; ring 1 the
/// exterior).
fn fault_text(f: Fault) -> String {
    match f {
        Fault::RingsMeet { a, b, at } => format!(
            "ring {} i polygon {} og ring {} i polygon {} krysser hverandre eller har en felles \
             strekning ved ({} {}); ringer kan bare berøre hverandre i punkter",
            a.1 + 1,
            a.0 + 1,
            b.1 + 1,
            b.0 + 1,
            at.x,
            at.y
        ),
        Fault::HoleOutside { part, hole } => format!(
            "ring {} (et hull) i polygon {} ligger utenfor ytterringen",
            hole + 1,
            part + 1
        ),
        Fault::HolesNested { part } => {
            format!("polygon {} har et hull inne i et annet hull", part + 1)
        }
        Fault::PartsOverlap { parts } => format!(
            "polygon {} og polygon {} overlapper (det ene ligger inne i det andre)",
            parts.0 + 1,
            parts.1 + 1
        ),
    }
}

/// The polygons of a WKT body (after the keyword) whose rings lie at parenthesis depth
/// `ring_depth` (2 for POLYGON, 3 for MULTIPOLYGON).
fn nested(text: &str, body: &str, ring_depth: usize) -> ApiResult<Vec<Vec<Ring>>> {
    let body = body.trim_start();
    let body = body
        .strip_prefix('Z')
        .or_else(|| body.strip_prefix('z'))
        .unwrap_or(body);
    let (mut polygons, mut rings, mut depth, mut start) = (Vec::new(), Vec::new(), 0, 0);
    for (i, c) in body.char_indices() {
        match c {
            '(' => {
                depth += 1;
                if depth > ring_depth {
                    return Err(bad(text, "for mange parenteser"));
                }
                start = i + 1;
            }
            ')' => {
                if depth == 0 {
                    return Err(bad(text, "')' uten '('"));
                }
                if depth == ring_depth {
                    rings.push(coords(text, &body[start..i])?);
                } else if depth == ring_depth - 1 {
                    if rings.is_empty() {
                        return Err(bad(text, "et polygon uten ringer"));
                    }
                    polygons.push(std::mem::take(&mut rings));
                }
                depth -= 1;
            }
            _ if depth == ring_depth => {}
            ',' => {}
            c if c.is_whitespace() => {}
            c => return Err(bad(text, format!("uventet tegn '{c}'"))),
        }
    }
    if depth != 0 || polygons.is_empty() {
        return Err(bad(
            text,
            "parentesene er ikke balansert, eller polygonet er tomt",
        ));
    }
    Ok(polygons)
}

/// A ring `x y[ z], x y[ z], …`, closed.
fn coords(text: &str, list: &str) -> ApiResult<Ring> {
    let mut ring: Ring = Vec::new();
    for vertex in list.split(',') {
        let v: Vec<f64> = vertex
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| bad(text, format!("ugyldig koordinat '{}'", vertex.trim())))?;
        if !(2..=3).contains(&v.len()) || v.iter().any(|x| !x.is_finite()) {
            return Err(bad(text, format!("ugyldig koordinat '{}'", vertex.trim())));
        }
        ring.push((v[0], v[1]));
        if ring.len() > MAX_POLYGON_VERTICES {
            return Err(bad(
                text,
                format!("høyst {MAX_POLYGON_VERTICES} hjørner er tillatt"),
            ));
        }
    }
    if ring.first() != ring.last() {
        ring.push(ring[0]);
    }
    Ok(ring)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_to_the_same_polygon() {
        let s = Srid::Utm33Etrs89;
        let wkt = parse_polygon("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))", s).expect("wkt");
        let list = parse_polygon("0 0, 10 0, 10 10, 0 10", s).expect("list");
        let multi =
            parse_polygon("multipolygon (((0 0 1, 10 0 1, 10 10 1, 0 10 1)))", s).expect("multi");
        assert_eq!(wkt.shape(), list.shape());
        assert_eq!(wkt.shape(), multi.shape());
        let holed = parse_polygon(
            "MULTIPOLYGON(((0 0,9 0,9 9,0 9,0 0),(1 1,2 1,2 2,1 1)),((20 20,21 20,21 21,20 20)))",
            s,
        )
        .expect("holed");
        assert_eq!(holed.shape().0.len(), 2);
        assert_eq!(holed.shape().0[0].interiors().len(), 1);
    }

    #[test]
    fn refuses_what_is_no_polygon() {
        let s = Srid::Utm33Etrs89;
        for bad in [
            "POLYGON((0 0, 10 0))",
            "POLYGON((0 0, 10 0, 10 x, 0 0))",
            "POLYGON((0 0, 10 0, 10 10, 0 0)",
            "POLYGON(((0 0, 10 0, 10 10, 0 0)))",
            "LINESTRING(0 0, 1 1)",
            "POLYGON EMPTY",
            "0 0, 1 1, 2 2",
            "POLYGON((0 0, 4000000 0, 0 10, 0 0))",
            "POLYGON((0 0, 10 10, 10 0, 0 10, 0 0))",
            "0 0, 10 10, 10 0, 0 10",
            "MULTIPOLYGON(((0 0,9 0,9 9,0 9,0 0),(1 1,2 1,1 2,2 2,1 1)))",
        ] {
            let e = parse_polygon(bad, s).expect_err(bad);
            assert_eq!(e.code, 4011, "{bad}");
        }
    }
}
