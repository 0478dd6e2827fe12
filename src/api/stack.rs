//! The request stack around the routes, as one hand-written function (a tower layer per concern
//! cost more than the handler of the hottest routes): request ids,
//! tracing, CORS, the API's head limits and error reshaping (`guard`), the request timeout, the
//! request base (`request_base`) and compression (gzip, br, zstd); and the operations layers
//! (`ApiConfig::ops`): `/metrics` (`crate::metrics`), the access log, entity tags
//! and 304s, load shedding, the per-client rate limit, configured CORS origins, `Server`. Plain
//! GETs of the three hottest read routes skip the router (`direct.rs`). It does what the
//! tower-http layers it replaced did,
//! without their per-request costs: a tower layer on an axum `Router` boxes the service and its
//! future (two allocations per layer and request), `MakeRequestUuid` read the OS random source
//! (a `getrandom` system call per request), `CorsLayer` built a `HeaderMap` per request, and
//! `TimeoutLayer` registered (and on drop deregistered, under the timer's lock) a timer per
//! request.
//!
//! What each step costs now on a request that is answered at once (the `/posisjon` case):
//! - request id: the client's `x-request-id` is kept; else a UUID v4 from the thread's
//!   ChaCha generator (`rand::rng`, seeded from the OS once per thread), one small allocation.
//! - tracing: the `request` span (method, URI, request id) is a `debug` span, and with the
//!   `started` / `finished` debug events it is built only at `--log debug`; at `info` a request
//!   logs an event only when it ends in a 5xx (with its request id: `warn` for a 503, `error`
//!   for the others; a 503 while the data loads is `debug`).
//! - CORS: `CorsLayer::permissive()` answers preflights (`OPTIONS`) itself, as before; for every
//!   other request the headers it adds do not depend on the request (any origin), so they are
//!   taken from it once at start-up and copied onto each response (static values, no
//!   allocation). `tests/api/server.rs` compares them with the layer's own.
//! - timeout: the handler's future is polled first; the timer is created only if it is not
//!   ready at once (a handler that waits: blocking work, streamed pages, the write API).
//! - gzip: tower-http's `Compression` around the router, as before (it only parses
//!   `Accept-Encoding`; bodies are compressed only when asked). Errors that the guard reshapes
//!   are left uncompressed so that their text can be read. An answer its handler marked heavy
//!   (a streamed page of more than a few items) has its body, compression included, produced
//!   chunk by chunk on the few heavy-work threads of the server (`super::heavy`); for any
//!   other answer this is one look into its (empty) extensions.
//! - request base: built from `Host` once per thread and host, then shared.
//! - classification: the path as it arrived is classified once (`route::classify`: byte
//!   compares of its first segment and its end, no allocation) into the class every step below
//!   reads: the metrics label, the API (error shape), shedding, caching, suffix, direct route.
//! - metrics: the class's label, then a counter add and a histogram sample through handles
//!   resolved once per (route, status) (`crate::metrics`).
//! - in flight / shedding: one atomic add and one subtract.
//! - rate limit (off by default): the key (`X-Client` copied, else the IP address) and one
//!   `governor` check in its sharded map.
//! - entity tag (read API): the generation id (no reference count taken), a SipHash over the
//!   method, target and a few headers, and one header value; a matching `If-None-Match` is
//!   answered before the routes.
//! - `tidspunkt` (`super::dated`): a read route that answers at a past day looks for the name
//!   in its query text (a byte scan); only a query that names it (or holds an escape) is
//!   parsed, and only one with a past day resolves that day's generation and runs the routes
//!   inside its scope.
//! - access log: the method and URI are kept (reference counts, no copy) and one line is
//!   formatted by hand into a shared buffer that is written out in batches
//!   (`super::access_log`); a body of unknown size is wrapped (one allocation) so that its
//!   bytes are counted.

use std::future::Future;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use tower::{Layer, ServiceExt};
use tower_http::compression::predicate::{And, DefaultPredicate, Predicate};
use tower_http::compression::{Compression, CompressionLayer};
use tower_http::cors::CorsLayer;
use tracing::Instrument;

mod direct;
mod etag;
mod headers;
mod suffix;

