//! Writing tables to Parquet (zstd level 1). The columns, their order and types come from the
//! tables' declarations (`columns.rs`); an object table adds its properties as `p<id>`
//! columns. Geometry columns are ISO WKB with GeoParquet 1.1
//! metadata (`geo` key), so pyarrow, GeoPandas and DuckDB read the files as they are.
//! Files are hashed (SHA-256) while written and fsynced before the entry is returned.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::Int64Builder;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use sha2::{Digest, Sha256};

use super::columns::{DeletedTable, ObjectTable, RoadNetwork};
use super::manifest::FileEntry;
use crate::error::{EngineError, Result};
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
    n.check_lengths()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    let (arrays, kinds) = n
        .stored_arrays()
        .map_err(|e| EngineError::Internal(format!("road network: {e}")))?;
    let batch = batch_of(RoadNetwork::stored_fields(), arrays)?;
    let geo = geo_metadata(&kinds, bbox_of(&n.coords));
    write_file(dir, NETWORK_FILE, batch.schema(), vec![batch], Some(geo))
}

fn batch_of(fields: Vec<Field>, arrays: Vec<ArrayRef>) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(fields));
    RecordBatch::try_new(schema, arrays)
        .map_err(|e| EngineError::Internal(format!("building record batch: {e}")))
}

/// Write one object type's table to `objects/type-<id>.parquet`.
pub fn write_objects(dir: &Path, t: &ObjectTable) -> Result<FileEntry> {
    write_objects_at(dir, t, &object_file(t.type_id))
}

/// Write (part of) an object table to `rel_path`; the entry records the first id.
pub fn write_objects_at(dir: &Path, t: &ObjectTable, rel_path: &str) -> Result<FileEntry> {
    t.check_lengths()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    let (mut arrays, kinds) = t
        .stored_arrays()
        .map_err(|e| EngineError::Internal(format!("type {}: {e}", t.type_id)))?;
    let mut fields = ObjectTable::stored_fields();
    // then one nullable column per property, `p<property id>`
    for c in &t.properties {
        fields.push(Field::new(
            property_column(c.property_id),
            c.values.data_type().clone(),
            true,
        ));
        arrays.push(c.values.clone());
    }
    let batch = batch_of(fields, arrays)
        .map_err(|e| EngineError::Internal(format!("type {}: {e}", t.type_id)))?;
    let schema = batch.schema();
    let geo = geo_metadata(&kinds, bbox_of(&t.geom_coords));
    let mut entry = write_file(dir, rel_path, schema, vec![batch], Some(geo))?;
    entry.type_id = Some(t.type_id);
    if rel_path != object_file(t.type_id) {
        entry.first_id = t.id.first().copied();
    }
    Ok(entry)
}

pub fn write_deleted(dir: &Path, d: &DeletedTable) -> Result<FileEntry> {
    let (arrays, _) = d
        .stored_arrays()
        .map_err(|e| EngineError::Internal(format!("deleted objects: {e}")))?;
    let batch = batch_of(DeletedTable::stored_fields(), arrays)?;
    write_file(dir, DELETED_FILE, batch.schema(), vec![batch], None)
}

/// The stored name of a property column.
pub fn property_column(property_id: u32) -> String {
    format!("p{property_id}")
}

/// The property id of a stored column name (`p<id>`); None for the declared columns.
pub fn property_of_column(name: &str) -> Option<u32> {
    name.strip_prefix('p')?.parse().ok()
}

/// An Int64 property column from optional values.
pub fn int_column(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    let mut b = Int64Builder::new();
    for v in values {
        b.append_option(v);
    }
    Arc::new(b.finish())
}
