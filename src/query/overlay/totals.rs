//! The figures of an overlay without its pieces: how many pieces, their length, and per type
//! how many it covers and their length (`/vegnett/segmentert/statistikk`). The pieces are those
//! of [`super::row_pieces`] (same cuts, same rules); they are counted as the row is swept
//! instead of being made.
//!
//! A type covers a piece `[x, y]` when one of its intervals has `from <= x` and `to >= y`. The
//! pieces of a row come in ascending `x`, so per type the intervals with `from <= x` only grow
//! (they are sorted by start): the type covers the piece when the largest `to` among them
//! reaches `y`. One pass per row and type, no list of covering objects.
//!
//! The rows are taken in parts on rayon's pool; a part walks its rows link by link (rows of a
//! link are consecutive, links ascending) and gathers each link's intervals from the types'
//! placements ordered by link, without a map from link to intervals.

use rayon::prelude::*;
use roaring::RoaringBitmap;

use super::{push_link_intervals, row_cuts, Interval};
use crate::index::bitmaps::part_length;
use crate::index::pieces::LinkPlacements;
use crate::snapshot::columns::{ObjectTable, RoadNetwork};

/// Pieces, their length, and per type the pieces it covers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    pub pieces: u64,
    pub length_m: f64,
    /// Per type (in the order of the layers): the pieces it covers and their length.
    pub covered: Vec<(u64, f64)>,
}

impl Totals {
    /// Nothing yet, for `types` types.
    pub fn new(types: usize) -> Totals {
        Totals {
            pieces: 0,
            length_m: 0.0,
            covered: vec![(0, 0.0); types],
        }
    }

    /// Adds `other`'s figures (of as many types).
    pub fn add(&mut self, other: &Totals) {
        self.pieces += other.pieces;
        self.length_m += other.length_m;
        for (a, b) in self.covered.iter_mut().zip(&other.covered) {
            a.0 += b.0;
            a.1 += b.1;
        }
    }
}

/// One type of an overlay's figures: its table, its stretch placements ordered by link, and
/// its selected objects (None: every row).
pub struct TotalsLayer<'a> {
    pub table: &'a ObjectTable,
    pub index: &'a LinkPlacements,
    pub objects: Option<&'a RoaringBitmap>,
}

/// Fewest network rows in one part.
const PART_ROWS: usize = 4096;

/// The figures of the pieces of network `rows` with `layers` (None: a type without data,
/// covering nothing), as [`super::overlay`] would cut them.
pub fn totals(
    net: &RoadNetwork,
    rows: &RoaringBitmap,
    layers: &[Option<TotalsLayer<'_>>],
    only_covered: bool,
) -> Totals {
    let rows: Vec<u32> = rows.iter().collect();
    let parts: Vec<Totals> = rows
        .par_chunks(PART_ROWS)
        .map(|part| part_totals(net, part, layers, only_covered))
        .collect();
    // summed in row order whatever the threads did: the same figures every time
    let mut out = Totals::new(layers.len());
    for t in &parts {
        out.add(t);
    }
    out
}

/// The figures of `rows` (ascending), link by link.
fn part_totals(
    net: &RoadNetwork,
    rows: &[u32],
    layers: &[Option<TotalsLayer<'_>>],
    only_covered: bool,
) -> Totals {
    let mut out = Totals::new(layers.len());
    let mut on_link: Vec<Vec<Interval>> = vec![Vec::new(); layers.len()];
    let mut sweep = Sweep::default();
    let mut at = 0;
    while at < rows.len() {
        let link = net.link_id[rows[at] as usize];
        let end = at + rows[at..].partition_point(|&r| net.link_id[r as usize] == link);
        for (v, layer) in on_link.iter_mut().zip(layers) {
            v.clear();
            if let Some(l) = layer {
                push_link_intervals(l.table, l.index, l.objects, link, v);
            }
        }
        for &r in &rows[at..end] {
            sweep.row(net, r as usize, &on_link, only_covered, &mut out);
        }
        at = end;
    }
    out
}

/// A row's sweep, its buffers kept from row to row.
#[derive(Default)]
struct Sweep {
    cuts: Vec<f64>,
    /// Per type: the intervals overlapping the row with positive length, (from, to).
    overlapping: Vec<Vec<(f64, f64)>>,
    /// Per type: how many of its overlapping intervals start at or before the piece, and the
    /// largest end among them.
    reach: Vec<(usize, f64)>,
    covered: Vec<bool>,
}

impl Sweep {
    /// Adds the pieces of network row `r` to `out`: those [`super::row_pieces`] makes.
    fn row(
        &mut self,
        net: &RoadNetwork,
        r: usize,
        on_link: &[Vec<Interval>],
        only_covered: bool,
        out: &mut Totals,
    ) {
        let (lo, hi) = (net.from_pos[r], net.to_pos[r]);
        let types = on_link.len();
        self.overlapping.resize_with(types, Vec::new);
        for (o, v) in self.overlapping.iter_mut().zip(on_link) {
            o.clear();
            let end = v.partition_point(|i| i.from < hi);
            o.extend(
                v[..end]
                    .iter()
                    .filter(|i| i.to > lo)
                    .map(|i| (i.from, i.to)),
            );
        }
        let ends = self.overlapping.iter().flatten().flat_map(|&(a, b)| [a, b]);
        row_cuts(lo, hi, ends, &mut self.cuts);
        self.reach.clear();
        self.reach.resize(types, (0, f64::NEG_INFINITY));
        for w in 0..self.cuts.len() - 1 {
            let (x, y) = (self.cuts[w], self.cuts[w + 1]);
            self.covered.clear();
            for (o, reach) in self.overlapping.iter().zip(self.reach.iter_mut()) {
                while reach.0 < o.len() && o[reach.0].0 <= x {
                    reach.1 = reach.1.max(o[reach.0].1);
                    reach.0 += 1;
                }
                self.covered.push(reach.1 >= y);
            }
            if only_covered && self.covered.iter().any(|&c| !c) {
                continue;
            }
            let length = part_length(net, r, x, y);
            out.pieces += 1;
            out.length_m += length;
            for (c, figures) in self.covered.iter().zip(out.covered.iter_mut()) {
                if *c {
                    figures.0 += 1;
                    figures.1 += length;
                }
            }
        }
    }
}
