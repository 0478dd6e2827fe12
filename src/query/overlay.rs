//! Dynamic segmentation (overlay): network rows cut wherever an object of any of N types
//! begins or ends, each piece carrying, per type, the objects that cover it.
//!
//! Rules:
//! - Only stretch placements (`from < to`) cut and cover; point placements are left out (a
//!   point has no length to carry a value along).
//! - A placement `[a, b]` covers a piece `[x, y]` when `a <= x` and `y <= b`. Pieces are cut at
//!   every placement end strictly inside the row, so a placement either covers a piece or does
//!   not overlap it (beyond an end point).
//! - Several objects of one type covering a piece are all listed, ascending by object id (rows
//!   of a table are sorted by id); an object is listed once however many of its placements
//!   cover the piece.
//! - Pieces are per road stretch regardless of lane and direction: an object placed on some
//!   lanes only (`loc_lanes` non-empty) covers the piece and is marked `lane_specific`.
//! - `only_covered` keeps the pieces that every type covers.
//!
//! Per type the selected objects' placements are gathered once per request into a per-link list
//! sorted by start ([`LinkIntervals`]); each network row is then a sweep over the row's
//! breakpoints with the intervals that overlap it (rows of one link are sorted by start, so the
//! sweep per row starts where the previous row's did).

mod totals;

use std::collections::{HashMap, HashSet};

use roaring::RoaringBitmap;

use crate::index::bitmaps::part_length;
use crate::index::pieces::LinkPlacements;
use crate::snapshot::columns::{ObjectTable, RoadNetwork};

pub use totals::{totals, Totals, TotalsLayer};

/// One stretch placement of a selected object on a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub from: f64,
    pub to: f64,
    /// The object's row in its table.
    pub row: u32,
    /// Placed on particular lanes only.
    pub lane_specific: bool,
}

/// One type's selected stretch placements per link, each list sorted by (from, to, row).
#[derive(Debug, Default)]
pub struct LinkIntervals {
    by_link: HashMap<u64, Vec<Interval>>,
}

impl LinkIntervals {
    /// The placements of `rows` (rows of `table`) on the links in `links` (all links when None).
    pub fn build(
        table: &ObjectTable,
        rows: &RoaringBitmap,
        links: Option<&HashSet<u64>>,
    ) -> LinkIntervals {
        let mut by_link: HashMap<u64, Vec<Interval>> = HashMap::new();
        for o in rows {
            for p in table.placements(o as usize) {
                let link = table.loc_link[p];
                let (from, to) = (table.loc_from[p], table.loc_to[p]);
                if from >= to || links.is_some_and(|l| !l.contains(&link)) {
                    continue;
                }
                by_link.entry(link).or_default().push(Interval {
                    from,
                    to,
                    row: o,
                    lane_specific: !table.loc_lanes[p].is_empty(),
                });
            }
        }
        for v in by_link.values_mut() {
            v.sort_by(|a, b| {
                a.from
                    .total_cmp(&b.from)
                    .then(a.to.total_cmp(&b.to))
                    .then(a.row.cmp(&b.row))
            });
        }
        LinkIntervals { by_link }
    }

    /// As [`Self::build`], for the `links` given (ascending), read from the type's placements
    /// ordered by link (`index`, built from `table`): a link's placements are found by binary
    /// search, so the cost follows the links, not the type's size.
    pub fn build_on_links(
        table: &ObjectTable,
        index: &LinkPlacements,
        rows: &RoaringBitmap,
        links: impl IntoIterator<Item = u64>,
    ) -> LinkIntervals {
        let mut by_link: HashMap<u64, Vec<Interval>> = HashMap::new();
        for link in links {
            let mut v = Vec::new();
            push_link_intervals(table, index, Some(rows), link, &mut v);
            if !v.is_empty() {
                by_link.insert(link, v);
            }
        }
        LinkIntervals { by_link }
    }

