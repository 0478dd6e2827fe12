//! `vegdb export`: one object type of a generation as a GIS file — FlatGeobuf (read natively
//! by Debian's GDAL and QGIS), GeoJSON or GeoParquet. Each object is a feature built by the
//! engine's feature view (`generation::feature`, the same as the API's GeoJSON): its own
//! geometry, else its located geometry (lines for line-placed types), and its property values
//! by property-type name with enumerations decoded (plus `<name>_id`, the allowed value's id).
//! The fixed members are those of the API's GeoJSON: `nvdbId`, `vegobjekttype`, `versjon`,
//! `egengeometri`. Sensitive values are left out (the export is for anyone).
//!
//! Coordinates: GeoJSON defaults to WGS 84 lon/lat (RFC 7946), FlatGeobuf and GeoParquet to
//! EPSG:32633 (the stored numbers, the files' one label); `--srid` chooses another accepted
//! system (GeoParquet: 32633, 25833 or 4326, the systems whose PROJJSON is embedded).

pub mod segmented;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use geozero::{ColumnValue, CoordDimensions, GeomProcessor, GeozeroGeometry, PropertyProcessor};
use roaring::RoaringBitmap;

use crate::api::geojson::{push_object_feature, Crs};
use crate::area::{AreaKind, Areas};
use crate::catalog::{datatype, ObjectType};
use crate::error::{EngineError, Result};
use crate::generation::feature::{Feature, FeatureOptions, Geometry, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::Generation;
use crate::geo::srid::Srid;
use crate::geo::Coord3;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// FlatGeobuf with a spatial index.
    Fgb,
    /// A GeoJSON FeatureCollection.
    Geojson,
    /// GeoParquet 1.1 (WKB).
    Geoparquet,
}

impl Format {
    /// The default coordinate system of the format.
    pub fn default_srid(self) -> Srid {
        match self {
            Format::Geojson => Srid::Wgs84,
            _ => Srid::Utm33Wgs84,
        }
    }
}

/// What to export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub type_id: u32,
    pub format: Format,
    pub srid: Srid,
    /// Only objects in these municipalities (any, when empty): the objects
    /// `/vegobjekter/{type}?kommune=…` lists.
    pub municipalities: Vec<u16>,
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportReport {
    pub features: usize,
    pub bytes: u64,
}

/// The rows of the type the options select, ascending.
pub fn select_rows(g: &Generation, opts: &ExportOptions) -> Result<RoaringBitmap> {
    let Some(data) = g.objects.get(&opts.type_id) else {
        if g.catalog.object_type(opts.type_id).is_none() {
            return Err(EngineError::Internal(format!(
                "unknown object type {}",
                opts.type_id
            )));
        }
        return Ok(RoaringBitmap::new());
    };
    if opts.municipalities.is_empty() {
        return Ok((0..data.table.len() as u32).collect());
    }
    let mut rows = RoaringBitmap::new();
    for &k in &opts.municipalities {
        if Areas::embedded().municipality(k).is_none() {
            return Err(EngineError::Internal(format!("unknown kommune {k}")));
        }
        if let Some(b) = data.index().areas.get(&(AreaKind::Municipality, k as u32)) {
            rows |= b;
        }
    }
    Ok(rows)
}

/// Export to `out` (a file path). Writes to a temporary file beside it and renames, so a
/// failed export leaves no partial file.
pub fn export(g: &Generation, opts: &ExportOptions, out: &Path) -> Result<ExportReport> {
    let rows = select_rows(g, opts)?;
    let features = features(g, opts, &rows)?;
    let (tmp, mut w) = partial_file(out)?;
    let object_type = g.catalog.object_type(opts.type_id);
    let written = match opts.format {
        Format::Geojson => {
            write_geojson(g, &features, opts.srid, &mut w).map_err(|e| EngineError::io(&tmp, e))?;
            features.len()
        }
        Format::Fgb => write_fgb(object_type, opts, &features, &mut w)?,
        Format::Geoparquet => {
            write_geoparquet(object_type, opts, &features, &mut w)?;
            features.len()
        }
    };
    let bytes = commit_partial(w, &tmp, out)?;
    Ok(ExportReport {
        features: written,
        bytes,
    })
}

