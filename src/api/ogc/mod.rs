//! OGC API Features — Part 1 Core, Part 2 Coordinate Reference Systems by Reference and
//! Part 3 Filtering (CQL2) — under
//! `/ogc`, over the served generation.
//!
//! - `/ogc` landing page, `/ogc/conformance`, `/ogc/api` (an OpenAPI 3.0 description of these
//!   paths), `/ogc/collections`, `/ogc/collections/{id}`, `/ogc/collections/{id}/items`,
//!   `/ogc/collections/{id}/items/{featureId}`, `/ogc/collections/{id}/queryables`.
//! - Collections: `vegnett` (the road network: one feature per link segment row, id its
//!   `kortform` `from-to@link`), and one per road object type that has objects in the
//!   generation, id the type id (`105`), title its name; feature ids are `nvdbId`s. A feature is
//!   the one the GeoJSON answers of the v2 API write (`api::geojson`).
//! - `items`: `limit` (default 100, larger values are served as 10,000), `offset`
//!   (`next`/`prev` links carry it; a new generation between two pages may shift them),
//!   `bbox` (4 or 6 numbers) in `bbox-crs`, `crs` for the output, `datetime` (an instant: the
//!   features valid that day; an interval: every version valid in it — `datetime.rs`), and
//!   property filters as plain parameters: a property type's name
//!   (case-insensitive) or id, `=` a value — for enumerations the value's name, number or
//!   id (`?Fartsgrense=80`), else the number or the text; several are AND-ed. Anything else
//!   is 400.
//! - CRS: `http://www.opengis.net/def/crs/OGC/1.3/CRS84` (default, lon/lat) and
//!   `http://www.opengis.net/def/crs/EPSG/0/{4326,25833,32633}`; EPSG:4326 is written in its
//!   axis order (latitude, longitude), as Part 2 requires. The answer names its CRS in
//!   `Content-Crs`. `storageCrs` is 25833 (UTM 33 numbers; 32633 is the same numbers).
//! - Encodings: JSON (GeoJSON for features) and HTML, chosen by `f=json|html`, else by
//!   `Accept` (`text/html` first → HTML).
//! - Part 3 (Filtering): `filter` in CQL2 (`filter-lang` `cql2-text`, the default, or
//!   `cql2-json`; geometries in `filter-crs`, default CRS84) on the object collections, AND-ed
//!   with the other parameters (`cql2/`), and `/ogc/collections/{id}/queryables`
//!   (`queryables.rs`).
//! - Part 6 (Property Selection, draft): `properties` on `items` and one feature, the property
//!   names each feature carries (`properties.rs`).
//! - Errors: `{"code": "...", "description": "..."}` with 400 (bad parameter) or 404.
//!
//! This file: routes, the query and encoding shared by every path, the landing page,
//! conformance and `/ogc/api`. `collections.rs`, `items.rs` (features), `crs.rs`, `error.rs`,
//! `html.rs` (the HTML encoding).

mod collections;
mod cql2;
mod crs;
mod datetime;
mod error;
mod html;
mod items;
mod properties;
mod queryables;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::state::AppState;
use collections::{collection, collections};
pub use error::OgcError;
use error::OgcResult;
use items::{item, items};

pub const BASE: &str = "/ogc";
pub const NETWORK: &str = "vegnett";
pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 10_000;
const CONTENT_CRS: HeaderName = HeaderName::from_static("content-crs");
const OPENAPI_TYPE: &str = "application/vnd.oai.openapi+json;version=3.0";

pub const CONFORMANCE: &[&str] = &[
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
    "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
    "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter",
    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
    "http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
    "http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2",
    "http://www.opengis.net/spec/cql2/1.0/conf/advanced-comparison-operators",
    "http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions",
    "http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions-plus",
    "http://www.opengis.net/spec/cql2/1.0/conf/spatial-functions",
    "http://www.opengis.net/spec/cql2/1.0/conf/temporal-functions",
    "http://www.opengis.net/spec/ogcapi-features-8/1.0/conf/sorting",
    "http://www.opengis.net/spec/ogcapi-features-6/1.0/conf/properties",
    "http://www.opengis.net/spec/ogcapi-features-6/1.0/conf/properties-features",
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
        .route(
            "/ogc/collections/{cid}/queryables",
            get(queryables::queryables),
        )
        .route("/ogc/collections/{cid}/items/{fid}", get(item))
}
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
            Some((k, _)) => Err(OgcError::bad(format!(
                "unknown parameter '{}'",
                crate::api::error::echoed(k)
            ))),
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

impl Encoding {
    /// The relation of a link to this document in encoding `of`: `self` when it is the one
    /// answered, else `alternate`.
    fn rel(self, of: Encoding) -> &'static str {
        if self == of {
            "self"
        } else {
            "alternate"
        }
    }
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

/// Answer a path whose only parameter is `f`: `doc(encoding)` as JSON, or `page` of it as HTML.
fn document(
    q: Option<&str>,
    headers: &HeaderMap,
    doc: impl FnOnce(Encoding) -> OgcResult<Value>,
    page: impl FnOnce(&Value) -> String,
) -> Response {
    respond((|| {
        let q = Query::parse(q);
        q.only(&["f"])?;
        let enc = encoding(&q, headers)?;
        let doc = doc(enc)?;
        Ok(match enc {
            Encoding::Json => json_response(&doc, "application/json"),
            Encoding::Html => html_response(page(&doc)),
        })
    })())
}

