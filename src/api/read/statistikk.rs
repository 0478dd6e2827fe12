//! The statistics tables: `/vegobjekter/{type}/statistikk/gruppert` (a type's objects per
//! group), `/vegobjekter/statistikk` (every type at once) and `/vegnett/statistikk` plus
//! `/vegnett/statistikk/gruppert` (the network rows themselves). Each takes the filters of its
//! list (`/vegobjekter/{type}` and its `statistikk`, `/vegnett/lenker`) through the same
//! parsers, `tidspunkt` through `api::dated`, and answers JSON, XML or CSV (`api::csv`).
//! `table.rs`: `gruppering` and the rows.

mod table;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use std::sync::LazyLock;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use super::vegnett;
use super::vegobjekter::budgeted::off_the_workers;
use super::vegobjekter::{
    empty_type, known_type, parse_filter, parse_filter_of_every_type, sees_sensitive, type_id,
    FILTERS,
};
use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin_csv;
use crate::api::object_docs::whole_meters;
use crate::api::params::Params;
use crate::api::state::AppState;
pub(crate) use table::answer as answer_table;
use table::{answer, grouped_answer, parse_grouping, splits_length, GROUPING};

/// The filters of `/vegobjekter/statistikk`: those of one type's but `egenskap` (a type's own).
static EVERY_TYPE_FILTERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    FILTERS
        .iter()
        .copied()
        .filter(|&n| n != "egenskap")
        .collect()
});
/// The filters of the network statistics: those of `/vegnett/lenker` but its paging.
// (not mutable state: the parameter list, worked out once from the one it follows)
static NETWORK_FILTERS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    vegnett::LIST_PARAMS
        .iter()
        .chain(super::network_attributes::NETWORK_ATTRIBUTE_PARAMS)
        .copied()
        .filter(|&n| n != "antall" && n != "start")
        .collect()
});
crate::query_params!(GroupedQuery = [FILTERS, GROUPING]);
crate::query_params!(EveryTypeQuery = [&EVERY_TYPE_FILTERS]);
crate::query_params!(NetworkQuery = [&NETWORK_FILTERS]);
crate::query_params!(NetworkGroupedQuery = [&NETWORK_FILTERS, GROUPING]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(crate::read_route!(get_grouped_statistics))
        .routes(crate::read_route!(list_type_statistics))
        .routes(crate::read_route!(get_network_statistics))
        .routes(crate::read_route!(get_grouped_network_statistics))
}

/// `begin` for a statistics table: paging and content parameters are refused (422/4013) as on
/// `statistikk`.
fn begin<'q>(
    headers: &HeaderMap,
    q: Option<&'q str>,
    allowed: &[&[&str]],
) -> ApiResult<(Params<'q>, crate::api::media::Negotiated)> {
    let allowed: Vec<&str> = allowed.iter().flat_map(|l| l.iter().copied()).collect();
    match begin_csv(headers, q, &allowed) {
        Err(e) if e.code == 4013 => Err(ApiError::bad(
            4013,
            format!("{} (støttes ikke på statistikk)", e.message),
        )),
        other => other,
    }
}

/// A row of a grouped answer (the schema only): the group's keys, then the figures.
#[derive(ToSchema)]
pub struct GroupRowDoc {
    /// With `gruppering=fylke`: the county number (as each grouping: `kommune`, `region`,
    /// `vegavdeling` numbers, `kontraktsomrade` name, `vegkategori` and `vegfase` letter or
    /// null without a road reference, `typeveg` name as `/vegnett/lenker`'s `typeVeg`).
    pub fylke: Option<u32>,
    pub kommune: Option<u32>,
    pub vegkategori: Option<String>,
    /// With `gruppering=egenskap(2021)`: `egenskap_2021: {enum_id, verdi}` (both null for
    /// objects without a value).
    #[schema(value_type = Option<Object>)]
    pub egenskap_2021: Option<()>,
    /// Objects (network rows) in the group.
    pub antall: u64,
    /// Whole meters; see the operation's text for the rounding.
    pub strekningslengde: u64,
}

