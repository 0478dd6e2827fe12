//! OGC API Features — Part 1 Core and Part 2 Coordinate Reference Systems by Reference — under
//! `/ogc`, over the served generation.
//!
//! - `/ogc` landing page, `/ogc/conformance`, `/ogc/api` (an OpenAPI 3.0 description of these
//!   paths), `/ogc/collections`, `/ogc/collections/{id}`, `/ogc/collections/{id}/items`,
//!   `/ogc/collections/{id}/items/{featureId}`.
//! - Collections: `vegnett` (the road network: one feature per link segment row, id its
//!   `kortform` `from-to@link`), and one per road object type that has objects in the
//!   generation, id the type id (`105`), title its name; feature ids are `nvdbId`s. A feature is
//!   the one the GeoJSON answers of the v2 API write (`api::geojson`).
//! - `items`: `limit` (default 100, larger values are served as 10,000), `offset`
//!   (`next`/`prev` links carry it; a new generation between two pages may shift them),
//!   `bbox` (4 or 6 numbers) in `bbox-crs`, `crs` for the output, `datetime` only open
//!   (`..`, `../..`), and property filters as plain parameters: a property type's name
//!   (case-insensitive) or id, `=` a value — for enumerations the value's name, number or
//!   id (`?Fartsgrense=80`), else the number or the text; several are AND-ed. Anything else
//!   is 400.
//! - CRS: `http://www.opengis.net/def/crs/OGC/1.3/CRS84` (default, lon/lat) and
//!   `http://www.opengis.net/def/crs/EPSG/0/{4326,25833,32633}`; EPSG:4326 is written in its
//!   axis order (latitude, longitude), as Part 2 requires. The answer names its CRS in
//!   `Content-Crs`. `storageCrs` is 25833 (UTM 33 numbers; 32633 is the same numbers).
//! - Encodings: JSON (GeoJSON for features) and HTML, chosen by `f=json|html`, else by
//!   `Accept` (`text/html` first → HTML).
//! - Errors: `{"code": "...", "description": "..."}` with 400 (bad parameter) or 404.

mod html;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use super::geojson::{self, Crs, Features};
use super::media::GEOJSON;
use super::read::vegnett::link_features;
use super::AppState;
use crate::catalog::{ObjectType, ValueKind};
use crate::generation::Generation;
use crate::geo::srid::{to_storage, Srid};
use crate::query::egenskap;
use crate::query::network::NetworkAreaFilter;
use crate::query::objects::ObjectFilter;
use crate::query::vegref::link_range_short;

pub const BASE: &str = "/ogc";
pub const NETWORK: &str = "vegnett";
pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 10_000;
const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";
const EPSG: &str = "http://www.opengis.net/def/crs/EPSG/0/";
const CONTENT_CRS: HeaderName = HeaderName::from_static("content-crs");
const OPENAPI_TYPE: &str = "application/vnd.oai.openapi+json;version=3.0";

pub const CONFORMANCE: &[&str] = &[
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ogc", get(landing))
        .route("/ogc/", get(landing))
        .route("/ogc/api", get(api))
        .route("/ogc/conformance", get(conformance))
        .route("/ogc/collections", get(collections))
        .route("/ogc/collections/{cid}", get(collection))
        .route("/ogc/collections/{cid}/items", get(items))
        .route("/ogc/collections/{cid}/items/{fid}", get(item))
}

/// An OGC API error: `{"code", "description"}` with its status.
#[derive(Debug)]
pub struct OgcError {
    pub status: StatusCode,
    pub code: &'static str,
    pub description: String,
}

impl OgcError {
    fn bad(description: impl Into<String>) -> OgcError {
        OgcError {
            status: StatusCode::BAD_REQUEST,
            code: "InvalidParameterValue",
            description: description.into(),
        }
    }
    fn not_found(description: impl Into<String>) -> OgcError {
        OgcError {
            status: StatusCode::NOT_FOUND,
            code: "NotFound",
            description: description.into(),
        }
    }
}

impl From<crate::error::EngineError> for OgcError {
    fn from(e: crate::error::EngineError) -> OgcError {
        let e = super::error::ApiError::from(e);
        OgcError {
            status: if e.status.is_client_error() {
                StatusCode::BAD_REQUEST
            } else {
                e.status
            },
            code: if e.status.is_client_error() {
                "InvalidParameterValue"
            } else {
                "ServerError"
            },
            description: e.message,
        }
    }
}

