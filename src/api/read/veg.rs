//! /veg and /veg/batch: where a road reference (v2's vegreferanse or the road system's
//! vegsystemreferanse) or a link position lies.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::ser::{Serialize, SerializeMap, Serializer};
use utoipa_axum::router::OpenApiRouter;

use crate::api::dto::{position_result, PositionJson, PositionResult};
use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin;
use crate::api::media::{json_text, respond, Answer};
use crate::api::state::AppState;
use crate::generation::{Generation, GenerationStore};
use crate::query::network::NetworkPosition;
use crate::query::system_ref::SystemRefFilter;
use crate::query::vegref::{LinkRef, RoadRefFilter};

/// Most positions in one /veg/batch request.
pub const MAX_BATCH: usize = 1000;

/// A value of the `/veg/batch` answer: the position, or null where there is none (the schema
/// only).
#[derive(utoipa::ToSchema)]
pub struct MaybePosition(pub Option<crate::api::dto::PositionResult>);

/// Query parameters of `GET /veg` and `GET /veg/batch`.
const POSITION_PARAMS: &[&str] = &[
    "vegreferanse",
    "veglenke",
    "vegsystemreferanse",
    "srid",
    "tidspunkt",
];
const POSITIONS_PARAMS: &[&str] = &[
    "vegreferanser",
    "veglenker",
    "vegsystemreferanser",
    "srid",
    "tidspunkt",
];
crate::query_params!(PositionQuery = [POSITION_PARAMS]);
crate::query_params!(PositionsQuery = [POSITIONS_PARAMS]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(get_position))
        .routes(crate::read_route!(get_positions))
}

fn lookup_road_ref(g: &Generation, text: &str) -> ApiResult<Option<NetworkPosition>> {
    let f = RoadRefFilter::parse_point(text)?;
    Ok(g.locate_road_ref(&f))
}

fn lookup_system_ref(g: &Generation, text: &str) -> ApiResult<Option<NetworkPosition>> {
    let f = SystemRefFilter::parse_point(text)?;
    Ok(g.locate_system_ref(&f))
}

/// What a position is asked by: one of the three parameters (of /veg, or their plurals of
/// /veg/batch), else 422 (4009 for more than one, 4004 for none).
#[derive(Clone, Copy, PartialEq)]
enum Asked {
    RoadRef,
    Link,
    SystemRef,
}

fn asked(p: &crate::api::params::Params, names: [&str; 3]) -> ApiResult<Asked> {
    let given: Vec<usize> = (0..3).filter(|&i| p.has(names[i])).collect();
    match given.as_slice() {
        [0] => Ok(Asked::RoadRef),
        [1] => Ok(Asked::Link),
        [2] => Ok(Asked::SystemRef),
        [] => Err(ApiError::bad(
            4004,
            format!(
                "Enten {}, {} eller {} må angis",
                names[0], names[1], names[2]
            ),
        )),
        _ => Err(ApiError::bad(
            4009,
            format!(
                "{}, {} og {} kan ikke kombineres",
                names[0], names[1], names[2]
            ),
        )),
    }
}

fn lookup(g: &Generation, by: Asked, text: &str) -> ApiResult<Option<NetworkPosition>> {
    match by {
        Asked::RoadRef => lookup_road_ref(g, text),
        Asked::Link => lookup_link(g, text),
        Asked::SystemRef => lookup_system_ref(g, text),
    }
}

fn lookup_link(g: &Generation, text: &str) -> ApiResult<Option<NetworkPosition>> {
    let l = LinkRef::parse(text)?;
    if !l.is_point() {
        return Err(ApiError::bad(
            4005,
            format!("Ugyldig veglenke '{text}': forventet <posisjon>@<id>"),
        ));
    }
    Ok(g.locate_link(crate::ids::LinkId(l.link_id), l.from))
}

/// A position asked for by link is answered as sent (`veglenke.posisjon` 0.123456789 for
/// `0.123456789@id`); only `kortform` is rounded.
fn echo_link_position(result: &mut PositionResult, sent: Option<&str>) {
    if let Some(echoed) = echoed_position(sent) {
        result.veglenke.posisjon = echoed;
    }
}

/// The link position a `veglenke` value sent shows in its answer's `veglenke.posisjon`.
fn echoed_position(sent: Option<&str>) -> Option<f64> {
    sent.and_then(|t| LinkRef::parse(t).ok()).map(|l| l.from)
}

/// GET /veg — one position from `vegreferanse`, `veglenke` or `vegsystemreferanse`; 204 when it
/// is not on the network.
#[utoipa::path(get, path = "/veg", tag = "vegnett",
    params(PositionQuery),
    responses((status = 200, description = "Position result {vegreferanse, vegsystemreferanse, veglenke, geometri}", body = crate::api::dto::PositionResult),
               (status = 204, description = "No such point on the network"),
               (status = 422, description = "None or several of the parameters, or a malformed value")))]
