//! Read-only views of one row of a generation's tables, so the layers above (the API's
//! renderers) read a segment or an object through methods instead of indexing the columns.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::Array;

use super::Generation;
use crate::catalog::ValueKind;
use crate::geo::linref::{point_at, sub_line};
use crate::geo::Coord3;
use crate::index::network::{row_key, RoadKey};
use crate::snapshot::columns::{Days, ObjectTable, PropertyColumn, RoadNetwork, Seconds, OPEN_END};

/// One road link segment row (a link, or the part of a link with one road reference).
#[derive(Clone, Copy)]
pub struct SegmentRow<'a> {
    n: &'a RoadNetwork,
    row: usize,
}

/// Data-capture quality of a segment's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quality {
    pub method: u8,
    pub accuracy: u16,
    pub height_accuracy: u16,
    pub tolerance: u16,
    pub visibility: u8,
    pub capture_date: Days,
}

impl<'a> SegmentRow<'a> {
    pub fn row(&self) -> usize {
        self.row
    }
    pub fn link_id(&self) -> crate::ids::LinkId {
        crate::ids::LinkId(self.n.link_id[self.row])
    }
    /// Link position where the row starts (0..=1).
    pub fn from_pos(&self) -> f64 {
        self.n.from_pos[self.row]
    }
    /// Link position where the row ends (0..=1).
    pub fn to_pos(&self) -> f64 {
        self.n.to_pos[self.row]
    }
    pub fn start_node(&self) -> u64 {
        self.n.start_node[self.row]
    }
    pub fn end_node(&self) -> u64 {
        self.n.end_node[self.row]
    }
    pub fn geometry(&self) -> &'a [Coord3] {
        self.n.geometry(self.row)
    }
    /// The point at link position `position` (within the row).
    pub fn point_at(&self, position: f64) -> Coord3 {
        point_at(self.geometry(), self.fraction(position))
    }
    /// The row's geometry between link positions `from` and `to`.
    pub fn sub_line(&self, from: f64, to: f64) -> Vec<Coord3> {
        sub_line(self.geometry(), self.fraction(from), self.fraction(to))
    }
    /// Link position -> fraction of the row's geometry.
    fn fraction(&self, position: f64) -> f64 {
        let span = (self.to_pos() - self.from_pos()).max(1e-12);
        (position - self.from_pos()) / span
    }
    pub fn length_m(&self) -> f64 {
        self.n.length_m[self.row]
    }
    pub fn municipality(&self) -> u16 {
        self.n.municipality[self.row]
    }
    pub fn county(&self) -> u8 {
        self.n.county[self.row]
    }
    pub fn region(&self) -> u8 {
        self.n.region[self.row]
    }
    pub fn road_department(&self) -> u8 {
        self.n.road_department[self.row]
    }
    pub fn road_category(&self) -> u8 {
        self.n.road_category[self.row]
    }
    pub fn road_number(&self) -> u32 {
        self.n.road_number[self.row]
    }
    /// The road part (hp) the row lies on.
    pub fn road_key(&self) -> RoadKey {
        row_key(self.n, self.row)
    }
    pub fn from_m(&self) -> u32 {
        self.n.from_m[self.row]
    }
    pub fn to_m(&self) -> u32 {
        self.n.to_m[self.row]
    }
    pub fn lanes(&self) -> &'a str {
        &self.n.lanes[self.row]
    }
    pub fn medium(&self) -> u8 {
        self.n.medium[self.row]
    }
    pub fn theme_code(&self) -> u16 {
        self.n.theme_code[self.row]
    }
    pub fn is_connection(&self) -> bool {
        self.n.is_connection[self.row]
    }
    pub fn topology_level(&self) -> u8 {
        self.n.topology_level[self.row]
    }
    /// The carriageway link's parent link, if any.
    pub fn super_id(&self) -> Option<u64> {
        let s = self.n.super_id[self.row];
        (s != 0).then_some(s)
    }
    pub fn road_type(&self) -> u8 {
        self.n.road_type[self.row]
    }
    pub fn start_date(&self) -> Days {
        self.n.start_date[self.row]
    }
    pub fn quality(&self) -> Quality {
        let (n, r) = (self.n, self.row);
        Quality {
            method: n.q_method[r],
            accuracy: n.q_accuracy[r],
            height_accuracy: n.q_height_accuracy[r],
            tolerance: n.q_tolerance[r],
            visibility: n.q_visibility[r],
            capture_date: n.q_capture_date[r],
        }
    }
}

