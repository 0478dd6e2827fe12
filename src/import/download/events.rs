//! The event streams of `vegdb refresh --source URL` and the newest event ids an import
//! records (`hendelser/<stream>/...`), downloaded with the same HTTP layer as the data.

use std::path::{Path, PathBuf};

use super::*;

/// Save the newest event id of every stream (`/hendelser/.../siste`) as
/// `hendelser/<stream>/siste.json`, so an import of `dest` records where a later refresh
/// starts. Asked before the data is downloaded (events during the download are applied again
/// by the refresh, which is harmless); kept when present (a resumed download keeps the first
/// answer). A stream without events (404) gets no file.
pub fn download_latest_events(
    base: &str,
    dest: &Path,
    types: &[u32],
    opts: &DownloadOptions,
) -> Result<StreamReport> {
    let base = base.trim_end_matches('/');
    let client = client(base, opts)?;
    let mut report = StreamReport {
        name: "hendelser/siste".into(),
        ..Default::default()
    };
    let mut wanted = vec![(
        format!("{base}/hendelser/veglenkesekvenser/siste"),
        crate::import::events::sequence_events_dir(dest),
        crate::import::events::SEQUENCE_STREAM.to_string(),
    )];
    for &t in types {
        wanted.push((
            format!("{base}/hendelser/vegobjekter/{t}/siste"),
            crate::import::events::object_events_dir(dest, t),
            crate::import::events::object_stream(t),
        ));
    }
    for (url, dir, stream) in wanted {
        let file = dir.join("siste.json");
        if file.exists() {
            continue;
        }
        if let Some(v) = fetch_json(&client, &url, MAX_LATEST_BYTES, opts, &mut report)? {
            let id = v.get("hendelseId").and_then(serde_json::Value::as_u64);
            crate::import::events::check_event_ids(&stream, None, id)
                .map_err(|e| EngineError::Internal(format!("download failed: {url}: {e}")))?;
            write_json(&file, &v)?;
            report.records += 1;
        }
    }
    Ok(report)
}

/// Ids per `?ider=` call.
const IDS_PER_CALL: usize = 100;

/// Download what `vegdb refresh` applies into `dest` (emptied first): the events after
/// `last_event_ids` of the sequences and of `types` (`/hendelser/...?start=&antall=`, paged by
/// the highest event id read until a page is empty), then the current state of every id they
/// name (`/vegnett/veglenkesekvenser?ider=`, `/vegobjekter/{type}?ider=&inkluder=alle`). Ids
/// the upstream no longer has are simply absent, which the refresh reads as removed.
///
/// Object streams go first: when a 915 Vegsystem, 916 Strekning or 920 Sideanleggsdel changes,
/// the sequences under it (before: `road_system(id)`, the stored generation's placements;
/// after: the fetched object's) are fetched with the named ones, so their road references and
/// side-facility marks are derived again.
pub fn download_events(
    base: &str,
    dest: &Path,
    last_event_ids: &std::collections::BTreeMap<String, u64>,
    types: &[u32],
    road_system: &(dyn Fn(u64) -> Vec<u64> + Sync),
    opts: &DownloadOptions,
    progress: &(dyn Fn(&StreamReport) + Sync),
) -> Result<Vec<StreamReport>> {
    use crate::import::events::{object_stream, SEQUENCE_STREAM};
    use crate::import::roadref::{SIDEANLEGGSDEL, STREKNING, VEGSYSTEM};
    let base = base.trim_end_matches('/');
    let client = client(base, opts)?;
    if dest.exists() {
        std::fs::remove_dir_all(dest).map_err(|e| EngineError::io(dest, e))?;
    }
    // made even when no event is new: the refresh of an empty download publishes nothing
    std::fs::create_dir_all(dest).map_err(|e| EngineError::io(dest, e))?;
    let calls = EventCalls {
        client: &client,
        antall: opts.batch.clamp(1, 1000),
        opts,
        progress,
    };
    let mut under_road_system: std::collections::BTreeSet<u64> = Default::default();
    let mut reports = Vec::new();
    for stream in event_streams(base, dest, types) {
        let road_system_stream = [VEGSYSTEM, STREKNING, SIDEANLEGGSDEL]
            .iter()
            .any(|t| stream.name == object_stream(*t));
        let mut report = StreamReport {
            name: stream.name.clone(),
            resumed_from: last_event_ids.get(&stream.name).copied(),
            ..Default::default()
        };
        let mut named = calls.events(&stream, &mut report)?;
        if stream.name == SEQUENCE_STREAM {
            named.extend(under_road_system.iter().copied());
        }
        if road_system_stream {
            for &id in &named {
                under_road_system.extend(road_system(id));
            }
        }
        let under = road_system_stream.then_some(&mut under_road_system);
        calls.current_state(&stream, named, under, &mut report)?;
        reports.push(report);
    }
    Ok(reports)
}

/// One event stream to download.
struct EventStream {
    name: String,
    /// `/hendelser/...` of the stream.
    events_url: String,
    /// Where its event pages are saved.
    events_dir: PathBuf,
    /// The field of an event naming the element.
    id_field: &'static str,
    /// The current state of elements, `?ider=` to append.
    current_url: String,
    /// Where the current state is saved.
    current_dir: PathBuf,
}

