//! A believable past for a generated dataset: older versions of current objects, the versions
//! of closed objects, and road links replaced by new ones.
//!
//! The history comes from its own RNG (seeded from the seed and [`HISTORY_SALT`]) and never
//! changes a current row. Which links were replaced is decided first ([`replace_links`]) and
//! `objects` reads it: a current object starts no earlier than its links, and one above
//! version 1 on a link that replaced another was carried over to it, its current version
//! starting the day the new link did. The rules, which make the versions consistent with
//! today's rows:
//! - Only an object whose current version is above 1 gets older versions, and then all of
//!   them (1..current): every speed limit (105) and surfacing (241) such object, a share of
//!   the others. Version `k` runs from its start to version `k + 1`'s start; the current
//!   version's `start_date` is the last one's end. A speed limit's older versions have higher
//!   limits (lowered over the years, "Gyldig fra dato" its start), a surfacing's older
//!   versions an older laying date (renewed), other types one property changed per version.
//! - A closed object is one of the generated deleted objects (`objects/deleted.parquet`): its
//!   versions 1..its deleted version, the last ending on its deletion day, copy a current
//!   object of its type without children (placements, geometry, properties).
//! - A share of the links is replaced: the link as it was (same geometry and positions, a new
//!   link id after every current one) is a closed network row whose `end_date` is the current
//!   link's `start_date`. A version before that day is placed on the old link; every object
//!   carried over to the new link (above version 1) gets its older versions; the version
//!   before the move has the current version's values (only its link differs), older ones
//!   the changes above.
//! - Every version lies where its links existed: each placement's link rows (current, or
//!   closed) are valid for the version's whole validity (an object on a closed link closes
//!   no later than the link), else the object gets no history.

use std::collections::{BTreeMap, HashMap};

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::values::{random_value, Value};
use crate::catalog::{Catalog, ObjectType};
use crate::snapshot::columns::{Days, DeletedTable, ObjectTable, RoadNetwork, OPEN_END};

/// What the history's RNG is seeded with besides the seed (today's tables never see it).
pub const HISTORY_SALT: u64 = 0x4157_0121_5EED_0028;

/// Speed limit (105) and its value property; surfacing (241) and its laying date.
const SPEED_LIMIT: u32 = 105;
const SPEED_PROPERTY: u32 = 2021;
const SPEED_VALID_FROM: u32 = 5127;
const SURFACING: u32 = 241;
const SURFACING_LAID: u32 = 5136;
const SURFACING_MASS: u32 = 1216;
/// Speeds a limit steps up through going back in time.
const SPEED_LADDER: [f64; 9] = [30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 110.0];

/// Shortest version (days), longest span of an object's older versions (days).
const MIN_VERSION_DAYS: Days = 60;
const MAX_HISTORY_DAYS: Days = 15 * 365;

pub struct HistoryPlan {
    /// Share of links replaced by a new link.
    pub replaced_links: f64,
    /// Share of the objects above version 1 of types other than 105 and 241 given history.
    pub other_types: f64,
    /// No version starts before this day.
    pub earliest: Days,
}

/// The generated history: per type its closed versions in (id, version) order, and the
/// network's closed rows.
#[derive(Debug, Default)]
pub struct History {
    pub tables: BTreeMap<u32, ObjectTable>,
    pub network: RoadNetwork,
}

impl History {
    pub fn versions(&self) -> usize {
        self.tables.values().map(|t| t.len()).sum()
    }
    /// Objects with at least one closed version.
    pub fn objects(&self) -> usize {
        self.tables
            .values()
            .map(|t| t.id.windows(2).filter(|w| w[0] != w[1]).count() + usize::from(!t.is_empty()))
            .sum()
    }
}

/// Per link id, its rows over time: (from, to, start, end) of current and closed rows.
struct Links {
    rows: HashMap<u64, Vec<(f64, f64, Days, Days)>>,
    /// A replaced link: (old link id, the day the current one started).
    replaced: HashMap<u64, (u64, Days)>,
}