/// The temporary file an export of `out` is written to (beside it), and its buffered writer.
fn partial_file(out: &Path) -> Result<(PathBuf, BufWriter<File>)> {
    let tmp = out.with_extension("partial");
    let file = File::create(&tmp).map_err(|e| EngineError::io(&tmp, e))?;
    Ok((tmp, BufWriter::with_capacity(1 << 20, file)))
}

/// Flushes and syncs the temporary file `tmp` and renames it to `out`: its size in bytes.
fn commit_partial(w: BufWriter<File>, tmp: &Path, out: &Path) -> Result<u64> {
    let file = w
        .into_inner()
        .map_err(|e| EngineError::io(tmp, e.into_error()))?;
    file.sync_all().map_err(|e| EngineError::io(tmp, e))?;
    let bytes = file.metadata().map_err(|e| EngineError::io(tmp, e))?.len();
    std::fs::rename(tmp, out).map_err(|e| EngineError::io(out, e))?;
    Ok(bytes)
}

/// The features of the selected rows, in id order, in `opts.srid` (in parallel).
fn features<'g>(
    g: &'g Generation,
    opts: &ExportOptions,
    rows: &RoaringBitmap,
) -> Result<Vec<Feature<'g>>> {
    use rayon::prelude::*;
    let Some(data) = g.objects.get(&opts.type_id) else {
        return Ok(Vec::new());
    };
    let fo = FeatureOptions {
        srid: opts.srid,
        sensitive: false,
        geometry_only: false,
    };
    let rows: Vec<u32> = rows.iter().collect();
    rows.par_iter()
        .map(|&r| g.feature(ObjectRow::new(&data.table, r as usize), &fo))
        .collect()
}

fn write_geojson(
    g: &Generation,
    features: &[Feature],
    srid: Srid,
    w: &mut impl Write,
) -> std::io::Result<()> {
    let crs = Crs::new(srid);
    w.write_all(br#"{"type":"FeatureCollection","#)?;
    if srid != Srid::Wgs84 {
        write!(
            w,
            r#""crs":{{"type":"name","properties":{{"name":"urn:ogc:def:crs:EPSG::{}"}}}},"#,
            srid.code()
        )?;
    }
    w.write_all(br#""features":["#)?;
    let mut s = String::new();
    for (i, f) in features.iter().enumerate() {
        s.clear();
        if i > 0 {
            s.push_str(",\n");
        }
        push_object_feature(&mut s, g, f, crs);
        w.write_all(s.as_bytes())?;
    }
    w.write_all(b"]}\n")
}

/// The columns of a type's export: (name, kind) in catalogue order, each enum followed by its
/// `<name>_id`; the kind decides the column type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Integer,
    Float,
}

fn property_columns(t: Option<&ObjectType>) -> Vec<(String, Kind)> {
    let mut out = Vec::new();
    for p in t.iter().flat_map(|t| t.property_types.iter()) {
        if p.is_geometry() || p.sensitivity > 0 {
            continue;
        }
        let kind = match p.storage() {
            crate::catalog::ValueKind::Enum if p.datatype == datatype::ENUM_NUMBER => Kind::Float,
            crate::catalog::ValueKind::Integer => Kind::Integer,
            crate::catalog::ValueKind::Float => Kind::Float,
            _ => Kind::Text,
        };
        out.push((p.name.clone(), kind));
        if p.is_enum() {
            out.push((format!("{}_id", p.name), Kind::Integer));
        }
    }
    out
}

/// A feature's values by column name.
enum Val<'a> {
    Text(&'a str),
    Integer(i64),
    Float(f64),
}

fn values<'a>(f: &Feature<'a>) -> BTreeMap<String, Val<'a>> {
    let mut out = BTreeMap::new();
    for p in &f.properties {
        match p.value {
            PropertyValue::Enum { id, name, number } => {
                out.insert(
                    p.name.to_string(),
                    match number {
                        Some(n) => Val::Float(n),
                        None => Val::Text(name),
                    },
                );
                out.insert(format!("{}_id", p.name), Val::Integer(id as i64));
            }
            PropertyValue::Integer(v) => {
                out.insert(p.name.to_string(), Val::Integer(v));
            }
            PropertyValue::Float(v) => {
                out.insert(p.name.to_string(), Val::Float(v));
            }
            PropertyValue::Text(t) => {
                out.insert(p.name.to_string(), Val::Text(t));
            }
        }
    }
    out
}

