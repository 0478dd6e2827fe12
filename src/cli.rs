//! Command line: `serve`, `generate`, `snapshot inspect|verify`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::generate::{self, Scale};
use crate::snapshot::generation::Generation;
use crate::snapshot::manifest::Manifest;
use crate::snapshot::store::DataDir;

/// The committed demo snapshot (a data directory with CURRENT and one generation).
pub fn default_demo_dir() -> PathBuf {
    let compiled = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
    if compiled.exists() {
        compiled
    } else {
        PathBuf::from("snapshots/demo")
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "vegdb",
    version,
    about = "NVDB API v2 compatible road database server"
)]
pub struct Cli {
    /// Log filter (tracing env-filter syntax), e.g. info, vegdb=debug.
    #[arg(long, env = "VEGDB_LOG", default_value = "info", global = true)]
    pub log: String,
    /// Log as JSON lines instead of text.
    #[arg(long, env = "VEGDB_LOG_JSON", global = true)]
    pub log_json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "VEGDB_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Runtime data directory (generations + CURRENT). Initialised from --demo when empty.
    #[arg(long, env = "VEGDB_DATA", default_value = "data")]
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
    #[arg(long, env = "VEGDB_MAX_CHANGESET_BYTES", default_value_t = crate::api::DEFAULT_MAX_CHANGESET_BYTES)]
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
    #[arg(long, env = "VEGDB_MAX_BINARY_BYTES", default_value_t = crate::api::DEFAULT_MAX_BINARY_BYTES)]
    pub max_binary_bytes: usize,
    /// Most client connections open at once; further ones wait in the listen backlog. Capped at
    /// the open-files limit less a reserve for data files.
    #[arg(long, env = "VEGDB_MAX_CONNECTIONS", default_value_t = crate::api::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Seconds a connection may take to send a request's headers, and may stay idle between
    /// keep-alive requests, before it is closed.
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
    /// How requests are scheduled: `per-core` runs one single-threaded runtime per worker,
    /// each serving the connections given to it round robin (no cross-thread wake-ups; a long
    /// request delays the other requests of its worker); `shared` is tokio's work-stealing
    /// runtime (idle workers take over waiting connections, at a wake-up per request).
    #[arg(long, env = "VEGDB_RUNTIME", value_enum, default_value = "per-core")]
    pub runtime: RuntimeKind,
    /// Worker threads serving requests (default: one per CPU).
    #[arg(long, env = "VEGDB_WORKERS")]
    pub workers: Option<usize>,
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

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the read API (default command).
    Serve(ServeArgs),
    /// Generate a dataset and publish it as a new generation in --data.
    Generate {
        #[arg(long, value_enum, default_value = "demo")]
        scale: Scale,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
    },
    /// Import saved NVDB Uberiket responses (see README) as a new generation in --data.
    Import {
        /// Directory of saved responses (veglenkesekvenser/, vegobjekter/<typeId>/), or the
        /// http:// base URL of an Uberiket API (…/api/v1) to download from first.
        #[arg(long)]
        source: String,
        /// Where a URL source is downloaded to (resumable); default <data>/import-download.
        #[arg(long)]
        download_dir: Option<PathBuf>,
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
        /// Comma-separated type ids, or all-known.
        #[arg(long, default_value = "all-known", value_parser = crate::import::TypeSelection::parse)]
        types: crate::import::TypeSelection,
    },
    /// Inspect or verify snapshot generations.
    Snapshot {
        #[command(subcommand)]
        action: SnapshotAction,
    },
    /// Manage users of the write interface.
    User {
        #[command(subcommand)]
        action: UserAction,
    },
}

#[derive(Subcommand, Debug)]
pub enum UserAction {
    /// Create (or replace) a user; prints its token as the last line of output.
    Add {
        name: String,
        /// Comma-separated roles: skriv, korriger, admin, sensitiv.
        #[arg(long, value_delimiter = ',', required = true)]
        roles: Vec<String>,
        /// Limit writing to these object type ids (comma-separated).
        #[arg(long, value_delimiter = ',')]
        types: Option<Vec<u32>>,
        /// Limit writing to these municipality numbers (comma-separated).
        #[arg(long, value_delimiter = ',')]
        kommuner: Option<Vec<u16>>,
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
        /// Users file (default: <data>/users.json).
        #[arg(long, env = "VEGDB_USERS")]
        users: Option<PathBuf>,
        /// Also give the user a password, read as the first line of standard input (for
        /// `POST /openam/json/authenticate`; stored as an argon2id hash).
        #[arg(long)]
        password_stdin: bool,
    },
}