impl Links {
    fn new(
        current: &RoadNetwork,
        closed: &RoadNetwork,
        replaced: HashMap<u64, (u64, Days)>,
    ) -> Self {
        let mut rows: HashMap<u64, Vec<_>> = HashMap::new();
        for n in [current, closed] {
            for r in 0..n.len() {
                rows.entry(n.link_id[r]).or_default().push((
                    n.from_pos[r],
                    n.to_pos[r],
                    n.start_date[r],
                    n.end_date[r],
                ));
            }
        }
        Links { rows, replaced }
    }

    /// Whether every row of `link` under `from..=to` (at least one) is valid from `start` to
    /// `end` (exclusive).
    fn holds(&self, link: u64, from: f64, to: f64, start: Days, end: Days) -> bool {
        let Some(rows) = self.rows.get(&link) else {
            return false;
        };
        let mut under = rows.iter().filter(|r| r.0 <= to && r.1 >= from).peekable();
        under.peek().is_some()
            && under.all(|&(_, _, s, e)| s <= start && (e == OPEN_END || end <= e))
    }

    /// The link a placement on current link `link` is on from `start` to `end`: the link
    /// itself or the link it replaced; None when neither existed all that time.
    fn at(&self, link: u64, from: f64, to: f64, start: Days, end: Days) -> Option<u64> {
        if self.holds(link, from, to, start, end) {
            return Some(link);
        }
        let &(old, _) = self.replaced.get(&link)?;
        self.holds(old, from, to, start, end).then_some(old)
    }

    /// The earliest day the placement's link (or the one it replaced) existed.
    fn earliest(&self, link: u64) -> Days {
        let of = |l: u64| {
            self.rows
                .get(&l)
                .and_then(|rs| rs.iter().map(|r| r.2).min())
                .unwrap_or(Days::MAX)
        };
        match self.replaced.get(&link) {
            Some(&(old, _)) => of(old).min(of(link)),
            None => of(link),
        }
    }
}

/// The links replaced by new ones, decided before the objects are made (so an object on a
/// new link can be carried over to it on the day it started).
#[derive(Debug, Default)]
pub struct Replacement {
    /// The old links' rows, closed (new link ids after every current one).
    pub closed: RoadNetwork,
    /// Per current link that replaced one: (the old link's id, the day the current one started).
    pub replaced: HashMap<u64, (u64, Days)>,
}

impl Replacement {
    /// The current links that replaced an older one.
    pub fn links(&self) -> std::collections::HashSet<u64> {
        self.replaced.keys().copied().collect()
    }
}

/// Replace a share of the links of `current` (those started at least two years after
/// `plan.earliest`), from the history's own RNG.
pub fn replace_links(current: &RoadNetwork, plan: &HistoryPlan, seed: u64) -> Replacement {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ HISTORY_SALT);
    let (closed, replaced) = replace_with(current, plan, &mut rng);
    Replacement { closed, replaced }
}

fn replace_with(
    current: &RoadNetwork,
    plan: &HistoryPlan,
    rng: &mut ChaCha8Rng,
) -> (RoadNetwork, HashMap<u64, (u64, Days)>) {
    let mut closed = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    let mut replaced = HashMap::new();
    let mut next = current.link_id.iter().max().copied().unwrap_or(0) + 1;
    let mut r = 0;
    while r < current.len() {
        let link = current.link_id[r];
        let rows: Vec<usize> = (r..current.len())
            .take_while(|&i| current.link_id[i] == link)
            .collect();
        r += rows.len();
        let starts = current.start_date[rows[0]];
        let room = starts - plan.earliest;
        if room < 2 * 365 || !rng.random_bool(plan.replaced_links) {
            continue;
        }
        let from = starts - rng.random_range(365..room.min(12 * 365));
        let first = closed.len();
        closed.append_taken(current, &rows);
        for i in first..closed.len() {
            closed.link_id[i] = next;
            closed.end_date[i] = closed.start_date[i];
            closed.start_date[i] = from;
        }
        replaced.insert(link, (next, starts));
        next += 1;
    }
    (closed, replaced)
}

