//! Reading generation files back into columnar tables. Row groups are decoded in parallel
//! (rayon); conversion into the typed columns is a copy per column, each column (and each
//! struct child of a list column) found by name through the tables' declarations
//! (`columns.rs`).

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rayon::prelude::*;

use super::columns::{DeletedTable, ObjectTable, PropertyColumn, RoadNetwork};
use super::parquet_write::{
    property_of_column, DERIVED_NETWORK_COLUMNS, DERIVED_OBJECT_COLUMNS, GEOMETRY_LOCATED,
};
use super::schema::SchemaError;
use crate::error::{EngineError, Result};

const BATCH_ROWS: usize = 65_536;

/// Decode all row groups of a file, in parallel, in file order.
pub fn read_batches(path: &Path) -> Result<Vec<RecordBatch>> {
    read_batches_without(path, &[])
}

/// Decode all row groups of a file, in parallel, in file order, leaving out the top-level
/// columns named in `skip` (derived columns the loader does not need).
pub fn read_batches_without(path: &Path, skip: &[&str]) -> Result<Vec<RecordBatch>> {
    let open = || -> Result<ParquetRecordBatchReaderBuilder<File>> {
        let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
        let b = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| EngineError::parquet(path, e))?;
        let keep: Vec<usize> = b
            .schema()
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| !skip.contains(&f.name().as_str()))
            .map(|(i, _)| i)
            .collect();
        if keep.len() == b.schema().fields().len() {
            return Ok(b);
        }
        let mask = ProjectionMask::roots(b.parquet_schema(), keep);
        Ok(b.with_projection(mask))
    };
    let groups = open()?.metadata().num_row_groups();
    let parts: Vec<Result<Vec<RecordBatch>>> = (0..groups)
        .into_par_iter()
        .map(|g| {
            let reader = open()?
                .with_row_groups(vec![g])
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| EngineError::parquet(path, e))?;
            reader
                .map(|b| b.map_err(|e| EngineError::parquet(path, e)))
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

/// Whether the object file at `path` has every struct child today's `ObjectTable` declares for
/// its ragged groups (a file written before a child was added, such as `placements.lanes`,
/// lacks it; it still loads, and `vegdb snapshot upgrade` rewrites it). Reads the footer only.
pub fn has_every_declared_child(path: &Path) -> Result<bool> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| EngineError::parquet(path, e))?;
    let file_schema = b.schema();
    let children = |dt: &arrow_schema::DataType| -> Vec<String> {
        match dt {
            arrow_schema::DataType::List(item) => match item.data_type() {
                arrow_schema::DataType::Struct(fields) => {
                    fields.iter().map(|f| f.name().clone()).collect()
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    };
    Ok(ObjectTable::stored_fields().iter().all(|declared| {
        let want = children(declared.data_type());
        want.is_empty()
            || file_schema.field_with_name(declared.name()).is_ok_and(|f| {
                let have = children(f.data_type());
                want.iter().all(|w| have.contains(w))
            })
    }))
}

/// Read the network's history (`NETWORK_HISTORY_FILE`): the closed rows, in (link, from,
/// start date) order, several rows of a link may cover the same positions at different times.
pub fn read_network_history(path: &Path) -> Result<RoadNetwork> {
    let batches = read_batches_without(path, &DERIVED_NETWORK_COLUMNS)?;
    let mut n = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    for b in &batches {
        n.append_batch(b)
            .map_err(|e| EngineError::corrupt(path, e))?;
    }
    n.check_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    n.derive_absent();
    if !n.link_id.windows(2).all(|w| w[0] <= w[1]) {
        return Err(EngineError::corrupt(path, "rows are not sorted by link id"));
    }
    n.check_values()
        .map_err(|e| EngineError::corrupt(path, e))?;
    Ok(n)
}

/// Whether the network file at `path` has every column today's `RoadNetwork` declares (one
/// written before `end_date` existed lacks it; it still loads, and `vegdb snapshot upgrade`
/// rewrites it). Reads the footer only.
pub fn has_every_network_column(path: &Path) -> Result<bool> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| EngineError::parquet(path, e))?;
    let file_schema = b.schema();
    Ok(RoadNetwork::stored_fields()
        .iter()
        .all(|declared| file_schema.field_with_name(declared.name()).is_ok()))
}

pub fn read_network(path: &Path) -> Result<RoadNetwork> {
    let batches = read_batches_without(path, &DERIVED_NETWORK_COLUMNS)?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut n = RoadNetwork {
        geom_offsets: Vec::with_capacity(rows + 1),
        ..Default::default()
    };
    n.geom_offsets.push(0);
    for b in &batches {
        n.append_batch(b)
            .map_err(|e| EngineError::corrupt(path, e))?;
    }
    n.check_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    n.derive_absent();
    if !n.link_id.windows(2).all(|w| w[0] <= w[1]) {
        return Err(EngineError::corrupt(path, "rows are not sorted by link id"));
    }
    // before any index is built on them: an absurd coordinate would size the grid by it
    n.check_values()
        .map_err(|e| EngineError::corrupt(path, e))?;
    n.build_link_index();
    Ok(n)
}

