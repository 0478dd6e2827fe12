//! Queries over a loaded generation: road references (v2's and the road system's), positions,
//! network selection.

pub mod attributes;
pub mod budget;
pub mod egenskap;
pub mod grouped;
pub mod limits;
pub mod network;
pub mod objects;
pub mod on_route;
pub mod overlay;
pub mod page;
pub mod polygon;
pub mod route;
pub mod route_match;
pub mod system_ref;
pub mod vegref;
