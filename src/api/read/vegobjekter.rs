//! Road objects: /vegobjekter, /vegobjekter/{type}/ (filtered, paginated),
//! /vegobjekter/{type}/statistikk/, /vegobjekter/{type}/{id} (+ dybde), its egenskaper, and the
//! /vegobjekt?id= helper.

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::api::error::{ApiError, ApiResult};
use crate::api::geojson;
use crate::api::media::json as respond;
use crate::api::object_json::{
    whole_meters, Include, Render, RenderOwned, StreamedObjects, INKLUDER, INKLUDERGEOMETRI,
};
use crate::api::paging::{next_href, next_start, page_size, start, streamed_envelope};
use crate::api::params::Params;
use crate::api::read::vegnett::parse_map_extent;
use crate::api::stream::{respond_page, PageItems};
use crate::api::{begin, begin_geo, AppState};
use crate::area::AreaKind;
use crate::generation::{Generation, TypeData};
use crate::geo::srid::Srid;
use crate::query::budget::{self, Stop};
use crate::query::egenskap;
use crate::query::limits::{MAX_LIST_ITEMS, MAX_OVERLAPS};
use crate::query::objects::ObjectFilter;
use crate::query::vegref::{LinkRef, RoadRefFilter};

/// Largest page of road objects.
pub const MAX_PAGE: usize = 10_000;

/// The filters of `/vegobjekter/{type}/` and its `statistikk`.
pub(crate) const FILTERS: &[&str] = &[
    "region",
    "fylke",
    "vegavdeling",
    "kommune",
    "kontraktsomrade",
    "riksvegrute",
    "vegreferanse",
    "kartutsnitt",
    "veglenke",
    "egenskap",
    "overlapp",
    "segmentering",
    "srid",
];
const LIST_ONLY: &[&str] = &[
    "inkluder",
    "inkludergeometri",
    "geometritoleranse",
    "antall",
    "start",
];
crate::query_params!(ListQuery = [FILTERS, LIST_ONLY], inkluder = INKLUDER);
crate::query_params!(StatisticsQuery = [FILTERS]);
/// Query parameters of one object (`inkluder` without the list-only `minimum`).
const OBJECT_PARAMS: &[&str] = &[
    "dybde",
    "inkluder",
    "inkludergeometri",
    "srid",
    "geometritoleranse",
];
/// `inkluder` of one object.
const OBJECT_INKLUDER: &[&str] = &[
    "metadata",
    "egenskaper",
    "relasjoner",
    "lokasjon",
    "vegsegmenter",
    "geometri",
    "alle",
];
crate::query_params!(ObjectQuery = [OBJECT_PARAMS], inkluder = OBJECT_INKLUDER);
const FIND_PARAMS: &[&str] = &["id"];
crate::query_params!(FindQuery = [FIND_PARAMS]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(list_object_kinds))
        .routes(crate::api::alias(
            "/vegobjekter/",
            crate::read_route!(list_object_kinds),
        ))
        .routes(crate::read_route!(list_objects))
        .routes(crate::api::alias(
            "/vegobjekter/{type}/",
            crate::read_route!(list_objects),
        ))
        .routes(crate::read_route!(get_statistics))
        .routes(crate::api::alias(
            "/vegobjekter/{type}/statistikk/",
            crate::read_route!(get_statistics),
        ))
        .routes(crate::read_route!(get_object))
        .routes(crate::read_route!(list_object_properties))
        .routes(crate::read_route!(get_object_property))
        .routes(crate::read_route!(find_object))
}

fn type_id(raw: &str) -> ApiResult<u32> {
    raw.parse()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig vegobjekttype-id: '{raw}'")))
}

/// The type's data in this generation; a catalogue type without objects is an empty table.
fn type_data<'g>(g: &'g Generation, id: u32, empty: &'g TypeData) -> ApiResult<&'g TypeData> {
    if g.catalog.object_type(id).is_none() {
        return Err(ApiError::not_found(format!(
            "Vegobjekttype {id} finnes ikke"
        )));
    }
    Ok(g.objects.get(&id).map(|d| d.as_ref()).unwrap_or(empty))
}

