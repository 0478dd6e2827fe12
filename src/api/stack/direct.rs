//! Direct routes, for speed: a plain `GET /posisjon`, `GET /veg` or
//! `GET /vegobjekter/{type}/statistikk` is answered by its handler function without the
//! router. The router's part of such a request (path matching, the handler's extractors, the
//! state's clone, the boxed route futures, the timeout and request-base wrappers a synchronous
//! handler never needs) cost about a third of the server's instructions per request.
//!
//! A request takes the direct route only when the general path would do nothing else with it
//! than call the same handler: `GET` (not `HEAD`), the exact path (no format suffix, a type id
//! of digits only, no trailing slash), no `tidspunkt` in the query (`api::dated`), no
//! `Accept-Encoding` (compression), no `If-None-Match` (304s), no `Accept` that may ask for XML
//! (its root name comes from the suffix rewrite), no internal header, within the guard's head
//! limits, no rate limit configured and the log below `debug` (the request span). Everything
//! else about the answer is the stack's own code (`App::try_direct`): request id, in-flight
//! limit, entity tag, CORS, `Vary`, `Server`, metrics, access log.
//!
//! A direct answer is made in one synchronous call on its worker thread, so at most one per
//! worker is being made at any moment. It is not added to the in-flight count: it reads the
//! count (shed by the general path when the count is at `--max-in-flight`) and writes nothing
//! to it. The count's two atomic writes per request were a cache line that both workers took
//! from each other on every request; the price is that the count, and so the limit
//! and the `vegdb_http_requests_in_flight` gauge, can be low by at most the worker threads'
//! number.
//!
//! A statistics selection runs its quick slice (200 µs) here; when that runs out, the request
//! is given back to the general path marked `QuickSliceSpent`, and its handler goes straight to
//! the blocking pool (the slice is not run twice). `tests/api/direct.rs` compares every answer
//! with the general path's.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::super::dated;
use super::super::error::ApiResult;
use super::super::guard;
use super::super::media::{self, Answer};
use super::super::read::{posisjon, veg, vegobjekter};
use super::super::route::{self, Direct, RequestClass, READ_BASE};
use super::super::state::AppState;
use super::etag::entity_tag;
use super::{
    finish_headers, new_request_id, put_id_and_server, App, CorsHeaders, Finish, X_REQUEST_ID,
};

impl App {
    /// A request answered on its direct route (`direct`), or given back when it has none. It
    /// gets what the general path would give it: the same handler, headers, limits and logs.
    // The request goes back by value: boxing it would cost every other request an allocation.
    #[allow(clippy::result_large_err)]
    pub fn try_direct(&self, req: Request) -> Result<Response, Request> {
        let class = route::classify(req.uri().path());
        self.try_direct_as(req, class)
    }

    /// [`App::try_direct`] of a request whose path was classified.
    #[allow(clippy::result_large_err)]
    pub fn try_direct_as(&self, req: Request, class: RequestClass) -> Result<Response, Request> {
        let inner = &*self.inner;
        let (Some(state), None) = (&inner.direct, &inner.limiter) else {
            return Err(req);
        };
        let Some((answer, sent_id)) = answer_of(&req, &class) else {
            return Err(req);
        };
        // the general path's span and debug events (`--log debug`), and its head-limit errors
        if guard::precheck(&req, &class).is_err() || tracing::enabled!(tracing::Level::DEBUG) {
            return Err(req);
        }
        let started = tokio::time::Instant::now();
        let route = class.label;
        // not counted in flight (see the module's text): the count is only read
        if inner.ops.max_in_flight > 0
            && inner.in_flight.load(Ordering::Relaxed) >= inner.ops.max_in_flight
        {
            return Err(req); // shed by the general path
        }
        let id = sent_id.unwrap_or_else(new_request_id);
        let tag = inner
            .ops
            .http_cache
            .then(|| entity_tag(state.store.current_id(), &req, inner.base_from_request));
        let Some(below) = req.uri().path().get(READ_BASE.len()..) else {
            return Err(req);
        };
        let Some(answered) = answer(state, below, req.headers(), req.uri().query()) else {
            // a selection longer than its quick slice: to the blocking pool, the general way
            let mut req = req;
            req.extensions_mut().insert(vegobjekter::QuickSliceSpent);
            return Err(req);
        };
        let answered = answered.unwrap_or_else(|e| Answer::Response(e.into_response()));
        let (response, done) = match (&inner.answer_headers, tag, answered) {
            // the usual answer: its body with the prepared headers, with this tag and id
            (Some(prepared), Some((tag, false)), Answer::Json { content_type, body }) => {
                let mut response = Response::new(Body::from(body));
                *response.headers_mut() = prepared.fill(&content_type, tag, id.clone());
                (response, true)
            }
            (_, tag, answered) => {
                // as the general path adds them after the routes (no compression here)
                let mut response = answered.into_response();
                let validators = tag.filter(|_| response.status() == StatusCode::OK);
                let finish = Finish {
                    vary_encoding: true,
                    validators,
                };
                self.finish_answer(&mut response, finish, req.headers().get(header::ORIGIN));
                (response, false)
            }
        };
        let (parts, _body) = req.into_parts();
        let log = inner.access_log.as_ref().map(|_| (parts.method, parts.uri));
        Ok(self.finish(response, started, route, id, log, done))
    }
}

