//! Features: `/ogc/collections/{id}/items` (a page: `limit`, `offset`, `bbox`, `crs`, property
//! filters, `datetime`: `datetime.rs`, `properties`: `properties.rs`) and
//! `/ogc/collections/{id}/items/{featureId}` (one feature, today's; `crs`, `properties`), as
//! GeoJSON or HTML.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use serde_json::{Map, Value};

use super::collections::find_collection;
use super::cql2;
use super::crs::{crs_param, crs_uri, parse_bbox};
use super::datetime::{self, When, DATETIME};
use super::error::{OgcError, OgcResult};
use super::properties;
use super::{
    encoding, html, html_response, json_response, link, ogc_url, respond, Encoding, Query,
    CONTENT_CRS, DEFAULT_LIMIT, MAX_LIMIT, NETWORK,
};
use crate::api::geojson::{self, Crs, Features, Selection};
use crate::api::media::GEOJSON;
use crate::api::read::vegnett::link_features;
use crate::api::state::AppState;
use crate::catalog::{ObjectType, ValueKind};
use crate::generation::Generation;
use crate::geo::map_extent::MapExtent;
use crate::query::egenskap;
use crate::query::network::NetworkAreaFilter;
use crate::query::objects::ObjectFilter;
use crate::query::vegref::link_range_short;
use std::sync::Arc;

/// Makes the features of a page: the selection's items at these positions.
type PageOf = Box<dyn Fn(std::ops::Range<u64>) -> Features>;

/// The links of a page or a feature (`what`): itself as GeoJSON and as HTML (`hrefs`; `self`
/// the one answered) and its collection.
fn own_links(
    s: &AppState,
    enc: Encoding,
    [json_href, html_href]: [String; 2],
    what: &str,
    id: &str,
    title: &str,
) -> Vec<Value> {
    vec![
        link(
            json_href,
            enc.rel(Encoding::Json),
            GEOJSON,
            &format!("This {what} as GeoJSON"),
        ),
        link(
            html_href,
            enc.rel(Encoding::Html),
            "text/html",
            &format!("This {what} as HTML"),
        ),
        link(
            ogc_url(s, &format!("/collections/{id}")),
            "collection",
            "application/json",
            title,
        ),
    ]
}

/// The `egenskap` expression of the property-filter parameters of type `t`.
fn property_filter(
    t: &ObjectType,
    filters: &[(String, String)],
) -> OgcResult<Option<egenskap::Expr>> {
    let mut conds = Vec::new();
    for (k, v) in filters {
        let p = t
            .property_types
            .iter()
            .find(|p| {
                !p.is_geometry()
                    && p.sensitivity == 0
                    && (p.name.eq_ignore_ascii_case(k) || p.id.to_string() == *k)
            })
            .ok_or_else(|| {
                OgcError::bad(format!(
                    "unknown parameter '{}' (not a parameter of items, nor a property of {})",
                    crate::api::error::echoed(k),
                    t.name
                ))
            })?;
        let cond = match p.storage() {
            ValueKind::Enum => {
                let number = v.trim().parse::<f64>().ok();
                let av = p
                    .allowed_values
                    .iter()
                    .flatten()
                    .find(|a| {
                        a.name.eq_ignore_ascii_case(v.trim())
                            || a.id.to_string() == v.trim()
                            || (number.is_some() && a.number == number)
                    })
                    .ok_or_else(|| OgcError::bad(format!("'{v}' is not a value of {}", p.name)))?;
                format!("{}={}", p.id, av.id)
            }
            ValueKind::Integer | ValueKind::Float => {
                let n = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| {
                        OgcError::bad(format!("{} takes a number, not '{v}'", p.name))
                    })?;
                format!("{}={n}", p.id)
            }
            ValueKind::Text | ValueKind::Geometry => {
                if v.contains('"') {
                    return Err(OgcError::bad(format!(
                        "{}: a value with '\"' is not supported",
                        p.name
                    )));
                }
                format!("{}=\"{v}\"", p.id)
            }
        };
        conds.push(cond);
    }
    if conds.is_empty() {
        return Ok(None);
    }
    let expr = egenskap::parse(&conds.join(" AND "))?;
    egenskap::check(&expr, crate::catalog::Catalog::embedded(), t)?;
    Ok(Some(expr))
}

