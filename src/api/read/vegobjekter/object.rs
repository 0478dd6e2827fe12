//! One road object: `/vegobjekter/{type}/{id}` (+ `dybde`), its `egenskaper` (all, or one
//! property type), and the `/vegobjekt?id=` redirect.

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{
    empty_type, sees_sensitive, tolerance, type_data, type_id, AtQuery, FindQuery, ObjectOrList,
    ObjectQuery, AT_PARAMS, FIND_PARAMS, OBJECT_INKLUDER, OBJECT_PARAMS,
};
use crate::api::error::{ApiError, ApiResult};
use crate::api::geojson;
use crate::api::handler::{begin, begin_geo};
use crate::api::media::json as respond;
use crate::api::object_json::{Include, Render, INKLUDERGEOMETRI};
use crate::api::state::AppState;
use crate::generation::{Generation, TypeData};
use crate::geo::srid::Srid;

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
    let g = crate::api::dated::generation(&s, &p)?;
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
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), AtQuery), responses((status = 200, description = "Array of property values", body = [crate::api::object_docs::PropertyDoc])))]
pub async fn list_object_properties(
    State(s): State<AppState>,
    Path((tid, id)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), AT_PARAMS)?;
    let g = crate::api::dated::generation(&s, &p)?;
    let empty = empty_type(0);
    let (data, row) = locate(&g, &tid, &id, &empty)?;
    Ok(respond(
        n,
        &property_list(&s, &g, data, row, sees_sensitive(&s, &headers))?,
    ))
}

/// GET /vegobjekter/{type}/{id}/egenskaper/{egenskapstype}
#[utoipa::path(get, path = "/vegobjekter/{type}/{id}/egenskaper/{egenskapstype}", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ("id" = u64, Path, description = "road object id"), ("egenskapstype" = u32, Path, description = "property type id"), AtQuery),
    responses((status = 200, description = "One property value", body = crate::api::object_docs::PropertyDoc), (status = 404, description = "No such value (4012)")))]
pub async fn get_object_property(
    State(s): State<AppState>,
    Path((tid, id, pid)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), AT_PARAMS)?;
    let g = crate::api::dated::generation(&s, &p)?;
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
