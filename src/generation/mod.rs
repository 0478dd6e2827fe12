//! A loaded generation: columns + indexes, immutable once built. The server holds one in an
//! `ArcSwap`; a request takes it once and never mixes generations. This module sits above the
//! storage (`snapshot`) and the indexes (`index`) it assembles; the queries over it (`query`)
//! are its methods, defined one layer up. `check.rs` verifies a generation on disk, `upgrade.rs`
//! rewrites one in the current format.

pub mod check;
pub mod day_rows;
pub mod feature;
pub mod polygons;
pub mod rows;
pub mod spatial;
pub mod successor;
pub mod time;
pub mod upgrade;

/// The embedded demo generation, loaded once for the unit tests that read it.
#[cfg(test)]
pub(crate) fn demo_for_tests() -> &'static Generation {
    static G: std::sync::OnceLock<Generation> = std::sync::OnceLock::new();
    G.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
        let current = std::fs::read_to_string(root.join("CURRENT")).expect("demo CURRENT");
        let id: u64 = current.trim().parse().expect("id");
        let dir = root.join(format!("gen-{id:06}"));
        Generation::load(&dir, &|_| {}).expect("the demo loads").0
    })
}

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::area::{AreaKind, Areas};
use crate::catalog::Catalog;
use crate::error::{EngineError, Result};
use crate::index::area_values::AreaValueRuns;
use crate::index::bitmaps::{RowChanges, TypeIndex};
use crate::index::graph::RouteGraph;
use crate::index::network::NetworkIndexes;
use crate::index::rtree::NetworkIndex;
use crate::snapshot::columns::{DeletedTable, ObjectTable, RoadNetwork};
use crate::snapshot::manifest::Manifest;
use crate::snapshot::parquet_read::{
    read_deleted, read_network, read_network_history, read_objects,
};
use crate::snapshot::parquet_write::{
    history_type_of, DELETED_FILE, NETWORK_FILE, NETWORK_HISTORY_FILE,
};
use crate::util::lazy::Lazy;

/// Objects of one type with their bitmap index (and their spatial index, built on first use).
/// A loaded or derived generation has both from the start; a day's view (`time`) makes them
/// on first use, so a question about one type at a past day builds that type only.
#[derive(Debug)]
pub struct TypeData {
    pub table: Lazy<ObjectTable>,
    index: IndexCell,
    spatial: std::sync::OnceLock<Arc<spatial::ObjectIndex>>,
    pieces: std::sync::OnceLock<Arc<crate::index::pieces::ObjectPieces>>,
    link_placements: std::sync::OnceLock<Arc<crate::index::pieces::LinkPlacements>>,
    /// Per area kind of [`RUN_KINDS`], the objects' runs (`index::pieces::AreaRuns`).
    area_runs: [std::sync::OnceLock<Arc<crate::index::pieces::AreaRuns>>; RUN_KINDS.len()],
    /// Per enumerated property asked for, each object's value as its rank ([`enum_ranks`]).
    enum_ranks: std::sync::Mutex<crate::util::FastMap<u32, Arc<Vec<u16>>>>,
    /// Per area kind of [`RUN_KINDS`] and enumerated property asked for together, the runs'
    /// entries by area and value ([`Self::area_values`]).
    area_values: std::sync::Mutex<crate::util::FastMap<(usize, u32), Arc<AreaValueRuns>>>,
}

/// The most (area kind, property) pairs a type keeps a clustered index of
/// ([`TypeData::area_values`]); a grouping past them takes the pass over the entries.
pub const MAX_AREA_VALUES: usize = 8;

/// The rank of an object without a value in [`TypeData::enum_ranks`]; a value that is no
/// allowed value of the property is [`RANK_OFF`].
pub const RANK_NONE: u16 = u16::MAX;
pub const RANK_OFF: u16 = u16::MAX - 1;

/// The area kinds a network row has exactly one code of, whose runs a type keeps on demand.
pub const RUN_KINDS: [AreaKind; 4] = [
    AreaKind::Municipality,
    AreaKind::County,
    AreaKind::Region,
    AreaKind::RoadDepartment,
];

