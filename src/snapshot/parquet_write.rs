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
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use sha2::{Digest, Sha256};

use super::columns::{DeletedTable, ObjectTable, RoadNetwork};
use super::located::{hilbert_order, locate, Located};
use super::manifest::FileEntry;
use crate::error::{EngineError, Result};
use crate::util::hex;

pub const ROW_GROUP_ROWS: usize = 131_072;

/// PROJJSON of EPSG:32633 (WGS 84 / UTM zone 33N): the one label of the stored coordinates,
/// the same the API gives them (`srid` 32633, its default; see ARCHITECTURE.md "Formats").
pub const CRS_PROJJSON: &str = r#"{"$schema":"https://proj.org/schemas/v0.7/projjson.schema.json","type":"ProjectedCRS","name":"WGS 84 / UTM zone 33N","base_crs":{"name":"WGS 84","datum_ensemble":{"name":"World Geodetic System 1984 ensemble","members":[{"name":"World Geodetic System 1984 (Transit)","id":{"authority":"EPSG","code":1166}},{"name":"World Geodetic System 1984 (G730)","id":{"authority":"EPSG","code":1152}},{"name":"World Geodetic System 1984 (G873)","id":{"authority":"EPSG","code":1153}},{"name":"World Geodetic System 1984 (G1150)","id":{"authority":"EPSG","code":1154}},{"name":"World Geodetic System 1984 (G1674)","id":{"authority":"EPSG","code":1155}},{"name":"World Geodetic System 1984 (G1762)","id":{"authority":"EPSG","code":1156}},{"name":"World Geodetic System 1984 (G2139)","id":{"authority":"EPSG","code":1309}},{"name":"World Geodetic System 1984 (G2296)","id":{"authority":"EPSG","code":1383}}],"ellipsoid":{"name":"WGS 84","semi_major_axis":6378137,"inverse_flattening":298.257223563},"accuracy":"2.0","id":{"authority":"EPSG","code":6326}},"coordinate_system":{"subtype":"ellipsoidal","axis":[{"name":"Geodetic latitude","abbreviation":"Lat","direction":"north","unit":"degree"},{"name":"Geodetic longitude","abbreviation":"Lon","direction":"east","unit":"degree"}]},"id":{"authority":"EPSG","code":4326}},"conversion":{"name":"UTM zone 33N","method":{"name":"Transverse Mercator","id":{"authority":"EPSG","code":9807}},"parameters":[{"name":"Latitude of natural origin","value":0,"unit":"degree","id":{"authority":"EPSG","code":8801}},{"name":"Longitude of natural origin","value":15,"unit":"degree","id":{"authority":"EPSG","code":8802}},{"name":"Scale factor at natural origin","value":0.9996,"unit":"unity","id":{"authority":"EPSG","code":8805}},{"name":"False easting","value":500000,"unit":"metre","id":{"authority":"EPSG","code":8806}},{"name":"False northing","value":0,"unit":"metre","id":{"authority":"EPSG","code":8807}}]},"coordinate_system":{"subtype":"Cartesian","axis":[{"name":"Easting","abbreviation":"E","direction":"east","unit":"metre"},{"name":"Northing","abbreviation":"N","direction":"north","unit":"metre"}]},"scope":"Navigation and medium accuracy spatial referencing.","area":"Between 12\u00b0E and 18\u00b0E, northern hemisphere between equator and 84\u00b0N, onshore and offshore. Austria. Bosnia and Herzegovina. Cameroon. Central African Republic. Chad. Congo. Croatia. Czechia. Democratic Republic of the Congo (Zaire). Gabon. Germany. Hungary. Italy. Libya. Malta. Niger. Nigeria. Norway. Poland. San Marino. Slovakia. Slovenia. Svalbard. Sweden. Vatican City State.","bbox":{"south_latitude":0,"west_longitude":12,"north_latitude":84,"east_longitude":18},"id":{"authority":"EPSG","code":32633}}"#;

/// The GeoParquet 1.1 `geo` metadata of a file whose `geometry` column holds `types`, with
/// the `bbox` covering column when `covering`.
fn geo_metadata(types: &[&str], bbox: Option<[f64; 4]>, covering: bool) -> String {
    let types_json = serde_json::to_string(types).expect("strings serialize");
    let bbox_json = bbox
        .map(|b| format!(",\"bbox\":[{},{},{},{}]", b[0], b[1], b[2], b[3]))
        .unwrap_or_default();
    let covering_json = if covering {
        r#","covering":{"bbox":{"xmin":["bbox","xmin"],"ymin":["bbox","ymin"],"xmax":["bbox","xmax"],"ymax":["bbox","ymax"]}}"#
    } else {
        ""
    };
    format!(
        "{{\"version\":\"1.1.0\",\"primary_column\":\"geometry\",\"columns\":{{\"geometry\":{{\"encoding\":\"WKB\",\"geometry_types\":{types_json},\"crs\":{CRS_PROJJSON}{bbox_json}{covering_json}}}}}}}"
    )
}

