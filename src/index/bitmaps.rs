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

#[derive(Debug, Default)]
pub struct TypeIndex {
    /// (area kind, area number or index) -> rows. Contract areas and routes are keyed by their
    /// index in `Areas::contracts` / `Areas::routes`.
    pub areas: HashMap<(AreaKind, u32), RoaringBitmap>,
    /// (property type id, allowed value id) -> rows.
    pub enums: HashMap<(u32, u32), RoaringBitmap>,
}

impl TypeIndex {
    pub fn build(
        table: &ObjectTable,
        object_type: Option<&ObjectType>,
        network: &RoadNetwork,
        areas: &Areas,
    ) -> TypeIndex {
        let mut index = TypeIndex::default();
        let mut keys: Vec<(AreaKind, u32)> = Vec::with_capacity(16);
        for row in 0..table.len() {
            keys.clear();
            for p in table.placements(row) {
                for seg in
                    network.rows_overlapping(table.loc_link[p], table.loc_from[p], table.loc_to[p])
                {
                    let m = network.municipality[seg];
                    let c = network.county[seg];
                    keys.push((AreaKind::Municipality, m as u32));
                    keys.push((AreaKind::County, c as u32));
                    keys.push((AreaKind::Region, network.region[seg] as u32));
                    keys.push((
                        AreaKind::RoadDepartment,
                        network.road_department[seg] as u32,
                    ));
                    keys.extend(
                        areas
                            .contracts_of(m)
                            .iter()
                            .map(|&i| (AreaKind::Contract, i)),
                    );
                    keys.extend(
                        areas
                            .routes_of(network.road_category[seg], network.road_number[seg], c)
                            .map(|i| (AreaKind::Route, i)),
                    );
                }
            }
            keys.sort_unstable();
            keys.dedup();
            for k in &keys {
                index.areas.entry(*k).or_default().insert(row as u32);
            }
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
