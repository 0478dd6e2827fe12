//! The settings of `vegdb serve` (command-line flags, environment variables and the
//! configuration file, `config_file`). The CLI parses them; the server runs with them.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The global `--log-json` (`main` copies it here): the access log writes its lines in the
    /// same format as the rest of the log.
    #[arg(skip)]
    pub log_json: bool,
    /// Configuration file (TOML): keys are these flags' names without `--`, e.g.
    /// `query-budget = 2.5`; flags and environment variables override it.
    #[arg(long, env = "VEGDB_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "VEGDB_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Runtime data directory (generations + CURRENT). Initialised from --demo when empty.
    #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
    pub data: PathBuf,
    /// Snapshot to initialise an empty data directory from (default: the embedded demo).
    #[arg(long, env = "VEGDB_DEMO")]
    pub demo: Option<PathBuf>,
    /// Public base URL used in every href (no trailing slash), e.g. https://vegdb.example.no.
    #[arg(long, env = "VEGDB_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Per-request time limit in seconds.
    #[arg(long, env = "VEGDB_REQUEST_TIMEOUT", default_value_t = 30)]
    pub request_timeout: u64,
    /// Users of the write interface (default: <data>/users.json; see `vegdb user add`).
    #[arg(long, env = "VEGDB_USERS")]
    pub users: Option<PathBuf>,
    /// Serve only the read interface (the write interface answers 503).
    #[arg(long, env = "VEGDB_READ_ONLY")]
    pub read_only: bool,
    /// Largest changeset or converter request body in bytes (413 beyond).
    #[arg(long, env = "VEGDB_MAX_CHANGESET_BYTES", default_value_t = crate::api::state::DEFAULT_MAX_CHANGESET_BYTES)]
    pub max_changeset_bytes: usize,
    /// Scheduling of the writer's threads against the readers' (idle, low, normal).
    #[arg(
        long,
        env = "VEGDB_WRITER_PRIORITY",
        value_enum,
        default_value = "idle"
    )]
    pub writer_priority: crate::changeset::writer::WriterPriority,
    /// Largest binary upload in bytes (413 beyond).
    #[arg(long, env = "VEGDB_MAX_BINARY_BYTES", default_value_t = crate::api::state::DEFAULT_MAX_BINARY_BYTES)]
    pub max_binary_bytes: usize,
    /// Most client connections open at once; further ones wait in the listen backlog. Capped at
    /// the open-files limit less a reserve for data files.
    #[arg(long, env = "VEGDB_MAX_CONNECTIONS", default_value_t = crate::api::state::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Seconds a connection may take to send a request's headers, may stay idle between
    /// keep-alive requests, or may go without reading its answer, before it is closed (never
    /// while the server works on a request whose headers are in).
    #[arg(long, env = "VEGDB_HEADER_TIMEOUT", default_value_t = 20)]
    pub header_timeout: u64,
    /// Seconds a road-object query's selection may compute before it is stopped with 503
    /// (at most 80 % of --request-timeout).
    #[arg(long, env = "VEGDB_QUERY_BUDGET", default_value_t = crate::query::limits::DEFAULT_QUERY_BUDGET.as_secs_f64())]
    pub query_budget: f64,
    /// Finished changesets received within this many days stay listed and readable.
    #[arg(long, env = "VEGDB_CHANGESETS_KEEP_DAYS", default_value_t = 30)]
    pub changesets_keep_days: u32,
    /// Older finished changesets stay while fewer than this many finished ones are newer.
    #[arg(long, env = "VEGDB_CHANGESETS_KEEP", default_value_t = 100_000)]
    pub changesets_keep: usize,
    /// Seconds between looks at CURRENT: a generation published under the server (by hand,
    /// or by the owner of a directory served `--read-only`) is served without a restart.
    /// 0: only on SIGHUP.
    #[arg(long, env = "VEGDB_WATCH_INTERVAL", default_value_t = crate::changeset::adopt::DEFAULT_WATCH_INTERVAL_S)]
    pub watch_interval: u64,
    /// Object store to publish every generation to (`s3://bucket/prefix`, `az://…`, `gs://…`;
    /// credentials and endpoint from the environment, see README "Generations on object
    /// storage"). The local data directory stays the writer's own; the journal keeps each
    /// changeset until its generation is in the store.
    #[arg(long, env = "VEGDB_PUBLISH_TO", value_name = "URL")]
    pub publish_to: Option<String>,
    /// Generations kept in the store (`--publish-to`): older ones are removed once this many
    /// newer ones are complete there, so a replica loading a generation has that many
    /// publishes to finish.
    #[arg(long, env = "VEGDB_STORE_KEEP", default_value_t = crate::remote::publisher::DEFAULT_KEEP)]
    pub store_keep: usize,
    /// Seconds the writer's lease on the store (`--publish-to`; one writer per store prefix)
    /// lasts after its last renewal: a writer that stops without releasing it (killed) holds
    /// the prefix that long, and another writer takes it over only after that.
    #[arg(long, env = "VEGDB_STORE_LEASE_TTL", default_value_t = crate::remote::lease::DEFAULT_TTL_S)]
    pub store_lease_ttl: f64,
    /// Seconds between renewals of the writer's lease (at most half of --store-lease-ttl). A
    /// writer whose renewals fail for --store-lease-ttl less this accepts no changeset until
    /// one succeeds.
    #[arg(long, env = "VEGDB_STORE_LEASE_RENEW", default_value_t = crate::remote::lease::DEFAULT_RENEW_S)]
    pub store_lease_renew: f64,
    /// How requests are scheduled: `per-core` runs one single-threaded runtime per worker,
    /// each serving the connections given to it round robin (no cross-thread wake-ups; a long
    /// request delays the other requests of its worker); `shared` is tokio's work-stealing
    /// runtime (idle workers take over waiting connections, at a wake-up per request).
    #[arg(long, env = "VEGDB_RUNTIME", value_enum, default_value = "per-core")]
    pub runtime: RuntimeKind,
    /// How the OS schedules the server's threads: `batch` (Linux SCHED_BATCH: a worker woken
    /// by a request does not preempt the running thread, so under load it answers several
    /// requests per wake-up; the same CPU share as normal) or `normal`.
    #[arg(long, env = "VEGDB_SCHEDULING", value_enum, default_value = "batch")]
    pub scheduling: Scheduling,
    /// Worker threads serving requests (default: one per CPU).
    #[arg(long, env = "VEGDB_WORKERS")]
    pub workers: Option<usize>,
    /// Operations layers of the request stack.
    #[command(flatten)]
    pub ops: OpsArgs,
    // --- read replicas (README "Scaling out") ---
    /// Serve the generations a writer publishes to a store, as a read replica: a directory
    /// (local or NFS) or an object store URL (`s3://bucket/prefix`). Needs `--read-only`;
    /// CURRENT is looked at every `--watch-interval` seconds and on SIGHUP.
    #[arg(long, env = "VEGDB_FOLLOW", requires = "read_only")]
    pub follow: Option<String>,
    /// Cache directory of a replica: the chunk files downloaded from the store (default
    /// `<data>/replica-cache`).
    #[arg(long, env = "VEGDB_CACHE", requires = "follow")]
    pub cache: Option<PathBuf>,
    /// Size bound of the replica's cache in bytes: files that neither the served nor the
    /// loading generation uses are removed, least recently used first, to stay below it.
    #[arg(long, env = "VEGDB_CACHE_MAX_BYTES", default_value_t = crate::replica::DEFAULT_CACHE_MAX_BYTES)]
    pub cache_max_bytes: u64,
    /// Seconds a replica may be behind its store (since the store's CURRENT moved past the
    /// generation it serves) before `/ready` answers 503, so a load balancer drains a replica
    /// that cannot catch up; 0: no bound. Set it well above `--watch-interval` plus the
    /// download and load of a generation.
    #[arg(long, env = "VEGDB_MAX_LAG", default_value_t = 0.0, value_parser = crate::replica::parse_max_lag)]
    pub max_lag: f64,
    /// The writer's base URL (`http://host:port`): write requests (the write API, OpenAM
    /// login) reaching this read-only server go there (see `--write-forwarding`). Without
    /// it a replica answers them 503.
    #[arg(long, env = "VEGDB_WRITER_URL", requires = "read_only")]
    pub writer_url: Option<String>,
    /// `forward`: pass write requests to `--writer-url` and stream the answer back;
    /// `redirect`: answer 307 with the same path on the writer.
    #[arg(
        long,
        env = "VEGDB_WRITE_FORWARDING",
        value_enum,
        default_value = "forward"
    )]
    pub write_forwarding: crate::api::forward::Forwarding,
}

