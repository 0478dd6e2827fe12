//! `/endringssett`: validate, register, start, cancel, restart, follow and list changesets.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::xml::DOMAIN_NS;
use super::{caller, read_body, writer, Caller, Fault, Format};
use crate::api::AppState;
use crate::changeset::journal::{Progress, Record, RejectionReason, WaitingReason};
use crate::changeset::model::{Changeset, Operation};
use crate::changeset::validate::{check_numbers, check_shape, Context, Issue, ObjectResult};
use crate::changeset::writer::StateError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/endringssett/validator", post(post_validate))
        .route("/endringssett", post(post_register).get(list_changesets))
        .route("/endringssett/{id}", get(get_content))
        .route("/endringssett/{id}/start", post(post_start))
        .route("/endringssett/{id}/kanseller", post(post_cancel))
        .route("/endringssett/{id}/restart", post(post_restart))
        .route("/endringssett/{id}/fremdrift", get(get_progress))
        .route("/endringssett/{id}/status", get(get_status))
}

/// Parse and shape-check a changeset body; check the caller may send its operations and types.
async fn read_changeset(
    state: &AppState,
    c: &Caller,
    headers: &HeaderMap,
    body: Body,
) -> Result<Changeset, Fault> {
    let f = c.format;
    let Some(body_format) = super::body_format(headers) else {
        return Err(Fault::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type må være application/json eller application/xml",
            f,
        ));
    };
    let bytes = read_body(body, state.config.max_changeset_bytes, f).await?;
    // parsing a large changeset takes milliseconds: keep it off the readers' cores
    let changeset = super::in_background(f, move || -> Result<Changeset, Fault> {
        let value: Value = match body_format {
            Format::Json => serde_json::from_slice(&bytes)
                .map_err(|e| Fault::bad(format!("Ugyldig JSON: {e}"), f))?,
            Format::Xml => {
                let (root, v) = super::xml::parse(&bytes).map_err(|m| Fault::bad(m, f))?;
                if root != "endringssett" {
                    return Err(Fault::bad(
                        format!("Rotelementet må være endringssett, ikke {root}"),
                        f,
                    ));
                }
                v
            }
        };
        serde_json::from_value(value)
            .map_err(|e| Fault::bad(format!("Ugyldig endringssett: {e}"), f))
    })
    .await?;
    check_shape(&changeset).map_err(|e| Fault::bad(e.to_string(), f))?;
    check_numbers(&changeset, state.store.current().catalog)
        .map_err(|e| Fault::bad(e.to_string(), f))?;
    check_rights(&c.user, &changeset, f)?;
    Ok(changeset)
}

/// May `user` send this changeset (roles for its operations, type limits)? 403 otherwise.
/// Checked at registration and again at start, with the owner as the users file says then.
fn check_rights(
    user: &crate::auth::users::User,
    changeset: &Changeset,
    f: Format,
) -> Result<(), Fault> {
    if !user.may_write() {
        return Err(Fault::new(
            StatusCode::FORBIDDEN,
            format!("Brukeren {} har ikke skriverett", user.name),
            f,
        ));
    }
    for op in Operation::ALL {
        if !changeset.part(op).is_empty() && !user.may(op) {
            return Err(Fault::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Brukeren {} har ikke rett til {} (krever rollen korriger eller admin)",
                    user.name,
                    op.api_name()
                ),
                f,
            ));
        }
    }
    if let Some(types) = user.rights().types {
        if let Some((_, o)) = changeset
            .objects()
            .find(|(_, o)| !types.contains(&o.type_id))
        {
            return Err(Fault::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Brukeren {} har ikke skriverett til vegobjekttype {}",
                    user.name, o.type_id
                ),
                f,
            ));
        }
    }
    Ok(())
}

fn query_flags(
    query: Option<&str>,
    allowed: &[&str],
    f: Format,
) -> Result<Map<String, Value>, Fault> {
    let mut out = Map::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if !allowed.contains(&k.as_ref()) {
            return Err(Fault::bad(format!("Ukjent parameter: {k}"), f));
        }
        out.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(out)
}

