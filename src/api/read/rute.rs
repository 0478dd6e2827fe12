//! `GET /vegnett/rute` and `POST /vegnett/rute`: the shortest route along the road network
//! between two points (coordinates snapped to the nearest passing row, or link positions), by
//! length. The answer follows NVDB's route service (`type`, `vegnettsrutesegmenter`,
//! `metadata`) with v2's names on each segment; 204 when the points are not connected within
//! the limits.
//!
//! Limits: `maks_avstand` 0..=100,000 m (default 30) to snap a coordinate; `omkrets` (a
//! corridor around the straight line between the points) 1..=1,000,000 m, absent = the whole
//! network; a POST body of at most 64 KiB. A search visits at most the whole graph once.

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;

use crate::api::dto::{road_ref_stretch, Geometry as GeometryDoc, RoadRefStretch};
use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin_geo;
use crate::api::media::respond;
use crate::api::params::Params;
use crate::api::state::AppState;
use crate::generation::Generation;
use crate::geo::linref::{point_at, sub_line};
use crate::geo::srid::{to_storage, Srid};
use crate::geo::{wkt, Coord3};
use crate::index::network::row_key;
use crate::query::network::{meter_exact, NearestFilter, NearestQuery};
use crate::query::route::{
    fraction_in_row, row_at, Route, RouteFilter, RoutePoint, RouteQuery, RouteSegment,
};
use crate::query::route_match::{match_track, MAX_POINTS};
use crate::query::vegref::{format_position, link_range_short, LinkRef};
use crate::snapshot::columns::DETAIL_LEVELS;

/// Largest `maks_avstand` (as /posisjon's) and `omkrets`, metres.
pub const MAX_SNAP_M: i64 = 100_000;
pub const MAX_CORRIDOR_M: i64 = 1_000_000;
/// Largest POST body.
pub const MAX_BODY: usize = 64 * 1024;
/// Rows a coordinate is snapped among (nearest first) to find one the route may use.
const SNAP_CANDIDATES: usize = 64;

pub const ROUTE_PARAMS: &[&str] = &[
    "start",
    "slutt",
    "geometri",
    "maks_avstand",
    "omkrets",
    "konnekteringslenker",
    "detaljerte_lenker",
    "trafikantgruppe",
    "tidspunkt",
    "srid",
    "kortform",
];

/// The query of `/vegnett/rute` (documented here: `start` means a point, not a cursor).
pub struct RouteQueryDoc;

impl utoipa::IntoParams for RouteQueryDoc {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use serde_json::json;
        let point = "a coordinate `ost,nord` in `srid` (snapped to the nearest road within maks_avstand) or a link position `<posisjon>@<veglenkeid>` (e.g. 0.35@41423)";
        let own = [
            json!({"name": "start", "in": "query", "required": false, "schema": {"type": "string"},
                "description": format!("Where the route starts (required without geometri): {point}")}),
            json!({"name": "slutt", "in": "query", "required": false, "schema": {"type": "string"},
                "description": format!("Where the route ends (required without geometri): {point}")}),
            json!({"name": "geometri", "in": "query", "required": false, "schema": {"type": "string"},
                "description": format!("Instead of start and slutt: a track LINESTRING (x y, ...) in srid (at most {MAX_POINTS} points, e.g. GPS positions) matched to the road it most likely followed (hidden-Markov matching, robust to 10-20 m noise; points with no road within maks_avstand are left out)")}),
            json!({"name": "kortform", "in": "query", "required": false,
                "schema": {"type": "boolean", "default": false},
                "description": "true: the segments without their geometry (link positions, road references and lengths only; GeoJSON keeps it)"}),
            json!({"name": "omkrets", "in": "query", "required": false,
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_CORRIDOR_M},
                "description": "Corridor in metres around the straight line between start and slutt: the route keeps inside it (absent: the whole network); 204 when no route does"}),
        ];
        let shared: Vec<&str> = ROUTE_PARAMS
            .iter()
            .copied()
            .filter(|n| !matches!(*n, "start" | "slutt" | "omkrets" | "geometri" | "kortform"))
            .collect();
        own.into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .chain(crate::api::query_doc::query_parameters(&[&shared], &[]))
            .collect()
    }
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::read_route!(get_route, post_route))
}

