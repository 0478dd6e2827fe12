//! What every read handler module uses to begin a request and to be mounted: [`begin`] (the
//! parameter names checked, the media type negotiated) and the registration helpers behind
//! [`read_route!`](crate::read_route) ([`full_path`], [`alias`]).

use axum::http::HeaderMap;
use utoipa_axum::router::UtoipaMethodRouter;

use super::error::ApiResult;
use super::media::{self, Negotiated};
use super::params::Params;
use super::route::READ_BASE;
use super::state::AppState;

/// Extension on a path item mounted as an alias of another path ([`alias`]): such items
/// are left out of the served document.
pub const ALIAS_OF: &str = "x-vegdb-alias-of";

/// Common start of every handler: check parameter names and negotiate the media type.
pub fn begin<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
) -> ApiResult<(Params<'q>, Negotiated)> {
    begin_with(headers, query, allowed, media::negotiate)
}

/// As [`begin`] for the endpoints that also answer GeoJSON (`Negotiated::geojson`).
pub fn begin_geo<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
) -> ApiResult<(Params<'q>, Negotiated)> {
    begin_with(headers, query, allowed, media::negotiate_geo)
}

/// As [`begin`] for the table answers that also come as CSV (`Negotiated::csv`).
pub fn begin_csv<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
) -> ApiResult<(Params<'q>, Negotiated)> {
    begin_with(headers, query, allowed, media::negotiate_csv)
}

/// As [`begin`] with GeoJSON and CSV (the object lists).
pub fn begin_geo_csv<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
) -> ApiResult<(Params<'q>, Negotiated)> {
    begin_with(headers, query, allowed, media::negotiate_geo_csv)
}

fn begin_with<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
    negotiate: fn(&HeaderMap, bool) -> ApiResult<Negotiated>,
) -> ApiResult<(Params<'q>, Negotiated)> {
    let p = Params::parse(query, allowed)?;
    let pretty = p.bool("pretty")?.unwrap_or(false);
    Ok((p, negotiate(headers, pretty)?))
}

/// `utoipa_axum::routes!` for the read API: the handler's documented path (below
/// [`READ_BASE`], as the served document lists it) registered with its full path, so the read
/// router needs no `Router::nest` (whose prefix strip builds a new URI per request).
/// The served document takes the prefix off again (its `servers` URL is `READ_BASE`).
#[macro_export]
macro_rules! read_route {
    ($($handler:path),+ $(,)?) => {
        $crate::api::handler::full_path($crate::api::route::READ_BASE, utoipa_axum::routes!($($handler),+))
    };
}

/// A further path answering like `documented` (a trailing-slash form or an old name): mounted
/// with the same handler and kept out of the served document, where it would be a duplicate
/// operation. `alias("/vegobjekttyper/", read_route!(list_object_types))`.
pub fn alias(
    alias: &str,
    (schemas, mut paths, router): UtoipaMethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    let full = |p: &str| {
        if p.starts_with(READ_BASE) {
            p.to_string()
        } else {
            format!("{READ_BASE}{p}")
        }
    };
    paths.paths = std::mem::take(&mut paths.paths)
        .into_iter()
        .map(|(documented, mut item)| {
            let mut ext = utoipa::openapi::extensions::Extensions::default();
            ext.insert(ALIAS_OF.into(), documented.clone().into());
            item.extensions = Some(ext);
            (full(alias), item)
        })
        .collect();
    (schemas, paths, router)
}

/// Prefix every path of a `routes!` result with `base` (see [`read_route!`]).
pub fn full_path(
    base: &str,
    (schemas, mut paths, router): UtoipaMethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    paths.paths = std::mem::take(&mut paths.paths)
        .into_iter()
        .map(|(path, item)| (format!("{base}{path}"), item))
        .collect();
    (schemas, paths, router)
}
