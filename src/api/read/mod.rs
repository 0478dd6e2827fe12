//! Read interface handlers, one file per URL area.

pub mod catalog;
pub mod omrader;
pub mod status;