const ITEM_PARAMS: &[&str] = &[
    "f",
    "limit",
    "offset",
    "bbox",
    "bbox-crs",
    "crs",
    "datetime",
    "filter",
    "filter-lang",
    "filter-crs",
    "sortby",
    properties::PROPERTIES,
];

pub(super) async fn items(
    State(s): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    // an instant answers from the generation as it was that day (built off the async workers)
    let g = match view_of(&s, &cid, q.as_deref()).await {
        Ok(g) => g,
        Err(e) => return respond(Err(e)),
    };
    respond(items_inner(&s, g, &cid, &headers, q.as_deref()))
}

/// The generation an items request answers from: the view at its `datetime` instant, else
/// the current one.
async fn view_of(s: &AppState, cid: &str, q: Option<&str>) -> OgcResult<Arc<Generation>> {
    let when = Query::parse(q).get(DATETIME).map(When::parse).transpose()?;
    if let Some(When::Instant(day)) = when {
        // a collection is a type, named by its id
        let needs = super::super::dated::Needs {
            type_id: cid.parse().ok(),
            network: false,
        };
        if let Some(view) = super::super::dated::resolve(&s.store, day, needs).await? {
            return Ok(view);
        }
    }
    Ok(s.store.current())
}

fn items_inner(
    s: &AppState,
    g: Arc<Generation>,
    cid: &str,
    headers: &HeaderMap,
    q: Option<&str>,
) -> OgcResult<Response> {
    let q = Query::parse(q);
    let enc = encoding(&q, headers)?;
    // the collections are today's (a type without objects on a past day answers none)
    let (id, title, _) = find_collection(&s.store.current(), cid)?;
    let mut r = ItemsRequest::parse(&q)?;
    let returnables = properties::returnables(&g, &id).unwrap_or_default();
    r.keep = properties::selection(&q, &returnables)?;
    let (matched, page_of) = select_items(s, &g, &id, &r)?;
    let end = (r.offset.saturating_add(r.limit as u64)).min(matched);
    let features = page_of(r.offset.min(end)..end);
    let returned = features.count() as u64;
    let links = page_links(s, &q, enc, &r, [&id, &title], [returned, matched]);
    match enc {
        Encoding::Json => {
            let mut m = Map::new();
            m.insert(
                "timeStamp".into(),
                chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    .into(),
            );
            m.insert("numberMatched".into(), matched.into());
            m.insert("numberReturned".into(), returned.into());
            m.insert("links".into(), links.into());
            let crs_header = HeaderValue::from_str(&format!("<{}>", crs_uri(r.crs)))
                .map_err(|e| OgcError::bad(e.to_string()))?;
            Ok(geojson::collection(
                m,
                features,
                GEOJSON,
                &[(CONTENT_CRS, crs_header)],
            ))
        }
        Encoding::Html => {
            let mut items = Vec::with_capacity(features.count());
            for i in 0..features.count() {
                let mut out = String::new();
                features.write(i, &mut out)?;
                items.push(
                    serde_json::from_str::<Value>(&out)
                        .map_err(|e| OgcError::bad(e.to_string()))?,
                );
            }
            Ok(html_response(html::items(
                &title, &id, &items, &links, matched, r.offset,
            )))
        }
    }
}

/// The parameters of an items request, checked in this order (after the collection).
struct ItemsRequest {
    limit: usize,
    offset: u64,
    crs: Crs,
    bbox: Option<MapExtent>,
    /// `datetime` (an instant's view is the generation answering; an interval selects).
    when: Option<When>,
    /// The parameters that are not the items' own: property filters.
    filters: Vec<(String, String)>,
    /// `filter` (parsed against the collection's queryables when it is known), its language
    /// and CRS.
    cql2: Option<(String, cql2::Lang, Crs)>,
    /// `sortby` (parsed against the collection's queryables).
    sortby: Option<String>,
    /// `properties` (checked against the collection's returnables, `properties.rs`).
    keep: Selection,
}

