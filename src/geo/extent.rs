//! The sane extent of the storage system: where a coordinate of Norwegian road data can lie in
//! UTM 33 (EPSG:32633 / 25833 numbers), with a generous margin. Every producer (import, refresh,
//! the write path) refuses a coordinate outside it, and loading a generation refuses one, so an
//! absurd but finite upstream vertex (`1e20`, `±1e308`) can never reach the indexes: the grid is
//! sized by the data's extent and the R-tree's envelopes overflow to NaN past ~1e154.
//!
//! The box (metres): easting −2,000,000 … 3,000,000, northing 5,500,000 … 10,000,000, height
//! −1,000,000 … 1,000,000.
//! - Mainland Norway lies within easting −80 km … 1,120 km and northing 6,450 km … 7,960 km
//!   (Utsira to Grense Jakobselv, Lindesnes to Knivskjellodden); Svalbard (74–81° N) and Jan
//!   Mayen (71° N, 8° W, far outside zone 33) lie inside too. The test below transforms these
//!   extreme points and asserts at least 900 km to every edge, so data of the neighbouring
//!   countries that road links run into stays valid.
//! - The box stays small enough for the grid: at most 39,000 × 35,000 cells of 128 m.
//! - Heights: the deepest subsea tunnel is ~ −300 m, the highest road ~ 1,900 m, but the
//!   `fiktiv` Uberiket sample carries −999,999 (a placeholder for an unknown height, as it
//!   seems), so the range only rules out what is no height at all.
//!
//! Positions on a link are finite and within `0..=1`; lengths are finite and non-negative.

use super::Coord3;

/// Smallest and largest easting (x), metres.
pub const X_RANGE: (f64, f64) = (-2_000_000.0, 3_000_000.0);
/// Smallest and largest northing (y), metres.
pub const Y_RANGE: (f64, f64) = (5_500_000.0, 10_000_000.0);
/// Smallest and largest height (z), metres.
pub const Z_RANGE: (f64, f64) = (-1_000_000.0, 1_000_000.0);

#[inline]
fn within(v: f64, (lo, hi): (f64, f64)) -> bool {
    // false for NaN as well
    v >= lo && v <= hi
}

/// Is the plane coordinate (x, y) finite and inside the extent?
#[inline]
pub fn plane_ok(x: f64, y: f64) -> bool {
    within(x, X_RANGE) && within(y, Y_RANGE)
}

/// Is the coordinate finite and inside the extent (height included)?
#[inline]
pub fn coord_ok(c: &Coord3) -> bool {
    plane_ok(c[0], c[1]) && within(c[2], Z_RANGE)
}

/// The first coordinate of `coords` outside the extent (or not finite), with its index.
pub fn first_bad(coords: &[Coord3]) -> Option<(usize, Coord3)> {
    coords
        .iter()
        .position(|c| !coord_ok(c))
        .map(|i| (i, coords[i]))
}

/// The first coordinate of an object's own-geometry run outside the extent: as
/// [`first_bad`], except that a surface's ring markers (`geo::surface`) are no coordinates.
pub fn first_bad_own(coords: &[Coord3]) -> Option<(usize, Coord3)> {
    if !super::surface::is_surface(coords) {
        return first_bad(coords);
    }
    coords
        .iter()
        .position(|c| !super::surface::is_marker(c) && !coord_ok(c))
        .map(|i| (i, coords[i]))
}

/// Is `v` a position on a link (finite, `0..=1`)?
#[inline]
pub fn position_ok(v: f64) -> bool {
    within(v, (0.0, 1.0))
}

/// Is `v` a length (finite, non-negative)?
#[inline]
pub fn length_ok(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// The words for a coordinate outside the extent, for errors and import summaries.
pub fn describe(c: &Coord3) -> String {
    format!(
        "coordinate ({:?} {:?} {:?}) outside the storage extent (UTM 33: x {}..{}, y {}..{}, z {}..{})",
        c[0], c[1], c[2], X_RANGE.0, X_RANGE.1, Y_RANGE.0, Y_RANGE.1, Z_RANGE.0, Z_RANGE.1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::srid::{to_storage, Srid};

    /// The places the doc comment names, transformed independently of the constants.
    #[test]
    fn norway_svalbard_and_jan_mayen_lie_inside_with_margin() {
        let places = [
            (4.86, 59.30),  // Utsira
            (31.10, 69.78), // Grense Jakobselv
            (7.05, 57.98),  // Lindesnes
            (25.78, 71.19), // Knivskjellodden
            (10.0, 78.0),   // Svalbard, west
            (34.0, 80.5),   // Kvitøya
            (19.0, 74.4),   // Bjørnøya
            (20.0, 81.0),   // north of Nordaustlandet
            (-9.0, 71.0),   // Jan Mayen, west
            (-7.9, 71.2),   // Jan Mayen, east
        ];
        for (lon, lat) in places {
            let (x, y) = to_storage(Srid::Wgs84, lon, lat).unwrap();
            assert!(plane_ok(x, y), "{lon} {lat} -> {x} {y}");
            // at least 900 km from every edge
            for (v, (lo, hi)) in [(x, X_RANGE), (y, Y_RANGE)] {
                assert!(v - lo > 900_000.0 && hi - v > 900_000.0, "{lon} {lat}: {v}");
            }
        }
    }

    #[test]
    fn absurd_and_non_finite_values_are_outside() {
        for bad in [
            1e20,
            1e308,
            -1e308,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(!coord_ok(&[bad, 7_000_000.0, 0.0]));
            assert!(!coord_ok(&[300_000.0, bad, 0.0]));
            assert!(!coord_ok(&[300_000.0, 7_000_000.0, bad]));
            assert!(!position_ok(bad));
            assert_eq!(length_ok(bad), bad.is_finite() && bad >= 0.0);
        }
        assert!(coord_ok(&[262_000.0, 6_650_000.0, 12.5]));
        assert_eq!(
            first_bad(&[[262_000.0, 6_650_000.0, 0.0], [1e20, 6_650_000.0, 0.0]]).map(|b| b.0),
            Some(1)
        );
        // a surface's ring markers are no coordinates; a NaN elsewhere is
        let ring = [
            [f64::NAN, f64::NAN, 0.0],
            [262_000.0, 6_650_000.0, 0.0],
            [262_010.0, 6_650_000.0, 0.0],
            [262_010.0, 6_650_010.0, 0.0],
            [262_000.0, 6_650_000.0, 0.0],
        ];
        assert_eq!(first_bad_own(&ring), None);
        assert_eq!(first_bad(&ring).map(|b| b.0), Some(0));
        let mut bad = ring;
        bad[2][0] = 1e20;
        assert_eq!(first_bad_own(&bad).map(|b| b.0), Some(2));
        assert_eq!(first_bad_own(&ring[1..]), None);
        assert_eq!(first_bad_own(&[[f64::NAN, 1.0, 0.0]]).map(|b| b.0), Some(0));
        assert!(position_ok(0.0) && position_ok(1.0) && !position_ok(-1e-9));
        assert!(length_ok(0.0) && !length_ok(-1.0) && !length_ok(f64::NAN));
    }
}
