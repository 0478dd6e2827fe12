//! Reading generation files back into columnar tables. Row groups are decoded in parallel
//! (rayon); conversion into the typed columns is a copy per column.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float64Type, Int32Type, Int64Type, TimestampSecondType, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rayon::prelude::*;

use super::columns::{DeletedTable, ObjectTable, PropertyColumn, RoadNetwork, OPEN_END};
use crate::error::{EngineError, Result};
use crate::geo::wkb;

const BATCH_ROWS: usize = 65_536;

/// Decode all row groups of a file, in parallel, in file order.
pub fn read_batches(path: &Path) -> Result<Vec<RecordBatch>> {
    let open = || -> Result<ParquetRecordBatchReaderBuilder<File>> {
        let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| EngineError::parquet(path, e))
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

fn column<'a>(path: &Path, b: &'a RecordBatch, name: &str) -> Result<&'a ArrayRef> {
    b.column_by_name(name)
        .ok_or_else(|| EngineError::corrupt(path, format!("missing column {name}")))
}

macro_rules! prim {
    ($path:expr, $b:expr, $name:expr, $t:ty) => {
        column($path, $b, $name)?
            .as_primitive_opt::<$t>()
            .ok_or_else(|| {
                EngineError::corrupt($path, format!("column {} has the wrong type", $name))
            })?
    };
}

fn letter_column(path: &Path, b: &RecordBatch, name: &str, out: &mut Vec<u8>) -> Result<()> {
    let a = column(path, b, name)?
        .as_string_opt::<i32>()
        .ok_or_else(|| EngineError::corrupt(path, format!("column {name} is not text")))?;
    out.extend(
        a.iter()
            .map(|s| s.and_then(|s| s.bytes().next()).unwrap_or(b'?')),
    );
    Ok(())
}

fn decode_geometry(path: &Path, bytes: Option<&[u8]>, out: &mut Vec<[f64; 3]>) -> Result<()> {
    if let Some(bytes) = bytes {
        wkb::decode_into(bytes, out)
            .ok_or_else(|| EngineError::corrupt(path, "bad WKB geometry"))?;
    }
    Ok(())
}

