//! How one column of Rust values is stored as an Arrow array: the `Codec` trait and the
//! scalar codecs the `columns!` declarations name (ids, integers, floats, letters, text, flags,
//! dates, timestamps), including those of columns added after the first generations, which
//! read as a fixed value when absent from an older file.

use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float64Type, Int32Type, Int64Type, TimestampSecondType, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, StringArray,
    TimestampSecondArray, UInt8Array,
};
use arrow_schema::{DataType, TimeUnit};

use super::{Days, Seconds, OPEN_END};

/// How one column of Rust values is stored as an Arrow array.
pub trait Codec {
    type Native;
    /// Whether the stored column may hold nulls (part of the stored schema).
    const NULLABLE: bool = false;
    fn data_type() -> DataType;
    fn encode(values: &[Self::Native]) -> ArrayRef;
    /// Append the array's values to `out`; None when the array has another type.
    fn decode(array: &dyn Array, out: &mut Vec<Self::Native>) -> Option<()>;
    /// A column (or a struct child of a ragged group) missing from the file: append `items`
    /// values that stand for it, or None when it is required (the default). Only a column or
    /// child added after the first generations were written may be absent.
    fn decode_absent(_items: usize, _out: &mut Vec<Self::Native>) -> Option<()> {
        None
    }
}

/// Ids: u64 stored as Int64.
pub struct Id;
impl Codec for Id {
    type Native = u64;
    fn data_type() -> DataType {
        DataType::Int64
    }
    fn encode(values: &[u64]) -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(
            values.iter().map(|&v| v as i64),
        ))
    }
    fn decode(array: &dyn Array, out: &mut Vec<u64>) -> Option<()> {
        let a = array.as_primitive_opt::<Int64Type>()?;
        out.extend(a.values().iter().map(|&v| v as u64));
        Some(())
    }
}

/// An optional id, 0 = none: stored as nullable Int64 (null = 0).
pub struct OptionalId;
impl Codec for OptionalId {
    type Native = u64;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        DataType::Int64
    }
    fn encode(values: &[u64]) -> ArrayRef {
        Arc::new(
            values
                .iter()
                .map(|&s| (s != 0).then_some(s as i64))
                .collect::<Int64Array>(),
        )
    }
    fn decode(array: &dyn Array, out: &mut Vec<u64>) -> Option<()> {
        let a = array.as_primitive_opt::<Int64Type>()?;
        out.extend(a.iter().map(|v| v.unwrap_or(0) as u64));
        Some(())
    }
}

/// Small unsigned integers stored widened to Int32.
pub trait AsInt32: Copy {
    fn to_i32(self) -> i32;
    fn from_i32(v: i32) -> Self;
}
macro_rules! as_int32 {
    ($($t:ty),*) => {$(
        impl AsInt32 for $t {
            fn to_i32(self) -> i32 {
                self as i32
            }
            fn from_i32(v: i32) -> Self {
                v as $t
            }
        }
    )*};
}
as_int32!(u8, u16, u32);

/// An unsigned integer (u8, u16, u32) stored as Int32.
pub struct Int32<T>(PhantomData<T>);
impl<T: AsInt32> Codec for Int32<T> {
    type Native = T;
    fn data_type() -> DataType {
        DataType::Int32
    }
    fn encode(values: &[T]) -> ArrayRef {
        Arc::new(Int32Array::from_iter_values(
            values.iter().map(|v| v.to_i32()),
        ))
    }
    fn decode(array: &dyn Array, out: &mut Vec<T>) -> Option<()> {
        let a = array.as_primitive_opt::<Int32Type>()?;
        out.extend(a.values().iter().map(|&v| T::from_i32(v)));
        Some(())
    }
}

/// f64 as Float64.
pub struct Float;
impl Codec for Float {
    type Native = f64;
    fn data_type() -> DataType {
        DataType::Float64
    }
    fn encode(values: &[f64]) -> ArrayRef {
        Arc::new(Float64Array::from(values.to_vec()))
    }
    fn decode(array: &dyn Array, out: &mut Vec<f64>) -> Option<()> {
        out.extend_from_slice(array.as_primitive_opt::<Float64Type>()?.values());
        Some(())
    }
}

/// u8 as UInt8.
pub struct Byte;
impl Codec for Byte {
    type Native = u8;
    fn data_type() -> DataType {
        DataType::UInt8
    }
    fn encode(values: &[u8]) -> ArrayRef {
        Arc::new(UInt8Array::from(values.to_vec()))
    }
    fn decode(array: &dyn Array, out: &mut Vec<u8>) -> Option<()> {
        out.extend_from_slice(array.as_primitive_opt::<UInt8Type>()?.values());
        Some(())
    }
}

/// An ASCII letter (u8) stored as a one-character Utf8 string (null or empty reads as '?').
pub struct Letter;
impl Codec for Letter {
    type Native = u8;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn encode(values: &[u8]) -> ArrayRef {
        Arc::new(StringArray::from_iter_values(
            values.iter().map(|&b| (b as char).to_string()),
        ))
    }
    fn decode(array: &dyn Array, out: &mut Vec<u8>) -> Option<()> {
        let a = array.as_string_opt::<i32>()?;
        out.extend(
            a.iter()
                .map(|s| s.and_then(|s| s.bytes().next()).unwrap_or(b'?')),
        );
        Some(())
    }
}