fn empty_type(id: u32) -> TypeData {
    TypeData {
        table: crate::snapshot::columns::ObjectTable::new(id),
        index: Default::default(),
    }
}

fn unquote(s: &str) -> &str {
    let t = s.trim();
    if t.len() >= 2
        && ((t.starts_with('"') && t.ends_with('"')) || (t.starts_with('\'') && t.ends_with('\'')))
    {
        &t[1..t.len() - 1]
    } else {
        t
    }
}

/// Parse every filter parameter of a road-object query for type `type_id`.
///
/// `sensitive`: the caller may see (and so filter on) sensitivitet-1 values.
pub fn parse_filter(
    g: &Generation,
    p: &Params,
    type_id: u32,
    srid: Srid,
    sensitive: bool,
) -> ApiResult<ObjectFilter> {
    let t = g
        .catalog
        .object_type(type_id)
        .ok_or_else(|| ApiError::not_found(format!("Vegobjekttype {type_id} finnes ikke")))?;
    check_list_lengths(p)?;
    let mut f = ObjectFilter::default();
    for (name, kind) in [
        ("region", AreaKind::Region),
        ("fylke", AreaKind::County),
        ("vegavdeling", AreaKind::RoadDepartment),
        ("kommune", AreaKind::Municipality),
    ] {
        f.any_of
            .extend(p.int_list(name)?.into_iter().map(|v| (kind, v as u32)));
    }
    for name in p.list("kontraktsomrade") {
        let name = unquote(&name);
        let i = g
            .areas
            .contracts
            .iter()
            .position(|c| c.name == name || c.number.to_string() == name)
            .ok_or_else(|| ApiError::bad(4005, format!("Ukjent kontraktsområde: '{name}'")))?;
        f.contracts.push(i as u32);
    }
    for name in p.list("riksvegrute") {
        let name = unquote(&name);
        let hits: Vec<u32> = g
            .areas
            .routes
            .iter()
            .enumerate()
            .filter(|(_, r)| r.filter_key() == name || r.name == name)
            .map(|(i, _)| i as u32)
            .collect();
        if hits.is_empty() {
            return Err(ApiError::bad(
                4005,
                format!("Ukjent riksvegrute: '{name}' (forventet f.eks. \"RUTE2A 2014-2023\")"),
            ));
        }
        f.routes.extend(hits);
    }
    f.roads = p
        .list("vegreferanse")
        .iter()
        .map(|r| RoadRefFilter::parse(r))
        .collect::<Result<_, _>>()?;
    f.bbox = p
        .one("kartutsnitt")?
        .map(|k| parse_map_extent(k, srid))
        .transpose()?;
    f.links = p
        .list("veglenke")
        .iter()
        .map(|l| LinkRef::parse(l))
        .collect::<Result<_, _>>()?;
    if !f.links.is_empty() && (f.segments() || f.bbox.is_some()) {
        return Err(ApiError::bad(
            4009,
            "veglenke kan ikke kombineres med andre områdefilter",
        ));
    }
    if let Some(e) = p.one("egenskap")? {
        let expr = egenskap::parse(e)?;
        egenskap::check(&expr, g.catalog, t)?;
        refuse_sensitive(&expr, g, t, sensitive)?;
        f.egenskap = Some(expr);
    }
    let overlaps = p.raw("overlapp");
    if overlaps.len() > MAX_OVERLAPS {
        return Err(ApiError::bad(
            4006,
            format!(
                "overlapp er gitt {} ganger; høyst {MAX_OVERLAPS} er tillatt",
                overlaps.len()
            ),
        ));
    }
    for raw in overlaps {
        let s = unquote(raw);
        let (id, inner) = match s.split_once('(') {
            Some((id, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(|| {
                    ApiError::bad(4005, format!("Ugyldig overlapp '{raw}': mangler ')'"))
                })?;
                (id, Some(inner))
            }
            None => (s, None),
        };
        let other: u32 = id.trim().parse().map_err(|_| {
            ApiError::bad(
                4005,
                format!("Ugyldig overlapp '{raw}': forventet vegobjekttype-id"),
            )
        })?;
        let ot = g.catalog.object_type(other).ok_or_else(|| {
            ApiError::bad(
                4005,
                format!("Ugyldig overlapp '{raw}': ukjent vegobjekttype {other}"),
            )
        })?;
        let expr = match inner {
            Some(i) => {
                let e = egenskap::parse(i)?;
                egenskap::check(&e, g.catalog, ot)?;
                refuse_sensitive(&e, g, ot, sensitive)?;
                Some(e)
            }
            None => None,
        };
        // identical terms select the same rows: evaluate them once
        let term = (other, expr);
        if !f.overlaps.contains(&term) {
            f.overlaps.push(term);
        }
    }
    Ok(f)
}

/// At most MAX_LIST_ITEMS items in each list filter (422: 4003 for number lists, else 4006).
fn check_list_lengths(p: &Params) -> ApiResult<()> {
    for (name, code) in [
        ("region", 4003),
        ("fylke", 4003),
        ("vegavdeling", 4003),
        ("kommune", 4003),
        ("kontraktsomrade", 4006),
        ("riksvegrute", 4006),
        ("vegreferanse", 4006),
        ("veglenke", 4006),
    ] {
        let n = p.list(name).len();
        if n > MAX_LIST_ITEMS {
            return Err(ApiError::bad(
                code,
                format!("{name} har {n} verdier; høyst {MAX_LIST_ITEMS} er tillatt"),
            ));
        }
    }
    Ok(())
}

/// Time a query may first take on the async worker itself before it moves to the blocking pool.
const QUICK_SLICE: Duration = Duration::from_micros(200);

/// As [`off_the_workers`] for work that is usually quick (statistics: microseconds): it first
/// runs on this worker within [`QUICK_SLICE`] (a hand-off to the blocking pool costs more than
/// the work); stopped by that slice, it runs again on the blocking pool within the budget.
async fn quick_or_off_the_workers<T: Send + 'static>(
    s: &AppState,
    work: impl Fn() -> T + Send + Sync + 'static,
) -> ApiResult<T> {
    if s.config.query_budget <= QUICK_SLICE {
        return off_the_workers(s, work).await;
    }
    let quick = budget::run(
        Instant::now() + QUICK_SLICE,
        Arc::new(AtomicBool::new(false)),
        &work,
    );
    match quick {
        Ok(v) => Ok(v),
        Err(Stop::Deadline) => off_the_workers(s, work).await,
        Err(Stop::TooComplex) => Err(ApiError::bad(4005, "Filteret er for sammensatt")),
    }
}