use self::etag::{entity_tag, none_match};
pub use self::headers::new_request_id;
use self::headers::{
    cors_of, finish_headers, put_id_and_server, CorsHeaders, Finish, VARY_ACCEPT_ENCODING,
};
use self::suffix::rewrite_suffix;
pub use self::suffix::rewrite_suffix_in_place;
use super::access_log::{AccessLine, AccessLog};
use super::dated;
use super::guard;
use super::heavy::HeavyPool;
use super::request_base;
use super::route::{self, RequestClass};
use super::state::{ApiConfig, AppState, OpsOptions};
use crate::generation::{Generation, GenerationStore};
use crate::metrics::{self, Metrics};

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// The header a client names itself with (the rate limit's key before the IP address).
pub const X_CLIENT: HeaderName = HeaderName::from_static("x-client");
/// `Server` on every response.
pub const SERVER: &str = concat!("vegdb/", env!("CARGO_PKG_VERSION"));
/// Where the metrics are served (outside both APIs).
pub use super::route::METRICS_PATH;
/// Target of the access log lines.
pub const ACCESS_LOG_TARGET: &str = super::access_log::TARGET;
/// Content type of the Prometheus text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Compression predicate: not the errors the guard reshapes (it reads their text).
#[derive(Clone, Copy, Debug)]
pub struct NotReshaped;

impl Predicate for NotReshaped {
    fn should_compress<B: axum::body::HttpBody>(&self, r: &Response<B>) -> bool {
        !guard::needs_reshape(r.status(), r.headers())
    }
}

type Compress = And<DefaultPredicate, NotReshaped>;
type Headers = Vec<(HeaderName, HeaderValue)>;

/// The routes with the whole request stack; cheap to clone (one reference count).
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

/// Who a request counts against in the rate limit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ClientKey {
    Client(Box<[u8]>),
    Ip(IpAddr),
    Unknown,
}

struct Inner {
    router: Router,
    compression: CompressionLayer<Compress>,
    cors: CorsLayer,
    cors_headers: CorsHeaders,
    timeout: Duration,
    base_from_request: bool,
    /// None while the server starts (no generation yet: no entity tags).
    store: Option<Arc<GenerationStore>>,
    /// The state the direct routes answer from (None: every request through the router).
    direct: Option<AppState>,
    /// The headers of a direct route's usual answer (see `direct::AnswerHeaders`).
    answer_headers: Option<direct::AnswerHeaders>,
    ops: OpsOptions,
    /// None: no access log (switched off, or filtered out by `--log`).
    access_log: Option<Arc<AccessLog>>,
    metrics: Option<Arc<Metrics>>,
    /// The threads heavy answers are rendered on (the state's, or a pool of this stack's own).
    heavy: Arc<HeavyPool>,
    in_flight: AtomicUsize,
    limiter: Option<Arc<DefaultKeyedRateLimiter<ClientKey>>>,
    cache_public: HeaderValue,
    cache_private: HeaderValue,
    retry_after: HeaderValue,
    server: HeaderValue,
}

