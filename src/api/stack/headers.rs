//! The headers the stack adds to answers: CORS (worked out once at start-up), `Vary`, the
//! request id and `Server`, and [`finish_headers`], the one place the general path, the direct
//! routes and their prepared headers finish an answer.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use tower::{Layer, ServiceExt};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::{Headers, X_REQUEST_ID};

/// The CORS headers of a response that is not a preflight, fixed at start-up.
pub(super) enum CorsHeaders {
    /// Any origin: the same headers for every request.
    Any(Headers),
    /// Configured origins: the headers for each allowed origin, and for any other request.
    Listed {
        allowed: Vec<(HeaderValue, Headers)>,
        other: Headers,
    },
}

impl CorsHeaders {
    pub(super) fn for_origin(&self, origin: Option<&HeaderValue>) -> &Headers {
        match self {
            CorsHeaders::Any(h) => h,
            CorsHeaders::Listed { allowed, other } => origin
                .and_then(|o| allowed.iter().find(|(a, _)| a == o))
                .map_or(other, |(_, h)| h),
        }
    }
}

/// The headers `CorsLayer` adds to an ordinary (non-preflight) response to a request from
/// `origin`.
pub(super) async fn cors_headers_of(cors: &CorsLayer, origin: Option<&HeaderValue>) -> Headers {
    let probe = tower::service_fn(|_req: Request| async {
        Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
    });
    let mut req = Request::get("/").body(Body::empty()).unwrap_or_default();
    if let Some(o) = origin {
        req.headers_mut().insert(header::ORIGIN, o.clone());
    }
    match cors.layer(probe).oneshot(req).await {
        Ok(r) => r
            .headers()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Err(never) => match never {},
    }
}

/// `headers` with `accept` added to its `Vary` (answers are negotiated by `Accept`, and their
/// entity tags depend on it): one header value for both.
pub(super) fn with_vary_accept(mut headers: Headers) -> Headers {
    const ACCEPT: HeaderValue = HeaderValue::from_static("accept");
    match headers.iter_mut().find(|(n, _)| n == header::VARY) {
        Some((_, v)) => {
            if let Some(joined) = joined_vary(v, &ACCEPT) {
                *v = joined;
            }
        }
        None => headers.push((header::VARY, ACCEPT)),
    }
    headers
}

/// Two `Vary` values as one (`first, second`; `second` alone when `first` is empty); None when
/// they do not make a header value. The usual pair is joined without an allocation.
pub(super) fn joined_vary(first: &HeaderValue, second: &HeaderValue) -> Option<HeaderValue> {
    const BOTH: HeaderValue = HeaderValue::from_static("accept-encoding, accept");
    if first == VARY_ACCEPT_ENCODING && second == "accept" {
        return Some(BOTH);
    }
    if first.is_empty() {
        return Some(second.clone());
    }
    let mut text = first.as_bytes().to_vec();
    text.extend_from_slice(b", ");
    text.extend_from_slice(second.as_bytes());
    HeaderValue::from_bytes(&text).ok()
}

/// The CORS layer for `origins` (empty: any origin) and the fixed headers of its ordinary
/// answers (with `Vary: accept`).
pub(super) async fn cors_of(origins: &[String]) -> (CorsLayer, CorsHeaders) {
    if origins.is_empty() || origins.iter().any(|o| o == "*") {
        let cors = CorsLayer::permissive();
        let headers = with_vary_accept(cors_headers_of(&cors, None).await);
        return (cors, CorsHeaders::Any(headers));
    }
    let values: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o.trim().trim_end_matches('/')).ok())
        .collect();
    let cors = CorsLayer::permissive().allow_origin(AllowOrigin::list(values.clone()));
    let mut allowed = Vec::new();
    for v in values {
        let headers = with_vary_accept(cors_headers_of(&cors, Some(&v)).await);
        allowed.push((v, headers));
    }
    let other = with_vary_accept(cors_headers_of(&cors, None).await);
    (cors, CorsHeaders::Listed { allowed, other })
}