/// A type's bitmap index: there from the start (read with one match, no atomic: the hot
/// statistics read it per request), or made on first use from the table and a source.
#[derive(Debug)]
enum IndexCell {
    Ready(TypeIndex),
    Later(std::sync::OnceLock<TypeIndex>, IndexSource),
}

/// What a type's bitmap index is built from besides its table: the network that locates its
/// objects (a view's network of its day) and the areas.
pub struct IndexSource {
    pub network: Arc<RoadNetwork>,
    pub catalog: &'static Catalog,
    pub areas: &'static Areas,
}

impl std::fmt::Debug for IndexSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexSource({} network rows)", self.network.len())
    }
}

impl TypeData {
    pub fn new(table: ObjectTable, index: TypeIndex) -> TypeData {
        TypeData {
            table: Lazy::ready(table),
            index: IndexCell::Ready(index),
            spatial: std::sync::OnceLock::new(),
            pieces: std::sync::OnceLock::new(),
            link_placements: std::sync::OnceLock::new(),
            area_runs: Default::default(),
            enum_ranks: Default::default(),
            area_values: Default::default(),
        }
    }

    /// A type whose table and index are made on first use: the table by `table`, the index
    /// from that table and `index_from`.
    pub fn later(table: Lazy<ObjectTable>, index_from: IndexSource) -> TypeData {
        TypeData {
            table,
            index: IndexCell::Later(std::sync::OnceLock::new(), index_from),
            spatial: std::sync::OnceLock::new(),
            pieces: std::sync::OnceLock::new(),
            link_placements: std::sync::OnceLock::new(),
            area_runs: Default::default(),
            enum_ranks: Default::default(),
            area_values: Default::default(),
        }
    }

    /// The objects' bitmap index (built on first use in a day's view).
    #[inline]
    pub fn index(&self) -> &TypeIndex {
        match &self.index {
            IndexCell::Ready(index) => index,
            IndexCell::Later(cell, s) => cell.get_or_init(|| {
                TypeIndex::build(
                    &self.table,
                    s.catalog.object_type(self.table.type_id),
                    &s.network,
                    s.areas,
                )
            }),
        }
    }

    /// Whether the bitmap index exists already.
    pub fn index_is_made(&self) -> bool {
        match &self.index {
            IndexCell::Ready(_) => true,
            IndexCell::Later(cell, _) => cell.get().is_some(),
        }
    }

    /// The objects by the box of their geometry, built on the first call; `g` is the
    /// generation this type belongs to (its network locates the objects).
    pub fn object_index(&self, g: &Generation) -> Arc<spatial::ObjectIndex> {
        self.spatial
            .get_or_init(|| Arc::new(spatial::ObjectIndex::build(g, self)))
            .clone()
    }

    /// Each object's network rows and lengths on them (`index::pieces`), built on the first
    /// call from `g`'s network (the generation this type belongs to).
    pub fn pieces(&self, g: &Generation) -> Arc<crate::index::pieces::ObjectPieces> {
        self.pieces
            .get_or_init(|| {
                Arc::new(crate::index::pieces::ObjectPieces::build(
                    &self.table,
                    &g.network,
                ))
            })
            .clone()
    }

    /// The type's stretch placements ordered by link (`index::pieces::LinkPlacements`), built
    /// on the first call (the overlay of `/vegnett/segmentert` reads them link by link).
    pub fn link_placements(&self) -> Arc<crate::index::pieces::LinkPlacements> {
        self.link_placements
            .get_or_init(|| Arc::new(crate::index::pieces::LinkPlacements::build(&self.table)))
            .clone()
    }

