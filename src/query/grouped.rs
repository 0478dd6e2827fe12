//! Grouped statistics: count and length of a type's selected objects, or of selected network
//! rows, per group of up to [`MAX_DIMENSIONS`] keys (area, road category, phase, road type,
//! and for objects an enumerated property's value), in one pass over the selection.
//!
//! What a group holds is what the plain statistics with that group's filter AND-ed onto the
//! request's filter give:
//! - an object is in a network group (an area, a category, ...) when a placement overlaps a
//!   network row of that group (the rule of the area bitmaps, `index::bitmaps`), so an object
//!   across two municipalities counts in both;
//! - with segmentation, the length counted in a group is the object's part on that group's rows
//!   (and on rows passing the request's own segmenting filters), so the lengths of groups that
//!   split the network (areas but contract areas, category, phase, road type, a property's
//!   values) add up to the ungrouped length; with a polygon, only the parts inside it count, as
//!   in the plain statistics; without segmentation, every group an object is in gets the
//!   object's whole length.
//! - an object without a value of a grouped property is in that dimension's [`NONE`] group.
//!
//! Keys are codes: area numbers (contract areas: their index in `Areas::contracts`), the
//! category and phase letters, the road type's index in `ROAD_TYPES`, an allowed value's id;
//! [`NONE`] where a row or object has none. Groups come sorted by their codes.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, PrimitiveArray};
use roaring::RoaringBitmap;
use smallvec::SmallVec;

use super::objects::ObjectFilter;
use crate::area::AreaKind;
use crate::generation::{Generation, TypeData};
use crate::geo::area_polygon::AreaPolygon;
use crate::index::bitmaps::part_length;
use crate::snapshot::columns::{RoadNetwork, NO_ROAD_REF};
use crate::util::FastMap;

mod runs;

/// Most dimensions of one grouping.
pub const MAX_DIMENSIONS: usize = 4;

/// The code of "no value" (a row without a road reference, an object without the property).
pub const NONE: u32 = u32::MAX;

/// What to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Region, county, road department, municipality or contract area (not routes).
    Area(AreaKind),
    /// The road category letter of the network row (`E`, `R`, `F`, `K`, `P`, `S`).
    Category,
    /// The road reference's status (phase) letter.
    Phase,
    /// The row's road type (index into `ROAD_TYPES`).
    RoadType,
    /// An enumerated property's allowed value (objects only).
    Enum(u32),
}

impl Dimension {
    fn on_network(self) -> bool {
        !matches!(self, Dimension::Enum(_))
    }
}

/// One group: its key (one code per dimension), how many objects or rows, and their length.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub key: SmallVec<[u32; MAX_DIMENSIONS]>,
    pub count: u64,
    pub length_m: f64,
}

/// The codes of network row `r` in dimension `d` (several only for contract areas).
fn row_codes(g: &Generation, d: Dimension, r: usize, out: &mut SmallVec<[u32; 4]>) {
    let n: &RoadNetwork = &g.network;
    out.clear();
    let letter = |c: u8| if c == NO_ROAD_REF { NONE } else { c as u32 };
    match d {
        Dimension::Area(AreaKind::Municipality) => out.push(n.municipality[r] as u32),
        Dimension::Area(AreaKind::County) => out.push(n.county[r] as u32),
        Dimension::Area(AreaKind::Region) => out.push(n.region[r] as u32),
        Dimension::Area(AreaKind::RoadDepartment) => out.push(n.road_department[r] as u32),
        Dimension::Area(AreaKind::Contract) => {
            out.extend_from_slice(g.areas.contracts_of(n.municipality[r]))
        }
        Dimension::Area(AreaKind::Route) => {}
        Dimension::Category => out.push(letter(n.road_category[r])),
        Dimension::Phase => out.push(letter(n.road_status[r])),
        Dimension::RoadType => out.push(n.road_type[r] as u32),
        Dimension::Enum(_) => out.push(NONE),
    }
}

