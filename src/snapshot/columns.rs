//! Columnar in-memory tables: the road network (one row per exposed road link segment) and one
//! table per road object type. The generator builds them, the Parquet writer stores them, the
//! loader rebuilds them; the engine reads them by row index.

use std::collections::BTreeMap;
use std::ops::Range;

use arrow_array::ArrayRef;

use crate::geo::Coord3;

/// Days since 1970-01-01 (Arrow Date32).
pub type Days = i32;
/// Seconds since 1970-01-01T00:00:00Z.
pub type Seconds = i64;

/// `typeVeg` values, stored as an index into this table.
pub const ROAD_TYPES: [&str; 7] = [
    "Enkel bilveg",
    "Kanalisert veg",
    "Rampe",
    "Rundkjøring",
    "Gang- og sykkelveg",
    "Bilferje",
    "Gatetun",
];

/// `topologinivå_tekst` per level.
pub const TOPOLOGY_LEVELS: [&str; 3] = ["VEGTRASE", "KJOREBANE", "KJOREFELT"];

/// Road link segments. Rows are sorted by (link_id, from_pos); a link may have several rows
/// (segments with different road references), covering `from_pos..to_pos` of the link.
#[derive(Debug, Default, Clone)]
pub struct RoadNetwork {
    pub link_id: Vec<u64>,
    pub from_pos: Vec<f64>,
    pub to_pos: Vec<f64>,
    pub start_node: Vec<u64>,
    pub end_node: Vec<u64>,
    /// Row i's geometry is `coords[geom_offsets[i]..geom_offsets[i+1]]` (UTM 33 + height).
    pub geom_offsets: Vec<u32>,
    pub coords: Vec<Coord3>,
    pub length_m: Vec<f64>,
    pub municipality: Vec<u16>,
    pub county: Vec<u8>,
    pub region: Vec<u8>,
    pub road_department: Vec<u8>,
    /// Road reference: category letter (E R F K P), status letter (V G ...), number, hp, meters.
    pub road_category: Vec<u8>,
    pub road_status: Vec<u8>,
    pub road_number: Vec<u32>,
    pub hp: Vec<u16>,
    pub from_m: Vec<u32>,
    pub to_m: Vec<u32>,
    /// Lane string per row, e.g. "1#2".
    pub lanes: Vec<String>,
    /// Medium letter (T, B, L, U, ...).
    pub medium: Vec<u8>,
    pub theme_code: Vec<u16>,
    pub is_connection: Vec<bool>,
    pub topology_level: Vec<u8>,
    /// 0 = none.
    pub super_id: Vec<u64>,
    /// Index into ROAD_TYPES.
    pub road_type: Vec<u8>,
    pub start_date: Vec<Days>,
    pub q_method: Vec<u8>,
    pub q_accuracy: Vec<u16>,
    pub q_height_accuracy: Vec<u16>,
    pub q_tolerance: Vec<u16>,
    pub q_visibility: Vec<u8>,
    pub q_capture_date: Vec<Days>,
    /// Direct index from link id to rows (derived, built by `build_link_index` when ids are
    /// dense): rows of link `link_base + i` are `link_start[i]..link_start[i + 1]`.
    pub link_base: u64,
    pub link_start: Vec<u32>,
}

impl RoadNetwork {
    /// Build the direct link index when link ids are dense enough (span at most 4 × rows);
    /// otherwise lookups binary-search the sorted link id column.
    pub fn build_link_index(&mut self) {
        self.link_start.clear();
        let (Some(&first), Some(&last)) = (self.link_id.first(), self.link_id.last()) else {
            return;
        };
        let span = (last - first + 1) as usize;
        if span > 4 * self.len().max(1) {
            return;
        }
        self.link_base = first;
        self.link_start = Vec::with_capacity(span + 1);
        let mut row = 0usize;
        for i in 0..=span {
            let id = first + i as u64;
            while row < self.len() && self.link_id[row] < id {
                row += 1;
            }
            self.link_start.push(row as u32);
        }
    }