pub async fn get_position(State(s): State<AppState>, req: Request) -> ApiResult<Answer> {
    answer_position(&s.store, req.headers(), req.uri().query())
}

/// The answer of `GET /veg` to a request with these headers and query: the handler's work, also
/// called by the request stack's direct route (`api::stack::direct`).
pub fn answer_position(
    store: &GenerationStore,
    headers: &HeaderMap,
    query: Option<&str>,
) -> ApiResult<Answer> {
    let (p, n) = begin(headers, query, POSITION_PARAMS)?;
    let srid = p.srid()?;
    let g = crate::api::dated::pinned(store, &p)?;
    let found = match (p.one("vegreferanse")?, p.one("veglenke")?) {
        (Some(r), None) if !p.has("vegsystemreferanse") => lookup_road_ref(&g, r)?,
        (None, Some(l)) if !p.has("vegsystemreferanse") => lookup_link(&g, l)?,
        (Some(_), Some(_)) => {
            return Err(ApiError::bad(
                4009,
                "vegreferanse og veglenke kan ikke kombineres",
            ))
        }
        (None, None) if !p.has("vegsystemreferanse") => {
            return Err(ApiError::bad(
                4004,
                "Enten vegreferanse eller veglenke må angis",
            ))
        }
        _ => {
            asked(&p, ["vegreferanse", "veglenke", "vegsystemreferanse"])?;
            let text = p.one("vegsystemreferanse")?.unwrap_or_default();
            lookup_system_ref(&g, text)?
        }
    };
    match found {
        Some(pos) if n.compact_json() => {
            let mut out = String::with_capacity(PositionJson::RESULT_BYTES);
            let writer = PositionJson {
                srid,
                z_tag: n.wkt_z_tag(),
                with_distance: false,
            };
            writer.write(&mut out, &pos, echoed_position(p.one("veglenke")?))?;
            Ok(json_text(n, out))
        }
        Some(pos) => {
            let mut v = position_result(&pos, srid, false, n.wkt_z_tag())?;
            echo_link_position(&mut v, p.one("veglenke")?);
            Ok(respond(n, &v).into())
        }
        None => Ok(StatusCode::NO_CONTENT.into_response().into()),
    }
}

/// GET /veg/batch — many positions; an object keyed by each submitted value, null when off the
/// network. At most 1000 values.
#[utoipa::path(get, path = "/veg/batch", tag = "vegnett",
    params(PositionsQuery),
    responses((status = 200, description = "Object keyed by submitted value: position result or null", body = std::collections::HashMap<String, MaybePosition>),
               (status = 422, description = "None or several of the lists, more than 1000 values, or a malformed value")))]
pub async fn get_positions(State(s): State<AppState>, req: Request) -> ApiResult<Response> {
    let (p, n) = begin(req.headers(), req.uri().query(), POSITIONS_PARAMS)?;
    let srid = p.srid()?;
    let (values, by) = match (p.has("vegreferanser"), p.has("veglenker")) {
        (true, false) if !p.has("vegsystemreferanser") => (p.list("vegreferanser"), Asked::RoadRef),
        (false, true) if !p.has("vegsystemreferanser") => (p.list("veglenker"), Asked::Link),
        (true, true) => {
            return Err(ApiError::bad(
                4009,
                "vegreferanser og veglenker kan ikke kombineres",
            ))
        }
        (false, false) if !p.has("vegsystemreferanser") => {
            return Err(ApiError::bad(
                4004,
                "Enten vegreferanser eller veglenker må angis",
            ))
        }
        _ => {
            asked(&p, ["vegreferanser", "veglenker", "vegsystemreferanser"])?;
            (p.list("vegsystemreferanser"), Asked::SystemRef)
        }
    };
    if values.is_empty() {
        return Err(ApiError::bad(4004, "Lista med posisjoner er tom"));
    }
    if values.len() > MAX_BATCH {
        return Err(ApiError::bad(
            4006,
            format!("For mange posisjoner: {} (høyst {MAX_BATCH})", values.len()),
        ));
    }
    let g = crate::api::dated::generation(&s, &p)?;
    let mut out = Batch(Vec::with_capacity(values.len()));
    let mut seen = std::collections::HashSet::new();
    for v in values {
        if !seen.insert(v.clone()) {
            continue; // a value given twice is answered once
        }
        let found = lookup(&g, by, &v)?;
        let value = match found {
            Some(pos) => {
                let mut value = position_result(&pos, srid, false, n.wkt_z_tag())?;
                echo_link_position(&mut value, (by == Asked::Link).then_some(v.as_str()));
                Some(value)
            }
            None => None,
        };
        out.0.push((v, value));
    }
    Ok(respond(n, &out))
}

/// /veg/batch's answer: an object keyed by each submitted value (in the order sent), with the
/// position result or null.
struct Batch(Vec<(String, Option<PositionResult>)>);

impl Serialize for Batch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}