async fn landing(State(s): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    document(
        q.as_deref(),
        &headers,
        |enc| {
            Ok(json!({
                "title": "vegdb — NVDB road data as OGC API Features",
                "description": "The road network and the road objects of the served generation.",
                "links": [
                    link(ogc_url(&s, "?f=json"), enc.rel(Encoding::Json), "application/json", "This document"),
                    link(ogc_url(&s, "?f=html"), enc.rel(Encoding::Html), "text/html", "This document as HTML"),
                    link(ogc_url(&s, "/api"), "service-desc", OPENAPI_TYPE, "The API definition"),
                    link(ogc_url(&s, "?f=html"), "service-doc", "text/html", "The API documentation"),
                    link(ogc_url(&s, "/conformance"), "conformance", "application/json", "Conformance classes"),
                    link(ogc_url(&s, "/collections"), "data", "application/json", "Collections"),
                ]
            }))
        },
        html::landing,
    )
}

async fn conformance(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    document(
        q.as_deref(),
        &headers,
        |_| Ok(json!({"conformsTo": CONFORMANCE})),
        |_| html::conformance(&s, CONFORMANCE),
    )
}

/// What `/ogc/api` says of `datetime` (`datetime.rs`).
const DATETIME_DOC: &str = "Either an instant, a date (2019-06-01) or an RFC 3339 date-time \
(its date is taken): the features valid on that day (the data as it was then); or an interval \
a/b, ../b or a/.. of them (days included): every version of the objects whose validity \
[startdato, sluttdato) meets it, in (nvdbId, versjon) order, bbox and property filters \
selecting among them. Intervals are served on the object collections, not on vegnett. \
Without it: today.";

/// What `/ogc/api` says of `filter` (`cql2`).
const FILTER_DOC: &str = "A CQL2 expression (OGC API Features Part 3) over the collection's \
queryables (/collections/{collectionId}/queryables: the property types by name, enumerations by \
the value the features show, and geometry, nvdbId, versjon, startdato, sluttdato): = <> < > <= >=, \
AND, OR, NOT, LIKE, IN, BETWEEN, IS NULL, S_INTERSECTS, S_WITHIN and the other S_ functions \
with WKT (cql2-text) or GeoJSON (cql2-json) geometries or BBOX, and the T_ functions over \
DATE, TIMESTAMP, INTERVAL and startdato/sluttdato. Three-valued logic: comparisons with a \
missing value are unknown and not answered. A polygon ring that crosses or touches itself, \
rings that cross each other or a hole outside its exterior is 400. Object collections only; at most 8,192 characters, 32 levels, 256 predicates, 10,000 \
coordinates.";

/// What `/ogc/api` says of `properties` (`properties.rs`).
const PROPERTIES_DOC: &str = "Property selection (OGC API Features Part 6): the properties each \
feature carries, comma-separated; the others are left out (geometry and id stay). Object \
collections: nvdbId, vegobjekttype, vegobjekttypenavn, versjon, egengeometri and the property \
types by name (an enumeration's <name>_id beside it); vegnett: the members of the v2 link \
document but geometri. Matched as written, else ignoring case; an unknown name is 400; an \
empty value leaves the properties empty.";

/// `/ogc/api`: the OpenAPI 3.0 description of the OGC paths.
async fn api(State(s): State<AppState>) -> Response {
    let param = |name: &str, schema: Value, description: &str| json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description});
    let f = param(
        "f",
        json!({"type": "string", "enum": ["json", "html"]}),
        "encoding",
    );
    let cid = json!({"name": "collectionId", "in": "path", "required": true, "schema": {"type": "string"}});
    let properties = json!({"name": "properties", "in": "query", "required": false, "style": "form", "explode": false, "schema": {"type": "array", "items": {"type": "string"}}, "description": PROPERTIES_DOC});
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
                param("datetime", json!({"type": "string"}), DATETIME_DOC),
                param("filter", json!({"type": "string"}), FILTER_DOC),
                param("filter-lang", json!({"type": "string", "enum": ["cql2-text", "cql2-json", "cql-text"], "default": "cql2-text"}), "language of filter (cql-text: the draft's name of cql2-text, as GDAL before 3.7 sends it)"),
                param("filter-crs", json!({"type": "string", "format": "uri"}), "CRS of the filter's geometries (default CRS84)"),
                param("sortby", json!({"type": "array", "items": {"type": "string"}}), "queryables to sort by, comma-separated, each +name (ascending, the default) or -name (descending); missing values last (first when descending), then the collection's order. Object collections only."),
                properties.clone(),
            ], "responses": ok("features")}},
            "/collections/{collectionId}/queryables": {"get": {"operationId": "getQueryables", "parameters": [cid.clone()], "responses": ok("the collection's queryables as a JSON Schema (application/schema+json)")}},
            "/collections/{collectionId}/items/{featureId}": {"get": {"operationId": "getFeature", "parameters": [
                cid, f, json!({"name": "featureId", "in": "path", "required": true, "schema": {"type": "string"}}),
                param("crs", json!({"type": "string", "format": "uri"}), "CRS of the answer"),
                properties,
            ], "responses": ok("a feature")}},
        }
    });
    json_response(&doc, OPENAPI_TYPE)
}
