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
//! What a view costs: building it is an index build of what differs from today (a type whose
//! every current row had started and none of whose closed versions was valid on the day is
//! shared, as is the network when no row of it differs; a changed network rebuilds every
//! type's index, since an object's areas come from the network). A generation keeps the views
//! of its last [`VIEWS_KEPT`] days and builds one at a time; a day at or after today is
//! today's state (the generation itself). The views die with their generation.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use super::{Generation, TypeData};
use crate::error::{EngineError, Result};
use crate::index::bitmaps::TypeIndex;
use crate::index::network::NetworkIndexes;
use crate::index::rtree::NetworkIndex;
use crate::snapshot::columns::{Days, ObjectTable, RoadNetwork, OPEN_END};

/// Days whose views a generation keeps (the least recently asked is dropped first). A view
/// of the national preset whose network differs from today's holds its own indexes of every
/// type: about 2.5 GB (BENCHMARKS.md, the road on a past day), so two bound the extra memory.
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

type Slot = Arc<OnceLock<std::result::Result<Arc<Generation>, String>>>;

/// The views of one generation at past days, most recently asked last.
#[derive(Debug, Default)]
pub struct Views {
    kept: Mutex<Vec<(Days, Slot)>>,
    /// Held while a view is built: one build at a time per generation, so requests for many
    /// new days at once take one view's memory and cores at a time, not one each.
    building: Mutex<()>,
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

/// The network at `day` (None: today's current rows, all of them, and nothing closed).
fn network_at(g: &Generation, day: Days) -> Option<RoadNetwork> {
    let current = network_rows(&g.network, day);
    let closed = network_rows(&g.network_history, day);
    if current.len() == g.network.len() && closed.is_empty() {
        return None;
    }
    // both in (link, from) order: merged, rows of one source taken in runs
    let (a, b) = (&*g.network, &*g.network_history);
    let mut n = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    let (mut i, mut j) = (0, 0);
    while i < current.len() || j < closed.len() {
        let take_a = j >= closed.len()
            || (i < current.len()
                && (a.link_id[current[i]], a.from_pos[current[i]])
                    <= (b.link_id[closed[j]], b.from_pos[closed[j]]));
        if take_a {
            n.append_rows(a, current[i]..current[i] + 1);
            i += 1;
        } else {
            n.append_rows(b, closed[j]..closed[j] + 1);
            j += 1;
        }
    }
    n.build_link_index();
    Some(n)
}

/// Type `type_id` at `day`: its current rows and closed versions valid then, in id order
/// (None: its current table as it is, every row valid and no closed version).
fn table_at(g: &Generation, type_id: u32, day: Days) -> Result<Option<ObjectTable>> {
    let valid = |t: &ObjectTable| -> Vec<usize> {
        (0..t.len())
            .filter(|&r| valid_at(t.start_date[r], t.end_date[r], day))
            .collect()
    };
    let current = g.objects.get(&type_id).map(|d| &d.table);
    let closed = g.history.get(&type_id);
    let cur_rows = current.map(valid).unwrap_or_default();
    let old_rows = closed.map(|t| valid(t)).unwrap_or_default();
    if old_rows.is_empty() && current.is_some_and(|t| cur_rows.len() == t.len()) {
        return Ok(None);
    }
    let corrupt = |e| EngineError::Internal(format!("type {type_id} at day {day}: {e}"));
    let mut parts = Vec::new();
    if let Some(t) = current {
        parts.push(t.take(&cur_rows).map_err(corrupt)?);
    }
    if let Some(t) = closed {
        parts.push(t.take(&old_rows).map_err(corrupt)?);
    }
    // the current rows, then the closed ones: in id order once taken below
    let both = ObjectTable::concat_any_order(type_id, parts).map_err(corrupt)?;
    let mut order: Vec<usize> = (0..both.len()).collect();
    order.sort_unstable_by_key(|&r| both.id[r]);
    if order.windows(2).any(|w| both.id[w[0]] == both.id[w[1]]) {
        return Err(EngineError::Internal(format!(
            "type {type_id}: two versions of one object are valid at day {day}"
        )));
    }
    Ok(Some(both.take(&order).map_err(corrupt)?))
}

/// The generation `g` as it was on `day` (see the module doc).
fn view(g: &Generation, day: Days) -> Result<Generation> {
    let network = network_at(g, day);
    let network_changed = network.is_some();
    let (network, network_index, network_indexes) = match network {
        None => (
            g.network.clone(),
            g.network_index.clone(),
            g.network_indexes.clone(),
        ),
        Some(n) => {
            let (index, indexes) =
                rayon::join(|| NetworkIndex::build(&n), || NetworkIndexes::build(&n));
            (Arc::new(n), Arc::new(index), Arc::new(indexes))
        }
    };
    let types: BTreeSet<u32> = g.objects.keys().chain(g.history.keys()).copied().collect();
    let built: Vec<(u32, Option<Arc<TypeData>>)> = types
        .into_par_iter()
        .map(|t| {
            let table = match table_at(g, t, day)? {
                Some(table) => table,
                None if !network_changed => return Ok((t, g.objects.get(&t).cloned())),
                None => g.objects[&t].table.clone(),
            };
            if table.is_empty() {
                return Ok((t, None));
            }
            let index = TypeIndex::build(&table, g.catalog.object_type(t), &network, g.areas);
            Ok((t, Some(Arc::new(TypeData::new(table, index)))))
        })
        .collect::<Result<_>>()?;
    let objects: BTreeMap<u32, Arc<TypeData>> = built
        .into_iter()
        .filter_map(|(t, d)| Some((t, d?)))
        .collect();
    let mut parents = HashMap::new();
    for d in objects.values() {
        for row in 0..d.table.len() {
            for c in d.table.children(row) {
                parents.insert(d.table.child_id[c], (d.table.type_id, d.table.id[row]));
            }
        }
    }
    Ok(Generation {
        id: g.id,
        dir: g.dir.clone(),
        manifest: g.manifest.clone(),
        catalog: g.catalog,
        areas: g.areas,
        network,
        network_index,
        network_indexes,
        objects,
        deleted: g.deleted.clone(),
        history: BTreeMap::new(),
        network_history: Arc::new(RoadNetwork::default()),
        views: Views::default(),
        parents: Arc::new(parents),
        next_object_id: g.next_object_id,
        last_load_ms: g.last_load_ms,
    })
}
