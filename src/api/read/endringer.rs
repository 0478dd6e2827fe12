//! /vegobjekter/{type}/endringer: objects changed (ENDRET, newest form) or deleted (SLETTET, id
//! only) after a time. Paginated by object id; area and property filters are not supported.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, TimeZone};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin;
use crate::api::media::{respond, Negotiated};
use crate::api::object_json::{Include, ObjectDoc, RenderOwned};
use crate::api::paging::{envelope, next_start, page_size, start, streamed_envelope};
use crate::api::params::Params;
use crate::api::state::AppState;
use crate::api::stream::{respond_page, PageItems};
use crate::generation::TypeData;
use std::sync::Arc;

pub const MAX_PAGE: usize = 10_000;

/// Query parameters of `GET /vegobjekter/{type}/endringer`.
const CHANGES_PARAMS: &[&str] = &["type", "etter", "antall", "start", "srid"];
crate::query_params!(ChangesQuery = [CHANGES_PARAMS]);

/// A page of changes (the schema only: pages are streamed by `api::stream`).
#[derive(ToSchema)]
pub struct ChangePage<'a> {
    pub objekter: Vec<Change<'a>>,
    pub metadata: crate::api::paging::PageMetadata,
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::read_route!(list_changes))
}

/// One change: `{"type": "ENDRET", "vegobjekt": {…the object…}}` or
/// `{"type": "SLETTET", "vegobjekt": <id>}`.
#[derive(Serialize, ToSchema)]
pub struct Change<'a> {
    /// ENDRET or SLETTET
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// the object (ENDRET) or its id (SLETTET)
    #[schema(value_type = Value)]
    pub vegobjekt: ChangedObject<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum ChangedObject<'a> {
    Object(Box<ObjectDoc<'a>>),
    Id(u64),
}

/// The time formats of the v2 API: ISO 8601 with offset; `YYYY-MM-DD HH:MM:SS`,
/// `YYYY-MM-DD HH:MM` and `YYYY-MM-DD` (00:00:00) at +02:00; optionally quoted.
pub fn parse_time(text: &str) -> ApiResult<i64> {
    let t = text.trim().trim_matches('"').trim_matches('\'').trim();
    let bad = || {
        ApiError::bad(4007, format!("Ugyldig tidspunkt '{text}': bruk ISO 8601 med tidssone, 'ÅÅÅÅ-MM-DD TT:MM:SS', 'ÅÅÅÅ-MM-DD TT:MM' eller 'ÅÅÅÅ-MM-DD'"))
    };
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp());
    }
    let plus2 = FixedOffset::east_opt(2 * 3600).expect("valid offset");
    for f in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(t, f) {
            return plus2
                .from_local_datetime(&n)
                .single()
                .map(|d| d.timestamp())
                .ok_or_else(bad);
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        let n = d.and_hms_opt(0, 0, 0).ok_or_else(bad)?;
        return plus2
            .from_local_datetime(&n)
            .single()
            .map(|d| d.timestamp())
            .ok_or_else(bad);
    }
    Err(bad())
}

/// GET /vegobjekter/{type}/endringer
#[utoipa::path(get, path = "/vegobjekter/{type}/endringer", tag = "vegobjekter",
    params(("type" = u32, Path, description = "road object type id"), ChangesQuery),
    responses((status = 200, description = "{objekter: [{type: ENDRET|SLETTET, vegobjekt}], metadata}", body = ChangePage)))]
pub async fn list_changes(
    State(s): State<AppState>,
    Path(tid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), CHANGES_PARAMS)?;
    let r = ChangeRequest::parse(&p, &tid)?;
    let g = s.store.current();
    if g.catalog.object_type(r.tid).is_none() {
        return Err(ApiError::not_found(format!(
            "Vegobjekttype {} finnes ikke",
            r.tid
        )));
    }
    let page = Page {
        s: &s,
        g: &g,
        p: &p,
        n,
        q: q.as_deref(),
        path: format!("/vegobjekter/{}/endringer", r.tid),
    };
    match r.kind.as_str() {
        "endret" => changed(page, &r, &headers),
        "slettet" => deleted(page, &r),
        other => Err(ApiError::bad(
            4005,
            format!("Ugyldig type '{other}': bruk endret eller slettet"),
        )),
    }
}

/// The parameters of a changes request, checked in this order.
struct ChangeRequest {
    tid: u32,
    /// `type`, lower case (checked after the type exists)
    kind: String,
    after: i64,
    antall: usize,
    /// The id the page starts after (`start`)
    after_id: Option<u64>,
    srid: crate::geo::srid::Srid,
}