    /// Each object's value of enumerated property `property` as its rank among the property's
    /// allowed value ids in ascending order ([`RANK_NONE`] without a value, [`RANK_OFF`] for a
    /// value off that list), made on the first call for the property; None when the type has
    /// no such column or the property is not enumerated (or has too many values).
    pub fn enum_ranks(&self, catalog: &Catalog, property: u32) -> Option<Arc<Vec<u16>>> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::Int64Type;
        use arrow_array::Array;
        let mut cache = self.enum_ranks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ranks) = cache.get(&property) {
            return Some(ranks.clone());
        }
        let mut ids: Vec<u32> = catalog
            .object_type(self.table.type_id)?
            .property(property)?
            .allowed_values
            .as_ref()?
            .iter()
            .map(|v| v.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() >= RANK_OFF as usize {
            return None;
        }
        let col = self
            .table
            .property(property)?
            .values
            .as_primitive_opt::<Int64Type>()?;
        let ranks: Vec<u16> = (0..col.len())
            .map(|r| {
                if col.is_null(r) {
                    return RANK_NONE;
                }
                u32::try_from(col.value(r))
                    .ok()
                    .and_then(|v| ids.binary_search(&v).ok())
                    .map_or(RANK_OFF, |i| i as u16)
            })
            .collect();
        let ranks = Arc::new(ranks);
        cache.insert(property, ranks.clone());
        Some(ranks)
    }

    /// The entries of `kind`'s runs ([`Self::area_runs`]) ordered by area, then by the value
    /// of enumerated property `property` ([`Self::enum_ranks`]): `index::area_values`, built
    /// on the first call for the pair (12 bytes per entry) and kept with the type's data, at
    /// most [`MAX_AREA_VALUES`] pairs per type (memory a client asking every pair would
    /// otherwise grow). None where either gives none, or the type keeps as many already.
    pub fn area_values(
        &self,
        g: &Generation,
        kind: AreaKind,
        property: u32,
    ) -> Option<Arc<AreaValueRuns>> {
        let i = RUN_KINDS.iter().position(|&k| k == kind)?;
        let mut cache = self.area_values.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(&(i, property)) {
            return Some(c.clone());
        }
        if cache.len() >= MAX_AREA_VALUES {
            return None;
        }
        let runs = self.area_runs(g, kind)?;
        let ranks = self.enum_ranks(g.catalog, property)?;
        let c = Arc::new(AreaValueRuns::build(&runs, |o| ranks[o]));
        cache.insert((i, property), c.clone());
        Some(c)
    }

    /// Each object's areas of `kind` with its length inside each (`index::pieces::AreaRuns`),
    /// built on the first call from the pieces; None for a kind not in [`RUN_KINDS`].
    pub fn area_runs(
        &self,
        g: &Generation,
        kind: AreaKind,
    ) -> Option<Arc<crate::index::pieces::AreaRuns>> {
        let i = RUN_KINDS.iter().position(|&k| k == kind)?;
        Some(
            self.area_runs[i]
                .get_or_init(|| {
                    let pieces = self.pieces(g);
                    let n = &g.network;
                    let objects = self.table.len();
                    let runs = |f: &dyn Fn(usize) -> u32| {
                        crate::index::pieces::AreaRuns::build(&pieces, objects, f)
                    };
                    Arc::new(match kind {
                        AreaKind::Municipality => runs(&|r| n.municipality[r] as u32),
                        AreaKind::County => runs(&|r| n.county[r] as u32),
                        AreaKind::Region => runs(&|r| n.region[r] as u32),
                        _ => runs(&|r| n.road_department[r] as u32),
                    })
                })
                .clone(),
        )
    }
}

/// The routing graph of `network`, made on first use (its contraction hierarchy then on a
/// thread of its own).
pub fn route_graph_of(network: &Arc<RoadNetwork>) -> Arc<Lazy<RouteGraph>> {
    let n = network.clone();
    Arc::new(Lazy::later(move || RouteGraph::build_in_background(&n)))
}

