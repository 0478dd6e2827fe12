//! `vegdb refresh`: apply the upstream events newer than the current generation's
//! `last_event_ids` as a new generation, copy-on-write.
//!
//! The events only name ids; the current state of each named sequence or object is what the
//! source holds under `veglenkesekvenser/` and `vegobjekter/<typeId>/` (a URL source fetches
//! exactly those with `?ider=`, see `download.rs`). A named id the source does not hold was
//! removed upstream. Named sequences (and the sequences under a changed 915 Vegsystem, 916
//! Strekning or 920 Sideanleggsdel) are mapped to network rows again with the import's mapping; objects are mapped
//! with the import's mapping and put into the writer's working state (`changeset::working`),
//! so only the chunk files an edit falls in are rewritten and the others are shared by hard
//! link. Removed objects are closed (listed as deleted, so `/endringer` reports them); an
//! object whose every sequence disappeared is closed too and counted, one that lost some of
//! its placements keeps the others (counted).
//!
//! History: a changed object whose new version is newer than the stored one closes the stored
//! version (its own sluttdato kept, else closed at the new version's startdato) into the type's
//! history; a removed object's last version goes there closed at its sluttdato (else the
//! event's day). A changed sequence's closed veglenker are mapped into the network's history
//! (replacing its rows there); a removed sequence's rows go there closed at the event's day.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::time::Instant;

mod closing;

use super::events::{
    event_types, events_after, object_stream, read_object_events, read_sequence_events,
    SEQUENCE_STREAM,
};
use super::network::NetworkBuilder;
use super::objects::OnNetwork;
use super::objects::TypeBuilder;
use super::roadref::{RoadRefs, SIDEANLEGGSDEL, STREKNING, VEGSYSTEM};
pub use super::summary::RefreshSummary;
use super::summary::Summary;
use super::uberiket::{LinePlacement, Placement, RoadObject, Sequence, Validity, Value};
use super::{date_days, source, OBJECTS_DIR, SEQUENCES_DIR};
use crate::catalog::{Catalog, ValueKind};
use crate::changeset::working::{value_at, Merged, ObjectState, Working};
use crate::error::{EngineError, Result};
use crate::generation::Generation;
use crate::snapshot::builder::{Changes, Description, GenerationBuilder};
use crate::snapshot::columns::{lane_codes, Days, ObjectTable, RoadNetwork, DIRECTION_AGAINST};
use crate::snapshot::manifest::{MadeBy, Manifest, Provenance};
use crate::snapshot::parquet_write::CHUNK_ROWS;
use crate::snapshot::store::DataDir;
use crate::value::Value as Stored;

fn event_time(text: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp())
        .unwrap_or_else(|_| chrono::Utc::now().timestamp())
}

/// A stored row as the upstream shape, enough for road references (egenskaper by catalogue
/// storage, line placements).
fn road_object(catalog: &Catalog, table: &ObjectTable, row: usize) -> RoadObject {
    let ty = catalog.object_type(table.type_id);
    let mut egenskaper = BTreeMap::new();
    for col in &table.properties {
        let kind = ty
            .and_then(|t| t.property(col.property_id))
            .map(|p| p.storage());
        let v = match (value_at(&col.values, row), kind) {
            (Some(Stored::Int(v)), Some(ValueKind::Enum)) => Value::EnumEgenskap { verdi: v },
            (Some(Stored::Int(v)), _) => Value::HeltallEgenskap { verdi: v },
            (Some(Stored::Float(v)), _) => Value::FlyttallEgenskap { verdi: v },
            // a number the catalogue calls text was stored as its decimal text by the import
            (Some(Stored::Text(t)), _) => match t.parse::<i64>() {
                Ok(v) => Value::HeltallEgenskap { verdi: v },
                Err(_) => Value::TekstEgenskap { verdi: t },
            },
            _ => continue,
        };
        egenskaper.insert(col.property_id.to_string(), v);
    }
    let linjer = table
        .placements(row)
        .map(|p| LinePlacement {
            id: table.loc_link[p],
            startposisjon: table.loc_from[p],
            sluttposisjon: table.loc_to[p],
            retning: Some(
                if table.loc_direction[p] == DIRECTION_AGAINST {
                    "MOT"
                } else {
                    "MED"
                }
                .into(),
            ),
            kjorefelt: lane_codes(&table.loc_lanes[p]).map(String::from).collect(),
        })
        .collect();
    RoadObject {
        id: table.id[row],
        versjon: table.version[row],
        type_id: table.type_id,
        gyldighetsperiode: Some(Validity {
            startdato: String::new(),
            sluttdato: None,
        }),
        egenskaper,
        barn: BTreeMap::new(),
        stedfesting: Some(Placement::StedfestingLinjer { linjer }),
        sist_endret: String::new(),
    }
}

