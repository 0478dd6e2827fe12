//! Coordinate reference systems the API accepts in `srid`, and transformations from the storage
//! system (UTM 33) into them, built on proj4rs.
//!
//! Accepted: 32633 (default), 25833, 5973 and 6173 (all the same plane coordinates as UTM 33,
//! heights pass through), 4326 (degrees; WKT axis order is longitude, latitude, as in GeoJSON
//! and in v1 data), 25832 and 25835 (UTM zones 32 and 35), and the aliases `utm33` and `wgs84`.

use std::sync::OnceLock;

use proj4rs::proj::Proj;

use crate::error::{EngineError, Invalid, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Srid {
    #[default]
    Utm33Wgs84, // 32633
    Utm33Etrs89, // 25833
    Utm33Nn2000, // 5973
    Utm33Nn1954, // 6173
    Wgs84,       // 4326
    Utm32Etrs89, // 25832
    Utm35Etrs89, // 25835
}

impl Srid {
    pub const ALL: [Srid; 7] = [
        Srid::Utm33Wgs84,
        Srid::Utm33Etrs89,
        Srid::Utm33Nn2000,
        Srid::Utm33Nn1954,
        Srid::Wgs84,
        Srid::Utm32Etrs89,
        Srid::Utm35Etrs89,
    ];

    /// Parse the `srid` query parameter.
    pub fn parse(text: &str) -> Result<Srid> {
        let t = text.trim().to_ascii_lowercase();
        let srid = match t.as_str() {
            "32633" | "utm33" => Srid::Utm33Wgs84,
            "25833" => Srid::Utm33Etrs89,
            "5973" => Srid::Utm33Nn2000,
            "6173" => Srid::Utm33Nn1954,
            "4326" | "wgs84" => Srid::Wgs84,
            "25832" => Srid::Utm32Etrs89,
            "25835" => Srid::Utm35Etrs89,
            _ => {
                return Err(Invalid::UnknownSrid {
                    text: text.to_string(),
                }
                .into())
            }
        };
        Ok(srid)
    }

    pub fn code(self) -> u32 {
        match self {
            Srid::Utm33Wgs84 => 32633,
            Srid::Utm33Etrs89 => 25833,
            Srid::Utm33Nn2000 => 5973,
            Srid::Utm33Nn1954 => 6173,
            Srid::Wgs84 => 4326,
            Srid::Utm32Etrs89 => 25832,
            Srid::Utm35Etrs89 => 25835,
        }
    }

    /// True when coordinates are the storage system's own numbers (no transformation).
    pub fn is_native(self) -> bool {
        matches!(
            self,
            Srid::Utm33Wgs84 | Srid::Utm33Etrs89 | Srid::Utm33Nn2000 | Srid::Utm33Nn1954
        )
    }

    pub fn is_geographic(self) -> bool {
        self == Srid::Wgs84
    }

    /// Decimals used when writing coordinates: 0.1 mm in meters, ~1e-9 degrees.
    pub fn decimals(self) -> usize {
        if self.is_geographic() {
            8
        } else {
            3
        }
    }
}

struct Projections {
    utm33: Proj,
    utm32: Proj,
    utm35: Proj,
    wgs84: Proj,
}

fn projections() -> &'static Projections {
    // Not mutable state: the fixed projection definitions, built lazily once.
    static P: OnceLock<Projections> = OnceLock::new();
    P.get_or_init(|| {
        let make = |def: &str| Proj::from_proj_string(def).expect("static proj definition parses");
        Projections {
            utm33: make("+proj=utm +zone=33 +ellps=GRS80 +units=m +no_defs"),
            utm32: make("+proj=utm +zone=32 +ellps=GRS80 +units=m +no_defs"),
            utm35: make("+proj=utm +zone=35 +ellps=GRS80 +units=m +no_defs"),
            wgs84: make("+proj=longlat +ellps=WGS84 +datum=WGS84 +no_defs"),
        }
    })
}

fn transform(from: &Proj, to: &Proj, x: f64, y: f64) -> Result<(f64, f64)> {
    let mut p = (x, y, 0.0);
    proj4rs::transform::transform(from, to, &mut p).map_err(|e| {
        EngineError::from(Invalid::NotTransformable {
            reason: e.to_string(),
        })
    })?;
    Ok((p.0, p.1))
}

/// Transform a storage (UTM 33) coordinate into `srid`. Heights pass through.
pub fn from_storage(srid: Srid, x: f64, y: f64) -> Result<(f64, f64)> {
    let p = projections();
    match srid {
        s if s.is_native() => Ok((x, y)),
        Srid::Wgs84 => {
            let (lon, lat) = transform(&p.utm33, &p.wgs84, x, y)?;
            Ok((lon.to_degrees(), lat.to_degrees()))
        }
        Srid::Utm32Etrs89 => transform(&p.utm33, &p.utm32, x, y),
        Srid::Utm35Etrs89 => transform(&p.utm33, &p.utm35, x, y),
        _ => unreachable!("native srids handled above"),
    }
}

/// Transform a coordinate given in `srid` (for 4326: lon, lat in degrees) into storage UTM 33.
pub fn to_storage(srid: Srid, x: f64, y: f64) -> Result<(f64, f64)> {
    if !x.is_finite() || !y.is_finite() {
        return Err(Invalid::CoordinateNotFinite.into());
    }
    let p = projections();
    match srid {
        s if s.is_native() => Ok((x, y)),
        Srid::Wgs84 => {
            if !(-180.0..=180.0).contains(&x) || !(-90.0..=90.0).contains(&y) {
                return Err(Invalid::GeographicOutOfRange { lon: x, lat: y }.into());
            }
            transform(&p.wgs84, &p.utm33, x.to_radians(), y.to_radians())
        }
        Srid::Utm32Etrs89 => transform(&p.utm32, &p.utm33, x, y),
        Srid::Utm35Etrs89 => transform(&p.utm35, &p.utm33, x, y),
        _ => unreachable!("native srids handled above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn oslo_is_where_it_should_be() {
        // UTM 33 (262000, 6650000) is in Oslo: 10.7416 E, 59.9186 N (checked independently).
        let (lon, lat) = from_storage(Srid::Wgs84, 262_000.0, 6_650_000.0).unwrap();
        assert!((lon - 10.741_565_9).abs() < 1e-6, "{lon}");
        assert!((lat - 59.918_559_5).abs() < 1e-6, "{lat}");
    }

    #[test]
    fn aliases_and_bad_values() {
        assert_eq!(Srid::parse("utm33").unwrap(), Srid::Utm33Wgs84);
        assert_eq!(Srid::parse("WGS84").unwrap(), Srid::Wgs84);
        assert_eq!(Srid::parse("6173").unwrap().code(), 6173);
        assert!(Srid::parse("1234").is_err());
        assert!(Srid::parse("").is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Round trip UTM 33 -> srid -> UTM 33 within 1 mm across Norway's extent.
        #[test]
        fn round_trip_within_a_millimetre(x in -80_000.0f64..1_120_000.0, y in 6_420_000.0f64..7_960_000.0, i in 0usize..7) {
            let srid = Srid::ALL[i];
            let (a, b) = from_storage(srid, x, y).unwrap();
            let (x2, y2) = to_storage(srid, a, b).unwrap();
            prop_assert!((x - x2).abs() < 1e-3 && (y - y2).abs() < 1e-3, "{:?}: {} {} -> {} {}", srid, x, y, x2, y2);
        }
    }
}
