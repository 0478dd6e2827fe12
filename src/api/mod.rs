//! HTTP API: the read interface under `/nvdb/api/v2`, the write interface under
//! `/nvdb/apiskriv/rest/v2`, and the services beside them. Handlers parse parameters, make one
//! engine call against the generation taken once per request, and shape the response (JSON or
//! XML, `media.rs`). This file only names the rooms: the state and settings below every handler
//! (`state`), what a request is (`route`), and the router that mounts everything (`router`, at
//! the top; `tests/layers.rs` keeps the order).

pub mod access_log;
pub mod catalog_docs;
pub mod csv;
pub mod cursor;
pub mod dated;
pub mod docs;
pub mod dto;
pub mod error;
pub mod forward;
pub mod geojson;
pub mod guard;
pub mod handler;
pub mod health;
pub mod heavy;
pub mod media;
pub mod object_docs;
pub mod object_json;
pub mod ogc;
pub mod openapi;
pub mod paging;
pub mod params;
pub mod query_doc;
pub mod read;
pub mod request_base;
pub mod route;
pub mod router;
pub mod stack;
pub mod state;
pub mod stream;
pub mod tiles;
pub mod write;
pub mod xml;
