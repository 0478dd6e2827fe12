//! /status: the catalogue version and when the data was last updated (the current generation's
//! publication time, as Norwegian local time without a zone, formatted per revision like
//! `metadata.sist_modifisert`: the Java v2 client parses it with `LocalDateTime`), and which
//! generation is served: `datagrunnlag.generasjon` (a vegdb addition beside the v2 keys, which
//! stay as they were).

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::api::catalog_docs::CatalogVersionDoc;
use crate::api::dto::oslo_date_time;
use crate::api::error::ApiResult;
use crate::api::media::respond;
use crate::api::{begin, AppState};
use crate::error::EngineError;
use crate::generation::Generation;
use crate::snapshot::manifest::MadeBy;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::read_route!(get_status))
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
    /// The generation served (vegdb addition).
    pub generasjon: GenerationInfo,
}

/// The served generation and how it was made (from its manifest).
#[derive(Debug, Serialize, ToSchema)]
pub struct GenerationInfo {
    pub id: u64,
    /// The generation it was derived from or replaced (null for the first).
    pub forelder: Option<u64>,
    /// Publication time, RFC 3339 UTC.
    pub opprettet: String,
    /// generert, importert, oppfrisket, endringssett (ukjent for an unrecorded old manifest).
    pub laget_av: &'static str,
    /// The manifest's origin, e.g. `vegdb generate --scale demo --seed 42`.
    pub opphav: String,
    /// The upstream source of the import this generation descends from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kilde: Option<String>,
    /// Last upstream event id applied per event stream (import, refresh).
    pub siste_hendelser: Vec<LastEvent>,
    /// Changesets applied in this generation.
    pub endringssett: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LastEvent {
    /// `veglenkesekvenser` or `vegobjekter/<typeId>`.
    #[serde(rename = "strøm")]
    pub stream: String,
    pub hendelse_id: u64,
}

/// What /status says about a generation.
pub fn generation_info(g: &Generation) -> GenerationInfo {
    let m = &g.manifest;
    GenerationInfo {
        id: g.id,
        forelder: m.parent,
        opprettet: m.created.clone(),
        laget_av: match m.made_by() {
            MadeBy::Generated => "generert",
            MadeBy::Imported => "importert",
            MadeBy::Refreshed => "oppfrisket",
            MadeBy::Changeset => "endringssett",
            MadeBy::Unknown => "ukjent",
        },
        opphav: m.origin.clone(),
        kilde: m.provenance.source.clone(),
        siste_hendelser: m
            .last_event_ids
            .iter()
            .map(|(stream, id)| LastEvent {
                stream: stream.clone(),
                hendelse_id: *id,
            })
            .collect(),
        endringssett: m.changesets.len(),
    }
}

/// GET /status
#[utoipa::path(get, path = "/status", tag = "status", params(crate::api::query_doc::NoQuery),
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
                generasjon: generation_info(&g),
            },
            datakatalog: (&g.catalog.version).into(),
        },
    ))
}
