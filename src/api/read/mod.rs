//! Read interface handlers, one file per URL area.

pub mod catalog;
pub mod endringer;
pub mod omrader;
pub mod posisjon;
pub mod status;
pub mod veg;
pub mod vegnett;
pub mod vegobjekter;