/// Run a road-object query's CPU-bound selection on the blocking pool, so the async workers
/// stay free for other requests, within the request's budget (`--query-budget`): the work
/// checks the deadline as it goes and stops, answering 503/5003. When the request goes away
/// (client gone, request timeout) the work is told to stop too.
async fn off_the_workers<T: Send + 'static>(
    s: &AppState,
    work: impl FnOnce() -> T + Send + 'static,
) -> ApiResult<T> {
    struct CancelOnDrop(Arc<AtomicBool>);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let limit = s.config.query_budget;
    let now = Instant::now();
    // (a budget too large to add is as good as none)
    let deadline = now
        .checked_add(limit)
        .unwrap_or(now + Duration::from_secs(365 * 86_400));
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let flag = cancel.0.clone();
    let done = tokio::task::spawn_blocking(move || budget::run(deadline, flag, work)).await;
    drop(cancel);
    match done {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(Stop::Deadline)) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            5003,
            format!(
                "Spørringen brukte opp tidsbudsjettet sitt ({} s); avgrens filteret (område, egenskap, overlapp) eller prøv igjen",
                limit.as_secs_f64()
            ),
        )),
        Ok(Err(Stop::TooComplex)) => Err(ApiError::bad(4005, "Filteret er for sammensatt")),
        Err(e) => {
            tracing::error!(error = %e, "road-object selection failed");
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                5000,
                "Uventet feil på tjenesten",
            ))
        }
    }
}