/// A feature geometry for geozero (with heights).
struct Geom<'a>(&'a Geometry);

impl GeozeroGeometry for Geom<'_> {
    fn process_geom<P: GeomProcessor>(&self, p: &mut P) -> geozero::error::Result<()> {
        fn coords<P: GeomProcessor>(p: &mut P, l: &[Coord3]) -> geozero::error::Result<()> {
            for (i, c) in l.iter().enumerate() {
                if p.multi_dim() {
                    p.coordinate(c[0], c[1], Some(c[2]), None, None, None, i)?;
                } else {
                    p.xy(c[0], c[1], i)?;
                }
            }
            Ok(())
        }
        match self.0 {
            Geometry::Point(c) => {
                p.point_begin(0)?;
                coords(p, std::slice::from_ref(c))?;
                p.point_end(0)
            }
            Geometry::LineString(l) => {
                p.linestring_begin(true, l.len(), 0)?;
                coords(p, l)?;
                p.linestring_end(true, 0)
            }
            Geometry::MultiLineString(ls) => {
                p.multilinestring_begin(ls.len(), 0)?;
                for (i, l) in ls.iter().enumerate() {
                    p.linestring_begin(false, l.len(), i)?;
                    coords(p, l)?;
                    p.linestring_end(false, i)?;
                }
                p.multilinestring_end(0)
            }
            Geometry::MultiPolygon(ps) => {
                p.multipolygon_begin(ps.len(), 0)?;
                for (i, rings) in ps.iter().enumerate() {
                    p.polygon_begin(false, rings.len(), i)?;
                    for (j, r) in rings.iter().enumerate() {
                        p.linestring_begin(false, r.len(), j)?;
                        coords(p, r)?;
                        p.linestring_end(false, j)?;
                    }
                    p.polygon_end(false, i)?;
                }
                p.multipolygon_end(0)
            }
        }
    }
    fn dims(&self) -> CoordDimensions {
        CoordDimensions::xyz()
    }
}

fn fgb_err(e: impl std::fmt::Display) -> EngineError {
    EngineError::Internal(format!("FlatGeobuf: {e}"))
}

fn kind_name(g: &Geometry) -> &'static str {
    match g {
        Geometry::Point(_) => "Point",
        Geometry::LineString(_) => "LineString",
        Geometry::MultiLineString(_) => "MultiLineString",
        Geometry::MultiPolygon(_) => "MultiPolygon",
    }
}