/// One stretch of the route.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RouteSegmentDoc {
    pub veglenkesekvensid: u64,
    pub veglenkeid: u64,
    /// Link positions, `fra_posisjon <= til_posisjon`; `retning` says which way it is driven.
    pub fra_posisjon: f64,
    pub til_posisjon: f64,
    pub kortform: String,
    /// MED: along the link's direction (from fra_posisjon to til_posisjon), MOT: against it.
    pub retning: &'static str,
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegreferanse: Option<RoadRefStretch>,
    pub konnekteringslenke: bool,
    #[serde(rename = "detaljnivå")]
    pub detail_level: &'static str,
    pub trafikantgruppe: String,
    /// In travel order; left out with `kortform=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometri: Option<GeometryDoc>,
    /// Metres.
    pub lengde: f64,
}

/// Where a route end lies on the network and how far the asked point was from it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RouteEndDoc {
    pub veglenkesekvensid: u64,
    pub posisjon: f64,
    pub kortform: String,
    /// Metres from the asked point (0 for a link position).
    pub avstand: f64,
    pub geometri: GeometryDoc,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ShortestRouteMetadataDoc {
    /// Total length in metres.
    pub lengde: f64,
    pub antall: usize,
    pub status: u32,
    pub status_tekst: &'static str,
    pub start: RouteEndDoc,
    pub slutt: RouteEndDoc,
}

/// The answer of `/vegnett/rute`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ShortestRouteDoc {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub vegnettsrutesegmenter: Vec<RouteSegmentDoc>,
    pub metadata: ShortestRouteMetadataDoc,
}

/// GET /vegnett/rute — the shortest route between two points along the road network.
#[utoipa::path(get, path = "/vegnett/rute", tag = "vegnett",
    params(RouteQueryDoc),
    responses((status = 200, description = "The route's segments in travel order and its length (JSON, XML, GeoJSON)", body = ShortestRouteDoc),
               (status = 204, description = "The points are not connected within the limits"),
               (status = 422, description = "Missing or bad start/slutt, a point with no road within maks_avstand, bad limits")))]
pub async fn get_route(State(s): State<AppState>, req: Request) -> ApiResult<Response> {
    let query = req.uri().query().map(str::to_string);
    answer_off_worker(s, req.headers().clone(), query).await
}

/// POST /vegnett/rute — as GET, the parameters as members of a JSON object in the body.
#[utoipa::path(post, path = "/vegnett/rute", tag = "vegnett",
    request_body(content = Object, description = "The parameters of GET /vegnett/rute as a JSON object ({\"start\": \"...\", \"slutt\": \"...\", \"omkrets\": 500})", content_type = "application/json"),
    responses((status = 200, description = "The route's segments in travel order and its length (JSON, XML, GeoJSON)", body = ShortestRouteDoc),
               (status = 204, description = "The points are not connected within the limits"),
               (status = 422, description = "A body that is no JSON object, missing or bad start/slutt, a point with no road within maks_avstand, bad limits")))]
pub async fn post_route(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let query = body_query(&body)?;
    answer_off_worker(s, headers, Some(query)).await
}

/// The JSON object of a POST body as a query string.
fn body_query(body: &[u8]) -> ApiResult<String> {
    let bad = |why: &str| ApiError::bad(4010, format!("Ugyldig forespørsel: {why}"));
    if body.len() > MAX_BODY {
        return Err(bad("kroppen er større enn 64 KiB"));
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| bad("kroppen er ikke JSON"))?;
    let Value::Object(m) = v else {
        return Err(bad("kroppen er ikke et JSON-objekt"));
    };
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in &m {
        match v {
            Value::String(t) => q.append_pair(k, t),
            Value::Number(x) => q.append_pair(k, &x.to_string()),
            Value::Bool(b) => q.append_pair(k, if *b { "true" } else { "false" }),
            _ => return Err(bad(&format!("{k} må være tekst, tall eller sann/usann"))),
        };
    }
    Ok(q.finish())
}

