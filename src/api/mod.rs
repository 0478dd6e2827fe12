//! HTTP API: the read interface under `/nvdb/api/v2`. Handlers parse parameters, make one engine
//! call against the generation taken once per request, and shape the response (JSON or XML,
//! `media.rs`).

pub mod access_log;
pub mod catalog_docs;
pub mod cursor;
pub mod docs;
pub mod dto;
pub mod error;
pub mod forward;
pub mod geojson;
pub mod guard;
pub mod health;
pub mod heavy;
pub mod media;
pub mod object_docs;
pub mod object_json;
pub mod ogc;
pub mod openapi;
pub mod paging;
pub mod params;
pub mod query_doc;
pub mod read;
pub mod request_base;
pub mod stack;
pub mod stream;
pub mod tiles;
pub mod write;
pub mod xml;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue};
use axum::routing::get;
use axum::Router;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use crate::area::Areas;
use crate::catalog::Catalog;
use crate::changeset::writer::Writer;
use crate::generation::GenerationStore;
use crate::users::Users;
use error::{ApiError, ApiResult};
use media::Negotiated;
use params::Params;

pub const READ_BASE: &str = "/nvdb/api/v2";

#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Public base URL without trailing slash, e.g. `https://vegdb.example.no`.
    /// With `base_from_request` it is only the fallback for requests without a usable `Host`.
    pub public_url: String,
    /// Build `href`s from the scheme and `Host` of each request (`--public-url` not set);
    /// see [`request_base`].
    pub base_from_request: bool,
    pub request_timeout: Duration,
    /// Largest changeset / converter body (413 beyond).
    pub max_changeset_bytes: usize,
    /// Largest binary upload (413 beyond).
    pub max_binary_bytes: usize,
    /// Connection-level limits of the HTTP server.
    pub connections: ConnectionLimits,
    /// Time a road-object query's selection may take before it is stopped (503/5003).
    pub query_budget: Duration,
    /// Stream list pages chunk by chunk as the client reads (`stream`); off renders each page
    /// whole (tests compare the two).
    pub stream_pages: bool,
    /// The operations layers of the request stack (issue 14; see [`stack`]).
    pub ops: OpsOptions,
    /// A read replica's standing against its store (`serve --read-only --follow`), shown by
    /// `/status`.
    pub replica: Option<Arc<crate::replica::FollowStatus>>,
    /// Where write requests go on a server without a writer of its own (`--writer-url`):
    /// forwarded or redirected to the writer (`forward`); None: answered here.
    pub write_route: Option<forward::WriteRoute>,
}

/// The operations layers of the request stack (`stack`): metrics, access log, HTTP caching,
/// load shedding, rate limiting, CORS origins.
#[derive(Debug, Clone)]
pub struct OpsOptions {
    /// Serve Prometheus metrics at `/metrics` (and count requests for them).
    pub metrics: bool,
    /// One info line per request (target `vegdb::access`, see [`access_log`]).
    pub access_log: bool,
    /// Where the access-log lines go; None: standard error, as text (the server gives its own,
    /// in its log format).
    pub access_log_to: Option<Arc<access_log::AccessLog>>,
    /// `ETag` and `Cache-Control` on read-API answers, 304 for a matching `If-None-Match`.
    pub http_cache: bool,
    /// `Cache-Control: max-age` of read-API answers in seconds (0: `no-cache`, revalidate).
    pub cache_max_age: u32,
    /// Requests answered at once; more are refused at once with 503 (0: no limit).
    pub max_in_flight: usize,
    /// `Retry-After` seconds of a refused (shed or rate-limited) request's answer.
    pub retry_after: u32,
    /// Requests per second per client (`X-Client`, else the peer's IP address); 0: no limit.
    pub rate_limit: u32,
    /// Requests a client may make at once above the rate (0: the rate).
    pub rate_burst: u32,
    /// Origins allowed by CORS; empty: any origin.
    pub cors_origins: Vec<String>,
    /// Plain GET requests of the hottest read routes skip the router (`stack::direct`).
    pub direct_routes: bool,
}

pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

impl Default for OpsOptions {
    fn default() -> Self {
        OpsOptions {
            metrics: true,
            access_log: true,
            access_log_to: None,
            http_cache: true,
            cache_max_age: 0,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            retry_after: 1,
            rate_limit: 0,
            rate_burst: 0,
            cors_origins: Vec::new(),
            direct_routes: true,
        }
    }
}

