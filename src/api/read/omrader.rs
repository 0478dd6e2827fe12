//! Areas: /omrader and /omrader/{regioner,fylker,vegavdelinger,kommuner,kontraktsomrader,
//! riksvegruter}, with `inkluder` (kartutsnitt, senterpunkt, vegobjekt, alle) and `srid`.
//!
//! kartutsnitt is the area's bounding box as a POLYGON in the requested srid; senterpunkt is a
//! point inside the area, `{wkt, srid}`. As in v2, kartutsnitt and senterpunkt are not given for
//! vegavdelinger, kontraktsomrader and riksvegruter. vegobjekt is given for no area kind: vegdb's
//! datasets hold no area objects (documented in ARCHITECTURE.md).

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use geo::{BoundingRect, MultiPolygon};
use serde_json::{json, Value};

use crate::api::error::ApiResult;
use crate::api::media::json as respond;
use crate::api::{begin, AppState};
use crate::area::Areas;
use crate::geo::srid::{from_storage, Srid};
use crate::geo::wkt;

const INKLUDER: &[&str] = &["kartutsnitt", "senterpunkt", "vegobjekt", "alle"];
const KINDS: &[&str] = &[
    "regioner",
    "fylker",
    "vegavdelinger",
    "kommuner",
    "kontraktsomrader",
    "riksvegruter",
];

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/omrader", get(list_area_kinds))
        .route("/omrader/regioner", get(list_regions))
        .route("/omrader/fylker", get(list_counties))
        .route("/omrader/vegavdelinger", get(list_road_departments))
        .route("/omrader/kommuner", get(list_municipalities))
        .route("/omrader/kontraktsomrader", get(list_contract_areas))
        .route("/omrader/riksvegruter", get(list_national_routes))
}

struct Extras {
    map_extent: bool,
    centre: bool,
    srid: Srid,
}

fn extras(
    headers: &HeaderMap,
    q: Option<&str>,
) -> ApiResult<(Extras, crate::api::media::Negotiated)> {
    let (p, n) = begin(headers, q, &["inkluder", "srid"])?;
    let words = p.words("inkluder", INKLUDER)?;
    let all = words.iter().any(|w| w == "alle");
    let srid = p.srid()?;
    Ok((
        Extras {
            map_extent: all || words.iter().any(|w| w == "kartutsnitt"),
            centre: all || words.iter().any(|w| w == "senterpunkt"),
            srid,
        },
        n,
    ))
}

fn add_geometry(v: &mut Value, shape: &MultiPolygon<f64>, e: &Extras) -> ApiResult<()> {
    if e.map_extent {
        // bounding box of the shape in the requested srid (corners transformed via all vertices)
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
        v["kartutsnitt"] = json!({ "wkt": text, "srid": e.srid.code() });
    }
    if e.centre {
        if let Some((x, y)) = Areas::interior_point(shape) {
            v["senterpunkt"] =
                json!({ "wkt": wkt::point_2d(e.srid, x, y)?, "srid": e.srid.code() });
        }
    }
    Ok(())
}

/// GET /omrader — the area kinds with links.
#[utoipa::path(get, path = "/omrader", tag = "områder", responses((status = 200, description = "Array of {navn, href}")))]
pub async fn list_area_kinds(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let list: Vec<Value> = KINDS
        .iter()
        .map(|k| json!({ "navn": k, "href": s.href(&format!("/omrader/{k}")) }))
        .collect();
    Ok(respond(n, &list))
}

/// GET /omrader/regioner — the five regions.
#[utoipa::path(get, path = "/omrader/regioner", tag = "områder",
    params(("inkluder" = Option<String>, Query, description = "kartutsnitt, senterpunkt, vegobjekt, alle"), ("srid" = Option<String>, Query)),
    responses((status = 200, description = "Array of {navn, nummer}")))]
pub async fn list_regions(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let a = s.areas();
    let mut list = Vec::new();
    for r in &a.regions {
        let mut v = json!({ "navn": r.name, "nummer": r.number });
        let shape = MultiPolygon::new(
            a.counties
                .iter()
                .filter(|c| c.region == r.number)
                .flat_map(|c| c.shape.0.clone())
                .collect(),
        );
        add_geometry(&mut v, &shape, &e)?;
        list.push(v);
    }
    Ok(respond(n, &list))
}

/// GET /omrader/fylker — the 15 counties.
#[utoipa::path(get, path = "/omrader/fylker", tag = "områder",
    params(("inkluder" = Option<String>, Query), ("srid" = Option<String>, Query)),
    responses((status = 200, description = "Array of {navn, nummer, region}")))]
pub async fn list_counties(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let mut list = Vec::new();
    for c in &s.areas().counties {
        let mut v = json!({ "navn": c.name, "nummer": c.number, "region": c.region });
        add_geometry(&mut v, &c.shape, &e)?;
        list.push(v);
    }
    Ok(respond(n, &list))
}

/// GET /omrader/vegavdelinger — road departments (one per county; Troms and Finnmark share one).
#[utoipa::path(get, path = "/omrader/vegavdelinger", tag = "områder",
    params(("inkluder" = Option<String>, Query), ("srid" = Option<String>, Query)),
    responses((status = 200, description = "Array of {navn, nummer, region}")))]
pub async fn list_road_departments(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = extras(&headers, q.as_deref())?;
    let list: Vec<Value> = s
        .areas()
        .road_departments
        .iter()
        .map(|d| json!({ "navn": d.name, "nummer": d.number, "region": d.region }))
        .collect();
    Ok(respond(n, &list))
}

/// GET /omrader/kommuner — the 357 municipalities.
#[utoipa::path(get, path = "/omrader/kommuner", tag = "områder",
    params(("inkluder" = Option<String>, Query), ("srid" = Option<String>, Query)),
    responses((status = 200, description = "Array of {navn, nummer, region, fylke, vegavdeling}")))]
pub async fn list_municipalities(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (e, n) = extras(&headers, q.as_deref())?;
    let mut list = Vec::new();
    for m in &s.areas().municipalities {
        let mut v = json!({ "navn": m.name, "nummer": m.number, "region": m.region, "fylke": m.county, "vegavdeling": m.road_department });
        add_geometry(&mut v, &m.shape, &e)?;
        list.push(v);
    }
    Ok(respond(n, &list))
}

/// GET /omrader/kontraktsomrader — contract areas.
#[utoipa::path(get, path = "/omrader/kontraktsomrader", tag = "områder",
    params(("inkluder" = Option<String>, Query), ("srid" = Option<String>, Query)),
    responses((status = 200, description = "Array of {navn, nummer, type}")))]
pub async fn list_contract_areas(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = extras(&headers, q.as_deref())?;
    let list: Vec<Value> = s
        .areas()
        .contracts
        .iter()
        .map(|c| json!({ "navn": c.name, "nummer": c.number, "type": c.kind }))
        .collect();
    Ok(respond(n, &list))
}

/// GET /omrader/riksvegruter — national route segments.
#[utoipa::path(get, path = "/omrader/riksvegruter", tag = "områder",
    params(("inkluder" = Option<String>, Query), ("srid" = Option<String>, Query)),
    responses((status = 200, description = "Array of {navn, nummer, beskrivelse, periode}")))]
pub async fn list_national_routes(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = extras(&headers, q.as_deref())?;
    let list: Vec<Value> = s
        .areas()
        .routes
        .iter()
        .map(|r| json!({ "navn": r.name, "nummer": r.number, "beskrivelse": r.description, "periode": r.period }))
        .collect();
    Ok(respond(n, &list))
}