fn flag(params: &Map<String, Value>, name: &str, f: Format) -> Result<bool, Fault> {
    match params.get(name).and_then(Value::as_str) {
        None => Ok(false),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(v) => Err(Fault::bad(
            format!("{name} må være true eller false, ikke '{v}'"),
            f,
        )),
    }
}

#[utoipa::path(post, path = "/endringssett/validator", tag = "endringssett", params(("skipLocation" = Option<bool>, Query), ("skipAssociations" = Option<bool>, Query), ("useObjectList" = Option<bool>, Query)), responses((status = 200, description = "status document: fremdrift UTFØRT (valid) or AVVIST with resultat.feil"), (status = 400, description = "fault: malformed changeset"), (status = 401, description = "fault: no credentials"), (status = 403, description = "fault: no right")))]
pub async fn post_validate(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Body,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    let params = query_flags(
        query.as_deref(),
        &["skipLocation", "skipAssociations", "useObjectList"],
        f,
    )?;
    let skip_location = flag(&params, "skipLocation", f)?;
    let skip_associations = flag(&params, "skipAssociations", f)?;
    // useObjectList: vegdb has no object lists; accepted and without effect
    flag(&params, "useObjectList", f)?;
    let w = writer(&state, f)?.clone();
    let changeset = read_changeset(&state, &c, &headers, body).await?;
    let rights = c.user.rights();
    let outcome = tokio::task::spawn_blocking(move || {
        let binaries = w.binaries.clone();
        let exists = move |r: &str| binaries.exists(r);
        let ctx = Context {
            rights: &rights,
            binary_exists: &exists,
            skip_location,
            skip_associations,
        };
        w.validate_now(&changeset, &ctx)
    })
    .await
    .map_err(|e| Fault::internal(e, f))?;
    let progress = if outcome.has_errors() {
        Progress::Rejected
    } else {
        Progress::Done
    };
    let rejected_reason = outcome.has_errors().then(|| RejectionReason::of(&outcome));
    let record = Record {
        progress,
        rejected_reason,
        dry_run: true,
        outcome: std::sync::Arc::new(outcome),
        ..Record::new(
            String::new(),
            c.user.name.clone(),
            Some(c.client.clone()),
            0,
        )
    };
    Ok(status_response(&record, f))
}

