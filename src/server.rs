//! Process setup: tracing, loading the current generation, serving with graceful shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tower::ServiceExt;

use crate::api::{self, ApiConfig, AppState};
use crate::changeset::writer::Writer;
use crate::cli::{default_demo_dir, ServeArgs};
use crate::snapshot::generation::{Generation, GenerationStore};
use crate::snapshot::store::DataDir;
use crate::users::{Users, USERS_FILE};

pub fn init_tracing(filter: &str, json: bool) {
    let env = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Open the data dir, initialising it from the demo snapshot when it has no generation yet.
pub fn open_data(args: &ServeArgs) -> anyhow::Result<(DataDir, u64)> {
    let data = DataDir::open(&args.data)?;
    let current = match data.current()? {
        Some(id) => id,
        None => {
            let demo = args.demo.clone().unwrap_or_else(default_demo_dir);
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
    };
    Ok((data, current))
}

pub fn load_state(args: &ServeArgs) -> anyhow::Result<AppState> {
    let (data, current) = open_data(args)?;
    let started = Instant::now();
    let (g, stats) = Generation::load(&data.generation_dir(current), &|step| {
        tracing::debug!(step, "loading")
    })?;
    tracing::info!(
        generation = g.id,
        network_rows = stats.rows_network,
        objects = stats.rows_objects,
        read_ms = stats.read_ms as u64,
        index_ms = stats.index_ms as u64,
        total_ms = started.elapsed().as_millis() as u64,
        "generation loaded"
    );
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", args.listen))
        .trim_end_matches('/')
        .to_string();
    let store = Arc::new(GenerationStore::new(g));
    crate::changeset::writer::set_writer_priority(args.writer_priority);
    let users_path = args
        .users
        .clone()
        .unwrap_or_else(|| data.root.join(USERS_FILE));
    let users = Arc::new(
        Users::open(&users_path)
            .with_context(|| format!("reading users from {}", users_path.display()))?,
    );
    let writer = if args.read_only {
        None
    } else {
        Some(Writer::start_with_rights(
            data.clone(),
            store.clone(),
            users.rights_source(),
        )?)
    };
    let mut config = ApiConfig::new(public_url, Duration::from_secs(args.request_timeout));
    config.max_changeset_bytes = args.max_changeset_bytes;
    config.max_binary_bytes = args.max_binary_bytes;
    Ok(AppState {
        store,
        config: Arc::new(config),
        writer,
        users,
    })
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let state = load_state(&args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("binding {}", args.listen))?;
        tracing::info!(addr = %listener.local_addr()?, base = %state.config.public_url, "vegdb listening");
        serve(listener, state, shutdown_signal()).await
    })
}

/// Serve until `shutdown` completes (in-flight requests finish first).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = api::app(state).map_request(api::rewrite_suffix);
    axum::serve(
        listener,
        axum::ServiceExt::<axum::extract::Request>::into_make_service(app),
    )
    .with_graceful_shutdown(shutdown)
    .await?;
    Ok(())
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