fn tolerance(p: &Params) -> ApiResult<Option<f64>> {
    match p.int("geometritoleranse")? {
        None => Ok(None),
        Some(t) if t > 0 && t <= 10_000 => Ok(Some(t as f64)),
        Some(t) => Err(ApiError::bad(
            4002,
            format!("geometritoleranse må være et positivt heltall (10, 20 eller 30), ikke {t}"),
        )),
    }
}

/// GET /vegobjekter — one entry per object type.
#[utoipa::path(get, path = "/vegobjekter", tag = "vegobjekter", params(crate::api::query_doc::NoQuery), responses((status = 200, description = "Array of {id, navn, href}", body = [ObjectKind])))]
pub async fn list_object_kinds(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let list: Vec<ObjectKind<'_>> = s
        .catalog()
        .types
        .iter()
        .map(|t| ObjectKind {
            id: t.id,
            navn: &t.name,
            href: s.href(&format!("/vegobjekter/{}", t.id)),
        })
        .collect();
    Ok(respond(n, &list))
}

/// GET /vegobjekter/{type}/ — filtered objects of one type, paginated by id.
#[utoipa::path(get, path = "/vegobjekter/{type}", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ListQuery),
    responses((status = 200, description = "{objekter, metadata: {returnert, neste}}; metadata.antall (the total) with the plain `application/vnd.vegvesen.nvdb-v2+json` (revision 0)", body = ObjectPageDoc), (status = 404, description = "Unknown type (4012)"),
              (status = 422, description = "Bad or too large filter (4003, 4005, 4006, …)"), (status = 503, description = "Selection ran out of its time budget (5003)")))]
