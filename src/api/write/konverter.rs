//! `/konverter/sosiGeoJson` and `/konverter/sosi`: SOSI-GeoJSON and SOSI to a changeset
//! (`registrer`, no `lokasjon`). Malformed input is a 400 fault naming the line or feature.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::endringssett::{changeset_response, ChangesetDoc};
use super::{caller, read_body, Fault, Format};
use crate::api::state::AppState;
use crate::changeset::convert::{decode_sosi, from_sosi, from_sosi_geojson};
use crate::changeset::model::Changeset;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(post_sosi_geojson))
        .routes(routes!(post_sosi))
}

fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

fn respond(c: &Changeset, f: Format) -> Result<Response, Fault> {
    Ok(changeset_response(&ChangesetDoc::new(c, None), f))
}

#[utoipa::path(post, path = "/konverter/sosiGeoJson", tag = "konverter", request_body(content((Object = "application/json")), description = "a SOSI-GeoJSON FeatureCollection"), responses((status = 200, description = "changeset (registrer, no lokasjon)", body = ChangesetDoc), (status = 400, description = "fault naming the feature")))]
pub async fn post_sosi_geojson(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    let bytes = read_body(body, state.config.max_changeset_bytes).await?;
    let doc: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| Fault::bad(format!("Ugyldig JSON: {e}")))?;
    let cs = from_sosi_geojson(&doc, state.catalog(), &today()).map_err(Fault::bad)?;
    respond(&cs, f)
}

#[utoipa::path(post, path = "/konverter/sosi", tag = "konverter", request_body(content((String = "text/plain")), description = "a SOSI file"), responses((status = 200, description = "changeset (registrer, no lokasjon)", body = ChangesetDoc), (status = 400, description = "fault naming the line")))]
pub async fn post_sosi(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Fault> {
    // the body is SOSI text, so the answer is JSON unless Accept asks for XML
    let c = caller(&state, &headers)?;
    let f = c.format;
    let bytes = read_body(body, state.config.max_changeset_bytes).await?;
    let text = decode_sosi(&bytes);
    let cs = from_sosi(&text, state.catalog(), &today()).map_err(Fault::bad)?;
    respond(&cs, f)
}
