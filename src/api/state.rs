//! The API's state and settings, below every handler: [`AppState`] (the generation store, the
//! writer, the users, the request's base URL, the server's heavy-work threads and tile indexes
//! in [`ServerResources`]) and [`ApiConfig`] with the operations and connection options. The
//! router that mounts the handlers is `api::router`, at the top.

use std::sync::Arc;
use std::time::Duration;

use super::access_log;
use super::heavy::HeavyPool;
use super::request_base;
use super::route::READ_BASE;
use crate::area::Areas;
use crate::catalog::Catalog;
use crate::changeset::writer::Writer;
use crate::generation::GenerationStore;
use crate::users::Users;

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
    /// The operations layers of the request stack (see `api::stack`).
    pub ops: OpsOptions,
    /// A read replica's standing against its store (`serve --read-only --follow`), shown by
    /// `/status`.
    pub replica: Option<Arc<crate::replica::FollowStatus>>,
    /// Where write requests go on a server without a writer of its own (`--writer-url`):
    /// forwarded or redirected to the writer (`api::forward`); None: answered here.
    pub write_route: Option<WriteRoute>,
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

/// What one server keeps for its requests besides the data and the settings: the threads heavy
/// answers are rendered on. Whoever builds the state gives it; a
/// fresh one (`Default`) shares nothing with another server in the process, and a test that
/// runs many servers may give them one [`HeavyPool`].
#[derive(Debug, Default)]
pub struct ServerResources {
    /// The heavy-work threads (`heavy`), started at the first heavy answer.
    pub heavy: Arc<HeavyPool>,
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
    /// This server's heavy-work threads.
    pub resources: Arc<ServerResources>,
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
            resources: Default::default(),
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

/// What a server without a writer does with write requests.
#[derive(Debug, Clone)]
pub enum WriteRoute {
    /// Forward to the writer at this base URL (no trailing slash).
    Forward {
        writer: String,
        client: reqwest::Client,
    },
    /// Answer 307 with the same path on the writer.
    Redirect { writer: String },
    /// Answer 503 with this message (no writer known).
    Refuse { message: String },
}

/// Why `--writer-url` names no writer this server can send requests to.
#[derive(Debug, thiserror::Error)]
pub enum WriterUrlError {
    #[error("--writer-url '{writer}' is not a URL: {reason}")]
    NotUrl {
        writer: String,
        reason: url::ParseError,
    },
    #[error("--writer-url '{writer}': only http:// is built in (put a local TLS proxy in front of an https writer)")]
    NotHttp { writer: String },
    #[error("HTTP client for the writer: {0}")]
    Client(reqwest::Error),
}

/// How write requests go to the writer (`--write-forwarding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Forwarding {
    Forward,
    Redirect,
}

impl WriteRoute {
    /// The route for a writer URL and a mode.
    pub fn to_writer(writer: &str, mode: Forwarding) -> Result<WriteRoute, WriterUrlError> {
        let writer = writer.trim_end_matches('/').to_string();
        let url = match reqwest::Url::parse(&writer) {
            Ok(url) => url,
            Err(reason) => return Err(WriterUrlError::NotUrl { writer, reason }),
        };
        if url.scheme() != "http" {
            return Err(WriterUrlError::NotHttp { writer });
        }
        Ok(match mode {
            Forwarding::Redirect => WriteRoute::Redirect { writer },
            Forwarding::Forward => WriteRoute::Forward {
                client: reqwest::Client::builder()
                    .connect_timeout(std::time::Duration::from_secs(5))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(WriterUrlError::Client)?,
                writer,
            },
        })
    }

    /// Whether logins go to the writer too (they do unless there is none).
    pub fn forwards_logins(&self) -> bool {
        !matches!(self, WriteRoute::Refuse { .. })
    }
}
