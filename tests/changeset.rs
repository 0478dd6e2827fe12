//! The write engine against brute-force oracles: merging edits into a type's table, and
//! updating a type's bitmap index incrementally, must equal rebuilding from scratch.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use vegdb::changeset::working::{Found, ObjectState, Working};
use vegdb::generate::values::Value;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::index::bitmaps::TypeIndex;

#[test]
fn merged_tables_and_incremental_indexes_equal_a_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 3, tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let links: Vec<u64> = g.network.link_id.clone();
    for round in 0..12 {
        let mut work = Working::new(&g);
        // expected current objects per touched type: id -> state (None = removed)
        let mut expected: BTreeMap<u32, BTreeMap<u64, Option<ObjectState>>> = BTreeMap::new();
        let types: Vec<u32> = g.objects.keys().copied().take(6).collect();
        let allow_removals = round % 3 == 0;
        for _ in 0..rng.random_range(1..40) {
            let t = types[rng.random_range(0..types.len())];
            let table = &g.objects[&t].table;
            let action = rng.random_range(0..if allow_removals { 3 } else { 2 });
            let mut o = if action < 2 && !table.is_empty() && rng.random_bool(0.5) {
                let row = rng.random_range(0..table.len());
                match work.find(table.id[row]) {
                    Found::Current(o) => o,
                    _ => continue,
                }
            } else if !table.is_empty() && action == 2 {
                let row = rng.random_range(0..table.len());
                let Found::Current(o) = work.find(table.id[row]) else {
                    continue;
                };
                work.close(&o, 1_800_000_000);
                expected.entry(t).or_default().insert(o.id, None);
                continue;
            } else {
                ObjectState::from_row(table, 0)
            };
            if o.id == table.id[0] && rng.random_bool(0.7) {
                o.id = work.allocate_id();
            }
            o.version += 1;
            o.last_modified = 1_800_000_000 + round;
            // move it somewhere else and change a value
            let link = links[rng.random_range(0..links.len())];
            let p = rng.random_range(0.0..1.0);
            o.placements = vec![vegdb::changeset::working::Placement {
                link_id: link,
                from: p,
                to: p,
                against: false,
                lanes: if rng.random_bool(0.5) {
                    "1#2".into()
                } else {
                    Box::default()
                },
            }];
            if let Some((&pid, v)) = o.values.iter().next() {
                let v = match v {
                    Value::Int(i) => Value::Int(*i),
                    Value::Float(f) => Value::Float(f + 1.0),
                    Value::Text(s) => Value::Text(format!("{s}!")),
                };
                o.values.insert(pid, v);
            }
            expected.entry(t).or_default().insert(o.id, Some(o.clone()));
            work.put(o);
        }
        let (tables, _) = work.materialise().unwrap();
        for (t, merged) in &tables {
            let base = &g.objects[t].table;
            let want = &expected[t];
            // oracle: base rows in id order with edits applied, then new ids
            let mut oracle: BTreeMap<u64, ObjectState> = (0..base.len())
                .map(|r| (base.id[r], ObjectState::from_row(base, r)))
                .collect();
            for (id, o) in want {
                match o {
                    Some(o) => oracle.insert(*id, o.clone()),
                    None => oracle.remove(id),
                };
            }
            let got: Vec<ObjectState> = (0..merged.table.len())
                .map(|r| ObjectState::from_row(&merged.table, r))
                .collect();
            let oracle: Vec<ObjectState> = oracle.into_values().collect();
            assert_eq!(got.len(), oracle.len(), "type {t} round {round}");
            for (a, b) in got.iter().zip(&oracle) {
                assert_eq!(a, b, "type {t} round {round}");
            }
            assert_eq!(merged.changes.is_none(), want.values().any(|o| o.is_none()));
            if let Some(changes) = &merged.changes {
                let ty = g.catalog.object_type(*t);
                let inc = g.objects[t].index().update(
                    base,
                    &merged.table,
                    changes,
                    ty,
                    &g.network,
                    g.areas,
                );
                let full = TypeIndex::build(&merged.table, ty, &g.network, g.areas);
                fn norm<K: std::fmt::Debug + Copy>(
                    m: &vegdb::util::FastMap<K, roaring::RoaringBitmap>,
                ) -> Vec<(String, roaring::RoaringBitmap)> {
                    let mut v: Vec<_> = m
                        .iter()
                        .filter(|(_, b)| !b.is_empty())
                        .map(|(k, b)| (format!("{k:?}"), b.clone()))
                        .collect();
                    v.sort_by(|a, b| a.0.cmp(&b.0));
                    v
                }
                assert_eq!(norm(&inc.areas), norm(&full.areas), "areas, type {t}");
                assert_eq!(norm(&inc.enums), norm(&full.enums), "enums, type {t}");
                assert_eq!(inc.all, full.all, "every row, type {t}");
                assert_eq!(full.all.len(), merged.table.len() as u64);
                assert_eq!(inc.length_m.len(), full.length_m.len());
                for (a, b) in inc.length_m.iter().zip(&full.length_m) {
                    assert!((a - b).abs() < 1e-6);
                }
                assert!((inc.total_length_m - full.total_length_m).abs() < 1e-3);
                for (k, v) in &full.area_length_m {
                    assert!(
                        (inc.area_length_m.get(k).copied().unwrap_or(0.0) - v).abs() < 1e-3,
                        "{k:?}"
                    );
                }
            }
        }
    }
}