/// One history row to be made: the source row, its id, version and validity, and the links
/// its placements are on (in placement order).
struct Planned {
    row: usize,
    id: u64,
    version: u32,
    /// How many versions before its source row's values it is (0 = the same values).
    back: u32,
    start: Days,
    end: Days,
    links: Vec<u64>,
}

/// The validity of versions 1..n (n = `versions`) ending at `end`: n + 1 boundaries, the
/// first at least `lo`, snapped to the days replaced links changed (`changes`) so no version
/// spans one; None when they do not fit.
fn boundaries(
    rng: &mut ChaCha8Rng,
    versions: u32,
    lo: Days,
    end: Days,
    changes: &[Days],
) -> Option<Vec<Days>> {
    let n = versions as usize;
    let lo = lo.max(end - MAX_HISTORY_DAYS);
    if end - lo < MIN_VERSION_DAYS * (n as Days + 1) {
        return None;
    }
    let mut b = Vec::new();
    for _ in 0..4 {
        b = (0..n)
            .map(|_| rng.random_range(lo..=end - MIN_VERSION_DAYS))
            .collect();
        b.sort_unstable();
        b.push(end);
        if b.windows(2).all(|w| w[1] - w[0] >= MIN_VERSION_DAYS) {
            break;
        }
    }
    for &day in changes {
        if day <= b[0] || day >= end {
            continue;
        }
        // the boundary nearest to the change moves onto it (never the end)
        let k = (0..n).min_by_key(|&k| (b[k] - day).abs())?;
        b[k] = day;
        b.sort_unstable();
    }
    b.windows(2).all(|w| w[1] > w[0]).then_some(b)
}

/// The object whose versions are planned: the row whose values and placements they copy,
/// the id, the version the row's values are (`newest`), the versions to make (1..=`versions`)
/// and the day the last of them ends.
struct Source {
    row: usize,
    id: u64,
    newest: u32,
    versions: u32,
    end: Days,
}

/// Plan versions 1..n of `src` (its placements as they are in `t`); None when they cannot
/// lie where the object's links existed.
fn plan_versions(
    t: &ObjectTable,
    src: &Source,
    links: &Links,
    plan: &HistoryPlan,
    rng: &mut ChaCha8Rng,
) -> Option<Vec<Planned>> {
    let placements = t.placements(src.row);
    let lo = placements
        .clone()
        .map(|p| links.earliest(t.loc_link[p]))
        .max()
        .unwrap_or(plan.earliest)
        .max(plan.earliest);
    let changes: Vec<Days> = placements
        .clone()
        .filter_map(|p| links.replaced.get(&t.loc_link[p]).map(|&(_, d)| d))
        .collect();
    // a current version that began the day its link was replaced is the previous one moved
    // to the new link: that previous version has the current values, and the changes
    // begin one version further back
    let moved = u32::from(src.newest > src.versions && changes.contains(&src.end));
    let b = boundaries(rng, src.versions, lo, src.end, &changes)?;
    (0..src.versions as usize)
        .map(|k| {
            let (start, end) = (b[k], b[k + 1]);
            let links = placements
                .clone()
                .map(|p| links.at(t.loc_link[p], t.loc_from[p], t.loc_to[p], start, end))
                .collect::<Option<Vec<u64>>>()?;
            Some(Planned {
                row: src.row,
                id: src.id,
                version: k as u32 + 1,
                back: (src.newest - (k as u32 + 1)).saturating_sub(moved),
                start,
                end,
                links,
            })
        })
        .collect()
}

/// Generate the history of `tables` (today's objects, with `deleted`) on `network`, whose
/// links `replacement` replaced (`replace_links`).
pub fn generate(
    catalog: &Catalog,
    network: &RoadNetwork,
    tables: &BTreeMap<u32, ObjectTable>,
    deleted: &DeletedTable,
    plan: &HistoryPlan,
    replacement: Replacement,
    seed: u64,
) -> History {
    let Replacement { closed, replaced } = replacement;
    let links = Links::new(network, &closed, replaced);
    let mut closed_of: BTreeMap<u32, Vec<(u64, u32, Days)>> = BTreeMap::new();
    for i in 0..deleted.len() {
        closed_of.entry(deleted.type_id[i]).or_default().push((
            deleted.id[i],
            deleted.version[i],
            deleted.deleted_at[i].div_euclid(86_400) as Days,
        ));
    }
    let none = Vec::new();
    let made: Vec<(u32, ObjectTable)> = tables
        .par_iter()
        .filter_map(|(&type_id, t)| {
            let ot = catalog.object_type(type_id)?;
            let closed = closed_of.get(&type_id).unwrap_or(&none);
            let h = type_history(ot, t, closed, &links, plan, seed);
            (!h.is_empty()).then_some((type_id, h))
        })
        .collect();
    History {
        tables: made.into_iter().collect(),
        network: closed,
    }
}