impl ItemsRequest {
    fn parse(q: &Query) -> OgcResult<ItemsRequest> {
        let limit = match q.get("limit") {
            None => DEFAULT_LIMIT,
            Some(l) => match l.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n.min(MAX_LIMIT),
                _ => {
                    return Err(OgcError::bad(format!(
                        "limit must be a positive integer, not '{l}'"
                    )))
                }
            },
        };
        let offset = match q.get("offset") {
            None => 0,
            Some(o) => o.trim().parse::<u64>().map_err(|_| {
                OgcError::bad(format!("offset must be a non-negative integer, not '{o}'"))
            })?,
        };
        let crs = crs_param(q, "crs")?;
        let bbox_crs = crs_param(q, "bbox-crs")?;
        let bbox = q.get("bbox").map(|b| parse_bbox(b, bbox_crs)).transpose()?;
        let when = q.get(DATETIME).map(When::parse).transpose()?;
        let lang = cql2::Lang::parse(q.get("filter-lang"))?;
        let filter_crs = crs_param(q, "filter-crs")?;
        let cql2 = q.get("filter").map(|f| (f.to_string(), lang, filter_crs));
        let filters: Vec<(String, String)> =
            q.0.iter()
                .filter(|(k, _)| !ITEM_PARAMS.contains(&k.as_str()))
                .cloned()
                .collect();
        Ok(ItemsRequest {
            limit,
            offset,
            crs,
            bbox,
            when,
            filters,
            cql2,
            sortby: q.get("sortby").map(str::to_string),
            keep: None,
        })
    }
}

/// The rows of collection `id` the request selects, and how to make a page of them features.
fn select_items(
    s: &AppState,
    g: &Arc<Generation>,
    id: &str,
    r: &ItemsRequest,
) -> OgcResult<(u64, PageOf)> {
    let (bbox, crs) = (r.bbox.clone(), r.crs);
    if let Some(When::Interval(from, to)) = r.when {
        return select_versions(g, id, r, from, to);
    }
    if id == NETWORK {
        if let Some((k, _)) = r.filters.first() {
            return Err(OgcError::bad(format!(
                "unknown parameter '{}'",
                crate::api::error::echoed(k)
            )));
        }
        if r.cql2.is_some() || r.sortby.is_some() {
            return Err(OgcError::bad(
                "filter and sortby are served on the object collections, not on vegnett",
            ));
        }
        let rows = g.select_segments(&NetworkAreaFilter {
            any_of: Vec::new(),
            roads: Vec::new(),
            bbox,
            attributes: Default::default(),
            polygon: None,
        });
        let (s2, g2, keep) = (s.clone(), g.clone(), r.keep.clone());
        return Ok((
            rows.len(),
            Box::new(move |at| {
                let page = page(&rows, None, at);
                link_features(s2.clone(), g2.clone(), page, crs, keep.clone())
            }),
        ));
    }
    let tid: u32 = id
        .parse()
        .map_err(|_| OgcError::not_found(format!("no collection '{id}'")))?;
    let cql2 = parse_cql2(g, tid, r)?;
    let Some(data) = g.objects.get(&tid).cloned() else {
        // a type without objects on the day of a `datetime` instant
        return Ok((0, Box::new(|_| Features::new(0, |_, _| Ok(())))));
    };
    let t = g
        .catalog
        .object_type(tid)
        .ok_or_else(|| OgcError::not_found(format!("no collection '{id}'")))?;
    let filter = ObjectFilter {
        bbox,
        egenskap: property_filter(t, &r.filters)?,
        ..Default::default()
    };
    let mut rows = g.select_objects(&data, &filter);
    if let Some(e) = &cql2 {
        rows = cql2::select(g, &data, t, e, &rows);
    }
    let order = sorted(g, &data, t, r, &rows)?;
    let (g2, keep) = (g.clone(), r.keep.clone());
    Ok((
        rows.len(),
        Box::new(move |at| {
            let page = page(&rows, order.as_deref(), at);
            Features::objects_selected(
                g2.clone(),
                Some(data.clone()),
                page,
                (crs, false),
                keep.clone(),
            )
        }),
    ))
}

