//! Areas: /omrader and /omrader/{regioner,fylker,vegavdelinger,kommuner,kontraktsomrader,
//! riksvegruter}, with `inkluder` (kartutsnitt, senterpunkt, vegobjekt, alle) and `srid`.
//!
//! kartutsnitt is the area's bounding box as a POLYGON in the requested srid; senterpunkt is a
//! point inside the area, `{wkt, srid}`. As in v2, kartutsnitt and senterpunkt are not given for
//! vegavdelinger, kontraktsomrader and riksvegruter. vegobjekt `{id, type, href}` names the road
//! object that represents the area (see `generate::areas`); it is given when the current
//! generation holds that object.

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use geo::{BoundingRect, MultiPolygon};
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;

use crate::api::error::ApiResult;
use crate::api::handler::{begin, begin_geo};
use crate::api::media::json as respond;
use crate::api::state::AppState;
use crate::area::{AreaKind, Areas};
use crate::generation::Generation;
use crate::geo::srid::{from_storage, Srid};
use crate::geo::wkt;

pub(crate) const INKLUDER: &[&str] = &["kartutsnitt", "senterpunkt", "vegobjekt", "alle"];
/// Query parameters of every area list.
const AREA_PARAMS: &[&str] = &["inkluder", "srid"];
crate::query_params!(AreaQuery = [AREA_PARAMS], inkluder = INKLUDER);
/// (path, name as in the v2 documentation's `GET /omrader` example)
const KINDS: &[(&str, &str)] = &[
    ("regioner", "Regioner"),
    ("fylker", "Fylker"),
    ("vegavdelinger", "Vegavdelinger"),
    ("kommuner", "Kommuner"),
    ("riksvegruter", "Riksvegruter"),
    ("kontraktsomrader", "Kontraktsområder"),
];

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(list_area_kinds))
        .routes(crate::read_route!(list_regions))
        .routes(crate::read_route!(list_counties))
        .routes(crate::read_route!(list_road_departments))
        .routes(crate::read_route!(list_municipalities))
        .routes(crate::read_route!(list_contract_areas))
        .routes(crate::read_route!(list_national_routes))
}

/// An element of `GET /omrader`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AreaKindDoc {
    pub navn: &'static str,
    pub href: String,
}

/// `kartutsnitt` / `senterpunkt` of an area.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AreaGeometryDoc {
    pub wkt: String,
    pub srid: u32,
}

/// `vegobjekt` of an area: the road object that represents it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AreaObjectDoc {
    pub id: u64,
    #[serde(rename = "type")]
    pub type_id: u32,
    pub href: String,
}

/// A region (`/omrader/regioner`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RegionDoc {
    pub navn: String,
    pub nummer: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kartutsnitt: Option<AreaGeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senterpunkt: Option<AreaGeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegobjekt: Option<AreaObjectDoc>,
}

/// A county (`/omrader/fylker`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CountyDoc {
    pub navn: String,
    pub nummer: u8,
    pub region: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kartutsnitt: Option<AreaGeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senterpunkt: Option<AreaGeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegobjekt: Option<AreaObjectDoc>,
}

/// A road department (`/omrader/vegavdelinger`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoadDepartmentDoc {
    pub navn: String,
    pub nummer: u8,
    pub region: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegobjekt: Option<AreaObjectDoc>,
}

/// A municipality (`/omrader/kommuner`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MunicipalityDoc {
    pub navn: String,
    pub nummer: u16,
    pub region: u8,
    pub fylke: u8,
    pub vegavdeling: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kartutsnitt: Option<AreaGeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senterpunkt: Option<AreaGeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegobjekt: Option<AreaObjectDoc>,
}

/// A contract area (`/omrader/kontraktsomrader`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ContractAreaDoc {
    pub navn: String,
    pub nummer: u32,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegobjekt: Option<AreaObjectDoc>,
}

/// A national route segment (`/omrader/riksvegruter`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NationalRouteDoc {
    pub navn: String,
    pub nummer: String,
    pub beskrivelse: String,
    pub periode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegobjekt: Option<AreaObjectDoc>,
}

struct Extras {
    map_extent: bool,
    centre: bool,
    object: bool,
    srid: Srid,
}

