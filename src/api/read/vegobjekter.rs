//! Road objects: /vegobjekter, /vegobjekter/{type}/ (filtered, paginated),
//! /vegobjekter/{type}/statistikk/, /vegobjekter/{type}/{id} (+ dybde), its egenskaper, and the
//! /vegobjekt?id= helper.
//!
//! This file: the parameters, routes, the type list, the object list and statistics.
//! `filter.rs` parses the filters, `budgeted.rs` runs a selection within the time budget,
//! `object.rs` answers for one object.

pub(crate) mod budgeted;
mod filter;
mod flat;
mod object;
mod versions;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::api::error::{ApiError, ApiResult};
use crate::api::geojson;
use crate::api::handler::{begin, begin_geo_csv};
use crate::api::media::{json as respond, Answer};
use crate::api::object_json::{
    whole_meters, Include, RenderOwned, StreamedObjects, INKLUDER, INKLUDERGEOMETRI,
};
use crate::api::paging::{next_href, next_start, page_size, start, streamed_envelope};
use crate::api::params::Params;
use crate::api::state::AppState;
use crate::api::stream::{respond_page, PageItems};
use crate::generation::{Generation, TypeData};
use budgeted::{off_the_workers, quick_or_off_the_workers};
pub use filter::{parse_filter, parse_filter_of_every_type};

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
    // the day answered (`api::dated`)
    "tidspunkt",
    // the network attributes (`network_attributes.rs`)
    "typeveg",
    "detaljniva",
    "trafikantgruppe",
    "adskiltelop",
    "sideanlegg",
    "konnekteringslenker",
    "vegsystemreferanse",
    // object ids, last modification, polygon (`filter.rs`)
    "ider",
    "endret_etter",
    "polygon",
    // the objects along a route (`query::on_route`)
    "rute",
];
const LIST_ONLY: &[&str] = &[
    "inkluder",
    "inkludergeometri",
    "geometritoleranse",
    "antall",
    "start",
    "alle_versjoner",
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
    "tidspunkt",
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
/// Query parameters of an object's properties.
const AT_PARAMS: &[&str] = &["tidspunkt"];
crate::query_params!(AtQuery = [AT_PARAMS]);
const FIND_PARAMS: &[&str] = &["id"];
crate::query_params!(FindQuery = [FIND_PARAMS]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(list_object_kinds))
        .routes(crate::api::handler::alias(
            "/vegobjekter/",
            crate::read_route!(list_object_kinds),
        ))
        .routes(crate::read_route!(list_objects))
        .routes(crate::api::handler::alias(
            "/vegobjekter/{type}/",
            crate::read_route!(list_objects),
        ))
        .routes(crate::read_route!(get_statistics))
        .routes(crate::api::handler::alias(
            "/vegobjekter/{type}/statistikk/",
            crate::read_route!(get_statistics),
        ))
        .routes(crate::read_route!(object::get_object))
        .routes(crate::read_route!(object::list_object_properties))
        .routes(crate::read_route!(object::get_object_property))
        .routes(crate::read_route!(object::find_object))
        .routes(crate::read_route!(versions::list_versions))
        .routes(crate::read_route!(versions::get_version))
}

pub(crate) fn type_id(raw: &str) -> ApiResult<u32> {
    raw.parse()
        .map_err(|_| ApiError::bad(4002, format!("Ugyldig vegobjekttype-id: '{raw}'")))
}

/// The type's data in this generation; a catalogue type without objects is an empty table.
fn type_data<'g>(g: &'g Generation, id: u32, empty: &'g TypeData) -> ApiResult<&'g TypeData> {
    known_type(g, id)?;
    Ok(g.objects.get(&id).map(|d| d.as_ref()).unwrap_or(empty))
}

/// 404 unless the catalogue has the type.
pub(crate) fn known_type(g: &Generation, id: u32) -> ApiResult<()> {
    match g.catalog.object_type(id) {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found(format!(
            "Vegobjekttype {id} finnes ikke"
        ))),
    }
}

