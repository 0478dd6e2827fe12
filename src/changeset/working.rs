//! The working state of the writer: a base generation plus the edits of the changesets applied
//! so far in this batch. Validation reads through it (so a changeset sees its predecessors in
//! the batch); `materialise` turns the edits of each touched type into a new `ObjectTable`,
//! sharing nothing mutable with the base.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_schema::DataType;

use crate::catalog::{Catalog, ValueKind};
use crate::error::{EngineError, Result};
use crate::generation::Generation;
use crate::geo::Coord3;
use crate::index::bitmaps::RowChanges;
use crate::snapshot::columns::{
    Days, DeletedTable, ObjectTable, PropertyColumn, Seconds, DIRECTION_AGAINST, DIRECTION_WITH,
    OPEN_END,
};
use crate::value::Value;

/// One placement of an object on a link, positions 0..1.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub link_id: u64,
    pub from: f64,
    pub to: f64,
    pub against: bool,
    /// Stored lanes (`ObjectTable::loc_lanes`: codes joined by `#`, "" = none).
    pub lanes: Box<str>,
}

/// A current object, detached from the columns so it can be edited.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectState {
    pub type_id: u32,
    pub id: u64,
    pub version: u32,
    pub start_date: Days,
    pub end_date: Days,
    pub last_modified: Seconds,
    pub placements: Vec<Placement>,
    pub geometry: Vec<Coord3>,
    /// Daughters: (type, id).
    pub children: Vec<(u32, u64)>,
    pub values: BTreeMap<u32, Value>,
}

impl ObjectState {
    /// Read row `row` of `table`.
    pub fn from_row(table: &ObjectTable, row: usize) -> ObjectState {
        let placements = table
            .placements(row)
            .map(|p| Placement {
                link_id: table.loc_link[p],
                from: table.loc_from[p],
                to: table.loc_to[p],
                against: table.loc_direction[p] == DIRECTION_AGAINST,
                lanes: table.loc_lanes[p].clone(),
            })
            .collect();
        let children = table
            .children(row)
            .map(|c| (table.child_type[c], table.child_id[c]))
            .collect();
        let mut values = BTreeMap::new();
        for col in &table.properties {
            if let Some(v) = value_at(&col.values, row) {
                values.insert(col.property_id, v);
            }
        }
        ObjectState {
            type_id: table.type_id,
            id: table.id[row],
            version: table.version[row],
            start_date: table.start_date[row],
            end_date: table.end_date[row],
            last_modified: table.last_modified[row],
            placements,
            geometry: table.own_geometry(row).to_vec(),
            children,
            values,
        }
    }
}

/// The value of a property column at a row (None = null).
pub fn value_at(values: &ArrayRef, row: usize) -> Option<Value> {
    if values.is_null(row) {
        return None;
    }
    match values.data_type() {
        DataType::Int64 => Some(Value::Int(values.as_primitive::<Int64Type>().value(row))),
        DataType::Float64 => Some(Value::Float(
            values.as_primitive::<Float64Type>().value(row),
        )),
        DataType::Utf8 => Some(Value::Text(
            values.as_string::<i32>().value(row).to_string(),
        )),
        _ => None,
    }
}

/// What an id refers to in the working state.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Current(ObjectState),
    /// Closed (deleted) with this type.
    Closed(u32),
    Missing,
}

#[derive(Debug, Default, Clone)]
struct TypeEdits {
    upserts: BTreeMap<u64, ObjectState>,
    removed: BTreeSet<u64>,
}

/// Base generation + edits.
pub struct Working<'g> {
    pub base: &'g Generation,
    edits: BTreeMap<u32, TypeEdits>,
    deleted: Vec<(u32, u64, u32, Seconds)>,
    deleted_base: Option<HashMap<u64, u32>>,
    /// Versions the edits ended (the previous version of an updated object, the last one of a
    /// deleted object), per type, with their end dates set.
    ended: BTreeMap<u32, Vec<ObjectState>>,
    pub next_id: u64,
    /// Mother/daughter links changed: the parents map must be rebuilt for touched types.
    pub relations_changed: bool,
}