fn extras(
    headers: &HeaderMap,
    q: Option<&str>,
) -> ApiResult<(Extras, crate::api::media::Negotiated)> {
    let (p, n) = begin_geo(headers, q, AREA_PARAMS)?;
    let words = p.words("inkluder", INKLUDER)?;
    let all = words.iter().any(|w| w == "alle");
    // GeoJSON: the kartutsnitt is the geometry, WGS 84 unless srid is given
    let srid = match n.geojson {
        true => crate::api::geojson::output_srid(&p)?,
        false => p.srid()?,
    };
    Ok((
        Extras {
            map_extent: all || n.geojson || words.iter().any(|w| w == "kartutsnitt"),
            centre: all || words.iter().any(|w| w == "senterpunkt"),
            object: all || words.iter().any(|w| w == "vegobjekt"),
            srid,
        },
        n,
    ))
}

/// `vegobjekt` of the area with `key`, when asked for and held by the generation.
fn area_object(
    s: &AppState,
    g: &Generation,
    e: &Extras,
    kind: AreaKind,
    key: u32,
) -> Option<AreaObjectDoc> {
    if !e.object {
        return None;
    }
    let type_id = kind.object_type();
    let id = kind.object_id(key);
    g.object_row(crate::ids::TypeId(type_id), crate::ids::ObjectId(id))?;
    Some(AreaObjectDoc {
        id,
        type_id,
        href: s.href(&format!("/vegobjekter/{type_id}/{id}")),
    })
}

/// The bounding box of the shape in the requested srid (corners transformed via all vertices).
fn map_extent(shape: &MultiPolygon<f64>, e: &Extras) -> ApiResult<Option<AreaGeometryDoc>> {
    if !e.map_extent {
        return Ok(None);
    }
    let mut b = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    if e.srid.is_native() {
        if let Some(r) = shape.bounding_rect() {
            b = [r.min().x, r.min().y, r.max().x, r.max().y];
        }
    } else {
        for poly in &shape.0 {
            for c in poly.exterior().coords() {
                let (x, y) = from_storage(e.srid, c.x, c.y)?;
                b = [b[0].min(x), b[1].min(y), b[2].max(x), b[3].max(y)];
            }
        }
    }
    let d = e.srid.decimals();
    let r = |v: f64| {
        format!("{v:.d$}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    let text = format!(
        "POLYGON (({x0} {y0}, {x1} {y0}, {x1} {y1}, {x0} {y1}, {x0} {y0}))",
        x0 = r(b[0]),
        y0 = r(b[1]),
        x1 = r(b[2]),
        y1 = r(b[3])
    );
    Ok(Some(AreaGeometryDoc {
        wkt: text,
        srid: e.srid.code(),
    }))
}

fn centre(shape: &MultiPolygon<f64>, e: &Extras) -> ApiResult<Option<AreaGeometryDoc>> {
    if !e.centre {
        return Ok(None);
    }
    Ok(match Areas::interior_point(shape) {
        Some((x, y)) => Some(AreaGeometryDoc {
            wkt: wkt::point_2d(e.srid, x, y)?,
            srid: e.srid.code(),
        }),
        None => None,
    })
}

/// GET /omrader — the area kinds with links.
#[utoipa::path(get, path = "/omrader", tag = "områder", params(crate::api::query_doc::NoQuery), responses((status = 200, description = "The area kinds", body = [AreaKindDoc])))]
pub async fn list_area_kinds(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let list: Vec<AreaKindDoc> = KINDS
        .iter()
        .map(|(path, navn)| AreaKindDoc {
            navn,
            href: s.href(&format!("/omrader/{path}")),
        })
        .collect();
    Ok(respond(n, &list))
}

/// GET /omrader/regioner — the five regions.
#[utoipa::path(get, path = "/omrader/regioner", tag = "områder",
    params(AreaQuery),
    responses((status = 200, description = "The regions", body = [RegionDoc])))]
pub async fn list_regions(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let a = s.areas();
    let g = s.store.current();
    let mut list = Vec::new();
    for r in &a.regions {
        let shape = a.region_shape(r.number);
        list.push(RegionDoc {
            navn: r.name.clone(),
            nummer: r.number,
            kartutsnitt: map_extent(&shape, &e)?,
            senterpunkt: centre(&shape, &e)?,
            vegobjekt: area_object(&s, &g, &e, AreaKind::Region, r.number as u32),
        });
    }
    Ok(crate::api::geojson::respond_docs(
        n,
        &list,
        "kartutsnitt",
        e.srid,
    ))
}

