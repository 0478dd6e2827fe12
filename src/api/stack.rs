//! The request stack around the routes, as one hand-written function (issue 11): request ids,
//! tracing, CORS, the API's head limits and error reshaping (`guard`), the request timeout, the
//! request base (`request_base`) and gzip. It does what the tower-http layers it replaced did,
//! without their per-request costs: a tower layer on an axum `Router` boxes the service and its
//! future (two allocations per layer and request), `MakeRequestUuid` read the OS random source
//! (a `getrandom` system call per request), `CorsLayer` built a `HeaderMap` per request, and
//! `TimeoutLayer` registered (and on drop deregistered, under the timer's lock) a timer per
//! request.
//!
//! What each step costs now on a request that is answered at once (the `/posisjon` case):
//! - request id: the client's `x-request-id` is kept; else a UUID v4 from the thread's
//!   ChaCha generator (`rand::rng`, seeded from the OS once per thread), one small allocation.
//! - tracing: the `request` span (method, URI, request id) and the `started` / `finished` debug
//!   events are built only when their level is enabled (`--log`); the URI is not formatted
//!   otherwise.
//! - CORS: `CorsLayer::permissive()` answers preflights (`OPTIONS`) itself, as before; for every
//!   other request the headers it adds do not depend on the request (any origin), so they are
//!   taken from it once at start-up and copied onto each response (static values, no
//!   allocation). `tests/api/server.rs` compares them with the layer's own.
//! - timeout: the handler's future is polled first; the timer is created only if it is not
//!   ready at once (a handler that waits: blocking work, streamed pages, the write API).
//! - gzip: tower-http's `Compression` around the router, as before (it only parses
//!   `Accept-Encoding`; bodies are compressed only when asked). Errors that the guard reshapes
//!   are left uncompressed so that their text can be read.
//! - request base: built from `Host` once per thread and host, then shared.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::response::Response;
use axum::Router;
use tower::{Layer, ServiceExt};
use tower_http::compression::predicate::{And, DefaultPredicate, Predicate};
use tower_http::compression::{Compression, CompressionLayer};
use tower_http::cors::CorsLayer;
use tracing::Instrument;

use super::guard;
use super::request_base;

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Compression predicate: not the errors the guard reshapes (it reads their text).
#[derive(Clone, Copy, Debug)]
pub struct NotReshaped;

impl Predicate for NotReshaped {
    fn should_compress<B: axum::body::HttpBody>(&self, r: &Response<B>) -> bool {
        !guard::needs_reshape(r.status(), r.headers())
    }
}

type Compress = And<DefaultPredicate, NotReshaped>;

/// The routes with the whole request stack; cheap to clone (one reference count).
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

struct Inner {
    router: Router,
    compression: CompressionLayer<Compress>,
    cors: CorsLayer,
    /// The headers `cors` adds to a response that is not a preflight.
    cors_headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
    base_from_request: bool,
}

/// The headers `CorsLayer` adds to an ordinary (non-preflight) response.
async fn cors_headers_of(cors: &CorsLayer) -> Vec<(HeaderName, HeaderValue)> {
    let probe = tower::service_fn(|_req: Request| async {
        Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
    });
    let req = Request::get("/").body(Body::empty()).unwrap_or_default();
    match cors.layer(probe).oneshot(req).await {
        Ok(r) => r
            .headers()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Err(never) => match never {},
    }
}

/// A new request id: a UUID v4 from the thread's generator.
pub fn new_request_id() -> HeaderValue {
    use rand::Rng;
    let bytes: [u8; 16] = rand::rng().random();
    let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf))
        .unwrap_or_else(|_| HeaderValue::from_static("-"))
}

