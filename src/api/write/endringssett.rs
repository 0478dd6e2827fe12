//! `/endringssett`: validate, register, start, cancel, restart, follow and list changesets.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::xml::DOMAIN_NS;
use super::{accepting_writer, caller, read_body, writer, Caller, Fault, Format};
use crate::api::state::AppState;
use crate::changeset::journal::{Progress, Record, RejectionReason, WaitingReason};
use crate::changeset::model::{Changeset, Operation};
use crate::changeset::validate::{check_numbers, check_shape, Context};
use crate::changeset::writer::StateError;

use super::documents::links_response;
pub use super::documents::{
    changeset_response, status_response, AfterProcessing, ChangesetDoc, IssueDoc, Link,
    ObjectResultDoc, OverviewItem, ResultDoc, StatusDoc,
};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(post_validate))
        .routes(routes!(post_register, list_changesets))
        .routes(routes!(get_content))
        .routes(routes!(post_start))
        .routes(routes!(post_cancel))
        .routes(routes!(post_restart))
        .routes(routes!(get_progress))
        .routes(routes!(get_status))
}

/// Parse and shape-check a changeset body; check the caller may send its operations and types.
async fn read_changeset(
    state: &AppState,
    c: &Caller,
    headers: &HeaderMap,
    body: Body,
) -> Result<Changeset, Fault> {
    let Some(body_format) = super::body_format(headers) else {
        return Err(Fault::status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type må være application/json eller application/xml",
        ));
    };
    let bytes = read_body(body, state.config.max_changeset_bytes).await?;
    // parsing a large changeset takes milliseconds: keep it off the readers' cores
    let changeset = super::in_background(writer(state)?, move || -> Result<Changeset, Fault> {
        let value: Value = match body_format {
            Format::Json => serde_json::from_slice(&bytes)
                .map_err(|e| Fault::bad(format!("Ugyldig JSON: {e}")))?,
            Format::Xml => {
                let (root, v) = super::xml::parse(&bytes).map_err(Fault::bad)?;
                if root != "endringssett" {
                    return Err(Fault::bad(format!(
                        "Rotelementet må være endringssett, ikke {root}"
                    )));
                }
                v
            }
        };
        serde_json::from_value(value).map_err(|e| Fault::bad(format!("Ugyldig endringssett: {e}")))
    })
    .await?;
    check_shape(&changeset).map_err(|e| Fault::bad(e.to_string()))?;
    check_numbers(&changeset, state.store.current().catalog)
        .map_err(|e| Fault::bad(e.to_string()))?;
    check_rights(&c.user, &changeset)?;
    Ok(changeset)
}

/// May `user` send this changeset (roles for its operations, type limits)? 403 otherwise.
/// Checked at registration and again at start, with the owner as the users file says then.
fn check_rights(user: &crate::auth::users::User, changeset: &Changeset) -> Result<(), Fault> {
    if !user.may_write() {
        return Err(Fault::status(
            StatusCode::FORBIDDEN,
            format!("Brukeren {} har ikke skriverett", user.name),
        ));
    }
    for op in Operation::ALL {
        if !changeset.part(op).is_empty() && !user.may(op) {
            return Err(Fault::status(
                StatusCode::FORBIDDEN,
                format!(
                    "Brukeren {} har ikke rett til {} (krever rollen korriger eller admin)",
                    user.name,
                    op.api_name()
                ),
            ));
        }
    }
    if let Some(types) = user.rights().types {
        if let Some((_, o)) = changeset
            .objects()
            .find(|(_, o)| !types.contains(&o.type_id))
        {
            return Err(Fault::status(
                StatusCode::FORBIDDEN,
                format!(
                    "Brukeren {} har ikke skriverett til vegobjekttype {}",
                    user.name, o.type_id
                ),
            ));
        }
    }
    Ok(())
}

fn query_flags(query: Option<&str>, allowed: &[&str]) -> Result<Map<String, Value>, Fault> {
    let mut out = Map::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if !allowed.contains(&k.as_ref()) {
            return Err(Fault::bad(format!(
                "Ukjent parameter: {}",
                crate::api::error::echoed(&k)
            )));
        }
        out.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(out)
}

fn flag(params: &Map<String, Value>, name: &str) -> Result<bool, Fault> {
    match params.get(name).and_then(Value::as_str) {
        None => Ok(false),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(v) => Err(Fault::bad(format!(
            "{name} må være true eller false, ikke '{v}'"
        ))),
    }
}