/// GET /vegobjekter/{type}/statistikk/gruppert — `statistikk` per group.
#[utoipa::path(get, path = "/vegobjekter/{type}/statistikk/gruppert", tag = "vegobjekter",
    description = "Count and length of the selected objects per group: one row per group with objects, sorted by key (numbers ascending, letters alphabetical, contract areas in /omrader/kontraktsomrader order, allowed values by id, no value last). Every filter of statistikk applies. An object is in a group when a placement overlaps a network row of that group (so it counts in each municipality it crosses); with segmentering (default) a group's length is the objects' part on its rows, and lengths are whole meters by largest remainders so that the groups add up exactly to the ungrouped strekningslengde (each is its length rounded down or up; not for kontraktsomrade, whose areas overlap, nor with segmentering=false on a network grouping, where each group gets whole objects). Bad gruppering: 422/4005.",
    params(("type" = u32, Path, description = "road object type id"), GroupedQuery),
    responses((status = 200, description = "Rows {<keys>, antall, strekningslengde}; CSV with Accept text/csv or .csv", body = [GroupRowDoc]),
              (status = 404, description = "Unknown type (4012)"),
              (status = 422, description = "Bad filter or gruppering (4003, 4005, 4006, …)"), (status = 503, description = "Ran out of its time budget (5003)")))]
pub async fn get_grouped_statistics(
    State(s): State<AppState>,
    Path(tid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), &[FILTERS, GROUPING])?;
    let tid = type_id(&tid)?;
    let g = crate::api::dated::generation(&s, &p)?;
    known_type(&g, tid)?;
    let sensitive = sees_sensitive(&s, &headers);
    let filter = parse_filter(&g, &p, tid, p.srid()?, sensitive)?;
    let object_type = g.catalog.object_type(tid);
    let dims = parse_grouping(&p, object_type, sensitive)?;
    let segment = p.bool("segmentering")?.unwrap_or(true);
    let groups = {
        let (g, dims) = (g.clone(), dims.clone());
        off_the_workers(&s, move || {
            let empty = empty_type(tid);
            let data = g.objects.get(&tid).map_or(&empty, |d| d.as_ref());
            let rows = g.selected_rows(data, &filter);
            g.group_objects(data, &rows, &filter, segment, &dims)
        })
        .await?
    };
    let splits = splits_length(&dims, segment);
    Ok(grouped_answer(n, &g, object_type, &dims, &groups, splits))
}

/// A row of `/vegobjekter/statistikk` (NVDB LES v4's `VegobjekterStatistikkMedType`).
#[derive(Serialize, ToSchema)]
pub struct TypeStatistics {
    pub id: u32,
    pub navn: String,
    pub href: String,
    pub statistikk: super::vegobjekter::Statistics,
}

/// GET /vegobjekter/statistikk — `statistikk` of every type the data holds, one row each.
#[utoipa::path(get, path = "/vegobjekter/statistikk", tag = "vegobjekter",
    description = "Count and length (whole meters) of every object type the data holds objects of, by id, under the area, road and map filters of statistikk (not egenskap, which belongs to one type).",
    params(EveryTypeQuery),
    responses((status = 200, description = "Rows {id, navn, href, statistikk: {antall, strekningslengde}}; CSV with Accept text/csv or .csv", body = [TypeStatistics]),
              (status = 422, description = "Bad filter (4003, 4005, 4006, …)"), (status = 503, description = "Ran out of its time budget (5003)")))]
