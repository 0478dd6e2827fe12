//! GeoJSON (RFC 7946) answers of the read API, and the feature writer OGC API Features uses.
//!
//! Asked for with `Accept: application/geo+json` or a `.geojson` path suffix on the endpoints
//! that negotiate with `api::begin_geo`: `/vegobjekter/{type}` (a FeatureCollection, streamed
//! like the JSON pages), `/vegobjekter/{type}/{id}` (a Feature; with `dybde` a
//! FeatureCollection of it and its descendants), `/vegnett/lenker`, `/posisjon` and the
//! `/omrader/*` lists (the `kartutsnitt` rectangle as geometry).
//!
//! - Coordinates: WGS 84 longitude, latitude (RFC 7946) unless `srid` is given; then that
//!   system's numbers, and the collection carries the (pre-RFC, GDAL-read) foreign member
//!   `"crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::N"}}`. Input
//!   coordinates (`kartutsnitt`, `nord`/`ost`) keep their v2 meaning (`srid`, default UTM 33).
//!   Heights are kept as the third number.
//! - A road object's geometry is its own, else its located geometry
//!   (`generation::feature`): lines for line-placed types, whole (not cut by `segmentering`).
//! - Object properties: `nvdbId`, `vegobjekttype`, `vegobjekttypenavn`, `versjon`,
//!   `egengeometri`, then every value keyed by its property type's name — enumerations decoded
//!   (the value's name, or its number for numeric ones) with the allowed value's id under
//!   `"<name>_id"`. Links, positions and areas: the v2 document's members without its geometry.
//! - Paging: `links` holds `{"rel": "next", "href": …}` (the `.geojson` URL of the next page)
//!   while more remain; `numberReturned`, and `numberMatched` where the total is known.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use hyper::body::Frame;
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::{ApiError, ApiResult};
use super::media::{Negotiated, GEOJSON};
use super::params::Params;
use crate::generation::feature::{Feature, FeatureOptions, Geometry, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::{Generation, TypeData};
use crate::geo::srid::Srid;
use crate::geo::Coord3;

/// Target size of one streamed chunk.
const CHUNK_BYTES: usize = 64 * 1024;

/// The coordinate system of written coordinates and their axis order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crs {
    pub srid: Srid,
    /// Latitude first (OGC API Features with EPSG:4326, whose axis order is lat, lon).
    pub lat_lon: bool,
}

impl Crs {
    pub fn new(srid: Srid) -> Crs {
        Crs {
            srid,
            lat_lon: false,
        }
    }
}

/// The output system of a GeoJSON answer: `srid` when given, else WGS 84 (RFC 7946).
pub fn output_srid(p: &Params) -> ApiResult<Srid> {
    Ok(p.one("srid")?
        .map(Srid::parse)
        .transpose()?
        .unwrap_or(Srid::Wgs84))
}

/// A coordinate number: `geo::wkt`'s fixed-point writer (as the WKT of the v2 answers), with
/// `-0` written `0`.
fn push_num(out: &mut String, v: f64, decimals: usize) {
    if !v.is_finite() {
        out.push_str("null");
        return;
    }
    let start = out.len();
    crate::geo::wkt::push_num(out, v, decimals);
    if &out[start..] == "-0" {
        out.truncate(start);
        out.push('0');
    }
}

/// A property number as the v2 JSON writes it: integral values as integers, others in the
/// shortest form that reads back exactly.
fn push_value_num(out: &mut String, v: f64) {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        let _ = write!(out, "{}", v as i64);
    } else if v.is_finite() {
        push_json(out, &(v + 0.0));
    } else {
        out.push_str("null");
    }
}

fn push_coord(out: &mut String, c: &Coord3, crs: Crs) {
    let d = crs.srid.decimals();
    let (a, b) = if crs.lat_lon {
        (c[1], c[0])
    } else {
        (c[0], c[1])
    };
    out.push('[');
    push_num(out, a, d);
    out.push(',');
    push_num(out, b, d);
    out.push(',');
    push_num(out, c[2], 3);
    out.push(']');
}