#[derive(Debug)]
pub struct Generation {
    pub id: u64,
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub catalog: &'static Catalog,
    pub areas: &'static Areas,
    /// The road network and its indexes never change through the write path, so generations
    /// derived by changesets share them.
    pub network: Arc<RoadNetwork>,
    /// Made on first use in a day's view (`time`); ready in every other generation.
    pub network_index: Lazy<Arc<NetworkIndex>>,
    pub network_indexes: Lazy<Arc<NetworkIndexes>>,
    /// The network as a routing graph (`index::graph`), made on the first route question and
    /// shared by every generation on the same network.
    pub route_graph: Arc<Lazy<RouteGraph>>,
    /// Per type; a derived generation shares the types a changeset did not touch.
    pub objects: BTreeMap<u32, Arc<TypeData>>,
    pub deleted: Arc<DeletedTable>,
    /// Per type, the versions that are no longer current (older versions, and the last
    /// version of closed objects), in (id, version) order; a type without any is absent.
    pub history: BTreeMap<u32, Arc<ObjectTable>>,
    /// The network's closed rows (each with its `end_date`), in link order.
    pub network_history: Arc<RoadNetwork>,
    /// The generation as it was on past dates, built on first use (`time`).
    pub views: time::Views,
    /// In a day's view whose network differs from today's: its rows as the generation's
    /// current and closed rows, so nearest questions use today's indexes (`day_rows`).
    pub day_rows: Option<Arc<day_rows::DayRows>>,
    /// child object id -> (parent type, parent id)
    pub parents: Lazy<Arc<HashMap<u64, (u32, u64)>>>,
    /// The polygons of `polygon=` filters prepared for this generation's requests
    /// ([`polygons::PolygonCache`]).
    pub polygons: polygons::PolygonCache,
    /// Smallest id never used by any object of this generation (current or deleted).
    pub next_object_id: u64,
    /// Milliseconds the last complete [`Generation::load`] behind this generation took: its
    /// own, or (derived generations) its ancestor's. The metrics registry reads the served
    /// one's.
    pub last_load_ms: u64,
}

/// Timings of a load, for logs and benchmarks.
#[derive(Debug, Default, Clone)]
pub struct LoadStats {
    pub read_ms: u128,
    pub index_ms: u128,
    pub rows_network: usize,
    pub rows_objects: usize,
}

