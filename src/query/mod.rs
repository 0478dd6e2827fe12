//! Queries over a loaded generation: road references, positions, network selection.

pub mod network;
pub mod vegref;