/// The request's `filter` parsed against the queryables of type `tid`.
fn parse_cql2(g: &Generation, tid: u32, r: &ItemsRequest) -> OgcResult<Option<cql2::Expr>> {
    let Some((text, lang, crs)) = &r.cql2 else {
        return Ok(None);
    };
    let t = g
        .catalog
        .object_type(tid)
        .ok_or_else(|| OgcError::not_found(format!("no collection '{tid}'")))?;
    cql2::parse(text, *lang, &cql2::Binder { t, crs: *crs }).map(Some)
}

/// The request's `sortby` order of `rows` (rows of `data`, a type of `g`), if it has one.
fn sorted(
    g: &Generation,
    data: &crate::generation::TypeData,
    t: &ObjectType,
    r: &ItemsRequest,
    rows: &roaring::RoaringBitmap,
) -> OgcResult<Option<Vec<u32>>> {
    let Some(text) = &r.sortby else {
        return Ok(None);
    };
    let keys = cql2::sort_keys(text, &cql2::Binder { t, crs: r.crs })?;
    Ok(Some(cql2::sort(g, data, t, &keys, rows)))
}

/// The rows at positions `at` of `rows`, or of `order` (the same rows sorted) when given.
fn page(
    rows: &roaring::RoaringBitmap,
    order: Option<&[u32]>,
    at: std::ops::Range<u64>,
) -> Vec<u32> {
    if let Some(order) = order {
        let end = (at.end as usize).min(order.len());
        return order[(at.start as usize).min(end)..end].to_vec();
    }
    at.filter_map(|k| u32::try_from(k).ok().and_then(|k| rows.select(k)))
        .collect()
}

/// A `datetime` interval: every version of the collection's objects valid in it
/// (`datetime.rs`).
fn select_versions(
    g: &Arc<Generation>,
    id: &str,
    r: &ItemsRequest,
    from: Option<crate::snapshot::columns::Days>,
    to: Option<crate::snapshot::columns::Days>,
) -> OgcResult<(u64, PageOf)> {
    if id == NETWORK {
        return Err(OgcError::bad(
            "datetime: the vegnett collection takes an instant (a date), not an interval",
        ));
    }
    let tid: u32 = id
        .parse()
        .map_err(|_| OgcError::not_found(format!("no collection '{id}'")))?;
    select_versions_filtered(g, tid, r, from, to)
}

/// The versions of type `tid` meeting a `datetime` interval that `bbox` and the property
/// filters select, from every version at once (`Generation::every_version`, the
/// selection code of an instant), in (id, version) order.
fn select_versions_filtered(
    g: &Arc<Generation>,
    tid: u32,
    r: &ItemsRequest,
    from: Option<crate::snapshot::columns::Days>,
    to: Option<crate::snapshot::columns::Days>,
) -> OgcResult<(u64, PageOf)> {
    let t = g
        .catalog
        .object_type(tid)
        .ok_or_else(|| OgcError::not_found(format!("no collection '{tid}'")))?;
    let filter = ObjectFilter {
        bbox: r.bbox.clone(),
        egenskap: property_filter(t, &r.filters)?,
        ..Default::default()
    };
    let cql2 = parse_cql2(g, tid, r)?;
    let every = g.every_version();
    let Some(data) = every.objects.get(&tid).cloned() else {
        return Ok((0, Box::new(|_| Features::new(0, |_, _| Ok(())))));
    };
    let table = &data.table;
    let mut rows: roaring::RoaringBitmap = every
        .select_objects(&data, &filter)
        .iter()
        .filter(|&row| {
            let row = row as usize;
            datetime::overlaps(table.start_date[row], table.end_date[row], from, to)
        })
        .collect();
    if let Some(e) = &cql2 {
        rows = cql2::select(&every, &data, t, e, &rows);
    }
    let order = sorted(&every, &data, t, r, &rows)?;
    let (crs, keep) = (r.crs, r.keep.clone());
    Ok((
        rows.len(),
        Box::new(move |at| {
            let page = page(&rows, order.as_deref(), at);
            Features::objects_selected(
                every.clone(),
                Some(data.clone()),
                page,
                (crs, false),
                keep.clone(),
            )
        }),
    ))
}

