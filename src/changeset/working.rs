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
use crate::generate::values::Value;
use crate::geo::Coord3;
use crate::snapshot::columns::{
    Days, DeletedTable, ObjectTable, PropertyColumn, Seconds, DIRECTION_AGAINST, DIRECTION_WITH,
};
use crate::snapshot::generation::Generation;

/// One placement of an object on a link, positions 0..1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    pub link_id: u64,
    pub from: f64,
    pub to: f64,
    pub against: bool,
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
        if let Some((t, row)) = self.base.find_object(id) {
            return Found::Current(ObjectState::from_row(&self.base.objects[&t].table, row));
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

    /// Ids of the types with edits.
    pub fn touched_types(&self) -> Vec<u32> {
        self.edits.keys().copied().collect()
    }

    pub fn has_deletions(&self) -> bool {
        !self.deleted.is_empty()
    }

    /// The new table of each touched type and, when objects were closed, the new deleted table.
    pub fn materialise(&self) -> Result<(BTreeMap<u32, ObjectTable>, Option<DeletedTable>)> {
        let mut tables = BTreeMap::new();
        for (&t, e) in &self.edits {
            let empty = ObjectTable::new(t);
            let base = self
                .base
                .objects
                .get(&t)
                .map(|d| &d.table)
                .unwrap_or(&empty);
            tables.insert(t, merge(self.base.catalog, base, e)?);
        }
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

    /// The parents map of the new generation: the base's, with the touched types' daughters
    /// re-derived. Shared unchanged when no relation changed.
    pub fn parents(&self, tables: &BTreeMap<u32, ObjectTable>) -> Arc<HashMap<u64, (u32, u64)>> {
        if !self.relations_changed {
            return self.base.parents.clone();
        }
        let mut parents = HashMap::clone(&self.base.parents);
        let removed: HashSet<u64> = self.deleted.iter().map(|d| d.1).collect();
        parents.retain(|child, (pt, pid)| {
            !removed.contains(child) && !removed.contains(pid) && !tables.contains_key(pt)
        });
        for table in tables.values() {
            for row in 0..table.len() {
                for c in table.children(row) {
                    parents.insert(table.child_id[c], (table.type_id, table.id[row]));
                }
            }
        }
        Arc::new(parents)
    }
}

enum Source<'a> {
    Base(usize),
    New(&'a ObjectState),
}

/// Merge a type's edits into its base table (ids stay ascending).
fn merge(catalog: &Catalog, base: &ObjectTable, e: &TypeEdits) -> Result<ObjectTable> {
    let mut sources: Vec<Source> = Vec::with_capacity(base.len() + e.upserts.len());
    let mut consumed = 0usize;
    for (row, id) in base.id.iter().enumerate() {
        if e.removed.contains(id) {
            continue;
        }
        match e.upserts.get(id) {
            Some(o) => {
                consumed += 1;
                sources.push(Source::New(o));
            }
            None => sources.push(Source::Base(row)),
        }
    }
    let last_base = base.id.last().copied().unwrap_or(0);
    for (id, o) in &e.upserts {
        if base.row_of(*id).is_none() {
            if *id <= last_base {
                return Err(EngineError::Internal(format!(
                    "new object {id} sorts before existing ones in type {}",
                    base.type_id
                )));
            }
            consumed += 1;
            sources.push(Source::New(o));
        }
    }
    debug_assert_eq!(consumed, e.upserts.len());

    let mut t = ObjectTable::new(base.type_id);
    for s in &sources {
        match *s {
            Source::Base(r) => {
                t.id.push(base.id[r]);
                t.version.push(base.version[r]);
                t.start_date.push(base.start_date[r]);
                t.end_date.push(base.end_date[r]);
                t.last_modified.push(base.last_modified[r]);
                for p in base.placements(r) {
                    t.loc_link.push(base.loc_link[p]);
                    t.loc_from.push(base.loc_from[p]);
                    t.loc_to.push(base.loc_to[p]);
                    t.loc_direction.push(base.loc_direction[p]);
                }
                t.geom_coords.extend_from_slice(base.own_geometry(r));
                for c in base.children(r) {
                    t.child_type.push(base.child_type[c]);
                    t.child_id.push(base.child_id[c]);
                }
            }
            Source::New(o) => {
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
                }
                t.geom_coords.extend_from_slice(&o.geometry);
                for &(ct, cid) in &o.children {
                    t.child_type.push(ct);
                    t.child_id.push(cid);
                }
            }
        }
        t.loc_offsets.push(t.loc_link.len() as u32);
        t.geom_offsets.push(t.geom_coords.len() as u32);
        t.child_offsets.push(t.child_id.len() as u32);
    }

    // property columns: the base's, plus any property first given a value by the edits
    let mut property_ids: BTreeSet<u32> = base.properties.iter().map(|c| c.property_id).collect();
    for o in e.upserts.values() {
        property_ids.extend(o.values.keys().copied());
    }
    let object_type = catalog.object_type(base.type_id);
    for pid in property_ids {
        let base_col = base.property(pid).map(|c| c.values.clone());
        let data_type = match &base_col {
            Some(c) => c.data_type().clone(),
            None => match object_type
                .and_then(|ty| ty.property(pid))
                .map(|p| p.storage())
            {
                Some(ValueKind::Float) => DataType::Float64,
                Some(ValueKind::Enum) | Some(ValueKind::Integer) => DataType::Int64,
                _ => DataType::Utf8,
            },
        };
        let base_col = base_col.unwrap_or_else(|| new_null_array(&data_type, base.len()));
        let column = build_column(&data_type, &base_col, &sources, pid)?;
        t.properties.push(PropertyColumn {
            property_id: pid,
            values: column,
        });
    }
    // keep the base's column order first (stable files), new columns after
    let order: HashMap<u32, usize> = base
        .properties
        .iter()
        .enumerate()
        .map(|(i, c)| (c.property_id, i))
        .collect();
    t.properties
        .sort_by_key(|c| order.get(&c.property_id).copied().unwrap_or(usize::MAX));
    t.check_lengths().map_err(EngineError::Internal)?;
    Ok(t)
}

