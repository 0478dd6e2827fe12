//! Integration tests: the real server over the tiny generated dataset.

mod behaviour;
mod read_catalog;
mod read_network;
mod read_objects;
mod read_omrader;
mod read_xml;
mod server;
mod write_binaer;
mod write_changesets;
mod write_server;
