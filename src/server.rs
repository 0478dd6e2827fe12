//! Process setup: tracing, loading the current generation, serving with graceful shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::api::health::{Starting, VERSION};
use crate::api::state::{ApiConfig, AppState};
use crate::changeset::writer::{ReloadRequest, Retention, WatchOptions, Writer, WriterOptions};
use crate::config::{RuntimeKind, ServeArgs};
use crate::generation::{Generation, GenerationStore};
use crate::snapshot::store::{DataDir, CURRENT_FILE};
use crate::users::{Users, USERS_FILE};

mod accept;
mod framing;
mod head;
mod idle;
pub mod sched;

pub fn init_tracing(filter: &str, json: bool) {
    use std::io::IsTerminal;
    let env = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // colour codes only for a person at a terminal, not in journald, docker logs or files
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Open the data dir, initialising it from the demo snapshot when it has no generation yet
/// (`--demo DIR`, else the demo embedded in the binary, `crate::demo`).
/// A writing server owns the directory (its lock, held for the process lifetime, makes a
/// second one fail at once naming this one's pid). `--read-only` takes no lock and writes
/// nothing: it serves the directory's CURRENT generation, or the demo snapshot when the
/// directory has none (a `--data` other than the default must exist unless `--demo` is given).
pub fn open_data(args: &ServeArgs) -> anyhow::Result<(DataDir, u64)> {
    if args.read_only {
        let data = DataDir::read_only(&args.data);
        if let Some(id) = data.current()? {
            return Ok((data, id));
        }
        anyhow::ensure!(
            args.data.exists()
                || args.data == std::path::Path::new(DEFAULT_DATA_DIR)
                || args.demo.is_some(),
            "no data directory at {} (looked for {}): give an existing directory with --data, or leave --data out to serve the demo snapshot",
            absolute(&args.data).display(),
            absolute(&args.data).join(CURRENT_FILE).display()
        );
        let demo = DataDir::read_only(match &args.demo {
            Some(dir) => demo_dir(dir)?,
            None => crate::demo::cached_copy()?,
        });
        tracing::info!(data = %args.data.display(), demo = %demo.root.display(), "the data directory has no generation; serving the demo snapshot read-only");
        let id = demo.current()?.ok_or_else(|| {
            anyhow::anyhow!(
                "neither {} nor {} holds a generation",
                args.data.display(),
                demo.root.display()
            )
        })?;
        return Ok((demo, id));
    }
    let data = DataDir::open(&args.data).with_context(|| {
        format!(
            "vegdb serve writes into {} and needs to own it",
            args.data.display()
        )
    })?;
    let current = match data.current()? {
        Some(id) => id,
        None => match &args.demo {
            Some(demo) => {
                let demo = demo_dir(demo)?;
                tracing::info!(from = %demo.display(), to = %args.data.display(), "initialising the data directory from the demo snapshot");
                data.init_from(&DataDir::read_only(&demo))
                    .with_context(|| {
                        format!(
                            "initialising {} from {}",
                            args.data.display(),
                            demo.display()
                        )
                    })?
            }
            None => {
                // the embedded demo, written next to the generations (a `.tmp-` leftover if
                // interrupted, removed by the next start) and copied in as the first one
                tracing::info!(to = %args.data.display(), "initialising the data directory from the embedded demo snapshot");
                let tmp = data.root.join(".tmp-embedded-demo");
                let _ = std::fs::remove_dir_all(&tmp);
                crate::demo::write_into(&tmp)?;
                let id = data.init_from(&DataDir::read_only(&tmp)).with_context(|| {
                    format!(
                        "initialising {} from the embedded demo snapshot",
                        args.data.display()
                    )
                });
                let _ = std::fs::remove_dir_all(&tmp);
                id?
            }
        },
    };
    Ok((data, current))
}

/// The error of a CURRENT generation that does not load: what is wrong, the newest older
/// generation that passes `snapshot verify`, and how to roll back to it.
pub fn refuse_corrupt_current(
    data: &DataDir,
    current: u64,
    error: crate::error::EngineError,
) -> anyhow::Error {
    let root = absolute(&data.root);
    let older: Vec<u64> = data
        .generations()
        .unwrap_or_default()
        .into_iter()
        .filter(|&g| g < current)
        .rev()
        .collect();
    let good = older.iter().copied().find(|&g| {
        let report = crate::generation::check::verify(&data.generation_dir(g), &|_| {});
        if !report.problems.is_empty() {
            tracing::warn!(
                generation = g,
                problems = report.problems.len(),
                "an older generation fails verification too"
            );
        }
        report.problems.is_empty()
    });
    let advice = match good {
        Some(g) => format!(
            "the last good generation is {g} (it passes `snapshot verify`): roll back with `vegdb snapshot rollback --to {g} --data {}` and start again",
            root.display()
        ),
        None if older.is_empty() => "there is no older generation to roll back to: restore the directory from a backup, or build a new generation (`vegdb generate`/`vegdb import`)".into(),
        None => format!(
            "no older generation ({}) passes verification either: restore the directory from a backup, or build a new generation",
            older.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    anyhow::anyhow!(
        "refusing to serve {}: its CURRENT generation {current} is corrupt ({error}); {advice}. `vegdb snapshot verify --data {}` lists every problem of generation {current}",
        root.display(),
        root.display()
    )
}

/// The default `--data`.
const DEFAULT_DATA_DIR: &str = "data";

fn absolute(p: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A `--demo` directory, which must hold a snapshot (CURRENT).
fn demo_dir(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let current = dir.join(CURRENT_FILE);
    anyhow::ensure!(
        current.exists(),
        "--demo {}: no snapshot there (looked for {}); leave --demo out to use the demo embedded in the binary",
        dir.display(),
        absolute(&current).display()
    );
    Ok(dir.to_path_buf())
}

/// A read replica's start (`--follow`): its follower, and the store's current generation
/// downloaded into its cache and loaded.
fn open_replica(
    args: &ServeArgs,
    location: &str,
) -> anyhow::Result<(crate::replica::Follower, Generation)> {
    let config = crate::replica::FollowConfig {
        location: location.to_string(),
        cache_dir: args
            .cache
            .clone()
            .unwrap_or_else(|| args.data.join("replica-cache")),
        cache_max_bytes: args.cache_max_bytes,
        max_lag: Duration::try_from_secs_f64(args.max_lag).unwrap_or_default(),
        interval: Duration::from_secs(args.watch_interval),
    };
    let mut follower =
        crate::replica::Follower::open(&config).with_context(|| format!("following {location}"))?;
    let g = follower
        .load_current()
        .with_context(|| format!("loading the current generation of {location}"))?;
    Ok((follower, g))
}

pub fn load_state(args: &ServeArgs) -> anyhow::Result<AppState> {
    load_state_with(args, &Starting::default(), &ReloadRequest::default())
}

/// [`load_state`], telling `starting` (what `/ready` shows meanwhile) which step it is at.
/// Every client sees those steps (`/ready`, `/status`, the write API's 503s): they say
/// "loading" and the generation, never a path of the server (the log has those). `reload`
/// (set on SIGHUP) makes whatever follows CURRENT look now.
pub fn load_state_with(
    args: &ServeArgs,
    starting: &Starting,
    reload: &ReloadRequest,
) -> anyhow::Result<AppState> {
    starting.set("loading: opening the data directory");
    if let Some(location) = &args.follow {
        let (follower, g) = open_replica(args, location)?;
        let status = follower.status.clone();
        let mut state = state_for(args, g, &DataDir::read_only(&args.data), starting)?;
        crate::replica::follow(follower, state.store.clone(), watch_options(args, reload))?;
        let config = Arc::make_mut(&mut state.config);
        config.replica = Some(status.clone());
        config.write_route = Some(match &args.writer_url {
            Some(url) => crate::api::forward::WriteRoute::to_writer(url, args.write_forwarding)
                .map_err(|e| anyhow::anyhow!(e))?,
            None => crate::api::forward::WriteRoute::Refuse {
                message: format!(
                    "Denne tjenesten er en lesereplika av {}; skriveforespørsler må sendes til \
                     skrivetjenesten (ingen --writer-url er satt)",
                    status.source
                ),
            },
        });
        return Ok(state);
    }
    let (data, current) = open_data(args)?;
    tracing::info!(generation = current, data = %data.root.display(), "loading the generation");
    starting.set(format!("loading generation {current}"));
    // a reader pins the generation while loading it (a live owner may move on meanwhile)
    let pinned = if data.is_owner() {
        None
    } else {
        data.pin(current)?
    };
    let started = Instant::now();
    let (g, stats) = match Generation::load(&data.generation_dir(current), &|step| {
        tracing::debug!(step, "loading")
    }) {
        Ok(x) => x,
        Err(e) => {
            starting.set(format!(
                "loading: generation {current} does not load; looking for the last good one"
            ));
            return Err(refuse_corrupt_current(&data, current, e));
        }
    };
    tracing::info!(
        generation = g.id,
        network_rows = stats.rows_network,
        objects = stats.rows_objects,
        read_ms = stats.read_ms as u64,
        index_ms = stats.index_ms as u64,
        total_ms = started.elapsed().as_millis() as u64,
        "generation loaded"
    );
    drop(pinned);
    starting.set(format!(
        "loading: generation {current} loaded; starting the writer"
    ));
    let mut state = state_for(args, g, &data, starting)?;
    if args.read_only {
        // no writer to follow CURRENT between batches: a thread of its own
        crate::changeset::adopt::watch(
            data.clone(),
            state.store.clone(),
            watch_options(args, reload),
        )?;
    } else {
        let publisher = match &args.publish_to {
            Some(url) => {
                let remote = crate::remote::Remote::open(url)?;
                let times = crate::remote::lease::LeaseTimes::new(
                    args.store_lease_ttl,
                    args.store_lease_renew,
                )?;
                let p = crate::remote::publisher::Publisher::start(
                    data.clone(),
                    remote,
                    args.store_keep,
                    times,
                )
                .with_context(|| format!("publishing to {url}"))?;
                Some(p)
            }
            None => None,
        };
        let options = WriterOptions {
            priority: args.writer_priority,
            retention: Retention {
                keep_days: args.changesets_keep_days,
                keep_entries: args.changesets_keep,
                ..Default::default()
            },
            watch: watch_options(args, reload),
            // the journal keeps each changeset until its generation is in the store
            hold_until_published: publisher.as_ref().map(|p| p.published_watermark()),
            ..WriterOptions::default()
        };
        let writer = Writer::start_with_options(
            data.clone(),
            state.store.clone(),
            Some(state.users.rights_source()),
            options,
        )?;
        if let Some(p) = publisher {
            writer.publish_to(p);
        }
        state.writer = Some(writer);
    }
    if let (Some(url), true) = (&args.writer_url, args.read_only) {
        Arc::make_mut(&mut state.config).write_route = Some(
            crate::api::forward::WriteRoute::to_writer(url, args.write_forwarding)
                .map_err(|e| anyhow::anyhow!(e))?,
        );
    }
    Ok(state)
}

/// How this server follows CURRENT (`--watch-interval`, and SIGHUP through `reload`).
fn watch_options(args: &ServeArgs, reload: &ReloadRequest) -> WatchOptions {
    WatchOptions {
        interval: Duration::from_secs(args.watch_interval),
        reload: reload.clone(),
    }
}

/// The application state around a loaded generation (no writer yet), its access log the one
/// `starting` has.
fn state_for(
    args: &ServeArgs,
    g: Generation,
    data: &DataDir,
    starting: &Starting,
) -> anyhow::Result<AppState> {
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", args.listen))
        .trim_end_matches('/')
        .to_string();
    let store = Arc::new(GenerationStore::new(g));
    let users_path = args
        .users
        .clone()
        .unwrap_or_else(|| data.root.join(USERS_FILE));
    let users = Arc::new(
        Users::open(&users_path)
            .with_context(|| format!("reading users from {}", users_path.display()))?,
    );
    let mut config = ApiConfig::new(public_url, Duration::from_secs(args.request_timeout));
    config.base_from_request = args.public_url.is_none();
    config.max_changeset_bytes = args.max_changeset_bytes;
    config.max_binary_bytes = args.max_binary_bytes;
    let files = raise_file_limit();
    let cap = (files as usize)
        .saturating_sub(crate::api::state::RESERVED_FILES)
        .max(16);
    if args.max_connections > cap {
        tracing::warn!(
            requested = args.max_connections,
            cap,
            "connection limit lowered to stay below the open-files limit"
        );
    }
    config.connections = crate::api::state::ConnectionLimits {
        max_connections: args.max_connections.min(cap).max(1),
        header_read_timeout: Duration::from_secs(args.header_timeout.max(1)),
        ..crate::api::state::ConnectionLimits::default()
    };
    config.ops = args.ops.options();
    config.ops.access_log_to = starting.access_log();
    config.query_budget = Duration::try_from_secs_f64(args.query_budget)
        .context("--query-budget must be a non-negative number of seconds")?
        .min(crate::api::state::max_query_budget(config.request_timeout));
    Ok(AppState {
        store,
        config: Arc::new(config),
        writer: None,
        users,
        request_base: Default::default(),
        resources: Default::default(),
    })
}

/// `vegdb serve`: bind the port first (a clash fails at once), then load the data on a thread
/// of its own while the port answers 503 + `Retry-After` (`api::health`), then serve.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    // before any thread is started, so that every thread of the server takes it
    sched::apply(args.scheduling);
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let listener = std::net::TcpListener::bind(args.listen).with_context(|| {
        format!(
            "cannot listen on {} (is another server using the port? choose one with --listen)",
            args.listen
        )
    })?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let main = match args.runtime {
        RuntimeKind::PerCore => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        RuntimeKind::Shared => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .enable_all()
            .build()?,
    };
    // per-core: one single-threaded runtime per worker (this thread runs the first), each
    // driving the connections given to it round robin
    let mut handles = Vec::new();
    let mut threads = Vec::new();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    if args.runtime == RuntimeKind::PerCore {
        handles.push(main.handle().clone());
        for i in 1..workers.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(rt.handle().clone());
            let mut stopped = stopped.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("vegdb-worker-{i}"))
                    .spawn(move || {
                        rt.block_on(async move {
                            let _ = stopped.wait_for(|s| *s).await;
                        })
                    })?,
            );
        }
    }
    let access_log = stderr_access_log(&args);
    let starting = Starting::new("loading").with_access_log(access_log.clone());
    let reload = ReloadRequest::default();
    // the writer, once loaded: its store lease is given up at a clean stop
    let writer_slot: Arc<std::sync::Mutex<Option<Arc<Writer>>>> = Arc::default();
    // the data is loaded on a thread of its own (it is not awaited when the server stops first)
    let (loaded_tx, loaded_rx) = tokio::sync::oneshot::channel();
    {
        let starting = starting.clone();
        let args = args.clone();
        let reload = reload.clone();
        std::thread::Builder::new()
            .name("vegdb-load".into())
            .spawn(move || {
                let _ = loaded_tx.send(load_state_with(&args, &starting, &reload));
            })?;
    }
    let timeout = Duration::from_secs(args.request_timeout);
    let loaded_writer = writer_slot.clone();
    let served = main.block_on(async move {
        reload_on_sighup(reload);
        let listener = tokio::net::TcpListener::from_std(listener)?;
        tracing::info!(version = VERSION, addr = %addr, data = %args.data.display(), "vegdb listening; loading the data (answering 503 until ready)");
        let loading = async move {
            let state = loaded_rx
                .await
                .context("the loading thread ended without a result")??;
            if let Ok(mut slot) = loaded_writer.lock() {
                slot.clone_from(&state.writer);
            }
            let g = state.store.current();
            let data = absolute(
                &state
                    .writer
                    .as_ref()
                    .map(|w| w.data.root.clone())
                    .unwrap_or_else(|| args.data.clone()),
            );
            tracing::info!(
                base = %state.config.public_url,
                runtime = ?args.runtime,
                workers,
                read_only = state.writer.is_none(),
                "vegdb {VERSION} ready on http://{addr}: read API /nvdb/api/v2, write API /nvdb/apiskriv/rest/v2, data {}, generation {}",
                data.display(),
                g.id
            );
            Ok(state)
        };
        serve_starting(listener, loading, starting, timeout, shutdown_signal(), handles).await
    });
    let _ = stop.send(true);
    for t in threads {
        let _ = t.join();
    }
    if let Some(log) = access_log {
        log.flush();
    }
    // a clean stop gives the store's writer lease up (the next writer need not wait it out)
    let writer = writer_slot.lock().ok().and_then(|mut w| w.take());
    if let Some(w) = writer {
        w.release_store_lease();
    }
    served
}

