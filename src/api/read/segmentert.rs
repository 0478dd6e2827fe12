//! GET /vegnett/segmentert: dynamic segmentation. The network rows `/vegnett/lenker` would
//! select (same area, road reference, network attribute, polygon and `tidspunkt` filters) cut
//! wherever an object of any of the types in `typer` begins or ends (`query::overlay`, whose
//! rules this answer follows), each piece with, per type, the covering objects and their values.
//!
//! - `typer`: 1 to [`MAX_TYPES`] object type ids (required, each once).
//! - `egenskap=<type>(<filter>)` (repeatable, once per type): only that type's objects passing
//!   the filter (the object lists' `egenskap` syntax) cover pieces.
//! - `egenskaper=<type>(<property type ids>)`: the values a type's objects carry (all value
//!   properties by default; `<type>()` none).
//! - `kun_dekket=true`: only pieces covered by every type.
//! - Paging as `/vegnett/lenker`: pieces are ordered by (link id, start position), at most
//!   [`MAX_PAGE`] a page, the cursor holds the last piece's (link id, start position).
//!
//! A piece: `veglenkesekvensid`, `fra_posisjon`, `til_posisjon`, `kortform`, `lengde` (meters),
//! `vegreferanse` / `vegsystemreferanse` (as a link row has them, for the piece's positions),
//! `geometri` (WKT in `srid`) and `vegobjekter`, one member `vegobjekttype_<id>` per type: null
//! where no object covers the piece, `{id, versjon, feltspesifikk, egenskaper}` where one does,
//! a list of those (ascending id) where several do. `egenskaper` has a member
//! `egenskap_<property type id>` per chosen value the object has (an enumerated value's name,
//! or its number for numeric enumerations). Sensitive values are never carried. JSON, XML,
//! GeoJSON (as `/vegnett/lenker`'s: the piece without `geometri` as properties) and CSV
//! (`Accept: text/csv` or `.csv`; one line per piece, nested members as `a.b` columns). JSON
//! and XML pages are streamed piece by piece (`doc`, `api::stream`).

mod doc;
mod statistikk;

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use rayon::prelude::*;
use roaring::RoaringBitmap;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;

pub use doc::piece_refs;
use doc::{PageLayer, PieceDoc, PiecePage};

use crate::api::error::{ApiError, ApiResult};
use crate::api::geojson;
use crate::api::handler::begin_geo_csv;
use crate::api::paging::{next_href, next_start, page_size, start, streamed_envelope};
use crate::api::read::network_attributes::NETWORK_ATTRIBUTE_PARAMS;
use crate::api::read::vegnett::{selected_rows, LIST_PARAMS};
use crate::api::state::AppState;
use crate::api::stream::respond_page;
use crate::catalog::Catalog;
use crate::error::EngineError;
use crate::generation::feature::Geometry;
use crate::generation::{Generation, TypeData};
use crate::index::pieces::LinkPlacements;
use crate::query::egenskap;
use crate::query::objects::ObjectFilter;
use crate::query::overlay::{row_pieces, LinkIntervals, Piece};

/// Largest page of pieces.
pub const MAX_PAGE: usize = 10_000;
/// Most object types in one overlay.
pub const MAX_TYPES: usize = 10;

pub(crate) const OVERLAY_PARAMS: &[&str] = &["typer", "egenskap", "egenskaper", "kun_dekket"];
crate::query_params!(OverlayQuery = [OVERLAY_PARAMS, LIST_PARAMS, NETWORK_ATTRIBUTE_PARAMS]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(list_pieces))
        .routes(crate::read_route!(statistikk::get_overlay_statistics))
}

/// A page of `GET /vegnett/segmentert` (pieces as described in the module documentation).
#[derive(utoipa::ToSchema)]
pub struct PiecePageDoc {
    #[schema(value_type = Vec<Object>)]
    pub objekter: Vec<Value>,
    pub metadata: crate::api::paging::PageMetadata,
}

/// One type of the overlay as asked for.
struct Layer<'a> {
    type_id: u32,
    data: Option<&'a TypeData>,
    filter: Option<egenskap::Expr>,
    /// The value properties carried (None: all).
    values: Option<Vec<u32>>,
}

fn bad(message: String) -> ApiError {
    ApiError::bad(4005, message)
}

