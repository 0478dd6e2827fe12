//! `vegdb export --segmentert 105,540,...`: the dynamic segmentation of `/vegnett/segmentert`
//! (`query::overlay`, its rules) over the whole current network, or the rows of `--kommune`, as
//! one GeoParquet file, a row per piece (columns: README, "GIS exports"):
//!
//! - `veglenkesekvensid`, `fra_posisjon`, `til_posisjon`, `kortform`, `lengde` (meters),
//!   `kommune`, `vegreferanse` and `vegsystemreferanse` (the API's `kortform` of each for the
//!   piece's positions; null where the row has none);
//! - per type `<type>_id`, `<type>_versjon`, `<type>_feltspesifikk` and per chosen value
//!   property `<type>_<property name>` (an enumeration's name, or its number for numeric
//!   enumerations, plus `<type>_<property name>_id`, the allowed value's id): lists, one
//!   element per covering object ascending by id (the API's rule for overlapping objects), null
//!   where no object of the type covers the piece; a value element is null where that object
//!   has no value. `egenskaper` chooses the properties as `/vegnett/segmentert`'s `egenskaper`
//!   (all value properties when a type is not named); sensitive values are never written;
//! - `geometry`: the piece's stretch of its row (WKB LineString Z).
//!
//! Every object of each type takes part (no `egenskap` filter).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::file::metadata::KeyValue;
use roaring::RoaringBitmap;

use super::{wkb, ExportReport};
use crate::api::read::segmentert::piece_refs;
use crate::catalog::{datatype, PropertyType, ValueKind};
use crate::error::{EngineError, Result};
use crate::generation::feature::{Geometry, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::Generation;
use crate::geo::srid::Srid;
use crate::index::pieces::LinkPlacements;
use crate::query::overlay::{row_pieces, Cover, LinkIntervals, Piece};
use crate::query::vegref::link_range_short;
use crate::snapshot::columns::ObjectTable;

/// Pieces per row group of the file by default: the export holds one row group's columns at a
/// time (a few hundred bytes per piece with three types' values, tens of MB).
pub const ROW_GROUP_PIECES: usize = 65_536;
/// Network rows overlaid together (the placements on their links gathered at once).
const CHUNK_ROWS: usize = 4096;

/// The overlay of `types` over the rows of `municipalities` (every row when empty), written to
/// `out` in `srid` (32633, 25833 or 4326); `values[i]`: the value property ids type `i` carries
/// (None: all). Row groups of [`ROW_GROUP_PIECES`] pieces.
pub fn export_segmented(
    g: &Generation,
    types: &[u32],
    values: &[Option<Vec<u32>>],
    municipalities: &[u16],
    srid: Srid,
    out: &std::path::Path,
) -> Result<ExportReport> {
    export_segmented_in_groups(
        g,
        types,
        values,
        municipalities,
        srid,
        out,
        ROW_GROUP_PIECES,
    )
}

/// [`export_segmented`] with row groups of `row_group` pieces (at least 1), streamed: the rows
/// are overlaid [`CHUNK_ROWS`] at a time (the types' placements on their links gathered from
/// the placements ordered by link), and each row group is written as soon as it is full. What
/// the export holds at a time: one chunk's placements and pieces, one row group's columns and
/// the Parquet writer's buffer of it; the `geo` metadata (its bbox: every piece's) is written
/// in the footer at the end.
pub fn export_segmented_in_groups(
    g: &Generation,
    types: &[u32],
    values: &[Option<Vec<u32>>],
    municipalities: &[u16],
    srid: Srid,
    out: &std::path::Path,
    row_group: usize,
) -> Result<ExportReport> {
    let crs = super::crs_of(srid)?;
    for t in types {
        if g.catalog.object_type(*t).is_none() {
            return Err(EngineError::Internal(format!("unknown object type {t}")));
        }
    }
    let n = &g.network;
    let rows: Vec<u32> = (0..n.len() as u32)
        .filter(|&r| {
            municipalities.is_empty() || municipalities.contains(&n.municipality[r as usize])
        })
        .collect();
    // per type: its table, its placements ordered by link, and every object
    let sources: Vec<Option<(&ObjectTable, Arc<LinkPlacements>, RoaringBitmap)>> = types
        .iter()
        .map(|t| {
            g.objects.get(t).map(|d| {
                let all: RoaringBitmap = (0..d.table.len() as u32).collect();
                (&*d.table, d.link_placements(), all)
            })
        })
        .collect();
    let mut columns = Columns {
        piece: PieceColumns::default(),
        types: types
            .iter()
            .enumerate()
            .map(|(i, &t)| TypeColumns::new(g, t, values.get(i).cloned().flatten()))
            .collect(),
        rows: 0,
    };
    let mut file: Option<GeoParquetOut> = None;
    let (mut features, mut pieces) = (0, Vec::new());
    for chunk in rows.chunks(CHUNK_ROWS) {
        let mut links: Vec<u64> = chunk.iter().map(|&r| n.link_id[r as usize]).collect();
        links.dedup();
        let layers: Vec<LinkIntervals> = sources
            .iter()
            .map(|s| match s {
                Some((table, index, all)) => {
                    LinkIntervals::build_on_links(table, index, all, links.iter().copied())
                }
                None => LinkIntervals::default(),
            })
            .collect();
        for &r in chunk {
            pieces.clear();
            row_pieces(n, r as usize, &layers, false, &mut pieces);
            for p in &pieces {
                columns.push(g, p, srid)?;
                features += 1;
                if columns.rows >= row_group.max(1) {
                    columns.write_to(&mut file, out)?;
                }
            }
        }
    }
    // the last row group (an empty one when there are no pieces: the file still has the columns)
    if columns.rows > 0 || file.is_none() {
        columns.write_to(&mut file, out)?;
    }
    let bbox = (features > 0).then_some(columns.piece.bbox);
    let bytes = file
        .ok_or_else(|| EngineError::Internal("segmented export: no file".into()))?
        .finish(crs, bbox, out)?;
    Ok(ExportReport { features, bytes })
}

/// The columns of the row group being filled.
struct Columns<'g> {
    piece: PieceColumns,
    types: Vec<TypeColumns<'g>>,
    /// Pieces in the columns.
    rows: usize,
}