/// `cors` onto `headers`: `Vary` added to what is there, the others set.
pub(super) fn put_cors(headers: &mut HeaderMap, cors: &Headers) {
    for (name, value) in cors {
        if name == header::VARY {
            add_vary(headers, value);
        } else {
            headers.insert(name.clone(), value.clone());
        }
    }
}

/// `value` added to the answer's `Vary`, joined into its one line when it has one
/// (`Vary: accept-encoding, accept` is one header to copy and write per answer, not two).
pub(super) fn add_vary(headers: &mut HeaderMap, value: &HeaderValue) {
    use axum::http::header::Entry;
    match headers.entry(header::VARY) {
        Entry::Occupied(mut e) if e.iter().count() == 1 => match joined_vary(e.get(), value) {
            Some(joined) => {
                e.insert(joined);
            }
            None => e.append(value.clone()),
        },
        Entry::Occupied(mut e) => e.append(value.clone()),
        Entry::Vacant(e) => {
            e.insert(value.clone());
        }
    }
}

/// `Vary: accept-encoding` of an answer that was not compressed (compression would add it).
pub(super) const VARY_ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("accept-encoding");

/// A new request id: a UUID v4 from the thread's generator. Request ids tell requests apart in
/// logs and traces; they guard nothing, so the generator is the small non-cryptographic one
/// (Xoshiro256++, two 64-bit draws per id), seeded per thread from the OS-seeded thread
/// generator: 200 instructions less per request than the ChaCha thread generator.
pub fn new_request_id() -> HeaderValue {
    use rand::{Rng, SeedableRng};
    // Per-thread scratch: a random generator; no setting or counter of any server.
    thread_local! {
        static IDS: std::cell::RefCell<rand::rngs::SmallRng> =
            std::cell::RefCell::new(rand::rngs::SmallRng::from_rng(&mut rand::rng()));
    }
    let bytes = IDS.with(|g| g.borrow_mut().random::<u128>()).to_le_bytes();
    let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf))
        .unwrap_or_else(|_| HeaderValue::from_static("-"))
}

/// What [`finish_headers`] adds to an answer besides the CORS headers.
#[derive(Debug)]
pub(crate) struct Finish {
    /// `Vary: accept-encoding` on an answer the compression wrapper did not see.
    pub(crate) vary_encoding: bool,
    /// The entity tag and whether the answer is private (`Cache-Control`), for a 200 or 304.
    pub(crate) validators: Option<(HeaderValue, bool)>,
}

impl Finish {
    /// CORS only (refusals, reshaped errors, timeouts).
    pub(super) const NOTHING: Finish = Finish {
        vary_encoding: false,
        validators: None,
    };

    pub(super) fn validators(tag: HeaderValue, private: bool) -> Finish {
        Finish {
            vary_encoding: false,
            validators: Some((tag, private)),
        }
    }
}

/// THE headers added after the handler to every answer of the routes (not the metrics scrape
/// nor a preflight), in this order, on the general path, on a direct route and in the headers
/// a direct route's usual answer is prepared with (`direct::AnswerHeaders`): `Vary:
/// accept-encoding` (`vary_encoding`), the entity tag and `Cache-Control` (`validators`), the
/// CORS headers (`Vary: accept` joined into the answer's `Vary` line).
pub(crate) fn finish_headers(
    headers: &mut HeaderMap,
    vary_encoding: bool,
    validators: Option<(HeaderValue, HeaderValue)>,
    cors: &Headers,
) {
    if vary_encoding {
        headers.append(header::VARY, VARY_ACCEPT_ENCODING);
    }
    if let Some((tag, cache_control)) = validators {
        headers.insert(header::ETAG, tag);
        headers.insert(header::CACHE_CONTROL, cache_control);
    }
    put_cors(headers, cors);
}

/// The request id (unless the answer has one) and `Server`: the last headers of every answer.
pub(crate) fn put_id_and_server(headers: &mut HeaderMap, id: &HeaderValue, server: &HeaderValue) {
    if !headers.contains_key(&X_REQUEST_ID) {
        headers.insert(X_REQUEST_ID, id.clone());
    }
    headers.insert(header::SERVER, server.clone());
}