/// `vegdb user add`.
pub fn run_user_add(
    name: &str,
    roles: &[String],
    types: Option<Vec<u32>>,
    kommuner: Option<Vec<u16>>,
    data: &Path,
    users: Option<PathBuf>,
    password_stdin: bool,
) -> anyhow::Result<()> {
    use crate::users::{add_user, set_password, Role, USERS_FILE};
    let roles = roles
        .iter()
        .map(|r| {
            Role::parse(r).ok_or_else(|| {
                anyhow::anyhow!("unknown role '{r}' (roles: skriv, korriger, admin, sensitiv)")
            })
        })
        .collect::<anyhow::Result<Vec<Role>>>()?;
    anyhow::ensure!(!name.trim().is_empty(), "the user name must not be empty");
    let path = users.unwrap_or_else(|| data.join(USERS_FILE));
    let password = if password_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        let password = line.strip_suffix('\n').unwrap_or(&line);
        let password = password.strip_suffix('\r').unwrap_or(password).to_string();
        anyhow::ensure!(
            !password.is_empty(),
            "--password-stdin: the password (first line of standard input) is empty"
        );
        Some(password)
    } else {
        None
    };
    let token = add_user(&path, name, roles.clone(), types, kommuner)?;
    if let Some(password) = password {
        set_password(&path, name, &password)?;
    }
    println!(
        "user {name} with roles {roles:?} written to {}",
        path.display()
    );
    println!("{token}");
    Ok(())
}

