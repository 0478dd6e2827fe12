//! GET /vegnett/segmentert/statistikk: the figures of an overlay without its pieces — how many
//! pieces `/vegnett/segmentert` would give for the same filters, their length, and per type how
//! many of them it covers and their length (`query::overlay::totals`). The question of an
//! overlap report ("how many km of road have both a speed limit and a traffic count", "how much
//! of it has a bridge") answered in one call instead of paging through every piece.

use std::sync::LazyLock;

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;

use super::{parse_layers, selected, OVERLAY_PARAMS};
use crate::api::error::ApiResult;
use crate::api::handler::begin_csv;
use crate::api::object_docs::whole_meters;
use crate::api::read::network_attributes::NETWORK_ATTRIBUTE_PARAMS;
use crate::api::read::statistikk::answer_table;
use crate::api::read::vegnett::{selected_rows, LIST_PARAMS};
use crate::api::read::vegobjekter::budgeted::off_the_workers;
use crate::api::state::AppState;
use crate::generation::Generation;
use crate::query::egenskap;
use crate::query::overlay::{totals, Totals, TotalsLayer};

/// The parameters: those of `/vegnett/segmentert` but its paging and `egenskaper` (no piece
/// carries values here).
// (not mutable state: the parameter list, worked out once from the ones it follows)
static PARAMS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    OVERLAY_PARAMS
        .iter()
        .chain(LIST_PARAMS)
        .chain(NETWORK_ATTRIBUTE_PARAMS)
        .copied()
        .filter(|&n| !matches!(n, "antall" | "start" | "egenskaper"))
        .collect()
});
crate::query_params!(OverlayStatisticsQuery = [&PARAMS]);

/// `GET /vegnett/segmentert/statistikk`.
#[derive(Serialize, ToSchema)]
pub struct OverlayStatistics {
    /// Pieces (as many as `/vegnett/segmentert` lists).
    pub antall: u64,
    /// Their summed length, whole meters.
    pub strekningslengde: u64,
    /// Per type of `typer`, in that order: the pieces it covers.
    pub vegobjekttyper: Vec<CoveredBy>,
}

/// The pieces one type covers.
#[derive(Serialize, ToSchema)]
pub struct CoveredBy {
    pub id: u32,
    pub navn: String,
    /// Pieces covered by at least one object of the type.
    pub antall: u64,
    /// Their summed length, whole meters.
    pub strekningslengde: u64,
}

/// GET /vegnett/segmentert/statistikk — the number and length of the overlay's pieces.
#[utoipa::path(get, path = "/vegnett/segmentert/statistikk", tag = "vegnett",
    description = "The figures of /vegnett/segmentert for the same filters without listing the pieces: the number of pieces, their summed length and, per type of typer (in that order), how many pieces an object of the type covers and their length. Lengths are whole meters (each figure rounded on its own). kun_dekket=true counts only the pieces every type covers. Takes every filter of /vegnett/segmentert but its paging and egenskaper.",
    params(OverlayStatisticsQuery),
    responses((status = 200, description = "{antall, strekningslengde, vegobjekttyper: [{id, navn, antall, strekningslengde}]}; CSV (one line per type) with Accept text/csv or .csv", body = OverlayStatistics),
        (status = 422, description = "Bad typer, egenskap or filter")))]
pub async fn get_overlay_statistics(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin_csv(&headers, q.as_deref(), &PARAMS)?;
    let g = crate::api::dated::generation(&s, &p)?;
    // the filters are checked here, the overlay runs on the blocking pool (off the workers)
    let only_covered = p.bool("kun_dekket")?.unwrap_or(false);
    let specs: Vec<(u32, Option<egenskap::Expr>)> = parse_layers(&g, &p)?
        .into_iter()
        .map(|l| (l.type_id, l.filter))
        .collect();
    let types: Vec<u32> = specs.iter().map(|l| l.0).collect();
    let rows = selected_rows(&g, &p, p.srid()?)?;
    let figures = {
        let g = g.clone();
        off_the_workers(&s, move || figures(&g, specs, &rows, only_covered)).await?
    };
    let doc = OverlayStatistics {
        antall: figures.pieces,
        strekningslengde: whole_meters(figures.length_m),
        vegobjekttyper: types
            .iter()
            .zip(&figures.covered)
            .map(|(&id, &(antall, length))| CoveredBy {
                id,
                navn: g
                    .catalog
                    .object_type(id)
                    .map_or_else(String::new, |t| t.name.clone()),
                antall,
                strekningslengde: whole_meters(length),
            })
            .collect(),
    };
    if n.csv {
        let columns = ["id", "navn", "antall", "strekningslengde"].map(String::from);
        return Ok(answer_table(n, &doc.vegobjekttyper, &columns));
    }
    Ok(crate::api::media::json(n, &doc))
}

/// The overlay's figures for the types `specs` (id, `egenskap` filter) over network `rows`.
fn figures(
    g: &Generation,
    specs: Vec<(u32, Option<egenskap::Expr>)>,
    rows: &roaring::RoaringBitmap,
    only_covered: bool,
) -> Totals {
    // per type: its placements by link and the objects passing its filter
    let selected: Vec<_> = specs
        .into_iter()
        .map(|(type_id, filter)| g.objects.get(&type_id).map(|d| selected(g, d, filter)))
        .collect();
    let layers: Vec<Option<TotalsLayer<'_>>> = selected
        .iter()
        .map(|t| {
            t.as_ref().map(|(d, index, objects)| TotalsLayer {
                table: &d.table,
                index,
                // every object selected: no lookup per placement
                objects: (objects.len() != d.table.len() as u64).then_some(objects),
            })
        })
        .collect();
    totals(&g.network, rows, &layers, only_covered)
}