impl From<super::error::ApiError> for OgcError {
    fn from(e: super::error::ApiError) -> OgcError {
        OgcError {
            status: e.status,
            code: if e.status.is_client_error() {
                "InvalidParameterValue"
            } else {
                "ServerError"
            },
            description: e.message,
        }
    }
}

impl IntoResponse for OgcError {
    fn into_response(self) -> Response {
        let body = json!({"code": self.code, "description": self.description});
        let mut r = (self.status, body.to_string()).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    }
}

type OgcResult<T> = Result<T, OgcError>;

/// The query's parameters in order.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(q: Option<&str>) -> Query {
        Query(
            form_urlencoded::parse(q.unwrap_or("").as_bytes())
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    /// Refuse parameters outside `allowed`.
    fn only(&self, allowed: &[&str]) -> OgcResult<()> {
        match self.0.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((k, _)) => Err(OgcError::bad(format!("unknown parameter '{k}'"))),
            None => Ok(()),
        }
    }
    /// The query with `name` set to `value` (or removed), others kept in order.
    fn with(&self, name: &str, value: Option<&str>) -> String {
        let mut ser = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.0 {
            if k != name {
                ser.append_pair(k, v);
            }
        }
        if let Some(v) = value {
            ser.append_pair(name, v);
        }
        ser.finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Json,
    Html,
}

