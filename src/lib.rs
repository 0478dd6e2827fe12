//! vegdb: a fast, self-hostable implementation of the Norwegian road database service (NVDB API
//! v2). See ARCHITECTURE.md for the module map.
#![forbid(unsafe_code)]

pub mod area;
pub mod auth;
pub mod catalog;
pub mod changeset;
pub mod durable;
pub mod error;
pub mod failpoints;
pub mod geo;
pub mod ids;
pub mod import;

pub use error::{EngineError, Result};
pub mod api;
pub mod cli;
pub mod config;
pub mod config_file;
pub mod demo;
pub mod export;
pub mod generate;
pub mod generation;
pub mod index;
pub mod metrics;
pub mod query;
pub mod remote;
pub mod replica;
pub mod server;
pub mod snapshot;
pub mod tiles;
/// The users file lives in `auth`; `vegdb::users` stays as its path for existing callers.
pub use auth::users;
pub mod util;
pub mod value;