/// Text as Utf8 (null reads as "").
pub struct Text;
impl Codec for Text {
    type Native = String;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn encode(values: &[String]) -> ArrayRef {
        Arc::new(StringArray::from_iter_values(values.iter()))
    }
    fn decode(array: &dyn Array, out: &mut Vec<String>) -> Option<()> {
        let a = array.as_string_opt::<i32>()?;
        out.extend(a.iter().map(|s| s.unwrap_or_default().to_string()));
        Some(())
    }
}

/// Text added to a ragged group after the first generations (an object placement's lanes):
/// nullable Utf8, "" stored as null; a null, and the child missing from an older file, read
/// as "".
pub struct AddedText;
impl Codec for AddedText {
    type Native = Box<str>;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn encode(values: &[Box<str>]) -> ArrayRef {
        Arc::new(
            values
                .iter()
                .map(|s| (!s.is_empty()).then_some(&**s))
                .collect::<StringArray>(),
        )
    }
    fn decode(array: &dyn Array, out: &mut Vec<Box<str>>) -> Option<()> {
        let a = array.as_string_opt::<i32>()?;
        out.extend(a.iter().map(|s| Box::from(s.unwrap_or_default())));
        Some(())
    }
    fn decode_absent(items: usize, out: &mut Vec<Box<str>>) -> Option<()> {
        out.extend(std::iter::repeat_n(Box::<str>::default(), items));
        Some(())
    }
}

/// bool as Boolean (null reads as false).
pub struct Flag;
impl Codec for Flag {
    type Native = bool;
    fn data_type() -> DataType {
        DataType::Boolean
    }
    fn encode(values: &[bool]) -> ArrayRef {
        Arc::new(BooleanArray::from(values.to_vec()))
    }
    fn decode(array: &dyn Array, out: &mut Vec<bool>) -> Option<()> {
        out.extend(array.as_boolean_opt()?.iter().map(|v| v.unwrap_or(false)));
        Some(())
    }
}

/// Days since 1970 as Date32.
pub struct Date;
impl Codec for Date {
    type Native = Days;
    fn data_type() -> DataType {
        DataType::Date32
    }
    fn encode(values: &[Days]) -> ArrayRef {
        Arc::new(Date32Array::from(values.to_vec()))
    }
    fn decode(array: &dyn Array, out: &mut Vec<Days>) -> Option<()> {
        out.extend_from_slice(array.as_primitive_opt::<Date32Type>()?.values());
        Some(())
    }
}

/// An end date, `OPEN_END` = none: nullable Date32.
pub struct OpenDate;
impl Codec for OpenDate {
    type Native = Days;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        DataType::Date32
    }
    fn encode(values: &[Days]) -> ArrayRef {
        Arc::new(
            values
                .iter()
                .map(|&d| (d != OPEN_END).then_some(d))
                .collect::<Date32Array>(),
        )
    }
    fn decode(array: &dyn Array, out: &mut Vec<Days>) -> Option<()> {
        let a = array.as_primitive_opt::<Date32Type>()?;
        out.extend(a.iter().map(|v| v.unwrap_or(OPEN_END)));
        Some(())
    }
}

/// An end date added to a table after the first generations (a road link row's `end_date`):
/// stored as [`OpenDate`]; the column missing from an older file reads as open.
pub struct AddedOpenDate;
impl Codec for AddedOpenDate {
    type Native = Days;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        OpenDate::data_type()
    }
    fn encode(values: &[Days]) -> ArrayRef {
        OpenDate::encode(values)
    }
    fn decode(array: &dyn Array, out: &mut Vec<Days>) -> Option<()> {
        OpenDate::decode(array, out)
    }
    fn decode_absent(items: usize, out: &mut Vec<Days>) -> Option<()> {
        out.extend(std::iter::repeat_n(OPEN_END, items));
        Some(())
    }
}

/// A code (an index into a table of names, 0..=254) added to a table after the first
/// generations (a road link row's `detail_level`, `separate_carriageways`): stored as Int32;
/// the column missing from an older file reads as `ABSENT` (a value or a marker the loader
/// derives from other columns, see `RoadNetwork::derive_absent`).
pub struct AddedCode<const ABSENT: u8>;
impl<const ABSENT: u8> Codec for AddedCode<ABSENT> {
    type Native = u8;
    fn data_type() -> DataType {
        DataType::Int32
    }
    fn encode(values: &[u8]) -> ArrayRef {
        Int32::<u8>::encode(values)
    }
    fn decode(array: &dyn Array, out: &mut Vec<u8>) -> Option<()> {
        Int32::<u8>::decode(array, out)
    }
    fn decode_absent(items: usize, out: &mut Vec<u8>) -> Option<()> {
        out.extend(std::iter::repeat_n(ABSENT, items));
        Some(())
    }
}