    /// The intervals on `link`, sorted by start.
    pub fn of(&self, link: u64) -> &[Interval] {
        self.by_link.get(&link).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// The intervals of `index`'s placements on `link` (of `table`; of the objects in `rows`, all
/// when None) appended to `out`, which is then sorted by (from, to, row).
pub(crate) fn push_link_intervals(
    table: &ObjectTable,
    index: &LinkPlacements,
    rows: Option<&RoaringBitmap>,
    link: u64,
    out: &mut Vec<Interval>,
) {
    for i in index.on(link) {
        let row = index.rows[i];
        if rows.is_some_and(|r| !r.contains(row)) {
            continue;
        }
        let p = index.placements[i] as usize;
        out.push(Interval {
            from: table.loc_from[p],
            to: table.loc_to[p],
            row,
            lane_specific: !table.loc_lanes[p].is_empty(),
        });
    }
    out.sort_by(|a, b| {
        a.from
            .total_cmp(&b.from)
            .then(a.to.total_cmp(&b.to))
            .then(a.row.cmp(&b.row))
    });
}

/// The cuts of a row from `lo` to `hi` into `cuts`: its ends and every end of the overlapping
/// intervals `ends` strictly inside it, ascending, each once; a row of no length is cut once
/// (one piece from `lo` to `hi`).
pub(crate) fn row_cuts(lo: f64, hi: f64, ends: impl Iterator<Item = f64>, cuts: &mut Vec<f64>) {
    cuts.clear();
    cuts.extend([lo, hi]);
    cuts.extend(ends.filter(|&x| x > lo && x < hi));
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    if cuts.len() == 1 {
        // a row of no length: one piece
        cuts.push(hi);
    }
}

/// An object covering a piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cover {
    /// The object's row in its table.
    pub row: u32,
    /// Some covering placement of it is on particular lanes only.
    pub lane_specific: bool,
}

/// A piece of a network row: `[from, to]` on the row's link.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub net_row: u32,
    pub link_id: u64,
    pub from: f64,
    pub to: f64,
    /// The piece's length, meters.
    pub length_m: f64,
    /// Per type (in the order of the layers), the covering objects ascending by row.
    pub covers: Vec<Vec<Cover>>,
}

/// The links of the given network rows (to bound what [`LinkIntervals::build`] gathers).
pub fn links_of(net: &RoadNetwork, rows: &RoaringBitmap) -> HashSet<u64> {
    rows.iter().map(|r| net.link_id[r as usize]).collect()
}

/// The pieces of network row `r` (in order of position), appended to `out`.
pub fn row_pieces(
    net: &RoadNetwork,
    r: usize,
    layers: &[LinkIntervals],
    only_covered: bool,
    out: &mut Vec<Piece>,
) {
    let (link, lo, hi) = (net.link_id[r], net.from_pos[r], net.to_pos[r]);
    // the intervals of each layer overlapping the row with positive length
    let overlapping: Vec<Vec<Interval>> = layers
        .iter()
        .map(|l| {
            let v = l.of(link);
            let end = v.partition_point(|i| i.from < hi);
            v[..end].iter().filter(|i| i.to > lo).copied().collect()
        })
        .collect();
    let mut cuts = Vec::new();
    let ends = overlapping.iter().flatten().flat_map(|i| [i.from, i.to]);
    row_cuts(lo, hi, ends, &mut cuts);
    for w in cuts.windows(2) {
        let (x, y) = (w[0], w[1]);
        let covers: Vec<Vec<Cover>> = overlapping.iter().map(|v| covering(v, x, y)).collect();
        if only_covered && covers.iter().any(Vec::is_empty) {
            continue;
        }
        out.push(Piece {
            net_row: r as u32,
            link_id: link,
            from: x,
            to: y,
            length_m: part_length(net, r, x, y),
            covers,
        });
    }
}

/// The objects among `v` (sorted by start) covering `[x, y]`, ascending by row, each once.
fn covering(v: &[Interval], x: f64, y: f64) -> Vec<Cover> {
    let end = v.partition_point(|i| i.from <= x);
    let mut out: Vec<Cover> = Vec::new();
    for i in v[..end].iter().filter(|i| i.to >= y) {
        match out.iter_mut().find(|c| c.row == i.row) {
            Some(c) => c.lane_specific |= i.lane_specific,
            None => out.push(Cover {
                row: i.row,
                lane_specific: i.lane_specific,
            }),
        }
    }
    out.sort_by_key(|c| c.row);
    out
}

/// The pieces of `rows` (in row order), with `layers` built for them.
pub fn overlay(
    net: &RoadNetwork,
    rows: impl IntoIterator<Item = u32>,
    layers: &[LinkIntervals],
    only_covered: bool,
) -> Vec<Piece> {
    let mut out = Vec::new();
    for r in rows {
        row_pieces(net, r as usize, layers, only_covered, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covering_lists_each_object_once_by_row() {
        let iv = |from, to, row, lane_specific| Interval {
            from,
            to,
            row,
            lane_specific,
        };
        let v = vec![
            iv(0.0, 0.5, 7, false),
            iv(0.1, 0.9, 3, false),
            iv(0.2, 0.6, 7, true),
            iv(0.6, 1.0, 1, false),
        ];
        let c = covering(&v, 0.2, 0.5);
        assert_eq!(
            c,
            vec![
                Cover {
                    row: 3,
                    lane_specific: false
                },
                Cover {
                    row: 7,
                    lane_specific: true
                }
            ]
        );
        assert_eq!(
            covering(&v, 0.9, 1.0),
            vec![Cover {
                row: 1,
                lane_specific: false
            }]
        );
    }
}
