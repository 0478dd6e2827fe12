//! Data catalogue: /vegobjekttyper (+ /{id}, /{id}/{egenskapstypeid}, /enheter, /datatyper,
//! /kategorier, /versjon), with /datatyper and /kategorier also at the top level.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::api::error::{ApiError, ApiResult};
use crate::api::media::json as respond;
use crate::api::{begin, AppState};
use crate::catalog::{Catalog, ObjectType};

const PARTS: &[&str] = &[
    "egenskapstyper",
    "egenskaper",
    "relasjonstyper",
    "styringsparametere",
    "alle",
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/vegobjekttyper", get(list_object_types))
        .route("/vegobjekttyper/", get(list_object_types))
        .route("/vegobjekttyper/versjon", get(get_catalog_version))
        .route("/vegobjekttyper/enheter", get(list_units))
        .route("/vegobjekttyper/datatyper", get(list_data_types))
        .route("/vegobjekttyper/kategorier", get(list_categories))
        .route("/datatyper", get(list_data_types))
        .route("/kategorier", get(list_categories))
        .route(
            "/vegobjekttyper/egenskapstyper/{egenskapstype}",
            get(get_property_type_by_id),
        )
        .route("/vegobjekttyper/{id}", get(get_object_type))
        .route(
            "/vegobjekttyper/{id}/{egenskapstype}",
            get(get_property_type),
        )
}

fn parse_id(raw: &str, what: &str) -> ApiResult<u32> {
    raw.parse::<u32>()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig {what}: '{raw}'")))
}

/// The type as JSON with only the requested parts (base fields always).
fn type_json(c: &Catalog, t: &ObjectType, parts: &[String], single: bool) -> Value {
    let all = parts.iter().any(|p| p == "alle");
    let want = |p: &str| {
        all || parts
            .iter()
            .any(|x| x == p || (p == "egenskapstyper" && x == "egenskaper"))
    };
    let mut v = serde_json::to_value(t).expect("catalogue types serialize");
    let obj: &mut Map<String, Value> = v.as_object_mut().expect("object");
    for (key, part) in [
        ("egenskapstyper", "egenskapstyper"),
        ("relasjonstyper", "relasjonstyper"),
        ("styringsparametere", "styringsparametere"),
    ] {
        if !want(part) {
            obj.remove(key);
        }
    }
    if single && all {
        let cats: Vec<Value> = t
            .categories
            .iter()
            .filter_map(|id| c.categories.iter().find(|k| k.id == *id))
            .map(|k| serde_json::to_value(k).expect("categories serialize"))
            .collect();
        obj.insert("kategorier".into(), Value::Array(cats));
    } else {
        obj.remove("kategorier");
    }
    v
}

/// GET /vegobjekttyper — all types; `inkluder` adds parts, `kategori` filters by category ids.
#[utoipa::path(get, path = "/vegobjekttyper", tag = "datakatalog",
    params(("inkluder" = Option<String>, Query, description = "egenskapstyper, relasjonstyper, styringsparametere, alle (comma list)"),
           ("kategori" = Option<String>, Query, description = "comma list of category ids")),
    responses((status = 200, description = "Array of road object types", body = [crate::catalog::ObjectType])))]
pub async fn list_object_types(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), &["inkluder", "kategori"])?;
    let parts = p.words("inkluder", PARTS)?;
    let cats: Vec<u32> = p
        .int_list("kategori")?
        .into_iter()
        .map(|c| c as u32)
        .collect();
    let c = s.catalog();
    let list: Vec<Value> = c
        .types
        .iter()
        .filter(|t| cats.is_empty() || t.categories.iter().any(|k| cats.contains(k)))
        .map(|t| type_json(c, t, &parts, false))
        .collect();
    Ok(respond(n, &list))
}

/// GET /vegobjekttyper/{id} — one type; no `inkluder` means everything.
#[utoipa::path(get, path = "/vegobjekttyper/{id}", tag = "datakatalog",
    params(("id" = u32, Path, description = "road object type id"),
           ("inkluder" = Option<String>, Query, description = "egenskapstyper, relasjonstyper, styringsparametere, alle; absent = alle")),
    responses((status = 200, description = "The object type", body = crate::catalog::ObjectType),
               (status = 404, description = "Unknown type (code 4012)")))]