/// Largest number of dense slots a grouping gets (beyond: every group through the hash map).
const MAX_DENSE: usize = 1 << 20;

/// One dimension's codes numbered densely: the codes a network row or object can have there
/// (the areas' numbers, contract indexes, letters, road types, the property's allowed values).
struct DenseDim {
    /// code -> dense index (`NONE`: not in the domain)
    dense: Vec<u32>,
    /// The dense index of [`NONE`], if the dimension has it.
    none: Option<u32>,
    /// dense index -> code
    codes: Vec<u32>,
}

impl DenseDim {
    fn new(g: &Generation, type_id: Option<u32>, d: Dimension) -> DenseDim {
        let areas = g.areas;
        let (mut codes, none): (Vec<u32>, bool) = match d {
            Dimension::Area(AreaKind::Municipality) => (
                areas
                    .municipalities
                    .iter()
                    .map(|m| m.number as u32)
                    .collect(),
                false,
            ),
            Dimension::Area(AreaKind::County) => (
                areas.counties.iter().map(|c| c.number as u32).collect(),
                false,
            ),
            Dimension::Area(AreaKind::Region) => (
                areas.regions.iter().map(|r| r.number as u32).collect(),
                false,
            ),
            Dimension::Area(AreaKind::RoadDepartment) => (
                areas
                    .road_departments
                    .iter()
                    .map(|r| r.number as u32)
                    .collect(),
                false,
            ),
            Dimension::Area(AreaKind::Contract) => {
                ((0..areas.contracts.len() as u32).collect(), false)
            }
            Dimension::Area(AreaKind::Route) => (Vec::new(), false),
            Dimension::Category | Dimension::Phase => ((b'A' as u32..=b'Z' as u32).collect(), true),
            Dimension::RoadType => (
                (0..crate::snapshot::columns::ROAD_TYPES.len() as u32).collect(),
                false,
            ),
            Dimension::Enum(p) => (
                type_id
                    .and_then(|t| g.catalog.object_type(t))
                    .and_then(|t| t.property(p))
                    .and_then(|p| p.allowed_values.as_ref())
                    .map(|v| v.iter().map(|a| a.id).collect())
                    .unwrap_or_default(),
                true,
            ),
        };
        codes.sort_unstable();
        codes.dedup();
        let top = codes.last().map_or(0, |&c| c as usize + 1);
        let mut dense = vec![NONE; top.min(1 << 20)];
        for (i, &c) in codes.iter().enumerate() {
            if let Some(slot) = dense.get_mut(c as usize) {
                *slot = i as u32;
            }
        }
        let none = none.then(|| {
            codes.push(NONE);
            codes.len() as u32 - 1
        });
        DenseDim { dense, none, codes }
    }

    fn index(&self, code: u32) -> Option<u32> {
        if code == NONE {
            return self.none;
        }
        self.dense
            .get(code as usize)
            .copied()
            .filter(|&i| i != NONE)
    }
}

/// Dense slots for the keys whose every code is in its dimension's domain: slot = the sum of
/// each dense index times its dimension's stride.
/// The dense slots of a grouping, the first dimension the most significant: slots in order are
/// keys in order (each dimension's codes ascending, [`NONE`] last), so the dense groups come
/// out sorted.
struct Dense {
    dims: Vec<DenseDim>,
    strides: Vec<usize>,
    size: usize,
}

impl Dense {
    fn new(g: &Generation, type_id: Option<u32>, dims: &[Dimension]) -> Option<Dense> {
        let dims: Vec<DenseDim> = dims.iter().map(|&d| DenseDim::new(g, type_id, d)).collect();
        let mut strides = vec![0; dims.len()];
        let mut size = 1usize;
        for (i, d) in dims.iter().enumerate().rev() {
            strides[i] = size;
            size = size.checked_mul(d.codes.len().max(1))?;
        }
        (size <= MAX_DENSE).then_some(Dense {
            dims,
            strides,
            size,
        })
    }