impl<'g> Working<'g> {
    pub fn new(base: &'g Generation) -> Working<'g> {
        Working {
            base,
            edits: BTreeMap::new(),
            deleted: Vec::new(),
            deleted_base: None,
            ended: BTreeMap::new(),
            next_id: base.next_object_id,
            relations_changed: false,
        }
    }

    pub fn catalog(&self) -> &'static Catalog {
        self.base.catalog
    }

    fn deleted_in_base(&mut self, id: u64) -> Option<u32> {
        let d = &self.base.deleted;
        self.deleted_base
            .get_or_insert_with(|| {
                d.id.iter()
                    .copied()
                    .zip(d.type_id.iter().copied())
                    .collect()
            })
            .get(&id)
            .copied()
    }

    /// Look an object up by id (any type).
    pub fn find(&mut self, id: u64) -> Found {
        for (&t, e) in &self.edits {
            if let Some(o) = e.upserts.get(&id) {
                return Found::Current(o.clone());
            }
            if e.removed.contains(&id) {
                return Found::Closed(t);
            }
        }
        if let Some((t, row)) = self.base.find_object(crate::ids::ObjectId(id)) {
            return Found::Current(ObjectState::from_row(
                &self.base.objects[&t.get()].table,
                row,
            ));
        }
        if let Some(&(t, _, _, _)) = self.deleted.iter().find(|d| d.1 == id) {
            return Found::Closed(t);
        }
        match self.deleted_in_base(id) {
            Some(t) => Found::Closed(t),
            None => Found::Missing,
        }
    }

    /// Reserve a fresh object id.
    pub fn allocate_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Insert or replace an object.
    pub fn put(&mut self, o: ObjectState) {
        let e = self.edits.entry(o.type_id).or_default();
        e.removed.remove(&o.id);
        e.upserts.insert(o.id, o);
    }

    /// Close an object: it leaves the current view and is listed as deleted.
    pub fn close(&mut self, o: &ObjectState, at: Seconds) {
        let e = self.edits.entry(o.type_id).or_default();
        e.upserts.remove(&o.id);
        e.removed.insert(o.id);
        self.deleted.push((o.type_id, o.id, o.version, at));
        self.relations_changed = true;
    }

    /// End version `o` at `day` (exclusive): it becomes history, its type's closed versions
    /// (`history`). Its own end is kept when that came first, and an end never precedes the
    /// version's start. The current view is changed by `put` (the next version) or `close`,
    /// not here.
    pub fn end_version(&mut self, o: &ObjectState, day: Days) {
        let mut old = o.clone();
        if old.end_date == OPEN_END || day < old.end_date {
            old.end_date = day;
        }
        old.end_date = old.end_date.max(old.start_date);
        self.ended.entry(o.type_id).or_default().push(old);
    }

    /// Ids of the types with edits.
    pub fn touched_types(&self) -> Vec<u32> {
        self.edits.keys().copied().collect()
    }

    pub fn has_deletions(&self) -> bool {
        !self.deleted.is_empty()
    }

    /// The new table of each touched type and, when objects were closed, the new deleted table.
    pub fn materialise(&self) -> Result<(BTreeMap<u32, Merged>, Option<DeletedTable>)> {
        use rayon::prelude::*;
        let merged: Vec<(u32, Merged)> = self
            .edits
            .par_iter()
            .map(|(&t, e)| {
                let empty = ObjectTable::new(t);
                let base = self
                    .base
                    .objects
                    .get(&t)
                    .map(|d| &*d.table)
                    .unwrap_or(&empty);
                Ok((t, merge(self.base.catalog, base, e)?))
            })
            .collect::<Result<_>>()?;
        let tables: BTreeMap<u32, Merged> = merged.into_iter().collect();
        let deleted = (!self.deleted.is_empty()).then(|| {
            let mut d = DeletedTable::clone(&self.base.deleted);
            for &(t, id, v, at) in &self.deleted {
                d.type_id.push(t);
                d.id.push(id);
                d.version.push(v);
                d.deleted_at.push(at);
            }
            d
        });
        Ok((tables, deleted))
    }