#[utoipa::path(post, path = "/endringssett", tag = "endringssett", params(("X-NVDB-DryRun" = Option<bool>, Header), ("X-NVDB-Delay" = Option<u32>, Header, description = "seconds (0-300) processing waits after start, to test polling")), responses((status = 201, description = "Location + links self, start, kanseller, status, fremdrift (JSON: bare array; XML: ressurser)"), (status = 400, description = "fault, e.g. Må være unik: tempId"), (status = 413, description = "fault: body too large"), (status = 415, description = "fault: not JSON or XML"), (status = 507, description = "fault: no space left to store the changeset (nothing registered; retry later)")))]
pub async fn post_register(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Body,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    query_flags(query.as_deref(), &[], f)?;
    let w = writer(&state, f)?.clone();
    let dry_run = match headers.get("x-nvdb-dryrun").and_then(|v| v.to_str().ok()) {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => {
            return Err(Fault::bad(
                format!("X-NVDB-DryRun må være true eller false, ikke '{v}'"),
                f,
            ))
        }
    };
    let delay_s = match headers.get("x-nvdb-delay").and_then(|v| v.to_str().ok()) {
        None => 0,
        Some(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|d| *d <= MAX_DELAY_S)
            .ok_or_else(|| {
                Fault::bad(
                    format!(
                        "X-NVDB-Delay må være et helt antall sekunder 0–{MAX_DELAY_S}, ikke '{v}'"
                    ),
                    f,
                )
            })?,
    };
    let changeset = read_changeset(&state, &c, &headers, body).await?;
    let record = Record {
        rights: c.user.rights(),
        dry_run,
        delay_s,
        ..Record::new(
            uuid::Uuid::new_v4().to_string(),
            c.user.name.clone(),
            Some(c.client.clone()),
            changeset.object_count(),
        )
    };
    let id = record.id.clone();
    let owner = c.user.name.clone();
    super::in_background(f, move || {
        let referenced: Vec<String> = changeset
            .objects()
            .flat_map(|(_, o)| &o.properties)
            .flat_map(|p| &p.binaries)
            .filter_map(|b| b.resource_id.clone())
            .collect();
        w.journal
            .register(changeset, record)
            .map_err(|e| Fault::engine(e, f))?;
        // the owner may read the binaries its changeset refers to (see binaer.rs)
        for r in &referenced {
            w.binaries
                .grant(r, &owner)
                .map_err(|e| Fault::engine(e, f))?;
        }
        Ok(())
    })
    .await?;
    let links = links(
        &state,
        &id,
        &["self", "start", "kanseller", "status", "fremdrift"],
    );
    let mut r = links_response(StatusCode::CREATED, &links, f);
    if let Ok(v) = HeaderValue::from_str(&links[0].1) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

/// As `owned_record`, with all results (large ones are read from disk).
async fn full_record(state: &AppState, c: &Caller, id: &str) -> Result<Record, Fault> {
    let r = owned_record(state, c, id)?;
    if !r.outcome_elided {
        return Ok(r);
    }
    let w = writer(state, c.format)?.clone();
    let id = id.to_string();
    super::blocking(c.format, move || w.journal.get_full(&id))
        .await?
        .ok_or_else(|| {
            Fault::new(
                StatusCode::NOT_FOUND,
                "Endringssettet finnes ikke",
                c.format,
            )
        })
}

/// The changeset's record, if the caller may see it (owner or admin).
fn owned_record(state: &AppState, c: &Caller, id: &str) -> Result<Record, Fault> {
    let w = writer(state, c.format)?;
    let r = w.journal.get(id).ok_or_else(|| {
        Fault::new(
            StatusCode::NOT_FOUND,
            format!("Endringssett {id} finnes ikke"),
            c.format,
        )
    })?;
    // another user's changeset is answered exactly like one that does not exist, so the
    // answer does not tell whether the id is in use
    if r.owner != c.user.name && !c.user.is_admin() {
        return Err(Fault::new(
            StatusCode::NOT_FOUND,
            format!("Endringssett {id} finnes ikke"),
            c.format,
        ));
    }
    Ok(r)
}

fn state_fault(e: StateError, id: &str, action: &str, f: Format) -> Fault {
    match e {
        StateError::NotFound => Fault::new(
            StatusCode::NOT_FOUND,
            format!("Endringssett {id} finnes ikke"),
            f,
        ),
        StateError::Conflict(p) => Fault::new(
            StatusCode::CONFLICT,
            format!(
                "Endringssett {id} kan ikke {action}: fremdrift er {}",
                p.api_name()
            ),
            f,
        ),
        StateError::Engine(e) => Fault::engine(e, f),
    }
}

async fn transition(
    state: AppState,
    headers: HeaderMap,
    id: String,
    action: &'static str,
    rels: &'static [&'static str],
    op: fn(&crate::changeset::writer::Writer, &str) -> Result<Record, StateError>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    owned_record(&state, &c, &id)?;
    let w = writer(&state, f)?.clone();
    let id2 = id.clone();
    tokio::task::spawn_blocking(move || op(&w, &id2))
        .await
        .map_err(|e| Fault::internal(e, f))?
        .map_err(|e| state_fault(e, &id, action, f))?;
    Ok(links_response(StatusCode::OK, &links(&state, &id, rels), f))
}

