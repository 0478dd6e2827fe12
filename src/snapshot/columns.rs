//! Columnar in-memory tables: the road network (one row per exposed road link segment), one
//! table per road object type and the deleted objects. Each table is declared once here with
//! `columns!` (see `schema.rs`): the declaration gives the struct, the stored Arrow schema
//! (column names, types, codecs), reading and writing record batches, and row slicing and
//! appending. The generator builds them, the Parquet writer stores them, the loader rebuilds
//! them; the engine reads them by row index.

use std::collections::BTreeMap;
use std::ops::Range;

use arrow_array::ArrayRef;

use super::schema::{
    columns, AddedCode, AddedFlag, AddedInt32, AddedLetter, AddedOpenDate, AddedOptionalId,
    AddedOptionalInt32, AddedText, Byte, Date, Flag, Float, Id, Int32, Letter, LineGeometry,
    ObjectGeometry, OpenDate, OptionalId, Text, Timestamp,
};
use crate::geo::Coord3;

use super::schema::SchemaError;
pub use super::schema::{Days, Seconds, OPEN_END};

/// A table whose columns do not fit together, naming the table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    #[error("road network: {0}")]
    Network(SchemaError),
    #[error("type {type_id}: {source}")]
    Objects { type_id: u32, source: SchemaError },
    #[error("type {type_id}: property {property_id} has {rows} rows, expected {expected}")]
    PropertyRows {
        type_id: u32,
        property_id: u32,
        rows: usize,
        expected: usize,
    },
    #[error("type {type_id}: ids (of a history: (id, version) pairs) are not strictly ascending")]
    IdsNotAscending { type_id: u32 },
    /// Arrow could not concatenate a property's parts.
    #[error("type {type_id}: property {property_id}: {reason}")]
    PropertyConcat {
        type_id: u32,
        property_id: u32,
        reason: String,
    },
}

/// A stored value no index may be built from (`check_values`), naming the row.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("network row {row} (link {link}): bad positions {from}..{to}")]
    LinkPositions {
        row: usize,
        link: u64,
        from: f64,
        to: f64,
    },
    #[error("network row {row} (link {link}): bad length {length}")]
    LinkLength { row: usize, link: u64, length: f64 },
    #[error("network row {row} (link {link}), vertex {vertex}: {problem}")]
    LinkVertex {
        row: usize,
        link: u64,
        vertex: usize,
        problem: String,
    },
    #[error("type {type_id} object {id}: bad placement {from}..{to} on link {link}")]
    Placement {
        type_id: u32,
        id: u64,
        from: f64,
        to: f64,
        link: u64,
    },
    #[error("type {type_id} object {id}, own geometry vertex {vertex}: {problem}")]
    OwnVertex {
        type_id: u32,
        id: u64,
        vertex: usize,
        problem: String,
    },
}

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

/// `road_category` (and `road_status`) of a row without a road reference: an imported veglenke
/// piece no 915 Vegsystem covers. Such a row has number, hp and metres 0 and is left out of
/// everything that answers with a road reference (see `index::network::RoadKey::has_road_ref`).
pub const NO_ROAD_REF: u8 = b'-';

/// `topologinivå_tekst` per level.
pub const TOPOLOGY_LEVELS: [&str; 3] = ["VEGTRASE", "KJOREBANE", "KJOREFELT"];

/// `detaljnivå` values (Uberiket's `Detaljniva`, in its order), stored as an index into this
/// table; the v4 short names (`detaljniva=VT,KB,KF,VTKB`) in [`DETAIL_LEVEL_SHORT`].
pub const DETAIL_LEVELS: [&str; 4] = [
    "VEGTRASE",
    "KJOREBANE",
    "KJOREFELT",
    "VEGTRASE_OG_KJOREBANE",
];
/// The v4 short name of each of [`DETAIL_LEVELS`].
pub const DETAIL_LEVEL_SHORT: [&str; 4] = ["VT", "KB", "KF", "VTKB"];
pub const DETAIL_VT: u8 = 0;
pub const DETAIL_KB: u8 = 1;
pub const DETAIL_KF: u8 = 2;
pub const DETAIL_VTKB: u8 = 3;
/// `detail_level` of a row read from a file written before the column existed: derived from
/// `topology_level` by [`RoadNetwork::derive_absent`].
pub const DETAIL_ABSENT: u8 = u8::MAX;