    /// The complete new history table of each type whose versions the edits ended: the base's
    /// closed versions and the ended ones, in (id, version) order.
    pub fn history(&self) -> Result<BTreeMap<u32, ObjectTable>> {
        let mut out = BTreeMap::new();
        for (&t, ended) in &self.ended {
            let empty = ObjectTable::new(t);
            let old = self.base.history.get(&t).map_or(&empty, |h| &**h);
            let current = self.base.objects.get(&t).map(|d| &*d.table);
            let mut ended: Vec<&ObjectState> = ended.iter().collect();
            ended.sort_by_key(|o| (o.id, o.version));
            out.insert(t, history_of(self.base.catalog, old, &ended, current)?);
        }
        Ok(out)
    }

    /// The parents map of the new generation: the base's, with the touched types' daughters
    /// re-derived. Shared unchanged when no relation changed.
    pub fn parents(&self, tables: &BTreeMap<u32, Merged>) -> Arc<HashMap<u64, (u32, u64)>> {
        if !self.relations_changed {
            return self.base.parents.clone();
        }
        let mut parents = HashMap::clone(&self.base.parents);
        let removed: HashSet<u64> = self.deleted.iter().map(|d| d.1).collect();
        parents.retain(|child, (pt, pid)| {
            !removed.contains(child) && !removed.contains(pid) && !tables.contains_key(pt)
        });
        for table in tables.values().map(|m| &m.table) {
            for row in 0..table.len() {
                for c in table.children(row) {
                    parents.insert(table.child_id[c], (table.type_id, table.id[row]));
                }
            }
        }
        Arc::new(parents)
    }
}

/// A stretch of the merged table: base rows `a..b`, or new objects `a..b` of the edits.
#[derive(Debug, Clone)]
enum Run {
    Base(usize, usize),
    New(usize, usize),
}

/// A type's new table, and how its rows relate to the base table's (None: rows were removed,
/// so row numbers shifted and the index must be rebuilt).
pub struct Merged {
    pub table: ObjectTable,
    pub changes: Option<RowChanges>,
    /// Ids the edits touched (changed, removed or added), ascending: the chunk files holding
    /// them are rewritten, the others shared.
    pub edited_ids: Vec<u64>,
}

impl Merged {
    /// The new table as a generation builder writes it (the chunks an edit falls in).
    pub fn touched(&self) -> crate::snapshot::builder::TouchedTable<'_> {
        crate::snapshot::builder::TouchedTable {
            table: &self.table,
            edited_ids: &self.edited_ids,
        }
    }
}

/// Merge a type's edits into its base table (ids stay ascending). Unchanged stretches of the
/// base are copied in bulk, so the cost is a memory copy of the type plus work per edit.
fn merge(catalog: &Catalog, base: &ObjectTable, e: &TypeEdits) -> Result<Merged> {
    // rows of the base that change, ascending
    let mut touched: Vec<(usize, Option<&ObjectState>)> = Vec::new();
    for id in &e.removed {
        if let Some(r) = base.row_of(*id) {
            touched.push((r, None));
        }
    }
    let mut appended: Vec<&ObjectState> = Vec::new();
    for (id, o) in &e.upserts {
        match base.row_of(*id) {
            Some(r) => touched.push((r, Some(o))),
            None => appended.push(o),
        }
    }
    touched.sort_unstable_by_key(|t| t.0);
    let last_base = base.id.last().copied().unwrap_or(0);
    if appended.first().is_some_and(|o| o.id <= last_base) {
        return Err(EngineError::Internal(format!(
            "new object sorts before existing ones in type {}",
            base.type_id
        )));
    }
    let removed_any = touched.iter().any(|t| t.1.is_none());
    let mut news: Vec<&ObjectState> = Vec::with_capacity(touched.len() + appended.len());
    let mut runs: Vec<Run> = Vec::new();
    let mut at = 0usize;
    fn push_new<'e>(runs: &mut Vec<Run>, news: &mut Vec<&'e ObjectState>, o: &'e ObjectState) {
        news.push(o);
        let i = news.len() - 1;
        match runs.last_mut() {
            Some(Run::New(_, b)) if *b == i => *b = i + 1,
            _ => runs.push(Run::New(i, i + 1)),
        }
    }
    for &(row, o) in &touched {
        if row > at {
            runs.push(Run::Base(at, row));
        }
        if let Some(o) = o {
            push_new(&mut runs, &mut news, o);
        }
        at = row + 1;
    }
    if base.len() > at {
        runs.push(Run::Base(at, base.len()));
    }
    for o in &appended {
        push_new(&mut runs, &mut news, o);
    }

    let mut t = ObjectTable::new(base.type_id);
    let total = base.len() - touched.iter().filter(|x| x.1.is_none()).count() + appended.len();
    t.id.reserve(total);
    for run in &runs {
        match *run {
            Run::Base(a, b) => t.append_rows(base, a..b),
            Run::New(a, b) => {
                for o in &news[a..b] {
                    push_state(&mut t, o);
                }
            }
        }
    }

    t.properties = merged_properties(catalog, base, &news, &runs, None)?;
    t.check_lengths()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    let changes = (!removed_any).then(|| RowChanges {
        replaced: touched.iter().map(|x| x.0).collect(),
        appended_from: base.len(),
    });
    let mut edited_ids: Vec<u64> = e.upserts.keys().chain(e.removed.iter()).copied().collect();
    edited_ids.sort_unstable();
    Ok(Merged {
        table: t,
        changes,
        edited_ids,
    })
}

