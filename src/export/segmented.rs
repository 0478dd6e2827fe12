//! `vegdb export --segmentert 105,540,...`: the dynamic segmentation of `/vegnett/segmentert`
//! (`query::overlay`, its rules) over the whole current network, or the rows of `--kommune`, as
//! one GeoParquet file: a row per piece with `veglenkesekvensid`, `fra_posisjon`,
//! `til_posisjon`, `lengde` (meters), `kommune`, per type `vegobjekttype_<id>` (the covering
//! objects' ids, a list; null where none covers the piece) and the piece's geometry (WKB).
//! Every object of each type takes part (no `egenskap` filter); values are not carried (join on
//! the ids with the type's own export).

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Float64Builder, Int64Builder, ListBuilder};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field, Schema};
use roaring::RoaringBitmap;

use super::{wkb, write_parquet, ExportReport, CRS_25833};
use crate::error::{EngineError, Result};
use crate::generation::feature::Geometry;
use crate::generation::Generation;
use crate::geo::srid::Srid;
use crate::query::overlay::{links_of, overlay, LinkIntervals};

/// The overlay of `types` over the rows of `municipalities` (every row when empty), written to
/// `out` in `srid` (32633, 25833 or 4326).
pub fn export_segmented(
    g: &Generation,
    types: &[u32],
    municipalities: &[u16],
    srid: Srid,
    out: &std::path::Path,
) -> Result<ExportReport> {
    let crs = crs_of(srid)?;
    for t in types {
        if g.catalog.object_type(*t).is_none() {
            return Err(EngineError::Internal(format!("unknown object type {t}")));
        }
    }
    let n = &g.network;
    let rows: RoaringBitmap = (0..n.len() as u32)
        .filter(|&r| {
            municipalities.is_empty() || municipalities.contains(&n.municipality[r as usize])
        })
        .collect();
    let links = links_of(n, &rows);
    let layers: Vec<LinkIntervals> = types
        .iter()
        .map(|t| match g.objects.get(t) {
            Some(d) => {
                let all: RoaringBitmap = (0..d.table.len() as u32).collect();
                LinkIntervals::build(&d.table, &all, Some(&links))
            }
            None => LinkIntervals::default(),
        })
        .collect();
    let pieces = overlay(n, rows.iter(), &layers, false);
    let (mut link, mut from, mut to, mut length, mut kommune) = (
        Int64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Int64Builder::new(),
    );
    let mut ids: Vec<ListBuilder<Int64Builder>> = types
        .iter()
        .map(|_| ListBuilder::new(Int64Builder::new()))
        .collect();
    let mut geom = BinaryBuilder::new();
    let mut bbox = [f64::MAX, f64::MAX, f64::MIN, f64::MIN];
    for p in &pieces {
        let r = p.net_row as usize;
        link.append_value(p.link_id as i64);
        from.append_value(p.from);
        to.append_value(p.to);
        length.append_value(p.length_m);
        kommune.append_value(i64::from(n.municipality[r]));
        for ((b, covers), t) in ids.iter_mut().zip(&p.covers).zip(types) {
            let table = g.objects.get(t).map(|d| &d.table);
            match table {
                Some(table) if !covers.is_empty() => {
                    for c in covers {
                        b.values().append_value(table.id[c.row as usize] as i64);
                    }
                    b.append(true);
                }
                _ => b.append(false),
            }
        }
        let line = g.segment(r).sub_line(p.from, p.to);
        let geometry = Geometry::LineString(line).to_srid(srid)?;
        if let Geometry::LineString(l) = &geometry {
            for c in l {
                bbox = [
                    bbox[0].min(c[0]),
                    bbox[1].min(c[1]),
                    bbox[2].max(c[0]),
                    bbox[3].max(c[1]),
                ];
            }
        }
        geom.append_value(wkb(&geometry));
    }
    let mut fields = vec![
        Field::new("veglenkesekvensid", DataType::Int64, false),
        Field::new("fra_posisjon", DataType::Float64, false),
        Field::new("til_posisjon", DataType::Float64, false),
        Field::new("lengde", DataType::Float64, false),
        Field::new("kommune", DataType::Int64, false),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(link.finish()),
        Arc::new(from.finish()),
        Arc::new(to.finish()),
        Arc::new(length.finish()),
        Arc::new(kommune.finish()),
    ];
    for (t, mut b) in types.iter().zip(ids) {
        let array = b.finish();
        fields.push(Field::new(
            format!("vegobjekttype_{t}"),
            array.data_type().clone(),
            true,
        ));
        arrays.push(Arc::new(array));
    }
    fields.push(Field::new("geometry", DataType::Binary, false));
    arrays.push(Arc::new(geom.finish()));
    let bbox = (!pieces.is_empty()).then_some(bbox);
    let bytes = write_geoparquet(fields, arrays, crs, bbox, out)?;
    Ok(ExportReport {
        features: pieces.len(),
        bytes,
    })
}

/// The PROJJSON of `srid` for the GeoParquet metadata (None for 4326, GeoParquet's default).
fn crs_of(srid: Srid) -> Result<Option<&'static str>> {
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

/// Writes the columns as one GeoParquet file at `out` (through a partial file, fsynced, then
/// renamed); its size.
fn write_geoparquet(
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
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
    let schema = Arc::new(
        Schema::new(fields).with_metadata(std::collections::HashMap::from([(
            "geo".to_string(),
            geo.clone(),
        )])),
    );
    let tmp = out.with_extension("partial");
    let file = std::fs::File::create(&tmp).map_err(|e| EngineError::io(&tmp, e))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    write_parquet(&mut w, schema, arrays, geo)?;
    let file = w
        .into_inner()
        .map_err(|e| EngineError::io(&tmp, e.into_error()))?;
    file.sync_all().map_err(|e| EngineError::io(&tmp, e))?;
    let bytes = file.metadata().map_err(|e| EngineError::io(&tmp, e))?.len();
    std::fs::rename(&tmp, out).map_err(|e| EngineError::io(out, e))?;
    Ok(bytes)
}