#[utoipa::path(post, path = "/endringssett/{id}/start", tag = "endringssett", params(("id" = String, Path)), responses((status = 200, description = "links self, status, fremdrift"), (status = 403, description = "fault: the owner no longer has the right (roles and types are checked again at start)"), (status = 404, description = "fault: unknown, or another user's changeset"), (status = 409, description = "fault: not IKKE_STARTET")))]
pub async fn post_start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    // rights are checked again at start, with the owner as the users file says now
    let c = caller(&state, &headers)?;
    let f = c.format;
    let r = owned_record(&state, &c, &id)?;
    let owner = state.users.by_name(&r.owner).ok_or_else(|| {
        Fault::new(
            StatusCode::FORBIDDEN,
            format!("Brukeren {} finnes ikke lenger", r.owner),
            f,
        )
    })?;
    if r.progress == Progress::NotStarted {
        let w = writer(&state, f)?.clone();
        let id2 = id.clone();
        let content = super::blocking(f, move || w.journal.content(&id2)).await?;
        check_rights(&owner, &content, f)?;
    }
    transition(
        state,
        headers,
        id,
        "startes",
        &["self", "status", "fremdrift"],
        |w, id| w.start_changeset(id),
    )
    .await
}

#[utoipa::path(post, path = "/endringssett/{id}/kanseller", tag = "endringssett", params(("id" = String, Path)), responses((status = 200, description = "links self, status"), (status = 409, description = "fault: processing has begun")))]
pub async fn post_cancel(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    transition(
        state,
        headers,
        id,
        "kanselleres",
        &["self", "status"],
        |w, id| w.cancel(id),
    )
    .await
}

#[utoipa::path(post, path = "/endringssett/{id}/restart", tag = "endringssett", params(("id" = String, Path)), responses((status = 200, description = "links self, status, fremdrift"), (status = 409, description = "fault: not VENTER")))]
pub async fn post_restart(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    transition(
        state,
        headers,
        id,
        "restartes",
        &["self", "status", "fremdrift"],
        |w, id| w.restart(id),
    )
    .await
}

#[utoipa::path(get, path = "/endringssett/{id}/fremdrift", tag = "endringssett", params(("id" = String, Path)), responses((status = 200, description = "a bare JSON string (XML: fremdrift)")))]
pub async fn get_progress(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let r = owned_record(&state, &c, &id)?;
    Ok(super::document_response(
        StatusCode::OK,
        c.format,
        "fremdrift",
        DOMAIN_NS,
        r.progress.api_name(),
    ))
}

#[utoipa::path(get, path = "/endringssett/{id}/status", tag = "endringssett", params(("id" = String, Path)), responses((status = 200, description = "mottatt, fremdrift, venteårsak, avvistårsak, resultat, eier, klient")))]
pub async fn get_status(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let r = full_record(&state, &c, &id).await?;
    Ok(status_response(&r, c.format))
}

#[utoipa::path(get, path = "/endringssett/{id}", tag = "endringssett", params(("id" = String, Path)), responses((status = 200, description = "the changeset with status and etterbehandling"), (status = 404, description = "fault")))]
pub async fn get_content(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    let r = full_record(&state, &c, &id).await?;
    let w = writer(&state, f)?.clone();
    let id2 = id.clone();
    let content = super::blocking(f, move || w.journal.content(&id2)).await?;
    Ok(changeset_response(
        &ChangesetDoc::new(&content, Some(&r)),
        f,
    ))
}

/// The changeset document: the changeset as registered (or converted), and for a registered
/// one its status and `etterbehandling` after the changeset's fields.
#[derive(Serialize)]
pub struct ChangesetDoc<'a> {
    #[serde(flatten)]
    pub changeset: &'a Changeset,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etterbehandling: Option<AfterProcessing>,
}

/// `etterbehandling`: whether the changeset's result can be read in the read API.
#[derive(Serialize, ToSchema)]
pub struct AfterProcessing {
    #[serde(rename = "tilgjengeligILes")]
    pub readable: bool,
}