/// The answer, computed on the blocking pool (a route may visit much of the network, and the
/// first one on a network makes its graph).
async fn answer_off_worker(
    s: AppState,
    headers: HeaderMap,
    query: Option<String>,
) -> ApiResult<Response> {
    let g = {
        let (p, _) = begin_geo(&headers, query.as_deref(), ROUTE_PARAMS)?;
        crate::api::dated::generation(&s, &p)?
    };
    let work = tokio::task::spawn_blocking(move || answer(&g, &headers, query.as_deref()));
    match work.await {
        Ok(r) => r,
        Err(e) => Err(crate::error::EngineError::Internal(format!("route: {e}")).into()),
    }
}

/// A route end as asked: a link position or a storage coordinate.
enum Asked {
    Link(u64, f64),
    Point(f64, f64),
}

fn parse_end(name: &str, text: &str, srid: Srid) -> ApiResult<Asked> {
    if text.contains('@') {
        let l = LinkRef::parse(text)?;
        if !l.is_point() {
            return Err(ApiError::bad(
                4010,
                format!("{name} må være én posisjon på en lenke, ikke en strekning"),
            ));
        }
        return Ok(Asked::Link(l.link_id, l.from));
    }
    let numbers: Vec<Option<f64>> = text
        .split(',')
        .map(|t| crate::util::parse_f64(t.trim()).filter(|v| v.is_finite()))
        .collect();
    match numbers.as_slice() {
        [Some(ost), Some(nord)] => {
            let (x, y) = to_storage(srid, *ost, *nord)?;
            Ok(Asked::Point(x, y))
        }
        _ => Err(ApiError::bad(
            4010,
            format!(
                "Ugyldig {name} '{}': forventet ost,nord eller posisjon@veglenkeid",
                crate::api::error::echoed(text)
            ),
        )),
    }
}

/// The route point of an asked end and its distance from the asked point.
fn resolve(
    g: &Generation,
    name: &str,
    asked: &Asked,
    filter: &RouteFilter,
    max_distance_m: f64,
) -> ApiResult<(RoutePoint, f64)> {
    match *asked {
        Asked::Link(link, position) => row_at(&g.network, filter, link, position)
            .map(|row| (RoutePoint { row, position }, 0.0))
            .ok_or_else(|| {
                ApiError::bad(
                    4005,
                    format!("{name}: lenkeposisjonen {position}@{link} finnes ikke på vegnettet ruten kan bruke"),
                )
            }),
        Asked::Point(x, y) => {
            let q = NearestQuery {
                x,
                y,
                max_distance_m,
                max_count: SNAP_CANDIDATES,
                filter: NearestFilter {
                    include_connection_links: true,
                    include_detailed_links: true,
                    roads: Vec::new(),
                },
            };
            g.nearest(&q)
                .into_iter()
                .find(|p| filter.passes(&g.network, p.row as usize))
                .map(|p| {
                    let point = RoutePoint {
                        row: p.row,
                        position: p.position,
                    };
                    (point, p.distance_m)
                })
                .ok_or_else(|| {
                    ApiError::bad(
                        4005,
                        format!("{name}: ingen veg ruten kan bruke innen maks_avstand ({max_distance_m} m)"),
                    )
                })
        }
    }
}

fn route_filter(p: &Params) -> ApiResult<RouteFilter> {
    // a comma list (or repeated), any case: one group filters, both or none do not
    let (mut k, mut g) = (false, false);
    for item in p.items("trafikantgruppe").flat_map(|v| v.split(',')) {
        match item.trim().to_ascii_uppercase().as_str() {
            "K" => k = true,
            "G" => g = true,
            "" => {}
            _ => {
                return Err(ApiError::bad(
                    4006,
                    format!(
                        "Ugyldig trafikantgruppe '{}': K, G",
                        crate::api::error::echoed(item)
                    ),
                ))
            }
        }
    }
    let traffic_group = match (k, g) {
        (true, false) => Some(b'K'),
        (false, true) => Some(b'G'),
        _ => None,
    };
    Ok(RouteFilter {
        detailed: p.bool("detaljerte_lenker")?.unwrap_or(false),
        connection_links: p.bool("konnekteringslenker")?.unwrap_or(true),
        traffic_group,
    })
}

