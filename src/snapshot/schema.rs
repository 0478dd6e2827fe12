//! How the columnar tables are stored: the `columns!` declaration that drives each table's
//! struct, Arrow schema, record-batch conversion (read by column name, struct children by
//! name) and row slicing/appending, plus the per-kind codecs it uses. A table is declared once
//! (in `columns.rs`); Parquet read/write, slice/concat and the writer's merge all go through
//! what the declaration generates.
//!
//! Stored form per codec (the on-disk format, see ARCHITECTURE.md "Storage"): integers as
//! Int64/Int32, letters and text as Utf8, flags as Boolean, dates as Date32, times as
//! Timestamp(s, UTC), a ragged group as `List<Struct<..>>` with a non-null `item`, geometry as
//! ISO WKB (GeoParquet 1.1).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, StructArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};

use crate::geo::{wkb, Coord3};

/// Why a table's stored columns do not fit its declaration (reading, writing or checking).
/// Callers add the table (see `columns::TableError`) and the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("missing column {name}")]
    MissingColumn { name: String },
    #[error("column {name} has the wrong type")]
    WrongType { name: String },
    #[error("{list}.{field} has the wrong type")]
    WrongItemType { list: String, field: String },
    #[error("{name} is not a list")]
    NotList { name: String },
    #[error("{name} items are not structs")]
    ItemsNotStructs { name: String },
    #[error("{list} items have no field {field}")]
    MissingField { list: String, field: String },
    #[error("geometry is not binary")]
    GeometryNotBinary,
    #[error("bad WKB geometry")]
    BadWkb,
    /// Arrow refused to build an array (`what`: "struct array", "list array").
    #[error("{what}: {reason}")]
    Arrow { what: &'static str, reason: String },
    #[error("column {name} has {rows} rows, expected {expected}")]
    RowCount {
        name: String,
        rows: usize,
        expected: usize,
    },
    #[error("{group}.{field} has {items} items, expected {expected}")]
    ItemCount {
        group: String,
        field: String,
        items: usize,
        expected: usize,
    },
    #[error("{group} offsets decrease")]
    OffsetsDecrease { group: String },
    #[error("unsupported property column type {data_type}")]
    UnsupportedPropertyType { data_type: String },
    #[error("{name} is not boolean")]
    NotBoolean { name: String },
    /// Arrow refused an operation on a batch (its own message).
    #[error("{reason}")]
    ArrowOp { reason: String },
}

/// Days since 1970-01-01 (Arrow Date32).
pub type Days = i32;
/// Seconds since 1970-01-01T00:00:00Z.
pub type Seconds = i64;
/// The end date of an object valid until further notice (stored as null).
pub const OPEN_END: Days = i32::MIN;

mod codecs;
pub use codecs::*;

/// How a table's own geometry (one run of coordinates per row) is stored as WKB.
pub trait GeometryCodec {
    /// GeoParquet `geometry_types` declared when no row has a geometry.
    const DEFAULT_KINDS: &'static [&'static str];
    /// The GeoParquet geometry type and WKB of one row; None = null.
    fn encode(coords: &[Coord3]) -> Option<(&'static str, Vec<u8>)>;
}

/// Every row is a line (the road network): "LineString Z".
pub struct LineGeometry;
impl GeometryCodec for LineGeometry {
    const DEFAULT_KINDS: &'static [&'static str] = &["LineString Z"];
    fn encode(coords: &[Coord3]) -> Option<(&'static str, Vec<u8>)> {
        Some(("LineString Z", wkb::linestring_z(coords)))
    }
}

/// An object's own geometry: none (null), a point, a line or a surface (MultiPolygon).
pub struct ObjectGeometry;
impl GeometryCodec for ObjectGeometry {
    const DEFAULT_KINDS: &'static [&'static str] = &["Point Z"];
    fn encode(coords: &[Coord3]) -> Option<(&'static str, Vec<u8>)> {
        match coords {
            [] => None,
            surface if crate::geo::surface::is_surface(surface) => {
                Some(("MultiPolygon", crate::geo::surface::to_wkb(surface)))
            }
            [p] => Some(("Point Z", wkb::point_z(p))),
            line => Some(("LineString Z", wkb::linestring_z(line))),
        }
    }
}

