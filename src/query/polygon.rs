//! The filters on road objects that are neither areas nor properties: a polygon (`polygon=`),
//! object ids (`ider=`) and last modification (`endret_etter=`). The polygon selects the
//! objects whose geometry (own, else located) intersects it, and cuts the parts of stretch
//! objects to it when segmenting; a page of an object list decides it only for as many
//! objects as the page takes ([`in_polygon_from`]).

use roaring::RoaringBitmap;

use crate::generation::feature::Geometry;
#[cfg(doc)]
use crate::generation::spatial::{geometry, ObjectIndex};
use crate::generation::{Generation, TypeData};
use crate::geo::area_polygon::AreaPolygon;

/// The objects of `candidates` whose geometry intersects polygon `a`: candidates from the
/// type's spatial index (the geometry's box meets the polygon's envelope), then the exact test.
pub fn in_polygon(
    g: &Generation,
    data: &TypeData,
    candidates: &RoaringBitmap,
    a: &AreaPolygon,
) -> RoaringBitmap {
    let Some(envelope) = a.storage_envelope() else {
        return RoaringBitmap::new();
    };
    let mut sure = RoaringBitmap::new();
    let mut exact = RoaringBitmap::new();
    for (row, b) in data.object_index(g).boxes_meeting(envelope) {
        if !candidates.contains(row) {
            continue;
        }
        // a box wholly inside or outside the polygon decides without the geometry
        match a.storage_box(b) {
            Some(true) => {
                sure.insert(row);
            }
            Some(false) => {}
            None => {
                exact.insert(row);
            }
        }
    }
    let mut ticker = super::budget::Ticker::new();
    let met: RoaringBitmap = exact
        .iter()
        .take_while(|_| !ticker.exhausted())
        .filter(|&o| meets(g, data, o as usize, a))
        .collect();
    sure | met
}

/// The objects of `candidates` from row `first` on whose geometry intersects polygon `a`, in
/// row order, at most `limit`: the first `limit` rows from `first` on that [`in_polygon`]
/// selects, deciding only as many objects as the page takes. The rows near the polygon's
/// storage envelope come in row order from the type's spatial index
/// ([`ObjectIndex::rows_near`]); each whose box ([`ObjectIndex::box_of`]) meets the envelope
/// is decided by the cells, or by the exact test when its box is on an edge.
pub fn in_polygon_from(
    g: &Generation,
    data: &TypeData,
    candidates: &RoaringBitmap,
    a: &AreaPolygon,
    first: u32,
    limit: usize,
) -> Vec<u32> {
    let Some(envelope) = a.storage_envelope().filter(|_| limit > 0) else {
        return Vec::new();
    };
    let index = data.object_index(g);
    // every row a candidate (no other filter): no lookup in the candidates
    let full = candidates.len() == data.table.len() as u64;
    let mut ticker = super::budget::Ticker::new();
    index
        .rows_near(envelope, first)
        .take_while(|_| !ticker.exhausted())
        .filter(|&row| {
            let b = index.box_of(row);
            (full || candidates.contains(row))
                && boxes_meet(b, envelope)
                && match a.storage_box(b) {
                    Some(decided) => decided,
                    None => meets(g, data, row as usize, a),
                }
        })
        .take(limit)
        .collect()
}

/// Does the geometry of object `row` of `data` ([`geometry`]: its own, else where it lies on
/// the network) meet polygon `a`? A located geometry is tested as its parts, without joining
/// them: its stretches, each network row's piece of a placement (the point of its first part
/// when it has only points).
fn meets(g: &Generation, data: &TypeData, row: usize, a: &AreaPolygon) -> bool {
    let t = &data.table;
    let own = t.own_geometry(row);
    if !own.is_empty() {
        return Geometry::from_own(own).is_some_and(|geom| geom.meets_area(a));
    }
    let pieces = g.placement_pieces(t, row, |_| true);
    let mut lines = Vec::new();
    for p in pieces.iter().filter(|p| p.to > p.from) {
        let line = g.segment(p.net_row).sub_line(p.from, p.to);
        // most parts near the edge have a vertex well inside: no more parts made
        if a.vertex_inside(&line) {
            return true;
        }
        lines.push(line);
    }
    match pieces.first() {
        Some(p) if pieces.iter().all(|q| q.from == q.to) => {
            a.meets_line(&[g.segment(p.net_row).point_at(p.from)])
        }
        _ => a.meets_lines(&lines),
    }
}

/// Do rectangles `[x0, y0, x1, y1]` `a` and `b` meet?
fn boxes_meet(a: [f64; 4], b: [f64; 4]) -> bool {
    a[0] <= b[2] && a[2] >= b[0] && a[1] <= b[3] && a[3] >= b[1]
}

