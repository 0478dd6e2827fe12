//! Data catalogue: /vegobjekttyper (+ /{id}, /{id}/{egenskapstypeid}, /enheter, /datatyper,
//! /kategorier, /versjon), with /datatyper and /kategorier also at the top level.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::api::catalog_docs::{
    AllowedValueDoc, CatalogVersionDoc, CategoryDoc, DataTypeDoc, PlacementDoc, PropertyControlDoc,
    RelationTypesDoc, TypeControlDoc, UnitDoc,
};
use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin;
use crate::api::media::{respond, respond_named, Negotiated};
use crate::api::query_doc::NoQuery;
use crate::api::state::AppState;
use crate::catalog::{Catalog, ObjectType, PropertyType};

pub(crate) const PARTS: &[&str] = &[
    "egenskapstyper",
    "egenskaper",
    "relasjonstyper",
    "styringsparametere",
    "alle",
];

/// Query parameters of `GET /vegobjekttyper` and `GET /vegobjekttyper/{id}`.
const LIST_TYPES_PARAMS: &[&str] = &["inkluder", "kategori"];
const ONE_TYPE_PARAMS: &[&str] = &["inkluder"];
crate::query_params!(ListTypesQuery = [LIST_TYPES_PARAMS], inkluder = PARTS);
crate::query_params!(OneTypeQuery = [ONE_TYPE_PARAMS], inkluder = PARTS);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(list_object_types))
        .routes(crate::api::handler::alias(
            "/vegobjekttyper/",
            crate::read_route!(list_object_types),
        ))
        .routes(crate::read_route!(get_catalog_version))
        .routes(crate::read_route!(list_units))
        .routes(crate::read_route!(list_data_types))
        .routes(crate::read_route!(list_categories))
        .routes(crate::api::handler::alias(
            "/datatyper",
            crate::read_route!(list_data_types),
        ))
        .routes(crate::api::handler::alias(
            "/kategorier",
            crate::read_route!(list_categories),
        ))
        .routes(crate::read_route!(get_property_type_by_id))
        .routes(crate::read_route!(get_object_type))
        .routes(crate::read_route!(get_property_type))
}

fn parse_id(raw: &str, what: &str) -> ApiResult<u32> {
    raw.parse::<u32>()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig {what}: '{raw}'")))
}

/// A property type as the response shows it: the catalogue's fields, with `viktighet_tekst`
/// per revision (revision 0 wrote `PÅKREVD` for `PÅKREVD_IKKE_ABSOLUTT`).
#[derive(Serialize, ToSchema)]
#[schema(as = PropertyType)]
pub struct PropertyTypeDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub beskrivelse: &'a str,
    pub veiledning: &'a str,
    pub datatype: u16,
    pub datatype_tekst: &'a str,
    pub liste: bool,
    pub sensitivitet: u8,
    pub sorteringsnummer: i64,
    pub viktighet: u8,
    pub viktighet_tekst: &'a str,
    pub sosinavn: &'a str,
    pub sosinvdbnavn: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objektliste_dato: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feltlengde: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desimaler: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maks: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_anbefalt: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maks_anbefalt: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enhet: Option<UnitDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tillatte_verdier: Option<Vec<AllowedValueDoc<'a>>>,
    pub styringsparametere: PropertyControlDoc,
}

