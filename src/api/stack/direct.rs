//! Direct routes (issue 11): a plain `GET /posisjon` or `GET /veg` is answered by its handler
//! function without the router. The router's part of such a request (path matching, the
//! handler's extractors, the state's clone, the boxed route futures, the timeout and
//! request-base wrappers a synchronous handler never needs) cost about a third of the
//! server's instructions per request.
//!
//! A request takes the direct route only when the general path would do nothing else with it
//! than call the same handler: `GET` (not `HEAD`), the exact path (no format suffix), no
//! `Accept-Encoding` (compression), no `If-None-Match` (304s), no `Accept` that may ask for XML
//! (its root name comes from the suffix rewrite), no internal header, within the guard's head
//! limits, no rate limit configured and the log below `debug` (the request span). Everything
//! else about the answer is the stack's own code (`App::try_direct`): request id, in-flight
//! limit, entity tag, CORS, `Vary`, `Server`, metrics, access log. `tests/api/direct.rs`
//! compares every answer with the general path's.

use axum::extract::Request;
use axum::http::{header, HeaderMap, Method};
use axum::response::Response;

use super::super::error::ApiResult;
use super::super::read::{posisjon, veg};
use super::super::{media, READ_BASE};
use crate::generation::GenerationStore;

/// A handler that answers from the data, the request's headers and its query alone.
pub(super) type Answer = fn(&GenerationStore, &HeaderMap, Option<&str>) -> ApiResult<Response>;

/// The handler that answers `req` directly, if it may be (see the module's text).
pub(super) fn answer_of(req: &Request) -> Option<Answer> {
    if req.method() != Method::GET {
        return None;
    }
    let answer: Answer = match req.uri().path().strip_prefix(READ_BASE)? {
        "/posisjon" => posisjon::answer,
        "/veg" => veg::answer_position,
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
