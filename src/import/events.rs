//! Upstream events (Uberiket `/hendelser/...`): their serde shapes, where a source directory
//! keeps them, and the last event id per stream.
//!
//! Layout beside the data (see `source.rs`):
//! - `SOURCE/hendelser/veglenkesekvenser/*.json|*.ndjson`: `VegnettHendelserSide` pages (or
//!   single `VegnettNotifikasjon` records, such as the saved answer of `.../siste`);
//! - `SOURCE/hendelser/vegobjekter/<typeId>/*.json|*.ndjson`: `VegobjektHendelserSide` pages
//!   (or single `VegobjektNotifikasjon` records).
//!
//! The stream names kept in the manifest (`last_event_ids`) are `veglenkesekvenser` and
//! `vegobjekter/<typeId>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::source;
use super::{OBJECTS_DIR, SEQUENCES_DIR};
use crate::error::Result;

/// Sub-directory of the events in a source directory.
pub const EVENTS_DIR: &str = "hendelser";

/// `VegnettNotifikasjon`: one event of `/hendelser/veglenkesekvenser`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkEvent {
    pub hendelse_id: u64,
    /// VeglenkesekvensOpprettet, VeglenkesekvensEndret, VeglenkesekvensFjernet (Node* events
    /// are not about sequences and are counted, not applied).
    pub hendelse_type: String,
    pub nettelement_id: u64,
    #[serde(default)]
    pub nettelement_type: Option<i64>,
    pub tidspunkt: String,
}

/// `VegobjektNotifikasjon`: one event of `/hendelser/vegobjekter/{typeId}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectEvent {
    pub hendelse_id: u64,
    /// VegobjektImportert, VegobjektVersjonOpprettet, VegobjektVersjonEndret,
    /// VegobjektVersjonFjernet.
    pub hendelse_type: String,
    pub vegobjekt_id: u64,
    pub vegobjekt_type_id: u32,
    #[serde(default)]
    pub vegobjekt_versjon: Option<u32>,
    pub tidspunkt: String,
}

/// The manifest's stream name of an object type.
pub fn object_stream(type_id: u32) -> String {
    format!("{OBJECTS_DIR}/{type_id}")
}

/// The manifest's stream name of the sequences.
pub const SEQUENCE_STREAM: &str = SEQUENCES_DIR;

pub fn sequence_events_dir(source: &Path) -> PathBuf {
    source.join(EVENTS_DIR).join(SEQUENCES_DIR)
}

pub fn object_events_dir(source: &Path, type_id: u32) -> PathBuf {
    source
        .join(EVENTS_DIR)
        .join(OBJECTS_DIR)
        .join(type_id.to_string())
}

/// Type ids with an events directory in `source`.
pub fn event_types(source: &Path) -> Result<Vec<u32>> {
    let dir = source.join(EVENTS_DIR).join(OBJECTS_DIR);
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            if let Some(t) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                if e.path().is_dir() {
                    out.push(t);
                }
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub fn read_sequence_events(source: &Path) -> Result<Vec<NetworkEvent>> {
    let mut out = Vec::new();
    source::for_each_record(&sequence_events_dir(source), |e: NetworkEvent| {
        out.push(e);
        Ok(())
    })?;
    out.sort_by_key(|e| e.hendelse_id);
    Ok(out)
}

pub fn read_object_events(source: &Path, type_id: u32) -> Result<Vec<ObjectEvent>> {
    let mut out = Vec::new();
    source::for_each_record(&object_events_dir(source, type_id), |e: ObjectEvent| {
        out.push(e);
        Ok(())
    })?;
    out.sort_by_key(|e| e.hendelse_id);
    Ok(out)
}

/// The highest event id per stream that `source` holds (what an import records as the point
/// a later refresh continues from). Streams without events are absent.
pub fn last_event_ids(source: &Path, types: &[u32]) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    if let Some(e) = read_sequence_events(source)?.last() {
        out.insert(SEQUENCE_STREAM.to_string(), e.hendelse_id);
    }
    for &t in types {
        if let Some(e) = read_object_events(source, t)?.last() {
            out.insert(object_stream(t), e.hendelse_id);
        }
    }
    Ok(out)
}