/// The stretches of a placement part `from..=to` on network row `net_row` inside polygon `a`,
/// as link position ranges (a point part: itself when it lies in the polygon). Stretches the
/// polygon only touches in a point are left out.
pub fn cut(g: &Generation, net_row: usize, from: f64, to: f64, a: &AreaPolygon) -> Vec<(f64, f64)> {
    let seg = g.segment(net_row);
    if to <= from {
        return if a.meets_line(&[seg.point_at(from)]) {
            vec![(from, to)]
        } else {
            Vec::new()
        };
    }
    let line = seg.sub_line(from, to);
    let span = to - from;
    a.inside_fractions(&line)
        .into_iter()
        .filter(|(fa, fb)| fb > fa)
        .map(|(fa, fb)| (from + fa * span, (from + fb * span).min(to)))
        .collect()
}

/// The rows of `data` whose object id is one of `ids`.
pub fn with_ids(data: &TypeData, ids: &[u64]) -> RoaringBitmap {
    ids.iter()
        .filter_map(|&id| data.table.row_of(id))
        .map(|r| r as u32)
        .collect()
}

/// The rows of `rows` whose object was last modified after `after` (seconds).
pub fn modified_after(data: &TypeData, rows: &RoaringBitmap, after: i64) -> RoaringBitmap {
    rows.iter()
        .filter(|&r| data.table.last_modified[r as usize] > after)
        .collect()
}

#[cfg(test)]
mod tests {

    use geo::{LineString, MultiPolygon, Polygon};
    use proptest::prelude::*;

    use super::*;
    use crate::geo::srid::Srid;

    fn demo() -> &'static Generation {
        crate::generation::demo_for_tests()
    }

    /// A star-shaped polygon around the first vertex of network row `at`, in storage
    /// coordinates, with a hole when `hole`.
    fn star(g: &Generation, at: usize, radii: &[f64], hole: bool) -> AreaPolygon {
        let c = g.network.geometry(at % g.network.len())[0];
        let ring = |radii: &[f64]| {
            let k = radii.len();
            let mut pts: Vec<(f64, f64)> = radii
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let t = std::f64::consts::TAU * i as f64 / k as f64;
                    (c[0] + r * t.cos(), c[1] + r * t.sin())
                })
                .collect();
            pts.push(pts[0]);
            LineString::from(pts)
        };
        let min = radii.iter().cloned().fold(f64::INFINITY, f64::min);
        let holes = if hole {
            vec![ring(&[min * 0.4; 5])]
        } else {
            vec![]
        };
        let shape = MultiPolygon(vec![Polygon::new(ring(radii), holes)]);
        AreaPolygon::new(Srid::Utm33Etrs89, shape).expect("polygon")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The part-by-part test says of every object what its whole geometry says.
        #[test]
        fn parts_meet_as_the_whole(
            at in any::<usize>(),
            radii in prop::collection::vec(100.0f64..3000.0, 3..9),
            hole in any::<bool>(),
        ) {
            let g = demo();
            let a = star(g, at, &radii, hole);
            let mut some = 0;
            for (t, data) in &g.objects {
                for row in 0..data.table.len() {
                    let whole = crate::generation::spatial::geometry(g, data, row)
                        .is_some_and(|geom| geom.meets_area(&a));
                    prop_assert_eq!(meets(g, data, row, &a), whole, "type {} row {}", t, row);
                    some += usize::from(whole);
                }
            }
            prop_assert!(some > 0);
        }

        /// Walking the pages (any page size) gives what the whole selection gives, in row
        /// order, each row once; a page from any row on is that selection's rows from there.
        #[test]
        fn pages_walk_the_whole_selection(
            at in any::<usize>(),
            radii in prop::collection::vec(200.0f64..6000.0, 3..12),
            hole in any::<bool>(),
            ti in 0usize..3,
            size in 1usize..60,
            every_other in any::<bool>(),
            from in any::<u32>(),
        ) {
            let g = demo();
            let data = &g.objects[&[105u32, 95, 241][ti]];
            let a = star(g, at, &radii, hole);
            let n = data.table.len() as u32;
            let candidates: RoaringBitmap = (0..n).filter(|r| !every_other || r % 2 == 0).collect();
            let want = in_polygon(g, data, &candidates, &a);
            let mut got = Vec::new();
            let mut first = 0;
            loop {
                let page = in_polygon_from(g, data, &candidates, &a, first, size);
                prop_assert!(page.len() <= size);
                let Some(&last) = page.last() else { break };
                prop_assert!(page.len() == size || want.range(last + 1..).next().is_none());
                got.extend(page);
                first = last + 1;
            }
            prop_assert_eq!(got, want.iter().collect::<Vec<u32>>());
            let start = if n == 0 { 0 } else { from % n };
            let page = in_polygon_from(g, data, &candidates, &a, start, size);
            let expected: Vec<u32> = want.range(start..).take(size).collect();
            prop_assert_eq!(page, expected);
        }
    }
}