impl Generation {
    /// Load the generation in `dir` (a `gen-NNNNNN` directory). `progress` is told about each
    /// finished step.
    pub fn load(dir: &Path, progress: &(dyn Fn(&str) + Sync)) -> Result<(Generation, LoadStats)> {
        let started = Instant::now();
        let manifest = Manifest::read(dir)?;
        let catalog = Catalog::embedded();
        let areas = Areas::embedded();
        successor::check_sizes(dir, &manifest)?;
        // (type, first id, path): one file per type, or chunks that concatenate in id order
        let mut object_files: Vec<(u32, u64, PathBuf)> = manifest
            .files
            .iter()
            .filter_map(|f| Some((f.type_id?, f.first_id.unwrap_or(0), dir.join(&f.path))))
            .collect();
        object_files.sort_by_key(|f| (f.0, f.1));
        let (network, tables) = rayon::join(
            || read_network(&dir.join(NETWORK_FILE)),
            || -> Result<Vec<ObjectTable>> {
                let parts = object_files
                    .par_iter()
                    .map(|(t, _, p)| read_objects(p, *t))
                    .collect::<Result<Vec<_>>>()?;
                let mut by_type: BTreeMap<u32, Vec<ObjectTable>> = BTreeMap::new();
                for part in parts {
                    by_type.entry(part.type_id).or_default().push(part);
                }
                by_type
                    .into_par_iter()
                    .map(|(t, parts)| {
                        ObjectTable::concat(t, parts).map_err(|e| EngineError::corrupt(dir, e))
                    })
                    .collect()
            },
        );
        let network = network?;
        let tables = tables?;
        let (history, network_history) = read_history(dir, &manifest)?;
        let deleted_path = dir.join(DELETED_FILE);
        let deleted = if deleted_path.exists() {
            read_deleted(&deleted_path)?
        } else {
            DeletedTable::default()
        };
        let read_ms = started.elapsed().as_millis();
        progress("read");
        let index_started = Instant::now();
        let ((network_index, network_indexes), typed) = rayon::join(
            || {
                rayon::join(
                    || NetworkIndex::build(&network),
                    || NetworkIndexes::build(&network),
                )
            },
            || {
                tables
                    .into_par_iter()
                    .map(|table| {
                        let index = TypeIndex::build(
                            &table,
                            catalog.object_type(table.type_id),
                            &network,
                            areas,
                        );
                        (table.type_id, Arc::new(TypeData::new(table, index)))
                    })
                    .collect::<Vec<_>>()
            },
        );
        let mut parents = HashMap::new();
        for (_, d) in &typed {
            for row in 0..d.table.len() {
                for c in d.table.children(row) {
                    parents.insert(d.table.child_id[c], (d.table.type_id, d.table.id[row]));
                }
            }
        }
        progress("indexed");
        let stats = LoadStats {
            read_ms,
            index_ms: index_started.elapsed().as_millis(),
            rows_network: network.len(),
            rows_objects: typed.iter().map(|(_, d)| d.table.len()).sum(),
        };
        let objects: BTreeMap<u32, Arc<TypeData>> = typed.into_iter().collect();
        let next_object_id = next_free_id(&objects, &deleted);
        let network = Arc::new(network);
        let last_load_ms = started.elapsed().as_millis() as u64;
        Ok((
            Generation {
                id: manifest.generation,
                dir: dir.to_path_buf(),
                manifest,
                catalog,
                areas,
                route_graph: route_graph_of(&network),
                network,
                network_index: Lazy::ready(Arc::new(network_index)),
                network_indexes: Lazy::ready(Arc::new(network_indexes)),
                objects,
                deleted: Arc::new(deleted),
                history,
                network_history: Arc::new(network_history),
                views: time::Views::default(),
                day_rows: None,
                parents: Lazy::ready(Arc::new(parents)),
                next_object_id,
                polygons: Default::default(),
                last_load_ms,
            },
            stats,
        ))
    }

    pub fn object_count(&self) -> usize {
        self.objects.values().map(|d| d.table.len()).sum()
    }

    /// Find an object by id in any type: (type id, row).
    pub fn find_object(&self, id: crate::ids::ObjectId) -> Option<(crate::ids::TypeId, usize)> {
        self.objects
            .iter()
            .find_map(|(&t, d)| d.table.row_of(id.0).map(|r| (crate::ids::TypeId(t), r)))
    }
}

/// The history files `manifest` lists (format version 4; none in older generations): each
/// type's closed versions and the network's closed rows.
pub fn read_history(
    dir: &Path,
    manifest: &Manifest,
) -> Result<(BTreeMap<u32, Arc<ObjectTable>>, RoadNetwork)> {
    let files: Vec<(u32, PathBuf)> = manifest
        .files
        .iter()
        .filter_map(|f| Some((history_type_of(&f.path)?, dir.join(&f.path))))
        .collect();
    let tables = files
        .par_iter()
        .map(|(t, p)| {
            Ok((
                *t,
                Arc::new(crate::snapshot::parquet_read::read_history_objects(p, *t)?),
            ))
        })
        .collect::<Result<BTreeMap<_, _>>>()?;
    let network = if manifest
        .files
        .iter()
        .any(|f| f.path == NETWORK_HISTORY_FILE)
    {
        read_network_history(&dir.join(NETWORK_HISTORY_FILE))?
    } else {
        RoadNetwork::default()
    };
    Ok((tables, network))
}

fn next_free_id(objects: &BTreeMap<u32, Arc<TypeData>>, deleted: &DeletedTable) -> u64 {
    let live = objects
        .values()
        .filter_map(|d| d.table.id.last().copied())
        .max()
        .unwrap_or(0);
    let gone = deleted.id.iter().copied().max().unwrap_or(0);
    live.max(gone) + 1
}

