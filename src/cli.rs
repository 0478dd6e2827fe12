//! Command line: `serve`, `config print`, `generate`, `import`, `refresh`,
//! `snapshot inspect|verify|load|queries|rollback|upgrade`, `user add`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::ServeArgs;
use crate::generate::Scale;
use crate::generation::Generation;
use crate::snapshot::manifest::Manifest;
use crate::snapshot::store::DataDir;

mod exchange;
mod produce;
mod upgrade;
pub use exchange::{run_export, run_export_segmented, run_pull, run_push};
use produce::spinner;
pub use produce::{run_generate, run_import, run_refresh};
pub use upgrade::run_upgrade;

#[derive(Parser, Debug)]
#[command(
    name = "vegdb",
    version,
    about = "NVDB API v2 compatible road database server (read API LES v2 and write API SKRIV v2), with an OGC API Features service (/ogc), vector tiles (/tiles) and a map page (/kart)"
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

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve both APIs over HTTP: the read API (/nvdb/api/v2) and the write API
    /// (/nvdb/apiskriv/rest/v2), the OGC API Features service (/ogc), vector tiles (/tiles) and
    /// the map page (/kart), with /health and /ready (default command).
    Serve(ServeArgs),
    /// Ask a running server for /health: exit status 0 when it answers 200 (for container
    /// health checks; the runtime image has no curl).
    Probe {
        /// URL to ask (default: /health at --listen, 0.0.0.0 or :: asked on the loopback).
        #[arg(long)]
        url: Option<String>,
        /// The server's listen address (its --listen), used without --url.
        #[arg(long, env = "VEGDB_LISTEN", default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 3)]
        timeout: u64,
    },
    /// Show the configuration of `vegdb serve`.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Generate a dataset and publish it as a new generation in --data.
    Generate {
        /// Size of the dataset: tiny (tests), demo (Trøndelag) or national.
        #[arg(long, value_enum, default_value = "demo")]
        scale: Scale,
        /// Random seed: the same seed and scale give the same dataset.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Data directory to publish the generation into.
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
    },
    /// Import saved NVDB Uberiket responses (see README) as a new generation in --data.
    Import {
        /// Directory of saved responses (veglenkesekvenser/, vegobjekter/<typeId>/), or the
        /// http:// or https:// base URL of an Uberiket API (…/api/v1) to download from first
        /// (https: verified with the system's CA store, or the PEM file SSL_CERT_FILE names).
        #[arg(long)]
        source: String,
        /// Where a URL source is downloaded to (resumable); default <data>/import-download.
        #[arg(long)]
        download_dir: Option<PathBuf>,
        /// Data directory to publish the generation into.
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Comma-separated type ids, or all-known.
        #[arg(long, default_value = "all-known", value_parser = crate::import::TypeSelection::parse)]
        types: crate::import::TypeSelection,
        /// Streams downloaded at the same time from a URL source (1-16).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=16))]
        concurrency: u8,
        /// URL source only: download the --types from the paged /vegobjekter/{typeId} list,
        /// which holds every version (kept as the objects' history, answered with tidspunkt),
        /// instead of /vegobjekter/{typeId}/stream (active versions only). Slower: at most
        /// 1,000 objects per call, each page read whole, and every older version downloaded
        /// too. Sequences (with their closed veglenker) come from their stream either way.
        #[arg(long)]
        history: bool,
    },
    /// Apply the upstream events since the last import/refresh (Uberiket /hendelser) as a new
    /// generation in --data (copy-on-write; see README).
    Refresh {
        /// Directory of saved events and current states (hendelser/, veglenkesekvenser/,
        /// vegobjekter/<typeId>/), or the http:// or https:// base URL of an Uberiket API
        /// (…/api/v1; https as for import).
        #[arg(long)]
        source: String,
        /// Data directory whose current generation is refreshed.
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
    },
    /// Export one object type of the current generation as a GIS file: FlatGeobuf, GeoJSON or
    /// GeoParquet, with located geometry and property names and decoded values.
    Export {
        /// Object type id, e.g. 105 (Fartsgrense).
        #[arg(
            long = "type",
            required_unless_present = "segmentert",
            conflicts_with = "segmentert"
        )]
        type_id: Option<u32>,
        /// Instead of one type: the network cut wherever an object of any of these types
        /// (comma-separated ids, at most 10) begins or ends, a row per piece with the covering
        /// objects' ids, versions and values per type (as GET /vegnett/segmentert); --format
        /// geoparquet only.
        #[arg(long, value_delimiter = ',')]
        segmentert: Vec<u32>,
        /// With --segmentert: the values each type carries, as /vegnett/segmentert's
        /// egenskaper, e.g. '105(2021),540()' (a type not named carries all its values).
        #[arg(long, requires = "segmentert")]
        egenskaper: Option<String>,
        /// Output format: fgb (FlatGeobuf), geojson or geoparquet.
        #[arg(long, value_enum)]
        format: crate::export::Format,
        /// Coordinate system (default: 4326 for GeoJSON, else 32633).
        #[arg(long)]
        srid: Option<String>,
        /// Only objects in these municipalities (comma-separated kommune numbers).
        #[arg(long, value_delimiter = ',')]
        kommune: Vec<u16>,
        /// Output file (default: type-<id>.<fgb|geojson|parquet> in the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Data directory whose CURRENT generation is exported (read-only).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
    },
    /// Inspect, verify, load, roll back or upgrade snapshot generations.
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
        /// User name (also the OpenAM login name).
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
        /// Data directory whose users.json is written (unless --users is given).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
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
    anyhow::ensure!(
        name.len() <= crate::users::MAX_NAME_BYTES,
        "the user name is {} bytes long, at most {} allowed (a longer one could never log in)",
        name.len(),
        crate::users::MAX_NAME_BYTES
    );
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
        /// Data directory (read only; no lock is taken).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Generation id (default: the one CURRENT names).
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Load a generation as the server does and report the time per step and peak memory.
    Load {
        /// Data directory (read only; no lock is taken).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Generation id (default: the one CURRENT names).
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Write request paths for benchmarks (`vegdb-load --paths`): /posisjon points (80 % near a
    /// road with up to ±10 m noise, 20 % anywhere in the extent) or /veg/batch requests.
    Queries {
        /// Data directory (read only; no lock is taken).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Which requests to write.
        #[arg(long, value_enum, default_value = "posisjon")]
        kind: QueryKind,
        /// How many requests to write.
        #[arg(long, default_value_t = 100_000)]
        count: usize,
        /// Random seed (the same seed gives the same requests).
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
    /// Upload a generation (default: CURRENT) to an object store and make it the store's
    /// CURRENT (unless the store's is newer): only files the store does not hold yet are sent,
    /// the manifest after them, CURRENT last and conditionally.
    Push {
        /// Data directory holding the generation.
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// The store: `s3://bucket/prefix`, `az://container/prefix`, `gs://bucket/prefix`.
        #[arg(long, value_name = "URL")]
        to: String,
        /// Generation to upload (default: the directory's CURRENT).
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Download a generation (default: the store's CURRENT) into a data directory and make it
    /// CURRENT there: only files no local generation has are downloaded, each checked against
    /// the manifest's SHA-256.
    Pull {
        /// The store: `s3://bucket/prefix`, `az://container/prefix`, `gs://bucket/prefix`.
        #[arg(long, value_name = "URL")]
        from: String,
        /// Data directory to download into.
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Generation to download (default: the store's CURRENT).
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Check checksums, row counts and that the generation loads with consistent references;
    /// lists every problem found (exit status 1 when there is one).
    Verify {
        /// Data directory (read only; no lock is taken).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Generation id (default: the one CURRENT names).
        #[arg(long)]
        generation: Option<u64>,
    },
    /// Make an older generation CURRENT again (after a corrupt or unwanted one). Refused while a
    /// server owns the directory and for a generation that fails `verify`.
    Rollback {
        /// Data directory (its owner lock is taken while CURRENT is moved).
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Generation id to make CURRENT.
        #[arg(long)]
        to: u64,
    },
    /// Rewrite a generation of an older format in the current one (format 3: located geometry,
    /// `bbox` column, spatial row order, `objects/type=<id>/` paths, data dictionary), with the
    /// same objects, ids and versions. Without --out it becomes the next generation and CURRENT
    /// (refused while a server owns the directory); the result is verified and compared first.
    Upgrade {
        /// Data directory holding the generation.
        #[arg(long, env = "VEGDB_DATA", default_value = "data", value_parser = crate::config::data_dir_arg)]
        data: PathBuf,
        /// Generation to upgrade (default: CURRENT; without --out it must be CURRENT).
        #[arg(long)]
        generation: Option<u64>,
        /// Write a new data directory (absent or empty) holding the upgrade under the same
        /// generation id instead, reading --data only (allowed while a server owns it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigAction {
    /// Print the effective configuration of `vegdb serve` as TOML (readable by --config):
    /// flags, environment and the configuration file applied, with each value's source.
    Print(ServeArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryKind {
    /// /posisjon with a point near a road or anywhere.
    Posisjon,
    /// /veg/batch with 1000 road references each.
    VegBatch,
}

/// Print benchmark request paths for a generation to stdout.
pub fn run_queries(data: &Path, kind: QueryKind, count: usize, seed: u64) -> anyhow::Result<()> {
    use rand::{Rng, SeedableRng};
    use std::io::Write;
    let data = existing_data_dir(data)?;
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
            // rows with a road reference (an imported network may have rows without one)
            let with_ref: Vec<usize> = (0..n.len())
                .filter(|&r| n.road_category[r] != crate::snapshot::columns::NO_ROAD_REF)
                .collect();
            anyhow::ensure!(!with_ref.is_empty(), "the network has no road references");
            for _ in 0..count {
                let refs: Vec<String> = (0..1000)
                    .map(|_| {
                        let r = with_ref[rng.random_range(0..with_ref.len())];
                        let key = crate::index::network::row_key(n, r);
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

/// A data directory a read-only tool works on: it must exist (the error names where it looked).
fn existing_data_dir(data: &Path) -> anyhow::Result<DataDir> {
    if !data.is_dir() {
        let abs = std::path::absolute(data).unwrap_or_else(|_| data.to_path_buf());
        anyhow::bail!(
            "no data directory at {} (looked for {}); give it with --data or VEGDB_DATA",
            abs.display(),
            abs.join(crate::snapshot::store::CURRENT_FILE).display()
        );
    }
    Ok(DataDir::read_only(data))
}

pub fn run_inspect(data: &Path, generation: Option<u64>) -> anyhow::Result<()> {
    // read-only: never takes the owner's lock, never writes or removes anything
    let data = existing_data_dir(data)?;
    let pinned = data.pin_current_or(generation)?;
    let m = Manifest::read(&pinned.dir)?;
    drop(pinned);
    println!("{}", serde_json::to_string_pretty(&m)?);
    let rows_of = |path: &str| {
        m.files
            .iter()
            .find(|f| f.path == path)
            .map_or(0, |f| f.rows)
    };
    println!(
        "generation {}: {} network rows ({} closed), {} object rows ({} closed versions) in {} files, {} bytes",
        m.generation,
        rows_of(crate::snapshot::parquet_write::NETWORK_FILE),
        rows_of(crate::snapshot::parquet_write::NETWORK_HISTORY_FILE),
        m.files
            .iter()
            .filter(|f| f.type_id.is_some())
            .map(|f| f.rows)
            .sum::<u64>(),
        m.files
            .iter()
            .filter(|f| crate::snapshot::parquet_write::history_type_of(&f.path).is_some())
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
    let data = existing_data_dir(data)?;
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
    let data = existing_data_dir(data)?;
    let pinned = data.pin_current_or(generation)?;
    let dir = pinned.dir.clone();
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("[{elapsed}] {msg}").expect("static template"));
    let report = crate::generation::check::verify(&dir, &|f| pb.set_message(f.to_string()));
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

/// `snapshot rollback --to N`: make generation N CURRENT again. As the directory's owner (so
/// never under a running server), only for a generation that passes `verify`; CURRENT is
/// replaced durably (written, synced, renamed, directory synced). Newer generations stay on
/// disk until the owner's next retention pass removes them.
pub fn run_rollback(data: &Path, to: u64) -> anyhow::Result<()> {
    use anyhow::Context;
    existing_data_dir(data)?;
    let dir = DataDir::open(data).with_context(|| {
        format!(
            "vegdb snapshot rollback moves CURRENT of {} and needs to own it",
            data.display()
        )
    })?;
    let current = dir.current()?;
    let have = dir.generations()?;
    if !have.contains(&to) {
        anyhow::bail!(
            "generation {to} is not in {} (generations there: {})",
            dir.root.display(),
            have.iter()
                .map(|g| g.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if current == Some(to) {
        println!("generation {to} is CURRENT already; nothing changed");
        return Ok(());
    }
    let report = crate::generation::check::verify(&dir.generation_dir(to), &|_| {});
    if !report.problems.is_empty() {
        for p in &report.problems {
            println!("PROBLEM: {p}");
        }
        anyhow::bail!(
            "generation {to} fails verification ({} problem(s)); CURRENT is unchanged",
            report.problems.len()
        );
    }
    // changesets applied after the target are no longer in the data it serves
    // (an upgraded copy of the target carries the target's own changesets: not lost)
    let kept = Manifest::read(&dir.generation_dir(to))
        .map(|m| m.changesets)
        .unwrap_or_default();
    let mut lost: Vec<String> = have
        .iter()
        .filter(|&&g| g > to)
        .filter_map(|&g| Manifest::read(&dir.generation_dir(g)).ok())
        .flat_map(|m| m.changesets)
        .filter(|c| !kept.contains(c))
        .collect();
    lost.dedup();
    dir.make_current(to)?;
    println!(
        "CURRENT of {} is now generation {to} (was {})",
        dir.root.display(),
        current.map_or("none".to_string(), |c| c.to_string())
    );
    if !lost.is_empty() {
        println!(
            "note: the changesets applied in later generations are not in generation {to}: {}",
            lost.join(", ")
        );
    }
    Ok(())
}

/// `vegdb probe`: GET `url` (default `/health` at `listen`); Ok when the answer is 200.
pub fn run_probe(
    url: Option<String>,
    listen: std::net::SocketAddr,
    timeout: u64,
) -> anyhow::Result<()> {
    let url = url.unwrap_or_else(|| {
        let mut addr = listen;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        format!("http://{addr}/health")
    });
    let response = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(timeout.max(1)))
        .build()?
        .get(&url)
        .send()
        .map_err(|e| anyhow::anyhow!("{url}: no answer: {e}"))?;
    let status = response.status();
    let body = response.text().unwrap_or_default();
    println!("{url}: {status} {}", body.trim());
    anyhow::ensure!(status.as_u16() == 200, "{url} answered {status}");
    Ok(())
}