/// Encode a geometry column: the WKB array and the geometry types present (first-seen order;
/// the codec's default when there is none).
pub fn encode_geometry<G: GeometryCodec>(
    offsets: &[u32],
    coords: &[Coord3],
) -> (ArrayRef, Vec<&'static str>) {
    let rows = offsets.len().saturating_sub(1);
    let mut b = arrow_array::builder::BinaryBuilder::with_capacity(rows, coords.len() * 24);
    let mut kinds: Vec<&'static str> = Vec::new();
    for w in offsets.windows(2) {
        match G::encode(&coords[w[0] as usize..w[1] as usize]) {
            Some((kind, bytes)) => {
                b.append_value(bytes);
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
            None => b.append_null(),
        }
    }
    if kinds.is_empty() {
        kinds = G::DEFAULT_KINDS.to_vec();
    }
    (Arc::new(b.finish()), kinds)
}

/// Decode a WKB column, appending each row's coordinates and end offset.
pub fn decode_geometry(
    array: &dyn Array,
    offsets: &mut Vec<u32>,
    coords: &mut Vec<Coord3>,
) -> Result<(), SchemaError> {
    let a = array
        .as_binary_opt::<i32>()
        .ok_or(SchemaError::GeometryNotBinary)?;
    start_offsets(offsets);
    for g in a.iter() {
        if let Some(bytes) = g {
            wkb::decode_into(bytes, coords).ok_or(SchemaError::BadWkb)?;
        }
        offsets.push(coords.len() as u32);
    }
    Ok(())
}

/// The Arrow type of a ragged group: a list of non-null structs.
pub fn list_type(fields: Fields) -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(fields),
        false,
    )))
}