impl<'a> ChangesetDoc<'a> {
    pub fn new(changeset: &'a Changeset, record: Option<&'a Record>) -> ChangesetDoc<'a> {
        ChangesetDoc {
            changeset,
            status: record.map(|r| StatusDoc::new(r, true)),
            etterbehandling: record.map(|r| AfterProcessing {
                readable: r.progress == Progress::DoneAndVisible,
            }),
        }
    }
}

/// A changeset document in the caller's format (XML: `xml::changeset_document`).
pub fn changeset_response(doc: &ChangesetDoc<'_>, f: Format) -> Response {
    let body = match f {
        Format::Json => serde_json::to_vec(doc).map_err(|e| e.to_string()),
        Format::Xml => super::xml::changeset_document(doc).map_err(|e| e.to_string()),
    };
    match body {
        Ok(bytes) => {
            let mut r = (StatusCode::OK, bytes).into_response();
            super::set_content_type(&mut r, f);
            r
        }
        Err(e) => Fault::internal(e, f).into_response(),
    }
}

/// Longest `X-NVDB-Delay` (seconds).
pub const MAX_DELAY_S: u32 = 300;

/// Largest `max` of the overview.
pub const MAX_LIST: usize = 1000;

#[utoipa::path(get, path = "/endringssett", tag = "endringssett", params(("max" = Option<usize>, Query), ("skip" = Option<usize>, Query), ("reverse" = Option<bool>, Query), ("fra" = Option<i64>, Query, description = "epoch ms"), ("til" = Option<i64>, Query, description = "epoch ms"), ("status" = Option<String>, Query), ("årsak" = Option<String>, Query)), responses((status = 200, description = "the caller's changesets (admin: all)")))]
pub async fn list_changesets(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    let params = query_flags(
        query.as_deref(),
        &["max", "skip", "reverse", "fra", "til", "status", "årsak"],
        f,
    )?;
    let num = |name: &str, default: i64| -> Result<i64, Fault> {
        match params.get(name).and_then(Value::as_str) {
            None => Ok(default),
            Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                Fault::bad(
                    format!("{name} må være et ikke-negativt heltall, ikke '{v}'"),
                    f,
                )
            }),
        }
    };
    let max = num("max", 100)?;
    if max as usize > MAX_LIST {
        return Err(Fault::bad(
            format!("max kan ikke være større enn {MAX_LIST}"),
            f,
        ));
    }
    let skip = num("skip", 0)? as usize;
    let from = num("fra", 0)?;
    let to = num("til", i64::MAX)?;
    let reverse = flag(&params, "reverse", f)?;
    let status = match params.get("status").and_then(Value::as_str) {
        None => None,
        Some(s) => {
            Some(Progress::parse(s).ok_or_else(|| Fault::bad(format!("Ukjent status '{s}'"), f))?)
        }
    };
    let reason = params
        .get("årsak")
        .and_then(Value::as_str)
        .map(str::to_uppercase);
    let w = writer(&state, f)?;
    let mut records: Vec<Record> = w
        .journal
        .list()
        .into_iter()
        .filter(|r| c.user.is_admin() || r.owner == c.user.name)
        .filter(|r| r.received_ms >= from && r.received_ms <= to)
        .filter(|r| status.is_none_or(|s| r.progress == s))
        .filter(|r| {
            reason.as_deref().is_none_or(|a| {
                r.waiting_reason.map(WaitingReason::api_name) == Some(a)
                    || r.rejected_reason.map(RejectionReason::api_name) == Some(a)
            })
        })
        .collect();
    records.sort_by(|a, b| a.received_ms.cmp(&b.received_ms).then(a.id.cmp(&b.id)));
    if reverse {
        records.reverse();
    }
    let page: Vec<&Record> = records.iter().skip(skip).take(max as usize).collect();
    let items: Vec<OverviewItem> = page
        .iter()
        .map(|r| OverviewItem {
            id: &r.id,
            href: links(&state, &r.id, &["self"])[0].1.clone(),
            status: StatusDoc::new(r, false),
        })
        .collect();
    Ok(super::document_response(
        StatusCode::OK,
        f,
        "endringssettliste",
        DOMAIN_NS,
        &items,
    ))
}