/// The server's one access log on standard error, in the log's format (`--log-json`), for the
/// starting and the loaded application; None when it is off or the log filter drops it.
fn stderr_access_log(args: &ServeArgs) -> Option<Arc<crate::api::access_log::AccessLog>> {
    (args.ops.access_log && crate::api::stack::access_log_enabled()).then(|| {
        crate::api::access_log::AccessLog::stderr(if args.log_json {
            crate::api::access_log::LineFormat::Json
        } else {
            crate::api::access_log::LineFormat::Text
        })
    })
}

/// Serve until `shutdown` completes (in-flight requests finish first), every connection on the
/// current runtime. See [`serve_on`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_on(listener, state, shutdown, Vec::new()).await
}

/// Serve until `shutdown` completes (in-flight requests finish first); accepted connections go
/// round robin to the runtimes of `workers` (none: the current runtime).
///
/// Our own accept loop over hyper (rather than `axum::serve`) so that the connection-level limits
/// exist at all: a header-read timeout that also bounds idle keep-alive connections (a watchdog
/// per connection, [`idle`]), a connection limit (further connections
/// wait in the kernel backlog until one closes), and accept errors such as EMFILE that back off
/// instead of spinning.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    workers: Vec<tokio::runtime::Handle>,
) -> anyhow::Result<()> {
    let timeout = state.config.request_timeout;
    let loaded = std::future::ready(Ok(state));
    serve_starting(
        listener,
        loaded,
        Starting::default(),
        timeout,
        shutdown,
        workers,
    )
    .await
}