impl<'g> Columns<'g> {
    fn push(&mut self, g: &'g Generation, p: &Piece, srid: Srid) -> Result<()> {
        self.piece.push(g, p, srid)?;
        for (c, covers) in self.types.iter_mut().zip(&p.covers) {
            c.push(g, covers);
        }
        self.rows += 1;
        Ok(())
    }

    /// Write the pieces in the columns as a row group (the file created at the first) and empty
    /// the columns.
    fn write_to(&mut self, file: &mut Option<GeoParquetOut>, out: &std::path::Path) -> Result<()> {
        let (mut fields, mut arrays) = self.piece.finish_fixed();
        for c in &mut self.types {
            for (name, array) in c.finish() {
                fields.push(Field::new(name, array.data_type().clone(), true));
                arrays.push(array);
            }
        }
        fields.push(Field::new("geometry", DataType::Binary, false));
        arrays.push(Arc::new(self.piece.geometry.finish()));
        self.rows = 0;
        let w = match file {
            Some(w) => w,
            None => file.insert(GeoParquetOut::create(out, Arc::new(Schema::new(fields)))?),
        };
        w.write(arrays)
    }
}

/// The columns every piece has.
struct PieceColumns {
    link: Int64Builder,
    from: Float64Builder,
    to: Float64Builder,
    short: StringBuilder,
    length: Float64Builder,
    municipality: Int64Builder,
    road_ref: StringBuilder,
    system_ref: StringBuilder,
    geometry: BinaryBuilder,
    bbox: [f64; 4],
}