fn encoding(q: &Query, headers: &HeaderMap) -> OgcResult<Encoding> {
    match q.get("f") {
        Some("json") | Some("geojson") => return Ok(Encoding::Json),
        Some("html") => return Ok(Encoding::Html),
        Some(other) => {
            return Err(OgcError::bad(format!(
                "f must be json or html, not '{other}'"
            )))
        }
        None => {}
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let first = accept
        .split(',')
        .map(|r| r.split(';').next().unwrap_or("").trim())
        .find(|r| !r.is_empty() && !r.contains('*'));
    Ok(match first {
        Some(t) if t.eq_ignore_ascii_case("text/html") => Encoding::Html,
        _ => Encoding::Json,
    })
}

fn ogc_url(s: &AppState, path: &str) -> String {
    format!("{}{BASE}{path}", s.public_url())
}

fn link(href: String, rel: &str, kind: &str, title: &str) -> Value {
    json!({"href": href, "rel": rel, "type": kind, "title": title})
}

fn json_response(v: &Value, content_type: &'static str) -> Response {
    let mut r = v.to_string().into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn html_response(text: String) -> Response {
    let mut r = text.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html;charset=utf-8"),
    );
    r
}

fn respond(r: OgcResult<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

async fn landing(State(s): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    respond((|| {
        let q = Query::parse(q.as_deref());
        q.only(&["f"])?;
        let enc = encoding(&q, &headers)?;
        let doc = json!({
            "title": "vegdb — NVDB road data as OGC API Features",
            "description": "The road network and the road objects of the served generation.",
            "links": [
                link(ogc_url(&s, "?f=json"), if enc == Encoding::Json { "self" } else { "alternate" }, "application/json", "This document"),
                link(ogc_url(&s, "?f=html"), if enc == Encoding::Html { "self" } else { "alternate" }, "text/html", "This document as HTML"),
                link(ogc_url(&s, "/api"), "service-desc", OPENAPI_TYPE, "The API definition"),
                link(ogc_url(&s, "?f=html"), "service-doc", "text/html", "The API documentation"),
                link(ogc_url(&s, "/conformance"), "conformance", "application/json", "Conformance classes"),
                link(ogc_url(&s, "/collections"), "data", "application/json", "Collections"),
            ]
        });
        Ok(match enc {
            Encoding::Json => json_response(&doc, "application/json"),
            Encoding::Html => html_response(html::landing(&doc)),
        })
    })())
}

async fn conformance(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond((|| {
        let q = Query::parse(q.as_deref());
        q.only(&["f"])?;
        let doc = json!({"conformsTo": CONFORMANCE});
        Ok(match encoding(&q, &headers)? {
            Encoding::Json => json_response(&doc, "application/json"),
            Encoding::Html => html_response(html::conformance(&s, CONFORMANCE)),
        })
    })())
}

/// The extent of the data: the bounding box of the municipalities (lon/lat), computed once.
fn extent(s: &AppState) -> [f64; 4] {
    static EXTENT: std::sync::OnceLock<[f64; 4]> = std::sync::OnceLock::new();
    *EXTENT.get_or_init(|| {
        use geo::BoundingRect;
        let mut b = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for m in &s.areas().municipalities {
            if let Some(r) = m.shape.bounding_rect() {
                for (x, y) in [
                    (r.min().x, r.min().y),
                    (r.max().x, r.max().y),
                    (r.min().x, r.max().y),
                    (r.max().x, r.min().y),
                ] {
                    if let Ok((lon, lat)) = crate::geo::srid::from_storage(Srid::Wgs84, x, y) {
                        b = [b[0].min(lon), b[1].min(lat), b[2].max(lon), b[3].max(lat)];
                    }
                }
            }
        }
        b
    })
}

/// The collections of the generation: (id, title, description), the network first.
fn collection_list(g: &Generation) -> Vec<(String, String, String)> {
    let mut out = vec![(
        NETWORK.to_string(),
        "Vegnett".to_string(),
        "The road network: one feature per road link segment (a link, or the part of a link with one road reference).".to_string(),
    )];
    for (&t, d) in &g.objects {
        if d.table.is_empty() {
            continue;
        }
        if let Some(ot) = g.catalog.object_type(t) {
            out.push((t.to_string(), ot.name.clone(), ot.description.clone()));
        }
    }
    out
}

fn crs_list() -> Vec<String> {
    vec![
        CRS84.to_string(),
        format!("{EPSG}4326"),
        format!("{EPSG}25833"),
        format!("{EPSG}32633"),
    ]
}

fn collection_doc(s: &AppState, (id, title, description): &(String, String, String)) -> Value {
    let e = extent(s);
    let base = format!("/collections/{id}");
    json!({
        "id": id,
        "title": title,
        "description": description,
        "itemType": "feature",
        "extent": {"spatial": {"bbox": [e], "crs": CRS84}},
        "crs": crs_list(),
        "storageCrs": format!("{EPSG}25833"),
        "links": [
            link(ogc_url(s, &base), "self", "application/json", title),
            link(ogc_url(s, &format!("{base}?f=html")), "alternate", "text/html", title),
            link(ogc_url(s, &format!("{base}/items")), "items", GEOJSON, "Features as GeoJSON"),
            link(ogc_url(s, &format!("{base}/items?f=html")), "items", "text/html", "Features as HTML"),
        ]
    })
}

async fn collections(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond((|| {
        let q = Query::parse(q.as_deref());
        q.only(&["f"])?;
        let enc = encoding(&q, &headers)?;
        let g = s.store.current();
        let list: Vec<Value> = collection_list(&g)
            .iter()
            .map(|c| collection_doc(&s, c))
            .collect();
        let doc = json!({
            "links": [
                link(ogc_url(&s, "/collections"), "self", "application/json", "Collections"),
                link(ogc_url(&s, "/collections?f=html"), "alternate", "text/html", "Collections as HTML"),
            ],
            "crs": crs_list(),
            "collections": list,
        });
        Ok(match enc {
            Encoding::Json => json_response(&doc, "application/json"),
            Encoding::Html => html_response(html::collections(&doc)),
        })
    })())
}

fn find_collection(g: &Generation, cid: &str) -> OgcResult<(String, String, String)> {
    collection_list(g)
        .into_iter()
        .find(|c| c.0 == cid)
        .ok_or_else(|| OgcError::not_found(format!("no collection '{cid}'")))
}

async fn collection(
    State(s): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond((|| {
        let q = Query::parse(q.as_deref());
        q.only(&["f"])?;
        let enc = encoding(&q, &headers)?;
        let g = s.store.current();
        let doc = collection_doc(&s, &find_collection(&g, &cid)?);
        Ok(match enc {
            Encoding::Json => json_response(&doc, "application/json"),
            Encoding::Html => html_response(html::collection(&doc)),
        })
    })())
}

/// A CRS URI → the output system (EPSG:4326 in lat, lon order).
fn parse_crs(uri: &str) -> OgcResult<Crs> {
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

fn crs_uri(c: Crs) -> String {
    match (c.srid, c.lat_lon) {
        (Srid::Wgs84, false) => CRS84.to_string(),
        (srid, _) => format!("{EPSG}{}", srid.code()),
    }
}

/// `bbox` in `bbox-crs` → storage coordinates.
fn parse_bbox(text: &str, crs: Crs) -> OgcResult<[f64; 4]> {
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
    let mut out = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    for (x, y) in [(x0, y0), (x1, y0), (x0, y1), (x1, y1)] {
        let (sx, sy) = to_storage(crs.srid, x, y)?;
        out = [
            out[0].min(sx),
            out[1].min(sy),
            out[2].max(sx),
            out[3].max(sy),
        ];
    }
    Ok(out)
}

/// The `egenskap` expression of the property-filter parameters of type `t`.
fn property_filter(
    t: &ObjectType,
    filters: &[(String, String)],
) -> OgcResult<Option<egenskap::Expr>> {
    let mut conds = Vec::new();
    for (k, v) in filters {
        let p = t
            .property_types
            .iter()
            .find(|p| {
                !p.is_geometry()
                    && p.sensitivity == 0
                    && (p.name.eq_ignore_ascii_case(k) || p.id.to_string() == *k)
            })
            .ok_or_else(|| {
                OgcError::bad(format!(
                    "unknown parameter '{k}' (not a parameter of items, nor a property of {})",
                    t.name
                ))
            })?;
        let cond = match p.storage() {
            ValueKind::Enum => {
                let number = v.trim().parse::<f64>().ok();
                let av = p
                    .allowed_values
                    .iter()
                    .flatten()
                    .find(|a| {
                        a.name.eq_ignore_ascii_case(v.trim())
                            || a.id.to_string() == v.trim()
                            || (number.is_some() && a.number == number)
                    })
                    .ok_or_else(|| OgcError::bad(format!("'{v}' is not a value of {}", p.name)))?;
                format!("{}={}", p.id, av.id)
            }
            ValueKind::Integer | ValueKind::Float => {
                let n = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| {
                        OgcError::bad(format!("{} takes a number, not '{v}'", p.name))
                    })?;
                format!("{}={n}", p.id)
            }
            ValueKind::Text | ValueKind::Geometry => {
                if v.contains('"') {
                    return Err(OgcError::bad(format!(
                        "{}: a value with '\"' is not supported",
                        p.name
                    )));
                }
                format!("{}=\"{v}\"", p.id)
            }
        };
        conds.push(cond);
    }
    if conds.is_empty() {
        return Ok(None);
    }
    let expr = egenskap::parse(&conds.join(" AND "))?;
    egenskap::check(&expr, crate::catalog::Catalog::embedded(), t)?;
    Ok(Some(expr))
}

const ITEM_PARAMS: &[&str] = &[
    "f", "limit", "offset", "bbox", "bbox-crs", "crs", "datetime",
];

async fn items(
    State(s): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond(items_inner(&s, &cid, &headers, q.as_deref()))
}

fn items_inner(
    s: &AppState,
    cid: &str,
    headers: &HeaderMap,
    q: Option<&str>,
) -> OgcResult<Response> {
    let q = Query::parse(q);
    let enc = encoding(&q, headers)?;
    let g = s.store.current();
    let (id, title, _) = find_collection(&g, cid)?;
    let limit = match q.get("limit") {
        None => DEFAULT_LIMIT,
        Some(l) => match l.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n.min(MAX_LIMIT),
            _ => {
                return Err(OgcError::bad(format!(
                    "limit must be a positive integer, not '{l}'"
                )))
            }
        },
    };
    let offset = match q.get("offset") {
        None => 0,
        Some(o) => o.trim().parse::<u64>().map_err(|_| {
            OgcError::bad(format!("offset must be a non-negative integer, not '{o}'"))
        })?,
    };
    let crs = q
        .get("crs")
        .map(parse_crs)
        .transpose()?
        .unwrap_or(Crs::new(Srid::Wgs84));
    let bbox_crs = q
        .get("bbox-crs")
        .map(parse_crs)
        .transpose()?
        .unwrap_or(Crs::new(Srid::Wgs84));
    let bbox = q.get("bbox").map(|b| parse_bbox(b, bbox_crs)).transpose()?;
    if let Some(d) = q.get("datetime") {
        if !matches!(d.trim(), ".." | "../..") {
            return Err(OgcError::bad(
                "datetime: the collections have no temporal extent; only '..' is accepted",
            ));
        }
    }
    let filters: Vec<(String, String)> =
        q.0.iter()
            .filter(|(k, _)| !ITEM_PARAMS.contains(&k.as_str()))
            .cloned()
            .collect();
    let (rows, features_of): (roaring::RoaringBitmap, Box<dyn Fn(Vec<u32>) -> Features>) =
        if id == NETWORK {
            if let Some((k, _)) = filters.first() {
                return Err(OgcError::bad(format!("unknown parameter '{k}'")));
            }
            let rows = g.select_segments(&NetworkAreaFilter {
                any_of: Vec::new(),
                roads: Vec::new(),
                bbox,
            });
            let (s2, g2) = (s.clone(), g.clone());
            (
                rows,
                Box::new(move |page| link_features(s2.clone(), g2.clone(), page, crs)),
            )
        } else {
            let tid: u32 = id
                .parse()
                .map_err(|_| OgcError::not_found(format!("no collection '{id}'")))?;
            let data = g
                .objects
                .get(&tid)
                .cloned()
                .ok_or_else(|| OgcError::not_found(format!("no collection '{id}'")))?;
            let t = g
                .catalog
                .object_type(tid)
                .ok_or_else(|| OgcError::not_found(format!("no collection '{id}'")))?;
            let filter = ObjectFilter {
                bbox,
                egenskap: property_filter(t, &filters)?,
                ..Default::default()
            };
            let rows = g.select_objects(&data, &filter);
            let g2 = g.clone();
            (
                rows,
                Box::new(move |page| {
                    Features::objects(g2.clone(), Some(data.clone()), page, crs, false)
                }),
            )
        };
    let matched = rows.len();
    let end = (offset.saturating_add(limit as u64)).min(matched);
    let page: Vec<u32> = (offset.min(end)..end)
        .filter_map(|k| rows.select(k as u32))
        .collect();
    let returned = page.len() as u64;
    let path = format!("/collections/{id}/items");
    let href = |q: String| ogc_url(s, &format!("{path}?{q}"));
    let mut links = vec![
        link(
            href(q.with("f", Some("json"))),
            if enc == Encoding::Json {
                "self"
            } else {
                "alternate"
            },
            GEOJSON,
            "This page as GeoJSON",
        ),
        link(
            href(q.with("f", Some("html"))),
            if enc == Encoding::Html {
                "self"
            } else {
                "alternate"
            },
            "text/html",
            "This page as HTML",
        ),
        link(
            ogc_url(s, &format!("/collections/{id}")),
            "collection",
            "application/json",
            &title,
        ),
    ];
    let mut page_link = |rel: &str, at: u64| {
        let with_offset = Query(
            q.0.iter()
                .filter(|(k, _)| k != "offset")
                .cloned()
                .chain(std::iter::once(("offset".to_string(), at.to_string())))
                .collect(),
        );
        let kind = if enc == Encoding::Html {
            "text/html"
        } else {
            GEOJSON
        };
        links.push(link(
            href(with_offset.with("limit", Some(&limit.to_string()))),
            rel,
            kind,
            rel,
        ));
    };
    if offset + returned < matched {
        page_link("next", offset + returned);
    }
    if offset > 0 {
        page_link("prev", offset.saturating_sub(limit as u64));
    }
    let features = features_of(page);
    let uri = crs_uri(crs);
    match enc {
        Encoding::Json => {
            let mut m = Map::new();
            m.insert(
                "timeStamp".into(),
                chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    .into(),
            );
            m.insert("numberMatched".into(), matched.into());
            m.insert("numberReturned".into(), returned.into());
            m.insert("links".into(), links.into());
            let crs_header = HeaderValue::from_str(&format!("<{uri}>"))
                .map_err(|e| OgcError::bad(e.to_string()))?;
            Ok(geojson::collection(
                m,
                features,
                GEOJSON,
                &[(CONTENT_CRS, crs_header)],
            ))
        }
        Encoding::Html => {
            let mut items = Vec::with_capacity(features.count());
            for i in 0..features.count() {
                let mut out = String::new();
                features.write(i, &mut out)?;
                items.push(
                    serde_json::from_str::<Value>(&out)
                        .map_err(|e| OgcError::bad(e.to_string()))?,
                );
            }
            Ok(html_response(html::items(
                &title, &id, &items, &links, matched, offset,
            )))
        }
    }
}

async fn item(
    State(s): State<AppState>,
    Path((cid, fid)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond(item_inner(&s, &cid, &fid, &headers, q.as_deref()))
}

fn item_inner(
    s: &AppState,
    cid: &str,
    fid: &str,
    headers: &HeaderMap,
    q: Option<&str>,
) -> OgcResult<Response> {
    let q = Query::parse(q);
    q.only(&["f", "crs"])?;
    let enc = encoding(&q, headers)?;
    let crs = q
        .get("crs")
        .map(parse_crs)
        .transpose()?
        .unwrap_or(Crs::new(Srid::Wgs84));
    let g = s.store.current();
    let (id, title, _) = find_collection(&g, cid)?;
    let missing = || OgcError::not_found(format!("no feature '{fid}' in collection '{id}'"));
    let mut out = String::new();
    if id == NETWORK {
        let link_id: u64 = fid
            .rsplit_once('@')
            .and_then(|(_, l)| l.parse().ok())
            .ok_or_else(missing)?;
        let row = g
            .segments_of_link(link_id)
            .find(|l| link_range_short(l.from_pos(), l.to_pos(), link_id) == fid)
            .ok_or_else(missing)?
            .row();
        link_features(s.clone(), g.clone(), vec![row as u32], crs).write(0, &mut out)?;
    } else {
        let tid: u32 = id.parse().map_err(|_| missing())?;
        let oid: u64 = fid.parse().map_err(|_| missing())?;
        let (data, row) = g
            .object_row(crate::ids::TypeId(tid), crate::ids::ObjectId(oid))
            .ok_or_else(missing)?;
        geojson::push_object(&mut out, &g, data, row, crs, false)?;
    }
    let self_path = format!("/collections/{id}/items/{fid}");
    let links = vec![
        link(
            ogc_url(s, &format!("{self_path}?f=json")),
            if enc == Encoding::Json {
                "self"
            } else {
                "alternate"
            },
            GEOJSON,
            "This feature as GeoJSON",
        ),
        link(
            ogc_url(s, &format!("{self_path}?f=html")),
            if enc == Encoding::Html {
                "self"
            } else {
                "alternate"
            },
            "text/html",
            "This feature as HTML",
        ),
        link(
            ogc_url(s, &format!("/collections/{id}")),
            "collection",
            "application/json",
            &title,
        ),
    ];
    let mut feature: Value =
        serde_json::from_str(&out).map_err(|e| OgcError::bad(e.to_string()))?;
    if let Some(m) = feature.as_object_mut() {
        m.insert("links".into(), links.into());
    }
    match enc {
        Encoding::Json => {
            let mut r = json_response(&feature, GEOJSON);
            if let Ok(v) = HeaderValue::from_str(&format!("<{}>", crs_uri(crs))) {
                r.headers_mut().insert(CONTENT_CRS, v);
            }
            Ok(r)
        }
        Encoding::Html => Ok(html_response(html::item(&title, &id, &feature))),
    }
}

/// `/ogc/api`: the OpenAPI 3.0 description of the OGC paths.
async fn api(State(s): State<AppState>) -> Response {
    let param = |name: &str, schema: Value, description: &str| json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description});
    let f = param(
        "f",
        json!({"type": "string", "enum": ["json", "html"]}),
        "encoding",
    );
    let cid = json!({"name": "collectionId", "in": "path", "required": true, "schema": {"type": "string"}});
    let ok = |d: &str| json!({"200": {"description": d}, "400": {"description": "bad parameter"}, "404": {"description": "not found"}});
    let doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "vegdb OGC API Features", "version": env!("CARGO_PKG_VERSION")},
        "servers": [{"url": ogc_url(&s, "")}],
        "paths": {
            "/": {"get": {"operationId": "getLandingPage", "parameters": [f.clone()], "responses": ok("landing page")}},
            "/conformance": {"get": {"operationId": "getConformance", "parameters": [f.clone()], "responses": ok("conformance classes")}},
            "/collections": {"get": {"operationId": "getCollections", "parameters": [f.clone()], "responses": ok("collections")}},
            "/collections/{collectionId}": {"get": {"operationId": "describeCollection", "parameters": [cid.clone(), f.clone()], "responses": ok("a collection")}},
            "/collections/{collectionId}/items": {"get": {"operationId": "getFeatures", "parameters": [
                cid.clone(), f.clone(),
                param("limit", json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}), "page size"),
                param("offset", json!({"type": "integer", "minimum": 0, "default": 0}), "features to skip"),
                param("bbox", json!({"type": "array", "minItems": 4, "maxItems": 6, "items": {"type": "number"}}), "bounding box in bbox-crs"),
                param("bbox-crs", json!({"type": "string", "format": "uri"}), "CRS of bbox"),
                param("crs", json!({"type": "string", "format": "uri"}), "CRS of the answer"),
                param("datetime", json!({"type": "string"}), "only '..'"),
            ], "responses": ok("features")}},
            "/collections/{collectionId}/items/{featureId}": {"get": {"operationId": "getFeature", "parameters": [
                cid, f, json!({"name": "featureId", "in": "path", "required": true, "schema": {"type": "string"}}),
                param("crs", json!({"type": "string", "format": "uri"}), "CRS of the answer"),
            ], "responses": ok("a feature")}},
        }
    });
    json_response(&doc, OPENAPI_TYPE)
}