    pub fn len(&self) -> usize {
        self.link_id.len()
    }
    pub fn is_empty(&self) -> bool {
        self.link_id.is_empty()
    }
    pub fn geometry(&self, row: usize) -> &[Coord3] {
        &self.coords[self.geom_offsets[row] as usize..self.geom_offsets[row + 1] as usize]
    }
    /// Rows of a link id (empty when unknown).
    pub fn rows_of_link(&self, link_id: u64) -> Range<usize> {
        if !self.link_start.is_empty() {
            let i = link_id.wrapping_sub(self.link_base) as usize;
            if i < self.link_start.len() - 1 {
                return self.link_start[i] as usize..self.link_start[i + 1] as usize;
            }
            // outside the indexed span: the insertion point is the start or the end
            let at = if link_id < self.link_base {
                0
            } else {
                self.len()
            };
            return at..at;
        }
        let start = self.link_id.partition_point(|&l| l < link_id);
        let end = self.link_id.partition_point(|&l| l <= link_id);
        start..end
    }
    /// The first row ordered after (link id, start position) — where a cursor resumes.
    pub fn first_row_after(&self, link_id: u64, from_pos: f64) -> usize {
        let rows = self.rows_of_link(link_id);
        let within = rows.clone().find(|&r| self.from_pos[r] > from_pos);
        within.unwrap_or(rows.end)
    }

    /// Rows of links one row covers end to end (0..1) that are not connection links: any
    /// position on them is a valid placement (the write tests and benchmarks place objects
    /// there).
    pub fn plain_link_rows(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len())
            .filter(|&r| !self.is_connection[r] && self.from_pos[r] == 0.0 && self.to_pos[r] == 1.0)
    }

    /// Rows of a link overlapping the position range `from..=to`.
    pub fn rows_overlapping(
        &self,
        link_id: u64,
        from: f64,
        to: f64,
    ) -> impl Iterator<Item = usize> + '_ {
        self.rows_of_link(link_id)
            .filter(move |&r| self.from_pos[r] <= to && self.to_pos[r] >= from)
    }
    /// Checks that all columns have one entry per row.
    pub fn check_lengths(&self) -> Result<(), String> {
        let n = self.len();
        let lens = [
            self.from_pos.len(),
            self.to_pos.len(),
            self.start_node.len(),
            self.end_node.len(),
            self.length_m.len(),
            self.municipality.len(),
            self.county.len(),
            self.region.len(),
            self.road_department.len(),
            self.road_category.len(),
            self.road_status.len(),
            self.road_number.len(),
            self.hp.len(),
            self.from_m.len(),
            self.to_m.len(),
            self.lanes.len(),
            self.medium.len(),
            self.theme_code.len(),
            self.is_connection.len(),
            self.topology_level.len(),
            self.super_id.len(),
            self.road_type.len(),
            self.start_date.len(),
            self.q_method.len(),
            self.q_accuracy.len(),
            self.q_height_accuracy.len(),
            self.q_tolerance.len(),
            self.q_visibility.len(),
            self.q_capture_date.len(),
            self.geom_offsets.len().saturating_sub(1),
        ];
        if let Some(bad) = lens.iter().find(|&&l| l != n) {
            return Err(format!("road network column has {bad} rows, expected {n}"));
        }
        Ok(())
    }
}

/// Direction of a placement relative to the link's digitising direction.
pub const DIRECTION_WITH: u8 = 0;
pub const DIRECTION_AGAINST: u8 = 1;

/// One value column of an object table: the property type id and an Arrow array
/// (Int64 for enum ids and integers, Float64, Utf8 for text/dates/times), null = no value.
#[derive(Debug, Clone)]
pub struct PropertyColumn {
    pub property_id: u32,
    pub values: ArrayRef,
}