/// The merged table's property columns: the base's, plus any property first given a value by
/// the edits (of its type in `like` when that has it, else in the catalogue), each
/// concatenated from the base's and the new rows' slices in `runs` order.
fn merged_properties(
    catalog: &Catalog,
    base: &ObjectTable,
    news: &[&ObjectState],
    runs: &[Run],
    like: Option<&ObjectTable>,
) -> Result<Vec<PropertyColumn>> {
    let mut columns = Vec::new();
    let mut property_ids: Vec<u32> = base.properties.iter().map(|c| c.property_id).collect();
    let mut extra: BTreeSet<u32> = BTreeSet::new();
    for o in news {
        extra.extend(o.values.keys().filter(|k| base.property(**k).is_none()));
    }
    property_ids.extend(extra);
    let object_type = catalog.object_type(base.type_id);
    for pid in property_ids {
        let base_col = base.property(pid).map(|c| c.values.clone());
        let data_type = match (&base_col, like.and_then(|l| l.property(pid))) {
            (Some(c), _) => c.data_type().clone(),
            (None, Some(l)) => l.values.data_type().clone(),
            (None, None) => catalog_type(object_type, pid),
        };
        let base_col = base_col.unwrap_or_else(|| new_null_array(&data_type, base.len()));
        let new_col = new_values(&data_type, news, pid)?;
        let parts: Vec<ArrayRef> = runs
            .iter()
            .map(|r| match *r {
                Run::Base(a, b) => base_col.slice(a, b - a),
                Run::New(a, b) => new_col.slice(a, b - a),
            })
            .collect();
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        let values = if refs.is_empty() {
            new_null_array(&data_type, 0)
        } else {
            arrow_select::concat::concat(&refs)
                .map_err(|e| EngineError::Internal(format!("concatenating column {pid}: {e}")))?
        };
        columns.push(PropertyColumn {
            property_id: pid,
            values,
        });
    }
    Ok(columns)
}

/// The column type of property `pid` when no table has it yet (its storage in the catalogue).
fn catalog_type(object_type: Option<&crate::catalog::ObjectType>, pid: u32) -> DataType {
    match object_type
        .and_then(|ty| ty.property(pid))
        .map(|p| p.storage())
    {
        Some(ValueKind::Float) => DataType::Float64,
        Some(ValueKind::Enum) | Some(ValueKind::Integer) => DataType::Int64,
        _ => DataType::Utf8,
    }
}