/// Returns the features written (FlatGeobuf features need a geometry: objects without any
/// are left out).
fn write_fgb(
    t: Option<&ObjectType>,
    opts: &ExportOptions,
    features: &[Feature],
    w: &mut impl Write,
) -> Result<usize> {
    use flatgeobuf::{ColumnType, FgbCrs, FgbWriter, FgbWriterOptions, GeometryType};
    let kinds: std::collections::BTreeSet<&str> = features
        .iter()
        .filter_map(|f| f.geometry.as_ref())
        .map(kind_name)
        .collect();
    let lines = kinds
        .iter()
        .all(|k| *k == "LineString" || *k == "MultiLineString");
    let (geometry_type, promote) = match kinds.iter().copied().collect::<Vec<_>>().as_slice() {
        ["Point"] => (GeometryType::Point, false),
        ["MultiPolygon"] => (GeometryType::MultiPolygon, false),
        ["LineString"] => (GeometryType::LineString, false),
        _ if lines && !kinds.is_empty() => (GeometryType::MultiLineString, true),
        _ => (GeometryType::Unknown, false),
    };
    let name = t.map(|t| t.name.as_str()).unwrap_or("vegobjekter");
    let mut fgb = FgbWriter::create_with_options(
        name,
        geometry_type,
        FgbWriterOptions {
            write_index: true,
            promote_to_multi: promote,
            has_z: true,
            crs: FgbCrs {
                code: opts.srid.code() as i32,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .map_err(fgb_err)?;
    let mut columns: Vec<(String, Kind)> = vec![
        ("nvdbId".into(), Kind::Integer),
        ("vegobjekttype".into(), Kind::Integer),
        ("versjon".into(), Kind::Integer),
    ];
    columns.extend(property_columns(t));
    for (c, k) in &columns {
        let ct = match k {
            Kind::Text => ColumnType::String,
            Kind::Integer => ColumnType::Long,
            Kind::Float => ColumnType::Double,
        };
        fgb.add_column(c, ct, |_, col| col.nullable = true);
    }
    fgb.add_column("egengeometri", ColumnType::Bool, |_, _| {});
    let own_at = columns.len();
    for f in features {
        let Some(geom) = &f.geometry else {
            continue; // FlatGeobuf features need a geometry; counted by the caller
        };
        let vals = values(f);
        fgb.add_feature_geom(Geom(geom), |feat| {
            let _ = feat.property(0, "nvdbId", &ColumnValue::Long(f.id as i64));
            let _ = feat.property(1, "vegobjekttype", &ColumnValue::Long(f.type_id as i64));
            let _ = feat.property(2, "versjon", &ColumnValue::Long(f.version as i64));
            for (i, (c, _)) in columns.iter().enumerate().skip(3) {
                let v = match vals.get(c) {
                    Some(Val::Text(s)) => ColumnValue::String(s),
                    Some(Val::Integer(v)) => ColumnValue::Long(*v),
                    Some(Val::Float(v)) => ColumnValue::Double(*v),
                    None => continue,
                };
                let _ = feat.property(i, c, &v);
            }
            let _ = feat.property(own_at, "egengeometri", &ColumnValue::Bool(f.own_geometry));
        })
        .map_err(fgb_err)?;
    }
    fgb.write(w).map_err(fgb_err)?;
    Ok(features.iter().filter(|f| f.geometry.is_some()).count())
}

/// PROJJSON of EPSG:25833 (from the EPSG dataset as PROJ renders it).
const CRS_25833: &str = r#"{"$schema":"https://proj.org/schemas/v0.7/projjson.schema.json","type":"ProjectedCRS","name":"ETRS89 / UTM zone 33N","base_crs":{"name":"ETRS89","datum_ensemble":{"name":"European Terrestrial Reference System 1989 ensemble","members":[{"name":"European Terrestrial Reference Frame 1989","id":{"authority":"EPSG","code":1178}},{"name":"European Terrestrial Reference Frame 1990","id":{"authority":"EPSG","code":1179}},{"name":"European Terrestrial Reference Frame 1991","id":{"authority":"EPSG","code":1180}},{"name":"European Terrestrial Reference Frame 1992","id":{"authority":"EPSG","code":1181}},{"name":"European Terrestrial Reference Frame 1993","id":{"authority":"EPSG","code":1182}},{"name":"European Terrestrial Reference Frame 1994","id":{"authority":"EPSG","code":1183}},{"name":"European Terrestrial Reference Frame 1996","id":{"authority":"EPSG","code":1184}},{"name":"European Terrestrial Reference Frame 1997","id":{"authority":"EPSG","code":1185}},{"name":"European Terrestrial Reference Frame 2000","id":{"authority":"EPSG","code":1186}},{"name":"European Terrestrial Reference Frame 2005","id":{"authority":"EPSG","code":1204}},{"name":"European Terrestrial Reference Frame 2014","id":{"authority":"EPSG","code":1206}},{"name":"European Terrestrial Reference Frame 2020","id":{"authority":"EPSG","code":1382}}],"ellipsoid":{"name":"GRS 1980","semi_major_axis":6378137,"inverse_flattening":298.257222101},"accuracy":"0.1","id":{"authority":"EPSG","code":6258}},"coordinate_system":{"subtype":"ellipsoidal","axis":[{"name":"Geodetic latitude","abbreviation":"Lat","direction":"north","unit":"degree"},{"name":"Geodetic longitude","abbreviation":"Lon","direction":"east","unit":"degree"}]},"id":{"authority":"EPSG","code":4258}},"conversion":{"name":"UTM zone 33N","method":{"name":"Transverse Mercator","id":{"authority":"EPSG","code":9807}},"parameters":[{"name":"Latitude of natural origin","value":0,"unit":"degree","id":{"authority":"EPSG","code":8801}},{"name":"Longitude of natural origin","value":15,"unit":"degree","id":{"authority":"EPSG","code":8802}},{"name":"Scale factor at natural origin","value":0.9996,"unit":"unity","id":{"authority":"EPSG","code":8805}},{"name":"False easting","value":500000,"unit":"metre","id":{"authority":"EPSG","code":8806}},{"name":"False northing","value":0,"unit":"metre","id":{"authority":"EPSG","code":8807}}]},"coordinate_system":{"subtype":"Cartesian","axis":[{"name":"Easting","abbreviation":"E","direction":"east","unit":"metre"},{"name":"Northing","abbreviation":"N","direction":"north","unit":"metre"}]},"usages":[{"scope":"Engineering survey, topographic mapping.","area":"Europe between 12\u00b0E and 18\u00b0E: Austria; Croatia; Denmark - offshore and offshore; Germany - onshore and offshore; Italy - onshore and offshore; Norway including Svalbard - onshore and offshore.","bbox":{"south_latitude":34.79,"west_longitude":12,"north_latitude":84.01,"east_longitude":18.01}},{"scope":"Pan-European conformal mapping at scales larger than 1:500,000.","area":"Europe between 12\u00b0E and 18\u00b0E and approximately 34\u00b030'N to 84\u00b0N.","bbox":{"south_latitude":34.49,"west_longitude":12,"north_latitude":84.01,"east_longitude":18.01}}],"id":{"authority":"EPSG","code":25833}}"#;

/// The PROJJSON of `srid` for the GeoParquet metadata (None for 4326: GeoParquet's default,
/// OGC:CRS84, longitude/latitude).
pub(super) fn crs_of(srid: Srid) -> Result<Option<&'static str>> {
    Ok(match srid {
        Srid::Utm33Wgs84 => Some(crate::snapshot::parquet_write::CRS_PROJJSON),
        Srid::Utm33Etrs89 => Some(CRS_25833),
        Srid::Wgs84 => None,
        other => {
            return Err(EngineError::Internal(format!(
                "GeoParquet export supports --srid 32633, 25833 or 4326, not {}",
                other.code()
            )))
        }
    })
}

fn write_geoparquet(
    t: Option<&ObjectType>,
    opts: &ExportOptions,
    features: &[Feature],
    w: &mut (impl Write + Send),
) -> Result<()> {
    let crs = crs_of(opts.srid)?;
    let columns = property_columns(t);
    let mut fields = vec![
        Field::new("nvdbId", DataType::Int64, false),
        Field::new("vegobjekttype", DataType::Int64, false),
        Field::new("versjon", DataType::Int64, false),
        Field::new("egengeometri", DataType::Boolean, false),
    ];
    let (mut id, mut ty, mut ver, mut own) = (
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        BooleanBuilder::new(),
    );
    let all_vals: Vec<BTreeMap<String, Val>> = features.iter().map(values).collect();
    for f in features {
        id.append_value(f.id as i64);
        ty.append_value(f.type_id as i64);
        ver.append_value(f.version as i64);
        own.append_value(f.own_geometry);
    }
    let (geom, kinds, bbox) = geometry_column(features);
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(ty.finish()),
        Arc::new(ver.finish()),
        Arc::new(own.finish()),
    ];
    for (c, k) in &columns {
        let array = property_array(c, *k, &all_vals);
        fields.push(Field::new(c, array.data_type().clone(), true));
        arrays.push(array);
    }
    fields.push(Field::new("geometry", DataType::Binary, true));
    arrays.push(Arc::new(geom));
    let crs_json = crs.map(|c| format!(",\"crs\":{c}")).unwrap_or_default();
    let bbox_json = bbox
        .map(|b| format!(",\"bbox\":[{},{},{},{}]", b[0], b[1], b[2], b[3]))
        .unwrap_or_default();
    let geo = format!(
        "{{\"version\":\"1.1.0\",\"primary_column\":\"geometry\",\"columns\":{{\"geometry\":{{\"encoding\":\"WKB\",\"geometry_types\":{}{crs_json}{bbox_json}}}}}}}",
        serde_json::to_string(&kinds).unwrap_or_else(|_| "[]".into())
    );
    let schema = Arc::new(
        Schema::new(fields).with_metadata(std::collections::HashMap::from([(
            "geo".to_string(),
            geo.clone(),
        )])),
    );
    write_parquet(w, schema, arrays, geo)
}

/// The features' geometries as WKB (null where none), their GeoParquet geometry types and
/// their bounding box.
fn geometry_column(features: &[Feature]) -> (BinaryArray, Vec<&'static str>, Option<[f64; 4]>) {
    let mut geom = BinaryBuilder::new();
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut bbox: Option<[f64; 4]> = None;
    for f in features {
        match &f.geometry {
            Some(g) => {
                let kind = match g {
                    Geometry::Point(_) => "Point Z",
                    Geometry::LineString(_) => "LineString Z",
                    Geometry::MultiLineString(_) => "MultiLineString Z",
                    Geometry::MultiPolygon(_) => "MultiPolygon Z",
                };
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
                let b = g.bbox();
                bbox = Some(match bbox {
                    None => b,
                    Some(a) => [
                        a[0].min(b[0]),
                        a[1].min(b[1]),
                        a[2].max(b[2]),
                        a[3].max(b[3]),
                    ],
                });
                geom.append_value(wkb(g));
            }
            None => geom.append_null(),
        }
    }
    (geom.finish(), kinds, bbox)
}

/// Property column `c` (of kind `k`) over the features' values.
fn property_array(c: &str, k: Kind, all_vals: &[BTreeMap<String, Val>]) -> ArrayRef {
    match k {
        Kind::Text => {
            let mut b = StringBuilder::new();
            for v in all_vals {
                match v.get(c) {
                    Some(Val::Text(s)) => b.append_value(s),
                    _ => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        Kind::Integer => {
            let mut b = Int64Builder::new();
            for v in all_vals {
                b.append_option(match v.get(c) {
                    Some(Val::Integer(i)) => Some(*i),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        Kind::Float => {
            let mut b = Float64Builder::new();
            for v in all_vals {
                b.append_option(match v.get(c) {
                    Some(Val::Float(x)) => Some(*x),
                    Some(Val::Integer(i)) => Some(*i as f64),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
    }
}

/// One record batch as a zstd-compressed Parquet file with the `geo` metadata.
fn write_parquet(
    w: &mut (impl Write + Send),
    schema: Arc<Schema>,
    arrays: Vec<ArrayRef>,
    geo: String,
) -> Result<()> {
    let batch = RecordBatch::try_new(schema.clone(), arrays)
        .map_err(|e| EngineError::Internal(format!("export batch: {e}")))?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(
            parquet::basic::ZstdLevel::try_new(1)
                .map_err(|e| EngineError::Internal(e.to_string()))?,
        ))
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            "geo".to_string(),
            geo,
        )]))
        .build();
    let perr = |e: parquet::errors::ParquetError| EngineError::Internal(format!("GeoParquet: {e}"));
    let mut writer = parquet::arrow::ArrowWriter::try_new(w, schema, Some(props)).map_err(perr)?;
    writer.write(&batch).map_err(perr)?;
    writer.close().map_err(perr)?;
    Ok(())
}

/// ISO WKB with heights (Z types) of a feature geometry.
fn wkb(g: &Geometry) -> Vec<u8> {
    fn head(b: &mut Vec<u8>, kind: u32, n: usize) {
        b.push(1);
        b.extend_from_slice(&kind.to_le_bytes());
        b.extend_from_slice(&(n as u32).to_le_bytes());
    }
    fn coords(b: &mut Vec<u8>, l: &[Coord3]) {
        for c in l {
            for v in c {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let mut b = Vec::new();
    match g {
        Geometry::Point(c) => {
            b.push(1);
            b.extend_from_slice(&1001u32.to_le_bytes());
            coords(&mut b, std::slice::from_ref(c));
        }
        Geometry::LineString(l) => {
            head(&mut b, 1002, l.len());
            coords(&mut b, l);
        }
        Geometry::MultiLineString(ls) => {
            head(&mut b, 1005, ls.len());
            for l in ls {
                head(&mut b, 1002, l.len());
                coords(&mut b, l);
            }
        }
        Geometry::MultiPolygon(ps) => {
            head(&mut b, 1006, ps.len());
            for rings in ps {
                head(&mut b, 1003, rings.len());
                for r in rings {
                    b.extend_from_slice(&(r.len() as u32).to_le_bytes());
                    coords(&mut b, r);
                }
            }
        }
    }
    b
}
