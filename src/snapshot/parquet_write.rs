//! Writing tables to Parquet (zstd level 1). Geometry columns are ISO WKB with GeoParquet 1.1
//! metadata (`geo` key), so pyarrow, GeoPandas and DuckDB read the files as they are.
//! Files are hashed (SHA-256) while written and fsynced before the entry is returned.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder};
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, ListArray,
    RecordBatch, StringArray, StructArray, TimestampSecondArray, UInt8Array,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use sha2::{Digest, Sha256};

use super::columns::{DeletedTable, ObjectTable, RoadNetwork, OPEN_END};
use super::manifest::FileEntry;
use crate::error::{EngineError, Result};
use crate::geo::wkb;
use crate::util::hex;

pub const ROW_GROUP_ROWS: usize = 131_072;

/// PROJJSON of EPSG:25833 (ETRS89 / UTM zone 33N), the storage system.
const CRS_25833: &str = r#"{"$schema":"https://proj.org/schemas/v0.7/projjson.schema.json","type":"ProjectedCRS","name":"ETRS89 / UTM zone 33N","base_crs":{"name":"ETRS89","datum":{"type":"GeodeticReferenceFrame","name":"European Terrestrial Reference System 1989","ellipsoid":{"name":"GRS 1980","semi_major_axis":6378137,"inverse_flattening":298.257222101}},"coordinate_system":{"subtype":"ellipsoidal","axis":[{"name":"Geodetic latitude","abbreviation":"Lat","direction":"north","unit":"degree"},{"name":"Geodetic longitude","abbreviation":"Lon","direction":"east","unit":"degree"}]},"id":{"authority":"EPSG","code":4258}},"conversion":{"name":"UTM zone 33N","method":{"name":"Transverse Mercator","id":{"authority":"EPSG","code":9807}},"parameters":[{"name":"Latitude of natural origin","value":0,"unit":"degree","id":{"authority":"EPSG","code":8801}},{"name":"Longitude of natural origin","value":15,"unit":"degree","id":{"authority":"EPSG","code":8802}},{"name":"Scale factor at natural origin","value":0.9996,"unit":"unity","id":{"authority":"EPSG","code":8805}},{"name":"False easting","value":500000,"unit":"metre","id":{"authority":"EPSG","code":8806}},{"name":"False northing","value":0,"unit":"metre","id":{"authority":"EPSG","code":8807}}]},"coordinate_system":{"subtype":"Cartesian","axis":[{"name":"Easting","abbreviation":"E","direction":"east","unit":"metre"},{"name":"Northing","abbreviation":"N","direction":"north","unit":"metre"}]},"id":{"authority":"EPSG","code":25833}}"#;

fn geo_metadata(types: &[&str], bbox: Option<[f64; 4]>) -> String {
    let types_json = serde_json::to_string(types).expect("strings serialize");
    let bbox_json = bbox
        .map(|b| format!(",\"bbox\":[{},{},{},{}]", b[0], b[1], b[2], b[3]))
        .unwrap_or_default();
    format!(
        "{{\"version\":\"1.1.0\",\"primary_column\":\"geometry\",\"columns\":{{\"geometry\":{{\"encoding\":\"WKB\",\"geometry_types\":{types_json},\"crs\":{CRS_25833}{bbox_json}}}}}}}"
    )
}