impl ChangeRequest {
    fn parse(p: &Params, tid: &str) -> ApiResult<ChangeRequest> {
        let tid: u32 = tid
            .parse()
            .map_err(|_| ApiError::bad(4002, format!("Ugyldig vegobjekttype-id: '{tid}'")))?;
        let kind = p
            .one("type")?
            .ok_or_else(|| ApiError::bad(4004, "Parameteren type (endret eller slettet) mangler"))?
            .to_ascii_lowercase();
        let after = parse_time(
            p.one("etter")?
                .ok_or_else(|| ApiError::bad(4004, "Parameteren etter mangler"))?,
        )?;
        let antall = page_size(p, MAX_PAGE)?;
        let after_id = start(p)?.map(|c| c.key);
        let srid = p.srid()?;
        Ok(ChangeRequest {
            tid,
            kind,
            after,
            antall,
            after_id,
            srid,
        })
    }
}

/// What both kinds of page are answered with.
struct Page<'a> {
    s: &'a AppState,
    g: &'a Arc<crate::generation::Generation>,
    p: &'a Params<'a>,
    n: Negotiated,
    q: Option<&'a str>,
    path: String,
}

/// `type=endret`: the objects of the type modified after the time, streamed.
fn changed(page: Page, r: &ChangeRequest, headers: &HeaderMap) -> ApiResult<Response> {
    let Page { s, g, p, n, q, .. } = page;
    let Some(d) = g.objects.get(&r.tid).cloned() else {
        let next = next_start(p, g.id, None)?;
        let env = envelope(
            s,
            &page.path,
            q,
            Vec::<Change>::new(),
            r.antall,
            next,
            Some(0),
            n.revision,
        );
        return Ok(respond(n, &env));
    };
    let first = r
        .after_id
        .map(|k| d.first_row_after_id(crate::ids::ObjectId(k)))
        .unwrap_or(0);
    let total = d.count_modified_after(r.after);
    let rows = d.rows_modified_after(first, r.after, r.antall);
    let next = next_start(
        p,
        g.id,
        rows.last().map(|&r| (d.id_at(r as usize).get(), 0.0)),
    )?;
    let metadata = streamed_envelope(
        s,
        &page.path,
        q,
        (),
        rows.len(),
        r.antall,
        next,
        Some(total),
        n.revision,
    )
    .metadata;
    let sensitive =
        crate::auth::token::optional_user(&s.users, headers).is_some_and(|u| u.sees_sensitive());
    let changed = ChangedPage {
        render: RenderOwned {
            s: s.clone(),
            g: g.clone(),
            srid: r.srid,
            include: Include::from_words(&[], &[], true),
            tolerance_m: None,
            segment_by: None,
            revision: n.revision,
            z_tag: n.wkt_z_tag(),
            sensitive,
        },
        data: d,
        rows,
    };
    Ok(respond_page(n, changed, metadata, s.config.stream_pages))
}

/// `type=slettet`: the ids of the type's objects closed after the time.
fn deleted(page: Page, r: &ChangeRequest) -> ApiResult<Response> {
    let Page { s, g, p, n, q, .. } = page;
    let d = &g.deleted;
    let mut hits: Vec<u64> = (0..d.id.len())
        .filter(|&i| d.type_id[i] == r.tid && d.deleted_at[i] > r.after)
        .map(|i| d.id[i])
        .collect();
    hits.sort_unstable();
    let total = hits.len() as u64;
    let mut items = Vec::new();
    let mut last = None;
    for id in hits
        .into_iter()
        .filter(|&i| r.after_id.is_none_or(|k| i > k))
        .take(r.antall)
    {
        items.push(Change {
            kind: "SLETTET",
            vegobjekt: ChangedObject::Id(id),
        });
        last = Some(id);
    }
    let next = next_start(p, g.id, last.map(|id| (id, 0.0)))?;
    Ok(respond(
        n,
        &envelope(
            s,
            &page.path,
            q,
            items,
            r.antall,
            next,
            Some(total),
            n.revision,
        ),
    ))
}

/// A page of changed objects (`type=endret`), rendered object by object as it is written
/// (streamed, `crate::api::stream`).
struct ChangedPage {
    render: RenderOwned,
    data: Arc<TypeData>,
    rows: Vec<u32>,
}

impl PageItems for ChangedPage {
    fn count(&self) -> usize {
        self.rows.len()
    }

    fn write<S: serde::ser::SerializeSeq>(
        &self,
        seq: &mut S,
        range: std::ops::Range<usize>,
    ) -> Result<(), S::Error> {
        use serde::ser::Error;
        let render = self.render.render();
        for &row in &self.rows[range] {
            let doc = render
                .doc(&self.data, row as usize)
                .map_err(|e| S::Error::custom(e.message))?;
            seq.serialize_element(&Change {
                kind: "ENDRET",
                vegobjekt: ChangedObject::Object(Box::new(doc)),
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_time_format() {
        let base = parse_time("2015-05-27T05:00:00+02:00").unwrap();
        assert_eq!(parse_time("2015-05-27 05:00:00").unwrap(), base);
        assert_eq!(parse_time("\"2015-05-27 05:00\"").unwrap(), base);
        assert_eq!(parse_time("2015-05-27T03:00:00Z").unwrap(), base);
        assert_eq!(parse_time("2015-05-27").unwrap(), base - 5 * 3600);
        assert!(parse_time("27.05.2015").is_err());
        assert!(parse_time("2015-13-01").is_err());
    }
}
