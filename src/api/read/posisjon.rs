//! /posisjon: the road positions nearest to a coordinate.

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use utoipa_axum::router::OpenApiRouter;

use crate::api::dto::{position_result, PositionJson};
use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin_geo;
use crate::api::media::{json_text, respond, Answer};
use crate::api::state::AppState;
use crate::generation::GenerationStore;
use crate::geo::srid::{to_storage, Srid};
use crate::query::network::{NearestFilter, NearestQuery};
use crate::query::vegref::RoadRefFilter;

/// Largest accepted `maks_avstand` (meters) and `maks_antall`.
pub const MAX_DISTANCE_M: i64 = 100_000;
pub const MAX_COUNT: i64 = 1000;

/// Query parameters of `GET /posisjon`.
const NEAREST_PARAMS: &[&str] = &[
    "nord",
    "ost",
    "lat",
    "lon",
    "maks_avstand",
    "maks_antall",
    "konnekteringslenker",
    "detaljerte_lenker",
    "vegreferanse",
    "srid",
    "tidspunkt",
];
crate::query_params!(PositionQuery = [NEAREST_PARAMS]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::read_route!(get_nearest))
}

fn float(p: &crate::api::params::Params, name: &str) -> ApiResult<Option<f64>> {
    p.one(name)?
        .map(|s| {
            crate::util::parse_f64(s.trim())
                .filter(|v| v.is_finite())
                .ok_or_else(|| ApiError::bad(4010, format!("Ugyldig flyttall i {name}: '{s}'")))
        })
        .transpose()
}

/// GET /posisjon — nearest positions, ascending by distance; `[]` when none is within reach.
#[utoipa::path(get, path = "/posisjon", tag = "vegnett",
    params(PositionQuery),
    responses((status = 200, description = "Position results with integer avstand, nearest first", body = [crate::api::dto::PositionResult]),
               (status = 422, description = "Missing or conflicting coordinates, bad values")))]
pub async fn get_nearest(State(s): State<AppState>, req: Request) -> ApiResult<Answer> {
    answer(&s.store, req.headers(), req.uri().query())
}

/// The answer of `GET /posisjon` to a request with these headers and query: the handler's work,
/// also called by the request stack's direct route (`api::stack::direct`).
pub fn answer(
    store: &GenerationStore,
    headers: &HeaderMap,
    query: Option<&str>,
) -> ApiResult<Answer> {
    let (p, n) = begin_geo(headers, query, NEAREST_PARAMS)?;
    let srid = p.srid()?;
    let (x, y) = match (
        float(&p, "nord")?,
        float(&p, "ost")?,
        float(&p, "lat")?,
        float(&p, "lon")?,
    ) {
        (Some(nord), Some(ost), None, None) => to_storage(srid, ost, nord)?,
        (None, None, Some(lat), Some(lon)) => to_storage(Srid::Wgs84, lon, lat)?,
        (None, None, None, None) => {
            return Err(ApiError::bad(
                4004,
                "Enten nord og ost eller lat og lon må angis",
            ))
        }
        _ => {
            return Err(ApiError::bad(
                4009,
                "Angi enten nord og ost eller lat og lon, begge koordinatene",
            ))
        }
    };
    let max_distance = p.int("maks_avstand")?.unwrap_or(30);
    if !(0..=MAX_DISTANCE_M).contains(&max_distance) {
        return Err(ApiError::bad(
            4002,
            format!("maks_avstand må være mellom 0 og {MAX_DISTANCE_M}"),
        ));
    }
    let max_count = p.int("maks_antall")?.unwrap_or(1);
    if !(1..=MAX_COUNT).contains(&max_count) {
        return Err(ApiError::bad(
            4002,
            format!("maks_antall må være mellom 1 og {MAX_COUNT}"),
        ));
    }
    let filter = NearestFilter {
        include_connection_links: p.bool("konnekteringslenker")?.unwrap_or(false),
        include_detailed_links: p.bool("detaljerte_lenker")?.unwrap_or(false),
        roads: p
            .items("vegreferanse")
            .map(RoadRefFilter::parse)
            .collect::<Result<_, _>>()?,
    };
    let g = crate::api::dated::pinned(store, &p)?;
    let q = NearestQuery {
        x,
        y,
        max_distance_m: max_distance as f64,
        max_count: max_count as usize,
        filter,
    };
    let found = g.nearest(&q);
    if n.geojson {
        return crate::api::geojson::positions(&found, &p, n.wkt_z_tag()).map(Answer::from);
    }
    if n.compact_json() {
        let mut out = String::with_capacity(PositionJson::RESULT_BYTES * found.len().max(1));
        let writer = PositionJson {
            srid,
            z_tag: n.wkt_z_tag(),
            with_distance: true,
        };
        writer.write_list(&mut out, &found)?;
        return Ok(json_text(n, out));
    }
    let out = found
        .iter()
        .map(|pos| position_result(pos, srid, true, n.wkt_z_tag()))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(respond(n, out.as_slice()).into())
}