    fn slot(&self, key: u128) -> Option<usize> {
        let mut slot = 0;
        for (i, d) in self.dims.iter().enumerate() {
            slot += d.index((key >> (32 * i)) as u32)? as usize * self.strides[i];
        }
        Some(slot)
    }

    fn key(&self, slot: usize) -> u128 {
        pack(
            self.dims
                .iter()
                .zip(&self.strides)
                .map(|(d, &stride)| d.codes[slot / stride % d.codes.len()]),
        )
    }
}

/// Groups accumulated by packed key (one u32 per dimension in a u128): in dense slots where
/// every code of the key is in its domain, else in a hash map.
struct Accumulator {
    dense: Option<Dense>,
    /// (count, length, last item counted) per dense slot.
    cells: Vec<(u64, f64, u32)>,
    slots: FastMap<u128, u32>,
    keys: Vec<u128>,
    /// As `cells` for the keys of the hash map; slot `dense size + i`.
    others: Vec<(u64, f64, u32)>,
    last: Option<(u128, usize)>,
}

impl Accumulator {
    fn new(dense: Option<Dense>) -> Accumulator {
        let size = dense.as_ref().map_or(0, |d| d.size);
        Accumulator {
            dense,
            cells: vec![(0, 0.0, 0); size],
            slots: FastMap::default(),
            keys: Vec::new(),
            others: Vec::new(),
            last: None,
        }
    }

    fn cell(&mut self, slot: usize) -> &mut (u64, f64, u32) {
        match slot.checked_sub(self.cells.len()) {
            None => &mut self.cells[slot],
            Some(i) => &mut self.others[i],
        }
    }

    /// The slot of group `key`, counting `item` (numbered from 1) in it on its first visit;
    /// whether this was that first visit.
    fn visit(&mut self, key: u128, item: u32) -> (usize, bool) {
        let slot = match self.last {
            Some((k, s)) if k == key => s,
            _ => {
                let s = match self.dense.as_ref().and_then(|d| d.slot(key)) {
                    Some(s) => s,
                    None => {
                        let next = self.keys.len() as u32;
                        let i = *self.slots.entry(key).or_insert(next);
                        if i == next {
                            self.keys.push(key);
                            self.others.push((0, 0.0, 0));
                        }
                        self.cells.len() + i as usize
                    }
                };
                self.last = Some((key, s));
                s
            }
        };
        let cell = self.cell(slot);
        let first = cell.2 != item;
        if first {
            cell.0 += 1;
            cell.2 = item;
        }
        (slot, first)
    }

    /// Add `length` to group `key`, counting `item` once in it.
    fn add(&mut self, key: u128, item: u32, length: f64) {
        let (slot, _) = self.visit(key, item);
        self.cell(slot).1 += length;
    }

    /// Add `length` to group `key` on `item`'s first visit only.
    fn add_once(&mut self, key: u128, item: u32, length: f64) {
        if let (slot, true) = self.visit(key, item) {
            self.cell(slot).1 += length;
        }
    }

    fn finish(self, dims: usize) -> Vec<Group> {
        let group = |key: u128, (count, length_m, _): (u64, f64, u32)| Group {
            key: (0..dims).map(|i| (key >> (32 * i)) as u32).collect(),
            count,
            length_m,
        };
        let mut out: Vec<Group> = Vec::new();
        if let Some(d) = &self.dense {
            out.extend(
                self.cells
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.0 > 0)
                    .map(|(s, &c)| group(d.key(s), c)),
            );
        }
        if !self.keys.is_empty() || self.dense.is_none() {
            out.extend(self.keys.iter().zip(self.others).map(|(&k, c)| group(k, c)));
            out.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        }
        debug_assert!(out.windows(2).all(|w| w[0].key < w[1].key));
        out
    }
}