/// The headers of a direct route's usual answer (200, JSON, a public entity tag), with
/// placeholders for the tag and the request id: cloned and filled in per answer, one copy
/// instead of eight inserts into a growing map. The three values that differ per
/// answer are the map's first three, so filling them in hashes no header name and walks no
/// further; the others are added by the general path's own `finish_headers` and
/// `put_id_and_server`.
pub(super) struct AnswerHeaders {
    /// Content type, entity tag and request id first, in this order.
    map: HeaderMap,
}

impl AnswerHeaders {
    /// None when the CORS headers depend on the request's origin.
    pub(super) fn new(
        cors: &CorsHeaders,
        cache_public: &HeaderValue,
        server: &HeaderValue,
    ) -> Option<AnswerHeaders> {
        let CorsHeaders::Any(cors) = cors else {
            return None;
        };
        let mut h = HeaderMap::with_capacity(16);
        // the three values that differ per answer first (`fill` goes no further); the content
        // type is what `media` makes a request without `Accept` (the usual one)
        h.insert(
            header::CONTENT_TYPE,
            media::Negotiated::default_json(false).content_type(),
        );
        let placeholder = HeaderValue::from_static("-");
        h.insert(header::ETAG, placeholder.clone());
        h.insert(X_REQUEST_ID, placeholder.clone());
        let validators = Some((placeholder.clone(), cache_public.clone()));
        finish_headers(&mut h, true, validators, cors);
        put_id_and_server(&mut h, &placeholder, server);
        for value in h.values_mut() {
            *value = on_static_bytes(value);
        }
        let names: Vec<_> = h.keys().take(3).collect();
        (names == [&header::CONTENT_TYPE, &header::ETAG, &X_REQUEST_ID])
            .then_some(AnswerHeaders { map: h })
    }

    /// A copy with this content type, entity tag and request id.
    fn fill(&self, content_type: &HeaderValue, tag: HeaderValue, id: HeaderValue) -> HeaderMap {
        let mut headers = self.map.clone();
        let mut values = headers.values_mut();
        if let (Some(c), Some(t), Some(i)) = (values.next(), values.next(), values.next()) {
            if c != content_type {
                *c = content_type.clone();
            }
            (*t, *i) = (tag, id);
        }
        headers
    }
}

/// `value` on bytes copied once and kept for the process (a few per server started), so that
/// its copy per answer is a pointer copy, not a reference count the worker threads share.
fn on_static_bytes(value: &HeaderValue) -> HeaderValue {
    match value.to_str() {
        Ok(text) => HeaderValue::from_static(Box::leak(text.to_owned().into_boxed_str())),
        Err(_) => value.clone(),
    }
}

/// A handler that answers from the state, the request's path, headers and query alone; None:
/// it gives the request back to the general path (a statistics selection that needs more than
/// its quick slice on the worker).
type Handler = fn(&AppState, &str, &HeaderMap, Option<&str>) -> Option<ApiResult<Answer>>;

/// `path`: `/vegobjekter/{type}/statistikk` with a type of digits only
/// (`route::statistics_type`).
fn statistics(
    s: &AppState,
    path: &str,
    h: &HeaderMap,
    q: Option<&str>,
) -> Option<ApiResult<Answer>> {
    let tid = route::statistics_type(path)?;
    vegobjekter::answer_statistics(s, tid, h, q)
}

/// The handler that answers `req` directly, if it may be (see the module's text), and the
/// request id the client sent (found in the same walk over the headers).
fn answer_of(req: &Request, class: &RequestClass) -> Option<(Handler, Option<HeaderValue>)> {
    // a request at a past day resolves its generation on the general path (`dated`)
    if req.method() != Method::GET
        || req
            .uri()
            .query()
            .is_some_and(|q| q.contains(dated::TIDSPUNKT))
    {
        return None;
    }
    let answer: Handler = match class.direct? {
        Direct::Position => |s, _, h, q| Some(posisjon::answer(&s.store, h, q)),
        Direct::Road => |s, _, h, q| Some(veg::answer_position(&s.store, h, q)),
        Direct::Statistics => statistics,
    };
    let mut sent_id = None;
    for (name, value) in req.headers() {
        if name == header::ACCEPT_ENCODING
            || name == header::IF_NONE_MATCH
            || (name == header::ACCEPT && media::mentions_xml(value.as_bytes()))
            || name == media::SUFFIX_FORMAT
            || name == media::RESOURCE_PATH
        {
            return None;
        }
        if name == X_REQUEST_ID && sent_id.is_none() {
            sent_id = Some(value.clone());
        }
    }
    Some((answer, sent_id))
}