pub async fn list_type_statistics(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), &[&EVERY_TYPE_FILTERS])?;
    let g = crate::api::dated::generation(&s, &p)?;
    let filter = parse_filter_of_every_type(&g, &p, p.srid()?, sees_sensitive(&s, &headers))?;
    let segment = p.bool("segmentering")?.unwrap_or(true);
    let figures = {
        let g = g.clone();
        off_the_workers(&s, move || {
            g.objects
                .iter()
                .filter(|(_, d)| !d.table.is_empty())
                .map(|(&tid, data)| {
                    let (count, length) = g.object_statistics(data, &filter, segment);
                    (tid, count, length)
                })
                .collect::<Vec<_>>()
        })
        .await?
    };
    let table: Vec<TypeStatistics> = figures
        .into_iter()
        .map(|(id, antall, length)| TypeStatistics {
            id,
            navn: g
                .catalog
                .object_type(id)
                .map_or_else(String::new, |t| t.name.clone()),
            href: s.href(&format!("/vegobjekter/{id}")),
            statistikk: super::vegobjekter::Statistics {
                antall,
                strekningslengde: whole_meters(length),
            },
        })
        .collect();
    let columns = [
        "id",
        "navn",
        "href",
        "statistikk.antall",
        "statistikk.strekningslengde",
    ]
    .map(String::from);
    Ok(answer(n, &table, &columns))
}

/// GET /vegnett/statistikk — number and length of the network rows the filters select.
#[utoipa::path(get, path = "/vegnett/statistikk", tag = "vegnett",
    description = "Number and summed length (whole meters) of the network rows (link segments, every topology level) that /vegnett/lenker's filters select; with polygon, the length of their stretches inside it.",
    params(NetworkQuery),
    responses((status = 200, description = "{antall, strekningslengde}; CSV with Accept text/csv or .csv", body = super::vegobjekter::Statistics),
              (status = 422, description = "Bad filter (4003, 4005, 4009, …)")))]
pub async fn get_network_statistics(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), &[&NETWORK_FILTERS])?;
    let g = crate::api::dated::generation(&s, &p)?;
    let selected = vegnett::selected_rows(&g, &p, p.srid()?)?;
    let polygon = vegnett::polygon(&g, &p, p.srid()?)?;
    let (antall, length) = g.network_totals(&selected, polygon.as_deref());
    let figures = super::vegobjekter::Statistics {
        antall,
        strekningslengde: whole_meters(length),
    };
    if n.csv {
        let columns = ["antall", "strekningslengde"].map(String::from);
        return Ok(answer(n, &[figures], &columns));
    }
    Ok(crate::api::media::json(n, &figures))
}

/// GET /vegnett/statistikk/gruppert — the network statistics per group.
#[utoipa::path(get, path = "/vegnett/statistikk/gruppert", tag = "vegnett",
    description = "Number and length of the selected network rows per group (any of fylke, kommune, region, vegavdeling, kontraktsomrade, vegkategori, vegfase, typeveg): one row per group with rows, sorted by key. Lengths are whole meters by largest remainders, adding up exactly to /vegnett/statistikk's strekningslengde (not for kontraktsomrade, whose areas overlap). Bad gruppering: 422/4005.",
    params(NetworkGroupedQuery),
    responses((status = 200, description = "Rows {<keys>, antall, strekningslengde}; CSV with Accept text/csv or .csv", body = [GroupRowDoc]),
              (status = 400, description = "Bad gruppering (4005)"), (status = 422, description = "Bad filter (4003, 4005, 4009, …)")))]
pub async fn get_grouped_network_statistics(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), &[&NETWORK_FILTERS, GROUPING])?;
    let g = crate::api::dated::generation(&s, &p)?;
    let dims = parse_grouping(&p, None, false)?;
    let selected = vegnett::selected_rows(&g, &p, p.srid()?)?;
    let polygon = vegnett::polygon(&g, &p, p.srid()?)?;
    let groups = {
        let (g, dims) = (g.clone(), dims.clone());
        off_the_workers(&s, move || {
            g.group_network(&selected, &dims, polygon.as_deref())
        })
        .await?
    };
    let splits = splits_length(&dims, true);
    Ok(grouped_answer(n, &g, None, &dims, &groups, splits))
}