/// `typer`, `egenskap` and `egenskaper` as layers, in the order of `typer`.
fn parse_layers<'g>(
    g: &'g Generation,
    p: &crate::api::params::Params,
) -> ApiResult<Vec<Layer<'g>>> {
    let ids = p.int_list("typer")?;
    if ids.is_empty() {
        return Err(bad("typer mangler: gi 1 til 10 vegobjekttype-id-er".into()));
    }
    if ids.len() > MAX_TYPES {
        return Err(bad(format!(
            "typer har {} vegobjekttyper; høyst {MAX_TYPES} er tillatt",
            ids.len()
        )));
    }
    let mut layers: Vec<Layer<'g>> = Vec::new();
    for id in ids {
        let type_id = u32::try_from(id).map_err(|_| bad(format!("Ukjent vegobjekttype {id}")))?;
        if g.catalog.object_type(type_id).is_none() {
            return Err(bad(format!("Ukjent vegobjekttype {id}")));
        }
        if layers.iter().any(|l| l.type_id == type_id) {
            return Err(bad(format!(
                "Vegobjekttype {id} er gitt flere ganger i typer"
            )));
        }
        layers.push(Layer {
            type_id,
            data: g.objects.get(&type_id).map(|d| &**d),
            filter: None,
            values: None,
        });
    }
    for raw in p.raw("egenskap") {
        let (layer, inner) = term(&mut layers, raw, "egenskap")?;
        if layer.filter.is_some() {
            return Err(bad(format!(
                "egenskap er gitt flere ganger for vegobjekttype {}",
                layer.type_id
            )));
        }
        let t = g
            .catalog
            .object_type(layer.type_id)
            .ok_or_else(|| bad("ukjent type".into()))?;
        let e = egenskap::parse(inner)?;
        egenskap::check(&e, g.catalog, t)?;
        if let Some(prop) = egenskap::sensitive_property(&e, g.catalog, t) {
            return Err(bad(format!(
                "Egenskapstype {prop} er skjermet og kan ikke filtreres her"
            )));
        }
        layer.filter = Some(e);
    }
    let ids: Vec<u32> = layers.iter().map(|l| l.type_id).collect();
    let chosen = chosen_values(g.catalog, &ids, &p.raw("egenskaper").join(","))?;
    for (layer, values) in layers.iter_mut().zip(chosen) {
        layer.values = values;
    }
    Ok(layers)
}

/// `egenskaper` (`105(2021),540()`, terms joined by commas) for the types `types`: per type
/// (in that order) the value property ids it carries, None where no term names it (all).
pub fn chosen_values(
    catalog: &Catalog,
    types: &[u32],
    egenskaper: &str,
) -> ApiResult<Vec<Option<Vec<u32>>>> {
    let mut out: Vec<Option<Vec<u32>>> = vec![None; types.len()];
    for raw in split_top(egenskaper) {
        let (type_id, inner) = type_term(&raw, "egenskaper")?;
        let at = types.iter().position(|&t| t == type_id).ok_or_else(|| {
            bad(format!(
                "Ugyldig egenskaper '{raw}': vegobjekttype {type_id} er ikke i typer"
            ))
        })?;
        let t = catalog
            .object_type(type_id)
            .ok_or_else(|| bad(format!("Ukjent vegobjekttype {type_id}")))?;
        let mut chosen = Vec::new();
        for s in inner.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let id: u32 = s.parse().map_err(|_| {
                bad(format!(
                    "Ugyldig egenskaper '{raw}': '{s}' er ikke en egenskapstype-id"
                ))
            })?;
            if !t.value_properties().any(|vp| vp.id == id) {
                return Err(bad(format!(
                    "Ugyldig egenskaper '{raw}': vegobjekttype {type_id} har ingen verdiegenskap {id}"
                )));
            }
            chosen.push(id);
        }
        out[at] = Some(chosen);
    }
    Ok(out)
}

/// `<type>(<inner>)`: the type id and the text between the parentheses.
fn type_term<'r>(raw: &'r str, name: &str) -> ApiResult<(u32, &'r str)> {
    let s = raw.trim();
    let (id, rest) = s.split_once('(').ok_or_else(|| {
        bad(format!(
            "Ugyldig {name} '{raw}': forventet <vegobjekttype>(...)"
        ))
    })?;
    let inner = rest
        .strip_suffix(')')
        .ok_or_else(|| bad(format!("Ugyldig {name} '{raw}': mangler ')'")))?;
    let id: u32 = id.trim().parse().map_err(|_| {
        bad(format!(
            "Ugyldig {name} '{raw}': forventet vegobjekttype-id"
        ))
    })?;
    Ok((id, inner))
}

