//! Every version of an object: `/vegobjekter/{type}/{id}/versjoner` (the list),
//! `/vegobjekter/{type}/{id}/{versjon}` (one version), and `alle_versjoner=true` on the object
//! list (every version of every object of the type, current and closed).
//!
//! A version is a row of the type's current table or of its history (`Generation::versions`).
//! One version and `alle_versjoner` are answered from every version at once
//! (`Generation::every_version`): each type's versions on the network of every day, so a
//! closed version on a link that no longer exists is located there, with the same rendering
//! and selection code as today's objects.
//!
//! `alle_versjoner` pages by version: the list is every (id, versjon) pair in that order, and
//! the cursor (`start`) holds the last pair returned, so a page holds exactly `antall` versions
//! and the pages together hold every version once. The list's filters select among the
//! versions (areas and road references by the network of every day, `overlapp` against every
//! version of the other type); `tidspunkt` (one day) and `segmentering` with it are 422/4009.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;

use super::{
    known_type, off_the_workers, parse_filter, sees_sensitive, tolerance, ObjectPage, MAX_PAGE,
    OBJECT_INKLUDER,
};
use crate::api::error::{ApiError, ApiResult};
use crate::api::geojson;
use crate::api::handler::begin;
use crate::api::media::{json as respond, Negotiated};
use crate::api::object_json::{Include, Render, RenderOwned, INKLUDER, INKLUDERGEOMETRI};
use crate::api::paging::{next_href, next_start, page_size, start, streamed_envelope};
use crate::api::params::Params;
use crate::api::state::AppState;
use crate::api::stream::respond_page;
use crate::generation::{Generation, TypeData};
use crate::snapshot::columns::{ObjectTable, OPEN_END};

/// Query parameters of one version.
pub(super) const VERSION_PARAMS: &[&str] =
    &["inkluder", "inkludergeometri", "srid", "geometritoleranse"];
crate::query_params!(VersionQuery = [VERSION_PARAMS], inkluder = OBJECT_INKLUDER);

/// One entry of `GET /vegobjekter/{type}/{id}/versjoner`.
#[derive(Serialize, ToSchema)]
pub struct VersionEntry {
    pub versjon: u32,
    /// First day of the version (`YYYY-MM-DD`).
    #[schema(value_type = String, format = Date)]
    pub startdato: String,
    /// The day it was closed (exclusive); absent while it is the current version.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Date)]
    pub sluttdato: Option<String>,
    pub href: String,
}

/// The type, id (and version) of a version route's path. A segment that is not a number
/// names no resource: 404, the answer such paths had before these routes existed (e.g.
/// `/vegobjekter/105/statistikk/1`).
fn path_numbers(tid: &str, id: &str) -> ApiResult<(u32, u64)> {
    match (tid.parse(), id.parse()) {
        (Ok(tid), Ok(id)) => Ok((tid, id)),
        _ => Err(no_resource()),
    }
}

fn no_resource() -> ApiError {
    ApiError::not_found("Ressursen finnes ikke")
}

/// The versions of object `id` of type `tid`, oldest first; 404 when it has none.
fn versions_of(g: &Generation, tid: u32, id: u64) -> ApiResult<Vec<(&ObjectTable, usize)>> {
    known_type(g, tid)?;
    let versions = g.versions(tid, id);
    if versions.is_empty() {
        return Err(ApiError::not_found(format!(
            "Vegobjekt {id} av type {tid} finnes ikke"
        )));
    }
    Ok(versions)
}

/// GET /vegobjekter/{type}/{id}/versjoner — every version of the object, oldest first.
#[utoipa::path(get, path = "/vegobjekter/{type}/{id}/versjoner", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), crate::api::query_doc::NoQuery),
    responses((status = 200, description = "Every version of the object, oldest first: {versjon, startdato, sluttdato (absent while current), href}", body = [VersionEntry]),
              (status = 404, description = "Unknown type or object (4012)")))]
pub async fn list_versions(
    State(s): State<AppState>,
    Path((tid, id)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (tid, id) = path_numbers(&tid, &id)?;
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let g = s.store.current();
    let list: Vec<VersionEntry> = versions_of(&g, tid, id)?
        .into_iter()
        .map(|(t, r)| VersionEntry {
            versjon: t.version[r],
            startdato: crate::api::dto::date(t.start_date[r]),
            sluttdato: (t.end_date[r] != OPEN_END).then(|| crate::api::dto::date(t.end_date[r])),
            href: s.href(&format!("/vegobjekter/{tid}/{id}/{}", t.version[r])),
        })
        .collect();
    Ok(respond(n, &list))
}

/// GET /vegobjekter/{type}/{id}/{versjon} — one version of the object, current or closed.
#[utoipa::path(get, path = "/vegobjekter/{type}/{id}/{versjon}", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), ("versjon" = u32, Path, description = "version number (see /versjoner)"), VersionQuery),
    responses((status = 200, description = "The version, shaped as the object (metadata.versjon, startdato, sluttdato its own)", body = crate::api::object_docs::ObjectDoc),
              (status = 404, description = "Unknown type, object or version (4012)")))]
