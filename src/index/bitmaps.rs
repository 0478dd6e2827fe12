//! Roaring bitmaps of object rows (row index within the type's table): per area (kind, number)
//! and per enumerated property value. An object belongs to an area when any of its placements
//! overlaps a road link segment in that area.

use std::collections::HashMap;

use crate::util::FastMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use roaring::RoaringBitmap;

use crate::area::{AreaKind, Areas};
use crate::catalog::{ObjectType, ValueKind};
use crate::snapshot::columns::{ObjectTable, RoadNetwork};

/// Length in meters of the part of a placement `from..=to` that lies on network row `seg`.
pub fn part_length(network: &RoadNetwork, seg: usize, from: f64, to: f64) -> f64 {
    let (rf, rt) = (network.from_pos[seg], network.to_pos[seg]);
    let (a, b) = (from.max(rf), to.min(rt));
    if b <= a || rt <= rf {
        0.0
    } else {
        (b - a) / (rt - rf) * network.length_m[seg]
    }
}

#[derive(Debug, Default, Clone)]
pub struct TypeIndex {
    /// Every row (`0..len`): what an unfiltered selection lends instead of making it.
    pub all: RoaringBitmap,
    /// (area kind, area number or index) -> rows. Contract areas and routes are keyed by their
    /// index in `Areas::contracts` / `Areas::routes`.
    pub areas: FastMap<(AreaKind, u32), RoaringBitmap>,
    /// (property type id, allowed value id) -> rows.
    pub enums: FastMap<(u32, u32), RoaringBitmap>,
    /// Located length of each object (0 for points), meters.
    pub length_m: Vec<f64>,
    /// Sum of `length_m` over the type.
    pub total_length_m: f64,
    /// Per area: the summed length of the objects' parts inside that area (what statistics with
    /// segmentation report for a single area).
    pub area_length_m: FastMap<(AreaKind, u32), f64>,
}

/// The areas an object row lies in, each with the object's length inside it, and its total
/// located length.
fn row_areas(
    table: &ObjectTable,
    row: usize,
    network: &RoadNetwork,
    areas: &Areas,
    keys: &mut Vec<((AreaKind, u32), f64)>,
) -> f64 {
    keys.clear();
    let mut length = 0.0;
    for p in table.placements(row) {
        let (from, to) = (table.loc_from[p], table.loc_to[p]);
        for seg in network.rows_overlapping(table.loc_link[p], from, to) {
            let m = network.municipality[seg];
            let c = network.county[seg];
            let part = part_length(network, seg, from, to);
            length += part;
            keys.push(((AreaKind::Municipality, m as u32), part));
            keys.push(((AreaKind::County, c as u32), part));
            keys.push(((AreaKind::Region, network.region[seg] as u32), part));
            keys.push((
                (
                    AreaKind::RoadDepartment,
                    network.road_department[seg] as u32,
                ),
                part,
            ));
            keys.extend(
                areas
                    .contracts_of(m)
                    .iter()
                    .map(|&i| ((AreaKind::Contract, i), part)),
            );
            keys.extend(
                areas
                    .routes_of(network.road_category[seg], network.road_number[seg], c)
                    .map(|i| ((AreaKind::Route, i), part)),
            );
        }
    }
    // one entry per area, with the object's length inside that area
    keys.sort_unstable_by_key(|k| k.0);
    let mut out = 0;
    let mut i = 0;
    while i < keys.len() {
        let k = keys[i].0;
        let mut sum = 0.0;
        while i < keys.len() && keys[i].0 == k {
            sum += keys[i].1;
            i += 1;
        }
        keys[out] = (k, sum);
        out += 1;
    }
    keys.truncate(out);
    length
}

/// The enum property columns of a table: (property id, column index).
fn enum_columns(table: &ObjectTable, object_type: Option<&ObjectType>) -> Vec<(u32, usize)> {
    let Some(t) = object_type else {
        return Vec::new();
    };
    table
        .properties
        .iter()
        .enumerate()
        .filter(|(_, col)| {
            t.property(col.property_id)
                .is_some_and(|p| p.storage() == ValueKind::Enum)
                && col.values.as_primitive_opt::<Int64Type>().is_some()
        })
        .map(|(i, col)| (col.property_id, i))
        .collect()
}