/// `<type>(<inner>)` naming one of the layers.
fn term<'l, 'g, 'r>(
    layers: &'l mut [Layer<'g>],
    raw: &'r str,
    name: &str,
) -> ApiResult<(&'l mut Layer<'g>, &'r str)> {
    let (id, inner) = type_term(raw, name)?;
    let layer = layers.iter_mut().find(|l| l.type_id == id).ok_or_else(|| {
        bad(format!(
            "Ugyldig {name} '{raw}': vegobjekttype {id} er ikke i typer"
        ))
    })?;
    Ok((layer, inner))
}

/// `a(1,2),b(3)` split at the commas outside parentheses.
fn split_top(text: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// GET /vegnett/segmentert — the network cut where any of the given object types change.
#[utoipa::path(get, path = "/vegnett/segmentert", tag = "vegnett",
    params(OverlayQuery),
    responses((status = 200, description = "{objekter: [pieces], metadata: {returnert, neste}}; or CSV", body = PiecePageDoc),
        (status = 422, description = "Bad typer, egenskap, egenskaper or filter")))]
pub async fn list_pieces(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    // the generation is resolved here (a `tidspunkt` view belongs to the request's task), the
    // overlay and its rendering run on the blocking pool, off the async workers
    let g = {
        let (p, _) = begin_geo_csv(&headers, q.as_deref(), &allowed())?;
        crate::api::dated::generation(&s, &p)?
    };
    let work = tokio::task::spawn_blocking(move || answer(&s, g, &headers, q.as_deref()));
    match work.await {
        Ok(r) => r,
        Err(e) => Err(crate::error::EngineError::Internal(format!("segmentert: {e}")).into()),
    }
}

fn allowed() -> Vec<&'static str> {
    OVERLAY_PARAMS
        .iter()
        .chain(LIST_PARAMS)
        .chain(NETWORK_ATTRIBUTE_PARAMS)
        .copied()
        .collect()
}

/// The answer of a request on generation `g`.
fn answer(
    s: &AppState,
    g: std::sync::Arc<Generation>,
    headers: &HeaderMap,
    q: Option<&str>,
) -> ApiResult<Response> {
    let (p, n) = begin_geo_csv(headers, q, &allowed())?;
    let srid = if n.geojson {
        geojson::output_srid(&p)?
    } else {
        p.srid()?
    };
    let antall = page_size(&p, MAX_PAGE)?;
    let from = start(&p)?;
    let only_covered = p.bool("kun_dekket")?.unwrap_or(false);
    let layers = parse_layers(&g, &p)?;
    let rows = selected_rows(&g, &p, srid)?;
    let pieces = page(
        &g,
        &layers,
        &rows,
        from.map(|c| (c.key, c.key2)),
        antall,
        only_covered,
    );
    let last = pieces.last().map(|x| (x.link_id, x.from));
    let next = next_start(&p, g.id, last)?;
    let layers: Vec<PageLayer> = layers
        .into_iter()
        .map(|l| PageLayer::new(&g, l.type_id, l.values.as_deref()))
        .collect();
    if n.geojson || n.csv {
        let docs = pieces
            .iter()
            .map(|x| {
                let doc = PieceDoc {
                    g: &g,
                    layers: &layers,
                    piece: x,
                    srid,
                    z_tag: n.wkt_z_tag() || n.geojson,
                };
                serde_json::to_value(&doc)
                    .map_err(|e| ApiError::from(EngineError::Internal(e.to_string())))
            })
            .collect::<ApiResult<Vec<Value>>>()?;
        if n.geojson {
            let crs = geojson::Crs::new(srid);
            let more = pieces.len() == antall;
            let next = more.then(|| next_href(s, "/vegnett/segmentert.geojson", q, antall, &next));
            let features = piece_features(&g, &pieces, docs, crs)?;
            return Ok(geojson::v2_collection(features, srid, next, None));
        }
        let mut r = crate::api::csv::table(&docs, &[]).into_response();
        r.headers_mut()
            .insert(axum::http::header::CONTENT_TYPE, n.content_type());
        return Ok(r);
    }
    let metadata = streamed_envelope(
        s,
        "/vegnett/segmentert",
        q,
        (),
        pieces.len(),
        antall,
        next,
        None,
        n.revision,
    )
    .metadata;
    let items = PiecePage::new(g.clone(), layers, pieces, srid, n.wkt_z_tag());
    Ok(respond_page(n, items, metadata, s.config.stream_pages))
}

