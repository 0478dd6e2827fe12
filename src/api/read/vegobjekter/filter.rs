//! The filter parameters of `/vegobjekter/{type}/` and its `statistikk` (areas, contracts,
//! routes, road references, map extent, links, `egenskap`, `overlapp`, the network attributes,
//! `ider`, `endret_etter`, `polygon`)
//! parsed into an [`ObjectFilter`], with the list-length limits and the refusal to filter on
//! values the caller may not see.

use crate::api::error::{echoed, ApiError, ApiResult};
use crate::api::params::Params;
use crate::api::read::endringer::parse_time;
use crate::api::read::network_attributes::parse_network_attributes;
use crate::api::read::polygon::prepared_polygon;
use crate::api::read::vegnett::parse_map_extent;
use crate::area::AreaKind;
use crate::generation::Generation;
use crate::geo::srid::Srid;
use crate::query::egenskap;
use crate::query::limits::{MAX_IDS, MAX_LIST_ITEMS, MAX_OVERLAPS, MAX_ROUTE_ITEMS};
use crate::query::objects::ObjectFilter;
use crate::query::on_route::RouteIntervals;
use crate::query::vegref::{LinkRef, RoadRefFilter};

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
    parse_areas(g, p, &mut f)?;
    parse_places(p, srid, &mut f)?;
    if let Some(e) = p.one("egenskap")? {
        let expr = egenskap::parse(e)?;
        egenskap::check(&expr, g.catalog, t)?;
        refuse_sensitive(&expr, g, t, sensitive)?;
        f.egenskap = Some(expr);
    }
    parse_overlaps(g, p, sensitive, &mut f)?;
    f.network = parse_network_attributes(p)?;
    parse_object_filters(g, p, srid, &mut f)?;
    Ok(f)
}

/// The filters of a query over every type at once: as [`parse_filter`] without `egenskap`
/// (which belongs to one type).
pub fn parse_filter_of_every_type(
    g: &Generation,
    p: &Params,
    srid: Srid,
    sensitive: bool,
) -> ApiResult<ObjectFilter> {
    check_list_lengths(p)?;
    let mut f = ObjectFilter::default();
    parse_areas(g, p, &mut f)?;
    parse_places(p, srid, &mut f)?;
    parse_overlaps(g, p, sensitive, &mut f)?;
    f.network = parse_network_attributes(p)?;
    parse_object_filters(g, p, srid, &mut f)?;
    Ok(f)
}

/// `ider` (at most [`MAX_IDS`], counted by [`check_list_lengths`]), `endret_etter` (the time
/// forms `endringer` accepts) and `polygon` (in `srid`).
fn parse_object_filters(
    g: &Generation,
    p: &Params,
    srid: Srid,
    f: &mut ObjectFilter,
) -> ApiResult<()> {
    if p.has("ider") {
        let mut ids = Vec::new();
        for s in p.items("ider") {
            ids.push(
                s.parse::<u64>().map_err(|_| {
                    ApiError::bad(4003, format!("Ugyldig id i ider: '{}'", echoed(s)))
                })?,
            );
        }
        if ids.is_empty() {
            return Err(ApiError::bad(4003, "ider er gitt uten verdier"));
        }
        ids.sort_unstable();
        ids.dedup();
        f.ids = Some(ids);
    }
    f.modified_after = p.one("endret_etter")?.map(parse_time).transpose()?;
    f.polygon = p
        .one("polygon")?
        .map(|t| prepared_polygon(g, t, srid))
        .transpose()?;
    Ok(())
}

/// The area filters: area numbers, contract areas, national routes.
fn parse_areas(g: &Generation, p: &Params, f: &mut ObjectFilter) -> ApiResult<()> {
    for (name, kind) in [
        ("region", AreaKind::Region),
        ("fylke", AreaKind::County),
        ("vegavdeling", AreaKind::RoadDepartment),
        ("kommune", AreaKind::Municipality),
    ] {
        f.any_of
            .extend(p.int_list(name)?.into_iter().map(|v| (kind, v as u32)));
    }
    for name in p.items("kontraktsomrade") {
        let name = unquote(name);
        let i = g
            .areas
            .contracts
            .iter()
            .position(|c| c.name == name || c.number.to_string() == name)
            .ok_or_else(|| ApiError::bad(4005, format!("Ukjent kontraktsområde: '{name}'")))?;
        f.contracts.push(i as u32);
    }
    for name in p.items("riksvegrute") {
        let name = unquote(name);
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
    Ok(())
}

/// The place filters: road references, map extent, link positions (not with the others), a
/// route's link intervals.
fn parse_places(p: &Params, srid: Srid, f: &mut ObjectFilter) -> ApiResult<()> {
    // (the lists are walked in place: a copy of each would cost every request)
    f.roads = p
        .items("vegreferanse")
        .map(RoadRefFilter::parse)
        .collect::<Result<_, _>>()?;
    f.bbox = p
        .one("kartutsnitt")?
        .map(|k| parse_map_extent(k, srid))
        .transpose()?;
    f.links = p
        .items("veglenke")
        .map(LinkRef::parse)
        .collect::<Result<_, _>>()?;
    if p.has("rute") {
        let intervals: Vec<LinkRef> = p
            .items("rute")
            .map(LinkRef::parse)
            .collect::<Result<_, _>>()?;
        if intervals.is_empty() {
            return Err(ApiError::bad(4006, "rute er gitt uten verdier"));
        }
        f.route = Some(RouteIntervals::new(&intervals));
    }
    if !f.links.is_empty() && (f.segments() || f.bbox.is_some()) {
        return Err(ApiError::bad(
            4009,
            "veglenke kan ikke kombineres med andre områdefilter",
        ));
    }
    Ok(())
}

/// `overlapp` (at most [`MAX_OVERLAPS`]), each term once.
fn parse_overlaps(
    g: &Generation,
    p: &Params,
    sensitive: bool,
    f: &mut ObjectFilter,
) -> ApiResult<()> {
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
        let term = parse_overlap(g, raw, sensitive)?;
        // identical terms select the same rows: evaluate them once
        if !f.overlaps.contains(&term) {
            f.overlaps.push(term);
        }
    }
    Ok(())
}

/// One `overlapp` term: `typeId` or `typeId(filter)`.
fn parse_overlap(
    g: &Generation,
    raw: &str,
    sensitive: bool,
) -> ApiResult<(u32, Option<egenskap::Expr>)> {
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
    Ok((other, expr))
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
        ("ider", 4003),
        ("rute", 4006),
    ] {
        if !p.has(name) {
            continue;
        }
        let n = p.items(name).count();
        let max = match name {
            "ider" => MAX_IDS,
            "rute" => MAX_ROUTE_ITEMS,
            _ => MAX_LIST_ITEMS,
        };
        if n > max {
            return Err(ApiError::bad(
                code,
                format!("{name} har {n} verdier; høyst {max} er tillatt"),
            ));
        }
    }
    Ok(())
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
