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
use crate::error::{EngineError, Result};

/// The largest event id taken: 2^53 − 1, the largest integer every JSON reader holds exactly
/// (Uberiket's ids are far below it).
pub const MAX_EVENT_ID: u64 = (1 << 53) - 1;
/// The most an event id may lie past the one before it in its stream (the recorded last id,
/// or the previous event): 2^32, more events than NVDB records in years. An id past that is
/// refused: as the cursor it would skip every event the upstream records afterwards.
pub const MAX_EVENT_ID_JUMP: u64 = 1 << 32;

/// Refuse event ids of `stream` (ascending, all after `after` when it is set) that lie past
/// [`MAX_EVENT_ID`] or more than [`MAX_EVENT_ID_JUMP`] past the one before.
pub fn check_event_ids(
    stream: &str,
    after: Option<u64>,
    ids: impl IntoIterator<Item = u64>,
) -> Result<()> {
    let mut prev = after;
    for id in ids {
        if id > MAX_EVENT_ID {
            return Err(EngineError::input(format!(
                "{stream}: event id {id} is larger than any real event id (at most {MAX_EVENT_ID}): refused, since as the last event id it would skip every later event"
            )));
        }
        if let Some(p) = prev.filter(|&p| id > p && id - p > MAX_EVENT_ID_JUMP) {
            return Err(EngineError::input(format!(
                "{stream}: event id {id} jumps {} past the event id {p} before it (at most {MAX_EVENT_ID_JUMP} allowed): refused, since as the last event id it would skip every later event",
                id - p
            )));
        }
        prev = Some(id);
    }
    Ok(())
}

/// An upstream event: its id orders its stream.
pub trait Event {
    fn id(&self) -> u64;
}

impl Event for NetworkEvent {
    fn id(&self) -> u64 {
        self.hendelse_id
    }
}

impl Event for ObjectEvent {
    fn id(&self) -> u64 {
        self.hendelse_id
    }
}

/// The events of `stream` after the recorded last id `after` (all when none is recorded), their
/// ids checked by [`check_event_ids`].
pub fn events_after<E: Event>(stream: &str, after: Option<u64>, events: Vec<E>) -> Result<Vec<E>> {
    let events: Vec<E> = events
        .into_iter()
        .filter(|e| after.is_none_or(|a| e.id() > a))
        .collect();
    check_event_ids(stream, after, events.iter().map(Event::id))?;
    Ok(events)
}

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
/// a later refresh continues from). Streams without events are absent; an id past
/// [`MAX_EVENT_ID`] is refused (`check_event_ids`).
pub fn last_event_ids(source: &Path, types: &[u32]) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let seq = read_sequence_events(source)?;
    check_event_ids(SEQUENCE_STREAM, None, seq.last().map(|e| e.hendelse_id))?;
    if let Some(e) = seq.last() {
        out.insert(SEQUENCE_STREAM.to_string(), e.hendelse_id);
    }
    for &t in types {
        let events = read_object_events(source, t)?;
        check_event_ids(
            &object_stream(t),
            None,
            events.last().map(|e| e.hendelse_id),
        )?;
        if let Some(e) = events.last() {
            out.insert(object_stream(t), e.hendelse_id);
        }
    }
    Ok(out)
}