/// The current generation, swapped atomically when a new one is published. Readers call
/// `current()` (or `pin()`) once per request.
pub struct GenerationStore {
    current: arc_swap::ArcSwap<Generation>,
}

impl GenerationStore {
    pub fn new(g: Generation) -> Self {
        GenerationStore {
            current: arc_swap::ArcSwap::from_pointee(g),
        }
    }
    pub fn current(&self) -> std::sync::Arc<Generation> {
        self.current.load_full()
    }
    /// The current generation for a short synchronous read (a `/posisjon` or `/veg` answer):
    /// held through arc-swap's per-thread slots instead of a new reference, so the request
    /// writes nothing that the other worker threads' requests write too (the shared reference
    /// count was a cache line taken from the other core twice per request). Keep it
    /// for the answer only; what outlives the call takes `current()`.
    pub fn pin(&self) -> arc_swap::Guard<std::sync::Arc<Generation>> {
        self.current.load()
    }
    /// The id of the current generation, without taking a reference to it.
    pub fn current_id(&self) -> u64 {
        self.current.load().id
    }
    pub fn swap(&self, g: Generation) {
        self.current.store(std::sync::Arc::new(g));
    }
}

impl Generation {
    /// This generation as the parent (or source) of one being built.
    pub fn as_parent(&self) -> crate::snapshot::builder::Parent<'_> {
        crate::snapshot::builder::Parent {
            id: self.id,
            dir: &self.dir,
            manifest: &self.manifest,
            network: &self.network,
            catalog: self.catalog,
            areas: self.areas,
        }
    }

    /// A new generation that replaces the tables of some types (and possibly the deleted list,
    /// some types' history and the parents map) and shares everything else with `self`. Only
    /// the replaced types are re-indexed.
    pub fn derive(
        &self,
        dir: PathBuf,
        manifest: Manifest,
        tables: BTreeMap<u32, (ObjectTable, Option<RowChanges>)>,
        deleted: Option<DeletedTable>,
        history: BTreeMap<u32, ObjectTable>,
        parents: Arc<HashMap<u64, (u32, u64)>>,
    ) -> Generation {
        let network = &self.network;
        let (catalog, areas) = (self.catalog, self.areas);
        let rebuilt: Vec<(u32, Arc<TypeData>)> = tables
            .into_par_iter()
            .map(|(t, (table, changes))| {
                let object_type = catalog.object_type(t);
                // rows kept in place: update the parent's index; otherwise build anew
                let index = match (self.objects.get(&t), changes) {
                    (Some(old), Some(changes)) => old.index().update(
                        &old.table,
                        &table,
                        &changes,
                        object_type,
                        network,
                        areas,
                    ),
                    _ => TypeIndex::build(&table, object_type, network, areas),
                };
                (t, Arc::new(TypeData::new(table, index)))
            })
            .collect();
        let mut objects = self.objects.clone();
        for (t, d) in rebuilt {
            if d.table.is_empty() {
                objects.remove(&t);
            } else {
                objects.insert(t, d);
            }
        }
        let deleted = deleted
            .map(Arc::new)
            .unwrap_or_else(|| self.deleted.clone());
        let next_object_id = next_free_id(&objects, &deleted).max(self.next_object_id);
        let mut kept_history = self.history.clone();
        for (t, table) in history {
            if table.is_empty() {
                kept_history.remove(&t);
            } else {
                kept_history.insert(t, Arc::new(table));
            }
        }
        Generation {
            id: manifest.generation,
            dir,
            manifest,
            catalog,
            areas,
            network: self.network.clone(),
            network_index: Lazy::ready(Arc::clone(&self.network_index)),
            network_indexes: Lazy::ready(Arc::clone(&self.network_indexes)),
            route_graph: self.route_graph.clone(),
            objects,
            deleted,
            history: kept_history,
            network_history: self.network_history.clone(),
            views: time::Views::default(),
            day_rows: None,
            parents: Lazy::ready(parents),
            next_object_id,
            polygons: Default::default(),
            last_load_ms: self.last_load_ms,
        }
    }
}