struct HashingWriter {
    inner: BufWriter<File>,
    hasher: Sha256,
    bytes: u64,
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Write batches to `dir/rel_path` (directories created), fsync, and describe the file.
fn write_file(
    dir: &Path,
    rel_path: &str,
    schema: Arc<Schema>,
    batches: Vec<RecordBatch>,
    geo: Option<String>,
) -> Result<FileEntry> {
    let path = dir.join(rel_path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| EngineError::io(parent, e))?;
    }
    let file = File::create(&path).map_err(|e| EngineError::io(&path, e))?;
    let sink = HashingWriter {
        inner: BufWriter::with_capacity(1 << 20, file),
        hasher: Sha256::new(),
        bytes: 0,
    };
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).expect("level 1 is valid"),
        ))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(geo.map(|g| vec![KeyValue::new("geo".to_string(), g)]))
        .build();
    let mut writer = ArrowWriter::try_new(sink, schema, Some(props))
        .map_err(|e| EngineError::parquet(&path, e))?;
    let mut rows = 0u64;
    for b in &batches {
        rows += b.num_rows() as u64;
        writer
            .write(b)
            .map_err(|e| EngineError::parquet(&path, e))?;
    }
    let mut sink = writer
        .into_inner()
        .map_err(|e| EngineError::parquet(&path, e))?;
    sink.flush().map_err(|e| EngineError::io(&path, e))?;
    let file = sink
        .inner
        .into_inner()
        .map_err(|e| EngineError::io(&path, e.into_error()))?;
    file.sync_all().map_err(|e| EngineError::io(&path, e))?;
    Ok(FileEntry {
        path: rel_path.to_string(),
        rows,
        bytes: sink.bytes,
        sha256: hex(&sink.hasher.finalize()),
        type_id: None,
        first_id: None,
    })
}

fn i64s(v: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(v))
}
fn i32s(v: impl Iterator<Item = i32>) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(v))
}
fn f64s(v: &[f64]) -> ArrayRef {
    Arc::new(Float64Array::from(v.to_vec()))
}
fn letters(v: &[u8]) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(
        v.iter().map(|&b| (b as char).to_string()),
    ))
}
fn dates(v: &[i32]) -> ArrayRef {
    Arc::new(Date32Array::from(v.to_vec()))
}

pub const NETWORK_FILE: &str = "network/links.parquet";
pub const DELETED_FILE: &str = "objects/deleted.parquet";

/// The single-file partition of a type (format of the first generations; still read).
pub fn object_file(type_id: u32) -> String {
    format!("objects/type-{type_id}.parquet")
}

/// Rows per chunk file of a type. A changeset rewrites only the chunks whose id range it
/// touches, so small chunks keep small changesets cheap; ~1 µs per row to write.
pub const CHUNK_ROWS: usize = 32_768;

/// The chunk file of a type starting at object id `first_id`.
pub fn chunk_file(type_id: u32, first_id: u64) -> String {
    // flat in objects/, so publishing fsyncs one directory, not one per type
    format!("objects/type-{type_id}-{first_id:015}.parquet")
}

/// Write a type's table as chunks of `CHUNK_ROWS` rows (in parallel).
pub fn write_type(dir: &Path, t: &ObjectTable) -> Result<Vec<FileEntry>> {
    use rayon::prelude::*;
    let starts: Vec<usize> = (0..t.len()).step_by(CHUNK_ROWS).collect();
    starts
        .par_iter()
        .map(|&a| {
            let b = (a + CHUNK_ROWS).min(t.len());
            let chunk = t.slice(a..b);
            write_objects_at(dir, &chunk, &chunk_file(t.type_id, t.id[a]))
        })
        .collect()
}

fn bbox_of(coords: &[[f64; 3]]) -> Option<[f64; 4]> {
    let first = coords.first()?;
    let mut b = [first[0], first[1], first[0], first[1]];
    for c in coords {
        b[0] = b[0].min(c[0]);
        b[1] = b[1].min(c[1]);
        b[2] = b[2].max(c[0]);
        b[3] = b[3].max(c[1]);
    }
    Some(b)
}