/// `vegdb serve` flags of the request stack's operations layers: metrics, access
/// log, HTTP caching, load shedding, rate limiting, CORS origins.
#[derive(clap::Args, Debug, Clone)]
pub struct OpsArgs {
    /// Serve Prometheus metrics at /metrics (at the server root, outside both APIs).
    #[arg(long, env = "VEGDB_METRICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics: bool,
    /// Log one line per request at info level (target vegdb::access: method, path, status,
    /// bytes, latency, request id).
    #[arg(long, env = "VEGDB_ACCESS_LOG", default_value_t = true, action = clap::ArgAction::Set)]
    pub access_log: bool,
    /// ETag and Cache-Control on read-API answers, and 304 Not Modified for a matching
    /// If-None-Match (the data changes only with the generation).
    #[arg(long, env = "VEGDB_HTTP_CACHE", default_value_t = true, action = clap::ArgAction::Set)]
    pub http_cache: bool,
    /// Seconds clients and proxies may reuse a read-API answer without asking again
    /// (Cache-Control max-age); 0: no-cache, always revalidate with the ETag.
    #[arg(long, env = "VEGDB_CACHE_MAX_AGE", default_value_t = 0)]
    pub cache_max_age: u32,
    /// Most requests answered at once; further ones are refused at once with 503 and
    /// Retry-After (load shedding; /metrics, /health and /ready are exempt). 0: no limit.
    #[arg(long, env = "VEGDB_MAX_IN_FLIGHT", default_value_t = crate::api::state::DEFAULT_MAX_IN_FLIGHT)]
    pub max_in_flight: usize,
    /// Retry-After seconds sent with a 503 of load shedding.
    #[arg(long, env = "VEGDB_RETRY_AFTER", default_value_t = 1)]
    pub retry_after: u32,
    /// Requests per second allowed per client (X-Client, else the IP address); more are
    /// refused with 429 and Retry-After. 0: no rate limit.
    #[arg(long, env = "VEGDB_RATE_LIMIT", default_value_t = 0)]
    pub rate_limit: u32,
    /// Requests a client may send in a burst above --rate-limit (0: as many as the rate).
    #[arg(long, env = "VEGDB_RATE_BURST", default_value_t = 0)]
    pub rate_burst: u32,
    /// Origins allowed to call the APIs from a browser (CORS), comma-separated, e.g.
    /// https://kart.example.no; * allows any origin.
    #[arg(
        long,
        env = "VEGDB_CORS_ORIGINS",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub cors_origins: Vec<String>,
    /// Answer plain GET /posisjon, /veg and /vegobjekter/{type}/statistikk requests on the
    /// request stack's direct route (no router, the same answer and headers; see
    /// ARCHITECTURE.md). false: every request goes through the router (for comparison; costs
    /// about a quarter more CPU per request).
    #[arg(long, env = "VEGDB_DIRECT_ROUTES", default_value_t = true, action = clap::ArgAction::Set)]
    pub direct_routes: bool,
}

