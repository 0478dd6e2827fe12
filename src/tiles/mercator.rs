//! Web Mercator (EPSG:3857) tile math: the XYZ tile scheme (x to the east, y to the south, tile
//! (0, 0) at the north-west corner), tile coordinates in layer units (`EXTENT` per tile side), and
//! the projection of storage coordinates (UTM 33) into them through `geo::srid`.

use crate::error::{Invalid, Result};
use crate::geo::srid::{from_storage, to_storage, Srid};

/// Layer units per tile side (the MVT default).
pub const EXTENT: u32 = 4096;
/// Units kept around the tile when clipping, so lines and polygons join without seams.
pub const BUFFER: u32 = 64;
/// Highest zoom served.
pub const MAX_ZOOM: u8 = 22;
/// Latitude limit of Web Mercator.
pub const MAX_LATITUDE: f64 = 85.051_128_779_806_59;

/// One tile of the XYZ scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileId {
    pub z: u8,
    pub x: u32,
    pub y: u32,
}

impl TileId {
    /// A tile from its path parts: z at most `MAX_ZOOM`, x and y below 2^z.
    pub fn new(z: u32, x: u64, y: u64) -> Result<TileId> {
        if z > MAX_ZOOM as u32 {
            return Err(
                Invalid::Input(format!("Ugyldig zoomnivå {z}: må være 0–{MAX_ZOOM}")).into(),
            );
        }
        let n = 1u64 << z;
        if x >= n || y >= n {
            return Err(Invalid::Input(format!(
                "Ugyldig flis {z}/{x}/{y}: x og y må være 0–{} på zoomnivå {z}",
                n - 1
            ))
            .into());
        }
        Ok(TileId {
            z: z as u8,
            x: x as u32,
            y: y as u32,
        })
    }

    /// Tiles per side at this zoom.
    pub fn scale(&self) -> f64 {
        (1u64 << self.z) as f64
    }

    /// World coordinates (0..1, y south) -> this tile's layer units (floats, may lie outside).
    pub fn to_tile(&self, w: (f64, f64)) -> (f64, f64) {
        let s = self.scale();
        (
            (w.0 * s - self.x as f64) * EXTENT as f64,
            (w.1 * s - self.y as f64) * EXTENT as f64,
        )
    }

    /// Layer units -> world coordinates.
    pub fn to_world(&self, t: (f64, f64)) -> (f64, f64) {
        let s = self.scale();
        (
            (t.0 / EXTENT as f64 + self.x as f64) / s,
            (t.1 / EXTENT as f64 + self.y as f64) / s,
        )
    }

    /// Bounding box in storage coordinates (UTM 33: min x, min y, max x, max y) covering the tile
    /// with `buffer` layer units around it: the buffered tile's edges are sampled and
    /// transformed, and the box widened by a margin for the curvature between samples. A superset
    /// of what the tile shows within `STORAGE_LONGITUDES` (where UTM 33 is defined well enough:
    /// all Norwegian data lies there); exact clipping is done in layer units. None when the tile
    /// lies outside those longitudes.
    pub fn storage_bbox(&self, buffer: f64) -> Result<Option<[f64; 4]>> {
        const SAMPLES: usize = 16;
        let lo = -buffer;
        let hi = EXTENT as f64 + buffer;
        let (west, _) = world_to_lon_lat(self.to_world((lo, lo)));
        let (east, _) = world_to_lon_lat(self.to_world((hi, hi)));
        let (min_lon, max_lon) = STORAGE_LONGITUDES;
        if east < min_lon || west > max_lon {
            return Ok(None);
        }
        let mut b = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for i in 0..=SAMPLES {
            let t = lo + (hi - lo) * i as f64 / SAMPLES as f64;
            for p in [(t, lo), (t, hi), (lo, t), (hi, t)] {
                let (lon, lat) = world_to_lon_lat(self.to_world(p));
                let (x, y) = to_storage(
                    Srid::Wgs84,
                    lon.clamp(min_lon, max_lon),
                    lat.clamp(-84.0, 84.0),
                )?;
                b[0] = b[0].min(x);
                b[1] = b[1].min(y);
                b[2] = b[2].max(x);
                b[3] = b[3].max(y);
            }
        }
        let margin = 0.02 * (b[2] - b[0]).max(b[3] - b[1]) + 1.0;
        Ok(Some([
            b[0] - margin,
            b[1] - margin,
            b[2] + margin,
            b[3] + margin,
        ]))
    }
}

