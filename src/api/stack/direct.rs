//! Direct routes (issue 11): a plain `GET /posisjon`, `GET /veg` or
//! `GET /vegobjekter/{type}/statistikk` is answered by its handler function without the router. The router's part of such a request (path matching, the
//! handler's extractors, the state's clone, the boxed route futures, the timeout and
//! request-base wrappers a synchronous handler never needs) cost about a third of the
//! server's instructions per request.
//!
//! A request takes the direct route only when the general path would do nothing else with it
//! than call the same handler: `GET` (not `HEAD`), the exact path (no format suffix, a type id
//! of digits only, no trailing slash), no
//! `Accept-Encoding` (compression), no `If-None-Match` (304s), no `Accept` that may ask for XML
//! (its root name comes from the suffix rewrite), no internal header, within the guard's head
//! limits, no rate limit configured and the log below `debug` (the request span). Everything
//! else about the answer is the stack's own code (`App::try_direct`): request id, in-flight
//! limit, entity tag, CORS, `Vary`, `Server`, metrics, access log. A statistics selection runs
//! its quick slice (200 µs) here; when that runs out, the request is given back to the general
//! path marked `QuickSliceSpent`, and its handler goes straight to the blocking pool (the slice
//! is not run twice). `tests/api/direct.rs` compares every answer with the general path's.

use axum::extract::Request;
use axum::http::{header, HeaderMap, Method};
use axum::response::Response;

use super::super::error::ApiResult;
use super::super::read::{posisjon, veg, vegobjekter};
use super::super::{media, AppState, READ_BASE};

/// A handler that answers from the state, the request's path, headers and query alone; None:
/// it gives the request back to the general path (a statistics selection that needs more than
/// its quick slice on the worker).
pub(super) type Answer =
    fn(&AppState, &str, &HeaderMap, Option<&str>) -> Option<ApiResult<Response>>;

fn nearest(s: &AppState, _: &str, h: &HeaderMap, q: Option<&str>) -> Option<ApiResult<Response>> {
    Some(posisjon::answer(&s.store, h, q))
}

fn road_position(
    s: &AppState,
    _: &str,
    h: &HeaderMap,
    q: Option<&str>,
) -> Option<ApiResult<Response>> {
    Some(veg::answer_position(&s.store, h, q))
}

/// `path`: `/vegobjekter/{type}/statistikk` with a type of digits only (the router's path
/// parameter would be percent-decoded: such paths go the general way).
fn statistics(
    s: &AppState,
    path: &str,
    h: &HeaderMap,
    q: Option<&str>,
) -> Option<ApiResult<Response>> {
    let tid = statistics_type(path)?;
    vegobjekter::answer_statistics(s, tid, h, q)
}

fn statistics_type(below: &str) -> Option<&str> {
    let tid = below
        .strip_prefix("/vegobjekter/")?
        .strip_suffix("/statistikk")?;
    (!tid.is_empty() && tid.bytes().all(|b| b.is_ascii_digit())).then_some(tid)
}

/// The handler that answers `req` directly, if it may be (see the module's text).
pub(super) fn answer_of(req: &Request) -> Option<Answer> {
    if req.method() != Method::GET {
        return None;
    }
    let answer: Answer = match req.uri().path().strip_prefix(READ_BASE)? {
        "/posisjon" => nearest,
        "/veg" => road_position,
        below if statistics_type(below).is_some() => statistics,
        _ => return None,
    };
    let general = req.headers().iter().any(|(name, value)| {
        name == header::ACCEPT_ENCODING
            || name == header::IF_NONE_MATCH
            || (name == header::ACCEPT && media::mentions_xml(value.as_bytes()))
            || name == media::SUFFIX_FORMAT
            || name == media::RESOURCE_PATH
    });
    (!general).then_some(answer)
}
