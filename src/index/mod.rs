//! Indexes built when a generation loads: an R-tree over road link segments and roaring
//! bitmaps per object type × area and per enumerated property value.

pub mod area_values;
pub mod bitmaps;
pub mod contraction;
pub mod graph;
pub mod grid;
pub mod landmarks;
pub mod network;
pub mod pieces;
pub mod rtree;