pub async fn list_objects(
    State(s): State<AppState>,
    Path(tid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let allowed: Vec<&str> = FILTERS.iter().chain(LIST_ONLY).copied().collect();
    let (p, n) = begin_geo(&headers, q.as_deref(), &allowed)?;
    let tid = type_id(&tid)?;
    let g = s.store.current();
    let empty = empty_type(tid);
    let data = type_data(&g, tid, &empty)?;
    let srid = p.srid()?;
    // one authentication per request: the filter check and the rendering share it
    let sensitive = sees_sensitive(&s, &headers);
    let filter = parse_filter(&g, &p, tid, srid, sensitive)?;
    let segment = p.bool("segmentering")?.unwrap_or(true);
    let include = Include::from_words(
        &p.words("inkluder", INKLUDER)?,
        &p.words("inkludergeometri", INKLUDERGEOMETRI)?,
        false,
    );
    let antall = page_size(&p, MAX_PAGE)?;
    let from = start(&p)?;
    let (filter, rows) = {
        let g = g.clone();
        off_the_workers(&s, move || {
            let empty = empty_type(tid);
            let data = type_data(&g, tid, &empty).unwrap_or(&empty);
            let rows = g.select_objects(data, &filter);
            (filter, rows)
        })
        .await?
    };
    let first_row = match from {
        Some(c) => data.first_row_after_id(crate::ids::ObjectId(c.key)) as u32,
        None => 0,
    };
    let skip = if first_row == 0 {
        0
    } else {
        rows.rank(first_row - 1)
    };
    let end = (skip + antall as u64).min(rows.len());
    let page: Vec<u32> = (skip..end)
        .map(|k| rows.select(k as u32).expect("k < len"))
        .collect();
    let last = page.last().map(|&r| r as usize);
    let next = next_start(&p, g.id, last.map(|r| (data.id_at(r).get(), 0.0)))?;
    if n.geojson {
        let out = geojson::Crs::new(geojson::output_srid(&p)?);
        let path = format!("/vegobjekter/{tid}.geojson");
        let next = (end < rows.len()).then(|| next_href(&s, &path, q.as_deref(), antall, &next));
        let features = geojson::Features::objects(
            g.clone(),
            g.objects.get(&tid).cloned(),
            page,
            out,
            sensitive,
        );
        return Ok(geojson::v2_collection(
            features,
            out.srid,
            next,
            Some(rows.len()),
        ));
    }
    let path = format!("/vegobjekter/{tid}");
    let returned = page.len();
    let metadata = streamed_envelope(
        &s,
        &path,
        q.as_deref(),
        (),
        returned,
        antall,
        next,
        Some(rows.len()),
        n.revision,
    )
    .metadata;
    let segment = segment && filter.segments();
    let objects = ObjectPage {
        data: g.objects.get(&tid).cloned(),
        render: RenderOwned {
            s: s.clone(),
            g: g.clone(),
            srid,
            include,
            tolerance_m: tolerance(&p)?,
            segment_by: segment.then_some(filter),
            revision: n.revision,
            z_tag: n.wkt_z_tag(),
            sensitive,
        },
        rows: page,
    };
    Ok(respond_page(n, objects, metadata, s.config.stream_pages))
}

/// A page of objects, owning what rendering needs: each chunk of a streamed page builds the
/// borrowed [`Render`](crate::api::object_json::Render) and renders its objects one by one.
struct ObjectPage {
    render: RenderOwned,
    /// `None`: the type has no objects (then `rows` is empty).
    data: Option<Arc<TypeData>>,
    rows: Vec<u32>,
}

impl PageItems for ObjectPage {
    fn count(&self) -> usize {
        self.rows.len()
    }

    fn write<S: serde::ser::SerializeSeq>(
        &self,
        seq: &mut S,
        range: std::ops::Range<usize>,
    ) -> Result<(), S::Error> {
        let Some(data) = &self.data else {
            return Ok(());
        };
        StreamedObjects {
            render: &self.render.render(),
            data,
            rows: &self.rows[range],
        }
        .write(seq)
    }
}

/// GET /vegobjekter/{type}/statistikk/ — `{antall, strekningslengde}` for the same filters.
/// Paging and content parameters are refused (422/4013), as in v2.
#[utoipa::path(get, path = "/vegobjekter/{type}/statistikk", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), StatisticsQuery),
    responses((status = 200, description = "{antall, strekningslengde}", body = Statistics),
              (status = 422, description = "Bad or too large filter (4003, 4005, 4006, …)"), (status = 503, description = "Selection ran out of its time budget (5003)")))]
pub async fn get_statistics(
    State(s): State<AppState>,
    Path(tid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = match begin(&headers, q.as_deref(), FILTERS) {
        Err(e) if e.code == 4013 => {
            return Err(ApiError::bad(
                4013,
                format!("{} (støttes ikke på statistikk)", e.message),
            ))
        }
        other => other?,
    };
    let tid = type_id(&tid)?;
    let g = s.store.current();
    type_data(&g, tid, &empty_type(tid))?;
    let filter = parse_filter(&g, &p, tid, p.srid()?, sees_sensitive(&s, &headers))?;
    let segment = p.bool("segmentering")?.unwrap_or(true);
    let (count, length) = quick_or_off_the_workers(&s, move || {
        let empty = empty_type(tid);
        let data = type_data(&g, tid, &empty).unwrap_or(&empty);
        let rows = g.select_objects(data, &filter);
        (rows.len(), g.objects_length(data, &rows, &filter, segment))
    })
    .await?;
    Ok(respond(
        n,
        &Statistics {
            antall: count,
            strekningslengde: whole_meters(length),
        },
    ))
}

/// An entry of `GET /vegobjekter`: an object type and where its objects are listed.
#[derive(Serialize, ToSchema)]
pub struct ObjectKind<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub href: String,
}

/// A page of `GET /vegobjekter/{type}/` (the schema only: pages are streamed by `api::stream`).
#[derive(ToSchema)]
pub struct ObjectPageDoc<'a> {
    pub objekter: Vec<crate::api::object_docs::ObjectDoc<'a>>,
    pub metadata: crate::api::paging::PageMetadata,
}

