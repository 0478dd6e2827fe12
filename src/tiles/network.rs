//! The `vegnett` layer: one line feature per road link segment row (a link, or the part of a link
//! with one road reference), selected through the generation's R-tree of segment pieces.
//!
//! Generalisation by zoom `z` (documented in README "Map and tiles"):
//! - categories: E and R from zoom 0, F from 8, K from 10, P from 12;
//! - below zoom 14 only topology level 0 (road centre lines) and no connection links;
//! - then as every layer: clipped to the tile plus its buffer, simplified, rounded to the layer
//!   grid; a row whose geometry collapses to a point there is left out.

use rstar::AABB;

use super::clip::Rect;
use super::mercator::TileId;
use super::mvt::{Geometry, Layer, LayerBuilder, Prop};
use super::{project_line, simplify_parts, Style};
use crate::error::Result;
use crate::generation::Generation;

pub const LAYER: &str = "vegnett";

/// Whether network row `row` is drawn at zoom `z` (before clipping).
pub fn shown_at(g: &Generation, row: usize, z: u8) -> bool {
    let n = &g.network;
    let min_zoom = match n.road_category[row] {
        b'E' | b'R' => 0,
        b'F' => 8,
        b'K' => 10,
        _ => 12,
    };
    if z < min_zoom {
        return false;
    }
    z >= 14 || (n.topology_level[row] == 0 && !n.is_connection[row])
}

/// Network rows whose R-tree pieces meet the storage box of the tile (a superset of the rows
/// in the tile), ascending.
pub fn candidate_rows(g: &Generation, tile: TileId, style: &Style) -> Result<Vec<u32>> {
    let Some(b) = tile.storage_bbox(style.buffer)? else {
        return Ok(Vec::new());
    };
    let env = AABB::from_corners(geo::Point::new(b[0], b[1]), geo::Point::new(b[2], b[3]));
    let mut rows: Vec<u32> = g
        .network_index
        .tree
        .locate_in_envelope_intersecting(&env)
        .map(|e| e.data)
        .collect();
    rows.sort_unstable();
    rows.dedup();
    Ok(rows)
}

/// The `vegnett` layer of one tile.
pub fn layer(g: &Generation, tile: TileId, style: &Style) -> Result<Layer> {
    let rect: Rect = style.rect();
    let mut b = LayerBuilder::new(LAYER, style.extent);
    let mut projected = Vec::new();
    for row in candidate_rows(g, tile, style)? {
        let row = row as usize;
        if !shown_at(g, row, tile.z) {
            continue;
        }
        project_line(g.network.geometry(row), tile, &mut projected)?;
        let Some(parts) = simplify_parts(&projected, &rect, style.tolerance) else {
            continue;
        };
        let s = g.segment(row);
        let key = s.road_key();
        let mut props = vec![
            ("veglenke", Prop::Int(s.link_id().0 as i64)),
            ("fra", Prop::Float(s.from_pos())),
            ("til", Prop::Float(s.to_pos())),
        ];
        // a row without a road reference has none of the road-reference properties
        if key.has_road_ref() {
            props.extend([
                (
                    "vegkategori",
                    Prop::Text((key.category as char).to_string()),
                ),
                ("fase", Prop::Text((key.status as char).to_string())),
                ("vegnummer", Prop::Int(key.number as i64)),
                (
                    "vegreferanse",
                    Prop::Text(key.stretch(s.from_m(), s.to_m())),
                ),
            ]);
        }
        props.extend([
            ("kommune", Prop::Int(s.municipality() as i64)),
            ("topologinivå", Prop::Int(s.topology_level() as i64)),
        ]);
        b.add(None, &props, Geometry::Lines(&parts));
    }
    Ok(b.finish())
}
