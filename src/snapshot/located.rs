//! Where an object lies, derived from its placements on the road network: the geometry the
//! open-data files carry for objects without an own geometry (lines for line-placed types,
//! points for point-placed ones), its bounding box, its located length and its length per
//! municipality. The same overlap rule as the area bitmaps (`index::bitmaps::row_areas`): a
//! placement lies on every network row of its link it overlaps or touches, and its length on
//! a row is the placed share of the row's length. Kept here (below `generation`) because the
//! Parquet writer derives these columns from the tables and the network alone.

use super::columns::{ObjectTable, RoadNetwork};
use crate::geo::{linref, wkb, Coord3};

/// What the files carry about where one object lies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Located {
    /// GeoParquet geometry type and ISO WKB; None when the object has neither an own
    /// geometry nor a placement on the network.
    pub geometry: Option<(&'static str, Vec<u8>)>,
    /// True when `geometry` comes from the placements (not an own geometry).
    pub from_placements: bool,
    /// [xmin, ymin, xmax, ymax] of the geometry.
    pub bbox: Option<[f64; 4]>,
    /// Located length in meters (0 for points), as `statistikk` sums it.
    pub length_m: f64,
    /// (municipality, meters inside it), ascending by municipality; every municipality a
    /// placement overlaps or touches, also with 0 m.
    pub municipalities: Vec<(u16, f64)>,
}

/// The placed share of network row `seg` between link positions `from..to`, in meters.
pub fn part_length(network: &RoadNetwork, seg: usize, from: f64, to: f64) -> f64 {
    let (rf, rt) = (network.from_pos[seg], network.to_pos[seg]);
    let (a, b) = (from.max(rf), to.min(rt));
    if b <= a || rt <= rf {
        0.0
    } else {
        (b - a) / (rt - rf) * network.length_m[seg]
    }
}

/// The located geometry of an object without an own one, in storage coordinates, by the
/// rule of `generation::feature` (`Generation::located_geometry`, what the API writes as
/// `geometri`): the placements' pieces on the network rows they overlap (a point placement on
/// the border of two rows belongs to the first); a point when every piece is a point (the
/// first), else the pieces' sub-lines with consecutive ones that touch (within 1 µm) joined.
/// Returns the lines, or one point as a one-coordinate line. `tests/formats.rs` checks the
/// two agree on every object.
pub fn located_lines(network: &RoadNetwork, t: &ObjectTable, row: usize) -> Vec<Vec<Coord3>> {
    // (network row, from, to) per piece
    let mut pieces: Vec<(usize, u64, f64, f64)> = Vec::new();
    for p in t.placements(row) {
        let (link, from, to) = (t.loc_link[p], t.loc_from[p], t.loc_to[p]);
        for r in network.rows_overlapping(link, from, to) {
            if from == to && pieces.last().is_some_and(|q| q.1 == link && q.2 == from) {
                continue;
            }
            pieces.push((
                r,
                link,
                from.max(network.from_pos[r]),
                to.min(network.to_pos[r]),
            ));
        }
    }
    let fraction = |r: usize, pos: f64| {
        let span = (network.to_pos[r] - network.from_pos[r]).max(1e-12);
        (pos - network.from_pos[r]) / span
    };
    let Some(&(r0, _, f0, _)) = pieces.first() else {
        return Vec::new();
    };
    if pieces.iter().all(|p| p.2 == p.3) {
        return vec![vec![linref::point_at(
            network.geometry(r0),
            fraction(r0, f0),
        )]];
    }
    let mut lines: Vec<Vec<Coord3>> = Vec::new();
    for &(r, _, from, to) in pieces.iter().filter(|p| p.3 > p.2) {
        let piece = linref::sub_line(network.geometry(r), fraction(r, from), fraction(r, to));
        match lines.last_mut() {
            Some(l)
                if l.last().is_some_and(|e| {
                    (e[0] - piece[0][0]).abs() < 1e-6 && (e[1] - piece[0][1]).abs() < 1e-6
                }) =>
            {
                l.extend_from_slice(&piece[1..])
            }
            _ => lines.push(piece),
        }
    }
    lines
}

/// Locate object `row` of `t` on `network`.
pub fn locate(network: &RoadNetwork, t: &ObjectTable, row: usize) -> Located {
    let mut out = Located::default();
    let mut kommuner: Vec<(u16, f64)> = Vec::new();
    for p in t.placements(row) {
        let (from, to) = (t.loc_from[p], t.loc_to[p]);
        for seg in network.rows_overlapping(t.loc_link[p], from, to) {
            let part = part_length(network, seg, from, to);
            out.length_m += part;
            kommuner.push((network.municipality[seg], part));
        }
    }
    kommuner.sort_by_key(|k| k.0);
    for (m, l) in kommuner {
        match out.municipalities.last_mut() {
            Some(last) if last.0 == m => last.1 += l,
            _ => out.municipalities.push((m, l)),
        }
    }
    let own = t.own_geometry(row);
    if !own.is_empty() {
        out.geometry = <super::schema::ObjectGeometry as super::schema::GeometryCodec>::encode(own);
        out.bbox = bbox(own.iter().filter(|c| !c[0].is_nan()));
        return out;
    }
    let lines = located_lines(network, t, row);
    out.bbox = bbox(lines.iter().flatten());
    out.from_placements = true;
    out.geometry = match lines.as_slice() {
        [] => None,
        [p] if p.len() == 1 => Some(("Point Z", wkb::point_z(&p[0]))),
        [l] => Some(("LineString Z", wkb::linestring_z(l))),
        ls => Some((
            "MultiLineString Z",
            multilinestring_z(&ls.iter().collect::<Vec<_>>()),
        )),
    };
    out
}

