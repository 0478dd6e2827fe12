//! `vegdb generate`: a deterministic national-scale dataset from a seed, written as a new
//! snapshot generation. See `network` and `objects` for what is generated and how.

pub mod areas;
mod draft;
mod local_roads;
pub mod network;
pub mod objects;
pub mod values;

use std::path::Path;
use std::time::Instant;

use chrono::{NaiveDate, Utc};
use rayon::prelude::*;

use crate::area::Areas;
use crate::catalog::Catalog;
use crate::error::{EngineError, Result};
use crate::snapshot::columns::Days;
use crate::snapshot::manifest::{Manifest, FORMAT_VERSION};
use crate::snapshot::parquet_write::{write_deleted, write_network, write_type};
use crate::snapshot::store::DataDir;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    /// Three municipalities around Trondheim, ~3,000 links: for tests.
    Tiny,
    /// Trøndelag county, ~25,000 links: the embedded demo snapshot.
    Demo,
    /// All 357 municipalities: >= 1,000,000 links, >= 10,000,000 objects: for benchmarks.
    National,
}

pub struct ScaleSpec {
    pub municipalities: Vec<u16>,
    pub target_km: f64,
    pub objects_per_km: f64,
}

impl Scale {
    pub fn spec(self, areas: &Areas) -> ScaleSpec {
        match self {
            Scale::Tiny => ScaleSpec {
                municipalities: vec![5001, 5028, 5031],
                target_km: 320.0,
                objects_per_km: 25.0,
            },
            Scale::Demo => ScaleSpec {
                municipalities: areas
                    .municipalities
                    .iter()
                    .filter(|m| m.county == 50)
                    .map(|m| m.number)
                    .collect(),
                target_km: 2_800.0,
                objects_per_km: 30.0,
            },
            Scale::National => ScaleSpec {
                municipalities: areas.municipalities.iter().map(|m| m.number).collect(),
                target_km: 107_000.0,
                objects_per_km: 100.0,
            },
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Demo => "demo",
            Scale::National => "national",
        }
    }
}

fn days(y: i32, m: u32, d: u32) -> Days {
    (NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
        - NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch"))
    .num_days() as Days
}

/// What `generate` did, for the CLI and benchmarks.
#[derive(Debug)]
pub struct GenerateReport {
    pub generation: u64,
    pub links: usize,
    pub segments: usize,
    pub km: f64,
    pub objects: usize,
    pub types: usize,
    pub deleted: usize,
    pub seconds: f64,
}

/// Generate a dataset and publish it as the next generation of `data`.
/// `now` fixes `sist_modifisert`'s upper bound so that output is reproducible.
pub fn generate(
    scale: Scale,
    seed: u64,
    data: &DataDir,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<GenerateReport> {
    let started = Instant::now();
    let areas = Areas::embedded();
    let catalog = Catalog::embedded();
    let spec = scale.spec(areas);
    let dates = (days(2000, 1, 1), days(2024, 12, 31));
    let now = days(2026, 11, 1) as i64 * 86_400;
    let net = network::generate(
        areas,
        &network::NetworkPlan {
            municipalities: spec.municipalities.clone(),
            target_km: spec.target_km,
        },
        seed,
        dates,
    );
    progress("network");
    let plan = objects::ObjectPlan {
        objects_per_km: spec.objects_per_km,
        min_types: 64,
        dates,
        now,
        deleted_share: 0.015,
    };
    let (mut tables, deleted) = objects::generate(catalog, &net, &plan, seed);
    for t in areas::generate(catalog, areas, &net, days(2024, 1, 1)) {
        tables.insert(t.type_id, t);
    }
    progress("objects");

    let id = data.next_id()?;
    let mut staging = data.begin(id)?;
    let dir = staging.dir.clone();
    let (net_entry, object_entries) = rayon::join(
        || write_network(&dir, &net.network),
        || {
            tables
                .par_iter()
                .map(|(_, t)| write_type(&dir, t, &net.network))
                .collect::<Result<Vec<_>>>()
        },
    );
    staging.files.push(net_entry?);
    staging.files.extend(object_entries?.into_iter().flatten());
    staging.files.push(write_deleted(&dir, &deleted)?);
    let types: Vec<u32> = tables.keys().copied().collect();
    let (dictionary, _) = crate::snapshot::dictionary::write(&dir, catalog, areas, &types, &[])?;
    staging.files.extend(dictionary);
    progress("written");
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        generation: id,
        parent: None,
        created: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        datakatalog_versjon: catalog.version.version.clone(),
        origin: format!("vegdb generate --scale {} --seed {seed}", scale.name()),
        provenance: crate::snapshot::manifest::Provenance::new(
            crate::snapshot::manifest::MadeBy::Generated,
            None,
        ),
        changesets: vec![],
        last_event_ids: Default::default(),
        files: vec![],
    };
    // a hand-off to a running server is numbered by the server
    let id = crate::snapshot::store::generation_id(&data.publish(staging, manifest)?).unwrap_or(id);
    let n = &net.network;
    if n.is_empty() {
        return Err(EngineError::Internal("generated an empty network".into()));
    }
    Ok(GenerateReport {
        generation: id,
        links: net.link_ids.len(),
        segments: n.len(),
        km: n
            .length_m
            .iter()
            .zip(&n.topology_level)
            .filter(|(_, &l)| l == 0)
            .map(|(l, _)| l)
            .sum::<f64>()
            / 1000.0,
        objects: tables.values().map(|t| t.len()).sum(),
        types: tables.len(),
        deleted: deleted.id.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Generate into a fresh directory (tests and benches): returns the generation directory.
pub fn generate_into(scale: Scale, seed: u64, root: &Path) -> Result<std::path::PathBuf> {
    let data = DataDir::open(root)?;
    let report = generate(scale, seed, &data, &|_| {})?;
    Ok(data.generation_dir(report.generation))
}