/// Every key of the cartesian product of per-dimension codes, packed.
fn for_each_key(codes: &[SmallVec<[u32; 4]>], mut f: impl FnMut(u128)) {
    // the usual case: one code per dimension
    if codes.iter().all(|c| c.len() == 1) {
        f(pack(codes.iter().map(|c| c[0])));
        return;
    }
    if codes.iter().any(|c| c.is_empty()) {
        return;
    }
    let mut at = vec![0usize; codes.len()];
    loop {
        f(pack(codes.iter().zip(&at).map(|(c, &i)| c[i])));
        let mut d = 0;
        loop {
            if d == codes.len() {
                return;
            }
            at[d] += 1;
            if at[d] < codes[d].len() {
                break;
            }
            at[d] = 0;
            d += 1;
        }
    }
}

fn pack(codes: impl Iterator<Item = u32>) -> u128 {
    codes
        .enumerate()
        .fold(0u128, |k, (i, c)| k | (c as u128) << (32 * i))
}

/// The enumerated column of each dimension (None: not a property, or no object has a value).
fn enum_columns<'a>(
    data: &'a TypeData,
    dims: &[Dimension],
) -> Vec<Option<&'a PrimitiveArray<Int64Type>>> {
    dims.iter()
        .map(|d| match d {
            Dimension::Enum(p) => data
                .table
                .property(*p)
                .and_then(|c| c.values.as_primitive_opt::<Int64Type>()),
            _ => None,
        })
        .collect()
}

/// Counts and lengths per group of the objects `rows` of `data` selected by `f` (see the
/// module text). `segment`: the request's `segmentering`.
pub fn group_objects(
    g: &Generation,
    data: &TypeData,
    rows: &RoaringBitmap,
    f: &ObjectFilter,
    segment: bool,
    dims: &[Dimension],
) -> Vec<Group> {
    assert!(dims.len() <= MAX_DIMENSIONS, "at most {MAX_DIMENSIONS}");
    if let Some(groups) = from_index(data, rows, f, segment, dims) {
        return groups;
    }
    let clip = segment && f.segments();
    if !clip {
        if let Some(groups) = runs::group(g, data, rows, segment, dims) {
            return groups;
        }
    }
    let pieces = data.pieces(g);
    let columns = enum_columns(data, dims);
    let on_network = dims.iter().any(|d| d.on_network());
    let mut codes: Vec<SmallVec<[u32; 4]>> = vec![SmallVec::new(); dims.len()];
    let mut acc = Accumulator::new(Dense::new(g, Some(data.table.type_id), dims));
    let mut ticker = super::budget::Ticker::new();
    let mut cut = PolygonCut::default();
    for o in rows.iter().take_while(|_| !ticker.exhausted()) {
        let item = o + 1;
        let row = o as usize;
        if clip {
            cut.of(g, data, row, f);
        }
        for (i, col) in columns.iter().enumerate() {
            if let Some(col) = col {
                codes[i].clear();
                codes[i].push(if col.is_null(row) {
                    NONE
                } else {
                    col.value(row) as u32
                });
            } else if !dims[i].on_network() {
                codes[i].clear();
                codes[i].push(NONE);
            }
        }
        if !on_network {
            let length = if cut.active {
                cut.total()
            } else if clip {
                pieces
                    .of(row)
                    .filter(|&k| f.row_passes(g, pieces.rows[k] as usize))
                    .map(|k| pieces.length_m[k])
                    .sum()
            } else {
                data.index().length_m[row]
            };
            for_each_key(&codes, |k| acc.add_once(k, item, length));
            continue;
        }
        for k in pieces.of(row) {
            let r = pieces.rows[k] as usize;
            for (i, d) in dims.iter().enumerate() {
                if d.on_network() {
                    row_codes(g, *d, r, &mut codes[i]);
                }
            }
            if !segment {
                let whole = data.index().length_m[row];
                for_each_key(&codes, |k| acc.add_once(k, item, whole));
                continue;
            }
            let part = if cut.active {
                cut.take(r)
            } else if !clip || f.row_passes(g, r) {
                pieces.length_m[k]
            } else {
                0.0
            };
            for_each_key(&codes, |k| acc.add(k, item, part));
        }
    }
    acc.finish(dims.len())
}

