//! /status: the catalogue version and when the data was last updated (the current generation's
//! publication time).

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::json;

use crate::api::error::ApiResult;
use crate::api::media::json as respond;
use crate::api::{begin, AppState};

pub fn routes() -> Router<AppState> {
    Router::new().route("/status", get(get_status))
}

/// GET /status
#[utoipa::path(get, path = "/status", tag = "status",
    responses((status = 200, description = "{datagrunnlag: {sist_oppdatert}, datakatalog: {id, dato, versjon}}")))]
pub async fn get_status(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let g = s.store.current();
    let v = &g.catalog.version;
    Ok(respond(
        n,
        &json!({
            "datagrunnlag": { "sist_oppdatert": g.manifest.created },
            "datakatalog": { "id": v.id, "dato": v.date, "versjon": v.version },
        }),
    ))
}
