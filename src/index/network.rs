//! Indexes over the road network built at load: road part -> rows sorted by meter, area
//! bitmaps over rows, the nearest-position grid, and a row-major copy of the hot fields; and,
//! on the first road system reference lookup, the rows sorted by that reference
//! ([`SystemRefIndex`]).

use std::ops::Range;

use roaring::RoaringBitmap;

use super::grid::SegmentGrid;
use crate::area::AreaKind;
use crate::snapshot::columns::{RoadNetwork, NO_ROAD_REF};
use crate::util::FastMap;

/// What identifies a road part (hp) in the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoadKey {
    pub county: u8,
    pub municipality_part: u8,
    pub category: u8,
    pub status: u8,
    pub number: u32,
    pub hp: u16,
}

impl RoadKey {
    /// False for a row without a road reference (`NO_ROAD_REF`: an imported veglenke piece no
    /// 915 Vegsystem covers): such a row has no vegreferanse to show, is found by no road
    /// reference and answers no position question.
    #[inline]
    pub fn has_road_ref(&self) -> bool {
        self.category != NO_ROAD_REF
    }

    /// The municipality part of the prefix: the last two digits for K and P roads, else 0.
    pub fn municipality_part_of(category: u8, municipality: u16) -> u8 {
        if matches!(category, b'K' | b'P') {
            (municipality % 100) as u8
        } else {
            0
        }
    }

    /// `1800 Ev6 hp23`
    pub fn short(&self) -> String {
        let mut s = String::with_capacity(24);
        self.push_short(&mut s);
        s
    }

    fn push_short(&self, s: &mut String) {
        use crate::util::{push_int, push_int_2};
        push_int_2(s, u64::from(self.county));
        push_int_2(s, u64::from(self.municipality_part));
        s.push(' ');
        s.push(self.category as char);
        s.push((self.status as char).to_ascii_lowercase());
        push_int(s, u64::from(self.number));
        s.push_str(" hp");
        push_int(s, u64::from(self.hp));
    }

    /// `1800 Ev6 hp23 m17084`
    pub fn point(&self, meter: u32) -> String {
        let mut s = String::with_capacity(32);
        self.push_point(&mut s, meter);
        s
    }

    /// Append [`RoadKey::point`]'s text.
    pub fn push_point(&self, s: &mut String, meter: u32) {
        self.push_short(s);
        s.push_str(" m");
        crate::util::push_int(s, u64::from(meter));
    }

    /// `1800 Ev6 hp23 m17084-17117`
    pub fn stretch(&self, from_m: u32, to_m: u32) -> String {
        let mut s = String::with_capacity(40);
        self.push_short(&mut s);
        s.push_str(" m");
        crate::util::push_int(&mut s, u64::from(from_m));
        s.push('-');
        crate::util::push_int(&mut s, u64::from(to_m));
        s
    }
}

/// The fields a position answer needs, row-major: one cache line per row instead of a dozen
/// column reads on the hot path.
#[derive(Debug, Clone, Copy)]
pub struct RowInfo {
    pub link_id: u64,
    pub from_pos: f64,
    pub to_pos: f64,
    pub from_m: u32,
    pub to_m: u32,
    /// 2D length of the row's geometry.
    pub length_2d: f64,
    pub key: RoadKey,
}

/// A level-0 row of a road part, with the meters it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoadRow {
    pub from_m: u32,
    pub to_m: u32,
    pub row: u32,
}

/// Indexes over the road network built at load.
#[derive(Debug, Default)]
pub struct NetworkIndexes {
    pub rows: Vec<RowInfo>,
    /// Road part -> its level-0 rows with their meters (rows without a road reference are in
    /// none), sorted by from_m (then link id): a
    /// point reference is found by a walk over one contiguous run, not a random read of the
    /// network's columns per row.
    pub roads: FastMap<RoadKey, Vec<RoadRow>>,
    /// (area kind, number) -> rows.
    pub areas: FastMap<(AreaKind, u32), RoaringBitmap>,
    pub grid: SegmentGrid,
    /// The rows by road system reference, built on the first lookup ([`Self::system_refs`]).
    system_refs: std::sync::OnceLock<SystemRefIndex>,
}

/// A road system reference's part: category, phase, number, strekning, delstrekning.
pub type SystemPart = (u8, u8, u32, u16, u16);

fn system_part(n: &RoadNetwork, r: usize) -> SystemPart {
    (
        n.system_category[r],
        n.system_phase[r],
        n.system_number[r],
        n.section[r],
        n.subsection[r],
    )
}

/// The rows with a road system reference sorted by (part, from-metre, row), each with its
/// reach: the largest to-metre of the rows of its part up to it. The rows of a part holding a
/// metre are found by a binary search and a walk back that stops where the reach no longer
/// holds it, so a lookup reads a few rows rather than the whole network.
#[derive(Debug, Default)]
pub struct SystemRefIndex {
    rows: Vec<u32>,
    reach: Vec<u32>,
    /// The phases the rows have (a reference without a phase looks in each).
    phases: Vec<u8>,
}

