//! Integration tests: the real server over the tiny generated dataset.

mod behaviour;
mod bin_server;
mod clients_java;
mod clients_ltglahn;
mod read_catalog;
mod read_network;
mod read_objects;
mod read_omrader;
mod server;
mod write_binaer;
mod write_changesets;
mod write_server;