#[derive(Subcommand, Debug)]
pub enum SnapshotAction {
    /// Print the manifest and row counts of a generation (default: CURRENT).
    Inspect {
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Load a generation as the server does and report the time per step and peak memory.
    Load {
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Write request paths for benchmarks (`vegdb-load --paths`): /posisjon points (80 % near a
    /// road with up to ±10 m noise, 20 % anywhere in the extent) or /veg/batch requests.
    Queries {
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
        #[arg(long, value_enum, default_value = "posisjon")]
        kind: QueryKind,
        #[arg(long, default_value_t = 100_000)]
        count: usize,
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
    /// Check checksums, row counts and that the generation loads with consistent references.
    Verify {
        #[arg(long, env = "VEGDB_DATA", default_value = "data")]
        data: PathBuf,
        #[arg(long)]
        generation: Option<u64>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryKind {
    Posisjon,
    /// /veg/batch with 1000 road references each.
    VegBatch,
}

/// Print benchmark request paths for a generation to stdout.
pub fn run_queries(data: &Path, kind: QueryKind, count: usize, seed: u64) -> anyhow::Result<()> {
    use rand::{Rng, SeedableRng};
    use std::io::Write;
    let data = DataDir::read_only(data);
    let pinned = data.pin_current_or(None)?;
    let (g, _) = Generation::load(&pinned.dir, &|_| {})?;
    drop(pinned);
    let n = &g.network;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    match kind {
        QueryKind::Posisjon => {
            let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
            for c in &n.coords {
                (x0, y0, x1, y1) = (x0.min(c[0]), y0.min(c[1]), x1.max(c[0]), y1.max(c[1]));
            }
            for _ in 0..count {
                let (x, y) = if rng.random_bool(0.8) {
                    let c = n.coords[rng.random_range(0..n.coords.len())];
                    (
                        c[0] + rng.random_range(-10.0..10.0),
                        c[1] + rng.random_range(-10.0..10.0),
                    )
                } else {
                    (rng.random_range(x0..x1), rng.random_range(y0..y1))
                };
                writeln!(out, "/posisjon?nord={y:.2}&ost={x:.2}")?;
            }
        }
        QueryKind::VegBatch => {
            for _ in 0..count {
                let refs: Vec<String> = (0..1000)
                    .map(|_| {
                        let r = rng.random_range(0..n.len());
                        let key = crate::query::network::row_key(n, r);
                        let m = rng.random_range(n.from_m[r]..=n.to_m[r]);
                        key.point(m).replace(' ', "")
                    })
                    .collect();
                writeln!(out, "/veg/batch?vegreferanser={}", refs.join(","))?;
            }
        }
    }
    Ok(())
}

fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("static template"),
    );
    pb.enable_steady_tick(Duration::from_millis(120));
    pb.set_message(msg.to_string());
    pb
}

/// `generate` publishes into `--data`, so it must own it: against a directory a server owns it
/// fails at once (handing a generation to a running server is not built yet).
pub fn run_generate(scale: Scale, seed: u64, data: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let data = DataDir::open(data).with_context(|| {
        format!(
            "vegdb generate publishes a generation into {} and needs to own it",
            data.display()
        )
    })?;
    let pb = spinner(&format!(
        "generating {} dataset (seed {seed}): road network",
        scale.name()
    ));
    let report = generate::generate(scale, seed, &data, &|step| {
        pb.set_message(match step {
            "network" => "objects".to_string(),
            "objects" => "writing Parquet".to_string(),
            other => other.to_string(),
        })
    })?;
    pb.finish_and_clear();
    println!(
        "generation {}: {} links ({} segment rows, {:.0} km), {} objects of {} types, {} deleted, in {:.1} s -> {}",
        report.generation,
        report.links,
        report.segments,
        report.km,
        report.objects,
        report.types,
        report.deleted,
        report.seconds,
        data.generation_dir(report.generation).display()
    );
    Ok(())
}

pub fn run_import(
    source: &str,
    download_dir: Option<PathBuf>,
    data: &Path,
    types: &crate::import::TypeSelection,
) -> anyhow::Result<()> {
    use crate::import::download::{download, DownloadOptions};
    let data = DataDir::open(data)?;
    let source = if source.starts_with("http://") || source.starts_with("https://") {
        let dest = download_dir.unwrap_or_else(|| data.root.join("import-download"));
        let ids: Vec<u32> = match types {
            crate::import::TypeSelection::Only(ids) => ids.clone(),
            crate::import::TypeSelection::AllKnown => crate::catalog::Catalog::embedded()
                .types
                .iter()
                .map(|t| t.id)
                .collect(),
        };
        let pb = spinner(&format!("downloading {source}"));
        let started = std::time::Instant::now();
        let reports = download(source, &dest, &ids, &DownloadOptions::default(), &|r| {
            pb.set_message(format!(
                "downloading {}: {} records ({:.0}/s), {} calls, {} retries",
                r.name,
                r.records,
                r.records as f64 / started.elapsed().as_secs_f64().max(1e-3),
                r.calls,
                r.retries
            ))
        })?;
        pb.finish_and_clear();
        for r in &reports {
            println!(
                "downloaded {}: {} records in {} calls ({} retries){}",
                r.name,
                r.records,
                r.calls,
                r.retries,
                r.resumed_from
                    .map(|id| format!(", resumed after id {id}"))
                    .unwrap_or_default()
            );
        }
        dest
    } else {
        PathBuf::from(source)
    };
    let source = source.as_path();
    let pb = spinner(&format!("importing {}", source.display()));
    let summary = crate::import::import_dir(source, &data, types, &|step| {
        pb.set_message(format!("importing {}: {step} done", source.display()))
    })?;
    pb.finish_and_clear();
    print!("{}", summary.render());
    Ok(())
}

pub fn run_inspect(data: &Path, generation: Option<u64>) -> anyhow::Result<()> {
    // read-only: never takes the owner's lock, never writes or removes anything
    let data = DataDir::read_only(data);
    let pinned = data.pin_current_or(generation)?;
    let m = Manifest::read(&pinned.dir)?;
    drop(pinned);
    println!("{}", serde_json::to_string_pretty(&m)?);
    println!(
        "generation {}: {} network rows, {} object rows in {} files, {} bytes",
        m.generation,
        m.total_rows("network/"),
        m.files
            .iter()
            .filter(|f| f.type_id.is_some())
            .map(|f| f.rows)
            .sum::<u64>(),
        m.files.len(),
        m.files.iter().map(|f| f.bytes).sum::<u64>()
    );
    Ok(())
}

/// Peak and current resident memory in KiB (Linux; zeros elsewhere).
pub fn resident_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

pub fn run_load(data: &Path, generation: Option<u64>) -> anyhow::Result<()> {
    let data = DataDir::read_only(data);
    let pinned = data.pin_current_or(generation)?;
    let dir = pinned.dir.clone();
    let started = std::time::Instant::now();
    let spin = spinner("loading");
    let (g, stats) = Generation::load(&dir, &|step| spin.set_message(step.to_string()))?;
    spin.finish_and_clear();
    let (peak, now) = resident_kib();
    println!(
        "generation {}: {} network rows, {} R-tree segments, {} objects in {} types; read {} ms, index {} ms, total {} ms; resident {:.2} GiB (peak {:.2} GiB)",
        g.id,
        stats.rows_network,
        g.network_index.len(),
        stats.rows_objects,
        g.objects.len(),
        stats.read_ms,
        stats.index_ms,
        started.elapsed().as_millis(),
        now as f64 / 1048576.0,
        peak as f64 / 1048576.0
    );
    Ok(())
}

/// `snapshot verify`: read-only (no lock, nothing written or removed), every problem listed.
/// The generation is pinned while it is verified (a shared lock on its manifest), so the
/// owner of a live directory does not remove it meanwhile.
pub fn run_verify(data: &Path, generation: Option<u64>) -> anyhow::Result<()> {
    let data = DataDir::read_only(data);
    let pinned = data.pin_current_or(generation)?;
    let dir = pinned.dir.clone();
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("[{elapsed}] {msg}").expect("static template"));
    let report = crate::snapshot::check::verify(&dir, &|f| pb.set_message(f.to_string()));
    pb.finish_and_clear();
    drop(pinned);
    if let Some(stats) = &report.stats {
        println!(
            "generation {}: {} files, {} network rows, {} objects, read {} ms, indexed {} ms",
            report.generation.unwrap_or(0),
            report.files,
            stats.rows_network,
            stats.rows_objects,
            stats.read_ms,
            stats.index_ms
        );
    }
    if report.problems.is_empty() {
        println!(
            "OK: checksums, row counts per file, chunk id ranges and references are consistent"
        );
        Ok(())
    } else {
        for p in &report.problems {
            println!("PROBLEM: {p}");
        }
        anyhow::bail!(
            "{}: {} problem(s) found",
            dir.display(),
            report.problems.len()
        )
    }
}
