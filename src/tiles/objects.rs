//! Object layers: the objects of one type, each as one feature with its located geometry
//! (the shared feature view, `generation::feature`: its own point, line or polygon, else a point
//! or the lines along the road where it is placed) and its id, type, version and property values
//! (by property-type name, enumerations decoded; sensitive properties left out). Objects are selected through the type's R-tree of geometry
//! boxes (`generation::spatial`, kept with the type).
//!
//! Generalisation by zoom `z` (README "Map and tiles"): below zoom 10 points are left out and so
//! is an object whose whole geometry spans less than a pixel of a 256-pixel tile (16 units) in
//! both directions; at every zoom a feature whose clipped, simplified and rounded geometry
//! collapses is left out.

use super::clip::{self, Pt};
use super::mercator::{storage_to_world, TileId};
use super::mvt::{Geometry, Layer, LayerBuilder, Prop};
use super::{project_line, simplify, simplify_parts, Style};
use crate::error::Result;
use crate::generation::feature::{FeatureOptions, Geometry as Shape, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::spatial;
use crate::generation::Generation;
use crate::geo::Coord3;

/// Zoom from which point objects and sub-pixel objects are drawn.
pub const DETAIL_ZOOM: u8 = 10;
/// Units of one pixel of a 256-pixel tile.
const PIXEL: f64 = 16.0;

/// The properties of an object as tile properties: `id`, `type`, `versjon`, then each value
/// the feature view gives (by property name; enumerations decoded to their number for numeric
/// ones, else their name; sensitive values left out).
pub fn properties(g: &Generation, row: ObjectRow<'_>) -> Result<Vec<(String, Prop)>> {
    let f = g.feature(row, &FeatureOptions::default())?;
    let mut props = vec![
        ("id".to_string(), Prop::Int(f.id as i64)),
        ("type".to_string(), Prop::Int(f.type_id as i64)),
        ("versjon".to_string(), Prop::Int(f.version as i64)),
    ];
    for p in &f.properties {
        let value = match p.value {
            PropertyValue::Enum {
                number: Some(n), ..
            } if n.fract() == 0.0 && n.abs() < 9e15 => Prop::Int(n as i64),
            PropertyValue::Enum {
                number: Some(n), ..
            } => Prop::Float(n),
            PropertyValue::Enum { name, .. } => Prop::Text(name.to_string()),
            PropertyValue::Integer(i) => Prop::Int(i),
            PropertyValue::Float(x) => Prop::Float(x),
            PropertyValue::Text(t) => Prop::Text(t.to_string()),
        };
        props.push((p.name.to_string(), value));
    }
    Ok(props)
}

/// The layer of type `type_id` in one tile (empty when the generation has no such objects),
/// its objects found through the type's spatial index.
pub fn layer(g: &Generation, type_id: u32, tile: TileId, style: &Style) -> Result<Layer> {
    let mut b = LayerBuilder::new(&type_id.to_string(), style.extent);
    let Some(data) = g.objects.get(&type_id) else {
        return Ok(b.finish());
    };
    let Some(bb) = tile.storage_bbox(style.buffer)? else {
        return Ok(b.finish());
    };
    let rows = data.object_index(g).rows_meeting(bb);
    let rect = style.rect();
    let detail = tile.z >= DETAIL_ZOOM;
    let mut projected: Vec<Pt> = Vec::new();
    for row in rows {
        let row = row as usize;
        let Some(shape) = spatial::geometry(g, data, row) else {
            continue;
        };
        let drawn = match &shape {
            Shape::Point(point) => {
                let points = std::slice::from_ref(point);
                if !detail {
                    continue;
                }
                let mut out = Vec::new();
                for p in points {
                    let q = tile.to_tile(storage_to_world(p[0], p[1])?);
                    if rect.contains(q) {
                        out.push((q.0.round() as i32, q.1.round() as i32));
                    }
                }
                (!out.is_empty()).then_some(Drawn::Points(out))
            }
            Shape::LineString(_) | Shape::MultiLineString(_) => {
                let lines: Vec<&[Coord3]> = match &shape {
                    Shape::LineString(l) => vec![l.as_slice()],
                    Shape::MultiLineString(ls) => ls.iter().map(Vec::as_slice).collect(),
                    _ => Vec::new(),
                };
                let mut parts = Vec::new();
                let mut extent = Extent::default();
                for line in lines {
                    project_line(line, tile, &mut projected)?;
                    extent.add(&projected);
                    if let Some(p) = simplify_parts(&projected, &rect, style.tolerance) {
                        parts.extend(p);
                    }
                }
                if !detail && extent.below(PIXEL) {
                    continue;
                }
                (!parts.is_empty()).then_some(Drawn::Lines(parts))
            }
            Shape::MultiPolygon(polygons) => {
                let mut rings = Vec::new();
                let mut extent = Extent::default();
                for polygon in polygons {
                    for (i, ring) in polygon.iter().enumerate() {
                        project_line(ring, tile, &mut projected)?;
                        if projected.len() > 1 && projected.first() == projected.last() {
                            projected.pop();
                        }
                        extent.add(&projected);
                        let clipped = clip::clip_ring(&projected, &rect);
                        let Some(mut r) = simplify::ring(&clipped, style.tolerance) else {
                            if i == 0 {
                                break; // no exterior: its holes go too
                            }
                            continue;
                        };
                        // exterior positive (clockwise on screen), holes negative
                        let positive = simplify::ring_area2(&r) > 0;
                        if positive != (i == 0) {
                            r.reverse();
                        }
                        rings.push(r);
                    }
                }
                if !detail && extent.below(PIXEL) {
                    continue;
                }
                (!rings.is_empty()).then_some(Drawn::Rings(rings))
            }
        };
        let Some(drawn) = drawn else {
            continue;
        };
        let props = properties(g, ObjectRow::new(&data.table, row))?;
        let props: Vec<(&str, Prop)> = props.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let id = Some(data.table.id[row]);
        match &drawn {
            Drawn::Points(p) => b.add(id, &props, Geometry::Points(p)),
            Drawn::Lines(l) => b.add(id, &props, Geometry::Lines(l)),
            Drawn::Rings(r) => b.add(id, &props, Geometry::Polygon(r)),
        }
    }
    Ok(b.finish())
}

enum Drawn {
    Points(Vec<(i32, i32)>),
    Lines(Vec<Vec<(i32, i32)>>),
    Rings(Vec<Vec<(i32, i32)>>),
}

/// Bounding box of projected points.
struct Extent {
    min: Pt,
    max: Pt,
}

impl Default for Extent {
    fn default() -> Self {
        Extent {
            min: (f64::INFINITY, f64::INFINITY),
            max: (f64::NEG_INFINITY, f64::NEG_INFINITY),
        }
    }
}

impl Extent {
    fn add(&mut self, pts: &[Pt]) {
        for p in pts {
            self.min = (self.min.0.min(p.0), self.min.1.min(p.1));
            self.max = (self.max.0.max(p.0), self.max.1.max(p.1));
        }
    }
    fn below(&self, size: f64) -> bool {
        self.max.0 - self.min.0 < size && self.max.1 - self.min.1 < size
    }
}
