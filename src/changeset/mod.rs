//! The write path: changesets (NVDB API SKRIV v2 `endringssett`) registered in a durable
//! journal, validated against the catalogue and the current generation, applied by one writer
//! into new generations copy-on-write. No HTTP here; `api::write` speaks the API.
//!
//! `model` (the changeset), `validate` (shape + catalogue/data checks → plan), `working`
//! (base generation + edits → new tables), `apply` (plan → edits), `journal` (changesets on
//! disk), `writer` (the single writer thread, publishing, recovery), `priority` (the write side's
//! thread priority), `binary` (the binary store), `convert` (SOSI and SOSI-GeoJSON to
//! changesets), `adopt` (generations handed over by other processes, and CURRENT followed).

pub mod adopt;
pub mod apply;
pub mod binary;
pub mod convert;
pub mod journal;
pub mod model;
pub mod priority;
pub mod validate;
pub mod working;
pub mod writer;