fn build_column(
    data_type: &DataType,
    base: &ArrayRef,
    sources: &[Source],
    pid: u32,
) -> Result<ArrayRef> {
    let bad = |v: &Value| {
        EngineError::Internal(format!(
            "value {v:?} does not fit column {pid} of type {data_type}"
        ))
    };
    Ok(match data_type {
        DataType::Int64 => {
            let col = base.as_primitive::<Int64Type>();
            let mut b = Int64Builder::with_capacity(sources.len());
            for s in sources {
                match s {
                    Source::Base(r) => b.append_option((!col.is_null(*r)).then(|| col.value(*r))),
                    Source::New(o) => match o.values.get(&pid) {
                        None => b.append_null(),
                        Some(Value::Int(v)) => b.append_value(*v),
                        Some(v) => return Err(bad(v)),
                    },
                }
            }
            Arc::new(b.finish())
        }
        DataType::Float64 => {
            let col = base.as_primitive::<Float64Type>();
            let mut b = Float64Builder::with_capacity(sources.len());
            for s in sources {
                match s {
                    Source::Base(r) => b.append_option((!col.is_null(*r)).then(|| col.value(*r))),
                    Source::New(o) => match o.values.get(&pid) {
                        None => b.append_null(),
                        Some(Value::Float(v)) => b.append_value(*v),
                        Some(Value::Int(v)) => b.append_value(*v as f64),
                        Some(v) => return Err(bad(v)),
                    },
                }
            }
            Arc::new(b.finish())
        }
        DataType::Utf8 => {
            let col = base.as_string::<i32>();
            let mut b = StringBuilder::with_capacity(sources.len(), sources.len() * 8);
            for s in sources {
                match s {
                    Source::Base(r) => b.append_option((!col.is_null(*r)).then(|| col.value(*r))),
                    Source::New(o) => match o.values.get(&pid) {
                        None => b.append_null(),
                        Some(Value::Text(v)) => b.append_value(v),
                        Some(v) => return Err(bad(v)),
                    },
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