/// `adskilte løp` values (916 Strekning, property 11283; the v4 names), stored as an index into
/// this table: not part of separate carriageways, the carriageway along the metering
/// direction, the one against it.
pub const SEPARATE_CARRIAGEWAYS: [&str; 3] = ["Nei", "Med", "Mot"];
pub const SEPARATE_NO: u8 = 0;
pub const SEPARATE_WITH: u8 = 1;
pub const SEPARATE_AGAINST: u8 = 2;

/// `trafikantgruppe` letters: K (kjørende, motor traffic), G (gående og syklende).
pub const TRAFFIC_GROUPS: [u8; 2] = [b'K', b'G'];
/// `traffic_group` of a row read from a file written before the column existed: derived by
/// [`RoadNetwork::derive_absent`].
pub const TRAFFIC_ABSENT: u8 = b'?';
/// `system_category`/`system_phase` of a row read from a file written before the
/// vegsystemreferanse was stored (format 6): derived from the v2 reference by
/// [`RoadNetwork::derive_absent`].
pub const SYSTEM_ABSENT: u8 = b'?';
/// The vegsystemreferanse's numbers and metres of a row read from a file written before
/// format 6 (what `AddedInt32` reads for an absent column): derived by
/// [`RoadNetwork::derive_absent`].
pub const SECTION_ABSENT: u16 = u16::MAX;
pub const METRE_ABSENT: u32 = u32::MAX;

/// The vegfase (V, A, P, F) of a v2 road status: V, A, P and F are the phases themselves
/// (the importer stores 915's vegfase as the status), G (gang-/sykkelveg, v2's status for fase
/// V on a foot and cycle way) and any other v2 status are V; `NO_ROAD_REF` stays.
pub fn phase_of_status(status: u8) -> u8 {
    match status {
        b'V' | b'A' | b'P' | b'F' | NO_ROAD_REF => status,
        _ => b'V',
    }
}

/// Index of "Gang- og sykkelveg" in [`ROAD_TYPES`].
pub const ROAD_TYPE_FOOT_AND_CYCLE: u8 = 4;