/// A type's closed versions `old` with the versions `ended` (both in (id, version) order)
/// merged into one table in (id, version) order; a property column none of them has yet gets
/// its type from `current` (the type's current table), else from the catalogue.
fn history_of(
    catalog: &Catalog,
    old: &ObjectTable,
    ended: &[&ObjectState],
    current: Option<&ObjectTable>,
) -> Result<ObjectTable> {
    let key_of_old = |r: usize| (old.id[r], old.version[r]);
    let mut runs: Vec<Run> = Vec::new();
    let mut at = 0usize;
    for (i, o) in ended.iter().enumerate() {
        let key = (o.id, o.version);
        let upto = at + (at..old.len()).take_while(|&r| key_of_old(r) < key).count();
        if upto < old.len() && key_of_old(upto) == key {
            return Err(EngineError::Internal(format!(
                "version {} of object {} of type {} is in the history already",
                o.version, o.id, old.type_id
            )));
        }
        if upto > at {
            runs.push(Run::Base(at, upto));
        }
        at = upto;
        match runs.last_mut() {
            Some(Run::New(_, b)) if *b == i => *b = i + 1,
            _ => runs.push(Run::New(i, i + 1)),
        }
    }
    if old.len() > at {
        runs.push(Run::Base(at, old.len()));
    }
    let mut t = ObjectTable::new(old.type_id);
    for run in &runs {
        match *run {
            Run::Base(a, b) => t.append_rows(old, a..b),
            Run::New(a, b) => ended[a..b].iter().for_each(|o| push_state(&mut t, o)),
        }
    }
    t.properties = merged_properties(catalog, old, ended, &runs, current)?;
    let ordered = (1..t.len()).all(|r| (t.id[r - 1], t.version[r - 1]) < (t.id[r], t.version[r]));
    if !ordered {
        return Err(EngineError::Internal(format!(
            "the history of type {} is not in (id, version) order",
            t.type_id
        )));
    }
    Ok(t)
}

/// Append an object's stored columns to a table (the inverse of `ObjectState::from_row`;
/// its properties are built column-wise by `new_values`).
fn push_state(t: &mut ObjectTable, o: &ObjectState) {
    t.id.push(o.id);
    t.version.push(o.version);
    t.start_date.push(o.start_date);
    t.end_date.push(o.end_date);
    t.last_modified.push(o.last_modified);
    for p in &o.placements {
        t.loc_link.push(p.link_id);
        t.loc_from.push(p.from);
        t.loc_to.push(p.to);
        t.loc_direction.push(if p.against {
            DIRECTION_AGAINST
        } else {
            DIRECTION_WITH
        });
        t.loc_lanes.push(p.lanes.clone());
    }
    t.loc_offsets.push(t.loc_link.len() as u32);
    t.geom_coords.extend_from_slice(&o.geometry);
    t.geom_offsets.push(t.geom_coords.len() as u32);
    for &(ct, cid) in &o.children {
        t.child_type.push(ct);
        t.child_id.push(cid);
    }
    t.child_offsets.push(t.child_id.len() as u32);
}

/// The values of property `pid` of the new objects, in order.
fn new_values(data_type: &DataType, news: &[&ObjectState], pid: u32) -> Result<ArrayRef> {
    let bad = |v: &Value| {
        EngineError::Internal(format!(
            "value {v:?} does not fit column {pid} of type {data_type}"
        ))
    };
    Ok(match data_type {
        DataType::Int64 => {
            let mut b = Int64Builder::with_capacity(news.len());
            for o in news {
                match o.values.get(&pid) {
                    None => b.append_null(),
                    Some(Value::Int(v)) => b.append_value(*v),
                    Some(v) => return Err(bad(v)),
                }
            }
            Arc::new(b.finish())
        }
        DataType::Float64 => {
            let mut b = Float64Builder::with_capacity(news.len());
            for o in news {
                match o.values.get(&pid) {
                    None => b.append_null(),
                    Some(Value::Float(v)) => b.append_value(*v),
                    Some(Value::Int(v)) => b.append_value(*v as f64),
                    Some(v) => return Err(bad(v)),
                }
            }
            Arc::new(b.finish())
        }
        DataType::Utf8 => {
            let mut b = StringBuilder::with_capacity(news.len(), news.len() * 8);
            for o in news {
                match o.values.get(&pid) {
                    None => b.append_null(),
                    Some(Value::Text(v)) => b.append_value(v),
                    Some(v) => return Err(bad(v)),
                }
            }
            Arc::new(b.finish())
        }
        other => {
            return Err(EngineError::Internal(format!(
                "unsupported property column type {other}"
            )))
        }
    })
}
