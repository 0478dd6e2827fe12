//! `vegdb generate`: a deterministic national-scale dataset from a seed, written as a new
//! snapshot generation. See `network` and `objects` for what is generated and how.

pub mod areas;
mod draft;
pub mod history;
mod local_roads;
pub mod network;
pub mod objects;
pub mod values;

use std::path::Path;
use std::time::Instant;

use chrono::NaiveDate;

use crate::area::Areas;
use crate::catalog::Catalog;
use crate::error::{EngineError, Result};
use crate::snapshot::builder::{Description, GenerationBuilder};
use crate::snapshot::columns::Days;
use crate::snapshot::manifest::{MadeBy, Provenance};
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
    /// Closed object versions (older versions and closed objects' versions).
    pub history_versions: usize,
    /// Objects with closed versions.
    pub history_objects: usize,
    /// Closed road network rows (replaced links).
    pub closed_link_rows: usize,
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
    let history_plan = history::HistoryPlan {
        replaced_links: 0.02,
        other_types: 0.25,
        earliest: days(1990, 1, 1),
    };
    let replacement = history::replace_links(&net.network, &history_plan, seed);
    let plan = objects::ObjectPlan {
        objects_per_km: spec.objects_per_km,
        min_types: 64,
        dates,
        now,
        deleted_share: 0.015,
        replaced: replacement.links(),
    };
    let (mut tables, deleted) = objects::generate(catalog, &net, &plan, seed);
    for t in areas::generate(catalog, areas, &net, days(2024, 1, 1)) {
        tables.insert(t.type_id, t);
    }
    let past = history::generate(
        catalog,
        &net.network,
        &tables,
        &deleted,
        &history_plan,
        replacement,
        seed,
    );
    progress("objects");

    let mut builder = GenerationBuilder::fresh(data, catalog, areas)?;
    builder.write_tables(&net.network, tables.values(), Some(&deleted))?;
    builder.write_history(&net.network, &past.network, past.tables.values())?;
    progress("written");
    let id = builder
        .publish(
            data,
            Description {
                origin: format!("vegdb generate --scale {} --seed {seed}", scale.name()),
                provenance: Provenance::new(MadeBy::Generated, None),
                ..Description::default()
            },
        )?
        .id;
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
        history_versions: past.versions(),
        history_objects: past.objects(),
        closed_link_rows: past.network.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Generate into a fresh directory (tests and benches): returns the generation directory.
pub fn generate_into(scale: Scale, seed: u64, root: &Path) -> Result<std::path::PathBuf> {
    let data = DataDir::open(root)?;
    let report = generate(scale, seed, &data, &|_| {})?;
    Ok(data.generation_dir(report.generation))
}
