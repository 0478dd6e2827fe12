//! A property value as the engine holds it outside the columns: what validation produces,
//! the writer's working state edits and the test-data generator makes.

/// One scalar property value (enum ids are `Int`; dates and booleans are normalised `Text`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Text(String),
}