pub(crate) fn empty_type(id: u32) -> TypeData {
    TypeData::new(
        crate::snapshot::columns::ObjectTable::new(id),
        Default::default(),
    )
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
    let (p, n) = begin_geo_csv(&headers, q.as_deref(), &allowed)?;
    let tid = type_id(&tid)?;
    if p.bool("alle_versjoner")? == Some(true) {
        if n.csv {
            return Err(ApiError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                4001,
                "CSV støttes ikke med alle_versjoner",
            ));
        }
        return versions::list_all_versions(s, tid, &p, n, q.as_deref(), &headers).await;
    }
    let g = crate::api::dated::generation(&s, &p)?;
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
    let first_row = match start(&p)? {
        Some(c) => data.first_row_after_id(crate::ids::ObjectId(c.key)) as u32,
        None => 0,
    };
    // the total: revision 0's `metadata.antall` and GeoJSON's `numberMatched`
    let counted = n.geojson || (n.revision == 0 && !n.csv);
    let (page, more, total) = list_page(&s, &g, tid, &filter, first_row, antall, counted).await?;
    let last = page.last().map(|&r| r as usize);
    let next = next_start(&p, g.id, last.map(|r| (data.id_at(r).get(), 0.0)))?;
    if n.csv {
        let path = format!("/vegobjekter/{tid}.csv");
        let next = more.then(|| next_href(&s, &path, q.as_deref(), antall, &next));
        let data = g.objects.get(&tid).map(|d| d.as_ref());
        return Ok(flat::answer(n, &g, tid, data, &page, sensitive, next));
    }
    if n.geojson {
        let out = geojson::Crs::new(geojson::output_srid(&p)?);
        let path = format!("/vegobjekter/{tid}.geojson");
        let next = more.then(|| next_href(&s, &path, q.as_deref(), antall, &next));
        let features = geojson::Features::objects(
            g.clone(),
            g.objects.get(&tid).cloned(),
            page,
            out,
            sensitive,
        );
        return Ok(geojson::v2_collection(features, out.srid, next, total));
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
        total,
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

/// The page of an object list of type `tid` after row `first_row` (at most `antall` rows),
/// whether more follow, and, when `counted`, how many the filter selects in all. Without the
/// total, a page is selected on its own ([`Generation::select_objects_page`]: a polygon
/// decides only as many objects as the page takes), one row past it telling whether more
/// follow. A selection in an index (a map extent, an area) is usually quick: first on this
/// worker.
async fn list_page(
    s: &AppState,
    g: &Arc<Generation>,
    tid: u32,
    filter: &crate::query::objects::ObjectFilter,
    first_row: u32,
    antall: usize,
    counted: bool,
) -> ApiResult<(Vec<u32>, bool, Option<u64>)> {
    let (g, filter) = (g.clone(), filter.clone());
    quick_or_off_the_workers(s, move || {
        let empty = empty_type(tid);
        let data = type_data(&g, tid, &empty).unwrap_or(&empty);
        if !counted {
            let mut page = g.select_objects_page(data, &filter, first_row, antall + 1);
            let more = page.len() > antall;
            page.truncate(antall);
            return (page, more, None);
        }
        let rows = g.selected_rows(data, &filter);
        // read in order from the cursor (a select per row would scan a container each time)
        let mut from = rows.range(first_row..);
        let page: Vec<u32> = from.by_ref().take(antall).collect();
        (page, from.next().is_some(), Some(rows.len()))
    })
    .await
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

    /// Id, href and metadata only (`inkluder=minimum`, `metadata`, or nothing).
    fn light(&self) -> bool {
        let i = &self.render.include;
        !(i.properties || i.relations || i.location || i.segments || i.geometry)
    }

    fn write_json(&self, out: &mut Vec<u8>, range: std::ops::Range<usize>) -> bool {
        let Some(data) = &self.data else {
            return false;
        };
        StreamedObjects {
            render: &self.render.render(),
            data,
            rows: &self.rows[range],
        }
        .write_json(out)
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
    spent: Option<axum::Extension<QuickSliceSpent>>,
) -> ApiResult<Response> {
    let (n, work) = statistics_work(&s, &tid, &headers, q.as_deref())?;
    let (count, length) = if spent.is_some() {
        // the direct route ran it on the worker already: on to the blocking pool
        off_the_workers(&s, work).await?
    } else {
        quick_or_off_the_workers(&s, work).await?
    };
    Ok(statistics_answer(n, count, length).into_response())
}

/// Marks a statistics request the stack's direct route gave back after its quick slice on the
/// worker ran out (`answer_statistics`): the handler goes straight to the blocking pool.
#[derive(Clone, Copy, Debug)]
pub struct QuickSliceSpent;

/// `GET /vegobjekter/{type}/statistikk` on the request stack's direct route (`api::stack::direct`):
/// the handler's work with the selection's quick slice run here; None when that slice ran out
/// (the request then goes the general way, marked with [`QuickSliceSpent`]).
pub fn answer_statistics(
    s: &AppState,
    tid: &str,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Option<ApiResult<Answer>> {
    let (n, work) = match statistics_work(s, tid, headers, query) {
        Ok(w) => w,
        Err(e) => return Some(Err(e)),
    };
    Some(budgeted::quick(s, &work)?.map(|(count, length)| statistics_answer(n, count, length)))
}

/// A statistics request checked and parsed, and its selection ready to run.
fn statistics_work(
    s: &AppState,
    tid: &str,
    headers: &HeaderMap,
    q: Option<&str>,
) -> ApiResult<(
    crate::api::media::Negotiated,
    impl Fn() -> (u64, f64) + Send + Sync + 'static,
)> {
    let (p, n) = match begin(headers, q, FILTERS) {
        Err(e) if e.code == 4013 => {
            return Err(ApiError::bad(
                4013,
                format!("{} (støttes ikke på statistikk)", e.message),
            ))
        }
        other => other?,
    };
    let tid = type_id(tid)?;
    let g = crate::api::dated::generation(s, &p)?;
    known_type(&g, tid)?;
    let filter = parse_filter(&g, &p, tid, p.srid()?, sees_sensitive(s, headers))?;
    let segment = p.bool("segmentering")?.unwrap_or(true);
    Ok((n, move || {
        let work = |data: &TypeData| g.object_statistics(data, &filter, segment);
        // an empty table (three allocations) only for a type without objects
        match g.objects.get(&tid) {
            Some(data) => work(data),
            None => work(&empty_type(tid)),
        }
    }))
}

fn statistics_answer(n: crate::api::media::Negotiated, count: u64, length: f64) -> Answer {
    crate::api::media::answer(
        n,
        &Statistics {
            antall: count,
            strekningslengde: whole_meters(length),
        },
    )
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

/// Does the request present credentials of a user who may see sensitive values?
pub(crate) fn sees_sensitive(s: &AppState, headers: &HeaderMap) -> bool {
    crate::auth::token::optional_user(&s.users, headers).is_some_and(|u| u.sees_sensitive())
}