/// With a polygon or a route, an object's length per network row inside it (and on rows
/// passing the other segmenting filters): the parts `statistikk` measures (`objects::parts`), so the groups add
/// up to its length.
#[derive(Default)]
struct PolygonCut {
    active: bool,
    /// (network row, length inside), sorted by row.
    by_row: Vec<(u32, f64)>,
}

impl PolygonCut {
    fn of(&mut self, g: &Generation, data: &TypeData, row: usize, f: &ObjectFilter) {
        self.by_row.clear();
        self.active = f.polygon.is_some() || f.route.is_some();
        if !self.active {
            return;
        }
        for p in super::objects::parts(g, &data.table, row, Some(f)) {
            self.by_row.push((p.net_row, p.length_m));
        }
        self.by_row.sort_by_key(|&(r, _)| r);
        self.by_row.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
    }

    fn total(&self) -> f64 {
        self.by_row.iter().map(|&(_, l)| l).sum()
    }

    /// The length inside on network row `r`, once (a second piece on the row gets 0).
    fn take(&mut self, r: usize) -> f64 {
        match self
            .by_row
            .binary_search_by_key(&(r as u32), |&(row, _)| row)
        {
            Ok(i) => std::mem::take(&mut self.by_row[i].1),
            Err(_) => 0.0,
        }
    }
}

/// One area dimension over every object of the type, segmented and without a segmenting
/// filter: the type's area bitmaps and per-area lengths are the answer.
fn from_index(
    data: &TypeData,
    rows: &RoaringBitmap,
    f: &ObjectFilter,
    segment: bool,
    dims: &[Dimension],
) -> Option<Vec<Group>> {
    let [Dimension::Area(kind)] = dims else {
        return None;
    };
    if !segment || f.segments() || rows.len() != data.table.len() as u64 {
        return None;
    }
    let idx = data.index();
    let mut out: Vec<Group> = idx
        .areas
        .iter()
        .filter(|((k, _), bm)| k == kind && !bm.is_empty())
        .map(|(&(k, code), bm)| Group {
            key: SmallVec::from_slice(&[code]),
            count: bm.len(),
            length_m: idx.area_length_m.get(&(k, code)).copied().unwrap_or(0.0),
        })
        .collect();
    out.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    Some(out)
}

/// The length of network row `r`, or with a polygon of its stretches inside it.
fn row_length(g: &Generation, r: usize, polygon: Option<&AreaPolygon>) -> f64 {
    let n = &g.network;
    match polygon {
        None => n.length_m[r],
        Some(a) => super::polygon::cut(g, r, n.from_pos[r], n.to_pos[r], a)
            .into_iter()
            .map(|(from, to)| part_length(n, r, from, to))
            .sum(),
    }
}

/// Counts and lengths per group of network rows `rows`; with `polygon` (the rows' filter)
/// each row's length is that of its stretches inside it.
pub fn group_network(
    g: &Generation,
    rows: &RoaringBitmap,
    dims: &[Dimension],
    polygon: Option<&AreaPolygon>,
) -> Vec<Group> {
    assert!(dims.len() <= MAX_DIMENSIONS, "at most {MAX_DIMENSIONS}");
    let mut codes: Vec<SmallVec<[u32; 4]>> = vec![SmallVec::new(); dims.len()];
    let mut acc = Accumulator::new(Dense::new(g, None, dims));
    for r in rows.iter() {
        for (i, d) in dims.iter().enumerate() {
            row_codes(g, *d, r as usize, &mut codes[i]);
        }
        let length = row_length(g, r as usize, polygon);
        for_each_key(&codes, |k| acc.add(k, r + 1, length));
    }
    acc.finish(dims.len())
}

/// Number and summed length of network rows `rows` (with `polygon`: their stretches inside).
pub fn network_totals(
    g: &Generation,
    rows: &RoaringBitmap,
    polygon: Option<&AreaPolygon>,
) -> (u64, f64) {
    (
        rows.len(),
        rows.iter()
            .map(|r| row_length(g, r as usize, polygon))
            .sum(),
    )
}

