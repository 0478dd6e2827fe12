//! /status: the catalogue version and when the data was last updated (the current generation's
//! publication time, as Norwegian local time without a zone, formatted per revision like
//! `metadata.sist_modifisert`: the Java v2 client parses it with `LocalDateTime`), and which
//! generation is served: `datagrunnlag.generasjon` (a vegdb addition beside the v2 keys, which
//! stay as they were), and `tjeneste` (name and version of the server, also a vegdb addition).

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::api::catalog_docs::CatalogVersionDoc;
use crate::api::dto::oslo_date_time;
use crate::api::error::ApiResult;
use crate::api::handler::begin;
use crate::api::media::respond;
use crate::api::state::AppState;
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
    /// The software serving this (vegdb addition, after the v2 keys).
    pub tjeneste: ServiceInfo,
    /// A read replica's standing against the store it follows (vegdb addition; only on
    /// `serve --read-only --follow`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replika: Option<ReplicaInfo>,
}

/// `tjeneste`: which server and version answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceInfo {
    /// Always `vegdb`.
    pub navn: &'static str,
    /// The vegdb version (Cargo package version), e.g. `0.1.0`.
    pub versjon: &'static str,
}

/// How far a read replica is behind its store.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplicaInfo {
    /// The followed store (`--follow`).
    pub kilde: String,
    /// The generation the store's CURRENT named at the last look (null: none yet).
    pub lager_generasjon: Option<u64>,
    /// The generation served.
    pub generasjon: u64,
    /// Store generation minus served generation.
    pub generasjoner_bak: u64,
    /// Seconds since the store's CURRENT moved past the served generation (0: up to date).
    pub sekunder_bak: f64,
    /// `--max-lag`: seconds behind after which `/ready` answers 503 (0: no bound).
    pub maks_sekunder_bak: f64,
    /// Whether the replica is within `--max-lag` (what `/ready` says about it).
    pub innenfor_grensen: bool,
    /// Time of the last successful look at CURRENT, RFC 3339 UTC.
    pub sist_sett: Option<String>,
    /// The last failure since the last catch-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feil: Option<String>,
    /// Files downloaded since start, and their bytes.
    pub nedlastinger: u64,
    pub nedlastet_bytes: u64,
    /// Bytes in the cache directory.
    pub hurtiglager_bytes: u64,
    /// Generations swapped in since start.
    pub bytter: u64,
    /// Milliseconds the last catch-up took (download, load, swap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub siste_innhenting_ms: Option<u64>,
}

/// What /status says about a replica serving generation `served`.
pub fn replica_info(status: &crate::replica::FollowStatus, served: u64) -> ReplicaInfo {
    let lag = status.lag(served);
    let beyond = lag.beyond_bound();
    ReplicaInfo {
        kilde: lag.source,
        lager_generasjon: lag.store_generation,
        generasjon: lag.served_generation,
        generasjoner_bak: lag.generations_behind,
        sekunder_bak: (lag.seconds_behind * 1000.0).round() / 1000.0,
        maks_sekunder_bak: lag.max_lag_s,
        innenfor_grensen: !beyond,
        sist_sett: lag.last_look.map(|t| {
            chrono::DateTime::<chrono::Utc>::from(t)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        }),
        feil: lag.last_error,
        nedlastinger: lag.downloads,
        nedlastet_bytes: lag.downloaded_bytes,
        hurtiglager_bytes: lag.cache_bytes,
        bytter: lag.swaps,
        siste_innhenting_ms: lag.last_catch_up_ms,
    }
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
            tjeneste: ServiceInfo {
                navn: "vegdb",
                versjon: env!("CARGO_PKG_VERSION"),
            },
            replika: s.config.replica.as_deref().map(|r| replica_info(r, g.id)),
        },
    ))
}