/// Counts a request in flight until dropped (also when its future is dropped).
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl App {
    /// `router`: the routes with their state; `state`: the configuration and the generation
    /// store (for entity tags and metrics). Needs a tokio runtime (start-up work runs once;
    /// the metrics upkeep runs on it).
    pub async fn new(router: Router, state: &AppState) -> App {
        App::build(
            router,
            &state.config,
            Some(state.store.clone()),
            state.writer.clone(),
            Some(state.clone()),
        )
        .await
    }

    /// The stack around routes that serve no data (the start-up answers while the data
    /// loads, `api::health::starting_router`): no entity tags, no writer metrics.
    pub async fn without_data(router: Router, config: &ApiConfig) -> App {
        App::build(router, config, None, None, None).await
    }

    async fn build(
        router: Router,
        config: &ApiConfig,
        store: Option<Arc<GenerationStore>>,
        writer: Option<Arc<crate::changeset::writer::Writer>>,
        state: Option<AppState>,
    ) -> App {
        let ops = config.ops.clone();
        let (cors, cors_headers) = cors_of(&ops.cors_origins).await;
        let metrics = ops.metrics.then(|| {
            Arc::new(Metrics::new(metrics::Sources {
                store: store.clone(),
                writer,
            }))
        });
        let limiter = NonZeroU32::new(ops.rate_limit).map(|rate| {
            let burst = NonZeroU32::new(ops.rate_burst).unwrap_or(rate);
            Arc::new(DefaultKeyedRateLimiter::keyed(
                Quota::per_second(rate).allow_burst(burst),
            ))
        });
        let cache = |scope: &str| {
            let text = match ops.cache_max_age {
                0 => format!("{scope}, no-cache"),
                n => format!("{scope}, max-age={n}"),
            };
            HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("no-cache"))
        };
        let server = HeaderValue::from_static(SERVER);
        let cache_public = cache("public");
        let answer_headers = direct::AnswerHeaders::new(&cors_headers, &cache_public, &server);
        let heavy = state
            .as_ref()
            .map_or_else(Default::default, |s| s.resources.heavy.clone());
        let inner = Arc::new(Inner {
            router,
            compression: CompressionLayer::new()
                .gzip(true)
                .br(true)
                .zstd(true)
                .compress_when(DefaultPredicate::new().and(NotReshaped)),
            cors,
            cors_headers,
            timeout: config.request_timeout,
            base_from_request: config.base_from_request,
            direct: state.filter(|_| ops.direct_routes),
            store,
            cache_public,
            answer_headers,
            cache_private: cache("private"),
            retry_after: HeaderValue::from(ops.retry_after.max(1)),
            server,
            access_log: access_log_of(&ops),
            ops,
            metrics,
            heavy,
            in_flight: AtomicUsize::new(0),
            limiter,
        });
        if inner.metrics.is_some() || inner.limiter.is_some() {
            upkeep(Arc::downgrade(&inner));
        }
        App { inner }
    }

    /// Answer one request (from an unknown peer: see [`App::handle_from`]).
    pub async fn handle(&self, req: Request) -> Response {
        self.handle_from(req, None).await
    }

    /// Answer one request from `peer`: on its direct route if it has one, else through the
    /// routes.
    pub async fn handle_from(&self, req: Request, peer: Option<IpAddr>) -> Response {
        let class = route::classify(req.uri().path());
        match self.try_direct_as(req, class) {
            Ok(response) => response,
            Err(req) => self.handle_routed_as(req, peer, class).await,
        }
    }

    /// Answer one request through the routes, inside the whole stack.
    pub async fn handle_routed(&self, req: Request, peer: Option<IpAddr>) -> Response {
        let class = route::classify(req.uri().path());
        self.handle_routed_as(req, peer, class).await
    }

    /// [`App::handle_routed`] of a request whose path was classified (as it arrived).
    pub async fn handle_routed_as(
        &self,
        mut req: Request,
        peer: Option<IpAddr>,
        class: RequestClass,
    ) -> Response {
        let started = tokio::time::Instant::now();
        let inner = &*self.inner;
        let log = inner
            .access_log
            .as_ref()
            .map(|_| (req.method().clone(), req.uri().clone()));
        rewrite_suffix(&mut req, &class);
        let route = class.label;
        let id = match req.headers().get(&X_REQUEST_ID) {
            Some(v) => v.clone(),
            None => {
                let v = new_request_id();
                req.headers_mut().insert(X_REQUEST_ID, v.clone());
                v
            }
        };
        // Fields are evaluated only when the span is enabled. At `debug`: a span costs about
        // 9,000 instructions per request at `info` (its fields formatted when it is made), a
        // third of a `/posisjon` answer; the outcome below and the access log carry the id.
        let span = tracing::debug_span!("request", method = %req.method(), uri = %req.uri(),
            request_id = %id.to_str().unwrap_or("-"));
        let response = if span.is_disabled() {
            self.serve(req, started, peer, class).await
        } else {
            self.serve(req, started, peer, class).instrument(span).await
        };
        self.finish(response, started, route, id, log, false)
    }

    /// The end of every request: its id and `Server` on the answer (unless `has_id_and_server`),
    /// the outcome logged, counted in the metrics and written to the access log.
    fn finish(
        &self,
        mut response: Response,
        started: tokio::time::Instant,
        route: metrics::RouteLabel,
        id: HeaderValue,
        log: Option<(Method, axum::http::Uri)>,
        has_id_and_server: bool,
    ) -> Response {
        let inner = &*self.inner;
        if !has_id_and_server {
            put_id_and_server(response.headers_mut(), &id, &inner.server);
        }
        let latency = started.elapsed();
        let status = response.status();
        log_outcome(status, latency, &id, inner.store.is_none());
        if let Some(m) = &inner.metrics {
            m.request(route, status.as_u16(), latency);
        }
        if let (Some((method, uri)), Some(access)) = (log, &inner.access_log) {
            let line = AccessLine {
                method,
                uri,
                status,
                latency,
                id,
            };
            return access.log_response(line, response);
        }
        response
    }

    /// The headers every answer of the routes, or refusal, gets after its handler, on the
    /// general path and a direct route's alike (see [`finish_headers`]).
    fn finish_answer(&self, response: &mut Response, finish: Finish, origin: Option<&HeaderValue>) {
        let validators = finish
            .validators
            .map(|(tag, private)| (tag, self.cache_control(private)));
        finish_headers(
            response.headers_mut(),
            finish.vary_encoding,
            validators,
            self.inner.cors_headers.for_origin(origin),
        );
    }

    /// The refusal of a request: shed (503) or rate-limited (429), with `Retry-After`.
    fn refuse(
        &self,
        write: Option<super::write::Format>,
        status: StatusCode,
        wait: Option<Duration>,
    ) -> Response {
        let message = if status == StatusCode::TOO_MANY_REQUESTS {
            "For mange forespørsler fra denne klienten; prøv igjen senere".to_string()
        } else {
            "Tjenesten er overbelastet; prøv igjen senere".to_string()
        };
        let mut r = guard::shaped(write, status, message);
        let retry = match wait {
            Some(w) => HeaderValue::from(w.as_secs().max(1)),
            None => self.inner.retry_after.clone(),
        };
        r.headers_mut().insert(header::RETRY_AFTER, retry);
        r
    }

    async fn serve(
        &self,
        req: Request,
        started: tokio::time::Instant,
        peer: Option<IpAddr>,
        class: RequestClass,
    ) -> Response {
        tracing::debug!("started processing request");
        let inner = &*self.inner;
        if class.is_metrics() && (req.method() == Method::GET || req.method() == Method::HEAD) {
            if let Some(m) = &inner.metrics {
                let text = m.render(inner.in_flight.load(Ordering::Relaxed));
                let mut r = Response::new(Body::from(text));
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(METRICS_CONTENT_TYPE),
                );
                r.headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                return r;
            }
        }
        let monitoring = !class.may_be_shed();
        let now_in_flight = inner.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        let _in_flight = InFlight(&inner.in_flight);
        let origin = req.headers().get(header::ORIGIN).cloned();
        if req.method() == Method::OPTIONS {
            // A preflight: the CORS layer answers it without calling the routes.
            let svc = tower::service_fn(|_req: Request| async {
                Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
            });
            return match inner.cors.layer(svc).oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
        }
        let (mut response, finish) = match guard::precheck(&req, &class) {
            Err(r) => (*r, Finish::NOTHING),
            Ok(write)
                if !monitoring
                    && inner.ops.max_in_flight > 0
                    && now_in_flight > inner.ops.max_in_flight =>
            {
                if let Some(m) = &inner.metrics {
                    m.shed();
                }
                let r = self.refuse(write, StatusCode::SERVICE_UNAVAILABLE, None);
                (r, Finish::NOTHING)
            }
            Ok(write) => match self.rate_limited(&req, peer, monitoring) {
                Some(wait) => {
                    if let Some(m) = &inner.metrics {
                        m.rate_limited();
                    }
                    let r = self.refuse(write, StatusCode::TOO_MANY_REQUESTS, Some(wait));
                    (r, Finish::NOTHING)
                }
                None => self.call(req, write, started, &class).await,
            },
        };
        self.finish_answer(&mut response, finish, origin.as_ref());
        response
    }

    /// How long a client over its rate must wait (None: go on).
    fn rate_limited(
        &self,
        req: &Request,
        peer: Option<IpAddr>,
        monitoring: bool,
    ) -> Option<Duration> {
        let limiter = self.inner.limiter.as_ref()?;
        if monitoring {
            return None;
        }
        let key = match req.headers().get(X_CLIENT) {
            Some(c) if !c.is_empty() => ClientKey::Client(c.as_bytes().into()),
            _ => peer.map_or(ClientKey::Unknown, ClientKey::Ip),
        };
        match limiter.check_key(&key) {
            Ok(()) => None,
            Err(not_until) => Some(not_until.wait_time_from(DefaultClock::default().now())),
        }
    }

    /// The routes, with the entity tag checked before; what [`finish_headers`] is to add after
    /// comes back with the answer.
    async fn call(
        &self,
        req: Request,
        write: Option<super::write::Format>,
        started: tokio::time::Instant,
        class: &RequestClass,
    ) -> (Response, Finish) {
        let inner = &*self.inner;
        let tag = (inner.ops.http_cache
            && write.is_none()
            && (req.method() == Method::GET || req.method() == Method::HEAD)
            && class.cacheable)
            .then_some(inner.store.as_ref())
            .flatten()
            .map(|store| entity_tag(store.current_id(), &req, inner.base_from_request));
        let mut star = false;
        if let Some((tag, private)) = &tag {
            if req.headers().contains_key(header::IF_NONE_MATCH) {
                let (matched, any) = none_match(req.headers().get_all(header::IF_NONE_MATCH), tag);
                star = any;
                if matched {
                    return (not_modified(), Finish::validators(tag.clone(), *private));
                }
            }
        }
        let base = if inner.base_from_request {
            request_base::base_arc_of(&req)
        } else {
            None
        };
        let deadline = started + inner.timeout;
        // `tidspunkt`: the day's generation, resolved once before the routes (`super::dated`)
        let view = match self.view_of(req.uri(), class, deadline).await {
            Ok(view) => view,
            Err(r) => return (r, Finish::NOTHING),
        };
        // A client that accepts no encoding gets its answer without the compression wrapper
        // (its predicate and body adapter cost ≈ 3,000 instructions per request for nothing);
        // the answer still depends on Accept-Encoding, as the wrapper would say (`Vary`).
        let compressed = req.headers().contains_key(header::ACCEPT_ENCODING);
        let answered = if compressed {
            let svc: Compression<Router, Compress> = inner.compression.layer(inner.router.clone());
            answer_in_time(deadline, base, view, svc.oneshot(req))
                .await
                .map(|r| r.map(|r| r.map(Body::new)))
        } else {
            answer_in_time(deadline, base, view, inner.router.clone().oneshot(req)).await
        };
        let mut r = match answered {
            Some(Ok(mut r)) => {
                if guard::needs_reshape(r.status(), r.headers()) {
                    // the lower layer's headers, `Vary` among them, are kept by the reshape
                    if !compressed {
                        r.headers_mut().append(header::VARY, VARY_ACCEPT_ENCODING);
                    }
                    return (guard::reshape(write, r).await, Finish::NOTHING);
                }
                r
            }
            Some(Err(never)) => match never {},
            None => return (guard::timed_out(write), Finish::NOTHING),
        };
        // a large streamed page: rendered and compressed off the async workers, a bounded
        // number of chunks at a time (`super::heavy`); a page of light items only when
        // compressed
        let light = !compressed && r.extensions().get::<super::heavy::Light>().is_some();
        if r.extensions().get::<super::heavy::Heavy>().is_some() && !light {
            r = r.map(|body| super::heavy::offload(&inner.heavy, body));
        }
        let finish = Finish {
            vary_encoding: !compressed,
            validators: None,
        };
        match (tag, r.status()) {
            (Some((tag, private)), StatusCode::OK) if star => {
                (not_modified(), Finish::validators(tag, private))
            }
            // (`Vary: Accept` is among the CORS headers every answer gets)
            (Some((tag, private)), StatusCode::OK) => (
                r,
                Finish {
                    validators: Some((tag, private)),
                    ..finish
                },
            ),
            _ => (r, finish),
        }
    }

    /// The generation a read request with `tidspunkt` answers from (None: the current one, as
    /// for every request without it), or the answer: the error of a bad `tidspunkt`, or the
    /// timeout when the view is not built by the deadline (its building goes on and it is
    /// kept for the next request).
    async fn view_of(
        &self,
        uri: &axum::http::Uri,
        class: &RequestClass,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Arc<Generation>>, Response> {
        let Some(store) = self.inner.store.as_ref() else {
            return Ok(None);
        };
        let query = uri.query();
        if !class.dated || !dated::may_have(query) {
            return Ok(None);
        }
        let day = match dated::day_of_query(query.unwrap_or("")) {
            Ok(Some(day)) => day,
            Ok(None) => return Ok(None),
            Err(e) => return Err(e.into_response()),
        };
        let needs = dated::Needs::of_request(uri.path(), query);
        match lazy_timeout(deadline, dated::resolve(store, day, needs)).await {
            Some(Ok(view)) => Ok(view),
            Some(Err(e)) => Err(e.into_response()),
            None => Err(guard::timed_out(None)),
        }
    }

    fn cache_control(&self, private: bool) -> HeaderValue {
        if private {
            self.inner.cache_private.clone()
        } else {
            self.inner.cache_public.clone()
        }
    }

    /// The metrics registry (None when `--metrics false`).
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.metrics.as_deref()
    }
}