fn push_line(out: &mut String, l: &[Coord3], crs: Crs) {
    out.push('[');
    for (i, c) in l.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_coord(out, c, crs);
    }
    out.push(']');
}

/// A geometry (already in `crs.srid`) as a GeoJSON geometry object.
pub fn push_geometry(out: &mut String, g: &Geometry, crs: Crs) {
    let list = |out: &mut String, items: &[Vec<Coord3>]| {
        out.push('[');
        for (i, l) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_line(out, l, crs);
        }
        out.push(']');
    };
    match g {
        Geometry::Point(c) => {
            out.push_str(r#"{"type":"Point","coordinates":"#);
            push_coord(out, c, crs);
        }
        Geometry::LineString(l) => {
            out.push_str(r#"{"type":"LineString","coordinates":"#);
            push_line(out, l, crs);
        }
        Geometry::MultiLineString(ls) => {
            out.push_str(r#"{"type":"MultiLineString","coordinates":"#);
            list(out, ls);
        }
        Geometry::MultiPolygon(ps) => {
            out.push_str(r#"{"type":"MultiPolygon","coordinates":["#);
            for (i, rings) in ps.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                list(out, rings);
            }
            out.push(']');
        }
    }
    out.push('}');
}

fn push_json<T: Serialize + ?Sized>(out: &mut String, v: &T) {
    // serializing our own strings and maps cannot fail
    out.push_str(&serde_json::to_string(v).unwrap_or_else(|_| "null".into()));
}

/// Which properties a feature carries (OGC API Features Part 6 `properties`): `None`, all of
/// them; else only the members named in the set (their names as written, `<name>_id` apart).
pub type Selection = Option<Arc<BTreeSet<String>>>;

/// Writes `"name":` (after a comma unless it is the first member) when `keep` keeps `name`.
struct Members<'a> {
    keep: &'a Selection,
    first: bool,
}

impl Members<'_> {
    fn key(&mut self, out: &mut String, name: &str) -> bool {
        if let Some(k) = self.keep {
            if !k.contains(name) {
                return false;
            }
        }
        if !std::mem::take(&mut self.first) {
            out.push(',');
        }
        // what JSON escapes (serde_json: '"', '\\' and control characters) is rare in names
        if name.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            push_json(out, name);
        } else {
            out.push('"');
            out.push_str(name);
            out.push('"');
        }
        out.push(':');
        true
    }
}

/// A road object's feature: see the module documentation for its members.
pub fn push_object_feature(out: &mut String, g: &Generation, f: &Feature, crs: Crs) {
    push_object_feature_selected(out, g, f, crs, &None);
}