/// Publishing rewrites exactly the chunk files an edit falls in, and what is on disk reloads to
/// what the writer swapped in.
#[test]
fn only_touched_chunks_are_rewritten_and_generations_reload_identically() {
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;
    use vegdb::changeset::journal::{Progress, Record};
    use vegdb::changeset::writer::Writer;
    use vegdb::generation::GenerationStore;
    use vegdb::snapshot::manifest::Manifest;
    use vegdb::snapshot::store::DataDir;

    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 4, tmp.path()).unwrap();
    let data = DataDir::open(tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let n = &g.network;
    let link = n.plain_link_rows().next().map(|r| n.link_id[r]).unwrap();
    let ids95 = g.objects[&95].table.id.clone();
    assert!(ids95.len() > 300, "enough Skiltpunkt for several chunks");
    let store = Arc::new(GenerationStore::new(g));
    let writer = Writer::start_with(data.clone(), store.clone(), 64).unwrap();
    let run = |cs: serde_json::Value| {
        let cs = serde_json::from_value(cs).unwrap();
        let r = writer
            .journal
            .register(
                cs,
                Record::new(uuid::Uuid::new_v4().to_string(), "t".into(), None, 1),
            )
            .unwrap();
        writer.start_changeset(&r.id).unwrap();
        loop {
            let p = writer.journal.get(&r.id).unwrap().progress;
            if p.is_final() {
                assert_eq!(p, Progress::DoneAndVisible);
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let chunks = |gen: u64| -> Vec<(String, String)> {
        let m = Manifest::read(&data.generation_dir(gen)).unwrap();
        m.files
            .into_iter()
            .filter(|f| f.type_id == Some(95))
            .map(|f| (f.path, f.sha256))
            .collect()
    };
    let update = |id: u64, version: u32| {
        json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38", "delvisOppdater": {"vegObjekter": [
            {"typeId": 95, "nvdbId": id, "versjon": version, "egenskaper": [{"typeId": 10854, "verdi": ["endret"], "operasjon": "oppdater"}]}]}})
    };
    let version_of = |id: u64| {
        let g = store.current();
        let t = &g.objects[&95].table;
        t.version[t.row_of(id).unwrap()]
    };
    // first write: the single chunk of 95 is split into 64-row chunks
    run(update(ids95[0], version_of(ids95[0])));
    let split = chunks(store.current().id);
    assert_eq!(split.len(), ids95.len().div_ceil(64), "{split:?}");
    // then: one object in the middle -> one chunk; an append -> the last chunk; a deletion -> one
    let mid = ids95[ids95.len() / 2];
    let cases = [
        update(mid, version_of(mid)),
        json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38", "registrer": {"vegObjekter": [
            {"typeId": 95, "tempId": "n", "egenskaper": [{"typeId": 1876, "enum": [2868]}],
             "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}}]}}),
        json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38", "slett": {"vegObjekter": [
            {"typeId": 95, "nvdbId": ids95[70], "versjon": version_of(ids95[70]), "kaskadeSletting": "nei"}]}}),
    ];
    for cs in cases {
        let before: std::collections::HashSet<(String, String)> =
            chunks(store.current().id).into_iter().collect();
        run(cs);
        let gen = store.current();
        let after = chunks(gen.id);
        let changed = after.iter().filter(|c| !before.contains(*c)).count();
        assert_eq!(changed, 1, "exactly one chunk rewritten: {after:?}");
        // the files reload into exactly what the writer swapped in
        let (disk, _) = Generation::load(&gen.dir, &|_| {}).unwrap();
        let (a, b) = (&disk.objects[&95].table, &gen.objects[&95].table);
        assert_eq!(a.len(), b.len());
        for r in 0..a.len() {
            assert_eq!(ObjectState::from_row(a, r), ObjectState::from_row(b, r));
        }
        assert_eq!(disk.object_count(), gen.object_count());
        assert_eq!(disk.deleted.id, gen.deleted.id);
    }
}