/// Whole meters of each group's length such that they add up to `total`'s whole meters
/// (rounded half away from zero, as `statistikk`): each is its length rounded down or up,
/// the ones with the largest fractions (ties: the earlier group) rounded up, as many as the
/// whole-meter total needs (largest remainders). Lengths of groups that do not split the total
/// (contract areas, no segmentation) are each rounded on their own.
pub fn whole_meters(lengths: &[f64], total: Option<f64>) -> Vec<u64> {
    let Some(total) = total else {
        return lengths.iter().map(|l| l.round().max(0.0) as u64).collect();
    };
    let mut out: Vec<u64> = lengths.iter().map(|l| l.max(0.0).floor() as u64).collect();
    let target = total.max(0.0).round() as u64;
    let floor_sum: u64 = out.iter().sum();
    let mut up = target.saturating_sub(floor_sum) as usize;
    if up == 0 {
        return out;
    }
    // the `up` largest remainders (ties: the earlier group), found without sorting them all
    let fracs: Vec<f64> = lengths
        .iter()
        .zip(&out)
        .map(|(l, &m)| l.max(0.0) - m as f64)
        .collect();
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    let by_remainder = |a: &usize, b: &usize| fracs[*b].total_cmp(&fracs[*a]).then(a.cmp(b));
    up = up.min(order.len());
    if up < order.len() {
        order.select_nth_unstable_by(up, by_remainder);
    }
    for &i in &order[..up] {
        out[i] += 1;
    }
    out
}

/// The grouped statistics as methods of the generation they run on.
impl Generation {
    /// Counts and lengths per group of the selected objects `rows` of `data` (see
    /// [`group_objects`]).
    pub fn group_objects(
        &self,
        data: &TypeData,
        rows: &RoaringBitmap,
        f: &ObjectFilter,
        segment: bool,
        dims: &[Dimension],
    ) -> Vec<Group> {
        group_objects(self, data, rows, f, segment, dims)
    }

    /// Counts and lengths per group of network rows `rows` (see [`group_network`]).
    pub fn group_network(
        &self,
        rows: &RoaringBitmap,
        dims: &[Dimension],
        polygon: Option<&AreaPolygon>,
    ) -> Vec<Group> {
        group_network(self, rows, dims, polygon)
    }