fn sequences_of(o: &RoadObject) -> Vec<u64> {
    match &o.stedfesting {
        Some(Placement::StedfestingLinjer { linjer }) => linjer.iter().map(|l| l.id).collect(),
        Some(Placement::StedfestingPunkter { punkter }) => punkter.iter().map(|p| p.id).collect(),
        Some(Placement::StedfestingSving {
            startpunkt,
            sluttpunkt,
        }) => vec![startpunkt.id, sluttpunkt.id],
        _ => Vec::new(),
    }
}

/// Length in metres of a link of `net` (from its rows: length over the position span).
fn base_length(net: &RoadNetwork, link: u64) -> Option<f64> {
    let rows = net.rows_of_link(link);
    let (mut m, mut span) = (0.0, 0.0);
    for r in rows {
        m += net.length_m[r];
        span += net.to_pos[r] - net.from_pos[r];
    }
    (span > 0.0).then(|| m / span)
}

/// The base network without the rows of `replaced` links, merged with `fresh` (rows of
/// those links mapped again), in (link, from) order.
fn merge_network(base: &RoadNetwork, replaced: &HashSet<u64>, fresh: &RoadNetwork) -> RoadNetwork {
    let mut out = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    let (mut i, mut j) = (0usize, 0usize);
    while i < base.len() || j < fresh.len() {
        let take_base = j >= fresh.len()
            || (i < base.len()
                && (base.link_id[i], base.from_pos[i]) <= (fresh.link_id[j], fresh.from_pos[j]));
        if take_base {
            if !replaced.contains(&base.link_id[i]) {
                out.append_rows(base, i..i + 1);
            }
            i += 1;
        } else {
            out.append_rows(fresh, j..j + 1);
            j += 1;
        }
    }
    out.build_link_index();
    out
}

/// One change of an object: its new form as a one-row table, or its removal (at the event's
/// time; `end`: the sluttdato the source gives it, if any).
enum Change {
    Put(Box<ObjectTable>),
    Remove { at: i64, end: Option<Days> },
}