// ---- response documents ----------------------------------------------------------------------

fn links(state: &AppState, id: &str, rels: &[&str]) -> Vec<(String, String)> {
    let base = format!(
        "{}{}/endringssett/{id}",
        state.public_url(),
        super::WRITE_BASE
    );
    rels.iter()
        .map(|&rel| {
            let src = if rel == "self" {
                base.clone()
            } else {
                format!("{base}/{rel}")
            };
            (rel.to_string(), src)
        })
        .collect()
}

/// One resource link `{rel, src}` (`<ressurs rel="…" src="…"/>`).
#[derive(Serialize, ToSchema)]
pub struct Link<'a> {
    pub rel: &'a str,
    pub src: &'a str,
}

/// The links as a bare JSON array in the given order (clients index it), XML `<ressurser>`.
fn links_response(status: StatusCode, links: &[(String, String)], f: Format) -> Response {
    let docs: Vec<Link> = links.iter().map(|(rel, src)| Link { rel, src }).collect();
    super::document_response(status, f, "ressurser", DOMAIN_NS, &docs)
}

/// A validation error or warning (`<feil kode="…">`).
#[derive(Serialize, ToSchema)]
pub struct IssueDoc<'a> {
    pub kode: &'a str,
    pub melding: &'a str,
    pub referanse: &'a str,
    #[serde(rename = "egenskapTypeId", skip_serializing_if = "Option::is_none")]
    pub property_type_id: Option<u32>,
}

fn issues(list: &[Issue]) -> Vec<IssueDoc<'_>> {
    list.iter()
        .map(|i| IssueDoc {
            kode: &i.code,
            melding: &i.message,
            referanse: &i.reference,
            property_type_id: i.property_type_id,
        })
        .collect()
}

/// The result for one object (`<vegObjekt tempId nvdbId>`).
#[derive(Serialize, ToSchema)]
pub struct ObjectResultDoc<'a> {
    #[serde(rename = "tempId", skip_serializing_if = "Option::is_none")]
    pub temp_id: Option<&'a str>,
    #[serde(rename = "nvdbId", skip_serializing_if = "Option::is_none")]
    pub nvdb_id: Option<u64>,
    pub feil: Vec<IssueDoc<'a>>,
    pub advarsel: Vec<IssueDoc<'a>>,
}

#[derive(Serialize, ToSchema)]
pub struct ResultDoc<'a> {
    #[serde(rename = "vegObjekter")]
    pub objects: Vec<ObjectResultDoc<'a>>,
    pub feil: Vec<IssueDoc<'a>>,
    pub advarsel: Vec<IssueDoc<'a>>,
}

/// The status document (`GET /{id}/status`, the validator's answer, part of the content).
#[derive(Serialize, ToSchema)]
pub struct StatusDoc<'a> {
    pub mottatt: &'a str,
    pub fremdrift: &'a str,
    #[serde(rename = "venteårsak", skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<&'a str>,
    #[serde(rename = "avvistårsak", skip_serializing_if = "Option::is_none")]
    pub rejected_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resultat: Option<ResultDoc<'a>>,
    pub eier: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub klient: Option<&'a str>,
}