/// 304 without running the handler (it gets the validators a 200 would carry: [`Finish`]).
fn not_modified() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NOT_MODIFIED;
    r
}

/// A log event for a request that went wrong (at `debug` for every request), with its id.
fn log_outcome(status: StatusCode, latency: Duration, id: &HeaderValue, starting: bool) {
    if !status.is_server_error() {
        tracing::debug!(
            status = status.as_u16(),
            ?latency,
            "finished processing request"
        );
        return;
    }
    let request_id = id.to_str().unwrap_or("-");
    if status == StatusCode::SERVICE_UNAVAILABLE && starting {
        // still loading: the expected answer until ready
        tracing::debug!(status = 503, request_id, "not ready yet");
    } else if status == StatusCode::SERVICE_UNAVAILABLE {
        // shed, over the query budget, or the writer is stopping: the client may retry
        tracing::warn!(status = 503, ?latency, request_id, "service unavailable");
    } else {
        tracing::error!(
            status = status.as_u16(),
            ?latency,
            request_id,
            "response failed"
        );
    }
}

/// Where the access-log lines go: `ops.access_log_to`, else standard error (as text) when the
/// access log is on and the log filter lets `vegdb::access` through at info level (asked once).
fn access_log_of(ops: &OpsOptions) -> Option<Arc<AccessLog>> {
    if !ops.access_log {
        return None;
    }
    if let Some(to) = &ops.access_log_to {
        return Some(to.clone());
    }
    access_log_enabled().then(|| AccessLog::stderr(super::access_log::LineFormat::Text))
}