fn bbox<'a>(coords: impl Iterator<Item = &'a Coord3>) -> Option<[f64; 4]> {
    let mut b: Option<[f64; 4]> = None;
    for c in coords {
        let v = b.get_or_insert([c[0], c[1], c[0], c[1]]);
        v[0] = v[0].min(c[0]);
        v[1] = v[1].min(c[1]);
        v[2] = v[2].max(c[0]);
        v[3] = v[3].max(c[1]);
    }
    b
}

/// ISO WKB MultiLineString Z (type 1005), little endian.
pub fn multilinestring_z(lines: &[&Vec<Coord3>]) -> Vec<u8> {
    let mut b = Vec::with_capacity(9 + lines.iter().map(|l| 9 + 24 * l.len()).sum::<usize>());
    b.push(1);
    b.extend_from_slice(&1005u32.to_le_bytes());
    b.extend_from_slice(&(lines.len() as u32).to_le_bytes());
    for l in lines {
        b.extend_from_slice(&wkb::linestring_z(l));
    }
    b
}

/// Position of (x, y) in [0, 2^16)² along the Hilbert curve (for ordering rows in space).
pub fn hilbert_index(x: u32, y: u32) -> u64 {
    let (mut x, mut y) = (x as u64, y as u64);
    let n: u64 = 1 << 16;
    let mut d = 0u64;
    let mut s = n / 2;
    while s > 0 {
        let rx = u64::from(x & s > 0);
        let ry = u64::from(y & s > 0);
        d += s * s * ((3 * rx) ^ ry);
        if ry == 0 {
            if rx == 1 {
                x = n - 1 - x;
                y = n - 1 - y;
            }
            std::mem::swap(&mut x, &mut y);
        }
        s /= 2;
    }
    d
}

/// Row order of boxes along the Hilbert curve of their centres over the boxes' extent (rows
/// without a box last); ties in row order, so the order is deterministic.
pub fn hilbert_order(boxes: &[Option<[f64; 4]>]) -> Vec<usize> {
    let all = bbox(
        boxes
            .iter()
            .flatten()
            .flat_map(|b| [[b[0], b[1], 0.0], [b[2], b[3], 0.0]])
            .collect::<Vec<_>>()
            .iter(),
    );
    let mut keyed: Vec<(u64, usize)> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| match (b, all) {
            (Some(b), Some(e)) => {
                let cell = |v: f64, lo: f64, hi: f64| {
                    let span = (hi - lo).max(1e-9);
                    (((v - lo) / span) * 65535.0).clamp(0.0, 65535.0) as u32
                };
                let cx = cell((b[0] + b[2]) / 2.0, e[0], e[2]);
                let cy = cell((b[1] + b[3]) / 2.0, e[1], e[3]);
                (hilbert_index(cx, cy), i)
            }
            _ => (u64::MAX, i),
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hilbert_curve_visits_every_cell_once_with_neighbours_adjacent() {
        // on the 2^16 grid restricted to its first 4x4 corner: indices 0..16, each step one cell
        let mut cells: Vec<(u64, (u32, u32))> = (0..4)
            .flat_map(|x| (0..4).map(move |y| (hilbert_index(x, y), (x, y))))
            .collect();
        cells.sort();
        assert_eq!(
            cells.iter().map(|c| c.0).collect::<Vec<_>>(),
            (0..16).collect::<Vec<u64>>()
        );
        for w in cells.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0].1, w[1].1);
            assert_eq!(x0.abs_diff(x1) + y0.abs_diff(y1), 1, "{w:?}");
        }
    }

    #[test]
    fn rows_without_a_box_go_last_and_near_boxes_stay_together() {
        let b = |x: f64, y: f64| Some([x, y, x + 1.0, y + 1.0]);
        let order = hilbert_order(&[b(0.0, 0.0), None, b(1000.0, 1000.0), b(1.0, 1.0)]);
        assert_eq!(order.last(), Some(&1));
        let pos = |i: usize| order.iter().position(|&o| o == i).unwrap();
        assert_eq!(pos(0).abs_diff(pos(3)), 1, "{order:?}");
    }

    #[test]
    fn multi_geometries_are_valid_iso_wkb() {
        let a = vec![[0.0, 0.0, 1.0], [1.0, 0.0, 1.0]];
        let m = multilinestring_z(&[&a, &a]);
        assert_eq!(&m[..9], &[1, 0xed, 3, 0, 0, 2, 0, 0, 0]);
        assert_eq!(m.len(), 9 + 2 * (9 + 48));
    }
}
