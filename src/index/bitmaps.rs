//! Roaring bitmaps of object rows (row index within the type's table): per area (kind, number)
//! and per enumerated property value. An object belongs to an area when any of its placements
//! overlaps a road link segment in that area.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
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

#[derive(Debug, Default)]
pub struct TypeIndex {
    /// (area kind, area number or index) -> rows. Contract areas and routes are keyed by their
    /// index in `Areas::contracts` / `Areas::routes`.
    pub areas: HashMap<(AreaKind, u32), RoaringBitmap>,
    /// (property type id, allowed value id) -> rows.
    pub enums: HashMap<(u32, u32), RoaringBitmap>,
    /// Located length of each object (0 for points), meters.
    pub length_m: Vec<f64>,
    /// Sum of `length_m` over the type.
    pub total_length_m: f64,
    /// Per area: the summed length of the objects' parts inside that area (what statistics with
    /// segmentation report for a single area).
    pub area_length_m: HashMap<(AreaKind, u32), f64>,
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
            // one bitmap insert per area, with the object's length inside that area
            keys.sort_unstable_by_key(|k| k.0);
            let mut i = 0;
            while i < keys.len() {
                let k = keys[i].0;
                let mut sum = 0.0;
                while i < keys.len() && keys[i].0 == k {
                    sum += keys[i].1;
                    i += 1;
                }
                index.areas.entry(k).or_default().insert(row as u32);
                *index.area_length_m.entry(k).or_default() += sum;
            }
            index.length_m.push(length);
            index.total_length_m += length;
        }
        if let Some(t) = object_type {
            for col in &table.properties {
                let Some(p) = t.property(col.property_id) else {
                    continue;
                };
                if p.storage() != ValueKind::Enum {
                    continue;
                }
                let Some(values) = col.values.as_primitive_opt::<Int64Type>() else {
                    continue;
                };
                let mut by_value: HashMap<u32, RoaringBitmap> = HashMap::new();
                for (row, v) in values.iter().enumerate() {
                    if let Some(v) = v {
                        by_value.entry(v as u32).or_default().insert(row as u32);
                    }
                }
                for (v, bm) in by_value {
                    index.enums.insert((col.property_id, v), bm);
                }
            }
        }
        index
    }

    pub fn area(&self, kind: AreaKind, key: u32) -> Option<&RoaringBitmap> {
        self.areas.get(&(kind, key))
    }
}