/// Apply the events `source` holds (newer than the current generation's last event ids) to
/// the current generation of `data` and publish the result as the next generation.
pub fn refresh_dir(source: &Path, data: &DataDir, origin: &str) -> Result<RefreshSummary> {
    let started = Instant::now();
    if !source.is_dir() {
        return Err(EngineError::input(format!(
            "--source {} is not a directory",
            source.display()
        )));
    }
    if data.current()?.is_none() {
        return Err(EngineError::input(
            "no generation to refresh: run vegdb import first",
        ));
    }
    // Begin first: a directory a server owns hands the generation to that server, whose
    // CURRENT (`staging.base`) then stays put until this one is published on top of it.
    let staging = data.begin(data.next_id()?)?;
    let Some(current) = staging.base else {
        return Err(EngineError::input(
            "no generation to refresh: run vegdb import first",
        ));
    };
    let (base, _) = Generation::load(&data.generation_dir(current), &|_| {})?;
    let mut summary = RefreshSummary {
        parent: base.id,
        ..Default::default()
    };
    let mut mapping = Summary::default();
    let mut last = base.manifest.last_event_ids.clone();

    // 1. the events newer than the recorded ids: which ids they name
    let named = named_by_events(source, &base, &mut last, &mut summary)?;
    if named.objects.is_empty() && named.sequences.is_empty() {
        // nothing new upstream: the current generation stays (ids of streams that only had
        // events not about their elements are not worth a generation either)
        summary.generation = base.id;
        summary.last_event_ids = base.manifest.last_event_ids.clone();
        summary.seconds = started.elapsed().as_secs_f64();
        return Ok(summary);
    }
    // 2. the current state of the named objects (newest version of each)
    let fetched = fetch_objects(source, &named.objects)?;
    // 3. sequences to map again: those named, and those under a changed 915/916/920
    let rederived = sequences_to_map(source, &base, &named, &fetched, &mut summary)?;
    // 4. road references over the sequences mapped again
    let remapped = remap_network(&base, &named, &fetched, &rederived, &mut mapping)?;
    let (network, network_history) = match remapped {
        Some((net, closed)) => {
            summary.sequences_changed = rederived.sequences.len();
            let history = closing::network_history(&base, &named, &rederived, closed, &mut summary);
            (Some(net), history)
        }
        None => (None, None),
    };
    let net: &RoadNetwork = network.as_ref().unwrap_or(&base.network);
    let links: HashSet<u64> = net.link_id.iter().copied().collect();
    let lost: HashSet<u64> = base
        .network
        .link_id
        .iter()
        .copied()
        .filter(|l| !links.contains(l))
        .collect();
    summary.sequences_removed = lost.len();
    // 5. object changes, per type
    let mut changes = object_changes(&base, &named, &fetched, &links, &mut mapping, &mut summary);
    if !lost.is_empty() {
        lost_placements(&base, &named, &lost, &mut changes, &mut summary);
    }
    // 6. into the writer's working state
    let (tables, deleted) = materialise(&base, &changes, &mut summary)?;
    let history = closing::closed_versions(&base, &changes, &mut summary)?;

    // 7. publish: touched chunks rewritten, everything else shared
    summary.last_event_ids = last.clone();
    let changes = Changes {
        tables: tables.iter().map(|(&t, m)| (t, m.touched())).collect(),
        network: network.as_ref(),
        deleted: deleted.as_ref(),
        history: history.iter().map(|(&t, h)| (t, h)).collect(),
        network_history: network_history.as_ref(),
        chunk_rows: CHUNK_ROWS,
    };
    let description = Description {
        origin: origin.to_string(),
        provenance: Provenance::new(MadeBy::Refreshed, base.manifest.provenance.source.clone()),
        last_event_ids: last,
        ..Description::default()
    };
    let id = publish(data, staging, &base, changes, description, &mut summary)?;
    summary.generation = id;
    for (reason, n) in mapping.skipped {
        *summary.skipped.entry(reason).or_default() += n;
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The ids the new events name, with the time of their newest event.
struct Named {
    /// type -> object id -> time
    objects: BTreeMap<u32, BTreeMap<u64, i64>>,
    /// sequence id -> time
    sequences: BTreeMap<u64, i64>,
}

/// Step 1: read the events newer than `last` of every tracked stream; `last` moves to the
/// newest event id of each.
fn named_by_events(
    source: &Path,
    base: &Generation,
    last: &mut BTreeMap<String, u64>,
    summary: &mut RefreshSummary,
) -> Result<Named> {
    // the network's reference types are followed even when the generation holds none yet
    let mut tracked: BTreeSet<u32> = base.objects.keys().copied().collect();
    tracked.extend([VEGSYSTEM, STREKNING, SIDEANLEGGSDEL]);
    for k in last.keys() {
        if let Some(t) = k
            .strip_prefix(&format!("{OBJECTS_DIR}/"))
            .and_then(|t| t.parse().ok())
        {
            tracked.insert(t);
        }
    }
    for t in event_types(source)? {
        if !tracked.contains(&t) {
            summary.note(format!(
                "type {t}: events for a type the generation does not hold (not applied; import the type first)"
            ));
        }
    }
    let mut named_objects: BTreeMap<u32, BTreeMap<u64, i64>> = BTreeMap::new();
    for &t in &tracked {
        let stream = object_stream(t);
        let after = last.get(&stream).copied();
        let events = events_after(&stream, after, read_object_events(source, t)?)?;
        if events.is_empty() {
            continue;
        }
        if after.is_none() {
            summary.note(format!(
                "{stream}: no last event id recorded, every event in the source applied"
            ));
        }
        for e in &events {
            if e.vegobjekt_type_id != t {
                summary.note(format!(
                    "{stream}: event about an object of type {} (not applied)",
                    e.vegobjekt_type_id
                ));
                continue;
            }
            named_objects
                .entry(t)
                .or_default()
                .insert(e.vegobjekt_id, event_time(&e.tidspunkt));
        }
        summary.events.insert(stream.clone(), events.len());
        let max = events.iter().map(|e| e.hendelse_id).max().unwrap_or(0);
        last.insert(stream, max.max(after.unwrap_or(0)));
    }
    let named_sequences = named_sequences(source, last, summary)?;
    Ok(Named {
        objects: named_objects,
        sequences: named_sequences,
    })
}

/// The sequences named by the network's new events (`last` moves on).
fn named_sequences(
    source: &Path,
    last: &mut BTreeMap<String, u64>,
    summary: &mut RefreshSummary,
) -> Result<BTreeMap<u64, i64>> {
    let mut named_sequences: BTreeMap<u64, i64> = BTreeMap::new();
    let after = last.get(SEQUENCE_STREAM).copied();
    let events = events_after(SEQUENCE_STREAM, after, read_sequence_events(source)?)?;
    if events.is_empty() {
        return Ok(named_sequences);
    }
    if after.is_none() {
        summary.note(format!(
            "{SEQUENCE_STREAM}: no last event id recorded, every event in the source applied"
        ));
    }
    for e in &events {
        if e.hendelse_type.starts_with("Veglenkesekvens") {
            named_sequences.insert(e.nettelement_id, event_time(&e.tidspunkt));
        } else {
            summary.note(format!(
                "{}: not about a veglenkesekvens (nodes are not stored; sequences carry their node ids)",
                e.hendelse_type
            ));
        }
    }
    summary
        .events
        .insert(SEQUENCE_STREAM.to_string(), events.len());
    let max = events.iter().map(|e| e.hendelse_id).max().unwrap_or(0);
    last.insert(SEQUENCE_STREAM.to_string(), max.max(after.unwrap_or(0)));
    Ok(named_sequences)
}

/// Objects fetched from the source: type -> id -> newest version.
type Fetched = BTreeMap<u32, BTreeMap<u64, RoadObject>>;

/// Step 2: the current state of the named objects (newest version of each).
fn fetch_objects(source: &Path, named: &BTreeMap<u32, BTreeMap<u64, i64>>) -> Result<Fetched> {
    let mut fetched: Fetched = BTreeMap::new();
    for (&t, named) in named {
        let got = fetched.entry(t).or_default();
        source::for_each_record(
            &source.join(OBJECTS_DIR).join(t.to_string()),
            |o: RoadObject| {
                if named.contains_key(&o.id)
                    && got.get(&o.id).is_none_or(|old| old.versjon < o.versjon)
                {
                    got.insert(o.id, o);
                }
                Ok(())
            },
        )?;
    }
    Ok(fetched)
}

/// The sequences mapped again: their current state, and those named but gone.
struct Rederived {
    sequences: BTreeMap<u64, Sequence>,
    removed: BTreeSet<u64>,
}

/// Step 3: the sequences to map again (those named, and those under a changed 915/916/920),
/// read from the source.
fn sequences_to_map(
    source: &Path,
    base: &Generation,
    named: &Named,
    fetched: &Fetched,
    summary: &mut RefreshSummary,
) -> Result<Rederived> {
    let mut rederive: BTreeSet<u64> = named.sequences.keys().copied().collect();
    let mut road_system_sequences: BTreeSet<u64> = BTreeSet::new();
    for t in [VEGSYSTEM, STREKNING, SIDEANLEGGSDEL] {
        let Some(named) = named.objects.get(&t) else {
            continue;
        };
        for &id in named.keys() {
            if let Some(td) = base.objects.get(&t) {
                if let Some(row) = td.table.row_of(id) {
                    road_system_sequences
                        .extend(td.table.placements(row).map(|p| td.table.loc_link[p]));
                }
            }
            if let Some(o) = fetched.get(&t).and_then(|f| f.get(&id)) {
                road_system_sequences.extend(sequences_of(o));
            }
        }
    }
    rederive.extend(road_system_sequences.iter().copied());
    let mut sequences: BTreeMap<u64, Sequence> = BTreeMap::new();
    if !rederive.is_empty() {
        source::for_each_record(&source.join(SEQUENCES_DIR), |s: Sequence| {
            if rederive.contains(&s.id) {
                sequences.insert(s.id, s);
            }
            Ok(())
        })?;
    }
    let removed: BTreeSet<u64> = named
        .sequences
        .keys()
        .filter(|id| !sequences.contains_key(id))
        .copied()
        .collect();
    for id in &road_system_sequences {
        if !sequences.contains_key(id) && !named.sequences.contains_key(id) {
            summary.note("veglenkesekvens under a changed 915/916/920 not in the source: its road references kept as they were");
        }
    }
    Ok(Rederived { sequences, removed })
}

/// Step 4: the network with the rederived sequences mapped again and the rows of their
/// closed veglenker (None when none changed), their road references from the stored 915/916
/// objects (the changed ones in their new form).
fn remap_network(
    base: &Generation,
    named: &Named,
    fetched: &Fetched,
    rederived: &Rederived,
    mapping: &mut Summary,
) -> Result<Option<(RoadNetwork, RoadNetwork)>> {
    let sequences = &rederived.sequences;
    if sequences.is_empty() && rederived.removed.is_empty() {
        return Ok(None);
    }
    if !sequences.is_empty() && !base.objects.contains_key(&VEGSYSTEM) {
        return Err(EngineError::input("the generation holds no 915 Vegsystem objects, so changed veglenkesekvenser cannot get road references: import with --types including 915,916 (or all-known)",
        ));
    }
    let refs = road_refs(base, named, fetched, sequences, mapping);
    let mut builder = NetworkBuilder::default();
    for placements in &refs.sections {
        for (seq, _, _) in placements {
            if !sequences.contains_key(seq) {
                if let Some(len) = base_length(&base.network, *seq) {
                    builder.set_length(*seq, len);
                }
            }
        }
    }
    for s in sequences.values() {
        builder.add(s, &refs, base.areas, mapping);
    }
    let built = builder.finish(&refs, mapping);
    let replaced: HashSet<u64> = sequences
        .keys()
        .chain(rederived.removed.iter())
        .copied()
        .collect();
    Ok(Some((
        merge_network(&base.network, &replaced, &built.network),
        built.history,
    )))
}

/// Road references of the 915/916 objects on `sequences`: the stored ones not named by an
/// event, and the fetched ones.
fn road_refs(
    base: &Generation,
    named: &Named,
    fetched: &Fetched,
    sequences: &BTreeMap<u64, Sequence>,
    mapping: &mut Summary,
) -> RoadRefs {
    let catalog = base.catalog;
    let mut refs = RoadRefs::default();
    let on_rederived = |o: &RoadObject| sequences_of(o).iter().any(|s| sequences.contains_key(s));
    for t in [VEGSYSTEM, STREKNING, SIDEANLEGGSDEL] {
        let named = named.objects.get(&t);
        let mut add = |o: &RoadObject, m: &mut Summary| {
            if t == VEGSYSTEM {
                refs.add(catalog, o, m);
            } else if t == STREKNING {
                refs.add_section(catalog, o, m);
            } else {
                refs.add_side_facility(catalog, o, m);
            }
        };
        if let Some(td) = base.objects.get(&t) {
            for row in 0..td.table.len() {
                if named.is_some_and(|n| n.contains_key(&td.table.id[row])) {
                    continue;
                }
                let on = td
                    .table
                    .placements(row)
                    .any(|p| sequences.contains_key(&td.table.loc_link[p]));
                if on {
                    add(&road_object(catalog, &td.table, row), mapping);
                }
            }
        }
        if let Some(f) = fetched.get(&t) {
            for o in f.values().filter(|o| on_rederived(o)) {
                add(o, mapping);
            }
        }
    }
    refs
}

/// Changes per type: object id -> change.
type ObjectChanges = BTreeMap<u32, BTreeMap<u64, Change>>;

/// Step 5: the named objects mapped with the import's mapping onto `links`: put when the
/// source holds them, removed otherwise.
fn object_changes(
    base: &Generation,
    named: &Named,
    fetched: &Fetched,
    links: &HashSet<u64>,
    mapping: &mut Summary,
    summary: &mut RefreshSummary,
) -> ObjectChanges {
    let mut changes: ObjectChanges = BTreeMap::new();
    for (&t, named) in &named.objects {
        let Some(ty) = base.catalog.object_type(t) else {
            summary.note(format!("type {t}: object type not in the catalogue"));
            continue;
        };
        let mut tb = TypeBuilder::new(ty);
        let on = OnNetwork {
            current: links,
            any: links,
        };
        for o in fetched.get(&t).into_iter().flat_map(|f| f.values()) {
            tb.add(o.clone(), on, mapping);
        }
        let fresh = tb.finish(mapping).current;
        let c = changes.entry(t).or_default();
        for (&id, &at) in named {
            match fresh.row_of(id) {
                Some(r) => {
                    c.insert(id, Change::Put(Box::new(fresh.slice(r..r + 1))));
                }
                None => {
                    let given = fetched.get(&t).and_then(|f| f.get(&id));
                    if given.is_none() {
                        summary.note(format!(
                            "type {t}: object named by an event and absent from the source: removed"
                        ));
                    }
                    let end = given
                        .and_then(|o| o.gyldighetsperiode.as_ref())
                        .and_then(|v| v.sluttdato.as_deref())
                        .and_then(date_days);
                    c.insert(id, Change::Remove { at, end });
                }
            }
        }
    }
    changes
}

/// Step 5, continued: stored objects on `lost` sequences (not changed otherwise) lose those
/// placements, or are removed when none is left.
fn lost_placements(
    base: &Generation,
    named: &Named,
    lost: &HashSet<u64>,
    changes: &mut ObjectChanges,
    summary: &mut RefreshSummary,
) {
    let now = chrono::Utc::now().timestamp();
    for (&t, td) in &base.objects {
        let table = &td.table;
        for row in 0..table.len() {
            let id = table.id[row];
            let on_lost = table
                .placements(row)
                .any(|p| lost.contains(&table.loc_link[p]));
            if !on_lost || changes.get(&t).is_some_and(|c| c.contains_key(&id)) {
                continue;
            }
            let at = table
                .placements(row)
                .filter_map(|p| named.sequences.get(&table.loc_link[p]).copied())
                .max()
                .unwrap_or(now);
            let mut one = table.slice(row..row + 1);
            let keep: Vec<usize> = (0..one.loc_link.len())
                .filter(|&p| !lost.contains(&one.loc_link[p]))
                .collect();
            let c = changes.entry(t).or_default();
            if keep.is_empty() {
                summary.note(format!(
                    "type {t}: object removed because every veglenkesekvens it lay on disappeared"
                ));
                c.insert(id, Change::Remove { at, end: None });
                continue;
            }
            summary.note(format!(
                "type {t}: placements on a disappeared veglenkesekvens dropped (object kept)"
            ));
            one.loc_link = keep.iter().map(|&p| one.loc_link[p]).collect();
            one.loc_from = keep.iter().map(|&p| one.loc_from[p]).collect();
            one.loc_to = keep.iter().map(|&p| one.loc_to[p]).collect();
            one.loc_direction = keep.iter().map(|&p| one.loc_direction[p]).collect();
            one.loc_lanes = keep.iter().map(|&p| one.loc_lanes[p].clone()).collect();
            one.loc_offsets = vec![0, keep.len() as u32];
            // changed now (same version: upstream did not change the object itself)
            one.last_modified = vec![at];
            c.insert(id, Change::Put(Box::new(one)));
        }
    }
}

/// Step 6: the changes in the writer's working state, materialised as new tables and the
/// deleted list; a type where a created id sorts before existing ones (the working state
/// appends new ids) is merged here by slices instead.
#[allow(clippy::type_complexity)]
fn materialise(
    base: &Generation,
    changes: &ObjectChanges,
    summary: &mut RefreshSummary,
) -> Result<(
    BTreeMap<u32, Merged>,
    Option<crate::snapshot::columns::DeletedTable>,
)> {
    let mut work = Working::new(base);
    let mut by_slices: BTreeMap<u32, Merged> = BTreeMap::new();
    for (&t, c) in changes {
        let empty = ObjectTable::new(t);
        let table = base.objects.get(&t).map(|d| &*d.table).unwrap_or(&empty);
        let last_id = table.id.last().copied().unwrap_or(0);
        let out_of_order = c.iter().any(|(id, ch)| {
            matches!(ch, Change::Put(_)) && table.row_of(*id).is_none() && *id < last_id
        });
        for (&id, ch) in c {
            let existed = table.row_of(id);
            match ch {
                Change::Put(one) => {
                    let entry = if existed.is_some() {
                        &mut summary.objects_changed
                    } else {
                        &mut summary.objects_created
                    };
                    *entry.entry(t).or_default() += 1;
                    if !out_of_order {
                        work.put(ObjectState::from_row(one, 0));
                    }
                }
                Change::Remove { at, .. } => {
                    if let Some(row) = existed {
                        *summary.objects_removed.entry(t).or_default() += 1;
                        work.close(&ObjectState::from_row(table, row), *at);
                    }
                }
            }
        }
        if out_of_order {
            by_slices.insert(t, merge_by_slices(table, c)?);
        }
    }
    let (mut tables, deleted) = work.materialise()?;
    tables.extend(by_slices);
    Ok((tables, deleted))
}

/// A type's new table from base slices and the changes' one-row tables (ids ascending).
fn merge_by_slices(base: &ObjectTable, changes: &BTreeMap<u64, Change>) -> Result<Merged> {
    let mut parts: Vec<ObjectTable> = Vec::new();
    let mut row = 0usize;
    for (&id, ch) in changes {
        let at = base.id.partition_point(|&x| x < id);
        if at > row {
            parts.push(base.slice(row..at));
        }
        row = if base.id.get(at) == Some(&id) {
            at + 1
        } else {
            at
        };
        if let Change::Put(one) = ch {
            parts.push(ObjectTable::clone(one));
        }
    }
    if base.len() > row {
        parts.push(base.slice(row..base.len()));
    }
    let table = if parts.is_empty() {
        ObjectTable::new(base.type_id)
    } else {
        ObjectTable::concat(base.type_id, parts)
            .map_err(|e| EngineError::Internal(e.to_string()))?
    };
    Ok(Merged {
        table,
        changes: None,
        edited_ids: changes.keys().copied().collect(),
    })
}

/// Publish the refreshed generation: the network when it changed, the chunks of touched types
/// that an edit falls in and the deleted list when it grew are written; every other file of
/// the base is shared. Returns the new generation's id.
fn publish(
    data: &DataDir,
    staging: crate::snapshot::store::Staging,
    base: &Generation,
    changes: Changes,
    description: Description,
    summary: &mut RefreshSummary,
) -> Result<u64> {
    let mut builder = GenerationBuilder::derive(staging, base.as_parent());
    let layout = builder.write_changes(&changes)?;
    summary.files_shared += layout.shared;
    summary.files_written += layout.written;
    Ok(builder.publish(data, description)?.id)
}

/// The sequences under each stored 915 Vegsystem, 916 Strekning and 920 Sideanleggsdel object
/// of the generation in `dir` (object id -> sequence ids), read from their files alone: a URL
/// refresh fetches these sequences too when such an object changes, since their road
/// references (and side-facility marks) change with it.
pub fn road_system_sequences(dir: &Path) -> Result<std::collections::HashMap<u64, Vec<u64>>> {
    let manifest = Manifest::read(dir)?;
    let mut out = std::collections::HashMap::new();
    for f in &manifest.files {
        if !matches!(f.type_id, Some(VEGSYSTEM | STREKNING | SIDEANLEGGSDEL)) {
            continue;
        }
        let t = crate::snapshot::parquet_read::read_objects(
            &dir.join(&f.path),
            f.type_id.unwrap_or(0),
        )?;
        for row in 0..t.len() {
            out.insert(
                t.id[row],
                t.placements(row).map(|p| t.loc_link[p]).collect(),
            );
        }
    }
    Ok(out)
}