#[utoipa::path(post, path = "/endringssett/validator", tag = "endringssett", request_body(content((Changeset = "application/json"), (Changeset = "application/xml")), description = "the changeset (endringssett): JSON as below, or XML in the namespace http://nvdb.vegvesen.no/apiskriv/domain/v2 (the XSD is served at docs/endringssett.xsd below this API)"), params(("skipLocation" = Option<bool>, Query, description = "skip the location checks"), ("skipAssociations" = Option<bool>, Query, description = "skip the association checks"), ("useObjectList" = Option<bool>, Query, description = "accepted; vegdb has no object lists")), responses((status = 200, description = "status document: fremdrift UTFØRT (valid) or AVVIST with resultat.feil", body = StatusDoc), (status = 400, description = "fault: malformed changeset"), (status = 401, description = "fault: no credentials"), (status = 403, description = "fault: no right")))]
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
    )?;
    let skip_location = flag(&params, "skipLocation")?;
    let skip_associations = flag(&params, "skipAssociations")?;
    // useObjectList: vegdb has no object lists; accepted and without effect
    flag(&params, "useObjectList")?;
    let w = writer(&state)?.clone();
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
    .map_err(Fault::internal)?;
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

#[utoipa::path(post, path = "/endringssett", tag = "endringssett", request_body(content((Changeset = "application/json"), (Changeset = "application/xml")), description = "the changeset (endringssett): JSON as below, or XML in the namespace http://nvdb.vegvesen.no/apiskriv/domain/v2 (the XSD is served at docs/endringssett.xsd below this API)"), params(("X-NVDB-DryRun" = Option<bool>, Header, description = "validate and answer as a registration would, storing nothing"), ("X-NVDB-Delay" = Option<u32>, Header, description = "seconds (0-300) processing waits after start, to test polling", maximum = 300)), responses((status = 201, description = "Location + links self, start, kanseller, status, fremdrift (JSON: bare array; XML: ressurser)", body = [Link]), (status = 400, description = "fault, e.g. Må være unik: tempId"), (status = 413, description = "fault: body too large"), (status = 415, description = "fault: not JSON or XML"), (status = 507, description = "fault: no space left to store the changeset (nothing registered; retry later)")))]
pub async fn post_register(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Body,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    query_flags(query.as_deref(), &[])?;
    let w = accepting_writer(&state)?.clone();
    let dry_run = match headers.get("x-nvdb-dryrun").and_then(|v| v.to_str().ok()) {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => {
            return Err(Fault::bad(format!(
                "X-NVDB-DryRun må være true eller false, ikke '{v}'"
            )))
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
                Fault::bad(format!(
                    "X-NVDB-Delay må være et helt antall sekunder 0–{MAX_DELAY_S}, ikke '{v}'"
                ))
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
    let on = w.clone();
    super::in_background(&on, move || {
        let referenced: Vec<String> = changeset
            .objects()
            .flat_map(|(_, o)| &o.properties)
            .flat_map(|p| &p.binaries)
            .filter_map(|b| b.resource_id.clone())
            .collect();
        w.journal
            .register(changeset, record)
            .map_err(Fault::engine)?;
        // the owner may read the binaries its changeset refers to (see binaer.rs)
        for r in &referenced {
            w.binaries.grant(r, &owner).map_err(Fault::engine)?;
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
    let w = writer(state)?.clone();
    let id = id.to_string();
    super::blocking(move || w.journal.get_full(&id))
        .await?
        .ok_or_else(|| Fault::status(StatusCode::NOT_FOUND, "Endringssettet finnes ikke"))
}

/// The changeset's record, if the caller may see it (owner or admin).
fn owned_record(state: &AppState, c: &Caller, id: &str) -> Result<Record, Fault> {
    let w = writer(state)?;
    let r = w.journal.get(id).ok_or_else(|| {
        Fault::status(
            StatusCode::NOT_FOUND,
            format!("Endringssett {id} finnes ikke"),
        )
    })?;
    // another user's changeset is answered exactly like one that does not exist, so the
    // answer does not tell whether the id is in use
    if r.owner != c.user.name && !c.user.is_admin() {
        return Err(Fault::status(
            StatusCode::NOT_FOUND,
            format!("Endringssett {id} finnes ikke"),
        ));
    }
    Ok(r)
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
    // starting or restarting needs a writer that may publish; cancelling does not
    let w = if action == "kanselleres" {
        writer(&state)?
    } else {
        accepting_writer(&state)?
    }
    .clone();
    let id2 = id.clone();
    tokio::task::spawn_blocking(move || op(&w, &id2))
        .await
        .map_err(Fault::internal)?
        .map_err(|e| Fault::state(e, &id, action))?;
    Ok(links_response(StatusCode::OK, &links(&state, &id, rels), f))
}

#[utoipa::path(post, path = "/endringssett/{id}/start", tag = "endringssett", params(("id" = String, Path, description = "the changeset id (UUID) from the registration's links")), responses((status = 200, description = "links self, status, fremdrift", body = [Link]), (status = 403, description = "fault: the owner no longer has the right (roles and types are checked again at start)"), (status = 404, description = "fault: unknown, or another user's changeset"), (status = 409, description = "fault: not IKKE_STARTET")))]
pub async fn post_start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    // rights are checked again at start, with the owner as the users file says now
    let c = caller(&state, &headers)?;
    let r = owned_record(&state, &c, &id)?;
    let owner = state.users.by_name(&r.owner).ok_or_else(|| {
        Fault::status(
            StatusCode::FORBIDDEN,
            format!("Brukeren {} finnes ikke lenger", r.owner),
        )
    })?;
    if r.progress == Progress::NotStarted {
        let w = writer(&state)?.clone();
        let id2 = id.clone();
        let content = super::blocking(move || w.journal.content(&id2)).await?;
        check_rights(&owner, &content)?;
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

#[utoipa::path(post, path = "/endringssett/{id}/kanseller", tag = "endringssett", params(("id" = String, Path, description = "the changeset id (UUID) from the registration's links")), responses((status = 200, description = "links self, status", body = [Link]), (status = 409, description = "fault: processing has begun")))]
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

#[utoipa::path(post, path = "/endringssett/{id}/restart", tag = "endringssett", params(("id" = String, Path, description = "the changeset id (UUID) from the registration's links")), responses((status = 200, description = "links self, status, fremdrift", body = [Link]), (status = 409, description = "fault: not VENTER")))]
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

#[utoipa::path(get, path = "/endringssett/{id}/fremdrift", tag = "endringssett", params(("id" = String, Path, description = "the changeset id (UUID) from the registration's links")), responses((status = 200, description = "the progress as a bare JSON string (XML: fremdrift): IKKE_STARTET, BEHANDLES, VENTER, KANSELLERT, AVVIST, UTFØRT, UTFØRT_OG_ETTERBEHANDLET", content_type = "application/json", body = String)))]
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

#[utoipa::path(get, path = "/endringssett/{id}/status", tag = "endringssett", params(("id" = String, Path, description = "the changeset id (UUID) from the registration's links")), responses((status = 200, description = "mottatt, fremdrift, venteårsak, avvistårsak, resultat, eier, klient", body = StatusDoc)))]
pub async fn get_status(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let r = full_record(&state, &c, &id).await?;
    Ok(status_response(&r, c.format))
}

#[utoipa::path(get, path = "/endringssett/{id}", tag = "endringssett", params(("id" = String, Path, description = "the changeset id (UUID) from the registration's links")), responses((status = 200, description = "the changeset with status and etterbehandling", body = ChangesetDoc), (status = 404, description = "fault")))]
pub async fn get_content(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let f = c.format;
    let r = full_record(&state, &c, &id).await?;
    let w = writer(&state)?.clone();
    let id2 = id.clone();
    let content = super::blocking(move || w.journal.content(&id2)).await?;
    Ok(changeset_response(
        &ChangesetDoc::new(&content, Some(&r)),
        f,
    ))
}

/// Longest `X-NVDB-Delay` (seconds).
pub const MAX_DELAY_S: u32 = 300;

/// Largest `max` of the overview.
pub const MAX_LIST: usize = 1000;

#[utoipa::path(get, path = "/endringssett", tag = "endringssett", params(("max" = Option<u32>, Query, description = "page size, default 100, at most 1000"), ("skip" = Option<u32>, Query, description = "changesets to skip"), ("reverse" = Option<bool>, Query, description = "newest first"), ("fra" = Option<i64>, Query, description = "received at or after (epoch ms)"), ("til" = Option<i64>, Query, description = "received before (epoch ms)"), ("status" = Option<String>, Query, description = "only this fremdrift, e.g. AVVIST"), ("årsak" = Option<String>, Query, description = "only this avvistårsak or venteårsak")), responses((status = 200, description = "the caller's changesets (admin: all)", body = [OverviewItem])))]
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
    )?;
    let num = |name: &str, default: i64| -> Result<i64, Fault> {
        match params.get(name).and_then(Value::as_str) {
            None => Ok(default),
            Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                Fault::bad(format!(
                    "{name} må være et ikke-negativt heltall, ikke '{v}'"
                ))
            }),
        }
    };
    let max = num("max", 100)?;
    if max as usize > MAX_LIST {
        return Err(Fault::bad(format!(
            "max kan ikke være større enn {MAX_LIST}"
        )));
    }
    let skip = num("skip", 0)? as usize;
    let from = num("fra", 0)?;
    let to = num("til", i64::MAX)?;
    let reverse = flag(&params, "reverse")?;
    let status = match params.get("status").and_then(Value::as_str) {
        None => None,
        Some(s) => {
            Some(Progress::parse(s).ok_or_else(|| Fault::bad(format!("Ukjent status '{s}'")))?)
        }
    };
    let reason = params
        .get("årsak")
        .and_then(Value::as_str)
        .map(str::to_uppercase);
    let w = writer(&state)?;
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
