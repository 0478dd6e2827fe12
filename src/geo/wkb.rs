//! ISO WKB encoding of the storage geometries (GeoParquet 1.1 `encoding: WKB`): little endian,
//! `Point Z` = 1001, `LineString Z` = 1002, `Polygon` = 3, `MultiPolygon` = 6 (surfaces: see
//! `surface`, whose marked runs they decode into).

use super::Coord3;

const POINT_Z: u32 = 1001;
const LINESTRING_Z: u32 = 1002;
pub(crate) const POLYGON: u32 = 3;
pub(crate) const MULTIPOLYGON: u32 = 6;

pub fn point_z(c: &Coord3) -> Vec<u8> {
    let mut out = Vec::with_capacity(29);
    out.push(1);
    out.extend_from_slice(&POINT_Z.to_le_bytes());
    for v in c {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

pub fn linestring_z(coords: &[Coord3]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + coords.len() * 24);
    out.push(1);
    out.extend_from_slice(&LINESTRING_Z.to_le_bytes());
    out.extend_from_slice(&(coords.len() as u32).to_le_bytes());
    for c in coords {
        for v in c {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

fn read_u32(b: &[u8], at: usize, le: bool) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if le {
        u32::from_le_bytes(s)
    } else {
        u32::from_be_bytes(s)
    })
}

fn read_f64(b: &[u8], at: usize, le: bool) -> Option<f64> {
    let s: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
    Some(if le {
        f64::from_le_bytes(s)
    } else {
        f64::from_be_bytes(s)
    })
}

/// Decode a Point Z / LineString Z (or their 2D forms, z = 0) into coordinates, appending to
/// `out`; a Polygon / MultiPolygon (2D or Z) becomes a marked run (`surface`). Returns the
/// number of coordinates appended, or None for anything else or truncated input.
pub fn decode_into(b: &[u8], out: &mut Vec<Coord3>) -> Option<usize> {
    let before = out.len();
    let mut at = 0;
    decode_at(b, &mut at, out)?;
    Some(out.len() - before)
}

fn decode_at(full: &[u8], at: &mut usize, out: &mut Vec<Coord3>) -> Option<()> {
    let b = full.get(*at..)?;
    let start = *at;
    let le = *b.first()? == 1;
    let kind = read_u32(b, 1, le)?;
    let (base, has_z) = match kind {
        1 | 2 | 3 | 6 => (kind, false),
        1001 | 1002 | 1003 | 1006 => (kind - 1000, true),
        k if k & 0x8000_0000 != 0 => (k & 0xff, true),
        _ => return None,
    };
    let dims = if has_z { 3 } else { 2 };
    let read_coord = |at: usize| -> Option<Coord3> {
        let x = read_f64(b, at, le)?;
        let y = read_f64(b, at + 8, le)?;
        let z = if has_z {
            read_f64(b, at + 16, le)?
        } else {
            0.0
        };
        Some([x, y, z])
    };
    match base {
        1 => {
            out.push(read_coord(5)?);
            *at = start + 5 + dims * 8;
            Some(())
        }
        2 => {
            let n = read_u32(b, 5, le)? as usize;
            if b.len() < 9 + n * dims * 8 {
                return None;
            }
            for i in 0..n {
                out.push(read_coord(9 + i * dims * 8)?);
            }
            *at = start + 9 + n * dims * 8;
            Some(())
        }
        3 => {
            let rings = read_u32(b, 5, le)? as usize;
            let mut pos = 9;
            for ring in 0..rings {
                let n = read_u32(b, pos, le)? as usize;
                pos += 4;
                if b.len() < pos + n * dims * 8 {
                    return None;
                }
                out.push([f64::NAN, f64::NAN, if ring == 0 { 0.0 } else { 1.0 }]);
                for i in 0..n {
                    out.push(read_coord(pos + i * dims * 8)?);
                }
                pos += n * dims * 8;
            }
            *at = start + pos;
            Some(())
        }
        6 => {
            let n = read_u32(b, 5, le)? as usize;
            *at = start + 9;
            for _ in 0..n {
                let before = out.len();
                decode_at(full, at, out)?;
                // members must be polygons
                if !out.get(before).is_some_and(|c| c[0].is_nan()) {
                    return None;
                }
            }
            Some(())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn linestring_round_trip(coords in prop::collection::vec(prop::array::uniform3(-1e7f64..1e7), 0..40)) {
            let bytes = linestring_z(&coords);
            let mut back = Vec::new();
            prop_assert_eq!(decode_into(&bytes, &mut back), Some(coords.len()));
            prop_assert_eq!(back, coords);
        }
    }

    #[test]
    fn truncated_input_is_rejected() {
        let bytes = linestring_z(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let mut out = Vec::new();
        assert_eq!(decode_into(&bytes[..bytes.len() - 1], &mut out), None);
        assert_eq!(decode_into(&point_z(&[1.0, 2.0, 3.0]), &mut out), Some(1));
    }
}