/// The pieces as GeoJSON features: the piece documents (without `geometri`) as properties,
/// `kortform` as id, the piece's stretch of its row as geometry.
fn piece_features(
    g: &Generation,
    pieces: &[Piece],
    docs: Vec<Value>,
    crs: geojson::Crs,
) -> ApiResult<geojson::Features> {
    let geometries = pieces
        .iter()
        .map(|x| {
            let line = g.segment(x.net_row as usize).sub_line(x.from, x.to);
            Ok(Geometry::LineString(line).to_srid(crs.srid)?)
        })
        .collect::<ApiResult<Vec<Geometry>>>()?;
    Ok(geojson::Features::new(docs.len(), move |i, out| {
        let id = docs[i]["kortform"].clone();
        geojson::push_doc_feature(
            out,
            Some(&id),
            Some(&geometries[i]),
            docs[i].clone(),
            "geometri",
            crs,
        );
        Ok(())
    }))
}

/// At most `antall` pieces after `after` (link id, start position) of the selected `rows`.
fn page(
    g: &Generation,
    layers: &[Layer<'_>],
    rows: &RoaringBitmap,
    after: Option<(u64, f64)>,
    antall: usize,
    only_covered: bool,
) -> Vec<Piece> {
    let net = &*g.network;
    let first = match after {
        Some((link, pos)) => {
            let r = g.first_segment_after(crate::ids::LinkId(link), pos);
            // the row holding the cursor may have pieces after it
            if r > 0 && net.link_id[r - 1] == link && net.to_pos[r - 1] > pos {
                r - 1
            } else {
                r
            }
        }
        None => 0,
    } as u32;
    // (bounded by the network: a range to u32::MAX made 65,536 containers per page)
    let mut wanted = RoaringBitmap::new();
    wanted.insert_range(first..net.len() as u32);
    let candidates = rows & &wanted;
    // per type: its placements ordered by link and the objects passing its filter
    let selected: Vec<Selected<'_>> = layers
        .iter()
        .map(|l| l.data.map(|d| selected(g, d, l.filter.clone())))
        .collect();
    // rows in chunks, each with the intervals of its links only: without `kun_dekket` every
    // row gives a piece, so the first chunk (one row more than the page) mostly ends the page.
    // A chunk's rows are overlaid in parts on the threads of rayon's pool, each part gathering
    // its own links' intervals (the parts' pieces taken in order; the last part's may be left)
    let chunk_rows = antall + 1;
    let parts = rayon::current_num_threads().max(1) * 2;
    let mut out = Vec::new();
    let mut rest = candidates.iter().peekable();
    while rest.peek().is_some() {
        let chunk: Vec<u32> = rest.by_ref().take(chunk_rows).collect();
        let size = chunk.len().div_ceil(parts).max(MIN_PART_ROWS);
        let made: Vec<Vec<Piece>> = chunk
            .par_chunks(size)
            .map(|rows| part_pieces(net, &selected, rows, after, antall, only_covered))
            .collect();
        for x in made.into_iter().flatten() {
            out.push(x);
            if out.len() == antall {
                return out;
            }
        }
    }
    out
}

/// Fewest network rows overlaid as one part of a page's chunk.
const MIN_PART_ROWS: usize = 512;

/// A type's data, its placements ordered by link and its selected objects (None: no data).
type Selected<'a> = Option<(&'a TypeData, Arc<LinkPlacements>, RoaringBitmap)>;

/// Type `d`'s data, its placements ordered by link and its objects passing `filter` (the
/// type's `egenskap`; all without one).
fn selected<'a>(
    g: &Generation,
    d: &'a TypeData,
    filter: Option<egenskap::Expr>,
) -> (&'a TypeData, Arc<LinkPlacements>, RoaringBitmap) {
    let f = ObjectFilter {
        egenskap: filter,
        ..Default::default()
    };
    (d, d.link_placements(), g.select_objects(d, &f))
}

/// The pieces of `rows` (in order) after `after`, at most `antall`, from the intervals of the
/// rows' links.
fn part_pieces(
    net: &crate::snapshot::columns::RoadNetwork,
    selected: &[Selected<'_>],
    rows: &[u32],
    after: Option<(u64, f64)>,
    antall: usize,
    only_covered: bool,
) -> Vec<Piece> {
    let mut links: Vec<u64> = rows.iter().map(|&r| net.link_id[r as usize]).collect();
    links.dedup();
    let intervals: Vec<LinkIntervals> = selected
        .iter()
        .map(|t| match t {
            Some((d, index, objects)) => {
                LinkIntervals::build_on_links(&d.table, index, objects, links.iter().copied())
            }
            None => LinkIntervals::default(),
        })
        .collect();
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    for &r in rows {
        buf.clear();
        row_pieces(net, r as usize, &intervals, only_covered, &mut buf);
        for x in buf.drain(..) {
            if after.is_some_and(|(link, pos)| x.link_id == link && x.from <= pos) {
                continue;
            }
            out.push(x);
            if out.len() == antall {
                return out;
            }
        }
    }
    out
}