impl App {
    /// `router`: the routes with their state. Needs a tokio runtime (start-up work runs once).
    pub async fn new(router: Router, timeout: Duration, base_from_request: bool) -> App {
        let cors = CorsLayer::permissive();
        let cors_headers = cors_headers_of(&cors).await;
        App {
            inner: Arc::new(Inner {
                router,
                compression: CompressionLayer::new()
                    .gzip(true)
                    .compress_when(DefaultPredicate::new().and(NotReshaped)),
                cors,
                cors_headers,
                timeout,
                base_from_request,
            }),
        }
    }

    /// Answer one request.
    pub async fn handle(&self, mut req: Request) -> Response {
        let started = tokio::time::Instant::now();
        super::rewrite_suffix_in_place(&mut req);
        let id = match req.headers().get(&X_REQUEST_ID) {
            Some(v) => v.clone(),
            None => {
                let v = new_request_id();
                req.headers_mut().insert(X_REQUEST_ID, v.clone());
                v
            }
        };
        // Fields are evaluated only when the span is enabled.
        let span = tracing::info_span!("request", method = %req.method(), uri = %req.uri(),
            request_id = %id.to_str().unwrap_or("-"));
        let mut response = if span.is_disabled() {
            self.serve(req, started).await
        } else {
            self.serve(req, started).instrument(span).await
        };
        if !response.headers().contains_key(&X_REQUEST_ID) {
            response.headers_mut().insert(X_REQUEST_ID, id);
        }
        response
    }

    async fn serve(&self, req: Request, started: tokio::time::Instant) -> Response {
        tracing::debug!("started processing request");
        if req.method() == Method::OPTIONS {
            // A preflight: the CORS layer answers it without calling the routes.
            let inner = tower::service_fn(|_req: Request| async {
                Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
            });
            return match self.inner.cors.layer(inner).oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
        }
        let mut response = match guard::precheck(&req) {
            Err(r) => *r,
            Ok(write) => {
                let base = if self.inner.base_from_request {
                    request_base::base_arc_of(&req)
                } else {
                    None
                };
                let svc: Compression<Router, Compress> =
                    self.inner.compression.layer(self.inner.router.clone());
                let call = svc.oneshot(req);
                let deadline = started + self.inner.timeout;
                let answered = match base {
                    Some(base) => lazy_timeout(deadline, request_base::in_scope(base, call)).await,
                    None => lazy_timeout(deadline, call).await,
                };
                match answered {
                    Some(Ok(r)) => {
                        let r = r.map(Body::new);
                        if guard::needs_reshape(r.status(), r.headers()) {
                            guard::reshape(write, r).await
                        } else {
                            r
                        }
                    }
                    Some(Err(never)) => match never {},
                    None => guard::timed_out(write),
                }
            }
        };
        let headers = response.headers_mut();
        for (name, value) in &self.inner.cors_headers {
            if name == header::VARY {
                headers.append(name.clone(), value.clone());
            } else {
                headers.insert(name.clone(), value.clone());
            }
        }
        let status = response.status();
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), latency = ?started.elapsed(), "response failed");
        } else {
            tracing::debug!(status = status.as_u16(), latency = ?started.elapsed(), "finished processing request");
        }
        response
    }
}

/// `fut`'s output, or None once `deadline` passed; the timer exists only if `fut` waits.
async fn lazy_timeout<F: Future>(deadline: tokio::time::Instant, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        t.as_mut().poll(cx).map(|()| None)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_uuid_v4_and_differ() {
        let a = new_request_id();
        let b = new_request_id();
        assert_ne!(a, b);
        for v in [a, b] {
            let u = uuid::Uuid::parse_str(v.to_str().unwrap()).unwrap();
            assert_eq!(u.get_version_num(), 4);
            assert_eq!(v.len(), 36);
        }
    }

    #[tokio::test]
    async fn the_timer_fires_only_for_a_waiting_future() {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(20);
        assert_eq!(lazy_timeout(deadline, async { 7 }).await, Some(7));
        let slow = tokio::time::sleep(Duration::from_secs(5));
        assert_eq!(lazy_timeout(deadline, slow).await, None);
    }
}