/// Readers see a changeset whole or not at all: while changesets that register a Skiltpunkt
/// (95) with its Skiltplate (96) are applied, every generation a reader takes has as many new
/// plates as new sign points, each plate with its mother.
#[test]
fn readers_never_see_half_a_changeset() {
    use serde_json::json;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    use vegdb::changeset::journal::{Progress, Record};
    use vegdb::changeset::writer::Writer;
    use vegdb::generation::GenerationStore;
    use vegdb::snapshot::store::DataDir;

    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 6, tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let n = &g.network;
    let link = n.plain_link_rows().next().map(|r| n.link_id[r]).unwrap();
    let count = |g: &Generation, t: u32| g.objects.get(&t).map_or(0, |d| d.table.len());
    let (base95, base96) = (count(&g, 95), count(&g, 96));
    let store = Arc::new(GenerationStore::new(g));
    let writer = Writer::start(DataDir::open(tmp.path()).unwrap(), store.clone()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !done.load(Ordering::SeqCst) {
                let g = store.current();
                let new95 = count(&g, 95) - base95;
                let new96 = count(&g, 96) - base96;
                assert_eq!(new95, new96, "generation {} is half-applied", g.id);
                let plates = &g.objects[&96].table;
                for row in base96..plates.len() {
                    assert!(
                        g.parents.contains_key(&plates.id[row]),
                        "a plate without its mother"
                    );
                }
                seen.insert(g.id);
            }
            seen.len()
        })
    };
    for k in 0..15 {
        let pairs: Vec<serde_json::Value> = (0..20)
            .flat_map(|i| {
                let (p, c) = (format!("p{i}"), format!("c{i}"));
                [
                    json!({"typeId": 95, "tempId": p, "egenskaper": [{"typeId": 1876, "enum": [2868]}],
                        "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]},
                        "assosiasjoner": [{"typeId": 96, "tempId": [c]}]}),
                    json!({"typeId": 96, "tempId": c, "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}}),
                ]
            })
            .collect();
        let cs = serde_json::from_value(
            json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
            "registrer": {"vegObjekter": pairs}}),
        )
        .unwrap();
        let r = writer
            .journal
            .register(cs, Record::new(format!("atomic-{k}"), "t".into(), None, 40))
            .unwrap();
        writer.start_changeset(&r.id).unwrap();
    }
    while !writer.journal.list().iter().all(|r| r.progress.is_final()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(writer
        .journal
        .list()
        .iter()
        .all(|r| r.progress == Progress::DoneAndVisible));
    // applied in start order: a later-started changeset never lands in an earlier generation
    let generations: Vec<u64> = (0..15)
        .map(|k| {
            writer
                .journal
                .get(&format!("atomic-{k}"))
                .unwrap()
                .generation
                .unwrap()
        })
        .collect();
    assert!(
        generations.windows(2).all(|w| w[0] <= w[1]),
        "{generations:?}"
    );
    done.store(true, Ordering::SeqCst);
    let generations_seen = reader.join().expect("the reader saw only whole changesets");
    assert!(generations_seen >= 2, "the reader saw the swaps");
    let g = store.current();
    assert_eq!(count(&g, 95) - base95, 15 * 20);
}