pub fn write_network(dir: &Path, n: &RoadNetwork) -> Result<FileEntry> {
    n.check_lengths().map_err(EngineError::Internal)?;
    let mut geometry = BinaryBuilder::with_capacity(n.len(), n.coords.len() * 24 + n.len() * 9);
    for r in 0..n.len() {
        geometry.append_value(wkb::linestring_z(n.geometry(r)));
    }
    let superid: Int64Array = n
        .super_id
        .iter()
        .map(|&s| (s != 0).then_some(s as i64))
        .collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("link_id", i64s(n.link_id.iter().map(|&v| v as i64))),
        ("from_pos", f64s(&n.from_pos)),
        ("to_pos", f64s(&n.to_pos)),
        ("start_node", i64s(n.start_node.iter().map(|&v| v as i64))),
        ("end_node", i64s(n.end_node.iter().map(|&v| v as i64))),
        ("length_m", f64s(&n.length_m)),
        (
            "municipality",
            i32s(n.municipality.iter().map(|&v| v as i32)),
        ),
        ("county", i32s(n.county.iter().map(|&v| v as i32))),
        ("region", i32s(n.region.iter().map(|&v| v as i32))),
        (
            "road_department",
            i32s(n.road_department.iter().map(|&v| v as i32)),
        ),
        ("road_category", letters(&n.road_category)),
        ("road_status", letters(&n.road_status)),
        ("road_number", i32s(n.road_number.iter().map(|&v| v as i32))),
        ("hp", i32s(n.hp.iter().map(|&v| v as i32))),
        ("from_m", i32s(n.from_m.iter().map(|&v| v as i32))),
        ("to_m", i32s(n.to_m.iter().map(|&v| v as i32))),
        (
            "lanes",
            Arc::new(StringArray::from_iter_values(n.lanes.iter())),
        ),
        ("medium", letters(&n.medium)),
        ("theme_code", i32s(n.theme_code.iter().map(|&v| v as i32))),
        (
            "is_connection",
            Arc::new(BooleanArray::from(n.is_connection.clone())),
        ),
        (
            "topology_level",
            i32s(n.topology_level.iter().map(|&v| v as i32)),
        ),
        ("super_id", Arc::new(superid)),
        ("road_type", i32s(n.road_type.iter().map(|&v| v as i32))),
        ("start_date", dates(&n.start_date)),
        ("q_method", i32s(n.q_method.iter().map(|&v| v as i32))),
        ("q_accuracy", i32s(n.q_accuracy.iter().map(|&v| v as i32))),
        (
            "q_height_accuracy",
            i32s(n.q_height_accuracy.iter().map(|&v| v as i32)),
        ),
        ("q_tolerance", i32s(n.q_tolerance.iter().map(|&v| v as i32))),
        (
            "q_visibility",
            i32s(n.q_visibility.iter().map(|&v| v as i32)),
        ),
        ("q_capture_date", dates(&n.q_capture_date)),
        ("geometry", Arc::new(geometry.finish())),
    ];
    let batch = batch_of(columns)?;
    let geo = geo_metadata(&["LineString Z"], bbox_of(&n.coords));
    write_file(dir, NETWORK_FILE, batch.schema(), vec![batch], Some(geo))
}

fn batch_of(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| {
            Field::new(
                *name,
                a.data_type().clone(),
                a.null_count() > 0
                    || *name == "geometry"
                    || *name == "super_id"
                    || *name == "end_date",
            )
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| EngineError::Internal(format!("building record batch: {e}")))
}

pub fn placement_fields() -> Fields {
    Fields::from(vec![
        Field::new("link_id", DataType::Int64, false),
        Field::new("from_pos", DataType::Float64, false),
        Field::new("to_pos", DataType::Float64, false),
        Field::new("direction", DataType::UInt8, false),
    ])
}

pub fn child_fields() -> Fields {
    Fields::from(vec![
        Field::new("type_id", DataType::Int32, false),
        Field::new("id", DataType::Int64, false),
    ])
}

fn list_of(fields: Fields, offsets: &[u32], columns: Vec<ArrayRef>) -> Result<ArrayRef> {
    let values = StructArray::try_new(fields.clone(), columns, None)
        .map_err(|e| EngineError::Internal(format!("struct array: {e}")))?;
    let item = Arc::new(Field::new("item", DataType::Struct(fields), false));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(
        offsets.iter().map(|&o| o as i32).collect::<Vec<i32>>(),
    ));
    let list = ListArray::try_new(item, offsets, Arc::new(values), None)
        .map_err(|e| EngineError::Internal(format!("list array: {e}")))?;
    Ok(Arc::new(list))
}

/// Write one object type's table to `objects/type-<id>.parquet`.
pub fn write_objects(dir: &Path, t: &ObjectTable) -> Result<FileEntry> {
    write_objects_at(dir, t, &object_file(t.type_id))
}