pub async fn get_version(
    State(s): State<AppState>,
    Path((tid, id, version)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (tid, id) = path_numbers(&tid, &id)?;
    let version: u32 = version.parse().map_err(|_| no_resource())?;
    let (p, n) = begin(&headers, q.as_deref(), VERSION_PARAMS)?;
    let g = s.store.current();
    let (table, row) = versions_of(&g, tid, id)?
        .into_iter()
        .find(|(t, r)| t.version[*r] == version)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Vegobjekt {id} av type {tid} har ingen versjon {version}"
            ))
        })?;
    let data = page_data(tid, vec![(table, row)])?;
    // located on the network of every day (its version's links, closed or not)
    let g = off_the_workers(&s, move || g.every_version()).await?;
    let render = Render {
        s: &s,
        g: &g,
        srid: p.srid()?,
        include: Include::from_words(
            &p.words("inkluder", OBJECT_INKLUDER)?,
            &p.words("inkludergeometri", INKLUDERGEOMETRI)?,
            true,
        ),
        tolerance_m: tolerance(&p)?,
        segment_by: None,
        revision: n.revision,
        z_tag: n.wkt_z_tag(),
        sensitive: sees_sensitive(&s, &headers),
    };
    Ok(respond(n, &render.object(&data, 0)?))
}

/// The versions `rows` (in this order) as a table of their own, with no index (rendering
/// reads only the table).
fn page_data(tid: u32, rows: Vec<(&ObjectTable, usize)>) -> ApiResult<TypeData> {
    let corrupt = |e: crate::snapshot::columns::TableError| {
        crate::error::EngineError::Internal(e.to_string())
    };
    let mut parts = Vec::new();
    // consecutive rows of one table are taken together
    let mut i = 0;
    while i < rows.len() {
        let t = rows[i].0;
        let mut j = i;
        while j < rows.len() && std::ptr::eq(rows[j].0, t) {
            j += 1;
        }
        let taken: Vec<usize> = rows[i..j].iter().map(|(_, r)| *r).collect();
        parts.push(t.take(&taken).map_err(corrupt)?);
        i = j;
    }
    let table = match parts.len() {
        0 => ObjectTable::new(tid),
        // the parts in the order given (appended), versions of one id side by side
        _ => ObjectTable::concat_any_order(tid, parts).map_err(corrupt)?,
    };
    Ok(TypeData::new(table, Default::default()))
}

/// `GET /vegobjekter/{type}?alle_versjoner=true`: every version of the type's objects, paged
/// by (id, versjon) (see the module's text).
pub(super) async fn list_all_versions(
    s: AppState,
    tid: u32,
    p: &Params<'_>,
    n: Negotiated,
    q: Option<&str>,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    for name in ["tidspunkt", "segmentering"] {
        if p.has(name) {
            return Err(ApiError::bad(
                4009,
                format!("alle_versjoner kan ikke kombineres med {name}"),
            ));
        }
    }
    let current = s.store.current();
    known_type(&current, tid)?;
    let srid = p.srid()?;
    let sensitive = sees_sensitive(&s, headers);
    let include = Include::from_words(
        &p.words("inkluder", INKLUDER)?,
        &p.words("inkludergeometri", INKLUDERGEOMETRI)?,
        false,
    );
    let antall = page_size(p, MAX_PAGE)?;
    let after = start(p)?.map(|c| (c.key, c.key2 as u32));
    // every version at once, made off the workers on first use
    let g = off_the_workers(&s, move || {
        let every = current.every_version();
        if let Some(d) = every.objects.get(&tid) {
            let _ = d.index();
        }
        every
    })
    .await?;
    let filter = parse_filter(&g, p, tid, srid, sensitive)?;
    let data = g.objects.get(&tid).cloned();
    let selected = {
        let (g, data) = (g.clone(), data.clone());
        off_the_workers(&s, move || match &data {
            Some(d) => g.select_objects(d, &filter),
            None => roaring::RoaringBitmap::new(),
        })
        .await?
    };
    let table = data.as_ref().map(|d| &*d.table);
    // the rows after the cursor: the table is in (id, versjon) order
    let first = match (after, table) {
        (Some(c), Some(t)) => {
            // the first row of id c.0, then past its versions up to c.1
            let mut r = t.id.partition_point(|&i| i < c.0);
            while r < t.len() && (t.id[r], t.version[r]) <= c {
                r += 1;
            }
            r
        }
        _ => 0,
    } as u32;
    let skip = if first == 0 {
        0
    } else {
        selected.rank(first - 1)
    };
    let end = (skip + antall as u64).min(selected.len());
    let page: Vec<u32> = (skip..end)
        .filter_map(|k| selected.select(k as u32))
        .collect();
    let more = end < selected.len();
    let last = match (page.last(), table) {
        (Some(&r), Some(t)) => Some((t.id[r as usize], f64::from(t.version[r as usize]))),
        _ => None,
    };
    let total = selected.len() as usize;
    let data =
        data.unwrap_or_else(|| Arc::new(TypeData::new(ObjectTable::new(tid), Default::default())));
    let next = next_start(p, g.id, last)?;
    if n.geojson {
        let out = geojson::Crs::new(geojson::output_srid(p)?);
        let path = format!("/vegobjekter/{tid}.geojson");
        let next = more.then(|| next_href(&s, &path, q, antall, &next));
        let features = geojson::Features::objects(g.clone(), Some(data), page, out, sensitive);
        return Ok(geojson::v2_collection(
            features,
            out.srid,
            next,
            Some(total as u64),
        ));
    }
    let path = format!("/vegobjekter/{tid}");
    let metadata = streamed_envelope(
        &s,
        &path,
        q,
        (),
        page.len(),
        antall,
        next,
        Some(total as u64),
        n.revision,
    )
    .metadata;
    let objects = ObjectPage {
        data: Some(data),
        render: RenderOwned {
            s: s.clone(),
            g: g.clone(),
            srid,
            include,
            tolerance_m: tolerance(p)?,
            segment_by: None,
            revision: n.revision,
            z_tag: n.wkt_z_tag(),
            sensitive,
        },
        rows: page,
    };
    Ok(respond_page(n, objects, metadata, s.config.stream_pages))
}