/// Run changesets through a writer, one after the other; the final state of each.
fn run_changesets(
    writer: &vegdb::changeset::writer::Writer,
    changesets: &[serde_json::Value],
) -> Vec<vegdb::changeset::journal::Progress> {
    use vegdb::changeset::journal::{Progress, Record};
    changesets
        .iter()
        .map(|cs| {
            let cs = serde_json::from_value(cs.clone()).unwrap();
            let r = writer
                .journal
                .register(
                    cs,
                    Record::new(uuid::Uuid::new_v4().to_string(), "t".into(), None, 1),
                )
                .unwrap();
            writer.start_changeset(&r.id).unwrap();
            loop {
                let p = writer.journal.get(&r.id).unwrap().progress;
                if p.is_final() || p == Progress::Waiting {
                    return p;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
        .collect()
}

/// `YYYY-MM-DD` of a day since 1970.
fn date_text(day: i32) -> String {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
    (epoch + chrono::Duration::days(day.into())).to_string()
}

/// Every closed version of type 95 with the processing time of versions the test wrote (above
/// `written_from` of object `id`) checked to be after `started` and blanked.
fn closed_versions(g: &Generation, id: u64, written_from: u32, started: i64) -> Vec<ObjectState> {
    let mut rows = history_rows(g, 95);
    for o in rows
        .iter_mut()
        .filter(|o| o.id == id && o.version > written_from)
    {
        assert!(o.last_modified >= started, "{o:?}");
        o.last_modified = 0;
    }
    rows
}

/// Every closed version of type `t`, in table order.
fn history_rows(g: &Generation, t: u32) -> Vec<ObjectState> {
    g.history.get(&t).map_or(Vec::new(), |h| {
        (0..h.len()).map(|r| ObjectState::from_row(h, r)).collect()
    })
}

/// The version of object `id` (type 95) in a generation's current table.
fn current_95(g: &Generation, id: u64) -> Option<ObjectState> {
    let t = &g.objects.get(&95)?.table;
    Some(ObjectState::from_row(t, t.row_of(id)?))
}

/// Three Skiltpunkt (95) whose current version began long enough ago and is open: to update,
/// to correct and to delete.
fn three_old_signs(g: &Generation, before: i32) -> [ObjectState; 3] {
    let t = &g.objects[&95].table;
    let picks: Vec<ObjectState> = (0..t.len())
        .filter(|&r| {
            t.start_date[r] < before && t.end_date[r] == vegdb::snapshot::columns::OPEN_END
        })
        .map(|r| ObjectState::from_row(t, r))
        .take(3)
        .collect();
    picks.try_into().unwrap()
}

/// The changesets of the history round trip: delvisOppdater, delvisKorriger and slett of
/// the three objects at `effect`, each setting Tilleggsinformasjon (10854) to a new text, then
/// a second delvisOppdater of the first object five days later.
fn history_changesets(objects: &[ObjectState; 3], effect: i32) -> Vec<serde_json::Value> {
    use serde_json::json;
    let [upd, cor, del] = objects;
    let day = date_text(effect);
    let text = |op: &str, o: &ObjectState, value: &str| {
        json!({"effektDato": day, "datakatalogversjon": "2.38", op: {"vegObjekter": [
            {"typeId": 95, "nvdbId": o.id, "versjon": o.version,
             "egenskaper": [{"typeId": 10854, "verdi": [value], "operasjon": "oppdater"}]}]}})
    };
    vec![
        text("delvisOppdater", upd, "oppdatert"),
        text("delvisKorriger", cor, "korrigert"),
        json!({"effektDato": day, "datakatalogversjon": "2.38", "slett": {"vegObjekter": [
            {"typeId": 95, "nvdbId": del.id, "versjon": del.version, "kaskadeSletting": "nei"}]}}),
        json!({"effektDato": date_text(effect + 5), "datakatalogversjon": "2.38", "delvisOppdater": {"vegObjekter": [
            {"typeId": 95, "nvdbId": upd.id, "versjon": upd.version + 1,
             "egenskaper": [{"typeId": 10854, "verdi": ["igjen"], "operasjon": "oppdater"}]}]}}),
    ]
}

/// The history of type 95 expected after the round trip: the old one, the updated object's
/// version n ended at effektDato and its version n+1 five days later, and the deleted
/// object's last version ended at effektDato, in (id, version) order.
fn expected_history(
    old: &[ObjectState],
    upd: &ObjectState,
    del: &ObjectState,
    effect: i32,
) -> Vec<ObjectState> {
    let ended = |o: &ObjectState, end: i32| ObjectState {
        end_date: end,
        ..o.clone()
    };
    let mut second = ended(upd, effect + 5);
    second.version += 1;
    second.start_date = effect;
    second.last_modified = 0; // the processing time: `closed_versions` blanks it
    second.values.insert(10854, Value::Text("oppdatert".into()));
    let mut expected = old.to_vec();
    expected.extend([ended(upd, effect), second, ended(del, effect)]);
    expected.sort_by_key(|o| (o.id, o.version));
    expected
}

/// The value of 10854 of object `id` in the view of `g` at `day` (None: no such object then;
/// Some(None): no value).
fn text_at(g: &Generation, day: i32, id: u64) -> Option<Option<Value>> {
    let view = g.at(day).unwrap();
    current_95(&view, id).map(|o| o.values.get(&10854).cloned())
}

/// The write path keeps history: an update ends the current version at effektDato (it moves to
/// the type's history) and the next version starts there; a correction rewrites the version in
/// place; a deletion ends the last version at effektDato. The generation as it was on a day
/// answers with the versions valid then, and the files reload (as after a restart) into the
/// same history.
#[test]
fn updates_and_deletions_end_versions_into_history() {
    use std::sync::Arc;
    use vegdb::changeset::journal::Progress;
    use vegdb::changeset::writer::Writer;
    use vegdb::generation::time::today;
    use vegdb::generation::GenerationStore;
    use vegdb::snapshot::store::DataDir;

    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 4, tmp.path()).unwrap();
    let data = DataDir::open(tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let effect = today() - 30;
    let [upd, cor, del] = three_old_signs(&g, effect - 10);
    let old_history = history_rows(&g, 95);
    let store = Arc::new(GenerationStore::new(g));
    let writer = Writer::start_with(data.clone(), store.clone(), 64).unwrap();
    let started = chrono::Utc::now().timestamp();
    let done = run_changesets(
        &writer,
        &history_changesets(&[upd.clone(), cor.clone(), del.clone()], effect),
    );
    assert!(
        done.iter().all(|p| *p == Progress::DoneAndVisible),
        "{done:?}"
    );
    let g = store.current();

    let expected = expected_history(&old_history, &upd, &del, effect);
    let history = |g: &Generation| closed_versions(g, upd.id, upd.version, started);
    assert_eq!(history(&g), expected);

    // the current row of the updated object is version n+2 from the second effektDato
    let now = current_95(&g, upd.id).unwrap();
    assert_eq!(
        (now.version, now.start_date, now.end_date),
        (upd.version + 2, effect + 5, upd.end_date)
    );
    let new_text = |s: &str| Some(Some(Value::Text(s.into())));
    assert_eq!(now.values.get(&10854), Some(&Value::Text("igjen".into())));
    let closed_before = |id: u64| old_history.iter().filter(|o| o.id == id).count();
    assert_eq!(g.versions(95, upd.id).len(), closed_before(upd.id) + 3);
    // the day before effektDato sees the old version, the day of it and later the new
    assert_eq!(
        text_at(&g, effect - 1, upd.id),
        Some(upd.values.get(&10854).cloned())
    );
    assert_eq!(text_at(&g, effect, upd.id), new_text("oppdatert"));
    assert_eq!(text_at(&g, effect + 1, upd.id), new_text("oppdatert"));
    assert_eq!(text_at(&g, effect + 5, upd.id), new_text("igjen"));
    // the correction left one version, its dates as they were, the new value on every day
    let corrected = current_95(&g, cor.id).unwrap();
    assert_eq!(
        (corrected.version, corrected.start_date, corrected.end_date),
        (cor.version, cor.start_date, cor.end_date)
    );
    assert_eq!(g.versions(95, cor.id).len(), closed_before(cor.id) + 1);
    assert_eq!(text_at(&g, effect - 1, cor.id), new_text("korrigert"));
    // the deleted object: gone today, readable the day before its end, listed as deleted
    assert_eq!(current_95(&g, del.id), None);
    assert_eq!(
        text_at(&g, effect - 1, del.id),
        Some(del.values.get(&10854).cloned())
    );
    assert_eq!(text_at(&g, effect, del.id), None);
    assert!(g.deleted.id.contains(&del.id));
    // updates are not deletions
    assert!(!g.deleted.id.contains(&upd.id));

    // what is on disk loads (as after a restart) into the same history and the same views
    let (disk, _) = Generation::load(&g.dir, &|_| {}).unwrap();
    assert_eq!(history_rows(&disk, 95), history_rows(&g, 95));
    assert_eq!(
        text_at(&disk, effect - 1, upd.id),
        text_at(&g, effect - 1, upd.id)
    );
    assert_eq!(
        text_at(&disk, effect + 1, upd.id),
        text_at(&g, effect + 1, upd.id)
    );
    assert_eq!(
        text_at(&disk, effect - 1, del.id),
        text_at(&g, effect - 1, del.id)
    );
}

/// Crash recovery: changesets the journal holds as started, with no generation published for
/// them, are applied again after a restart through the same path, so the generation derived
/// then has the same history (and is what its files reload into).
#[test]
fn changesets_replayed_after_a_restart_end_the_same_versions() {
    use std::sync::Arc;
    use vegdb::changeset::journal::{Journal, Progress, Record};
    use vegdb::changeset::writer::Writer;
    use vegdb::generation::time::today;
    use vegdb::generation::GenerationStore;
    use vegdb::snapshot::store::DataDir;

    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 4, tmp.path()).unwrap();
    let data = DataDir::open(tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let effect = today() - 30;
    let [upd, cor, del] = three_old_signs(&g, effect - 10);
    let old_history = history_rows(&g, 95);
    let started = chrono::Utc::now().timestamp();
    // started before the "crash": in the journal as BEHANDLES, nothing published
    {
        let journal = Journal::open(data.root.join("changesets")).unwrap();
        let changesets = history_changesets(&[upd.clone(), cor.clone(), del.clone()], effect);
        for (seq, cs) in changesets.into_iter().enumerate() {
            let id = format!("replay-{seq}");
            let r = Record::new(id.clone(), "t".into(), None, 1);
            journal
                .register(serde_json::from_value(cs).unwrap(), r)
                .unwrap();
            journal
                .transition(
                    &id,
                    |_| true,
                    |r| {
                        r.progress = Progress::Processing;
                        r.start_seq = Some(seq as u64 + 1);
                    },
                )
                .unwrap();
        }
    }
    let store = Arc::new(GenerationStore::new(g));
    let writer = Writer::start(data, store.clone()).unwrap();
    let settled = |p: Progress| p.is_final() || p == Progress::Waiting;
    while !writer.journal.list().iter().all(|r| settled(r.progress)) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let done: Vec<Progress> = writer.journal.list().iter().map(|r| r.progress).collect();
    assert!(
        done.iter().all(|p| *p == Progress::DoneAndVisible),
        "{done:?}"
    );
    let g = store.current();
    let expected = expected_history(&old_history, &upd, &del, effect);
    assert_eq!(closed_versions(&g, upd.id, upd.version, started), expected);
    assert_eq!(current_95(&g, upd.id).unwrap().start_date, effect + 5);
    assert_eq!(
        text_at(&g, effect - 1, del.id),
        Some(del.values.get(&10854).cloned())
    );
    let (disk, _) = Generation::load(&g.dir, &|_| {}).unwrap();
    assert_eq!(history_rows(&disk, 95), history_rows(&g, 95));
}
