//! The grouping of one area kind (municipality, county, region, road department) with any
//! enumerated properties, over objects whose length is not cut by a segmenting filter: one
//! entry per object and area (`index::pieces::AreaRuns`) instead of one per piece, each added
//! to a dense table of slots, in parallel over ranges of object rows.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::Int64Type;
use arrow_array::{Array, PrimitiveArray};
use rayon::prelude::*;
use roaring::RoaringBitmap;

use super::{enum_columns, pack, Accumulator, Dense, Dimension, Group, MAX_DIMENSIONS, NONE};
use crate::generation::{Generation, TypeData, RANK_NONE, RANK_OFF};
use crate::index::area_values::{self, AreaValueRuns};
use crate::index::pieces::AreaRuns;

/// Most parallel tasks per thread of the pool (each sums into a table of its own, added up
/// after), and least object rows per task.
const TASKS_PER_THREAD: u32 = 2;
const MIN_ROWS_PER_TASK: u32 = 256;
/// Beyond this many dense slots (each task sums into a table of its own), at most two tasks.
const LARGE_TABLE: usize = 1 << 16;

/// One task's sums: per dense slot (count, length), and the entries whose key is off the
/// dense domain (a value that is no allowed value of the property).
struct Part {
    cells: Vec<(u64, f64)>,
    misses: Vec<(u128, f64)>,
}

/// A dense slot part that is off the dense domain.
const OFF: u32 = u32::MAX;

/// One enumerated dimension of the pass: each object's rank, and per rank its part of the dense
/// slot (`OFF`: a value off the property's list).
struct EnumSlots {
    ranks: Option<Arc<Vec<u16>>>,
    /// Per rank, then [`RANK_OFF`] and [`RANK_NONE`] at the end.
    slots: Vec<u32>,
}

impl EnumSlots {
    fn new(ranks: Option<Arc<Vec<u16>>>, dense: &Dense, i: usize) -> EnumSlots {
        let d = &dense.dims[i];
        let stride = dense.strides[i] as u32;
        let of = |index: Option<u32>| index.map_or(OFF, |x| x * stride);
        let values = d.codes.len() - usize::from(d.none.is_some());
        let mut slots: Vec<u32> = (0..values as u32).map(|r| of(Some(r))).collect();
        slots.push(OFF);
        slots.push(of(d.index(NONE)));
        EnumSlots { ranks, slots }
    }

    fn slot(&self, row: usize) -> Option<u32> {
        let rank = self.ranks.as_ref().map_or(RANK_NONE, |r| r[row]);
        Some(self.of_rank(rank)).filter(|&s| s != OFF)
    }

    /// The slot part of rank `rank` (`OFF`: off the dense domain).
    #[inline]
    fn of_rank(&self, rank: u16) -> u32 {
        let at = match rank {
            RANK_NONE => self.slots.len() - 1,
            RANK_OFF => self.slots.len() - 2,
            r => r as usize,
        };
        self.slots.get(at).copied().unwrap_or(OFF)
    }
}

/// What the pass reads: per object its slot part of each enumerated dimension, its runs (area
/// codes and lengths inside each area), and the area's slot part per code.
struct Pass<'a> {
    enums: &'a [EnumSlots],
    area_slot: &'a [u32],
    runs: &'a AreaRuns,
    /// The objects' whole lengths, when not segmenting.
    whole: Option<&'a [f64]>,
    columns: &'a [Option<&'a PrimitiveArray<Int64Type>>],
    at: usize,
    dimensions: usize,
}