impl Default for PieceColumns {
    fn default() -> Self {
        PieceColumns {
            link: Int64Builder::new(),
            from: Float64Builder::new(),
            to: Float64Builder::new(),
            short: StringBuilder::new(),
            length: Float64Builder::new(),
            municipality: Int64Builder::new(),
            road_ref: StringBuilder::new(),
            system_ref: StringBuilder::new(),
            geometry: BinaryBuilder::new(),
            bbox: [f64::MAX, f64::MAX, f64::MIN, f64::MIN],
        }
    }
}

impl PieceColumns {
    fn push(&mut self, g: &Generation, p: &Piece, srid: Srid) -> Result<()> {
        let r = p.net_row as usize;
        self.link.append_value(p.link_id as i64);
        self.from.append_value(p.from);
        self.to.append_value(p.to);
        self.short
            .append_value(link_range_short(p.from, p.to, p.link_id));
        self.length.append_value(p.length_m);
        self.municipality
            .append_value(i64::from(g.network.municipality[r]));
        let (road_ref, system_ref) = piece_refs(g, p);
        self.road_ref.append_option(road_ref.map(|v| v.kortform));
        self.system_ref
            .append_option(system_ref.map(|v| v.kortform));
        let line = g.segment(r).sub_line(p.from, p.to);
        let geometry = Geometry::LineString(line).to_srid(srid)?;
        if let Geometry::LineString(l) = &geometry {
            for c in l {
                let b = &mut self.bbox;
                *b = [
                    b[0].min(c[0]),
                    b[1].min(c[1]),
                    b[2].max(c[0]),
                    b[3].max(c[1]),
                ];
            }
        }
        self.geometry.append_value(wkb(&geometry));
        Ok(())
    }

    /// The fields and arrays before the types' columns (the geometry comes last).
    fn finish_fixed(&mut self) -> (Vec<Field>, Vec<ArrayRef>) {
        let fields = vec![
            Field::new("veglenkesekvensid", DataType::Int64, false),
            Field::new("fra_posisjon", DataType::Float64, false),
            Field::new("til_posisjon", DataType::Float64, false),
            Field::new("kortform", DataType::Utf8, false),
            Field::new("lengde", DataType::Float64, false),
            Field::new("kommune", DataType::Int64, false),
            Field::new("vegreferanse", DataType::Utf8, true),
            Field::new("vegsystemreferanse", DataType::Utf8, true),
        ];
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.link.finish()),
            Arc::new(self.from.finish()),
            Arc::new(self.to.finish()),
            Arc::new(self.short.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.municipality.finish()),
            Arc::new(self.road_ref.finish()),
            Arc::new(self.system_ref.finish()),
        ];
        (fields, arrays)
    }
}

/// A list column of one value property: one element per covering object.
enum ValueList {
    Text(ListBuilder<StringBuilder>),
    Integer(ListBuilder<Int64Builder>),
    Float(ListBuilder<Float64Builder>),
}

impl ValueList {
    fn of(p: &PropertyType) -> ValueList {
        match p.storage() {
            ValueKind::Enum if p.datatype == datatype::ENUM_NUMBER => {
                ValueList::Float(ListBuilder::new(Float64Builder::new()))
            }
            ValueKind::Integer => ValueList::Integer(ListBuilder::new(Int64Builder::new())),
            ValueKind::Float => ValueList::Float(ListBuilder::new(Float64Builder::new())),
            _ => ValueList::Text(ListBuilder::new(StringBuilder::new())),
        }
    }

    fn push(&mut self, v: Option<&PropertyValue<'_>>) {
        match self {
            ValueList::Text(b) => b.values().append_option(match v {
                Some(PropertyValue::Enum { name, .. }) => Some(*name),
                Some(PropertyValue::Text(t)) => Some(*t),
                _ => None,
            }),
            ValueList::Integer(b) => b.values().append_option(match v {
                Some(PropertyValue::Integer(i)) => Some(*i),
                _ => None,
            }),
            ValueList::Float(b) => b.values().append_option(match v {
                Some(PropertyValue::Enum { number, .. }) => *number,
                Some(PropertyValue::Float(f)) => Some(*f),
                Some(PropertyValue::Integer(i)) => Some(*i as f64),
                _ => None,
            }),
        }
    }

