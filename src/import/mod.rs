//! `vegdb import`: build one generation from saved NVDB API Les Uberiket v1 responses
//! (`veglenkesekvenser` and `vegobjekter` of chosen types) and publish it through the same
//! writers and `DataDir` as `generate`. See ARCHITECTURE.md "Import mapping".
//!
//! Order: 915 Vegsystem and 916 Strekning objects first (they give the road references, from
//! the newest version of each), then the sequences (each mapped to network rows as it is read,
//! the upstream record dropped; closed veglenker to the network's history), then the other
//! types (the newest version of each object current, every other version read to the type's
//! history). Memory is bounded by the generation being built, not by the input files.

pub mod download;
pub mod events;
pub mod export;
mod network;
mod objects;
pub mod refresh;
pub mod roadref;
pub mod source;
pub mod summary;
pub mod uberiket;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

use chrono::NaiveDate;

use crate::area::Areas;
use crate::catalog::Catalog;
use crate::error::{EngineError, Result};
use crate::snapshot::builder::{Description, GenerationBuilder};
use crate::snapshot::columns::{Days, DeletedTable, ObjectTable};
use crate::snapshot::manifest::{MadeBy, Provenance};
use crate::snapshot::store::DataDir;
pub use network::parse_linestring;
use roadref::{RoadRefs, SIDEANLEGGSDEL, STREKNING, VEGSYSTEM};
pub use summary::Summary;
use uberiket::{RoadObject, Sequence};

/// Sub-directory of the sequences in a source directory.
pub const SEQUENCES_DIR: &str = "veglenkesekvenser";
/// Sub-directory of the objects (one directory per type id below it).
pub const OBJECTS_DIR: &str = "vegobjekter";

/// Which object types to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeSelection {
    /// Every type directory whose id the catalogue knows.
    AllKnown,
    Only(Vec<u32>),
}

/// A `--types` entry that is neither a type id nor `all-known` (a clap value-parser error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a type id: '{text}' (use ids like 105,95 or all-known)")]
pub struct NotATypeId {
    pub text: String,
}