/// One type's history (see the module doc), rows in (id, version) order.
fn type_history(
    ot: &ObjectType,
    t: &ObjectTable,
    closed: &[(u64, u32, Days)],
    links: &Links,
    plan: &HistoryPlan,
    seed: u64,
) -> ObjectTable {
    let mut rng = ChaCha8Rng::seed_from_u64(
        seed ^ HISTORY_SALT ^ (t.type_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let share = if [SPEED_LIMIT, SURFACING].contains(&t.type_id) {
        1.0
    } else {
        plan.other_types
    };
    let mut planned: Vec<Planned> = Vec::new();
    for row in 0..t.len() {
        let v = t.version[row];
        // an object carried over to a new link always keeps its versions on the old one
        let carried = || {
            t.placements(row)
                .any(|p| links.replaced.contains_key(&t.loc_link[p]))
        };
        if v < 2 || !(rng.random_bool(share) || carried()) {
            continue;
        }
        let src = Source {
            row,
            id: t.id[row],
            newest: v,
            versions: v - 1,
            end: t.start_date[row],
        };
        if let Some(p) = plan_versions(t, &src, links, plan, &mut rng) {
            planned.extend(p);
        }
    }
    // closed objects: a childless current object of the type as the template
    let childless: Vec<usize> = (0..t.len()).filter(|&r| t.children(r).is_empty()).collect();
    if !ot.control.must_have_parent && !childless.is_empty() {
        for &(id, version, end) in closed {
            for _ in 0..8 {
                let src = Source {
                    row: childless[rng.random_range(0..childless.len())],
                    id,
                    newest: version,
                    versions: version,
                    end,
                };
                if let Some(p) = plan_versions(t, &src, links, plan, &mut rng) {
                    planned.extend(p);
                    break;
                }
            }
        }
    }
    build(ot, t, &planned, &mut rng)
}

/// The history table of `planned` (copies of `t`'s rows with their ids, versions, dates,
/// links and changed properties).
fn build(
    ot: &ObjectType,
    t: &ObjectTable,
    planned: &[Planned],
    rng: &mut ChaCha8Rng,
) -> ObjectTable {
    let rows: Vec<usize> = planned.iter().map(|p| p.row).collect();
    let Ok(mut h) = t.take(&rows) else {
        return ObjectTable::new(t.type_id);
    };
    for (i, p) in planned.iter().enumerate() {
        h.id[i] = p.id;
        h.version[i] = p.version;
        h.start_date[i] = p.start;
        h.end_date[i] = p.end;
        let (s, e) = (p.start as i64 * 86_400, p.end as i64 * 86_400);
        h.last_modified[i] = rng.random_range(s..e.max(s + 1));
        let at = h.placements(i).start;
        for (k, &l) in p.links.iter().enumerate() {
            h.loc_link[at + k] = l;
        }
    }
    let mut overrides: BTreeMap<u32, Vec<(usize, Option<Value>)>> = BTreeMap::new();
    for (i, p) in planned.iter().enumerate() {
        for (pid, v) in changed_values(ot, t, p, rng) {
            overrides.entry(pid).or_default().push((i, v));
        }
    }
    for c in &mut h.properties {
        if let Some(o) = overrides.get(&c.property_id) {
            c.values = with_values(&c.values, o);
        }
    }
    h
}

/// The values a version `p.back` versions before its source row's differs in: (property,
/// value); none for the source's version itself. A speed limit `back` steps higher, a surfacing laid on the version's start day,
/// another type one optional property drawn anew.
fn changed_values(
    ot: &ObjectType,
    t: &ObjectTable,
    p: &Planned,
    rng: &mut ChaCha8Rng,
) -> Vec<(u32, Option<Value>)> {
    let back = p.back;
    if back == 0 {
        return Vec::new();
    }
    let date = |d: Days| {
        chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
            .and_then(|e| e.checked_add_days(chrono::Days::new(d.max(0) as u64)))
            .map(|d| Value::Text(d.format("%Y-%m-%d").to_string()))
    };
    let mut out = Vec::new();
    match t.type_id {
        SPEED_LIMIT => {
            let Some(prop) = ot.property(SPEED_PROPERTY) else {
                return out;
            };
            let now = t
                .property(SPEED_PROPERTY)
                .and_then(|c| c.values.as_any().downcast_ref::<Int64Array>())
                .filter(|a| a.is_valid(p.row))
                .and_then(|a| prop.allowed_value(a.value(p.row) as u32))
                .and_then(|v| v.number);
            if let Some(kmh) = now {
                let at = SPEED_LADDER.iter().position(|&s| s >= kmh).unwrap_or(0);
                let older = SPEED_LADDER[(at + back as usize).min(SPEED_LADDER.len() - 1)];
                let id = prop
                    .allowed_values
                    .as_ref()
                    .and_then(|vs| vs.iter().find(|a| a.number == Some(older)));
                if let Some(a) = id {
                    out.push((SPEED_PROPERTY, Some(Value::Int(a.id as i64))));
                }
            }
            out.push((SPEED_VALID_FROM, date(p.start)));
        }
        SURFACING => {
            out.push((SURFACING_LAID, date(p.start)));
            if let Some(prop) = ot.property(SURFACING_MASS) {
                out.push((SURFACING_MASS, random_value(rng, prop, p.id)));
            }
        }
        _ => {
            let optional: Vec<u32> = t
                .properties
                .iter()
                .map(|c| c.property_id)
                .filter(|&pid| ot.property(pid).is_some_and(|q| q.importance > 1))
                .collect();
            if !optional.is_empty() {
                let pid = optional[rng.random_range(0..optional.len())];
                if let Some(prop) = ot.property(pid) {
                    out.push((pid, random_value(rng, prop, p.id)));
                }
            }
        }
    }
    out
}

/// `values` with rows replaced (`(row, value)`, in row order); a value of another kind than
/// the column's leaves the row as it was.
fn with_values(values: &ArrayRef, rows: &[(usize, Option<Value>)]) -> ArrayRef {
    let at: HashMap<usize, &Option<Value>> = rows.iter().map(|(r, v)| (*r, v)).collect();
    let any = values.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        let mut b = Int64Builder::with_capacity(a.len());
        for r in 0..a.len() {
            match at.get(&r) {
                Some(Some(Value::Int(x))) => b.append_value(*x),
                Some(None) => b.append_null(),
                _ => b.append_option(a.is_valid(r).then(|| a.value(r))),
            }
        }
        return std::sync::Arc::new(b.finish());
    }
    if let Some(a) = any.downcast_ref::<Float64Array>() {
        let mut b = Float64Builder::with_capacity(a.len());
        for r in 0..a.len() {
            match at.get(&r) {
                Some(Some(Value::Float(x))) => b.append_value(*x),
                Some(None) => b.append_null(),
                _ => b.append_option(a.is_valid(r).then(|| a.value(r))),
            }
        }
        return std::sync::Arc::new(b.finish());
    }
    if let Some(a) = any.downcast_ref::<StringArray>() {
        let mut b = StringBuilder::with_capacity(a.len(), 0);
        for r in 0..a.len() {
            match at.get(&r) {
                Some(Some(Value::Text(x))) => b.append_value(x),
                Some(None) => b.append_null(),
                _ => b.append_option(a.is_valid(r).then(|| a.value(r))),
            }
        }
        return std::sync::Arc::new(b.finish());
    }
    values.clone()
}

#[cfg(test)]
mod tests;