impl<'a> PropertyTypeDoc<'a> {
    pub fn new(p: &'a PropertyType, n: Negotiated) -> PropertyTypeDoc<'a> {
        let text = p.importance_text.as_str();
        PropertyTypeDoc {
            id: p.id,
            navn: &p.name,
            beskrivelse: &p.description,
            veiledning: &p.guidance,
            datatype: p.datatype,
            datatype_tekst: &p.datatype_tekst,
            liste: p.is_list,
            sensitivitet: p.sensitivity,
            sorteringsnummer: p.sort_key,
            viktighet: p.importance,
            viktighet_tekst: if n.old_importance_text() && text == "PÅKREVD_IKKE_ABSOLUTT" {
                "PÅKREVD"
            } else {
                text
            },
            sosinavn: &p.sosinavn,
            sosinvdbnavn: &p.sosinvdbnavn,
            objektliste_dato: p.object_list_date.as_deref(),
            feltlengde: p.field_length,
            desimaler: p.decimals,
            min: p.min,
            maks: p.max,
            min_anbefalt: p.min_recommended,
            maks_anbefalt: p.max_recommended,
            enhet: p.unit.as_ref().map(Into::into),
            tillatte_verdier: p
                .allowed_values
                .as_ref()
                .map(|v| v.iter().map(Into::into).collect()),
            styringsparametere: (&p.control).into(),
        }
    }
}

/// `kategorier` of a type: ids in lists, the category objects for one type with `alle`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum CategoriesDoc<'a> {
    Ids(&'a [u32]),
    Full(Vec<CategoryDoc<'a>>),
}

/// A road object type with the parts asked for (base fields always).
#[derive(Serialize, ToSchema)]
#[schema(as = ObjectType)]
pub struct ObjectTypeDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub beskrivelse: &'a str,
    pub veiledning: &'a str,
    pub stedfesting: PlacementDoc,
    pub sosinavn: &'a str,
    pub sosinvdbnavn: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objektliste_dato: Option<&'a str>,
    pub sorteringsnummer: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kategorier: Option<CategoriesDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egenskapstyper: Option<Vec<PropertyTypeDoc<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relasjonstyper: Option<RelationTypesDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub styringsparametere: Option<TypeControlDoc<'a>>,
}

/// The type with only the requested parts; a single type with `alle` shows its categories.
fn type_doc<'a>(
    c: &'a Catalog,
    t: &'a ObjectType,
    parts: &[String],
    single: bool,
    n: Negotiated,
) -> ObjectTypeDoc<'a> {
    let all = parts.iter().any(|p| p == "alle");
    let want = |p: &str| {
        all || parts
            .iter()
            .any(|x| x == p || (p == "egenskapstyper" && x == "egenskaper"))
    };
    ObjectTypeDoc {
        id: t.id,
        navn: &t.name,
        beskrivelse: &t.description,
        veiledning: &t.guidance,
        stedfesting: t.placement.into(),
        sosinavn: &t.sosinavn,
        sosinvdbnavn: &t.sosinvdbnavn,
        objektliste_dato: t.object_list_date.as_deref(),
        sorteringsnummer: t.sort_key,
        kategorier: (single && all).then(|| {
            CategoriesDoc::Full(
                t.categories
                    .iter()
                    .filter_map(|id| c.categories.iter().find(|k| k.id == *id))
                    .map(Into::into)
                    .collect(),
            )
        }),
        egenskapstyper: want("egenskapstyper").then(|| {
            t.property_types
                .iter()
                .map(|p| PropertyTypeDoc::new(p, n))
                .collect()
        }),
        relasjonstyper: want("relasjonstyper").then(|| (&t.relation_types).into()),
        styringsparametere: want("styringsparametere").then(|| (&t.control).into()),
    }
}

/// GET /vegobjekttyper — all types; `inkluder` adds parts, `kategori` filters by category ids.
#[utoipa::path(get, path = "/vegobjekttyper", tag = "datakatalog",
    params(ListTypesQuery),
    responses((status = 200, description = "Array of road object types", body = [ObjectTypeDoc])))]
pub async fn list_object_types(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), LIST_TYPES_PARAMS)?;
    let parts = p.words("inkluder", PARTS)?;
    let cats: Vec<u32> = p
        .int_list("kategori")?
        .into_iter()
        .map(|c| c as u32)
        .collect();
    let c = s.catalog();
    let list: Vec<ObjectTypeDoc> = c
        .types
        .iter()
        .filter(|t| cats.is_empty() || t.categories.iter().any(|k| cats.contains(k)))
        .map(|t| type_doc(c, t, &parts, false, n))
        .collect();
    Ok(respond(n, &list))
}