/// Whether the log filter lets `vegdb::access` through at info level.
pub fn access_log_enabled() -> bool {
    tracing::enabled!(target: ACCESS_LOG_TARGET, tracing::Level::INFO)
}

/// Every 5 s while the app lives: fold histogram samples into buckets and forget idle
/// rate-limit keys (off the request path, on the runtime's blocking pool).
fn upkeep(inner: std::sync::Weak<Inner>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    rt.spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let _ = tokio::task::spawn_blocking(move || {
                if let Some(m) = &inner.metrics {
                    m.upkeep();
                }
                if let Some(l) = &inner.limiter {
                    l.retain_recent();
                    l.shrink_to_fit();
                }
            })
            .await;
        }
    });
}

/// `call`'s output within the request base `base` (when `href`s come from the request) and on
/// the generation `view` (a request with `tidspunkt`), or None once `deadline` passed.
async fn answer_in_time<F: Future>(
    deadline: tokio::time::Instant,
    base: Option<Arc<str>>,
    view: Option<Arc<Generation>>,
    call: F,
) -> Option<F::Output> {
    match view {
        Some(view) => answer_in_base(deadline, base, dated::in_scope(view, call)).await,
        None => answer_in_base(deadline, base, call).await,
    }
}

/// `call`'s output within the request base `base`, or None once `deadline` passed.
async fn answer_in_base<F: Future>(
    deadline: tokio::time::Instant,
    base: Option<Arc<str>>,
    call: F,
) -> Option<F::Output> {
    match base {
        Some(base) => lazy_timeout(deadline, request_base::in_scope(base, call)).await,
        None => lazy_timeout(deadline, call).await,
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
        // another thread's generator has its own seed: no id of its first thousand repeats
        let here: std::collections::HashSet<_> = (0..1000).map(|_| new_request_id()).collect();
        let there = std::thread::spawn(|| (0..1000).map(|_| new_request_id()).collect::<Vec<_>>());
        assert_eq!(here.len(), 1000);
        assert!(there.join().unwrap().iter().all(|id| !here.contains(id)));
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