/// The links of a page: itself in both encodings, its collection, the next and previous pages.
fn page_links(
    s: &AppState,
    q: &Query,
    enc: Encoding,
    r: &ItemsRequest,
    [id, title]: [&str; 2],
    [returned, matched]: [u64; 2],
) -> Vec<Value> {
    let (limit, offset) = (r.limit, r.offset);
    let path = format!("/collections/{id}/items");
    let href = |q: String| ogc_url(s, &format!("{path}?{q}"));
    let mut links = own_links(
        s,
        enc,
        [
            href(q.with("f", Some("json"))),
            href(q.with("f", Some("html"))),
        ],
        "page",
        id,
        title,
    );
    let mut page_link = |rel: &str, at: u64| {
        let with_offset = Query(
            q.0.iter()
                .filter(|(k, _)| k != "offset")
                .cloned()
                .chain(std::iter::once(("offset".to_string(), at.to_string())))
                .collect(),
        );
        let kind = if enc == Encoding::Html {
            "text/html"
        } else {
            GEOJSON
        };
        links.push(link(
            href(with_offset.with("limit", Some(&limit.to_string()))),
            rel,
            kind,
            rel,
        ));
    };
    if offset + returned < matched {
        page_link("next", offset + returned);
    }
    if offset > 0 {
        page_link("prev", offset.saturating_sub(limit as u64));
    }
    links
}

pub(super) async fn item(
    State(s): State<AppState>,
    Path((cid, fid)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond(item_inner(&s, &cid, &fid, &headers, q.as_deref()))
}

fn item_inner(
    s: &AppState,
    cid: &str,
    fid: &str,
    headers: &HeaderMap,
    q: Option<&str>,
) -> OgcResult<Response> {
    let q = Query::parse(q);
    q.only(&["f", "crs", properties::PROPERTIES])?;
    let enc = encoding(&q, headers)?;
    let crs = crs_param(&q, "crs")?;
    let g = s.store.current();
    let (id, title, _) = find_collection(&g, cid)?;
    let returnables = properties::returnables(&g, &id).unwrap_or_default();
    let keep = properties::selection(&q, &returnables)?;
    let missing = || OgcError::not_found(format!("no feature '{fid}' in collection '{id}'"));
    let mut out = String::new();
    if id == NETWORK {
        let link_id: u64 = fid
            .rsplit_once('@')
            .and_then(|(_, l)| l.parse().ok())
            .ok_or_else(missing)?;
        let row = g
            .segments_of_link(link_id)
            .find(|l| link_range_short(l.from_pos(), l.to_pos(), link_id) == fid)
            .ok_or_else(missing)?
            .row();
        link_features(s.clone(), g.clone(), vec![row as u32], crs, keep).write(0, &mut out)?;
    } else {
        let tid: u32 = id.parse().map_err(|_| missing())?;
        let oid: u64 = fid.parse().map_err(|_| missing())?;
        let (data, row) = g
            .object_row(crate::ids::TypeId(tid), crate::ids::ObjectId(oid))
            .ok_or_else(missing)?;
        geojson::push_object_selected(&mut out, &g, data, row, (crs, false), &keep)?;
    }
    let self_path = format!("/collections/{id}/items/{fid}");
    let links = own_links(
        s,
        enc,
        [
            ogc_url(s, &format!("{self_path}?{}", q.with("f", Some("json")))),
            ogc_url(s, &format!("{self_path}?{}", q.with("f", Some("html")))),
        ],
        "feature",
        &id,
        &title,
    );
    let mut feature: Value =
        serde_json::from_str(&out).map_err(|e| OgcError::bad(e.to_string()))?;
    if let Some(m) = feature.as_object_mut() {
        m.insert("links".into(), links.into());
    }
    match enc {
        Encoding::Json => {
            let mut r = json_response(&feature, GEOJSON);
            if let Ok(v) = HeaderValue::from_str(&format!("<{}>", crs_uri(crs))) {
                r.headers_mut().insert(CONTENT_CRS, v);
            }
            Ok(r)
        }
        Encoding::Html => Ok(html_response(html::item(&title, &id, &feature))),
    }
}
