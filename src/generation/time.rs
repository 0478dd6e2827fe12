//! The road as it was on a past day: a generation's view at a date, built from its current
//! tables and its history and kept for the next question about the same day.
//!
//! A version (of an object, or a road link row) is valid at day `t` when
//! `start_date <= t < end_date` (an open end never ends). The view at `t` is a [`Generation`]
//! of its own holding exactly the versions valid at `t`: per type, the current rows valid then
//! and the closed versions valid then, in id order (an object has at most one version valid
//! on a day); the network's current rows that had started and its closed rows valid then. Its
//! indexes are built as a load builds them, so every query answers a past day exactly as it
//! answers today, with the same code and at the same speed once the view exists.
//!
//! What a view costs: making it merges the network's rows valid that day (shared with today
//! when none differs) and counts each type's valid rows; everything else is made on first
//! use ([`Lazy`]): a type's table (its valid rows, cut from the current and closed tables)
//! and bitmap index when a request first reads that type, the network's R-tree and
//! reference indexes when a request first reads them, the parents map when an answer first
//! names a parent. Nearest-position questions use today's indexes and the closed rows'
//! instead of the view's own ([`super::day_rows`]). A type whose every current row had started and none of whose closed
//! versions was valid that day is today's, shared, while the network is unchanged. So a
//! question about one type at a new day costs the network's merge and that type's build,
//! not every type's (BENCHMARKS.md, the road on a past day). A generation keeps the views of
//! its last [`VIEWS_KEPT`] days and makes one at a time; a day at or after today is today's
//! state (the generation itself). The views die with their generation.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use super::day_rows::{DayRows, IndexedNetwork, NOT_THAT_DAY};
use super::{Generation, IndexSource, TypeData};
use crate::error::{EngineError, Result};
use crate::index::graph::RouteGraph;
use crate::index::network::NetworkIndexes;
use crate::index::rtree::NetworkIndex;
use crate::snapshot::columns::{Days, ObjectTable, RoadNetwork, OPEN_END};
use crate::util::lazy::Lazy;

/// Days whose views a generation keeps (the least recently asked is dropped first). A view
/// holds its day's network (about 180 MB on the national preset) and what its requests made:
/// 0.2 GB more for type 105, 0.45 GB for the network's R-tree, 2.5 GB if every type was read
/// (BENCHMARKS.md, the road on a past day), so two bound the extra memory.
pub const VIEWS_KEPT: usize = 2;

/// Whether a version from `start` to `end` (exclusive, `OPEN_END` = open) is valid at `day`.
#[inline]
pub fn valid_at(start: Days, end: Days, day: Days) -> bool {
    start <= day && (end == OPEN_END || day < end)
}

/// Today as days since 1970 (UTC).
pub fn today() -> Days {
    (chrono::Utc::now().timestamp().div_euclid(86_400)) as Days
}

/// A type's sources at a view's making: its current data and its closed versions.
type Sources = (Option<Arc<TypeData>>, Option<Arc<ObjectTable>>);

type Slot = Arc<OnceLock<std::result::Result<Arc<Generation>, String>>>;

/// The views of one generation at past days, most recently asked last.
#[derive(Debug, Default)]
pub struct Views {
    kept: Mutex<Vec<(Days, Slot)>>,
    /// Held while a view is built: one build at a time per generation, so requests for many
    /// new days at once take one view's memory and cores at a time, not one each.
    building: Mutex<()>,
    /// The generation with every version at once ([`Generation::every_version`]).
    every: OnceLock<Arc<Generation>>,
    /// The closed network rows with their nearest-position indexes, shared by the views
    /// ([`DayRows`]).
    closed: OnceLock<Arc<IndexedNetwork>>,
}

impl Views {
    /// The slot of `day` (made empty when new), the day moved to most recently asked.
    fn slot(&self, day: Days) -> Slot {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let slot = match kept.iter().position(|(d, _)| *d == day) {
            Some(i) => kept.remove(i).1,
            None => Slot::default(),
        };
        kept.push((day, slot.clone()));
        if kept.len() > VIEWS_KEPT {
            kept.remove(0);
        }
        slot
    }

    /// The closed rows of `g` (whose views these are) with their indexes, built on first use.
    fn closed_rows(&self, g: &Generation) -> Arc<IndexedNetwork> {
        self.closed
            .get_or_init(|| Arc::new(IndexedNetwork::build(g.network_history.clone())))
            .clone()
    }

    /// The view of `day` when it is built already.
    fn built(&self, day: Days) -> Option<Arc<Generation>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let (_, slot) = kept.iter().find(|(d, _)| *d == day)?;
        slot.get()?.as_ref().ok().cloned()
    }
}