/// `GET /vegobjekter/{type}/{id}`: the object, or with `dybde` a list of it and its
/// descendants (the schema only).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ObjectOrList<'a> {
    Object(Box<crate::api::object_docs::ObjectDoc<'a>>),
    List(Vec<crate::api::object_docs::ObjectDoc<'a>>),
}

/// `GET /vegobjekter/{type}/statistikk`.
#[derive(Serialize, ToSchema)]
pub struct Statistics {
    pub antall: u64,
    /// Whole meters, as documented (`"strekningslengde": 1247690`) and read by the Java V2
    /// client (`RoadObjectParser.parseStatistics`: `parseLongMember`).
    pub strekningslengde: u64,
}

fn locate<'g>(
    g: &'g Generation,
    tid: &str,
    id: &str,
    empty: &'g TypeData,
) -> ApiResult<(&'g TypeData, usize)> {
    let tid = type_id(tid)?;
    let id: u64 = id
        .parse()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig vegobjekt-id: '{id}'")))?;
    let data = type_data(g, tid, empty)?;
    let row = data
        .table
        .row_of(id)
        .ok_or_else(|| ApiError::not_found(format!("Vegobjekt {id} av type {tid} finnes ikke")))?;
    Ok((data, row))
}

/// GET /vegobjekter/{type}/{id} — one object; with `dybde` a list of it and its descendants.
#[utoipa::path(get, path = "/vegobjekter/{type}/{id}", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), ObjectQuery),
    responses((status = 200, description = "The object (or a list with dybde)", body = ObjectOrList), (status = 404, description = "Unknown object (4012)")))]
pub async fn get_object(
    State(s): State<AppState>,
    Path((tid, id)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin_geo(&headers, q.as_deref(), OBJECT_PARAMS)?;
    let g = s.store.current();
    let empty = empty_type(0);
    let (data, row) = locate(&g, &tid, &id, &empty)?;
    let words = p.words("inkluder", OBJECT_INKLUDER)?;
    let render = Render {
        s: &s,
        g: &g,
        srid: p.srid()?,
        include: Include::from_words(
            &words,
            &p.words("inkludergeometri", INKLUDERGEOMETRI)?,
            true,
        ),
        tolerance_m: tolerance(&p)?,
        segment_by: None,
        revision: n.revision,
        z_tag: n.wkt_z_tag(),
        sensitive: sees_sensitive(&s, &headers),
    };
    let geo = match n.geojson {
        true => Some(geojson::Crs::new(geojson::output_srid(&p)?)),
        false => None,
    };
    let feature = |d: &TypeData, r: usize, crs: geojson::Crs| -> ApiResult<String> {
        let mut out = String::new();
        geojson::push_object(&mut out, &g, d, r, crs, render.sensitive)?;
        Ok(out)
    };
    let depth = match p.one("dybde")? {
        None => {
            return Ok(match geo {
                Some(crs) => {
                    geojson::feature_response(feature(data, row, crs)?, crate::api::media::GEOJSON)
                }
                None => respond(n, &render.object(data, row)?),
            })
        }
        Some(d) if d.eq_ignore_ascii_case("full") => usize::MAX,
        Some(d) => match d.parse::<usize>() {
            Ok(v) if v >= 1 => v,
            _ => {
                return Err(ApiError::bad(
                    4002,
                    format!("Ugyldig dybde '{d}': forventet 1, 2, ... eller full"),
                ))
            }
        },
    };
    if let Some(crs) = geo {
        let mut items = vec![feature(data, row, crs)?];
        for (d, r) in g.descendants(data, row, depth) {
            items.push(feature(d, r, crs)?);
        }
        let features = geojson::Features::prerendered(items);
        return Ok(geojson::v2_collection(features, crs.srid, None, None));
    }
    // breadth first: level 1 is the object itself
    let mut out = vec![render.object(data, row)?];
    for (d, r) in g.descendants(data, row, depth) {
        out.push(render.object(d, r)?);
    }
    Ok(respond(n, &out))
}

fn property_list<'a>(
    s: &'a AppState,
    g: &'a Generation,
    data: &'a TypeData,
    row: usize,
    sensitive: bool,
) -> ApiResult<Vec<crate::api::object_docs::PropertyDoc<'a>>> {
    let render = Render {
        s,
        g,
        srid: Srid::default(),
        include: Include::from_words(&[], &[], true),
        tolerance_m: None,
        segment_by: None,
        revision: 2,
        z_tag: true,
        sensitive,
    };
    let t = g
        .catalog
        .object_type(data.table.type_id)
        .expect("catalogue type");
    render.property_docs(t, &data.table, row)
}

