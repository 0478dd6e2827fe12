//! Integration tests: the real server over the tiny generated dataset.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

mod abuse_filters;
mod abuse_http;
mod behaviour;
mod bin_server;
mod clients_java;
mod clients_ltglahn;
mod direct;
mod edges;
mod geojson;
mod health;
mod ogc;
mod ogc_cql2;
mod ogc_history;
mod ogc_properties;
mod ops;
mod read_catalog;
mod read_history;
mod read_network;
mod read_objects;
mod read_omrader;
mod read_route;
mod read_segmented;
mod read_statistics;
mod read_system_refs;
mod read_xml;
mod readme;
mod server;
mod stack;
mod stream_pages;
mod write_authz;
mod write_binaer;
mod write_changesets;
mod write_history;
mod write_login;
mod write_server;
