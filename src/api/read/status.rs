//! /status: the catalogue version and when the data was last updated (the current generation's
//! publication time, as Norwegian local time without a zone, formatted per revision like
//! `metadata.sist_modifisert`: the Java v2 client parses it with `LocalDateTime`).

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::catalog_docs::CatalogVersionDoc;
use crate::api::dto::oslo_date_time;
use crate::api::error::ApiResult;
use crate::api::media::respond;
use crate::api::{begin, AppState};
use crate::error::EngineError;

pub fn routes() -> Router<AppState> {
    Router::new().route("/status", get(get_status))
}

/// `{datagrunnlag: {sist_oppdatert}, datakatalog: {id, versjon, dato}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status<'a> {
    pub datagrunnlag: DataBasis,
    pub datakatalog: CatalogVersionDoc<'a>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DataBasis {
    /// Local Norwegian time, `yyyy-MM-dd HH:mm:ss` (revisions 0, 1) or `yyyy-MM-ddTHH:mm:ss`.
    pub sist_oppdatert: String,
}

/// GET /status
#[utoipa::path(get, path = "/status", tag = "status",
    responses((status = 200, description = "Data and catalogue versions", body = Status)))]
pub async fn get_status(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (_, n) = begin(&headers, q.as_deref(), &[])?;
    let g = s.store.current();
    let created = chrono::DateTime::parse_from_rfc3339(&g.manifest.created)
        .map_err(|e| {
            EngineError::Internal(format!(
                "manifest time '{}' is not RFC 3339: {e}",
                g.manifest.created
            ))
        })?
        .timestamp();
    Ok(respond(
        n,
        &Status {
            datagrunnlag: DataBasis {
                sist_oppdatert: oslo_date_time(created, n.datetime_with_t()),
            },
            datakatalog: (&g.catalog.version).into(),
        },
    ))
}