/// Longitudes (degrees) whose tiles are searched for data: around UTM zone 33's central
/// meridian (15° E), covering Norway with Svalbard and Jan Mayen by a wide margin.
pub const STORAGE_LONGITUDES: (f64, f64) = (-30.0, 60.0);

/// Longitude, latitude (degrees) -> world coordinates (0..1 each, y to the south).
pub fn lon_lat_to_world(lon: f64, lat: f64) -> (f64, f64) {
    let lat = lat.clamp(-MAX_LATITUDE, MAX_LATITUDE).to_radians();
    let x = (lon + 180.0) / 360.0;
    let y = (1.0 - (lat.tan() + 1.0 / lat.cos()).ln() / std::f64::consts::PI) / 2.0;
    (x, y)
}

/// World coordinates -> longitude, latitude (degrees).
pub fn world_to_lon_lat(w: (f64, f64)) -> (f64, f64) {
    let lon = w.0 * 360.0 - 180.0;
    let n = std::f64::consts::PI * (1.0 - 2.0 * w.1);
    let lat = n.sinh().atan().to_degrees();
    (lon, lat)
}

/// Storage coordinates (UTM 33) -> world coordinates.
pub fn storage_to_world(x: f64, y: f64) -> Result<(f64, f64)> {
    let (lon, lat) = from_storage(Srid::Wgs84, x, y)?;
    Ok(lon_lat_to_world(lon, lat))
}

/// EPSG:3857 metres of world coordinates (for TileJSON bounds and tests).
pub fn world_to_meters(w: (f64, f64)) -> (f64, f64) {
    const HALF: f64 = 20_037_508.342_789_244;
    (w.0 * 2.0 * HALF - HALF, HALF - w.1 * 2.0 * HALF)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_tiles() {
        // Trondheim centre (10.3951 E, 63.4305 N) is in tile 12/2166/1107 (the slippy-map
        // formulas of the OSM wiki evaluated in Python: (lon+180)/360*4096 = 2166.27,
        // (1-ln(tan φ+sec φ)/π)/2*4096 = 1107.01).
        let w = lon_lat_to_world(10.3951, 63.4305);
        let t = TileId::new(12, 2166, 1107).unwrap();
        let (tx, ty) = t.to_tile(w);
        assert!((0.0..EXTENT as f64).contains(&tx), "{tx}");
        assert!((0.0..EXTENT as f64).contains(&ty), "{ty}");
        // EPSG:3857 of (10, 60): 1113194.91, 8399737.89 (proj's values)
        let (mx, my) = world_to_meters(lon_lat_to_world(10.0, 60.0));
        assert!((mx - 1_113_194.907_9).abs() < 0.01, "{mx}");
        assert!((my - 8_399_737.889_8).abs() < 0.01, "{my}");
    }

    #[test]
    fn bad_tiles_are_refused() {
        assert!(TileId::new(23, 0, 0).is_err());
        assert!(TileId::new(1, 2, 0).is_err());
        assert!(TileId::new(1, 0, 2).is_err());
        assert!(TileId::new(0, 0, 0).is_ok());
        assert!(TileId::new(22, (1 << 22) - 1, (1 << 22) - 1).is_ok());
    }

    proptest! {
        /// world -> lon/lat -> world is the identity, and the storage bbox of a tile contains
        /// every storage point that projects into the tile.
        #[test]
        fn round_trip_and_bbox(x in -50_000.0f64..1_100_000.0, y in 6_450_000.0f64..7_900_000.0, z in 0u8..18) {
            let w = storage_to_world(x, y).unwrap();
            let (lon, lat) = world_to_lon_lat(w);
            let w2 = lon_lat_to_world(lon, lat);
            prop_assert!((w.0 - w2.0).abs() < 1e-12 && (w.1 - w2.1).abs() < 1e-12);
            let s = (1u64 << z) as f64;
            let t = TileId::new(z as u32, (w.0 * s) as u64, (w.1 * s) as u64).unwrap();
            let b = t.storage_bbox(0.0).unwrap().unwrap();
            prop_assert!(b[0] <= x && x <= b[2] && b[1] <= y && y <= b[3], "{:?} {} {}", b, x, y);
        }
    }
}