/// The `bbox` covering column's type: a struct of xmin, ymin, xmax, ymax (GeoParquet 1.1).
pub fn bbox_fields() -> arrow_schema::Fields {
    arrow_schema::Fields::from(
        ["xmin", "ymin", "xmax", "ymax"]
            .map(|n| Field::new(n, arrow_schema::DataType::Float64, false))
            .to_vec(),
    )
}

/// The `bbox` column of rows' boxes (null where a row has none).
fn bbox_column(boxes: &[Option<[f64; 4]>]) -> Result<ArrayRef> {
    use arrow_array::{Float64Array, StructArray};
    let col = |i: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(
            boxes.iter().map(|b| b.map_or(0.0, |b| b[i])),
        ))
    };
    let nulls =
        arrow_buffer::NullBuffer::from(boxes.iter().map(|b| b.is_some()).collect::<Vec<_>>());
    let a = StructArray::try_new(
        bbox_fields(),
        vec![col(0), col(1), col(2), col(3)],
        Some(nulls),
    )
    .map_err(|e| EngineError::Internal(format!("bbox column: {e}")))?;
    Ok(Arc::new(a))
}

fn bbox_union(boxes: &[Option<[f64; 4]>]) -> Option<[f64; 4]> {
    boxes
        .iter()
        .flatten()
        .fold(None, |acc: Option<[f64; 4]>, b| {
            Some(match acc {
                None => *b,
                Some(a) => [
                    a[0].min(b[0]),
                    a[1].min(b[1]),
                    a[2].max(b[2]),
                    a[3].max(b[3]),
                ],
            })
        })
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
    group_rows: usize,
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
        .set_max_row_group_row_count(Some(group_rows))
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

/// The single-file partition of a type (format version 1; still read, no longer written).
pub fn object_file(type_id: u32) -> String {
    format!("objects/type-{type_id}.parquet")
}

/// Rows per chunk file of a type. A changeset rewrites only the chunks whose id range it
/// touches, so small chunks keep small changesets cheap; ~1 µs per row to write.
pub const CHUNK_ROWS: usize = 32_768;

/// The chunk file of a type starting at object id `first_id` (format version 3): one
/// hive-style directory per type, so `objects/type=105/*.parquet` is type 105 alone and
/// DuckDB, Spark and Dask read `type` as a partition column.
pub fn chunk_file(type_id: u32, first_id: u64) -> String {
    format!("objects/type={type_id}/part-{first_id:015}.parquet")
}

pub use super::manifest::is_open_chunk;

/// Rows per row group of an object chunk of `rows` rows: an eighth of the chunk (so a
/// spatially ordered chunk has eight boxes a bbox read can skip), at least 512, at most 4,096.
pub fn object_group_rows(rows: usize) -> usize {
    rows.div_ceil(8).clamp(512, 4096)
}

/// Write a type's table as chunks of `CHUNK_ROWS` rows (in parallel), located on `network`.
pub fn write_type(dir: &Path, t: &ObjectTable, network: &RoadNetwork) -> Result<Vec<FileEntry>> {
    use rayon::prelude::*;
    let starts: Vec<usize> = (0..t.len()).step_by(CHUNK_ROWS).collect();
    starts
        .par_iter()
        .map(|&a| {
            let b = (a + CHUNK_ROWS).min(t.len());
            let chunk = t.slice(a..b);
            write_objects_at(dir, &chunk, network, &chunk_file(t.type_id, t.id[a]))
        })
        .collect()
}

/// The closed rows of the road network (format version 4): the same columns as
/// `NETWORK_FILE`, each row with its `end_date`.
pub const NETWORK_HISTORY_FILE: &str = "network/history.parquet";

/// The file of a type's closed versions (format version 4): every version of its objects
/// that is no longer current (an older version, or the last version of a closed object), in
/// the columns of the type's chunks, one file per type in its own hive-style directory.
pub fn history_file(type_id: u32) -> String {
    format!("history/type={type_id}/versions.parquet")
}

/// The type of a history file's path (`history_file`), None for any other path.
pub fn history_type_of(path: &str) -> Option<u32> {
    path.strip_prefix("history/type=")?
        .strip_suffix("/versions.parquet")?
        .parse()
        .ok()
}

/// Write a type's closed versions (rows in (id, version) order) to its `history_file`,
/// located on `network` (a version placed on a link that is closed today gets no located
/// geometry). The entry has no type id: the history is not one of the type's chunks.
pub fn write_history(dir: &Path, t: &ObjectTable, network: &RoadNetwork) -> Result<FileEntry> {
    t.check_history_lengths()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    let mut entry = write_rows_at(dir, t, network, &history_file(t.type_id))?;
    entry.type_id = None;
    entry.first_id = None;
    Ok(entry)
}

/// Write the road network (rows in link order, as the loader needs them) with its `bbox`
/// covering column.
pub fn write_network(dir: &Path, n: &RoadNetwork) -> Result<FileEntry> {
    write_network_at(dir, n, NETWORK_FILE)
}

/// Write the network's closed rows to `NETWORK_HISTORY_FILE`.
pub fn write_network_history(dir: &Path, n: &RoadNetwork) -> Result<FileEntry> {
    write_network_at(dir, n, NETWORK_HISTORY_FILE)
}

fn write_network_at(dir: &Path, n: &RoadNetwork, rel_path: &str) -> Result<FileEntry> {
    n.check_lengths()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    let (mut arrays, kinds) = n
        .stored_arrays()
        .map_err(|e| EngineError::Internal(format!("road network: {e}")))?;
    let boxes: Vec<Option<[f64; 4]>> = (0..n.len())
        .map(|r| {
            let g = n.geometry(r);
            g.first().map(|f| {
                g.iter().fold([f[0], f[1], f[0], f[1]], |b, c| {
                    [
                        b[0].min(c[0]),
                        b[1].min(c[1]),
                        b[2].max(c[0]),
                        b[3].max(c[1]),
                    ]
                })
            })
        })
        .collect();
    let mut fields = RoadNetwork::stored_fields();
    fields.push(Field::new("bbox", DataType::Struct(bbox_fields()), true));
    arrays.push(bbox_column(&boxes)?);
    let geo = geo_metadata(&kinds, bbox_union(&boxes), true);
    let batch = batch_of(fields, arrays, Some(&geo))?;
    write_file(
        dir,
        rel_path,
        batch.schema(),
        vec![batch],
        Some(geo),
        ROW_GROUP_ROWS,
    )
}

fn batch_of(fields: Vec<Field>, arrays: Vec<ArrayRef>, geo: Option<&str>) -> Result<RecordBatch> {
    let mut schema = Schema::new(fields);
    if let Some(g) = geo {
        // the `geo` metadata also in the Arrow schema (readers that look only there find it)
        schema = schema.with_metadata(std::collections::HashMap::from([(
            "geo".to_string(),
            g.to_string(),
        )]));
    }
    RecordBatch::try_new(Arc::new(schema), arrays)
        .map_err(|e| EngineError::Internal(format!("building record batch: {e}")))
}

/// Columns of an object file that the writer derives from the placements and the network
/// (format version 3). The loader skips them (it derives the same from the network); readers
/// of the files use them: `bbox` (GeoParquet covering), `length_m` (located length, meters),
/// `municipalities` (list of {municipality, length_m}).
pub const DERIVED_OBJECT_COLUMNS: [&str; 3] = ["bbox", "length_m", "municipalities"];
/// Derived columns of the network file.
pub const DERIVED_NETWORK_COLUMNS: [&str; 1] = ["bbox"];
/// True on rows whose `geometry` was located from the placements (the object has no own
/// geometry); the loader reads `geometry` only where it is false.
pub const GEOMETRY_LOCATED: &str = "geometry_located";

/// Write (part of) an object table to `rel_path` (format version 3): rows in Hilbert order
/// of their boxes' centres, row groups of `object_group_rows`, `geometry` the own geometry
/// or else the one located from the placements, then `geometry_located`, `bbox`, `length_m`,
/// `municipalities` and the properties (`p<property id>`). The entry records the first id.
pub fn write_objects_at(
    dir: &Path,
    t: &ObjectTable,
    network: &RoadNetwork,
    rel_path: &str,
) -> Result<FileEntry> {
    t.check_lengths()
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    write_rows_at(dir, t, network, rel_path)
}

/// Write `t`'s rows (checked by the caller) to `rel_path`, as `write_objects_at` describes.
fn write_rows_at(
    dir: &Path,
    t: &ObjectTable,
    network: &RoadNetwork,
    rel_path: &str,
) -> Result<FileEntry> {
    let first_id = t.id.first().copied();
    let located: Vec<Located> = (0..t.len()).map(|r| locate(network, t, r)).collect();
    let boxes: Vec<Option<[f64; 4]>> = located.iter().map(|l| l.bbox).collect();
    let order = hilbert_order(&boxes);
    let t = t
        .take(&order)
        .map_err(|e| EngineError::Internal(e.to_string()))?;
    let located: Vec<&Located> = order.iter().map(|&r| &located[r]).collect();
    let boxes: Vec<Option<[f64; 4]>> = located.iter().map(|l| l.bbox).collect();
    let (mut arrays, _) = t
        .stored_arrays()
        .map_err(|e| EngineError::Internal(format!("type {}: {e}", t.type_id)))?;
    let mut fields = ObjectTable::stored_fields();
    let geometry_at = fields
        .iter()
        .position(|f| f.name() == "geometry")
        .ok_or_else(|| EngineError::Internal("object tables have a geometry column".into()))?;
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut g = arrow_array::builder::BinaryBuilder::with_capacity(t.len(), 0);
    for l in &located {
        match &l.geometry {
            Some((kind, bytes)) => {
                g.append_value(bytes);
                if !kinds.contains(kind) {
                    kinds.push(kind);
                }
            }
            None => g.append_null(),
        }
    }
    arrays[geometry_at] = Arc::new(g.finish());
    fields.push(Field::new(GEOMETRY_LOCATED, DataType::Boolean, false));
    arrays.push(Arc::new(arrow_array::BooleanArray::from(
        located
            .iter()
            .map(|l| l.from_placements)
            .collect::<Vec<_>>(),
    )));
    fields.push(Field::new("bbox", DataType::Struct(bbox_fields()), true));
    arrays.push(bbox_column(&boxes)?);
    fields.push(Field::new("length_m", DataType::Float64, false));
    arrays.push(Arc::new(arrow_array::Float64Array::from_iter_values(
        located.iter().map(|l| l.length_m),
    )));
    let muni_fields = arrow_schema::Fields::from(vec![
        Field::new("municipality", DataType::Int32, false),
        Field::new("length_m", DataType::Float64, false),
    ]);
    let mut offsets = vec![0u32];
    let (mut munis, mut lengths) = (Vec::new(), Vec::new());
    for l in &located {
        for &(m, len) in &l.municipalities {
            munis.push(m as i32);
            lengths.push(len);
        }
        offsets.push(munis.len() as u32);
    }
    fields.push(Field::new(
        "municipalities",
        super::schema::list_type(muni_fields.clone()),
        false,
    ));
    arrays.push(
        super::schema::encode_list(
            muni_fields,
            &offsets,
            vec![
                Arc::new(arrow_array::Int32Array::from(munis)),
                Arc::new(arrow_array::Float64Array::from(lengths)),
            ],
        )
        .map_err(|e| EngineError::Internal(format!("type {}: {e}", t.type_id)))?,
    );
    // then one nullable column per property, `p<property id>`
    for c in &t.properties {
        fields.push(Field::new(
            property_column(c.property_id),
            c.values.data_type().clone(),
            true,
        ));
        arrays.push(c.values.clone());
    }
    // the declared default when no row has a geometry
    if kinds.is_empty() {
        kinds.push("Point Z");
    }
    let geo = geo_metadata(&kinds, bbox_union(&boxes), true);
    let batch = batch_of(fields, arrays, Some(&geo))
        .map_err(|e| EngineError::Internal(format!("type {}: {e}", t.type_id)))?;
    let schema = batch.schema();
    let group_rows = object_group_rows(t.len());
    let mut entry = write_file(dir, rel_path, schema, vec![batch], Some(geo), group_rows)?;
    entry.type_id = Some(t.type_id);
    entry.first_id = first_id;
    Ok(entry)
}

pub fn write_deleted(dir: &Path, d: &DeletedTable) -> Result<FileEntry> {
    let (arrays, _) = d
        .stored_arrays()
        .map_err(|e| EngineError::Internal(format!("deleted objects: {e}")))?;
    let batch = batch_of(DeletedTable::stored_fields(), arrays, None)?;
    write_file(
        dir,
        DELETED_FILE,
        batch.schema(),
        vec![batch],
        None,
        ROW_GROUP_ROWS,
    )
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