    fn end_row(&mut self, covered: bool) {
        match self {
            ValueList::Text(b) => b.append(covered),
            ValueList::Integer(b) => b.append(covered),
            ValueList::Float(b) => b.append(covered),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ValueList::Text(b) => Arc::new(b.finish()),
            ValueList::Integer(b) => Arc::new(b.finish()),
            ValueList::Float(b) => Arc::new(b.finish()),
        }
    }
}

/// A chosen value property's columns: its value, and for enumerations the allowed value's id.
struct ValueColumns {
    property: u32,
    name: String,
    values: ValueList,
    enum_ids: Option<ListBuilder<Int64Builder>>,
}

/// One type's columns.
struct TypeColumns<'g> {
    type_id: u32,
    table: Option<&'g ObjectTable>,
    ids: ListBuilder<Int64Builder>,
    versions: ListBuilder<Int64Builder>,
    lane_specific: ListBuilder<BooleanBuilder>,
    values: Vec<ValueColumns>,
}

impl<'g> TypeColumns<'g> {
    /// `chosen`: the value property ids carried (None: all), in catalogue order.
    fn new(g: &'g Generation, type_id: u32, chosen: Option<Vec<u32>>) -> TypeColumns<'g> {
        let mut taken: HashSet<String> = ["id", "versjon", "feltspesifikk"]
            .iter()
            .map(|c| format!("{type_id}_{c}"))
            .collect();
        let mut values = Vec::new();
        let properties = g
            .catalog
            .object_type(type_id)
            .into_iter()
            .flat_map(|t| t.value_properties());
        for p in properties {
            if p.sensitivity > 0 || chosen.as_ref().is_some_and(|c| !c.contains(&p.id)) {
                continue;
            }
            let mut name = format!("{type_id}_{}", p.name);
            if taken.contains(&name) || taken.contains(&format!("{name}_id")) {
                name = format!("{type_id}_egenskap_{}", p.id);
            }
            taken.insert(name.clone());
            taken.insert(format!("{name}_id"));
            values.push(ValueColumns {
                property: p.id,
                name,
                values: ValueList::of(p),
                enum_ids: p.is_enum().then(|| ListBuilder::new(Int64Builder::new())),
            });
        }
        TypeColumns {
            type_id,
            table: g.objects.get(&type_id).map(|d| &*d.table),
            ids: ListBuilder::new(Int64Builder::new()),
            versions: ListBuilder::new(Int64Builder::new()),
            lane_specific: ListBuilder::new(BooleanBuilder::new()),
            values,
        }
    }

    /// The covering objects of one piece (null lists when none).
    fn push(&mut self, g: &'g Generation, covers: &[Cover]) {
        let covered = !covers.is_empty() && self.table.is_some();
        if let Some(table) = self.table.filter(|_| covered) {
            for c in covers {
                let object = ObjectRow::new(table, c.row as usize);
                self.ids.values().append_value(object.id() as i64);
                self.versions
                    .values()
                    .append_value(i64::from(object.version()));
                self.lane_specific.values().append_value(c.lane_specific);
                let by_id: HashMap<u32, PropertyValue<'_>> = g
                    .object_properties(object, false)
                    .into_iter()
                    .map(|p| (p.id, p.value))
                    .collect();
                for v in &mut self.values {
                    let value = by_id.get(&v.property);
                    v.values.push(value);
                    if let Some(b) = &mut v.enum_ids {
                        b.values().append_option(match value {
                            Some(PropertyValue::Enum { id, .. }) => Some(i64::from(*id)),
                            _ => None,
                        });
                    }
                }
            }
        }
        self.ids.append(covered);
        self.versions.append(covered);
        self.lane_specific.append(covered);
        for v in &mut self.values {
            v.values.end_row(covered);
            if let Some(b) = &mut v.enum_ids {
                b.append(covered);
            }
        }
    }

    /// (column name, array), in column order.
    fn finish(&mut self) -> Vec<(String, ArrayRef)> {
        let t = self.type_id;
        let mut out: Vec<(String, ArrayRef)> = vec![
            (format!("{t}_id"), Arc::new(self.ids.finish())),
            (format!("{t}_versjon"), Arc::new(self.versions.finish())),
            (
                format!("{t}_feltspesifikk"),
                Arc::new(self.lane_specific.finish()),
            ),
        ];
        for v in &mut self.values {
            out.push((v.name.clone(), v.values.finish()));
            if let Some(b) = &mut v.enum_ids {
                out.push((format!("{}_id", v.name), Arc::new(b.finish())));
            }
        }
        out
    }
}

/// The GeoParquet file being written: row groups as they come, through a partial file that is
/// fsynced and renamed at the end. The `geo` metadata (and the Arrow schema that carries it)
/// go into the footer at the end, when the bbox is known: the same key-value metadata, in the
/// same order, as a file written from one batch.
struct GeoParquetOut {
    tmp: std::path::PathBuf,
    schema: Arc<Schema>,
    writer: parquet::arrow::ArrowWriter<std::io::BufWriter<std::fs::File>>,
}

fn parquet_error(e: parquet::errors::ParquetError) -> EngineError {
    EngineError::Internal(format!("GeoParquet: {e}"))
}

impl GeoParquetOut {
    fn create(out: &std::path::Path, schema: Arc<Schema>) -> Result<GeoParquetOut> {
        let (tmp, w) = super::partial_file(out)?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(
                parquet::basic::ZstdLevel::try_new(1).map_err(parquet_error)?,
            ))
            .build();
        let options = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
            .with_properties(props)
            .with_skip_arrow_metadata(true);
        let writer = parquet::arrow::ArrowWriter::try_new_with_options(w, schema.clone(), options)
            .map_err(parquet_error)?;
        Ok(GeoParquetOut {
            tmp,
            schema,
            writer,
        })
    }

