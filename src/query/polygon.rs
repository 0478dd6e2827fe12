//! The filters on road objects that are neither areas nor properties: a polygon (`polygon=`),
//! object ids (`ider=`) and last modification (`endret_etter=`). The polygon selects the
//! objects whose geometry (own, else located) intersects it, and cuts the parts of stretch
//! objects to it when segmenting.

use roaring::RoaringBitmap;

use crate::generation::spatial::geometry;
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
        .filter(|&o| geometry(g, data, o as usize).is_some_and(|geom| geom.meets_area(a)))
        .collect();
    sure | met
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