impl Generation {
    /// Whether the answer at `day` is today's (`day` is today or later): then the generation
    /// itself answers.
    pub fn is_today(day: Days) -> bool {
        day >= today()
    }

    /// The view at `day` when it needs no building: None for today or later (the generation
    /// itself answers) and when the view is not built yet (`at` builds it).
    pub fn built_at(&self, day: Days) -> Option<Arc<Generation>> {
        self.views.built(day)
    }

    /// The generation as it was on `day` (before today; see the module doc): built on first
    /// use, which costs an index build of what differs, so callers on async workers run it
    /// as blocking work unless [`built_at`](Self::built_at) has it.
    pub fn at(&self, day: Days) -> Result<Arc<Generation>> {
        let slot = self.views.slot(day);
        slot.get_or_init(|| {
            let _one_at_a_time = self
                .views
                .building
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            view(self, day).map(Arc::new).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(EngineError::Internal)
    }

    /// Every version of every object at once, each type's in (id, version) order, on the
    /// network of every day (current and closed rows): what a question over a span of days
    /// (an OGC `datetime` interval with a box or a property filter) selects from, with the
    /// same code as a day's. Made on first use and kept with the generation; its parts are
    /// made on first use as a view's are. Where a link's closed and current rows overlap,
    /// an object there is located on both.
    pub fn every_version(&self) -> Arc<Generation> {
        self.views
            .every
            .get_or_init(|| Arc::new(every_version(self)))
            .clone()
    }

    /// Every version of object `id` of type `type_id`, oldest first: (table, row) in the
    /// history or the current table.
    pub fn versions(&self, type_id: u32, id: u64) -> Vec<(&ObjectTable, usize)> {
        let mut out = Vec::new();
        if let Some(h) = self.history.get(&type_id) {
            let start = h.id.partition_point(|&i| i < id);
            out.extend(
                (start..h.len())
                    .take_while(|&r| h.id[r] == id)
                    .map(|r| (&**h, r)),
            );
        }
        if let Some(d) = self.objects.get(&type_id) {
            if let Some(r) = d.table.row_of(id) {
                out.push((&d.table, r));
            }
        }
        out.sort_by_key(|(t, r)| t.version[*r]);
        out
    }
}

/// The rows of `n` valid at `day`.
fn network_rows(n: &RoadNetwork, day: Days) -> Vec<usize> {
    (0..n.len())
        .filter(|&r| valid_at(n.start_date[r], n.end_date[r], day))
        .collect()
}

/// The network at `day` (None: today's current rows, all of them, and nothing closed), with
/// the view's row of each current and each closed row.
fn network_at(g: &Generation, day: Days) -> Option<Merged> {
    let current = network_rows(&g.network, day);
    let closed = network_rows(&g.network_history, day);
    if current.len() == g.network.len() && closed.is_empty() {
        return None;
    }
    Some(merged_network(g, &current, &closed))
}

/// A merged network and the merged row of each source row (current, closed), or
/// `NOT_THAT_DAY` for the rows left out.
type Merged = (RoadNetwork, Vec<u32>, Vec<u32>);

/// Rows `current` of the current network and `closed` of the closed rows, merged in (link,
/// from) order (both are in that order), link-indexed.
fn merged_network(g: &Generation, current: &[usize], closed: &[usize]) -> Merged {
    let (a, b) = (&*g.network, &*g.network_history);
    let mut n = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    let mut of_current = vec![NOT_THAT_DAY; a.len()];
    let mut of_closed = vec![NOT_THAT_DAY; b.len()];
    let key_a = |r: usize| (a.link_id[r], a.from_pos[r]);
    let key_b = |r: usize| (b.link_id[r], b.from_pos[r]);
    let (mut i, mut j) = (0, 0);
    while i < current.len() || j < closed.len() {
        let take_a =
            j >= closed.len() || (i < current.len() && key_a(current[i]) <= key_b(closed[j]));
        // a run of consecutive source rows that all go next, appended at once
        let (rows, start) = if take_a { (current, i) } else { (closed, j) };
        let mut end = start + 1;
        while end < rows.len()
            && rows[end] == rows[end - 1] + 1
            && if take_a {
                j >= closed.len() || key_a(rows[end]) <= key_b(closed[j])
            } else {
                i >= current.len() || key_b(rows[end]) < key_a(current[i])
            }
        {
            end += 1;
        }
        let (map, src) = if take_a {
            (&mut of_current, a)
        } else {
            (&mut of_closed, b)
        };
        let first = n.len() as u32;
        for (k, &r) in rows[start..end].iter().enumerate() {
            map[r] = first + k as u32;
        }
        n.append_rows(src, rows[start]..rows[end - 1] + 1);
        if take_a {
            i = end;
        } else {
            j = end;
        }
    }
    n.build_link_index();
    (n, of_current, of_closed)
}

/// The rows of `t` valid at `day`.
fn valid_rows(t: &ObjectTable, day: Days) -> Vec<usize> {
    (0..t.len())
        .filter(|&r| valid_at(t.start_date[r], t.end_date[r], day))
        .collect()
}

/// How many rows of `t` are valid at `day`.
fn count_valid(t: &ObjectTable, day: Days) -> usize {
    (0..t.len())
        .filter(|&r| valid_at(t.start_date[r], t.end_date[r], day))
        .count()
}

/// Type `type_id` at `day`: the rows of `current` and `closed` valid then, in id order. Made
/// on first use by a view, so it cannot fail: the versions were checked when they were read,
/// and a table that cannot be cut (a fault of the program) is logged and answered empty. Two
/// versions of one object valid on one day (data that overlaps its own versions) keep the
/// later version.
fn table_at(
    type_id: u32,
    current: Option<&ObjectTable>,
    closed: Option<&ObjectTable>,
    day: Days,
) -> ObjectTable {
    let cut = || -> std::result::Result<ObjectTable, String> {
        let mut parts = Vec::new();
        for t in [current, closed].into_iter().flatten() {
            parts.push(t.take(&valid_rows(t, day)).map_err(|e| e.to_string())?);
        }
        let both = ObjectTable::concat_any_order(type_id, parts).map_err(|e| e.to_string())?;
        let mut order: Vec<usize> = (0..both.len()).collect();
        order.sort_unstable_by_key(|&r| (both.id[r], std::cmp::Reverse(both.version[r])));
        order.dedup_by_key(|r| both.id[*r]);
        both.take(&order).map_err(|e| e.to_string())
    };
    cut().unwrap_or_else(|e| {
        tracing::error!(type_id, day, error = %e, "a type's view of a past day could not be cut");
        ObjectTable::new(type_id)
    })
}

/// child id -> (parent type, parent id) over the versions valid at `day` (every version, in
/// (table, row) order, when `day` is None).
fn parents_at(tables: &[Sources], day: Option<Days>) -> HashMap<u64, (u32, u64)> {
    let mut parents = HashMap::new();
    for (current, closed) in tables {
        let current = current.as_ref().map(|d| &*d.table);
        for t in [current, closed.as_deref()].into_iter().flatten() {
            let rows = match day {
                Some(day) => valid_rows(t, day),
                None => (0..t.len()).collect(),
            };
            for row in rows {
                for c in t.children(row) {
                    parents.insert(t.child_id[c], (t.type_id, t.id[row]));
                }
            }
        }
    }
    parents
}

/// The generation `g` as it was on `day` (see the module doc).
fn view(g: &Generation, day: Days) -> Result<Generation> {
    let (network, day_rows) = match network_at(g, day) {
        Some((network, of_current, of_closed)) => {
            let rows = DayRows {
                current: IndexedNetwork {
                    network: g.network.clone(),
                    indexes: Arc::clone(&g.network_indexes),
                    tree: Arc::clone(&g.network_index),
                },
                closed: g.views.closed_rows(g),
                of_current,
                of_closed,
            };
            (Arc::new(network), Some(Arc::new(rows)))
        }
        None => (g.network.clone(), None),
    };
    let network_changed = day_rows.is_some();
    let (network_index, network_indexes) = if network_changed {
        let (a, b) = (network.clone(), network.clone());
        (
            Lazy::later(move || Arc::new(NetworkIndex::build(&a))),
            Lazy::later(move || Arc::new(NetworkIndexes::build(&b))),
        )
    } else {
        (
            Lazy::ready(Arc::clone(&g.network_index)),
            Lazy::ready(Arc::clone(&g.network_indexes)),
        )
    };
    let types: BTreeSet<u32> = g.objects.keys().chain(g.history.keys()).copied().collect();
    let sources: Vec<(u32, Sources)> = types
        .into_iter()
        .map(|t| (t, (g.objects.get(&t).cloned(), g.history.get(&t).cloned())))
        .collect();
    let objects: BTreeMap<u32, Arc<TypeData>> = sources
        .par_iter()
        .filter_map(|(t, (current, closed))| {
            let now = current.as_ref().map(|d| count_valid(&d.table, day));
            let old = closed.as_ref().map(|c| count_valid(c, day)).unwrap_or(0);
            let all_now = now.is_some() && now == current.as_ref().map(|d| d.table.len());
            if all_now && old == 0 && !network_changed {
                return Some((*t, current.clone()?));
            }
            if now.unwrap_or(0) + old == 0 {
                return None;
            }
            let (t, current, closed) = (*t, current.clone(), closed.clone());
            let table = Lazy::later(move || {
                table_at(
                    t,
                    current.as_ref().map(|d| &*d.table),
                    closed.as_deref(),
                    day,
                )
            });
            let source = IndexSource {
                network: network.clone(),
                catalog: g.catalog,
                areas: g.areas,
            };
            Some((t, Arc::new(TypeData::later(table, source))))
        })
        .collect();
    let tables: Vec<Sources> = sources.into_iter().map(|(_, s)| s).collect();
    let parents = Lazy::later(move || Arc::new(parents_at(&tables, Some(day))));
    let route_graph = if network_changed {
        super::route_graph_of(&network)
    } else {
        g.route_graph.clone()
    };
    let mut view = derived(
        g,
        (network, route_graph),
        (network_index, network_indexes),
        objects,
        parents,
    );
    view.day_rows = day_rows;
    Ok(view)
}

/// A generation made of `g`'s identity and the parts given (a view), with no history and no
/// views of its own.
fn derived(
    g: &Generation,
    (network, route_graph): (Arc<RoadNetwork>, Arc<Lazy<RouteGraph>>),
    (network_index, network_indexes): (Lazy<Arc<NetworkIndex>>, Lazy<Arc<NetworkIndexes>>),
    objects: BTreeMap<u32, Arc<TypeData>>,
    parents: Lazy<Arc<HashMap<u64, (u32, u64)>>>,
) -> Generation {
    Generation {
        id: g.id,
        dir: g.dir.clone(),
        manifest: g.manifest.clone(),
        catalog: g.catalog,
        areas: g.areas,
        network,
        network_index,
        network_indexes,
        route_graph,
        objects,
        deleted: g.deleted.clone(),
        history: BTreeMap::new(),
        network_history: Arc::new(RoadNetwork::default()),
        views: Views::default(),
        day_rows: None,
        parents,
        next_object_id: g.next_object_id,
        polygons: Default::default(),
        last_load_ms: g.last_load_ms,
    }
}

/// Every version of type `type_id` (current and closed), in (id, version) order; made on
/// first use, so a fault of the program in cutting is logged and answered empty.
fn all_versions(
    type_id: u32,
    current: Option<&ObjectTable>,
    closed: Option<&ObjectTable>,
) -> ObjectTable {
    let cut = || -> std::result::Result<ObjectTable, String> {
        let parts: Vec<ObjectTable> = [current, closed].into_iter().flatten().cloned().collect();
        let both = ObjectTable::concat_any_order(type_id, parts).map_err(|e| e.to_string())?;
        let mut order: Vec<usize> = (0..both.len()).collect();
        order.sort_unstable_by_key(|&r| (both.id[r], both.version[r]));
        both.take(&order).map_err(|e| e.to_string())
    };
    cut().unwrap_or_else(|e| {
        tracing::error!(type_id, error = %e, "a type's every version could not be gathered");
        ObjectTable::new(type_id)
    })
}

/// `g` with every version at once (see [`Generation::every_version`]).
fn every_version(g: &Generation) -> Generation {
    let all = |n: &RoadNetwork| (0..n.len()).collect::<Vec<usize>>();
    let network = Arc::new(merged_network(g, &all(&g.network), &all(&g.network_history)).0);
    let (a, b) = (network.clone(), network.clone());
    let indexes = (
        Lazy::later(move || Arc::new(NetworkIndex::build(&a))),
        Lazy::later(move || Arc::new(NetworkIndexes::build(&b))),
    );
    let types: BTreeSet<u32> = g.objects.keys().chain(g.history.keys()).copied().collect();
    let sources: Vec<(u32, Sources)> = types
        .into_iter()
        .map(|t| (t, (g.objects.get(&t).cloned(), g.history.get(&t).cloned())))
        .collect();
    let objects = sources
        .iter()
        .map(|(t, (current, closed))| {
            let (t, current, closed) = (*t, current.clone(), closed.clone());
            let table = Lazy::later(move || {
                all_versions(t, current.as_ref().map(|d| &*d.table), closed.as_deref())
            });
            let source = IndexSource {
                network: network.clone(),
                catalog: g.catalog,
                areas: g.areas,
            };
            (t, Arc::new(TypeData::later(table, source)))
        })
        .collect();
    let tables: Vec<Sources> = sources.into_iter().map(|(_, s)| s).collect();
    let parents = Lazy::later(move || Arc::new(parents_at(&tables, None)));
    let route_graph = super::route_graph_of(&network);
    derived(g, (network, route_graph), indexes, objects, parents)
}