impl OpsArgs {
    /// The request stack's options.
    pub fn options(&self) -> crate::api::state::OpsOptions {
        crate::api::state::OpsOptions {
            metrics: self.metrics,
            access_log: self.access_log,
            access_log_to: None,
            http_cache: self.http_cache,
            cache_max_age: self.cache_max_age,
            max_in_flight: self.max_in_flight,
            retry_after: self.retry_after,
            rate_limit: self.rate_limit,
            rate_burst: self.rate_burst,
            direct_routes: self.direct_routes,
            // `*` anywhere in the list: any origin (an empty list)
            cors_origins: if self.cors_origins.iter().any(|o| o.trim() == "*") {
                Vec::new()
            } else {
                self.cors_origins
                    .iter()
                    .map(|o| o.trim().to_string())
                    .filter(|o| !o.is_empty())
                    .collect()
            },
        }
    }
}

/// `vegdb serve --scheduling` (applied by `server::sched`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Scheduling {
    /// Linux `SCHED_BATCH`: a woken worker does not preempt the running thread (fewer context
    /// switches under load).
    #[default]
    Batch,
    /// The OS's normal policy (`SCHED_OTHER`).
    Normal,
}

/// `vegdb serve --runtime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeKind {
    PerCore,
    Shared,
}

/// `vegdb` with no subcommand: serve with defaults from the environment.
#[derive(Parser, Debug)]
pub struct ServeOnly {
    #[command(flatten)]
    pub args: ServeArgs,
}