/// An unsigned integer (u8, u16, u32) added to a table after the first generations (a road
/// link row's vegsystemreferanse numbers and metres): stored as [`Int32`]; the column missing
/// from an older file reads as the type's maximum, a marker the loader derives from other
/// columns (`RoadNetwork::derive_absent`).
pub struct AddedInt32<T>(PhantomData<T>);
impl<T: AsInt32> Codec for AddedInt32<T> {
    type Native = T;
    fn data_type() -> DataType {
        DataType::Int32
    }
    fn encode(values: &[T]) -> ArrayRef {
        Int32::<T>::encode(values)
    }
    fn decode(array: &dyn Array, out: &mut Vec<T>) -> Option<()> {
        Int32::<T>::decode(array, out)
    }
    fn decode_absent(items: usize, out: &mut Vec<T>) -> Option<()> {
        // -1 wraps to the type's maximum
        out.extend(std::iter::repeat_n(T::from_i32(-1), items));
        Some(())
    }
}

/// An optional id (0 = none) added to a table after the first generations (a road link row's
/// 915 Vegsystem and 916 Strekning object ids): stored as [`OptionalId`] (nullable Int64);
/// the column missing from an older file reads as none.
pub struct AddedOptionalId;
impl Codec for AddedOptionalId {
    type Native = u64;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        OptionalId::data_type()
    }
    fn encode(values: &[u64]) -> ArrayRef {
        OptionalId::encode(values)
    }
    fn decode(array: &dyn Array, out: &mut Vec<u64>) -> Option<()> {
        OptionalId::decode(array, out)
    }
    fn decode_absent(items: usize, out: &mut Vec<u64>) -> Option<()> {
        out.extend(std::iter::repeat_n(0, items));
        Some(())
    }
}

/// An optional unsigned integer (0 = none) added to a table after the first generations (a
/// road link row's 915 and 916 object versions): stored as nullable Int32 (null = 0); the
/// column missing from an older file reads as none.
pub struct AddedOptionalInt32<T>(PhantomData<T>);
impl<T: AsInt32> Codec for AddedOptionalInt32<T> {
    type Native = T;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        DataType::Int32
    }
    fn encode(values: &[T]) -> ArrayRef {
        Arc::new(
            values
                .iter()
                .map(|v| Some(v.to_i32()).filter(|&v| v != 0))
                .collect::<Int32Array>(),
        )
    }
    fn decode(array: &dyn Array, out: &mut Vec<T>) -> Option<()> {
        let a = array.as_primitive_opt::<Int32Type>()?;
        out.extend(a.iter().map(|v| T::from_i32(v.unwrap_or(0))));
        Some(())
    }
    fn decode_absent(items: usize, out: &mut Vec<T>) -> Option<()> {
        out.extend(std::iter::repeat_n(T::from_i32(0), items));
        Some(())
    }
}

/// A letter added to a table after the first generations (a road link row's
/// `traffic_group`): stored as [`Letter`]; the column missing from an older file reads as
/// `ABSENT`.
pub struct AddedLetter<const ABSENT: u8>;
impl<const ABSENT: u8> Codec for AddedLetter<ABSENT> {
    type Native = u8;
    fn data_type() -> DataType {
        Letter::data_type()
    }
    fn encode(values: &[u8]) -> ArrayRef {
        Letter::encode(values)
    }
    fn decode(array: &dyn Array, out: &mut Vec<u8>) -> Option<()> {
        Letter::decode(array, out)
    }
    fn decode_absent(items: usize, out: &mut Vec<u8>) -> Option<()> {
        out.extend(std::iter::repeat_n(ABSENT, items));
        Some(())
    }
}

/// A flag added to a table after the first generations (a road link row's `side_facility`):
/// stored as [`Flag`]; the column missing from an older file reads as false.
pub struct AddedFlag;
impl Codec for AddedFlag {
    type Native = bool;
    fn data_type() -> DataType {
        Flag::data_type()
    }
    fn encode(values: &[bool]) -> ArrayRef {
        Flag::encode(values)
    }
    fn decode(array: &dyn Array, out: &mut Vec<bool>) -> Option<()> {
        Flag::decode(array, out)
    }
    fn decode_absent(items: usize, out: &mut Vec<bool>) -> Option<()> {
        out.extend(std::iter::repeat_n(false, items));
        Some(())
    }
}

/// Seconds since 1970 as Timestamp(second, "UTC").
pub struct Timestamp;
impl Codec for Timestamp {
    type Native = Seconds;
    fn data_type() -> DataType {
        DataType::Timestamp(TimeUnit::Second, Some("UTC".into()))
    }
    fn encode(values: &[Seconds]) -> ArrayRef {
        Arc::new(TimestampSecondArray::from(values.to_vec()).with_timezone("UTC"))
    }
    fn decode(array: &dyn Array, out: &mut Vec<Seconds>) -> Option<()> {
        out.extend_from_slice(array.as_primitive_opt::<TimestampSecondType>()?.values());
        Some(())
    }
}