impl<'a> StatusDoc<'a> {
    /// `with_result`: the overview leaves `resultat` out.
    pub fn new(r: &'a Record, with_result: bool) -> StatusDoc<'a> {
        StatusDoc {
            mottatt: &r.received,
            fremdrift: r.progress.api_name(),
            waiting_reason: r.waiting_reason.map(WaitingReason::api_name),
            rejected_reason: r.rejected_reason.map(RejectionReason::api_name),
            resultat: with_result.then(|| ResultDoc {
                objects: r
                    .outcome
                    .objects
                    .iter()
                    .map(|o: &ObjectResult| ObjectResultDoc {
                        temp_id: o.temp_id.as_deref(),
                        nvdb_id: o.nvdb_id,
                        feil: issues(&o.errors),
                        advarsel: issues(&o.warnings),
                    })
                    .collect(),
                feil: issues(&r.outcome.errors),
                advarsel: issues(&r.outcome.warnings),
            }),
            eier: &r.owner,
            klient: r.client.as_deref(),
        }
    }
}

/// An overview item: id and href first, then the status without results
/// (`<endringssett id="…" href="…">`).
#[derive(Serialize)]
pub struct OverviewItem<'a> {
    pub id: &'a str,
    pub href: String,
    #[serde(flatten)]
    pub status: StatusDoc<'a>,
}