pub async fn get_object_type(
    State(s): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), &["inkluder"])?;
    let id = parse_id(&id, "vegobjekttype-id")?;
    let mut parts = p.words("inkluder", PARTS)?;
    if parts.is_empty() {
        parts.push("alle".into());
    }
    let c = s.catalog();
    let t = c
        .object_type(id)
        .ok_or_else(|| ApiError::not_found(format!("Vegobjekttype {id} finnes ikke")))?;
    Ok(respond(n, &type_json(c, t, &parts, true)))
}

/// GET /vegobjekttyper/{id}/{egenskapstype} — one complete property type.
#[utoipa::path(get, path = "/vegobjekttyper/{id}/{egenskapstype}", tag = "datakatalog",
    params(("id" = u32, Path), ("egenskapstype" = u32, Path)),
    responses((status = 200, description = "The property type", body = crate::catalog::PropertyType),
               (status = 404, description = "Unknown type or property type (code 4012)")))]
pub async fn get_property_type(
    State(s): State<AppState>,
    Path((id, pid)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let (id, pid) = (
        parse_id(&id, "vegobjekttype-id")?,
        parse_id(&pid, "egenskapstype-id")?,
    );
    let t = s
        .catalog()
        .object_type(id)
        .ok_or_else(|| ApiError::not_found(format!("Vegobjekttype {id} finnes ikke")))?;
    let p = t.property(pid).ok_or_else(|| {
        ApiError::not_found(format!(
            "Egenskapstype {pid} finnes ikke på vegobjekttype {id}"
        ))
    })?;
    Ok(respond(n, p))
}

/// GET /vegobjekttyper/egenskapstyper/{egenskapstype} — a property type by its global id.
#[utoipa::path(get, path = "/vegobjekttyper/egenskapstyper/{egenskapstype}", tag = "datakatalog",
    params(("egenskapstype" = u32, Path)),
    responses((status = 200, description = "The property type", body = crate::catalog::PropertyType), (status = 404, description = "Unknown (4012)")))]
pub async fn get_property_type_by_id(
    State(s): State<AppState>,
    Path(pid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let pid = parse_id(&pid, "egenskapstype-id")?;
    let (_, p) = s
        .catalog()
        .property(pid)
        .ok_or_else(|| ApiError::not_found(format!("Egenskapstype {pid} finnes ikke")))?;
    Ok(respond(n, p))
}

/// GET /vegobjekttyper/enheter
#[utoipa::path(get, path = "/vegobjekttyper/enheter", tag = "datakatalog",
    responses((status = 200, description = "Units", body = [crate::catalog::Unit])))]
pub async fn list_units(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    Ok(respond(n, &s.catalog().units))
}

/// GET /vegobjekttyper/datatyper (also /datatyper)
#[utoipa::path(get, path = "/vegobjekttyper/datatyper", tag = "datakatalog",
    responses((status = 200, description = "Data types", body = [crate::catalog::DataType])))]
pub async fn list_data_types(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    Ok(respond(n, &s.catalog().data_types))
}

/// GET /vegobjekttyper/kategorier (also /kategorier)
#[utoipa::path(get, path = "/vegobjekttyper/kategorier", tag = "datakatalog",
    responses((status = 200, description = "Categories", body = [crate::catalog::Category])))]
pub async fn list_categories(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    Ok(respond(n, &s.catalog().categories))
}

/// GET /vegobjekttyper/versjon — `{"versjon": "2.38"}`; JAVA clients send it back as
/// X-Datakatalog-Versjon.
#[utoipa::path(get, path = "/vegobjekttyper/versjon", tag = "datakatalog",
    responses((status = 200, description = "Catalogue version, e.g. {\"versjon\": \"2.38\"}")))]
pub async fn get_catalog_version(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    Ok(respond(
        n,
        &json!({ "versjon": s.catalog().version.version }),
    ))
}