columns! {
    /// Road link segments. Rows are sorted by (link_id, from_pos); a link may have several rows
    /// (segments with different road references), covering `from_pos..to_pos` of the link.
    #[derive(Debug, Default, Clone)]
    pub struct RoadNetwork {
        columns {
            pub link_id: u64 = "link_id" Id,
            pub from_pos: f64 = "from_pos" Float,
            pub to_pos: f64 = "to_pos" Float,
            pub start_node: u64 = "start_node" Id,
            pub end_node: u64 = "end_node" Id,
            pub length_m: f64 = "length_m" Float,
            pub municipality: u16 = "municipality" Int32<u16>,
            pub county: u8 = "county" Int32<u8>,
            pub region: u8 = "region" Int32<u8>,
            pub road_department: u8 = "road_department" Int32<u8>,
            /// Road reference: category letter (E R F K P), status letter (V G ...), number, hp,
            /// meters; category and status `NO_ROAD_REF` (the rest 0) = none.
            pub road_category: u8 = "road_category" Letter,
            pub road_status: u8 = "road_status" Letter,
            pub road_number: u32 = "road_number" Int32<u32>,
            pub hp: u16 = "hp" Int32<u16>,
            pub from_m: u32 = "from_m" Int32<u32>,
            pub to_m: u32 = "to_m" Int32<u32>,
            /// Lane string per row, e.g. "1#2".
            pub lanes: String = "lanes" Text,
            /// Medium letter (T, B, L, U, ...).
            pub medium: u8 = "medium" Letter,
            pub theme_code: u16 = "theme_code" Int32<u16>,
            pub is_connection: bool = "is_connection" Flag,
            pub topology_level: u8 = "topology_level" Int32<u8>,
            /// 0 = none.
            pub super_id: u64 = "super_id" OptionalId,
            /// Index into ROAD_TYPES.
            pub road_type: u8 = "road_type" Int32<u8>,
            pub start_date: Days = "start_date" Date,
            /// Exclusive; OPEN_END = open (every row of the current network; a closed row
            /// is kept in the network's history). Absent from files written before history
            /// was kept.
            pub end_date: Days = "end_date" AddedOpenDate,
            pub q_method: u8 = "q_method" Int32<u8>,
            pub q_accuracy: u16 = "q_accuracy" Int32<u16>,
            pub q_height_accuracy: u16 = "q_height_accuracy" Int32<u16>,
            pub q_tolerance: u16 = "q_tolerance" Int32<u16>,
            pub q_visibility: u8 = "q_visibility" Int32<u8>,
            pub q_capture_date: Days = "q_capture_date" Date,
            /// `detaljnivå`: index into DETAIL_LEVELS. Absent from files written before
            /// format 5: derived from `topology_level` (`derive_absent`).
            pub detail_level: u8 = "detail_level" AddedCode<DETAIL_ABSENT>,
            /// `trafikantgruppe`: K or G. Absent from files before format 5: G on a row of
            /// road status G or typeVeg "Gang- og sykkelveg", else K (`derive_absent`).
            pub traffic_group: u8 = "traffic_group" AddedLetter<TRAFFIC_ABSENT>,
            /// `sideanlegg`: the row is part of a side facility (rest area, parking). Absent
            /// from files before format 5: false.
            pub side_facility: bool = "side_facility" AddedFlag,
            /// `adskilte løp`: index into SEPARATE_CARRIAGEWAYS. Absent from files before
            /// format 5: 0 (Nei).
            pub separate_carriageways: u8 = "separate_carriageways" AddedCode<SEPARATE_NO>,
            /// vegsystemreferanse (format 6): vegkategori (E R F K P S), vegfase (V A P F),
            /// vegnummer, strekning, delstrekning, the metres at `from_pos` and `to_pos`
            /// (`section_from_m <= section_to_m`), whether the link runs against the metering
            /// (retning MOT) and whether the row is an arm. Category and phase `NO_ROAD_REF` (the
            /// rest 0) = none. Absent from files before format 6: derived from the v2 reference
            /// (`derive_absent`: category, number and metres the same, phase from the status,
            /// strekning hp / 100, delstrekning hp % 100, retning MED, no arm).
            pub system_category: u8 = "system_category" AddedLetter<SYSTEM_ABSENT>,
            pub system_phase: u8 = "system_phase" AddedLetter<SYSTEM_ABSENT>,
            pub system_number: u32 = "system_number" AddedInt32<u32>,
            pub section: u16 = "section" AddedInt32<u16>,
            pub subsection: u16 = "subsection" AddedInt32<u16>,
            pub section_from_m: u32 = "section_from_m" AddedInt32<u32>,
            pub section_to_m: u32 = "section_to_m" AddedInt32<u32>,
            pub section_against: bool = "section_against" AddedFlag,
            pub arm: bool = "arm" AddedFlag,
            /// The road system objects the vegsystemreferanse comes from (format 7): the 915
            /// Vegsystem's id and version and the 916 Strekning's (what the successors give as
            /// `vegsystem.id`/`versjon` and `strekning.id`/`versjon`); 0 = none (no such
            /// object: no 916 covers the piece, or the file was written before format 7).
            pub system_id: u64 = "system_id" AddedOptionalId,
            pub system_version: u32 = "system_version" AddedOptionalInt32<u32>,
            pub section_id: u64 = "section_id" AddedOptionalId,
            pub section_version: u32 = "section_version" AddedOptionalInt32<u32>,
        }
        lists {}
        geometry {
            /// Row i's geometry is `coords[geom_offsets[i]..geom_offsets[i+1]]` (UTM 33 + height).
            "geometry" => pub geom_offsets, pub coords: LineGeometry
        }
        extra {
            /// Direct index from link id to rows (derived, built by `build_link_index` when ids
            /// are dense): rows of link `link_base + i` are `link_start[i]..link_start[i + 1]`.
            pub link_base: u64,
            pub link_start: Vec<u32>,
        }
    }
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

    /// Fill the attributes a file written before format 5 lacks (read as markers): the
    /// detail level from the topology level (0 = VEGTRASE_OG_KJOREBANE, 1 = KJOREBANE,
    /// 2 = KJOREFELT), the traffic group G on a row of road status G or typeVeg "Gang- og
    /// sykkelveg", else K.
    pub fn derive_absent(&mut self) {
        for r in 0..self.len() {
            if self.detail_level[r] == DETAIL_ABSENT {
                self.detail_level[r] = match self.topology_level[r] {
                    0 => DETAIL_VTKB,
                    1 => DETAIL_KB,
                    _ => DETAIL_KF,
                };
            }
            if self.traffic_group[r] == TRAFFIC_ABSENT {
                self.traffic_group[r] =
                    default_traffic_group(self.road_status[r], self.road_type[r]);
            }
            self.derive_absent_system_ref(r);
        }
    }

    /// Row `r`'s vegsystemreferanse columns a file before format 6 lacks, from its v2
    /// reference (see the columns' doc).
    fn derive_absent_system_ref(&mut self, r: usize) {
        if self.system_category[r] == SYSTEM_ABSENT {
            self.system_category[r] = self.road_category[r];
        }
        if self.system_phase[r] == SYSTEM_ABSENT {
            self.system_phase[r] = phase_of_status(self.road_status[r]);
        }
        if self.system_number[r] == METRE_ABSENT {
            self.system_number[r] = self.road_number[r];
        }
        if self.section[r] == SECTION_ABSENT {
            self.section[r] = self.hp[r] / 100;
        }
        if self.subsection[r] == SECTION_ABSENT {
            self.subsection[r] = self.hp[r] % 100;
        }
        if self.section_from_m[r] == METRE_ABSENT {
            self.section_from_m[r] = self.from_m[r];
        }
        if self.section_to_m[r] == METRE_ABSENT {
            self.section_to_m[r] = self.to_m[r];
        }
    }

    /// Push row `r`'s vegsystemreferanse as the v2 reference gives it (what
    /// [`derive_absent`](Self::derive_absent) makes; the generator then numbers strekning and
    /// delstrekning its own way), without 915/916 ids.
    pub fn push_system_ref_from_v2(&mut self) {
        let r = self.system_category.len();
        self.system_category.push(SYSTEM_ABSENT);
        self.system_phase.push(SYSTEM_ABSENT);
        self.system_number.push(METRE_ABSENT);
        self.section.push(SECTION_ABSENT);
        self.subsection.push(SECTION_ABSENT);
        self.section_from_m.push(METRE_ABSENT);
        self.section_to_m.push(METRE_ABSENT);
        self.section_against.push(false);
        self.arm.push(false);
        self.push_system_objects((0, 0), (0, 0));
        self.derive_absent_system_ref(r);
    }

    /// Push a row's 915 Vegsystem and 916 Strekning (id, version); (0, 0) = none.
    pub fn push_system_objects(&mut self, system: (u64, u32), section: (u64, u32)) {
        self.system_id.push(system.0);
        self.system_version.push(system.1);
        self.section_id.push(section.0);
        self.section_version.push(section.1);
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
    pub fn check_lengths(&self) -> Result<(), TableError> {
        self.check_stored_lengths().map_err(TableError::Network)
    }

    /// Checks that every value the indexes are built from is sane: each coordinate finite and
    /// inside the storage extent (`geo::extent`), positions within `0..=1` and in order,
    /// lengths finite and non-negative. The first problem, naming the row and its link.
    /// Call after [`check_lengths`](Self::check_lengths).
    pub fn check_values(&self) -> Result<(), ValueError> {
        use crate::geo::extent;
        for row in 0..self.len() {
            let link = self.link_id[row];
            let (from, to) = (self.from_pos[row], self.to_pos[row]);
            if !extent::position_ok(from) || !extent::position_ok(to) || from > to {
                return Err(ValueError::LinkPositions {
                    row,
                    link,
                    from,
                    to,
                });
            }
            if !extent::length_ok(self.length_m[row]) {
                return Err(ValueError::LinkLength {
                    row,
                    link,
                    length: self.length_m[row],
                });
            }
            if let Some((vertex, c)) = extent::first_bad(self.geometry(row)) {
                return Err(ValueError::LinkVertex {
                    row,
                    link,
                    vertex,
                    problem: extent::describe(&c),
                });
            }
        }
        Ok(())
    }
}

/// The traffic group of a row whose source does not give one: G (gående og syklende) on a
/// road of status G or typeVeg "Gang- og sykkelveg", else K.
pub fn default_traffic_group(road_status: u8, road_type: u8) -> u8 {
    if road_status == b'G' || road_type == ROAD_TYPE_FOOT_AND_CYCLE {
        b'G'
    } else {
        b'K'
    }
}

/// Direction of a placement relative to the link's digitising direction.
pub const DIRECTION_WITH: u8 = 0;
pub const DIRECTION_AGAINST: u8 = 1;

/// What separates lane codes in a placement's stored lanes (`loc_lanes`), as in v2's `felt`
/// ("1#2").
pub const LANE_SEPARATOR: char = '#';

/// A placement's lanes as stored: the codes joined by [`LANE_SEPARATOR`], in the order given.
pub fn join_lanes<S: AsRef<str>>(codes: &[S]) -> Box<str> {
    let mut out = String::new();
    for c in codes {
        if !out.is_empty() {
            out.push(LANE_SEPARATOR);
        }
        out.push_str(c.as_ref());
    }
    out.into()
}

/// The lane codes of a placement's stored lanes (none for "").
pub fn lane_codes(lanes: &str) -> impl Iterator<Item = &str> {
    lanes.split(LANE_SEPARATOR).filter(|c| !c.is_empty())
}

/// One value column of an object table: the property type id and an Arrow array
/// (Int64 for enum ids and integers, Float64, Utf8 for text/dates/times), null = no value.
#[derive(Debug, Clone)]
pub struct PropertyColumn {
    pub property_id: u32,
    pub values: ArrayRef,
}

columns! {
    /// All current objects of one road object type. Rows are sorted by id.
    #[derive(Debug, Clone, Default)]
    pub struct ObjectTable {
        columns {
            pub id: u64 = "id" Id,
            pub version: u32 = "version" Int32<u32>,
            pub start_date: Days = "start_date" Date,
            /// OPEN_END (i32::MIN) = open (no end date).
            pub end_date: Days = "end_date" OpenDate,
            pub last_modified: Seconds = "last_modified" Timestamp,
        }
        lists {
            /// Row i's placements are `loc_*[loc_offsets[i]..loc_offsets[i+1]]`.
            "placements" => pub loc_offsets {
                pub loc_link: u64 = "link_id" Id,
                pub loc_from: f64 = "from_pos" Float,
                pub loc_to: f64 = "to_pos" Float,
                pub loc_direction: u8 = "direction" Byte,
                /// The lanes the placement is on, as v2's `felt` writes them: lane codes
                /// joined by `#` ("1#2"); "" = not on particular lanes (null in the file; the
                /// child is absent from files written before lanes were kept).
                pub loc_lanes: Box<str> = "lanes" AddedText,
            }
            /// Children (relasjoner.barn): row i's are `child_*[child_offsets[i]..child_offsets[i+1]]`.
            "children" => pub child_offsets {
                pub child_type: u32 = "type_id" Int32<u32>,
                pub child_id: u64 = "id" Id,
            }
        }
        geometry {
            /// Own geometry: row i's coordinates are `geom_coords[geom_offsets[i]..geom_offsets[i+1]]`;
            /// empty = no own geometry; one coordinate = a point, more = a line (or a surface,
            /// see `geo::surface`).
            "geometry" => pub geom_offsets, pub geom_coords: ObjectGeometry
        }
        extra {
            /// Not stored in the file (the manifest entry and file name carry it).
            pub type_id: u32,
            /// Property columns, stored after the declared ones as `p<property id>`.
            pub properties: Vec<PropertyColumn>,
        }
    }
}

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
        let mut t = ObjectTable::new(self.type_id);
        t.append_rows(self, rows.clone());
        t.properties = self
            .properties
            .iter()
            .map(|c| PropertyColumn {
                property_id: c.property_id,
                values: c.values.slice(rows.start, rows.len()),
            })
            .collect();
        t
    }

    /// The rows `order` (row numbers, each at most once) as a table of their own, in that
    /// order.
    pub fn take(&self, order: &[usize]) -> Result<ObjectTable, TableError> {
        let mut t = ObjectTable::new(self.type_id);
        t.append_taken(self, order);
        let idx = arrow_array::UInt32Array::from_iter_values(order.iter().map(|&r| r as u32));
        for c in &self.properties {
            let values = arrow_select::take::take(c.values.as_ref(), &idx, None).map_err(|e| {
                TableError::PropertyConcat {
                    type_id: self.type_id,
                    property_id: c.property_id,
                    reason: e.to_string(),
                }
            })?;
            t.properties.push(PropertyColumn {
                property_id: c.property_id,
                values,
            });
        }
        Ok(t)
    }

    /// Tables of one type in id order as one table. A property missing from some parts is
    /// null there.
    pub fn concat(type_id: u32, parts: Vec<ObjectTable>) -> Result<ObjectTable, TableError> {
        if parts.len() == 1 {
            return Ok(parts.into_iter().next().expect("one part"));
        }
        let t = Self::concat_any_order(type_id, parts)?;
        t.check_ascending()?;
        Ok(t)
    }

    /// [`concat`](Self::concat) of parts whose rows together are in any order (rows of one
    /// type at a day, to be put in id order with [`take`](Self::take); versions of one id):
    /// the lengths are checked, the id order is not.
    pub fn concat_any_order(
        type_id: u32,
        parts: Vec<ObjectTable>,
    ) -> Result<ObjectTable, TableError> {
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
            t.append_rows(p, 0..p.len());
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
            let values =
                arrow_select::concat::concat(&refs).map_err(|e| TableError::PropertyConcat {
                    type_id,
                    property_id: pid,
                    reason: e.to_string(),
                })?;
            t.properties.push(PropertyColumn {
                property_id: pid,
                values,
            });
        }
        t.check_row_lengths()?;
        Ok(t)
    }

    /// Checks that all columns have one entry per row and ids are strictly ascending (a
    /// table of current objects: one row per id).
    pub fn check_lengths(&self) -> Result<(), TableError> {
        self.check_row_lengths()?;
        self.check_ascending()
    }

    /// Checks a history table (closed versions): all columns have one entry per row and rows
    /// are in strictly ascending (id, version) order (an id has several versions).
    pub fn check_history_lengths(&self) -> Result<(), TableError> {
        self.check_row_lengths()?;
        let key = |r: usize| (self.id[r], self.version[r]);
        if !(1..self.len()).all(|r| key(r - 1) < key(r)) {
            return Err(TableError::IdsNotAscending {
                type_id: self.type_id,
            });
        }
        Ok(())
    }

    /// Every column as long as the table.
    fn check_row_lengths(&self) -> Result<(), TableError> {
        let n = self.len();
        self.check_stored_lengths()
            .map_err(|source| TableError::Objects {
                type_id: self.type_id,
                source,
            })?;
        for c in &self.properties {
            if c.values.len() != n {
                return Err(TableError::PropertyRows {
                    type_id: self.type_id,
                    property_id: c.property_id,
                    rows: c.values.len(),
                    expected: n,
                });
            }
        }
        Ok(())
    }

    /// Ids strictly ascending.
    fn check_ascending(&self) -> Result<(), TableError> {
        if !self.id.windows(2).all(|w| w[0] < w[1]) {
            return Err(TableError::IdsNotAscending {
                type_id: self.type_id,
            });
        }
        Ok(())
    }

    /// Checks that every placement's positions lie within `0..=1` (from ≤ to) and every vertex
    /// of an own geometry is finite and inside the storage extent (`geo::extent`). The first
    /// problem, naming the object. Call after [`check_lengths`](Self::check_lengths).
    pub fn check_values(&self) -> Result<(), ValueError> {
        use crate::geo::extent;
        for row in 0..self.len() {
            let (type_id, id) = (self.type_id, self.id[row]);
            for p in self.placements(row) {
                let (from, to) = (self.loc_from[p], self.loc_to[p]);
                if !extent::position_ok(from) || !extent::position_ok(to) || from > to {
                    return Err(ValueError::Placement {
                        type_id,
                        id,
                        from,
                        to,
                        link: self.loc_link[p],
                    });
                }
            }
            if let Some((vertex, c)) = extent::first_bad_own(self.own_geometry(row)) {
                return Err(ValueError::OwnVertex {
                    type_id,
                    id,
                    vertex,
                    problem: extent::describe(&c),
                });
            }
        }
        Ok(())
    }
}

columns! {
    /// Objects that were deleted (closed), for `endringer?type=slettet`.
    #[derive(Debug, Clone, Default)]
    pub struct DeletedTable {
        columns {
            pub type_id: u32 = "type_id" Int32<u32>,
            pub id: u64 = "id" Id,
            pub version: u32 = "version" Int32<u32>,
            pub deleted_at: Seconds = "deleted_at" Timestamp,
        }
        lists {}
        geometry {}
        extra {}
    }
}

impl DeletedTable {
    pub fn len(&self) -> usize {
        self.id.len()
    }
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }
}

/// Everything a generation holds on disk.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub network: RoadNetwork,
    pub objects: BTreeMap<u32, ObjectTable>,
    pub deleted: DeletedTable,
}

#[cfg(test)]
mod tests;