/// Read an object file of any format version. Version 3 files hold rows in spatial order and
/// a located geometry where an object has no own one: the located geometries are dropped
/// (`geometry_located`) and the rows put back in id order.
pub fn read_objects(path: &Path, type_id: u32) -> Result<ObjectTable> {
    let t = read_object_rows(path, type_id)?;
    t.check_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    Ok(t)
}

/// Read a type's history file (`parquet_write::history_file`): rows in (id, version) order.
pub fn read_history_objects(path: &Path, type_id: u32) -> Result<ObjectTable> {
    let t = read_object_rows(path, type_id)?;
    t.check_history_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    Ok(t)
}

/// An object file's rows in (id, version) order, their values checked.
fn read_object_rows(path: &Path, type_id: u32) -> Result<ObjectTable> {
    let batches = read_batches_without(path, &DERIVED_OBJECT_COLUMNS)?;
    let mut t = ObjectTable::new(type_id);
    let mut props: Vec<(u32, Vec<ArrayRef>)> = Vec::new();
    for b in &batches {
        let own = own_geometry_only(b).map_err(|e| EngineError::corrupt(path, e))?;
        t.append_batch(own.as_ref().unwrap_or(b))
            .map_err(|e| EngineError::corrupt(path, e))?;
        // the columns after the declared ones: properties, `p<id>`
        for (field, array) in b.schema().fields().iter().zip(b.columns()) {
            let Some(id) = property_of_column(field.name()) else {
                continue;
            };
            match props.iter_mut().find(|(pid, _)| *pid == id) {
                Some((_, parts)) => parts.push(array.clone()),
                None => props.push((id, vec![array.clone()])),
            }
        }
    }
    for (property_id, parts) in props {
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        let values = if refs.len() == 1 {
            parts[0].clone()
        } else {
            concat(&refs).map_err(|e| EngineError::corrupt(path, e))?
        };
        t.properties.push(PropertyColumn {
            property_id,
            values,
        });
    }
    // id order (and version order within an id: a history file holds several versions)
    let key = |r: usize| (t.id[r], t.version[r]);
    if !(1..t.len()).all(|r| key(r - 1) < key(r)) {
        let mut order: Vec<usize> = (0..t.len()).collect();
        order.sort_unstable_by_key(|&r| key(r));
        t = t.take(&order).map_err(|e| EngineError::corrupt(path, e))?;
    }
    t.check_values()
        .map_err(|e| EngineError::corrupt(path, e))?;
    Ok(t)
}

/// A batch of a version 3 object file with `geometry` null where it was located from the
/// placements (None: the batch has no such rows to drop).
fn own_geometry_only(b: &RecordBatch) -> Result<Option<RecordBatch>, SchemaError> {
    let arrow = |e: arrow_schema::ArrowError| SchemaError::ArrowOp {
        reason: e.to_string(),
    };
    let Some(located) = b.column_by_name(GEOMETRY_LOCATED) else {
        return Ok(None);
    };
    let located = located
        .as_boolean_opt()
        .ok_or_else(|| SchemaError::NotBoolean {
            name: GEOMETRY_LOCATED.to_string(),
        })?;
    if located.true_count() == 0 {
        return Ok(None);
    }
    let at = b
        .schema()
        .index_of("geometry")
        .map_err(|_| SchemaError::MissingColumn {
            name: "geometry".to_string(),
        })?;
    let geometry = arrow_select::nullif::nullif(b.column(at).as_ref(), located).map_err(arrow)?;
    let mut columns = b.columns().to_vec();
    columns[at] = geometry;
    RecordBatch::try_new(b.schema(), columns)
        .map(Some)
        .map_err(arrow)
}

/// Concatenate arrays of one type (Int64, Float64 or Utf8) without arrow-select.
fn concat(parts: &[&dyn Array]) -> Result<ArrayRef, SchemaError> {
    use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
    use arrow_schema::DataType;
    use std::sync::Arc;
    let dt = parts[0].data_type().clone();
    Ok(match dt {
        DataType::Int64 => {
            let mut b = Int64Builder::new();
            for p in parts {
                b.extend(p.as_primitive::<Int64Type>().iter());
            }
            Arc::new(b.finish())
        }
        DataType::Float64 => {
            let mut b = Float64Builder::new();
            for p in parts {
                b.extend(p.as_primitive::<Float64Type>().iter());
            }
            Arc::new(b.finish())
        }
        DataType::Utf8 => {
            let mut b = StringBuilder::new();
            for p in parts {
                for v in p.as_string::<i32>().iter() {
                    b.append_option(v);
                }
            }
            Arc::new(b.finish())
        }
        other => {
            return Err(SchemaError::UnsupportedPropertyType {
                data_type: other.to_string(),
            })
        }
    })
}

pub fn read_deleted(path: &Path) -> Result<DeletedTable> {
    let mut d = DeletedTable::default();
    for b in &read_batches(path)? {
        d.append_batch(b)
            .map_err(|e| EngineError::corrupt(path, e))?;
    }
    d.check_stored_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    Ok(d)
}