/// An integer parameter within `range`, else 422/4002.
fn bounded(p: &Params, name: &str, range: std::ops::RangeInclusive<i64>) -> ApiResult<Option<i64>> {
    match p.int(name)? {
        Some(v) if !range.contains(&v) => Err(ApiError::bad(
            4002,
            format!("{name} må være mellom {} og {}", range.start(), range.end()),
        )),
        v => Ok(v),
    }
}

/// The answer of a route request on generation `g`.
pub fn answer(g: &Generation, headers: &HeaderMap, query: Option<&str>) -> ApiResult<Response> {
    let (p, n) = begin_geo(headers, query, ROUTE_PARAMS)?;
    let srid = p.srid()?;
    let filter = route_filter(&p)?;
    let max_distance = bounded(&p, "maks_avstand", 0..=MAX_SNAP_M)?.unwrap_or(30) as f64;
    let corridor = bounded(&p, "omkrets", 1..=MAX_CORRIDOR_M)?.map(|v| v as f64);
    let found = match p.one("geometri")? {
        Some(track) => {
            if p.has("start") || p.has("slutt") {
                return Err(ApiError::bad(
                    4009,
                    "Angi enten geometri eller start og slutt",
                ));
            }
            let points = parse_track(track, srid)?;
            match_track(g, &points, filter, max_distance).map(|m| {
                let route = Route {
                    segments: m.segments,
                    length_m: m.length_m,
                };
                (
                    route,
                    [(m.start, m.start_distance_m), (m.end, m.end_distance_m)],
                )
            })
        }
        None => {
            let end = |name: &str| -> ApiResult<Asked> {
                let text = p.one(name)?.ok_or_else(|| {
                    ApiError::bad(4004, "Både start og slutt (eller geometri) må angis")
                })?;
                parse_end(name, text, srid)
            };
            let (start_asked, end_asked) = (end("start")?, end("slutt")?);
            let (start, start_d) = resolve(g, "start", &start_asked, &filter, max_distance)?;
            let (end, end_d) = resolve(g, "slutt", &end_asked, &filter, max_distance)?;
            let q = RouteQuery {
                start,
                end,
                filter,
                corridor_m: corridor,
            };
            g.shortest_route(&q)
                .map(|route| (route, [(start, start_d), (end, end_d)]))
        }
    };
    let Some((route, ends)) = found else {
        return Ok(axum::http::StatusCode::NO_CONTENT.into_response());
    };
    let z = n.wkt_z_tag();
    let short = p.bool("kortform")?.unwrap_or(false) && !n.geojson;
    let docs = route
        .segments
        .iter()
        .map(|s| segment_doc(g, s, srid, (z, short)))
        .collect::<ApiResult<Vec<_>>>()?;
    if n.geojson {
        let items = route
            .segments
            .iter()
            .zip(docs)
            .map(|(s, d)| {
                let v = serde_json::to_value(&d)
                    .map_err(|e| crate::error::EngineError::Internal(e.to_string()))?;
                Ok((v, segment_line(g, s)))
            })
            .collect::<ApiResult<Vec<_>>>()?;
        return crate::api::geojson::line_documents(items, &p);
    }
    let doc = route_doc(g, &route, docs, ends, srid, z)?;
    Ok(respond(n, &doc))
}