/// GET /vegobjekter/{type}/{id}/egenskaper
#[utoipa::path(get, path = "/vegobjekter/{type}/{id}/egenskaper", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), crate::api::query_doc::NoQuery), responses((status = 200, description = "Array of property values", body = [crate::api::object_docs::PropertyDoc])))]
pub async fn list_object_properties(
    State(s): State<AppState>,
    Path((tid, id)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let g = s.store.current();
    let empty = empty_type(0);
    let (data, row) = locate(&g, &tid, &id, &empty)?;
    Ok(respond(
        n,
        &property_list(&s, &g, data, row, sees_sensitive(&s, &headers))?,
    ))
}

/// GET /vegobjekter/{type}/{id}/egenskaper/{egenskapstype}
#[utoipa::path(get, path = "/vegobjekter/{type}/{id}/egenskaper/{egenskapstype}", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), ("egenskapstype" = u32, Path, description = "property type id"), crate::api::query_doc::NoQuery),
    responses((status = 200, description = "One property value", body = crate::api::object_docs::PropertyDoc), (status = 404, description = "No such value (4012)")))]
pub async fn get_object_property(
    State(s): State<AppState>,
    Path((tid, id, pid)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let g = s.store.current();
    let empty = empty_type(0);
    let (data, row) = locate(&g, &tid, &id, &empty)?;
    let pid: u64 = pid
        .parse()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig egenskapstype-id: '{pid}'")))?;
    let v = property_list(&s, &g, data, row, sees_sensitive(&s, &headers))?
        .into_iter()
        .find(|d| u64::from(d.id) == pid)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Vegobjekt {id} har ingen verdi for egenskapstype {pid}"
            ))
        })?;
    Ok(respond(n, &v))
}

/// GET /vegobjekt?id= — redirects (302, Location) to the object's URL.
#[utoipa::path(get, path = "/vegobjekt", tag = "vegobjekter",
    params(FindQuery), responses((status = 302, description = "Location: the object's URL"), (status = 404, description = "Unknown id (4012)")))]
pub async fn find_object(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, _) = begin(&headers, q.as_deref(), FIND_PARAMS)?;
    let id = p
        .int("id")?
        .ok_or_else(|| ApiError::bad(4004, "Parameteren id mangler"))?;
    let g = s.store.current();
    let (t, _) = g
        .find_object(crate::ids::ObjectId(id as u64))
        .ok_or_else(|| ApiError::not_found(format!("Vegobjekt {id} finnes ikke")))?;
    let href = s.href(&format!("/vegobjekter/{t}/{id}"));
    Ok((StatusCode::FOUND, [(header::LOCATION, href)]).into_response())
}

/// Does the request present credentials of a user who may see sensitive values?
fn sees_sensitive(s: &AppState, headers: &HeaderMap) -> bool {
    crate::auth::token::optional_user(&s.users, headers).is_some_and(|u| u.sees_sensitive())
}

/// Filtering on a sensitive value would reveal it: 422 unless the caller may see it.
fn refuse_sensitive(
    e: &egenskap::Expr,
    g: &Generation,
    t: &crate::catalog::ObjectType,
    allowed: bool,
) -> ApiResult<()> {
    match egenskap::sensitive_property(e, g.catalog, t) {
        Some(p) if !allowed => Err(ApiError::bad(
            4005,
            format!("Egenskapstype {p} er skjermet (sensitivitet 1) og kan bare filtreres av brukere med tilgang"),
        )),
        _ => Ok(()),
    }
}