fn enum_value(table: &ObjectTable, column: usize, row: usize) -> Option<u32> {
    let values = table.properties[column].values.as_primitive::<Int64Type>();
    (!values.is_null(row)).then(|| values.value(row) as u32)
}

/// Which rows of a new table differ from the table an index was built for: rows
/// `replaced` hold other values at the same row number, rows from `appended_from` are new.
#[derive(Debug, Clone, Default)]
pub struct RowChanges {
    pub replaced: Vec<usize>,
    pub appended_from: usize,
}

impl TypeIndex {
    pub fn build(
        table: &ObjectTable,
        object_type: Option<&ObjectType>,
        network: &RoadNetwork,
        areas: &Areas,
    ) -> TypeIndex {
        let mut index = TypeIndex::default();
        let mut keys: Vec<((AreaKind, u32), f64)> = Vec::with_capacity(16);
        index.length_m = Vec::with_capacity(table.len());
        for row in 0..table.len() {
            let length = row_areas(table, row, network, areas, &mut keys);
            for &(k, part) in &keys {
                index.areas.entry(k).or_default().insert(row as u32);
                *index.area_length_m.entry(k).or_default() += part;
            }
            index.length_m.push(length);
            index.total_length_m += length;
        }
        index.all.insert_range(0..table.len() as u32);
        for (pid, column) in enum_columns(table, object_type) {
            let values = table.properties[column].values.as_primitive::<Int64Type>();
            let mut by_value: HashMap<u32, RoaringBitmap> = HashMap::new();
            for (row, v) in values.iter().enumerate() {
                if let Some(v) = v {
                    by_value.entry(v as u32).or_default().insert(row as u32);
                }
            }
            for (v, bm) in by_value {
                index.enums.insert((pid, v), bm);
            }
        }
        index
    }

    /// The index of `new`, derived from this index of `old` when `new` keeps every row of `old`
    /// at its row number except `changes.replaced`, and appends rows from
    /// `changes.appended_from`. Costs a copy of the bitmaps plus work per changed row, instead
    /// of a pass over the whole table.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &self,
        old: &ObjectTable,
        new: &ObjectTable,
        changes: &RowChanges,
        object_type: Option<&ObjectType>,
        network: &RoadNetwork,
        areas: &Areas,
    ) -> TypeIndex {
        let mut index = self.clone();
        let mut keys: Vec<((AreaKind, u32), f64)> = Vec::with_capacity(16);
        let old_enums = enum_columns(old, object_type);
        let new_enums = enum_columns(new, object_type);
        for &row in &changes.replaced {
            let length = row_areas(old, row, network, areas, &mut keys);
            for &(k, part) in &keys {
                if let Some(bm) = index.areas.get_mut(&k) {
                    bm.remove(row as u32);
                }
                if let Some(l) = index.area_length_m.get_mut(&k) {
                    *l -= part;
                }
            }
            index.total_length_m -= length;
            for &(pid, column) in &old_enums {
                if let Some(v) = enum_value(old, column, row) {
                    if let Some(bm) = index.enums.get_mut(&(pid, v)) {
                        bm.remove(row as u32);
                    }
                }
            }
        }
        index.length_m.truncate(changes.appended_from);
        let rows = changes
            .replaced
            .iter()
            .copied()
            .chain(changes.appended_from..new.len());
        for row in rows {
            let length = row_areas(new, row, network, areas, &mut keys);
            for &(k, part) in &keys {
                index.areas.entry(k).or_default().insert(row as u32);
                *index.area_length_m.entry(k).or_default() += part;
            }
            if row < changes.appended_from {
                index.length_m[row] = length;
            } else {
                index.length_m.push(length);
            }
            index.total_length_m += length;
            for &(pid, column) in &new_enums {
                if let Some(v) = enum_value(new, column, row) {
                    index.enums.entry((pid, v)).or_default().insert(row as u32);
                }
            }
        }
        index.areas.retain(|_, bm| !bm.is_empty());
        index.enums.retain(|_, bm| !bm.is_empty());
        index.all = RoaringBitmap::new();
        index.all.insert_range(0..new.len() as u32);
        index
    }

    pub fn area(&self, kind: AreaKind, key: u32) -> Option<&RoaringBitmap> {
        self.areas.get(&(kind, key))
    }
}