/// A stored property value of one object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StoredValue<'a> {
    /// An allowed value's id.
    Enum(u32),
    Integer(i64),
    Float(f64),
    Text(&'a str),
}

/// One object row of a type's table.
#[derive(Clone, Copy)]
pub struct ObjectRow<'a> {
    table: &'a ObjectTable,
    row: usize,
}

impl<'a> ObjectRow<'a> {
    pub fn new(table: &'a ObjectTable, row: usize) -> Self {
        ObjectRow { table, row }
    }
    pub fn row(&self) -> usize {
        self.row
    }
    /// The table the row belongs to.
    pub fn table(&self) -> &'a ObjectTable {
        self.table
    }
    pub fn type_id(&self) -> u32 {
        self.table.type_id
    }
    pub fn id(&self) -> u64 {
        self.table.id[self.row]
    }
    pub fn version(&self) -> u32 {
        self.table.version[self.row]
    }
    pub fn start_date(&self) -> Days {
        self.table.start_date[self.row]
    }
    /// None while the version is open.
    pub fn end_date(&self) -> Option<Days> {
        let d = self.table.end_date[self.row];
        (d != OPEN_END).then_some(d)
    }
    pub fn last_modified(&self) -> Seconds {
        self.table.last_modified[self.row]
    }
    /// The object's own geometry (empty when it has none).
    pub fn own_geometry(&self) -> &'a [Coord3] {
        self.table.own_geometry(self.row)
    }
    /// (type, id) of each child.
    pub fn children(&self) -> impl Iterator<Item = (u32, u64)> + 'a {
        let t = self.table;
        t.children(self.row)
            .map(|c| (t.child_type[c], t.child_id[c]))
    }
    /// The value of `property` stored as `kind` (None when the object has none).
    pub fn value(&self, property: u32, kind: ValueKind) -> Option<StoredValue<'a>> {
        self.value_in(self.table.property(property)?, kind)
    }
    /// The value in `column` (one of this object's table's property columns) stored as `kind`.
    pub fn value_in(&self, column: &'a PropertyColumn, kind: ValueKind) -> Option<StoredValue<'a>> {
        let a = &column.values;
        let r = self.row;
        if a.is_null(r) {
            return None;
        }
        Some(match kind {
            ValueKind::Enum => StoredValue::Enum(a.as_primitive::<Int64Type>().value(r) as u32),
            ValueKind::Integer => StoredValue::Integer(a.as_primitive::<Int64Type>().value(r)),
            ValueKind::Float => StoredValue::Float(a.as_primitive::<Float64Type>().value(r)),
            ValueKind::Text | ValueKind::Geometry => {
                StoredValue::Text(a.as_string::<i32>().value(r))
            }
        })
    }
}

impl Generation {
    /// The road link segment at network row `row`.
    pub fn segment(&self, row: usize) -> SegmentRow<'_> {
        SegmentRow {
            n: &self.network,
            row,
        }
    }

    /// The segment rows of link `link_id` (empty when there is no such link).
    pub fn segments_of_link(&self, link_id: u64) -> impl Iterator<Item = SegmentRow<'_>> {
        self.network
            .rows_of_link(link_id)
            .map(move |row| self.segment(row))
    }

    /// Number of segment rows in the network.
    pub fn segment_count(&self) -> usize {
        self.network.len()
    }
}