/// GET /omrader/fylker — the 15 counties.
#[utoipa::path(get, path = "/omrader/fylker", tag = "områder",
    params(AreaQuery),
    responses((status = 200, description = "The counties", body = [CountyDoc])))]
pub async fn list_counties(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let g = s.store.current();
    let mut list = Vec::new();
    for c in &s.areas().counties {
        list.push(CountyDoc {
            navn: c.name.clone(),
            nummer: c.number,
            region: c.region,
            kartutsnitt: map_extent(&c.shape, &e)?,
            senterpunkt: centre(&c.shape, &e)?,
            vegobjekt: area_object(&s, &g, &e, AreaKind::County, c.number as u32),
        });
    }
    Ok(crate::api::geojson::respond_docs(
        n,
        &list,
        "kartutsnitt",
        e.srid,
    ))
}

/// GET /omrader/vegavdelinger — road departments (one per county; Troms and Finnmark share one).
#[utoipa::path(get, path = "/omrader/vegavdelinger", tag = "områder",
    params(AreaQuery),
    responses((status = 200, description = "The road departments", body = [RoadDepartmentDoc])))]
pub async fn list_road_departments(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let g = s.store.current();
    let list: Vec<RoadDepartmentDoc> = s
        .areas()
        .road_departments
        .iter()
        .map(|d| RoadDepartmentDoc {
            navn: d.name.clone(),
            nummer: d.number,
            region: d.region,
            vegobjekt: area_object(&s, &g, &e, AreaKind::RoadDepartment, d.number as u32),
        })
        .collect();
    Ok(crate::api::geojson::respond_docs(
        n,
        &list,
        "kartutsnitt",
        e.srid,
    ))
}

/// GET /omrader/kommuner — the 357 municipalities.
#[utoipa::path(get, path = "/omrader/kommuner", tag = "områder",
    params(AreaQuery),
    responses((status = 200, description = "The municipalities", body = [MunicipalityDoc])))]
pub async fn list_municipalities(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let g = s.store.current();
    let mut list = Vec::new();
    for m in &s.areas().municipalities {
        list.push(MunicipalityDoc {
            navn: m.name.clone(),
            nummer: m.number,
            region: m.region,
            fylke: m.county,
            vegavdeling: m.road_department,
            kartutsnitt: map_extent(&m.shape, &e)?,
            senterpunkt: centre(&m.shape, &e)?,
            vegobjekt: area_object(&s, &g, &e, AreaKind::Municipality, m.number as u32),
        });
    }
    Ok(crate::api::geojson::respond_docs(
        n,
        &list,
        "kartutsnitt",
        e.srid,
    ))
}

/// GET /omrader/kontraktsomrader — contract areas.
#[utoipa::path(get, path = "/omrader/kontraktsomrader", tag = "områder",
    params(AreaQuery),
    responses((status = 200, description = "The contract areas", body = [ContractAreaDoc])))]
pub async fn list_contract_areas(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let g = s.store.current();
    let list: Vec<ContractAreaDoc> = s
        .areas()
        .contracts
        .iter()
        .map(|c| ContractAreaDoc {
            navn: c.name.clone(),
            nummer: c.number,
            kind: c.kind.clone(),
            vegobjekt: area_object(&s, &g, &e, AreaKind::Contract, c.number),
        })
        .collect();
    Ok(crate::api::geojson::respond_docs(
        n,
        &list,
        "kartutsnitt",
        e.srid,
    ))
}

/// GET /omrader/riksvegruter — national route segments.
#[utoipa::path(get, path = "/omrader/riksvegruter", tag = "områder",
    params(AreaQuery),
    responses((status = 200, description = "The national route segments", body = [NationalRouteDoc])))]
pub async fn list_national_routes(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let g = s.store.current();
    let list: Vec<NationalRouteDoc> = s
        .areas()
        .routes
        .iter()
        .enumerate()
        .map(|(i, r)| NationalRouteDoc {
            navn: r.name.clone(),
            nummer: r.number.clone(),
            beskrivelse: r.description.clone(),
            periode: r.period.clone(),
            vegobjekt: area_object(&s, &g, &e, AreaKind::Route, i as u32),
        })
        .collect();
    Ok(crate::api::geojson::respond_docs(
        n,
        &list,
        "kartutsnitt",
        e.srid,
    ))
}