impl SystemRefIndex {
    pub fn build(n: &RoadNetwork) -> SystemRefIndex {
        let mut rows: Vec<u32> = (0..n.len())
            .filter(|&r| n.system_category[r] != NO_ROAD_REF)
            .map(|r| r as u32)
            .collect();
        rows.sort_unstable_by_key(|&r| {
            (system_part(n, r as usize), n.section_from_m[r as usize], r)
        });
        let mut reach = Vec::with_capacity(rows.len());
        let mut run: Option<(SystemPart, u32)> = None;
        for &r in &rows {
            let (part, to) = (system_part(n, r as usize), n.section_to_m[r as usize]);
            let m = match run {
                Some((p, m)) if p == part => m.max(to),
                _ => to,
            };
            reach.push(m);
            run = Some((part, m));
        }
        let mut phases: Vec<u8> = rows.iter().map(|&r| n.system_phase[r as usize]).collect();
        phases.sort_unstable();
        phases.dedup();
        SystemRefIndex {
            rows,
            reach,
            phases,
        }
    }

    /// The phases the indexed rows have, ascending.
    pub fn phases(&self) -> &[u8] {
        &self.phases
    }

    /// The positions in the sorted rows of the parts from `lo` to `hi` (both included): one
    /// contiguous run, since the rows are sorted by part first.
    pub fn parts(&self, n: &RoadNetwork, lo: SystemPart, hi: SystemPart) -> Range<usize> {
        let start = self
            .rows
            .partition_point(|&r| system_part(n, r as usize) < lo);
        let end = self
            .rows
            .partition_point(|&r| system_part(n, r as usize) <= hi);
        start..end.max(start)
    }

    /// The rows at positions `at` (from [`parts`](Self::parts)).
    pub fn rows_at(&self, at: Range<usize>) -> &[u32] {
        &self.rows[at]
    }

    /// The rows of part `p` whose metres overlap `from..=to` (a row's from-metre <= `to` and
    /// its to-metre >= `from`), by descending from-metre.
    pub fn overlapping<'a>(
        &'a self,
        n: &'a RoadNetwork,
        p: SystemPart,
        from: u32,
        to: u32,
    ) -> impl Iterator<Item = usize> + 'a {
        let key = |r: u32| (system_part(n, r as usize), n.section_from_m[r as usize]);
        let start = self.parts(n, p, p).start;
        let end = self.rows.partition_point(|&r| key(r) <= (p, to));
        (start..end.max(start))
            .rev()
            .take_while(move |&i| self.reach[i] >= from)
            .map(move |i| self.rows[i] as usize)
            .filter(move |&r| n.section_to_m[r] >= from)
    }

    /// The rows of part `p` whose metres hold `m` (from <= m <= to), by descending from-metre.
    pub fn holding<'a>(
        &'a self,
        n: &'a RoadNetwork,
        p: SystemPart,
        m: u32,
    ) -> impl Iterator<Item = usize> + 'a {
        self.overlapping(n, p, m, m)
    }
}

pub fn row_key(n: &RoadNetwork, row: usize) -> RoadKey {
    RoadKey {
        county: n.county[row],
        municipality_part: RoadKey::municipality_part_of(n.road_category[row], n.municipality[row]),
        category: n.road_category[row],
        status: n.road_status[row],
        number: n.road_number[row],
        hp: n.hp[row],
    }
}

impl NetworkIndexes {
    pub fn build(n: &RoadNetwork) -> NetworkIndexes {
        let mut roads: FastMap<RoadKey, Vec<RoadRow>> = FastMap::default();
        let mut areas: FastMap<(AreaKind, u32), RoaringBitmap> = FastMap::default();
        for row in 0..n.len() {
            if n.topology_level[row] == 0 && n.road_category[row] != NO_ROAD_REF {
                roads.entry(row_key(n, row)).or_default().push(RoadRow {
                    from_m: n.from_m[row],
                    to_m: n.to_m[row],
                    row: row as u32,
                });
            }
            for k in [
                (AreaKind::Municipality, n.municipality[row] as u32),
                (AreaKind::County, n.county[row] as u32),
                (AreaKind::Region, n.region[row] as u32),
                (AreaKind::RoadDepartment, n.road_department[row] as u32),
            ] {
                areas.entry(k).or_default().insert(row as u32);
            }
        }
        for rows in roads.values_mut() {
            rows.sort_by_key(|r| (r.from_m, n.link_id[r.row as usize]));
        }
        let rows = (0..n.len())
            .map(|r| RowInfo {
                link_id: n.link_id[r],
                from_pos: n.from_pos[r],
                to_pos: n.to_pos[r],
                from_m: n.from_m[r],
                to_m: n.to_m[r],
                length_2d: crate::geo::linref::length_2d(n.geometry(r)),
                key: row_key(n, r),
            })
            .collect();
        NetworkIndexes {
            rows,
            roads,
            areas,
            grid: SegmentGrid::build(n),
            system_refs: std::sync::OnceLock::new(),
        }
    }

    /// The rows by road system reference of `n` (the network these indexes were built on),
    /// built on the first call.
    pub fn system_refs(&self, n: &RoadNetwork) -> &SystemRefIndex {
        self.system_refs.get_or_init(|| SystemRefIndex::build(n))
    }
}