    /// Number and summed length of network rows `rows` (with `polygon`: inside it).
    pub fn network_totals(
        &self,
        rows: &RoaringBitmap,
        polygon: Option<&AreaPolygon>,
    ) -> (u64, f64) {
        network_totals(self, rows, polygon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest remainders by a sort of every group (what `whole_meters` did before it selected
    /// the largest only): the oracle.
    fn whole_meters_sorted(lengths: &[f64], total: f64) -> Vec<u64> {
        let mut out: Vec<u64> = lengths.iter().map(|l| l.max(0.0).floor() as u64).collect();
        let target = total.max(0.0).round() as u64;
        let mut up = target.saturating_sub(out.iter().sum()) as usize;
        let mut order: Vec<usize> = (0..lengths.len()).collect();
        let frac = |i: usize| lengths[i].max(0.0) - lengths[i].max(0.0).floor();
        order.sort_by(|&a, &b| frac(b).total_cmp(&frac(a)).then(a.cmp(&b)));
        for &i in &order {
            if up == 0 {
                break;
            }
            out[i] += 1;
            up -= 1;
        }
        out
    }

    proptest::proptest! {
        /// The selection of the largest remainders gives what a sort of them all gives, ties
        /// (many equal fractions) included.
        #[test]
        fn whole_meters_equal_a_sort_of_every_remainder(
            tenths in proptest::collection::vec(0u32..40, 0..60),
            extra in 0.0f64..30.0,
        ) {
            let lengths: Vec<f64> = tenths.iter().map(|&t| t as f64 / 4.0).collect();
            let total: f64 = lengths.iter().sum::<f64>() + extra;
            proptest::prop_assert_eq!(
                whole_meters(&lengths, Some(total)),
                whole_meters_sorted(&lengths, total)
            );
        }
    }

    #[test]
    fn whole_meters_add_up_to_the_rounded_total() {
        let l = [0.4, 0.4, 0.4, 10.5];
        let total: f64 = l.iter().sum();
        let w = whole_meters(&l, Some(total));
        assert_eq!(w.iter().sum::<u64>(), total.round() as u64);
        // 11.7 is 12: 10.5 rounds up first, then the first of the equal 0.4s
        assert_eq!(w, vec![1, 0, 0, 11]);
        // each is its length rounded down or up
        for (a, b) in w.iter().zip(l) {
            assert!(*a as f64 >= b.floor() && *a as f64 <= b.ceil());
        }
        assert_eq!(whole_meters(&[1.5, 2.4], None), vec![2, 2]);
        assert_eq!(whole_meters(&[], Some(0.2)), Vec::<u64>::new());
    }

    #[test]
    fn keys_of_several_codes_are_their_product() {
        let codes = vec![
            SmallVec::from_slice(&[1, 2]),
            SmallVec::from_slice(&[7]),
            SmallVec::from_slice(&[3, 4]),
        ];
        let mut keys = Vec::new();
        for_each_key(&codes, |k| keys.push(k));
        keys.sort();
        let mut want: Vec<u128> = [(1, 3), (1, 4), (2, 3), (2, 4)]
            .iter()
            .map(|&(a, c)| pack([a, 7, c].into_iter()))
            .collect();
        want.sort();
        assert_eq!(keys, want);
        let mut none = 0;
        for_each_key(&[SmallVec::new()], |_| none += 1);
        assert_eq!(none, 0);
    }

    #[test]
    fn dense_slots_and_the_hash_map_accumulate_alike() {
        // two dimensions: codes {5, 7} and {1, 2, NONE}; 9 and 3 are outside the domains
        let dim = |codes: &[u32], none: bool| {
            let mut dense = vec![NONE; 10];
            for (i, &c) in codes.iter().enumerate() {
                dense[c as usize] = i as u32;
            }
            let mut all = codes.to_vec();
            let none = none.then(|| {
                all.push(NONE);
                all.len() as u32 - 1
            });
            DenseDim {
                dense,
                none,
                codes: all,
            }
        };
        let dense = Dense {
            dims: vec![dim(&[5, 7], false), dim(&[1, 2], true)],
            strides: vec![3, 1],
            size: 6,
        };
        for (k, s) in [((5, 1), 0), ((7, 1), 3), ((7, 2), 4), ((5, NONE), 2)] {
            let key = pack([k.0, k.1].into_iter());
            assert_eq!(dense.slot(key), Some(s));
            assert_eq!(dense.key(s), key);
        }
        let visits = [
            (5, 1, 1, 2.0),
            (5, 1, 1, 3.0),
            (9, 1, 1, 1.0),
            (7, NONE, 2, 0.5),
            (5, 1, 2, 1.0),
            (9, 1, 3, 4.0),
            (7, 3, 3, 1.5),
        ];
        let run = |dense: Option<Dense>| {
            let mut acc = Accumulator::new(dense);
            for &(a, b, item, length) in &visits {
                acc.add(pack([a, b].into_iter()), item, length);
            }
            acc.finish(2)
        };
        let with = run(Some(dense));
        assert_eq!(with, run(None));
        let keys: Vec<(u32, u32, u64, f64)> = with
            .iter()
            .map(|g| (g.key[0], g.key[1], g.count, g.length_m))
            .collect();
        assert_eq!(
            keys,
            vec![
                (5, 1, 2, 6.0),
                (7, 3, 1, 1.5),
                (7, NONE, 1, 0.5),
                (9, 1, 2, 5.0)
            ]
        );
    }
}