impl Pass<'_> {
    /// Sums the objects `rows` into `part` (one loop, monomorphized per kind of row iterator).
    fn sum(&self, rows: impl Iterator<Item = u32>, part: &mut Part) {
        let cells = &mut part.cells[..];
        for row in rows {
            let row = row as usize;
            let base = self
                .enums
                .iter()
                .try_fold(0u32, |b, e| e.slot(row).map(|s| b + s))
                .unwrap_or(OFF);
            let entries = self.runs.of(row);
            let codes = &self.runs.codes[entries.clone()];
            for (&code, &inside) in codes.iter().zip(&self.runs.length_m[entries]) {
                let length = self.whole.map_or(inside, |w| w[row]);
                let area = self.area_slot.get(code as usize).copied().unwrap_or(OFF);
                if base != OFF && area != OFF {
                    if let Some(cell) = cells.get_mut((base + area) as usize) {
                        cell.0 += 1;
                        cell.1 += length;
                        continue;
                    }
                }
                part.misses.push((self.key(row, code), length));
            }
        }
    }

    /// Sums the entries `entries` of every object into `part`, in entry order (each entry
    /// names its object) and by runs of one area code, with `base` giving an object's slot
    /// part of the enumerated dimensions (`OFF`: off the dense domain). Monomorphized per
    /// number of dimensions.
    fn sum_entries(&self, entries: Range<usize>, part: &mut Part, base: impl Fn(usize) -> u32) {
        let runs = self.runs;
        let Part { cells, misses } = part;
        let mut start = entries.start;
        let mut run = runs.code_runs.partition_point(|&end| end as usize <= start);
        while start < entries.end {
            let end = runs
                .code_runs
                .get(run)
                .map_or(entries.end, |&e| (e as usize).min(entries.end));
            let code = runs.codes[start];
            // the run's slots from its area's part on (none: off the dense domain)
            let area = self.area_slot.get(code as usize).copied().unwrap_or(OFF);
            let local = cells.get_mut(area as usize..).unwrap_or_default();
            let owners = &runs.owners[start..end];
            for (&row, &inside) in owners.iter().zip(&runs.length_m[start..end]) {
                let row = row as usize;
                let length = self.whole.map_or(inside, |w| w[row]);
                // an enumerated part off the domain is `OFF`: past the table's end
                match local.get_mut(base(row) as usize) {
                    Some(cell) => {
                        cell.0 += 1;
                        cell.1 += length;
                    }
                    None => misses.push((self.key(row, code), length)),
                }
            }
            start = end;
            run += 1;
        }
    }

    /// Sums the groups `groups` of `c` (every object's entries by area and the value of the
    /// one enumerated dimension `e`) into `part`: each group one slot, its count its number of
    /// entries and its length their lengths summed in order.
    fn sum_clustered(
        &self,
        c: &AreaValueRuns,
        groups: Range<usize>,
        e: &EnumSlots,
        part: &mut Part,
    ) {
        for i in groups {
            let (code, rank, _) = c.groups[i];
            let entries = c.entries(i);
            let length = |k: usize| {
                self.whole
                    .map_or(c.length_m[k], |w| w[c.owners[k] as usize])
            };
            let area = self.area_slot.get(code as usize).copied().unwrap_or(OFF);
            let value = e.of_rank(rank);
            let cell = (area != OFF && value != OFF)
                .then(|| part.cells.get_mut((area + value) as usize))
                .flatten();
            match cell {
                Some(cell) => {
                    cell.0 += entries.len() as u64;
                    cell.1 += match self.whole {
                        Some(_) => entries.map(length).sum::<f64>(),
                        None => area_values::sum(&c.length_m[entries]),
                    };
                }
                None => {
                    for k in entries {
                        let key = self.key(c.owners[k] as usize, code);
                        part.misses.push((key, length(k)));
                    }
                }
            }
        }
    }

    /// As [`Pass::sum_entries`], choosing the loop by the number of enumerated dimensions.
    fn sum_every(&self, entries: Range<usize>, part: &mut Part) {
        match self.enums {
            [] => self.sum_entries(entries, part, |_| 0),
            [e] => match e.ranks.as_deref() {
                Some(ranks) => self.sum_entries(entries, part, |row| e.of_rank(ranks[row])),
                None => {
                    let b = e.of_rank(RANK_NONE);
                    self.sum_entries(entries, part, |_| b)
                }
            },
            many => self.sum_entries(entries, part, |row| {
                many.iter()
                    .try_fold(0u32, |b, e| e.slot(row).map(|s| b + s))
                    .unwrap_or(OFF)
            }),
        }
    }

    /// The key of an entry off the dense domain: its codes, read from the columns.
    fn key(&self, row: usize, code: u32) -> u128 {
        let mut codes = [NONE; MAX_DIMENSIONS];
        codes[self.at] = code;
        for (i, col) in self.columns.iter().enumerate() {
            if i != self.at {
                codes[i] = match col {
                    Some(col) if !col.is_null(row) => col.value(row) as u32,
                    _ => NONE,
                };
            }
        }
        pack(codes[..self.dimensions].iter().copied())
    }
}

