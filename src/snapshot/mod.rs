//! Snapshot generations on disk: Parquet tables plus a manifest, published crash-safely, and
//! loaded into columnar memory with indexes.

pub mod builder;
pub mod columns;
pub mod dictionary;
pub mod handoff;
pub mod located;
pub mod manifest;
pub mod owner;
pub mod parquet_read;
pub mod parquet_write;
pub mod plan;
pub mod schema;
pub mod store;