/// Limits enforced per connection by the server loop (`server::serve`).
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Connections served at once; more wait in the kernel's listen backlog.
    pub max_connections: usize,
    /// Time to receive a request head, also the idle time allowed between keep-alive requests.
    pub header_read_timeout: Duration,
    /// hyper's per-connection read buffer bound: request heads beyond it are refused by hyper
    /// itself (431 without a body); the API's own, smaller, URI and header limits apply first.
    pub max_buf_bytes: usize,
}

pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// File descriptors kept free of client connections (data files, journal, binaries, writer).
pub const RESERVED_FILES: usize = 256;

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Duration::from_secs(20),
            max_buf_bytes: 256 << 10,
        }
    }
}

pub const DEFAULT_MAX_CHANGESET_BYTES: usize = 64 << 20;
pub const DEFAULT_MAX_BINARY_BYTES: usize = 16 << 20;

/// The largest query budget for a request timeout: 80 % of it, so a stopped query is answered
/// with the API's 503 before the timeout drops the request (and time is left to render).
pub fn max_query_budget(request_timeout: Duration) -> Duration {
    request_timeout.mul_f64(0.8)
}

impl ApiConfig {
    pub fn new(public_url: impl Into<String>, request_timeout: Duration) -> ApiConfig {
        ApiConfig {
            public_url: public_url.into(),
            base_from_request: false,
            request_timeout,
            max_changeset_bytes: DEFAULT_MAX_CHANGESET_BYTES,
            max_binary_bytes: DEFAULT_MAX_BINARY_BYTES,
            connections: ConnectionLimits::default(),
            query_budget: max_query_budget(request_timeout)
                .min(crate::query::limits::DEFAULT_QUERY_BUDGET),
            stream_pages: true,
            ops: OpsOptions::default(),
            replica: None,
            write_route: None,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<GenerationStore>,
    pub config: Arc<ApiConfig>,
    /// The write path (None: read-only service, the write API answers 503).
    pub writer: Option<Arc<Writer>>,
    pub users: Arc<Users>,
    /// The base URL of the request this clone serves (resolved when the state is cloned for a
    /// handler; see [`request_base`]).
    pub request_base: request_base::RequestBase,
}

impl AppState {
    /// A read-only state without users.
    pub fn read_only(store: Arc<GenerationStore>, config: ApiConfig) -> AppState {
        AppState {
            store,
            config: Arc::new(config),
            writer: None,
            users: Arc::new(Users::none()),
            request_base: Default::default(),
        }
    }
    pub fn catalog(&self) -> &'static Catalog {
        Catalog::embedded()
    }
    pub fn areas(&self) -> &'static Areas {
        Areas::embedded()
    }
    /// Base of every absolute URL this request answers with (no trailing slash): the
    /// configured `--public-url`, or without one the scheme and `Host` of the request.
    pub fn public_url(&self) -> &str {
        match (self.config.base_from_request, self.request_base.get()) {
            (true, Some(base)) => base,
            _ => &self.config.public_url,
        }
    }
    /// Absolute URL of a read-API path.
    pub fn href(&self, path: &str) -> String {
        format!("{}{READ_BASE}{path}", self.public_url())
    }
}

/// Common start of every handler: check parameter names and negotiate the media type.
pub fn begin<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
) -> ApiResult<(Params<'q>, Negotiated)> {
    let p = Params::parse(query, allowed)?;
    let pretty = p.bool("pretty")?.unwrap_or(false);
    let n = media::negotiate(headers, pretty)?;
    Ok((p, n))
}

/// As [`begin`] for the endpoints that also answer GeoJSON (`Negotiated::geojson`).
pub fn begin_geo<'q>(
    headers: &HeaderMap,
    query: Option<&'q str>,
    allowed: &[&str],
) -> ApiResult<(Params<'q>, Negotiated)> {
    let p = Params::parse(query, allowed)?;
    let pretty = p.bool("pretty")?.unwrap_or(false);
    let n = media::negotiate_geo(headers, pretty)?;
    Ok((p, n))
}

async fn not_found() -> ApiError {
    ApiError::not_found("Ressursen finnes ikke")
}