/// The groups, or None when the dimensions are not one run kind plus enumerated properties, or
/// their slots are not dense.
pub(super) fn group(
    g: &Generation,
    data: &TypeData,
    rows: &RoaringBitmap,
    segment: bool,
    dims: &[Dimension],
) -> Option<Vec<Group>> {
    let mut area = None;
    for (i, d) in dims.iter().enumerate() {
        match d {
            Dimension::Enum(_) => {}
            Dimension::Area(kind) if area.is_none() => area = Some((i, *kind)),
            _ => return None,
        }
    }
    let (at, kind) = area?;
    let runs = data.area_runs(g, kind)?;
    let dense = Dense::new(g, Some(data.table.type_id), dims)?;
    let columns = enum_columns(data, dims);
    let whole = &data.index().length_m;
    // every object selected: the entries are read in order (no bitmap to walk), else the
    // selected objects' entries
    let every = rows.len() == data.table.len() as u64;
    let n = if every {
        runs.codes.len() as u32
    } else {
        data.table.len() as u32
    };
    let most = TASKS_PER_THREAD * rayon::current_num_threads().max(1) as u32;
    let mut tasks = (n / MIN_ROWS_PER_TASK).clamp(1, most);
    if dense.size > LARGE_TABLE {
        tasks = tasks.min(2);
    }
    let chunk = n.div_ceil(tasks).max(1);
    let chunks: Vec<u32> = (0..n.div_ceil(chunk)).collect();
    // per enumerated dimension: its ranks and what each rank adds to the dense slot (None: a
    // value off the property's list, whose code is then read from its column)
    let enums: Vec<EnumSlots> = dims
        .iter()
        .enumerate()
        .filter_map(|(i, d)| match d {
            Dimension::Enum(p) => Some(EnumSlots::new(data.enum_ranks(g.catalog, *p), &dense, i)),
            _ => None,
        })
        .collect();
    let area_slot: Vec<u32> = (0..dense.dims[at].dense.len() as u32)
        .map(|code| {
            dense.dims[at]
                .index(code)
                .map_or(OFF, |d| d * dense.strides[at] as u32)
        })
        .collect();
    let pass = Pass {
        enums: &enums,
        area_slot: &area_slot,
        runs: &runs,
        whole: (!segment).then_some(&whole[..]),
        columns: &columns,
        at,
        dimensions: dims.len(),
    };
    // every object, one area and one property: the clustered entries, a group at a time
    let clustered = match (
        every,
        &enums[..],
        dims.iter().find_map(|d| match d {
            Dimension::Enum(p) => Some(*p),
            _ => None,
        }),
    ) {
        (true, [e], Some(p)) if e.ranks.is_some() => data.area_values(g, kind, p).map(|c| (c, e)),
        _ => None,
    };
    if let Some((c, e)) = clustered {
        let entries = c.owners.len() as u32;
        let per = entries.div_ceil(most.max(1)).max(MIN_ROWS_PER_TASK);
        // each task's groups: from the first ending past its first entry
        let bounds: Vec<usize> = (0..entries.div_ceil(per))
            .map(|t| c.groups.partition_point(|gr| gr.2 <= t * per))
            .chain([c.groups.len()])
            .collect();
        let parts: Vec<Part> = bounds
            .par_windows(2)
            .map(|w| {
                let mut part = Part {
                    cells: vec![(0, 0.0); dense.size],
                    misses: Vec::new(),
                };
                pass.sum_clustered(&c, w[0]..w[1], e, &mut part);
                part
            })
            .collect();
        return Some(finish(parts, dense, dims.len()));
    }
    let parts: Vec<Part> = chunks
        .par_iter()
        .map(|&c| {
            let mut part = Part {
                cells: vec![(0, 0.0); dense.size],
                misses: Vec::new(),
            };
            let range = c * chunk..(c * chunk + chunk).min(n);
            if every {
                pass.sum_every(range.start as usize..range.end as usize, &mut part);
            } else {
                pass.sum(rows.range(range), &mut part);
            }
            part
        })
        .collect();
    Some(finish(parts, dense, dims.len()))
}

/// The groups of the tasks' sums `parts` over the dense table `dense`.
fn finish(parts: Vec<Part>, dense: Dense, dimensions: usize) -> Vec<Group> {
    let mut acc = Accumulator::new(Some(dense));
    let mut item = 0u32;
    for part in parts {
        for (slot, (count, length)) in part.cells.into_iter().enumerate() {
            if count > 0 {
                let cell = &mut acc.cells[slot];
                cell.0 += count;
                cell.1 += length;
            }
        }
        for (key, length) in part.misses {
            // each miss is one object in one group: counted once
            item += 1;
            acc.add(key, item, length);
        }
    }
    acc.finish(dimensions)
}