/// All current objects of one road object type. Rows are sorted by id.
#[derive(Debug, Clone, Default)]
pub struct ObjectTable {
    pub type_id: u32,
    pub id: Vec<u64>,
    pub version: Vec<u32>,
    pub start_date: Vec<Days>,
    /// i32::MIN = open (no end date).
    pub end_date: Vec<Days>,
    pub last_modified: Vec<Seconds>,
    /// Row i's placements are `loc_*[loc_offsets[i]..loc_offsets[i+1]]`.
    pub loc_offsets: Vec<u32>,
    pub loc_link: Vec<u64>,
    pub loc_from: Vec<f64>,
    pub loc_to: Vec<f64>,
    pub loc_direction: Vec<u8>,
    /// Own geometry: row i's coordinates are `geom_coords[geom_offsets[i]..geom_offsets[i+1]]`;
    /// empty = no own geometry; one coordinate = a point, more = a line.
    pub geom_offsets: Vec<u32>,
    pub geom_coords: Vec<Coord3>,
    /// Children (relasjoner.barn): row i's are `child_*[child_offsets[i]..child_offsets[i+1]]`.
    pub child_offsets: Vec<u32>,
    pub child_type: Vec<u32>,
    pub child_id: Vec<u64>,
    pub properties: Vec<PropertyColumn>,
}

pub const OPEN_END: Days = i32::MIN;