    /// One row group of `arrays` (the columns of the schema).
    fn write(&mut self, arrays: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| EngineError::Internal(format!("export batch: {e}")))?;
        self.writer.write(&batch).map_err(parquet_error)?;
        self.writer.flush().map_err(parquet_error)
    }

    /// The footer with the `geo` metadata, then the file in place at `out`; its size.
    fn finish(
        mut self,
        crs: Option<&str>,
        bbox: Option<[f64; 4]>,
        out: &std::path::Path,
    ) -> Result<u64> {
        let crs_json = crs.map(|c| format!(",\"crs\":{c}")).unwrap_or_default();
        let bbox_json = bbox
            .map(|b| format!(",\"bbox\":[{},{},{},{}]", b[0], b[1], b[2], b[3]))
            .unwrap_or_default();
        let geo = format!(
            "{{\"version\":\"1.1.0\",\"primary_column\":\"geometry\",\"columns\":{{\"geometry\":{{\"encoding\":\"WKB\",\"geometry_types\":[\"LineString Z\"]{crs_json}{bbox_json}}}}}}}"
        );
        // `geo`, then the Arrow schema with `geo` as its metadata (as ArrowWriter adds it)
        let schema = Schema::new(self.schema.fields().clone()).with_metadata(
            std::collections::HashMap::from([("geo".to_string(), geo.clone())]),
        );
        let mut props = parquet::file::properties::WriterProperties::builder()
            .set_key_value_metadata(Some(vec![KeyValue::new("geo".to_string(), geo)]))
            .build();
        parquet::arrow::add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        for kv in props.key_value_metadata().into_iter().flatten() {
            self.writer.append_key_value_metadata(kv.clone());
        }
        let w = self.writer.into_inner().map_err(parquet_error)?;
        super::commit_partial(w, &self.tmp, out)
    }
}
