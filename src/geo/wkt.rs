//! WKT output in the API's style: `POINT Z (x y z)`, `LINESTRING Z (...)`, `POLYGON ((...))`,
//! coordinates transformed into the requested srid. 3D geometry carries the `Z` tag only when
//! asked (`z_tag`): response revision 0 wrote `LINESTRING (x y z, ...)` (v2
//! `responsrevisjoner.md`).

use super::srid::{from_storage, Srid};
use super::Coord3;
use crate::error::Result;

/// `v` with at most `decimals` decimals, trailing zeros trimmed (also used by the GeoJSON writer).
pub fn push_num(out: &mut String, v: f64, decimals: usize) {
    crate::util::push_fixed(out, v, decimals as u32);
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

fn tag(z_tag: bool) -> &'static str {
    if z_tag {
        " Z ("
    } else {
        " ("
    }
}

/// `POINT Z (x y z)` (`POINT (x y z)` without `z_tag`).
pub fn point_z(srid: Srid, c: &Coord3, z_tag: bool) -> Result<String> {
    let mut s = String::with_capacity(48);
    push_point_z(&mut s, srid, c, z_tag)?;
    Ok(s)
}

/// Append [`point_z`]'s text (on an error, `out` may hold part of it).
pub fn push_point_z(out: &mut String, srid: Srid, c: &Coord3, z_tag: bool) -> Result<()> {
    out.push_str("POINT");
    out.push_str(tag(z_tag));
    push_coord(out, srid, c, true)?;
    out.push(')');
    Ok(())
}

/// `POINT (x y)`.
pub fn point_2d(srid: Srid, x: f64, y: f64) -> Result<String> {
    let mut s = String::with_capacity(40);
    s.push_str("POINT (");
    push_coord(&mut s, srid, &[x, y, 0.0], false)?;
    s.push(')');
    Ok(s)
}

/// `LINESTRING Z (x y z, ...)` (no `Z` without `z_tag`).
pub fn linestring_z(srid: Srid, coords: &[Coord3], z_tag: bool) -> Result<String> {
    let mut s = String::with_capacity(16 + coords.len() * 36);
    push_linestring_z(&mut s, srid, coords, z_tag)?;
    Ok(s)
}

/// Append [`linestring_z`]'s text (on an error, `out` may hold part of it).
pub fn push_linestring_z(
    out: &mut String,
    srid: Srid,
    coords: &[Coord3],
    z_tag: bool,
) -> Result<()> {
    out.push_str("LINESTRING");
    out.push_str(tag(z_tag));
    for (i, c) in coords.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_coord(out, srid, c, true)?;
    }
    out.push(')');
    Ok(())
}

/// `MULTILINESTRING Z ((...), (...))`, or a plain LINESTRING Z when there is one part (no `Z`
/// without `z_tag`).
pub fn lines_z(srid: Srid, parts: &[Vec<Coord3>], z_tag: bool) -> Result<String> {
    if parts.len() == 1 {
        return linestring_z(srid, &parts[0], z_tag);
    }
    let mut s = String::from("MULTILINESTRING");
    s.push_str(tag(z_tag));
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
        let line = [[1.0, 2.5, 3.0], [4.25, 5.0, -0.0004]];
        let s = linestring_z(Srid::Utm33Wgs84, &line, true).unwrap();
        assert_eq!(s, "LINESTRING Z (1 2.5 3, 4.25 5 0)");
        // revision 0: the same coordinates without the tag
        let untagged = linestring_z(Srid::Utm33Wgs84, &line, false).unwrap();
        assert_eq!(untagged, "LINESTRING (1 2.5 3, 4.25 5 0)");
        assert_eq!(
            lines_z(Srid::Utm33Wgs84, &[line.to_vec(), line.to_vec()], false).unwrap(),
            "MULTILINESTRING ((1 2.5 3, 4.25 5 0), (1 2.5 3, 4.25 5 0))"
        );
        assert_eq!(
            point_z(Srid::Utm33Wgs84, &line[0], false).unwrap(),
            "POINT (1 2.5 3)"
        );
        // untagged 3D (revision 0): still three numbers per vertex
        for text in [untagged.as_str(), "POINT (1 2.5 3)"] {
            let inner = text
                .split_once('(')
                .and_then(|(_, r)| r.strip_suffix(')'))
                .unwrap();
            assert!(
                inner.split(", ").all(|v| v.split(' ').count() == 3),
                "{text}"
            );
        }
        assert_eq!(
            point_2d(Srid::Utm33Wgs84, 10.0, 20.125).unwrap(),
            "POINT (10 20.125)"
        );
        let parsed: wkt::Wkt<f64> = s.parse().expect("valid WKT");
        assert!(matches!(parsed, wkt::Wkt::LineString(_)));
    }
}
