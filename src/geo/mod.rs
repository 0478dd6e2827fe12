//! Geometry helpers: coordinate systems (`srid`), WKT output, WKB encoding for Parquet, and
//! linear referencing along polylines. Coordinates are stored in UTM zone 33 (EPSG:25833 /
//! 32633 numbers; heights in meters).

pub mod area_polygon;
pub mod extent;
pub mod grid_axes;
pub mod linref;
pub mod map_extent;
pub mod simplify;
pub mod srid;
pub mod surface;
pub mod wkb;
pub mod wkt;

/// A 3D coordinate in the storage system (UTM 33 easting, northing, height).
pub type Coord3 = [f64; 3];