/// The value parser of every `--data` (and `VEGDB_DATA`): a local directory. A URL
/// (`s3://bucket/prefix`, `gs://…`, `az://…`, `http(s)://…`, `file://…`, any `scheme://`) is
/// refused with the flags that do reach an object store, never taken as a relative path (which
/// would make a directory named `s3:` in the working directory and serve that).
pub fn data_dir_arg(text: &str) -> Result<PathBuf, DataDirError> {
    if let Some(scheme) = url_scheme(text) {
        let store = crate::remote::is_store_url(text);
        let what = if store {
            "an object store"
        } else if scheme.eq_ignore_ascii_case("file") {
            "a file: URL (give the directory's path itself)"
        } else {
            "a URL"
        };
        return Err(DataDirError::Url {
            text: text.to_string(),
            what,
            example: if store { text } else { "s3://bucket/prefix" }.to_string(),
        });
    }
    if text.is_empty() {
        return Err(DataDirError::Empty);
    }
    Ok(PathBuf::from(text))
}

/// Why a `--data` value is not a local directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataDirError {
    /// A URL (`what` it is); `example`: the store URL the flags that reach a store are shown with.
    #[error(
        "--data takes a local directory, and '{text}' is {what}. The data directory is always \
         on the local disk; to work with an object store: `vegdb serve --data DIR \
         --publish-to {example}` (a writer publishing each generation to the store), \
         `vegdb serve --read-only --follow {example}` (a replica serving the store's \
         generations), `vegdb snapshot push --data DIR --to {example}` or `vegdb snapshot \
         pull --from {example} --data DIR` (copy generations between a directory and the \
         store)"
    )]
    Url {
        text: String,
        what: &'static str,
        example: String,
    },
    #[error("--data must name a directory (it is empty)")]
    Empty,
}

/// The scheme of `text` when it is written as a URL (`scheme://…`; RFC 3986 scheme
/// characters), or begins with an object store's scheme and a colon (`s3:/bucket`, a slash short).
fn url_scheme(text: &str) -> Option<&str> {
    if let Some((scheme, rest)) = text.split_once(':') {
        if !rest.starts_with("//") && crate::remote::is_store_url(&format!("{scheme}://")) {
            return Some(scheme);
        }
    }
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_a_local_directory_never_a_url() {
        for url in [
            "s3://bucket/prefix",
            "S3://bucket",
            "gs://b/p",
            "az://c/p",
            "abfss://c/p",
            "http://host/x",
            "https://host/x",
            "file:///tmp/data",
            "memory://x",
            "s3:/bucket/prefix",
            "gs:bucket",
        ] {
            let e = data_dir_arg(url).unwrap_err().to_string();
            assert!(
                e.contains("--publish-to") && e.contains("--follow"),
                "{url}: {e}"
            );
            assert!(
                e.contains("snapshot push") && e.contains("snapshot pull"),
                "{e}"
            );
            assert!(e.contains(&format!("'{url}'")), "the value is named: {e}");
        }
        for path in ["data", "/var/lib/vegdb", "./a:b", "dir/s3:/x", "C:\\data"] {
            assert_eq!(data_dir_arg(path).unwrap(), PathBuf::from(path));
        }
        assert!(data_dir_arg("").is_err());
    }
}
