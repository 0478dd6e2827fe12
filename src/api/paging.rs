//! The list envelope `{objekter, metadata: {returnert, neste: {start, href}}}` shared by the
//! paginated endpoints, and page-size rules.

use serde::Serialize;

use super::cursor::Cursor;
use super::error::{ApiError, ApiResult};
use super::params::Params;
use super::state::AppState;

pub const DEFAULT_PAGE: usize = 1000;

/// `antall`: default 1000; larger than `max` is clamped to `max` (as the v2 service does).
pub fn page_size(p: &Params, max: usize) -> ApiResult<usize> {
    match p.int("antall")? {
        None => Ok(DEFAULT_PAGE.min(max)),
        Some(n) if n >= 1 => Ok((n as usize).min(max)),
        Some(n) => Err(ApiError::bad(
            4002,
            format!("antall må være et positivt heltall, ikke {n}"),
        )),
    }
}

/// The request's cursor, if any.
pub fn start(p: &Params) -> ApiResult<Option<Cursor>> {
    p.one("start")?.map(Cursor::decode).transpose()
}

/// `neste.start` of a page: a cursor after the last item returned (`last` = its key), or, for an
/// empty page, the request's own `start` (the end: clients stop on `returnert == 0` or a
/// repeated start), or a cursor past every key for an empty first page.
pub fn next_start(p: &Params, generation: u64, last: Option<(u64, f64)>) -> ApiResult<String> {
    Ok(match (last, p.one("start")?) {
        (Some((key, key2)), _) => Cursor {
            generation,
            key,
            key2,
        }
        .encode(),
        (None, Some(start)) => start.to_string(),
        (None, None) => Cursor {
            generation,
            key: u64::MAX,
            key2: 1.0,
        }
        .encode(),
    })
}

/// Absolute URL repeating the query with `antall` and `start`.
pub fn next_href(
    s: &AppState,
    path: &str,
    query: Option<&str>,
    antall: usize,
    start: &str,
) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k != "start" && k != "antall" {
            ser.append_pair(&k, &v);
        }
    }
    ser.append_pair("antall", &antall.to_string());
    ser.append_pair("start", start);
    format!("{}?{}", s.href(path), ser.finish())
}

/// Build the envelope. `next` is the cursor after the last item, or the request's own `start`
/// when the page is empty (the end: clients stop on `returnert == 0` or a repeated start).
#[allow(clippy::too_many_arguments)]
pub fn envelope<T: Serialize>(
    s: &AppState,
    path: &str,
    query: Option<&str>,
    items: Vec<T>,
    antall: usize,
    next: String,
    total: Option<u64>,
    revision: u8,
) -> Envelope<Vec<T>> {
    let returned = items.len();
    streamed_envelope(
        s, path, query, items, returned, antall, next, total, revision,
    )
}

/// The envelope around any serializable list (e.g. objects rendered while writing).
#[allow(clippy::too_many_arguments)]
pub fn streamed_envelope<T: Serialize>(
    s: &AppState,
    path: &str,
    query: Option<&str>,
    items: T,
    returned: usize,
    antall: usize,
    next: String,
    total: Option<u64>,
    revision: u8,
) -> Envelope<T> {
    Envelope {
        metadata: PageMetadata {
            returnert: returned,
            // `Negotiated::total_count`: revision 0 (incl. the plain vendor type)
            antall: if revision == 0 { total } else { None },
            neste: Next {
                href: next_href(s, path, query, antall, &next),
                start: next,
            },
        },
        objekter: items,
    }
}

#[derive(Clone, Serialize, utoipa::ToSchema)]
pub struct Next {
    pub start: String,
    pub href: String,
}

#[derive(Clone, Serialize, utoipa::ToSchema)]
pub struct PageMetadata {
    pub returnert: usize,
    /// Total count: only response revision 0 (plain nvdb-v2+json) carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub antall: Option<u64>,
    pub neste: Next,
}

/// `{objekter, metadata}`, serialized without building an intermediate tree. In XML its root
/// is the resource's list name (`<vegobjekter><objekter><objekt>…`; the serde name is
/// `xml::LIST_ENVELOPE`).
#[derive(Serialize)]
#[serde(rename = "$liste")]
pub struct Envelope<T> {
    pub objekter: T,
    pub metadata: PageMetadata,
}