impl ObjectTable {
    pub fn new(type_id: u32) -> Self {
        ObjectTable {
            type_id,
            loc_offsets: vec![0],
            geom_offsets: vec![0],
            child_offsets: vec![0],
            ..Default::default()
        }
    }
    pub fn len(&self) -> usize {
        self.id.len()
    }
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }
    pub fn placements(&self, row: usize) -> Range<usize> {
        self.loc_offsets[row] as usize..self.loc_offsets[row + 1] as usize
    }
    pub fn own_geometry(&self, row: usize) -> &[Coord3] {
        &self.geom_coords[self.geom_offsets[row] as usize..self.geom_offsets[row + 1] as usize]
    }
    pub fn children(&self, row: usize) -> Range<usize> {
        self.child_offsets[row] as usize..self.child_offsets[row + 1] as usize
    }
    pub fn row_of(&self, id: u64) -> Option<usize> {
        self.id.binary_search(&id).ok()
    }
    pub fn property(&self, property_id: u32) -> Option<&PropertyColumn> {
        self.properties
            .iter()
            .find(|c| c.property_id == property_id)
    }
    /// Rows `rows` as a table of their own (property arrays are shared, not copied).
    pub fn slice(&self, rows: Range<usize>) -> ObjectTable {
        let (a, b) = (rows.start, rows.end);
        let mut t = ObjectTable::new(self.type_id);
        t.id = self.id[a..b].to_vec();
        t.version = self.version[a..b].to_vec();
        t.start_date = self.start_date[a..b].to_vec();
        t.end_date = self.end_date[a..b].to_vec();
        t.last_modified = self.last_modified[a..b].to_vec();
        let rebase = |offsets: &[u32]| -> Vec<u32> {
            let base = offsets[a];
            offsets[a..=b].iter().map(|o| o - base).collect()
        };
        t.loc_offsets = rebase(&self.loc_offsets);
        let (pa, pb) = (self.loc_offsets[a] as usize, self.loc_offsets[b] as usize);
        t.loc_link = self.loc_link[pa..pb].to_vec();
        t.loc_from = self.loc_from[pa..pb].to_vec();
        t.loc_to = self.loc_to[pa..pb].to_vec();
        t.loc_direction = self.loc_direction[pa..pb].to_vec();
        t.geom_offsets = rebase(&self.geom_offsets);
        let (ga, gb) = (self.geom_offsets[a] as usize, self.geom_offsets[b] as usize);
        t.geom_coords = self.geom_coords[ga..gb].to_vec();
        t.child_offsets = rebase(&self.child_offsets);
        let (ca, cb) = (
            self.child_offsets[a] as usize,
            self.child_offsets[b] as usize,
        );
        t.child_type = self.child_type[ca..cb].to_vec();
        t.child_id = self.child_id[ca..cb].to_vec();
        t.properties = self
            .properties
            .iter()
            .map(|c| PropertyColumn {
                property_id: c.property_id,
                values: c.values.slice(a, b - a),
            })
            .collect();
        t
    }

    /// Tables of one type in id order as one table. A property missing from some parts is
    /// null there.
    pub fn concat(type_id: u32, parts: Vec<ObjectTable>) -> Result<ObjectTable, String> {
        if parts.len() == 1 {
            return Ok(parts.into_iter().next().expect("one part"));
        }
        let mut t = ObjectTable::new(type_id);
        let mut columns: BTreeMap<u32, arrow_schema::DataType> = BTreeMap::new();
        for p in &parts {
            for c in &p.properties {
                columns
                    .entry(c.property_id)
                    .or_insert_with(|| c.values.data_type().clone());
            }
        }
        for p in &parts {
            t.id.extend_from_slice(&p.id);
            t.version.extend_from_slice(&p.version);
            t.start_date.extend_from_slice(&p.start_date);
            t.end_date.extend_from_slice(&p.end_date);
            t.last_modified.extend_from_slice(&p.last_modified);
            let append = |out: &mut Vec<u32>, offsets: &[u32]| {
                let shift = *out.last().expect("offsets start with 0");
                out.extend(offsets[1..].iter().map(|o| o + shift));
            };
            append(&mut t.loc_offsets, &p.loc_offsets);
            t.loc_link.extend_from_slice(&p.loc_link);
            t.loc_from.extend_from_slice(&p.loc_from);
            t.loc_to.extend_from_slice(&p.loc_to);
            t.loc_direction.extend_from_slice(&p.loc_direction);
            append(&mut t.geom_offsets, &p.geom_offsets);
            t.geom_coords.extend_from_slice(&p.geom_coords);
            append(&mut t.child_offsets, &p.child_offsets);
            t.child_type.extend_from_slice(&p.child_type);
            t.child_id.extend_from_slice(&p.child_id);
        }
        for (pid, data_type) in columns {
            let arrays: Vec<ArrayRef> = parts
                .iter()
                .map(|p| match p.property(pid) {
                    Some(c) => c.values.clone(),
                    None => arrow_array::new_null_array(&data_type, p.len()),
                })
                .collect();
            let refs: Vec<&dyn arrow_array::Array> = arrays.iter().map(|a| a.as_ref()).collect();
            let values = arrow_select::concat::concat(&refs)
                .map_err(|e| format!("type {type_id}: property {pid}: {e}"))?;
            t.properties.push(PropertyColumn {
                property_id: pid,
                values,
            });
        }
        t.check_lengths()?;
        Ok(t)
    }

    pub fn check_lengths(&self) -> Result<(), String> {
        let n = self.len();
        for (name, l) in [
            ("version", self.version.len()),
            ("start_date", self.start_date.len()),
            ("end_date", self.end_date.len()),
            ("last_modified", self.last_modified.len()),
            ("loc_offsets", self.loc_offsets.len().saturating_sub(1)),
            ("geom_offsets", self.geom_offsets.len().saturating_sub(1)),
            ("child_offsets", self.child_offsets.len().saturating_sub(1)),
        ] {
            if l != n {
                return Err(format!(
                    "type {}: column {name} has {l} rows, expected {n}",
                    self.type_id
                ));
            }
        }
        for c in &self.properties {
            if c.values.len() != n {
                return Err(format!(
                    "type {}: property {} has {} rows, expected {n}",
                    self.type_id,
                    c.property_id,
                    c.values.len()
                ));
            }
        }
        if !self.id.windows(2).all(|w| w[0] < w[1]) {
            return Err(format!(
                "type {}: ids are not strictly ascending",
                self.type_id
            ));
        }
        Ok(())
    }
}

/// Objects that were deleted (closed), for `endringer?type=slettet`.
#[derive(Debug, Clone, Default)]
pub struct DeletedTable {
    pub type_id: Vec<u32>,
    pub id: Vec<u64>,
    pub version: Vec<u32>,
    pub deleted_at: Vec<Seconds>,
}

/// Everything a generation holds on disk.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub network: RoadNetwork,
    pub objects: BTreeMap<u32, ObjectTable>,
    pub deleted: DeletedTable,
}