pub fn status_response(r: &Record, f: Format) -> Response {
    super::document_response(
        StatusCode::OK,
        f,
        "status",
        DOMAIN_NS,
        &StatusDoc::new(r, true),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changeset::validate::{Issue, Outcome};
    use serde_json::json;
    use std::sync::Arc;

    /// Every field of the changeset model, in every part, with text that needs escaping.
    fn rich_changeset() -> Changeset {
        let obj = |n: u64| {
            json!({
                "typeId": 95, "tempId": format!("t{n}"), "nvdbId": 1000 + n, "versjon": 2,
                "egenskaper": [
                    {"typeId": 1884, "verdi": ["0.30", "a < b & \"c\""]},
                    {"typeId": 1876, "enum": [2868, 2869], "operasjon": "oppdater"},
                    {"typeId": 7, "struktur": [{"medlem": [{"typeId": 1, "verdi": "x"}, {"typeId": 2, "enum": 3}]}, {}]},
                    {"typeId": 8, "binaer": [{"ressursId": "r1", "format": "PDF"}, {"nvdbId": 77}], "operasjon": "slett"}
                ],
                "assosiasjoner": [
                    {"typeId": 220, "nvdbId": [5, 6], "tempId": ["t2"], "operasjon": "slett"},
                    {"typeId": 221, "tempId": ["t3"]}
                ],
                "lokasjon": {
                    "punkt": [{"lenkeId": 1125766, "posisjon": 0.3, "retning": "MED", "sidePosisjon": "H", "felt": "1#2"}],
                    "linje": [{"lenkeId": 2, "fra": 0.0, "til": 1.0}, {"lenkeId": 3, "fra": 0.25, "til": 0.5, "retning": "MOT"}],
                    "sving": [{"nodeId": 9, "fra": {"lenkeId": 2, "posisjon": 1.0}, "til": {"lenkeId": 3, "posisjon": 0.0}}],
                    "operasjon": "oppdater"
                },
                "sluttDato": "2026-12-31",
                "kaskadeSletting": "ja"
            })
        };
        serde_json::from_value(json!({
            "id": "abc-1",
            "effektDato": "2026-11-01",
            "datakatalogversjon": "2.38",
            "registrer": {"vegObjekter": [obj(1), {"typeId": 96, "tempId": "x"}]},
            "oppdater": {"vegObjekter": [obj(2)]},
            "korriger": {"vegObjekter": [obj(3)]},
            "slett": {"vegObjekter": [{"typeId": 95, "nvdbId": 4, "versjon": 1, "kaskadeSletting": "nei"}]},
            "delvisOppdater": {"vegObjekter": [obj(5)]},
            "delvisKorriger": {"vegObjekter": [obj(6)]},
            "ansvarlig": "Ola & Kari"
        }))
        .unwrap()
    }

    fn record() -> Record {
        let issue = |code: &str| Issue {
            code: code.into(),
            message: format!("melding {code} <&>"),
            reference: "ref".into(),
            property_type_id: Some(1884),
        };
        let mut r = Record::new("abc-1".into(), "ola".into(), Some("klient".into()), 7);
        r.progress = Progress::DoneAndVisible;
        r.received = "2026-11-23T20:00:00Z".into();
        r.outcome = Arc::new(Outcome {
            objects: vec![ObjectResult {
                temp_id: Some("t1".into()),
                nvdb_id: Some(1001),
                errors: vec![issue("E1")],
                warnings: vec![],
            }],
            errors: vec![],
            warnings: vec![issue("W1")],
            ..Outcome::default()
        });
        r
    }

    fn xml(doc: &ChangesetDoc<'_>) -> String {
        String::from_utf8(super::super::xml::changeset_document(doc).unwrap()).unwrap()
    }

    /// The typed document renders byte for byte what the hand-written writer it replaced
    /// (`XmlOut`, removed) wrote for the same changeset and status; the golden file is that
    /// writer's output (its only difference, `&quot;` in text, normalised to `"`).
    #[test]
    fn changeset_xml_matches_the_previous_writer() {
        let (c, r) = (rich_changeset(), record());
        let golden = include_str!("../../../tests/golden/write/endringssett_with_status.xml");
        assert_eq!(xml(&ChangesetDoc::new(&c, Some(&r))), golden);
    }

    /// Round trip: the XML parses back through the write API's XML reader to the same
    /// changeset, with and without the embedded status.
    #[test]
    fn changeset_xml_reads_back_to_the_same_changeset() {
        let (mut c, r) = (rich_changeset(), record());
        // an empty `<struktur/>` reads back as text, not as a structure without members (a
        // limit of the reader; such a structure means nothing): left out of the round trip
        for part in [
            &mut c.registrer,
            &mut c.oppdater,
            &mut c.korriger,
            &mut c.slett,
            &mut c.partial_update,
            &mut c.partial_correct,
        ] {
            for o in &mut part.objects {
                for p in &mut o.properties {
                    p.structs.retain(|s| !s.members.is_empty());
                }
            }
        }
        for rec in [None, Some(&r)] {
            let out = xml(&ChangesetDoc::new(&c, rec));
            let (root, v) = super::super::xml::parse(out.as_bytes()).unwrap();
            assert_eq!(root, "endringssett");
            assert_eq!(v.get("status").is_some(), rec.is_some());
            let back: Changeset = serde_json::from_value(v).unwrap();
            assert_eq!(back, c);
        }
        // the smallest changeset: attributes only
        let small: Changeset = serde_json::from_value(
            json!({"effektDato": "2026-01-01", "datakatalogversjon": "2.38"}),
        )
        .unwrap();
        let out = xml(&ChangesetDoc::new(&small, None));
        assert!(out.ends_with(r#"<endringssett xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2" effektDato="2026-01-01" datakatalogversjon="2.38"/>"#), "{out}");
        let (_, v) = super::super::xml::parse(out.as_bytes()).unwrap();
        assert_eq!(serde_json::from_value::<Changeset>(v).unwrap(), small);
    }

    /// JSON: the changeset's fields, then `status` and `etterbehandling` (as the merged map
    /// this replaced wrote them).
    #[test]
    fn changeset_json_appends_status_and_after_processing() {
        let (c, r) = (rich_changeset(), record());
        let mut expected = serde_json::to_value(&c).unwrap();
        let m = expected.as_object_mut().unwrap();
        m.insert(
            "status".into(),
            serde_json::to_value(StatusDoc::new(&r, true)).unwrap(),
        );
        m.insert("etterbehandling".into(), json!({"tilgjengeligILes": true}));
        assert_eq!(
            serde_json::to_string(&ChangesetDoc::new(&c, Some(&r))).unwrap(),
            expected.to_string()
        );
        assert_eq!(
            serde_json::to_string(&ChangesetDoc::new(&c, None)).unwrap(),
            serde_json::to_string(&c).unwrap()
        );
    }
}
