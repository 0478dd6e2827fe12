//! Queries over a loaded generation: road references, positions, network selection.

pub mod egenskap;
pub mod network;
pub mod objects;
pub mod vegref;