/// A track `LINESTRING (x y, ...)` in `srid` as storage points (at most `MAX_POINTS`).
fn parse_track(text: &str, srid: Srid) -> ApiResult<Vec<(f64, f64)>> {
    let bad = || {
        ApiError::bad(
            4010,
            format!(
                "Ugyldig geometri '{}': forventet LINESTRING (x y, ...)",
                crate::api::error::echoed(text)
            ),
        )
    };
    let Some(crate::generation::feature::Geometry::LineString(coords)) =
        crate::api::geojson::geometry_from_wkt(text)
    else {
        return Err(bad());
    };
    if coords.len() > MAX_POINTS {
        return Err(ApiError::bad(
            4002,
            format!("geometri kan ha høyst {MAX_POINTS} punkter"),
        ));
    }
    coords
        .iter()
        .map(|c| {
            if !(c[0].is_finite() && c[1].is_finite()) {
                return Err(bad());
            }
            Ok(to_storage(srid, c[0], c[1])?)
        })
        .collect()
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The line of a segment in travel order (storage coordinates).
pub fn segment_line(g: &Generation, s: &RouteSegment) -> Vec<Coord3> {
    let r = s.row as usize;
    let geometry = g.network.geometry(r);
    let (a, b) = (
        fraction_in_row(&g.network, r, s.from_pos),
        fraction_in_row(&g.network, r, s.to_pos),
    );
    let mut line = if a == 0.0 && b == 1.0 {
        geometry.to_vec()
    } else {
        sub_line(geometry, a, b)
    };
    if line.len() == 1 {
        line.push(line[0]);
    }
    if !s.along {
        line.reverse();
    }
    line
}

fn segment_doc(
    g: &Generation,
    s: &RouteSegment,
    srid: Srid,
    (z, short): (bool, bool),
) -> ApiResult<RouteSegmentDoc> {
    let n = &g.network;
    let r = s.row as usize;
    let link = n.link_id[r];
    let key = row_key(n, r);
    let meter = |pos: f64| meter_exact(n, r, pos).round() as u32;
    Ok(RouteSegmentDoc {
        veglenkesekvensid: link,
        veglenkeid: link,
        fra_posisjon: s.from_pos + 0.0,
        til_posisjon: s.to_pos + 0.0,
        kortform: link_range_short(s.from_pos, s.to_pos, link),
        retning: if s.along { "MED" } else { "MOT" },
        vegreferanse: Some(key)
            .filter(|k| k.has_road_ref())
            .map(|k| road_ref_stretch(&k, meter(s.from_pos), meter(s.to_pos))),
        konnekteringslenke: n.is_connection[r],
        detail_level: DETAIL_LEVELS
            .get(n.detail_level[r] as usize)
            .copied()
            .unwrap_or(DETAIL_LEVELS[0]),
        trafikantgruppe: (n.traffic_group[r] as char).to_string(),
        geometri: match short {
            true => None,
            false => Some(GeometryDoc {
                wkt: wkt::linestring_z(srid, &segment_line(g, s), z)?,
                srid: srid.code(),
            }),
        },
        lengde: round3(s.length_m),
    })
}

fn route_doc(
    g: &Generation,
    route: &Route,
    segments: Vec<RouteSegmentDoc>,
    ends: [(RoutePoint, f64); 2],
    srid: Srid,
    z: bool,
) -> ApiResult<ShortestRouteDoc> {
    let end_doc = |(pt, d): (RoutePoint, f64)| -> ApiResult<RouteEndDoc> {
        let r = pt.row as usize;
        let link = g.network.link_id[r];
        let c = point_at(
            g.network.geometry(r),
            fraction_in_row(&g.network, r, pt.position),
        );
        Ok(RouteEndDoc {
            veglenkesekvensid: link,
            posisjon: pt.position + 0.0,
            kortform: format!("{}@{link}", format_position(pt.position)),
            avstand: round3(d),
            geometri: GeometryDoc {
                wkt: wkt::point_z(srid, &c, z)?,
                srid: srid.code(),
            },
        })
    };
    Ok(ShortestRouteDoc {
        kind: "Rute",
        metadata: ShortestRouteMetadataDoc {
            lengde: round3(route.length_m),
            antall: segments.len(),
            status: 2000,
            status_tekst: "KOMPLETT",
            start: end_doc(ends[0])?,
            slutt: end_doc(ends[1])?,
        },
        vegnettsrutesegmenter: segments,
    })
}