/// A road object's feature with only the properties `keep` keeps.
pub fn push_object_feature_selected(
    out: &mut String,
    g: &Generation,
    f: &Feature,
    crs: Crs,
    keep: &Selection,
) {
    out.push_str(r#"{"type":"Feature","id":"#);
    let _ = write!(out, "{}", f.id);
    out.push_str(r#","geometry":"#);
    match &f.geometry {
        Some(geom) => push_geometry(out, geom, crs),
        None => out.push_str("null"),
    }
    out.push_str(r#","properties":{"#);
    let mut m = Members { keep, first: true };
    if m.key(out, "nvdbId") {
        let _ = write!(out, "{}", f.id);
    }
    if m.key(out, "vegobjekttype") {
        let _ = write!(out, "{}", f.type_id);
    }
    if m.key(out, "vegobjekttypenavn") {
        let name = g.catalog.object_type(f.type_id).map(|t| t.name.as_str());
        push_json(out, name.unwrap_or(""));
    }
    if m.key(out, "versjon") {
        let _ = write!(out, "{}", f.version);
    }
    if m.key(out, "egengeometri") {
        let _ = write!(out, "{}", f.own_geometry);
    }
    for p in &f.properties {
        if let PropertyValue::Enum { id, name, number } = p.value {
            if m.key(out, p.name) {
                match number {
                    Some(n) => push_value_num(out, n),
                    None => push_json(out, name),
                }
            }
            if m.key(out, &format!("{}_id", p.name)) {
                let _ = write!(out, "{id}");
            }
            continue;
        }
        if !m.key(out, p.name) {
            continue;
        }
        match p.value {
            PropertyValue::Integer(v) => {
                let _ = write!(out, "{v}");
            }
            PropertyValue::Float(v) => push_value_num(out, v),
            PropertyValue::Text(t) => push_json(out, t),
            PropertyValue::Enum { .. } => {}
        }
    }
    out.push_str("}}");
}

/// The feature of object `row` of `data`, written to `out`.
pub fn push_object(
    out: &mut String,
    g: &Generation,
    data: &TypeData,
    row: usize,
    crs: Crs,
    sensitive: bool,
) -> ApiResult<()> {
    push_object_selected(out, g, data, row, (crs, sensitive), &None)
}

/// The feature of object `row` of `data` with the properties `keep` keeps, written to `out`.
pub fn push_object_selected(
    out: &mut String,
    g: &Generation,
    data: &TypeData,
    row: usize,
    (crs, sensitive): (Crs, bool),
    keep: &Selection,
) -> ApiResult<()> {
    let opts = FeatureOptions {
        srid: crs.srid,
        sensitive,
        geometry_only: false,
    };
    let f = g.feature(ObjectRow::new(&data.table, row), &opts)?;
    push_object_feature_selected(out, g, &f, crs, keep);
    Ok(())
}

/// A feature from a v2 document: its members but `geometry_key` as properties, `geometry` (in
/// `crs.srid` numbers) as geometry.
pub fn push_doc_feature(
    out: &mut String,
    id: Option<&Value>,
    geometry: Option<&Geometry>,
    mut doc: Value,
    geometry_key: &str,
    crs: Crs,
) {
    out.push_str(r#"{"type":"Feature","#);
    if let Some(id) = id {
        out.push_str(r#""id":"#);
        push_json(out, id);
        out.push(',');
    }
    out.push_str(r#""geometry":"#);
    match geometry {
        Some(g) => push_geometry(out, g, crs),
        None => out.push_str("null"),
    }
    if let Some(m) = doc.as_object_mut() {
        m.remove(geometry_key);
    }
    out.push_str(r#","properties":"#);
    push_json(out, &doc);
    out.push('}');
}

/// The features of a collection, written one by one as the body is read.
pub struct Features {
    count: usize,
    #[allow(clippy::type_complexity)]
    write: Box<dyn Fn(usize, &mut String) -> ApiResult<()> + Send + Sync>,
}

impl Features {
    pub fn new(
        count: usize,
        write: impl Fn(usize, &mut String) -> ApiResult<()> + Send + Sync + 'static,
    ) -> Features {
        Features {
            count,
            write: Box::new(write),
        }
    }

    /// Features already written.
    pub fn prerendered(items: Vec<String>) -> Features {
        let count = items.len();
        Features::new(count, move |i, out| {
            out.push_str(&items[i]);
            Ok(())
        })
    }

    /// Rows `rows` of type `data` (None: a type without objects).
    pub fn objects(
        g: Arc<Generation>,
        data: Option<Arc<TypeData>>,
        rows: Vec<u32>,
        crs: Crs,
        sensitive: bool,
    ) -> Features {
        Features::objects_selected(g, data, rows, (crs, sensitive), None)
    }

    /// Rows `rows` of type `data` with the properties `keep` keeps.
    pub fn objects_selected(
        g: Arc<Generation>,
        data: Option<Arc<TypeData>>,
        rows: Vec<u32>,
        how: (Crs, bool),
        keep: Selection,
    ) -> Features {
        let count = if data.is_some() { rows.len() } else { 0 };
        Features::new(count, move |i, out| match &data {
            Some(d) => push_object_selected(out, &g, d, rows[i] as usize, how, &keep),
            None => Ok(()),
        })
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn write(&self, i: usize, out: &mut String) -> ApiResult<()> {
        (self.write)(i, out)
    }
}

/// A FeatureCollection body: `{"type":"FeatureCollection", <members>, "features":[…]}`,
/// rendered ~64 KiB at a time as the client reads.
struct CollectionBody {
    head: Option<String>,
    features: Features,
    next: usize,
    done: bool,
}

impl CollectionBody {
    fn next_chunk(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.done {
            return None;
        }
        let mut out = self.head.take().unwrap_or_default();
        let base = out.len();
        while self.next < self.features.count() && out.len() - base < CHUNK_BYTES {
            if self.next > 0 {
                out.push(',');
            }
            if let Err(e) = self.features.write(self.next, &mut out) {
                self.done = true;
                tracing::error!(error = %e.message, "GeoJSON body ended early");
                return Some(Err(std::io::Error::other(e.message)));
            }
            self.next += 1;
        }
        if self.next == self.features.count() {
            out.push_str("]}");
            self.done = true;
        }
        Some(Ok(Bytes::from(out)))
    }
}

impl hyper::body::Body for CollectionBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.get_mut().next_chunk().map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// The `crs` foreign member for coordinates that are not WGS 84 lon/lat.
pub fn crs_member(srid: Srid) -> Option<Value> {
    (srid != Srid::Wgs84).then(|| {
        serde_json::json!({"type": "name", "properties": {"name": format!("urn:ogc:def:crs:EPSG::{}", srid.code())}})
    })
}

/// A FeatureCollection response with `members` before `features`, of `content_type`, with
/// `headers` added.
pub fn collection(
    members: Map<String, Value>,
    features: Features,
    content_type: &'static str,
    headers: &[(HeaderName, HeaderValue)],
) -> Response {
    let mut head = String::from(r#"{"type":"FeatureCollection","#);
    for (k, v) in &members {
        push_json(&mut head, k);
        head.push(':');
        push_json(&mut head, v);
        head.push(',');
    }
    head.push_str(r#""features":["#);
    // more than a few features: rendered off the async workers (`super::heavy`)
    let heavy = features.count() > super::stream::HEAVY_ITEMS;
    let body = CollectionBody {
        head: Some(head),
        features,
        next: 0,
        done: false,
    };
    let mut r = Body::new(body).into_response();
    if heavy {
        r.extensions_mut().insert(super::heavy::Heavy);
    }
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    for (k, v) in headers {
        r.headers_mut().insert(k.clone(), v.clone());
    }
    r
}

/// The v2 endpoints' FeatureCollection: `numberReturned`, `numberMatched` when `total` is
/// known, a `next` link while more remain, and the `crs` member outside WGS 84.
pub fn v2_collection(
    features: Features,
    srid: Srid,
    next: Option<String>,
    total: Option<u64>,
) -> Response {
    let mut m = Map::new();
    m.insert("numberReturned".into(), features.count().into());
    if let Some(t) = total {
        m.insert("numberMatched".into(), t.into());
    }
    let links: Vec<Value> = next
        .into_iter()
        .map(|href| serde_json::json!({"rel": "next", "type": GEOJSON, "href": href}))
        .collect();
    m.insert("links".into(), links.into());
    if let Some(c) = crs_member(srid) {
        m.insert("crs".into(), c);
    }
    collection(m, features, GEOJSON, &[])
}

/// One Feature as a response.
pub fn feature_response(feature: String, content_type: &'static str) -> Response {
    let mut r = Body::from(feature).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// `/posisjon` as a FeatureCollection: each position's point, its v2 document (without
/// `geometri`) as properties.
pub fn positions(
    found: &[crate::query::network::NetworkPosition],
    p: &Params,
    z_tag: bool,
) -> ApiResult<Response> {
    let crs = Crs::new(output_srid(p)?);
    let mut items = Vec::with_capacity(found.len());
    for pos in found {
        let doc = super::dto::position_result(pos, crs.srid, true, z_tag)?;
        let doc = serde_json::to_value(&doc)
            .map_err(|e| crate::error::EngineError::Internal(e.to_string()))?;
        let point = Geometry::Point(pos.point).to_srid(crs.srid)?;
        let mut out = String::new();
        push_doc_feature(&mut out, None, Some(&point), doc, "geometri", crs);
        items.push(out);
    }
    Ok(v2_collection(
        Features::prerendered(items),
        crs.srid,
        None,
        None,
    ))
}

/// A collection of v2 documents, each a feature with its storage line geometry (`geometri`
/// left out of the properties): the segments of `/vegnett/rute`.
pub fn line_documents(items: Vec<(Value, Vec<Coord3>)>, p: &Params) -> ApiResult<Response> {
    let crs = Crs::new(output_srid(p)?);
    let mut out = Vec::with_capacity(items.len());
    for (doc, line) in items {
        let g = Geometry::LineString(line).to_srid(crs.srid)?;
        let mut text = String::new();
        push_doc_feature(&mut text, None, Some(&g), doc, "geometri", crs);
        out.push(text);
    }
    Ok(v2_collection(
        Features::prerendered(out),
        crs.srid,
        None,
        None,
    ))
}

/// A geometry from API-style WKT (`POINT`, `LINESTRING`, `POLYGON` and their `MULTI` forms,
/// with or without `Z`); polygons become `MultiPolygon`s, multipoints are not read.
pub fn geometry_from_wkt(text: &str) -> Option<Geometry> {
    let t = text.trim();
    let open = t.find('(')?;
    let kind = t[..open].split_whitespace().next()?.to_ascii_uppercase();
    let (nested, rest) = parse_nested(&t[open..])?;
    if !rest.trim().is_empty() {
        return None;
    }
    let coords = |n: &Nested| -> Option<Vec<Coord3>> {
        match n {
            Nested::List(items) => items
                .iter()
                .map(|i| match i {
                    Nested::Coord(c) => Some(*c),
                    Nested::List(_) => None,
                })
                .collect(),
            Nested::Coord(c) => Some(vec![*c]),
        }
    };
    let lines = |n: &Nested| -> Option<Vec<Vec<Coord3>>> {
        match n {
            Nested::List(items) => items.iter().map(coords).collect(),
            Nested::Coord(_) => None,
        }
    };
    Some(match kind.as_str() {
        "POINT" => Geometry::Point(*coords(&nested)?.first()?),
        "LINESTRING" => Geometry::LineString(coords(&nested)?),
        "MULTILINESTRING" => Geometry::MultiLineString(lines(&nested)?),
        "POLYGON" => Geometry::MultiPolygon(vec![lines(&nested)?]),
        "MULTIPOLYGON" => match &nested {
            Nested::List(ps) => {
                Geometry::MultiPolygon(ps.iter().map(lines).collect::<Option<_>>()?)
            }
            Nested::Coord(_) => return None,
        },
        _ => return None,
    })
}

enum Nested {
    Coord(Coord3),
    List(Vec<Nested>),
}

/// `( … )` at the start of `s`: a list of coordinates or of nested lists; the rest after it.
fn parse_nested(s: &str) -> Option<(Nested, &str)> {
    let mut rest = s.trim_start().strip_prefix('(')?;
    let mut items = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.starts_with('(') {
            let (n, r) = parse_nested(rest)?;
            items.push(n);
            rest = r;
        } else {
            let end = rest.find([',', ')'])?;
            let nums: Vec<f64> = rest[..end]
                .split_whitespace()
                .map(|v| v.parse::<f64>().ok())
                .collect::<Option<_>>()?;
            if nums.len() < 2 {
                return None;
            }
            items.push(Nested::Coord([
                nums[0],
                nums[1],
                nums.get(2).copied().unwrap_or(0.0),
            ]));
            rest = &rest[end..];
        }
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else {
            return Some((Nested::List(items), rest.strip_prefix(')')?));
        }
    }
}

/// A list of v2 documents (areas) as a FeatureCollection when GeoJSON was negotiated (the
/// geometry from the WKT under `geometry_key`), else the v2 answer.
pub fn respond_docs<T: Serialize>(
    n: Negotiated,
    list: &[T],
    geometry_key: &str,
    srid: Srid,
) -> Response {
    if !n.geojson {
        return super::media::json(n, list);
    }
    let mut items = Vec::with_capacity(list.len());
    for doc in list {
        let doc = match serde_json::to_value(doc) {
            Ok(v) => v,
            Err(e) => {
                return ApiError::from(crate::error::EngineError::Internal(e.to_string()))
                    .into_response()
            }
        };
        let geometry = doc
            .get(geometry_key)
            .and_then(|g| g.get("wkt"))
            .and_then(Value::as_str)
            .and_then(geometry_from_wkt);
        let mut out = String::new();
        push_doc_feature(
            &mut out,
            None,
            geometry.as_ref(),
            doc,
            geometry_key,
            Crs::new(srid),
        );
        items.push(out);
    }
    v2_collection(Features::prerendered(items), srid, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(g: &Geometry, crs: Crs) -> Value {
        let mut s = String::new();
        push_geometry(&mut s, g, crs);
        serde_json::from_str(&s).expect("valid JSON")
    }

    #[test]
    fn member_names_are_written_as_serde_json_writes_them_and_selected() {
        let names = [
            "nvdbId",
            "Høyde/bredde",
            "a\"b",
            "back\\slash",
            "tab\there",
            "\u{7f}x",
        ];
        let mut out = String::from("{");
        let mut m = Members {
            keep: &None,
            first: true,
        };
        for (i, n) in names.iter().enumerate() {
            assert!(m.key(&mut out, n));
            out.push_str(&i.to_string());
        }
        out.push('}');
        let want: serde_json::Map<String, Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i.into()))
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&out).expect("JSON"),
            Value::Object(want)
        );
        let keep: Selection = Some(Arc::new(["a\"b".to_string()].into_iter().collect()));
        let mut out = String::from("{");
        let mut m = Members {
            keep: &keep,
            first: true,
        };
        for n in names {
            if m.key(&mut out, n) {
                out.push('1');
            }
        }
        out.push('}');
        assert_eq!(out, r#"{"a\"b":1}"#);
    }

    #[test]
    fn geometries_are_geojson() {
        let crs = Crs::new(Srid::Wgs84);
        let v = written(&Geometry::Point([10.123456789, 63.5, 12.3456]), crs);
        assert_eq!(v["type"], "Point");
        assert_eq!(
            v["coordinates"],
            serde_json::json!([10.12345679, 63.5, 12.346])
        );
        let swapped = written(
            &Geometry::Point([10.0, 63.0, 0.0]),
            Crs {
                srid: Srid::Wgs84,
                lat_lon: true,
            },
        );
        assert_eq!(swapped["coordinates"], serde_json::json!([63, 10, 0]));
        let v = written(
            &Geometry::MultiPolygon(vec![vec![vec![
                [0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                [1.0, 1.0, 0.0],
                [0.0, 0.0, 0.0],
            ]]]),
            Crs::new(Srid::Utm33Etrs89),
        );
        assert_eq!(v["coordinates"][0][0][2], serde_json::json!([1, 1, 0]));
        let mut s = String::new();
        push_num(&mut s, -0.0000001, 3);
        assert_eq!(s, "0");
    }

    #[test]
    fn wkt_reads_back() {
        assert_eq!(
            geometry_from_wkt("POINT Z (10.5 63.25 4)"),
            Some(Geometry::Point([10.5, 63.25, 4.0]))
        );
        assert_eq!(
            geometry_from_wkt("POLYGON ((1 2, 3 2, 3 4, 1 2))"),
            Some(Geometry::MultiPolygon(vec![vec![vec![
                [1.0, 2.0, 0.0],
                [3.0, 2.0, 0.0],
                [3.0, 4.0, 0.0],
                [1.0, 2.0, 0.0]
            ]]]))
        );
        assert!(matches!(
            geometry_from_wkt("MULTILINESTRING ((1 2, 3 4), (5 6, 7 8))"),
            Some(Geometry::MultiLineString(l)) if l.len() == 2
        ));
        assert_eq!(geometry_from_wkt("POINT (1)"), None);
        assert_eq!(geometry_from_wkt("POLYGON ((1 2, 3 4)"), None);
        assert_eq!(geometry_from_wkt("CIRCLE (1 2)"), None);
    }
}
