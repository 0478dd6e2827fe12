//! WKT output in the API's style: `POINT Z (x y z)`, `LINESTRING Z (...)`, `POLYGON ((...))`,
//! coordinates transformed into the requested srid.

use std::fmt::Write;

use super::srid::{from_storage, Srid};
use super::Coord3;
use crate::error::Result;

fn push_num(out: &mut String, v: f64, decimals: usize) {
    // Fixed point through integers (much cheaper than float formatting with a precision),
    // trailing zeros trimmed: 262000.000 -> 262000, 12.500 -> 12.5.
    let scale = 10i64.pow(decimals as u32);
    let scaled = (v * scale as f64).round();
    if !scaled.is_finite() || scaled.abs() >= 9.0e18 {
        let _ = write!(out, "{v}");
        return;
    }
    let n = scaled as i64;
    if n < 0 {
        out.push('-');
    }
    let (int, mut frac) = ((n / scale).unsigned_abs(), (n % scale).unsigned_abs());
    let _ = write!(out, "{int}");
    if frac != 0 {
        let mut digits = decimals;
        while frac % 10 == 0 {
            frac /= 10;
            digits -= 1;
        }
        let _ = write!(out, ".{frac:0digits$}");
    }
}

fn push_coord(out: &mut String, srid: Srid, c: &Coord3, with_z: bool) -> Result<()> {
    let (x, y) = from_storage(srid, c[0], c[1])?;
    let d = srid.decimals();
    push_num(out, x, d);
    out.push(' ');
    push_num(out, y, d);
    if with_z {
        out.push(' ');
        push_num(out, c[2], 3);
    }
    Ok(())
}

/// `POINT Z (x y z)`.
pub fn point_z(srid: Srid, c: &Coord3) -> Result<String> {
    let mut s = String::with_capacity(48);
    s.push_str("POINT Z (");
    push_coord(&mut s, srid, c, true)?;
    s.push(')');
    Ok(s)
}

/// `POINT (x y)`.
pub fn point_2d(srid: Srid, x: f64, y: f64) -> Result<String> {
    let mut s = String::with_capacity(40);
    s.push_str("POINT (");
    push_coord(&mut s, srid, &[x, y, 0.0], false)?;
    s.push(')');
    Ok(s)
}

/// `LINESTRING Z (x y z, ...)`.
pub fn linestring_z(srid: Srid, coords: &[Coord3]) -> Result<String> {
    let mut s = String::with_capacity(16 + coords.len() * 36);
    s.push_str("LINESTRING Z (");
    for (i, c) in coords.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        push_coord(&mut s, srid, c, true)?;
    }
    s.push(')');
    Ok(s)
}

/// `MULTILINESTRING Z ((...), (...))`, or a plain LINESTRING Z when there is one part.
pub fn lines_z(srid: Srid, parts: &[Vec<Coord3>]) -> Result<String> {
    if parts.len() == 1 {
        return linestring_z(srid, &parts[0]);
    }
    let mut s = String::from("MULTILINESTRING Z (");
    for (pi, part) in parts.iter().enumerate() {
        if pi > 0 {
            s.push_str(", ");
        }
        s.push('(');
        for (i, c) in part.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            push_coord(&mut s, srid, c, true)?;
        }
        s.push(')');
    }
    s.push(')');
    Ok(s)
}

/// `POLYGON ((x y, ...), (hole))` from 2D rings.
pub fn polygon(srid: Srid, rings: &[Vec<(f64, f64)>]) -> Result<String> {
    let mut s = String::from("POLYGON (");
    for (ri, ring) in rings.iter().enumerate() {
        if ri > 0 {
            s.push_str(", ");
        }
        s.push('(');
        for (i, &(x, y)) in ring.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            push_coord(&mut s, srid, &[x, y, 0.0], false)?;
        }
        s.push(')');
    }
    s.push(')');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn numbers_round_to_the_requested_decimals(v in -2.0e7f64..2.0e7, d in prop::sample::select(vec![3usize, 8])) {
            let mut s = String::new();
            push_num(&mut s, v, d);
            let back: f64 = s.parse().unwrap();
            prop_assert!((back - v).abs() <= 0.5 * 10f64.powi(-(d as i32)) + 1e-9 * v.abs().max(1.0), "{} -> {}", v, s);
            let trailing_zero = s.contains('.') && s.ends_with('0');
            prop_assert!(!s.ends_with('.') && !trailing_zero, "{}", s);
            prop_assert!(s != "-0");
        }
    }

    #[test]
    fn writes_api_style_wkt() {
        let s = linestring_z(Srid::Utm33Wgs84, &[[1.0, 2.5, 3.0], [4.25, 5.0, -0.0004]]).unwrap();
        assert_eq!(s, "LINESTRING Z (1 2.5 3, 4.25 5 0)");
        assert_eq!(
            point_2d(Srid::Utm33Wgs84, 10.0, 20.125).unwrap(),
            "POINT (10 20.125)"
        );
        let parsed: wkt::Wkt<f64> = s.parse().expect("valid WKT");
        assert!(matches!(parsed, wkt::Wkt::LineString(_)));
    }
}