/// The streams of `types` (object streams first), then the sequences'.
fn event_streams(base: &str, dest: &Path, types: &[u32]) -> Vec<EventStream> {
    use crate::import::events::{object_stream, SEQUENCE_STREAM};
    let mut streams = Vec::new();
    for &t in types {
        streams.push(EventStream {
            name: object_stream(t),
            events_url: format!("{base}/hendelser/vegobjekter/{t}"),
            events_dir: crate::import::events::object_events_dir(dest, t),
            id_field: "vegobjektId",
            current_url: format!("{base}/vegobjekter/{t}?antall=1000&inkluder=alle&ider="),
            current_dir: dest.join(OBJECTS_DIR).join(t.to_string()),
        });
    }
    streams.push(EventStream {
        name: SEQUENCE_STREAM.to_string(),
        events_url: format!("{base}/hendelser/veglenkesekvenser"),
        events_dir: crate::import::events::sequence_events_dir(dest),
        id_field: "nettelementId",
        current_url: format!("{base}/vegnett/veglenkesekvenser?antall=1000&ider="),
        current_dir: dest.join(SEQUENCES_DIR),
    });
    streams
}

/// The calls of `download_events`.
struct EventCalls<'a> {
    client: &'a reqwest::blocking::Client,
    /// Events per page.
    antall: usize,
    opts: &'a DownloadOptions,
    progress: &'a (dyn Fn(&StreamReport) + Sync),
}

impl EventCalls<'_> {
    /// Save the stream's event pages after `report.resumed_from` (paged by the highest event
    /// id read until a page is empty); the ids they name.
    fn events(
        &self,
        stream: &EventStream,
        report: &mut StreamReport,
    ) -> Result<std::collections::BTreeSet<u64>> {
        let (url, antall, id_field) = (&stream.events_url, self.antall, stream.id_field);
        let mut start = report.resumed_from;
        let mut named: std::collections::BTreeSet<u64> = Default::default();
        loop {
            let call = match start {
                Some(s) => format!("{url}?start={s}&antall={antall}"),
                None => format!("{url}?antall={antall}"),
            };
            let page = fetch_json(self.client, &call, MAX_EVENT_PAGE_BYTES, self.opts, report)?
                .ok_or_else(|| {
                    EngineError::Internal(format!("download failed: {call}: HTTP 404"))
                })?;
            let events = page
                .get("hendelser")
                .and_then(serde_json::Value::as_array)
                .ok_or_else(|| {
                    EngineError::Internal(format!("download failed: {call}: no hendelser list"))
                })?;
            if events.is_empty() {
                break;
            }
            let mut max = start.unwrap_or(0);
            let mut ids: Vec<u64> = events
                .iter()
                .filter_map(|e| e.get("hendelseId").and_then(serde_json::Value::as_u64))
                .collect();
            ids.sort_unstable();
            crate::import::events::check_event_ids(&stream.name, start, ids)
                .map_err(|e| EngineError::Internal(format!("download failed: {call}: {e}")))?;
            for e in events {
                let (Some(eid), Some(id)) = (
                    e.get("hendelseId").and_then(serde_json::Value::as_u64),
                    e.get(id_field).and_then(serde_json::Value::as_u64),
                ) else {
                    return Err(EngineError::Internal(format!(
                        "download failed: {call}: event without hendelseId or {id_field}"
                    )));
                };
                max = max.max(eid);
                named.insert(id);
            }
            if start.is_some_and(|s| max <= s) {
                return Err(EngineError::Internal(format!(
                    "download failed: {call} did not advance past event id {max}"
                )));
            }
            write_json(
                &stream
                    .events_dir
                    .join(format!("page-{:020}.json", start.unwrap_or(0))),
                &page,
            )?;
            report.records += events.len();
            start = Some(max);
            (self.progress)(report);
        }
        Ok(named)
    }

    /// Save the current state of the `named` elements (`IDS_PER_CALL` per call). For a road
    /// system stream, the sequences under the fetched objects go into `under_road_system`.
    fn current_state(
        &self,
        stream: &EventStream,
        named: std::collections::BTreeSet<u64>,
        mut under_road_system: Option<&mut std::collections::BTreeSet<u64>>,
        report: &mut StreamReport,
    ) -> Result<()> {
        let ids: Vec<u64> = named.into_iter().collect();
        for (i, group) in ids.chunks(IDS_PER_CALL).enumerate() {
            let list: Vec<String> = group.iter().map(u64::to_string).collect();
            let call = format!("{}{}", stream.current_url, list.join(","));
            if let Some(page) =
                fetch_json(self.client, &call, MAX_IDS_PAGE_BYTES, self.opts, report)?
            {
                if let Some(under) = under_road_system.as_deref_mut() {
                    for o in page
                        .get("vegobjekter")
                        .and_then(serde_json::Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let lines = o
                            .pointer("/stedfesting/linjer")
                            .and_then(serde_json::Value::as_array);
                        for l in lines.into_iter().flatten() {
                            under.extend(l.get("id").and_then(serde_json::Value::as_u64));
                        }
                    }
                }
                write_json(&stream.current_dir.join(format!("ider-{i:06}.json")), &page)?;
            }
            (self.progress)(report);
        }
        Ok(())
    }
}