/// `utoipa_axum::routes!` for the read API: the handler's documented path (below
/// [`READ_BASE`], as the served document lists it) registered with its full path, so the read
/// router needs no `Router::nest` (whose prefix strip builds a new URI per request, issue 11).
/// The served document takes the prefix off again (its `servers` URL is `READ_BASE`).
#[macro_export]
macro_rules! read_route {
    ($($handler:path),+ $(,)?) => {
        $crate::api::full_path($crate::api::READ_BASE, utoipa_axum::routes!($($handler),+))
    };
}

/// A further path answering like `documented` (a trailing-slash form or an old name): mounted
/// with the same handler and kept out of the served document, where it would be a duplicate
/// operation. `alias("/vegobjekttyper/", read_route!(list_object_types))`.
pub fn alias(
    alias: &str,
    (schemas, mut paths, router): UtoipaMethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    let full = |p: &str| {
        if p.starts_with(READ_BASE) {
            p.to_string()
        } else {
            format!("{READ_BASE}{p}")
        }
    };
    paths.paths = std::mem::take(&mut paths.paths)
        .into_iter()
        .map(|(documented, mut item)| {
            let mut ext = utoipa::openapi::extensions::Extensions::default();
            ext.insert(openapi::ALIAS_OF.into(), documented.clone().into());
            item.extensions = Some(ext);
            (full(alias), item)
        })
        .collect();
    (schemas, paths, router)
}

/// Prefix every path of a `routes!` result with `base` (see [`read_route!`]).
pub fn full_path(
    base: &str,
    (schemas, mut paths, router): UtoipaMethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    paths.paths = std::mem::take(&mut paths.paths)
        .into_iter()
        .map(|(path, item)| (format!("{base}{path}"), item))
        .collect();
    (schemas, paths, router)
}

/// The read API: every route with its full path, each registered through utoipa-axum with the
/// handler's `#[utoipa::path]`, so the returned router's document lists exactly what is mounted
/// (aliases marked, see [`alias`]).
pub fn read_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(read::catalog::routes())
        .merge(read::omrader::routes())
        .merge(read::status::routes())
        .merge(read::veg::routes())
        .merge(read::posisjon::routes())
        .merge(read::vegnett::routes())
        .merge(read::vegobjekter::routes())
        .merge(read::endringer::routes())
}

/// Format suffixes of the read API (v2 `retningslinjer.md`): `/vegobjekttyper.json` is
/// `/vegobjekttyper` in JSON, `/vegobjekttyper.xml` in XML (the suffix wins over Accept). Runs
/// before routing; also records the path for the XML root's name when the answer may be XML.
/// The two internal headers are always removed here first, so a client cannot supply them. A
/// JSON request without a suffix costs no copy of the path.
pub fn rewrite_suffix_in_place(req: &mut Request) {
    let headers = req.headers_mut();
    headers.remove(media::SUFFIX_FORMAT);
    headers.remove(media::RESOURCE_PATH);
    let path = req.uri().path();
    let Some(below) = path.strip_prefix(READ_BASE) else {
        return;
    };
    if below == "/openapi.json" {
        return;
    }
    let (resource, format) = if let Some(p) = below.strip_suffix(".geojson") {
        (p, Some("geojson"))
    } else if let Some(p) = below.strip_suffix(".json") {
        (p, Some("json"))
    } else if let Some(p) = below.strip_suffix(".xml") {
        (p, Some("xml"))
    } else {
        (below, None)
    };
    // The path names the XML root only: a request that cannot be answered in XML skips it.
    let maybe_xml = format == Some("xml")
        || (format.is_none()
            && req
                .headers()
                .get(axum::http::header::ACCEPT)
                .is_some_and(|a| media::mentions_xml(a.as_bytes())));
    if maybe_xml {
        if let Ok(value) = HeaderValue::from_str(resource) {
            req.headers_mut().insert(media::RESOURCE_PATH, value);
        }
    }
    rewrite_format(req, format);
}

/// Strip a format suffix from the URI and note the format for negotiation.
fn rewrite_format(req: &mut Request, format: Option<&'static str>) {
    let Some(f) = format else {
        return;
    };
    req.headers_mut()
        .insert(media::SUFFIX_FORMAT, HeaderValue::from_static(f));
    let path = req.uri().path();
    let stripped = &path[..path.len() - f.len() - 1];
    let rest = req
        .uri()
        .query()
        .map(|q| format!("{stripped}?{q}"))
        .unwrap_or_else(|| stripped.to_string());
    if let Ok(uri) = rest.parse() {
        *req.uri_mut() = uri;
    }
}