/// Build a ragged group's list array from its offsets and child arrays.
pub fn encode_list(
    fields: Fields,
    offsets: &[u32],
    children: Vec<ArrayRef>,
) -> Result<ArrayRef, SchemaError> {
    let item = Arc::new(Field::new("item", DataType::Struct(fields.clone()), false));
    let values = StructArray::try_new(fields, children, None).map_err(|e| SchemaError::Arrow {
        what: "struct array",
        reason: e.to_string(),
    })?;
    let mut offsets: Vec<i32> = offsets.iter().map(|&o| o as i32).collect();
    if offsets.is_empty() {
        offsets.push(0);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    let list = ListArray::try_new(item, offsets, Arc::new(values), None).map_err(|e| {
        SchemaError::Arrow {
            what: "list array",
            reason: e.to_string(),
        }
    })?;
    Ok(Arc::new(list))
}

/// A ragged group read back: appends the rows' end offsets (rebased after `items_before`
/// items) and returns the struct items the rows cover, for the children to be read by name.
pub fn decode_list(
    name: &str,
    array: &dyn Array,
    offsets: &mut Vec<u32>,
    items_before: usize,
) -> Result<StructArray, SchemaError> {
    let list = array
        .as_list_opt::<i32>()
        .ok_or_else(|| SchemaError::NotList { name: name.into() })?;
    let values = list
        .values()
        .as_struct_opt()
        .ok_or_else(|| SchemaError::ItemsNotStructs { name: name.into() })?;
    let first = list.offsets()[0];
    let last = list.offsets().last();
    start_offsets(offsets);
    offsets.extend(
        list.offsets()[1..]
            .iter()
            .map(|&o| (items_before + (o - first) as usize) as u32),
    );
    Ok(values.slice(first as usize, (last - first) as usize))
}

/// Append a struct child's values, found by name; a child missing from the file reads as the
/// codec's `decode_absent` says (an error for a required child).
pub fn decode_child<C: Codec>(
    list: &str,
    items: &StructArray,
    name: &str,
    out: &mut Vec<C::Native>,
) -> Result<(), SchemaError> {
    match items.column_by_name(name) {
        Some(a) => C::decode(a.as_ref(), out).ok_or_else(|| SchemaError::WrongItemType {
            list: list.into(),
            field: name.into(),
        }),
        None => C::decode_absent(items.len(), out).ok_or_else(|| SchemaError::MissingField {
            list: list.into(),
            field: name.into(),
        }),
    }
}

/// Offsets of an empty table are `[0]`.
pub fn start_offsets(offsets: &mut Vec<u32>) {
    if offsets.is_empty() {
        offsets.push(0);
    }
}

/// Append the offsets of rows `a..b` of `from` (whose items are appended after what `out`
/// covers).
pub fn append_offsets(out: &mut Vec<u32>, from: &[u32], a: usize, b: usize) {
    start_offsets(out);
    let shift = *out.last().unwrap_or(&0) as i64 - from[a] as i64;
    out.extend(from[a + 1..=b].iter().map(|&o| (o as i64 + shift) as u32));
}

/// The item range rows `a..b` cover.
pub fn item_range(offsets: &[u32], a: usize, b: usize) -> std::ops::Range<usize> {
    offsets[a] as usize..offsets[b] as usize
}

/// Declare a stored table once. Generates the struct (stored columns, then the fields listed
/// under `extra`) and, for the stored columns in file order (flat columns, ragged groups,
/// geometry):
/// - `stored_fields()`: the Arrow fields;
/// - `stored_arrays()`: the columns as Arrow arrays, and the GeoParquet geometry types;
/// - `append_batch(batch)`: append a record batch's rows, columns and struct children found by
///   name (a struct child whose codec allows it may be absent: `Codec::decode_absent`);
/// - `append_rows(other, rows)`: append rows of another table of the kind (slice, concat and
///   the writer's merge are made of it);
/// - `check_stored_lengths()`: every column has one entry per row, every group's items match
///   its offsets.
///
/// Tables with columns beyond the declaration (an object table's properties) handle those in
/// their own code around these functions.
macro_rules! columns {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            columns {
                $( $(#[$cdoc:meta])* pub $col:ident : $cty:ty = $cname:literal $codec:ty ),+ $(,)?
            }
            lists {
                $(
                    $(#[$ldoc:meta])*
                    $lname:literal => pub $loff:ident {
                        $( $(#[$idoc:meta])* pub $item:ident : $ity:ty = $iname:literal $icodec:ty ),+ $(,)?
                    }
                )*
            }
            geometry {
                $( $(#[$gdoc:meta])* $gname:literal => pub $goff:ident, pub $gcoords:ident : $gcodec:ty )?
            }
            extra {
                $( $(#[$xdoc:meta])* pub $x:ident : $xty:ty ),* $(,)?
            }
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$cdoc])* pub $col: Vec<$cty>, )+
            $(
                $(#[$ldoc])*
                pub $loff: Vec<u32>,
                $( $(#[$idoc])* pub $item: Vec<$ity>, )+
            )*
            $(
                $(#[$gdoc])*
                pub $goff: Vec<u32>,
                pub $gcoords: Vec<$crate::geo::Coord3>,
            )?
            $( $(#[$xdoc])* pub $x: $xty, )*
        }

        #[allow(unused_variables, unused_mut, unused_assignments)]
        impl $name {
            /// The stored columns' Arrow fields, in file order.
            pub fn stored_fields() -> Vec<arrow_schema::Field> {
                use $crate::snapshot::schema::Codec as _;
                let mut fields = vec![
                    $( arrow_schema::Field::new($cname, <$codec>::data_type(), <$codec>::NULLABLE), )+
                ];
                $(
                    let items = arrow_schema::Fields::from(vec![
                        $( arrow_schema::Field::new($iname, <$icodec>::data_type(), <$icodec>::NULLABLE), )+
                    ]);
                    fields.push(arrow_schema::Field::new(
                        $lname,
                        $crate::snapshot::schema::list_type(items),
                        false,
                    ));
                )*
                $(
                    fields.push(arrow_schema::Field::new($gname, arrow_schema::DataType::Binary, true));
                )?
                fields
            }

            /// The stored columns as Arrow arrays in file order, and the geometry types present
            /// (for the GeoParquet metadata; empty without a geometry column).
            pub fn stored_arrays(
                &self,
            ) -> Result<
                (Vec<arrow_array::ArrayRef>, Vec<&'static str>),
                $crate::snapshot::schema::SchemaError,
            > {
                use $crate::snapshot::schema::Codec as _;
                self.check_stored_lengths()?;
                let mut arrays: Vec<arrow_array::ArrayRef> = vec![
                    $( <$codec>::encode(&self.$col), )+
                ];
                $(
                    let items = arrow_schema::Fields::from(vec![
                        $( arrow_schema::Field::new($iname, <$icodec>::data_type(), <$icodec>::NULLABLE), )+
                    ]);
                    arrays.push($crate::snapshot::schema::encode_list(
                        items,
                        &self.$loff,
                        vec![ $( <$icodec>::encode(&self.$item), )+ ],
                    )?);
                )*
                let mut kinds: Vec<&'static str> = Vec::new();
                $(
                    let (array, k) = $crate::snapshot::schema::encode_geometry::<$gcodec>(
                        &self.$goff,
                        &self.$gcoords,
                    );
                    arrays.push(array);
                    kinds = k;
                )?
                Ok((arrays, kinds))
            }

            /// Append the rows of a record batch (columns and struct children found by name).
            pub fn append_batch(
                &mut self,
                batch: &arrow_array::RecordBatch,
            ) -> Result<(), $crate::snapshot::schema::SchemaError> {
                use $crate::snapshot::schema::Codec as _;
                let column = |name: &str| {
                    batch
                        .column_by_name(name)
                        .ok_or_else(|| $crate::snapshot::schema::SchemaError::MissingColumn {
                            name: name.into(),
                        })
                };
                $(
                    match batch.column_by_name($cname) {
                        Some(a) => <$codec>::decode(a.as_ref(), &mut self.$col).ok_or_else(|| {
                            $crate::snapshot::schema::SchemaError::WrongType {
                                name: $cname.into(),
                            }
                        })?,
                        // a column added after the first generations: what stands for it
                        None => <$codec>::decode_absent(batch.num_rows(), &mut self.$col)
                            .ok_or_else(|| $crate::snapshot::schema::SchemaError::MissingColumn {
                                name: $cname.into(),
                            })?,
                    }
                )+
                $(
                    let before = self.$loff.last().copied().unwrap_or(0) as usize;
                    let items = $crate::snapshot::schema::decode_list(
                        $lname,
                        column($lname)?.as_ref(),
                        &mut self.$loff,
                        before,
                    )?;
                    $(
                        $crate::snapshot::schema::decode_child::<$icodec>(
                            $lname,
                            &items,
                            $iname,
                            &mut self.$item,
                        )?;
                    )+
                )*
                $(
                    $crate::snapshot::schema::decode_geometry(
                        column($gname)?.as_ref(),
                        &mut self.$goff,
                        &mut self.$gcoords,
                    )?;
                )?
                Ok(())
            }

            /// Append rows `rows` of `other` (its stored columns; `extra` fields untouched).
            pub fn append_rows(&mut self, other: &Self, rows: std::ops::Range<usize>) {
                if rows.is_empty() {
                    return;
                }
                let (a, b) = (rows.start, rows.end);
                $( self.$col.extend_from_slice(&other.$col[a..b]); )+
                $(
                    $crate::snapshot::schema::append_offsets(&mut self.$loff, &other.$loff, a, b);
                    let items = $crate::snapshot::schema::item_range(&other.$loff, a, b);
                    $( self.$item.extend_from_slice(&other.$item[items.clone()]); )+
                )*
                $(
                    $crate::snapshot::schema::append_offsets(&mut self.$goff, &other.$goff, a, b);
                    let items = $crate::snapshot::schema::item_range(&other.$goff, a, b);
                    self.$gcoords.extend_from_slice(&other.$gcoords[items]);
                )?
            }

            /// Append the rows of `other` in the order `order` (row numbers of `other`).
            pub fn append_taken(&mut self, other: &Self, order: &[usize]) {
                $( self.$col.extend(order.iter().map(|&r| other.$col[r].clone())); )+
                $(
                    $crate::snapshot::schema::start_offsets(&mut self.$loff);
                    for &r in order {
                        let items = $crate::snapshot::schema::item_range(&other.$loff, r, r + 1);
                        $( self.$item.extend_from_slice(&other.$item[items.clone()]); )+
                        self.$loff.push(self.$loff.last().copied().unwrap_or(0) + items.len() as u32);
                    }
                )*
                $(
                    $crate::snapshot::schema::start_offsets(&mut self.$goff);
                    for &r in order {
                        let items = $crate::snapshot::schema::item_range(&other.$goff, r, r + 1);
                        self.$gcoords.extend_from_slice(&other.$gcoords[items.clone()]);
                        self.$goff.push(self.$goff.last().copied().unwrap_or(0) + items.len() as u32);
                    }
                )?
            }

            /// Every stored column has one entry per row and every group's items match its
            /// offsets.
            pub fn check_stored_lengths(
                &self,
            ) -> Result<(), $crate::snapshot::schema::SchemaError> {
                let lens = [ $( ($cname, self.$col.len()), )+ ];
                let n = lens[0].1;
                for (name, l) in lens {
                    if l != n {
                        return Err($crate::snapshot::schema::SchemaError::RowCount {
                            name: name.into(),
                            rows: l,
                            expected: n,
                        });
                    }
                }
                $(
                    $crate::snapshot::schema::check_group(
                        $lname,
                        &self.$loff,
                        n,
                        &[ $( ($iname, self.$item.len()), )+ ],
                    )?;
                )*
                $(
                    $crate::snapshot::schema::check_group(
                        $gname,
                        &self.$goff,
                        n,
                        &[("coordinates", self.$gcoords.len())],
                    )?;
                )?
                Ok(())
            }
        }
    };
}

pub(crate) use columns;

/// A group's offsets cover `rows` rows (no offsets at all is an empty table) and its item
/// columns hold as many items as the offsets say.
pub fn check_group(
    group: &str,
    offsets: &[u32],
    rows: usize,
    items: &[(&str, usize)],
) -> Result<(), SchemaError> {
    let l = offsets.len().saturating_sub(1);
    if l != rows {
        return Err(SchemaError::RowCount {
            name: group.into(),
            rows: l,
            expected: rows,
        });
    }
    let want = offsets.last().copied().unwrap_or(0) as usize;
    if let Some((name, got)) = items.iter().find(|(_, got)| *got != want) {
        return Err(SchemaError::ItemCount {
            group: group.into(),
            field: (*name).into(),
            items: *got,
            expected: want,
        });
    }
    if offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err(SchemaError::OffsetsDecrease {
            group: group.into(),
        });
    }
    Ok(())
}