/// GET /vegobjekttyper/{id} — one type; no `inkluder` means everything.
#[utoipa::path(get, path = "/vegobjekttyper/{id}", tag = "datakatalog",
    params(("id" = u32, Path, description = "road object type id"), OneTypeQuery),
    responses((status = 200, description = "The object type", body = ObjectTypeDoc),
               (status = 404, description = "Unknown type (code 4012)")))]
pub async fn get_object_type(
    State(s): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), ONE_TYPE_PARAMS)?;
    let id = parse_id(&id, "vegobjekttype-id")?;
    let mut parts = p.words("inkluder", PARTS)?;
    if parts.is_empty() {
        parts.push("alle".into());
    }
    let c = s.catalog();
    let t = c
        .object_type(id)
        .ok_or_else(|| ApiError::not_found(format!("Vegobjekttype {id} finnes ikke")))?;
    Ok(respond(n, &type_doc(c, t, &parts, true, n)))
}

/// GET /vegobjekttyper/{id}/{egenskapstype} — one complete property type.
#[utoipa::path(get, path = "/vegobjekttyper/{id}/{egenskapstype}", tag = "datakatalog",
    params(("id" = u32, Path, description = "road object type id"), ("egenskapstype" = u32, Path, description = "property type id"), NoQuery),
    responses((status = 200, description = "The property type", body = PropertyTypeDoc),
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
    Ok(respond_named(
        n,
        "egenskapstype",
        &PropertyTypeDoc::new(p, n),
    ))
}

/// GET /vegobjekttyper/egenskapstyper/{egenskapstype} — a property type by its global id.
#[utoipa::path(get, path = "/vegobjekttyper/egenskapstyper/{egenskapstype}", tag = "datakatalog",
    params(("egenskapstype" = u32, Path, description = "property type id"), NoQuery),
    responses((status = 200, description = "The property type", body = PropertyTypeDoc), (status = 404, description = "Unknown (4012)")))]
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
    Ok(respond(n, &PropertyTypeDoc::new(p, n)))
}

/// GET /vegobjekttyper/enheter
#[utoipa::path(get, path = "/vegobjekttyper/enheter", tag = "datakatalog",
    params(NoQuery),
    responses((status = 200, description = "Units", body = [crate::api::catalog_docs::UnitDoc])))]
pub async fn list_units(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let units: Vec<UnitDoc> = s.catalog().units.iter().map(Into::into).collect();
    Ok(respond(n, &units))
}

/// GET /vegobjekttyper/datatyper (also /datatyper)
#[utoipa::path(get, path = "/vegobjekttyper/datatyper", tag = "datakatalog",
    params(NoQuery),
    responses((status = 200, description = "Data types", body = [crate::api::catalog_docs::DataTypeDoc])))]
pub async fn list_data_types(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let types: Vec<DataTypeDoc> = s.catalog().data_types.iter().map(Into::into).collect();
    Ok(respond(n, &types))
}

/// GET /vegobjekttyper/kategorier (also /kategorier)
#[utoipa::path(get, path = "/vegobjekttyper/kategorier", tag = "datakatalog",
    params(NoQuery),
    responses((status = 200, description = "Categories", body = [crate::api::catalog_docs::CategoryDoc])))]
pub async fn list_categories(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let categories: Vec<CategoryDoc> = s.catalog().categories.iter().map(Into::into).collect();
    Ok(respond(n, &categories))
}

/// GET /vegobjekttyper/versjon — `{"id": 2038, "versjon": "2.38", "dato": "2024-11-19"}`, the
/// same triple as `/status`'s `datakatalog`. The Java v2 client reads it first
/// (`ClientFactory`, `DatakatalogVersionParser`: id, versjon, dato) and sends the version back
/// as X-Datakatalog-Versjon.
#[utoipa::path(get, path = "/vegobjekttyper/versjon", tag = "datakatalog",
    params(NoQuery),
    responses((status = 200, description = "Catalogue version", body = crate::api::catalog_docs::CatalogVersionDoc)))]
pub async fn get_catalog_version(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    Ok(respond(n, &CatalogVersionDoc::from(&s.catalog().version)))
}