/// The routes with their state and no middleware (the request stack is [`stack::App`]).
/// Read routes are registered with their full paths (no `nest`); the write routes, under
/// their base and two aliases, are nested. Each API's document is built here from the routes
/// its router mounted, and served beside them with its docs page ([`docs`]).
pub fn routes(state: AppState) -> Router {
    let router = router();
    // a server without a writer of its own: write requests forwarded, redirected or refused
    let router = match state.config.write_route {
        Some(_) => router.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            forward::route_writes,
        )),
        None => router,
    };
    router.with_state(state)
}

/// [`routes`] before the state is given.
pub fn router() -> Router<AppState> {
    let (read, read_doc) = read_routes().split_for_parts();
    let read = read.merge(docs::routes(READ_BASE, openapi::served_read_json(read_doc)));
    let write = write::routes(|doc| docs::routes("", openapi::served_write_json(doc)))
        .layer(axum::extract::DefaultBodyLimit::disable());
    let mut router = Router::new()
        .merge(read)
        .merge(ogc::routes())
        .merge(write::login::routes())
        .merge(health::routes())
        .merge(tiles::routes())
        .route("/", get(docs::root));
    for base in std::iter::once(write::WRITE_BASE).chain(write::WRITE_ALIASES) {
        router = router.nest(base, write.clone());
    }
    router.fallback(not_found)
}

/// The whole application: the routes inside the request stack (request ids, tracing, CORS,
/// the guard's limits and error shapes, timeout, request base, gzip; see [`stack`]).
pub async fn app(state: AppState) -> stack::App {
    stack::App::new(routes(state.clone()), &state).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path the assembled router matches, read from its `Debug` form (axum lists its
    /// routes there: `paths: {RouteId(n): "/…"}`), i.e. what is really mounted.
    fn mounted_paths() -> Vec<String> {
        let text = format!("{:?}", router());
        let mut paths: Vec<String> = text
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|s| s.starts_with('/'))
            .map(str::to_string)
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    #[test]
    fn every_mounted_route_of_both_apis_is_documented_and_every_documented_one_mounted() {
        let mounted = mounted_paths();
        assert!(mounted.len() > 40, "{mounted:?}");
        let (read, write) = openapi::router_documents();
        let read_served = openapi::served_value(read.clone(), openapi::Api::Read).unwrap();
        let write_served = openapi::served_value(write, openapi::Api::Write).unwrap();
        let read_paths = read_served["paths"].as_object().unwrap();
        let write_paths = write_served["paths"].as_object().unwrap();
        // aliases: mounted, marked in the router's document, pointing at a documented path
        let aliases: Vec<(String, String)> = read
            .paths
            .paths
            .iter()
            .filter_map(|(path, item)| {
                let target = item.extensions.as_ref()?.get(openapi::ALIAS_OF)?;
                Some((path.clone(), target.as_str()?.to_string()))
            })
            .collect();
        assert!(aliases.len() >= 5, "{aliases:?}");
        for (alias, target) in &aliases {
            let target = target.strip_prefix(READ_BASE).unwrap_or(target);
            assert!(read_paths.contains_key(target), "{alias} → {target}");
        }
        let write_bases: Vec<&str> = std::iter::once(write::WRITE_BASE)
            .chain(write::WRITE_ALIASES)
            .collect();
        let mut checked = 0;
        for path in &mounted {
            let (below, documented) = if let Some(below) = path.strip_prefix(READ_BASE) {
                (
                    below,
                    read_paths.contains_key(below) || aliases.iter().any(|(a, _)| a == path),
                )
            } else if let Some(below) = write_bases.iter().find_map(|b| path.strip_prefix(b)) {
                (below, write_paths.contains_key(below))
            } else {
                continue; // outside both APIs (login, landing page, other services)
            };
            checked += 1;
            assert!(
                documented || openapi::META_PATHS.contains(&below),
                "{path} is mounted but not in its API's OpenAPI document"
            );
        }
        assert!(checked > 30 + 3 * 12, "{checked}");
        for (docs, bases) in [(read_paths, vec![READ_BASE]), (write_paths, write_bases)] {
            for path in docs.keys() {
                for base in &bases {
                    let full = format!("{base}{path}");
                    assert!(mounted.contains(&full), "{full} documented but not mounted");
                }
            }
        }
    }
}
