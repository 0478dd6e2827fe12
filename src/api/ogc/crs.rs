//! Coordinate reference systems of OGC API Features Part 2: the CRS URIs served, `crs` and
//! `bbox-crs` parsed into output systems, and `bbox` into a map extent in its own system.

use super::error::{OgcError, OgcResult};
use super::Query;
use crate::api::geojson::Crs;
use crate::geo::map_extent::MapExtent;
use crate::geo::srid::Srid;

pub(super) const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";
pub(super) const EPSG: &str = "http://www.opengis.net/def/crs/EPSG/0/";

pub(super) fn crs_list() -> Vec<String> {
    vec![
        CRS84.to_string(),
        format!("{EPSG}4326"),
        format!("{EPSG}25833"),
        format!("{EPSG}32633"),
    ]
}

/// The CRS of parameter `name` (`crs`, `bbox-crs`); CRS84 when it is not given.
pub(super) fn crs_param(q: &Query, name: &str) -> OgcResult<Crs> {
    q.get(name)
        .map(parse_crs)
        .transpose()
        .map(|c| c.unwrap_or(Crs::new(Srid::Wgs84)))
}

/// A CRS URI → the output system (EPSG:4326 in lat, lon order).
pub(super) fn parse_crs(uri: &str) -> OgcResult<Crs> {
    let t = uri.trim().trim_start_matches('[').trim_end_matches(']');
    if t == CRS84 || t.eq_ignore_ascii_case("CRS84") {
        return Ok(Crs::new(Srid::Wgs84));
    }
    let code = t
        .strip_prefix(EPSG)
        .or_else(|| t.strip_prefix("EPSG:"))
        .ok_or_else(|| OgcError::bad(format!("unsupported crs '{uri}'")))?;
    match code {
        "4326" => Ok(Crs {
            srid: Srid::Wgs84,
            lat_lon: true,
        }),
        "25833" => Ok(Crs::new(Srid::Utm33Etrs89)),
        "32633" => Ok(Crs::new(Srid::Utm33Wgs84)),
        _ => Err(OgcError::bad(format!(
            "unsupported crs '{uri}'; supported: {}",
            crs_list().join(", ")
        ))),
    }
}

pub(super) fn crs_uri(c: Crs) -> String {
    match (c.srid, c.lat_lon) {
        (Srid::Wgs84, false) => CRS84.to_string(),
        (srid, _) => format!("{EPSG}{}", srid.code()),
    }
}

/// `bbox` in `bbox-crs`: the features answered intersect it in that system.
pub(super) fn parse_bbox(text: &str, crs: Crs) -> OgcResult<MapExtent> {
    let v: Vec<f64> = text
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| OgcError::bad(format!("bbox '{text}' is not a list of numbers")))?;
    let (a, b, c, d) = match v.as_slice() {
        [a, b, c, d] => (*a, *b, *c, *d),
        [a, b, _, c, d, _] => (*a, *b, *c, *d),
        _ => return Err(OgcError::bad("bbox takes 4 or 6 numbers")),
    };
    if v.iter().any(|x| !x.is_finite()) || a > c || b > d {
        return Err(OgcError::bad(format!(
            "bbox '{text}': expected minimum before maximum on each axis"
        )));
    }
    // EPSG:4326 lists latitude first
    let (x0, y0, x1, y1) = if crs.lat_lon {
        (b, a, d, c)
    } else {
        (a, b, c, d)
    };
    Ok(MapExtent::new(crs.srid, [x0, y0, x1, y1])?)
}