pub fn read_network(path: &Path) -> Result<RoadNetwork> {
    let batches = read_batches(path)?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut n = RoadNetwork {
        geom_offsets: Vec::with_capacity(rows + 1),
        ..Default::default()
    };
    n.geom_offsets.push(0);
    for b in &batches {
        n.link_id.extend(
            prim!(path, b, "link_id", Int64Type)
                .values()
                .iter()
                .map(|&v| v as u64),
        );
        n.from_pos
            .extend_from_slice(prim!(path, b, "from_pos", Float64Type).values());
        n.to_pos
            .extend_from_slice(prim!(path, b, "to_pos", Float64Type).values());
        n.start_node.extend(
            prim!(path, b, "start_node", Int64Type)
                .values()
                .iter()
                .map(|&v| v as u64),
        );
        n.end_node.extend(
            prim!(path, b, "end_node", Int64Type)
                .values()
                .iter()
                .map(|&v| v as u64),
        );
        n.length_m
            .extend_from_slice(prim!(path, b, "length_m", Float64Type).values());
        n.municipality.extend(
            prim!(path, b, "municipality", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u16),
        );
        n.county.extend(
            prim!(path, b, "county", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        n.region.extend(
            prim!(path, b, "region", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        n.road_department.extend(
            prim!(path, b, "road_department", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        letter_column(path, b, "road_category", &mut n.road_category)?;
        letter_column(path, b, "road_status", &mut n.road_status)?;
        n.road_number.extend(
            prim!(path, b, "road_number", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u32),
        );
        n.hp.extend(
            prim!(path, b, "hp", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u16),
        );
        n.from_m.extend(
            prim!(path, b, "from_m", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u32),
        );
        n.to_m.extend(
            prim!(path, b, "to_m", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u32),
        );
        let lanes = column(path, b, "lanes")?
            .as_string_opt::<i32>()
            .ok_or_else(|| EngineError::corrupt(path, "lanes is not text"))?;
        n.lanes
            .extend(lanes.iter().map(|s| s.unwrap_or_default().to_string()));
        letter_column(path, b, "medium", &mut n.medium)?;
        n.theme_code.extend(
            prim!(path, b, "theme_code", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u16),
        );
        let conn = column(path, b, "is_connection")?
            .as_boolean_opt()
            .ok_or_else(|| EngineError::corrupt(path, "is_connection is not boolean"))?;
        n.is_connection
            .extend(conn.iter().map(|v| v.unwrap_or(false)));
        n.topology_level.extend(
            prim!(path, b, "topology_level", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        n.super_id.extend(
            prim!(path, b, "super_id", Int64Type)
                .iter()
                .map(|v| v.unwrap_or(0) as u64),
        );
        n.road_type.extend(
            prim!(path, b, "road_type", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        n.start_date
            .extend_from_slice(prim!(path, b, "start_date", Date32Type).values());
        n.q_method.extend(
            prim!(path, b, "q_method", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        n.q_accuracy.extend(
            prim!(path, b, "q_accuracy", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u16),
        );
        n.q_height_accuracy.extend(
            prim!(path, b, "q_height_accuracy", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u16),
        );
        n.q_tolerance.extend(
            prim!(path, b, "q_tolerance", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u16),
        );
        n.q_visibility.extend(
            prim!(path, b, "q_visibility", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u8),
        );
        n.q_capture_date
            .extend_from_slice(prim!(path, b, "q_capture_date", Date32Type).values());
        let geometry = column(path, b, "geometry")?
            .as_binary_opt::<i32>()
            .ok_or_else(|| EngineError::corrupt(path, "geometry is not binary"))?;
        for g in geometry.iter() {
            decode_geometry(path, g, &mut n.coords)?;
            n.geom_offsets.push(n.coords.len() as u32);
        }
    }
    n.check_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    if !n.link_id.windows(2).all(|w| w[0] <= w[1]) {
        return Err(EngineError::corrupt(path, "rows are not sorted by link id"));
    }
    n.build_link_index();
    Ok(n)
}

pub fn read_objects(path: &Path, type_id: u32) -> Result<ObjectTable> {
    let batches = read_batches(path)?;
    let mut t = ObjectTable::new(type_id);
    let mut props: Vec<(u32, Vec<ArrayRef>)> = Vec::new();
    for b in &batches {
        t.id.extend(
            prim!(path, b, "id", Int64Type)
                .values()
                .iter()
                .map(|&v| v as u64),
        );
        t.version.extend(
            prim!(path, b, "version", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u32),
        );
        t.start_date
            .extend_from_slice(prim!(path, b, "start_date", Date32Type).values());
        t.end_date.extend(
            prim!(path, b, "end_date", Date32Type)
                .iter()
                .map(|v| v.unwrap_or(OPEN_END)),
        );
        t.last_modified
            .extend_from_slice(prim!(path, b, "last_modified", TimestampSecondType).values());

        let placements = column(path, b, "placements")?
            .as_list_opt::<i32>()
            .ok_or_else(|| EngineError::corrupt(path, "placements is not a list"))?;
        let base = t.loc_link.len() as u32;
        let first = placements.offsets()[0];
        t.loc_offsets.extend(
            placements.offsets()[1..]
                .iter()
                .map(|&o| base + (o - first) as u32),
        );
        let values = placements
            .values()
            .as_struct_opt()
            .ok_or_else(|| EngineError::corrupt(path, "placements items are not structs"))?;
        let start = first as usize;
        let end = placements.offsets().last() as usize;
        let link = values.column(0).as_primitive::<Int64Type>();
        let from = values.column(1).as_primitive::<Float64Type>();
        let to = values.column(2).as_primitive::<Float64Type>();
        let dir = values.column(3).as_primitive::<UInt8Type>();
        t.loc_link
            .extend(link.values()[start..end].iter().map(|&v| v as u64));
        t.loc_from.extend_from_slice(&from.values()[start..end]);
        t.loc_to.extend_from_slice(&to.values()[start..end]);
        t.loc_direction.extend_from_slice(&dir.values()[start..end]);

        let children = column(path, b, "children")?
            .as_list_opt::<i32>()
            .ok_or_else(|| EngineError::corrupt(path, "children is not a list"))?;
        let base = t.child_id.len() as u32;
        let first = children.offsets()[0];
        t.child_offsets.extend(
            children.offsets()[1..]
                .iter()
                .map(|&o| base + (o - first) as u32),
        );
        let values = children
            .values()
            .as_struct_opt()
            .ok_or_else(|| EngineError::corrupt(path, "children items are not structs"))?;
        let (start, end) = (first as usize, children.offsets().last() as usize);
        t.child_type.extend(
            values.column(0).as_primitive::<Int32Type>().values()[start..end]
                .iter()
                .map(|&v| v as u32),
        );
        t.child_id.extend(
            values.column(1).as_primitive::<Int64Type>().values()[start..end]
                .iter()
                .map(|&v| v as u64),
        );

        let geometry = column(path, b, "geometry")?
            .as_binary_opt::<i32>()
            .ok_or_else(|| EngineError::corrupt(path, "geometry is not binary"))?;
        for g in geometry.iter() {
            decode_geometry(path, g, &mut t.geom_coords)?;
            t.geom_offsets.push(t.geom_coords.len() as u32);
        }
        for (field, array) in b.schema().fields().iter().zip(b.columns()) {
            let Some(id) = field
                .name()
                .strip_prefix('p')
                .and_then(|s| s.parse::<u32>().ok())
            else {
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
    t.check_lengths()
        .map_err(|e| EngineError::corrupt(path, e))?;
    Ok(t)
}

/// Concatenate arrays of one type (Int64, Float64 or Utf8) without arrow-select.
fn concat(parts: &[&dyn Array]) -> Result<ArrayRef, String> {
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
        other => return Err(format!("unsupported property column type {other}")),
    })
}

pub fn read_deleted(path: &Path) -> Result<DeletedTable> {
    let mut d = DeletedTable::default();
    for b in &read_batches(path)? {
        d.type_id.extend(
            prim!(path, b, "type_id", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u32),
        );
        d.id.extend(
            prim!(path, b, "id", Int64Type)
                .values()
                .iter()
                .map(|&v| v as u64),
        );
        d.version.extend(
            prim!(path, b, "version", Int32Type)
                .values()
                .iter()
                .map(|&v| v as u32),
        );
        d.deleted_at
            .extend_from_slice(prim!(path, b, "deleted_at", TimestampSecondType).values());
    }
    Ok(d)
}