impl TypeSelection {
    /// `all-known` or a comma-separated list of type ids.
    pub fn parse(text: &str) -> std::result::Result<TypeSelection, NotATypeId> {
        if text.trim() == "all-known" {
            return Ok(TypeSelection::AllKnown);
        }
        text.split(',')
            .map(|t| {
                t.trim().parse::<u32>().map_err(|_| NotATypeId {
                    text: t.to_string(),
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(TypeSelection::Only)
    }
}

pub(crate) fn date_days(text: &str) -> Option<Days> {
    let d = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((d - epoch).num_days()).ok()
}

/// Type directories of `source` in id order; names that are not ids are an error.
fn type_dirs(source: &Path) -> Result<Vec<u32>> {
    let dir = source.join(OBJECTS_DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| EngineError::io(&dir, e))? {
        let p = e.map_err(|e| EngineError::io(&dir, e))?.path();
        if !p.is_dir() {
            continue;
        }
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let id = name.parse::<u32>().map_err(|_| {
            EngineError::corrupt(
                &p,
                "directories under vegobjekter/ must be named by type id",
            )
        })?;
        out.push(id);
    }
    out.sort_unstable();
    Ok(out)
}

/// Import `source` (a directory in the layout of `source`) and publish it as the next
/// generation of `data`.
pub fn import_dir(
    source: &Path,
    data: &DataDir,
    types: &TypeSelection,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Summary> {
    let started = Instant::now();
    if !source.is_dir() {
        return Err(EngineError::input(format!(
            "--source {} is not a directory",
            source.display()
        )));
    }
    let catalog = Catalog::embedded();
    let mut summary = Summary::default();
    let present = type_dirs(source)?;
    let wanted: Vec<u32> = match types {
        TypeSelection::AllKnown => present.clone(),
        TypeSelection::Only(ids) => ids.clone(),
    };
    for t in &wanted {
        if !present.contains(t) {
            summary.skip(format!(
                "type {t}: no vegobjekter/{t}/ directory in the source"
            ));
        }
    }

    // 1. road references from 915 and 916 (always read; imported as objects when selected)
    let (refs, road_objects) = road_references(source, catalog, &wanted, &mut summary)?;
    progress("vegsystem");
    let mut phase = Instant::now();
    summary
        .phases
        .push(("road system".into(), started.elapsed().as_secs_f64()));

    // 2. the network
    let net = import_network(source, &refs, &mut summary)?;
    progress("network");
    summary
        .phases
        .push(("network".into(), phase.elapsed().as_secs_f64()));
    phase = Instant::now();

    // 3. objects, type by type
    let read = TypeSource {
        source,
        catalog,
        on: objects::OnNetwork {
            current: &net.sequences,
            any: &net.any_sequences,
        },
        road_objects,
    };
    let (tables, history) = read.tables(&wanted, &present, &mut summary, progress)?;
    summary
        .phases
        .push(("objects".into(), phase.elapsed().as_secs_f64()));
    phase = Instant::now();

    // 4. publish like `generate`
    let id = publish(source, data, catalog, &net, &tables, &history)?;
    summary
        .phases
        .push(("publish".into(), phase.elapsed().as_secs_f64()));
    summary.generation = id;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Step 1: the road references of the 915 Vegsystem and 916 Strekning objects, and those
/// objects of the two types that are `wanted` (imported in step 3).
fn road_references(
    source: &Path,
    catalog: &Catalog,
    wanted: &[u32],
    summary: &mut Summary,
) -> Result<(RoadRefs, BTreeMap<u32, Vec<RoadObject>>)> {
    let mut refs = RoadRefs::default();
    let mut road_objects: BTreeMap<u32, Vec<RoadObject>> = BTreeMap::new();
    let objects_dir = source.join(OBJECTS_DIR);
    // the newest version of each object gives the road references (a paged source holds the
    // older versions too): a type imported is held anyway, the other one is read twice
    let mut add = |o: &RoadObject, newest: &HashMap<u64, u32>, summary: &mut Summary| {
        if newest.get(&o.id) != Some(&o.versjon) {
            return;
        }
        if o.type_id == VEGSYSTEM {
            refs.add(catalog, o, summary);
        } else if o.type_id == STREKNING {
            refs.add_section(catalog, o, summary);
        } else if o.type_id == SIDEANLEGGSDEL {
            refs.add_side_facility(catalog, o, summary);
        }
    };
    let note = |newest: &mut HashMap<u64, u32>, o: &RoadObject| {
        let v = newest.entry(o.id).or_insert(o.versjon);
        *v = (*v).max(o.versjon);
    };
    // 920 Sideanleggsdel marks side facilities where the source holds it
    for t in [VEGSYSTEM, STREKNING, SIDEANLEGGSDEL] {
        let dir = objects_dir.join(t.to_string());
        let mut newest: HashMap<u64, u32> = HashMap::new();
        if wanted.contains(&t) {
            let mut all: Vec<RoadObject> = Vec::new();
            source::for_each_batch(&dir, |batch: Vec<RoadObject>| {
                all.extend(batch);
                Ok(())
            })?;
            all.iter().for_each(|o| note(&mut newest, o));
            all.iter().for_each(|o| add(o, &newest, summary));
            if !all.is_empty() {
                road_objects.insert(t, all);
            }
            continue;
        }
        source::for_each_batch(&dir, |batch: Vec<RoadObject>| {
            batch.iter().for_each(|o| note(&mut newest, o));
            Ok(())
        })?;
        source::for_each_batch(&dir, |batch: Vec<RoadObject>| {
            batch.iter().for_each(|o| add(o, &newest, summary));
            Ok(())
        })?;
    }
    Ok((refs, road_objects))
}

/// Step 2: the sequences mapped to network rows: the current network, its history and the
/// ids of their sequences.
fn import_network(source: &Path, refs: &RoadRefs, summary: &mut Summary) -> Result<network::Built> {
    let areas = Areas::embedded();
    let mut builder = network::NetworkBuilder::default();
    source::for_each_batch(&source.join(SEQUENCES_DIR), |batch: Vec<Sequence>| {
        builder.add_batch(&batch, refs, areas, summary);
        Ok(())
    })?;
    let built = builder.finish(refs, summary);
    summary.segments = built.network.len();
    if built.network.is_empty() {
        return Err(EngineError::input(format!(
            "{} gave no network rows (need {SEQUENCES_DIR}/ and 915 Vegsystem objects on them)",
            source.display()
        )));
    }
    Ok(built)
}

/// Where step 3 reads each type's objects from.
struct TypeSource<'a> {
    source: &'a Path,
    catalog: &'static Catalog,
    /// The sequences of the network and its history (placements elsewhere are dropped).
    on: objects::OnNetwork<'a>,
    /// The 915/916 objects read in step 1.
    road_objects: BTreeMap<u32, Vec<RoadObject>>,
}

impl TypeSource<'_> {
    /// Step 3: the current and history tables of the `wanted` types the source has, type by
    /// type (empty ones left out).
    #[allow(clippy::type_complexity)]
    fn tables(
        mut self,
        wanted: &[u32],
        present: &[u32],
        summary: &mut Summary,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<(BTreeMap<u32, ObjectTable>, BTreeMap<u32, ObjectTable>)> {
        let mut tables: BTreeMap<u32, ObjectTable> = BTreeMap::new();
        let mut history: BTreeMap<u32, ObjectTable> = BTreeMap::new();
        for &t in wanted {
            if !present.contains(&t) {
                continue;
            }
            let Some(both) = self.table(t, summary)? else {
                continue;
            };
            if !both.current.is_empty() {
                tables.insert(t, both.current);
            }
            if !both.history.is_empty() {
                history.insert(t, both.history);
            }
            progress(&format!("type {t}"));
        }
        Ok((tables, history))
    }

    /// The tables of type `t` (None when the catalogue does not know the type: its objects
    /// are counted and skipped).
    fn table(&mut self, t: u32, summary: &mut Summary) -> Result<Option<objects::Tables>> {
        let dir = self.source.join(OBJECTS_DIR).join(t.to_string());
        let Some(ty) = self.catalog.object_type(t) else {
            let mut n = 0usize;
            source::for_each_record(&dir, |_: serde_json::Value| {
                n += 1;
                Ok(())
            })?;
            summary.objects_read.insert(t, n);
            for _ in 0..n {
                summary.skip(format!("type {t}: object type not in the catalogue"));
            }
            return Ok(None);
        };
        let mut tb = objects::TypeBuilder::new(ty);
        let on = self.on;
        let mut add = |batch: Vec<RoadObject>, summary: &mut Summary| {
            *summary.objects_read.entry(t).or_default() += batch.len();
            let (mine, other): (Vec<RoadObject>, Vec<RoadObject>) =
                batch.into_iter().partition(|o| o.type_id == t);
            for o in other {
                summary.skip(format!(
                    "type {t}: object of type {} in this type's directory",
                    o.type_id
                ));
            }
            tb.add_batch(mine, on, summary);
        };
        if let Some(objs) = self.road_objects.remove(&t) {
            add(objs, summary);
        } else {
            source::for_each_batch(&dir, |batch: Vec<RoadObject>| {
                add(batch, summary);
                Ok(())
            })?;
        }
        Ok(Some(tb.finish(summary)))
    }
}

/// Step 4: publish the network, tables and their history as the next generation of `data`;
/// its id.
fn publish(
    source: &Path,
    data: &DataDir,
    catalog: &Catalog,
    net: &network::Built,
    tables: &BTreeMap<u32, ObjectTable>,
    history: &BTreeMap<u32, ObjectTable>,
) -> Result<u64> {
    let mut builder = GenerationBuilder::fresh(data, catalog, Areas::embedded())?;
    builder.write_tables(
        &net.network,
        tables.values(),
        Some(&DeletedTable::default()),
    )?;
    builder.write_history(&net.network, &net.history, history.values())?;
    let description = Description {
        origin: format!("vegdb import --source {}", source.display()),
        provenance: Provenance::new(MadeBy::Imported, Some(source.display().to_string())),
        // the network's reference types are followed even when none is held yet (a first
        // 920 Sideanleggsdel upstream marks its sequences on the next refresh)
        last_event_ids: events::last_event_ids(
            source,
            &tables
                .keys()
                .copied()
                .chain([VEGSYSTEM, STREKNING, SIDEANLEGGSDEL])
                .collect::<BTreeSet<u32>>()
                .into_iter()
                .collect::<Vec<_>>(),
        )?,
        ..Description::default()
    };
    Ok(builder.publish(data, description)?.id)
}