/// Write (part of) an object table to `rel_path`; the entry records the first id.
pub fn write_objects_at(dir: &Path, t: &ObjectTable, rel_path: &str) -> Result<FileEntry> {
    t.check_lengths().map_err(EngineError::Internal)?;
    let mut geometry = BinaryBuilder::new();
    let mut kinds = Vec::new();
    for r in 0..t.len() {
        match t.own_geometry(r) {
            [] => geometry.append_null(),
            surface if crate::geo::surface::is_surface(surface) => {
                geometry.append_value(crate::geo::surface::to_wkb(surface));
                if !kinds.contains(&"MultiPolygon") {
                    kinds.push("MultiPolygon");
                }
            }
            [p] => {
                geometry.append_value(wkb::point_z(p));
                if !kinds.contains(&"Point Z") {
                    kinds.push("Point Z");
                }
            }
            line => {
                geometry.append_value(wkb::linestring_z(line));
                if !kinds.contains(&"LineString Z") {
                    kinds.push("LineString Z");
                }
            }
        }
    }
    let end: Date32Array = t
        .end_date
        .iter()
        .map(|&d| (d != OPEN_END).then_some(d))
        .collect();
    let mut columns: Vec<(String, ArrayRef)> = vec![
        ("id".into(), i64s(t.id.iter().map(|&v| v as i64))),
        ("version".into(), i32s(t.version.iter().map(|&v| v as i32))),
        ("start_date".into(), dates(&t.start_date)),
        ("end_date".into(), Arc::new(end)),
        (
            "last_modified".into(),
            Arc::new(TimestampSecondArray::from(t.last_modified.clone()).with_timezone("UTC")),
        ),
        (
            "placements".into(),
            list_of(
                placement_fields(),
                &t.loc_offsets,
                vec![
                    i64s(t.loc_link.iter().map(|&v| v as i64)),
                    f64s(&t.loc_from),
                    f64s(&t.loc_to),
                    Arc::new(UInt8Array::from(t.loc_direction.clone())),
                ],
            )?,
        ),
        (
            "children".into(),
            list_of(
                child_fields(),
                &t.child_offsets,
                vec![
                    i32s(t.child_type.iter().map(|&v| v as i32)),
                    i64s(t.child_id.iter().map(|&v| v as i64)),
                ],
            )?,
        ),
        ("geometry".into(), Arc::new(geometry.finish())),
    ];
    for c in &t.properties {
        columns.push((format!("p{}", c.property_id), c.values.clone()));
    }
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| {
            let nullable = a.null_count() > 0
                || name == "geometry"
                || name == "end_date"
                || name.starts_with('p') && name != "placements";
            Field::new(name.as_str(), a.data_type().clone(), nullable)
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .map_err(|e| EngineError::Internal(format!("type {}: {e}", t.type_id)))?;
    let geo = geo_metadata(
        if kinds.is_empty() {
            &["Point Z"]
        } else {
            &kinds
        },
        bbox_of(&t.geom_coords),
    );
    let mut entry = write_file(dir, rel_path, schema, vec![batch], Some(geo))?;
    entry.type_id = Some(t.type_id);
    if rel_path != object_file(t.type_id) {
        entry.first_id = t.id.first().copied();
    }
    Ok(entry)
}

pub fn write_deleted(dir: &Path, d: &DeletedTable) -> Result<FileEntry> {
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("type_id", i32s(d.type_id.iter().map(|&v| v as i32))),
        ("id", i64s(d.id.iter().map(|&v| v as i64))),
        ("version", i32s(d.version.iter().map(|&v| v as i32))),
        (
            "deleted_at",
            Arc::new(TimestampSecondArray::from(d.deleted_at.clone()).with_timezone("UTC")),
        ),
    ];
    let batch = batch_of(columns)?;
    write_file(dir, DELETED_FILE, batch.schema(), vec![batch], None)
}

/// An Int64 property column from optional values.
pub fn int_column(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    let mut b = Int64Builder::new();
    for v in values {
        b.append_option(v);
    }
    Arc::new(b.finish())
}