/// [`serve_on`] from before the state exists: until `loading` gives it, each connection is
/// served by `crate::api::health::starting_router` (`/health` 200, everything else 503 with
/// `Retry-After` and `Connection: close`, `starting` saying why); connections accepted after
/// that are served by the application. An error from `loading` stops the server with it.
pub async fn serve_starting(
    listener: tokio::net::TcpListener,
    loading: impl std::future::Future<Output = anyhow::Result<AppState>>,
    starting: Starting,
    timeout: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    workers: Vec<tokio::runtime::Handle>,
) -> anyhow::Result<()> {
    // the configuration is not known yet: the defaults (any origin, no cache headers matter)
    let mut starting_config = ApiConfig::new("http://localhost", timeout);
    starting_config.ops.access_log_to = starting.access_log();
    let starting_app = crate::api::stack::App::without_data(
        crate::api::health::starting_router(starting),
        &starting_config,
    )
    .await;
    let mut loading = std::pin::pin!(loading);
    let mut connections = accept::Connections::new();
    tokio::pin!(shutdown);
    let outcome = match accept::accept_while_loading(
        &mut connections,
        &listener,
        &mut loading,
        &starting_app,
        &mut shutdown,
    )
    .await
    {
        Ok(Some(app)) => {
            accept::accept_serving(&connections, &listener, app, &mut shutdown, &workers).await?;
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(e),
    };
    drop(listener);
    // Idle keep-alive connections are closed at once; requests in flight finish.
    connections.shut_down().await;
    outcome
}

/// Raise the soft open-files limit to the hard limit, so the connection limit (below it) is the
/// limit that applies. Returns the soft limit now in force.
pub fn raise_file_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "could not raise the open-files limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE)
                .map(|(soft, _)| soft)
                .unwrap_or(1024)
        }
    }
}

/// SIGHUP: look for a new generation now (CURRENT, and the owner's inbox).
fn reload_on_sighup(reload: ReloadRequest) {
    #[cfg(unix)]
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    reload.request();
                }
            });
        }
        Err(e) => tracing::warn!(error = %e, "SIGHUP cannot be handled"),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
