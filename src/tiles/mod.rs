//! Mapbox Vector Tiles of a loaded generation: the road network (`vegnett`) and any road object
//! type, in Web Mercator XYZ tiles. `mercator.rs` is the tile math and the projection from
//! storage (UTM 33, through `geo::srid`), `clip.rs` clipping to the tile plus its buffer,
//! `simplify.rs` the per-zoom generalisation in layer units, `mvt.rs` the encoding,
//! `network.rs` and `objects.rs` the two kinds of layer (objects found through their type's
//! spatial index, `generation::spatial`).

pub mod clip;
pub mod mercator;
pub mod mvt;
pub mod network;
pub mod objects;
pub mod simplify;

use crate::catalog::Catalog;
use crate::error::{Invalid, Result};
use crate::generation::Generation;
use crate::geo::Coord3;
use clip::{Pt, Rect};
use mercator::{storage_to_world, TileId, BUFFER, EXTENT};

/// What a tile is drawn with: extent, buffer and simplification tolerance in layer units.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub extent: u32,
    pub buffer: f64,
    /// Douglas–Peucker tolerance: 4 units = 1/4 pixel of a 256-pixel tile (1/2 of a 512 one).
    pub tolerance: f64,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            extent: EXTENT,
            buffer: BUFFER as f64,
            tolerance: 4.0,
        }
    }
}

impl Style {
    /// The clipping rectangle: the tile plus the buffer.
    pub fn rect(&self) -> Rect {
        Rect {
            min_x: -self.buffer,
            min_y: -self.buffer,
            max_x: self.extent as f64 + self.buffer,
            max_y: self.extent as f64 + self.buffer,
        }
    }
}

/// A tile layer: the road network or the objects of one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerId {
    Network,
    Objects(u32),
}

impl LayerId {
    /// `vegnett`, a type id (`105`) or a type name (`Fartsgrense`, any case).
    pub fn parse(text: &str, catalog: &Catalog) -> Result<LayerId> {
        if text == network::LAYER {
            return Ok(LayerId::Network);
        }
        let found = match text.parse::<u32>() {
            Ok(id) => catalog.object_type(id),
            Err(_) => catalog.types.iter().find(|t| {
                t.name.eq_ignore_ascii_case(text) || t.name.to_lowercase() == text.to_lowercase()
            }),
        };
        match found {
            Some(t) => Ok(LayerId::Objects(t.id)),
            None => Err(Invalid::Input(format!(
                "Ukjent kartlag '{text}': bruk vegnett, en vegobjekttype-id eller et typenavn"
            ))
            .into()),
        }
    }

    /// The layer's name inside the tile: `vegnett` or the type id.
    pub fn name(&self) -> String {
        match self {
            LayerId::Network => network::LAYER.to_string(),
            LayerId::Objects(t) => t.to_string(),
        }
    }
}

/// Project a storage line into the tile's layer units (floats).
pub fn project_line(coords: &[Coord3], tile: TileId, out: &mut Vec<Pt>) -> Result<()> {
    out.clear();
    for c in coords {
        out.push(tile.to_tile(storage_to_world(c[0], c[1])?));
    }
    Ok(())
}

/// Clip a projected line to `rect`, simplify and round each part; None when nothing is left.
pub fn simplify_parts(line: &[Pt], rect: &Rect, tolerance: f64) -> Option<Vec<Vec<(i32, i32)>>> {
    let parts: Vec<Vec<(i32, i32)>> = clip::clip_line(line, rect)
        .iter()
        .filter_map(|p| simplify::line(p, tolerance))
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// The encoded tile of one layer (an empty layer gives a tile without layers: zero bytes);
/// object layers select their objects through their type's spatial index.
pub fn render(g: &Generation, layer: LayerId, tile: TileId) -> Result<Vec<u8>> {
    let style = Style::default();
    let l = match layer {
        LayerId::Network => network::layer(g, tile, &style)?,
        LayerId::Objects(t) => objects::layer(g, t, tile, &style)?,
    };
    Ok(mvt::encode(vec![l]))
}
