//! Versions kept by `vegdb import` and closed by `vegdb refresh`: the import of the real
//! Uberiket samples with older versions laid over them (tests/fixtures/uberiket-history, derived
//! from real records, see its README) keeps every version read and every closed veglenke, the
//! current tables staying what they are without the older versions; a refresh that changes or
//! removes an object closes its stored version into the history. Expectations are read from the
//! fixture JSON with this file's own reader.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde_json::Value;
use vegdb::catalog::Catalog;
use vegdb::changeset::working::value_at;
use vegdb::generation::time::valid_at;
use vegdb::generation::Generation;
use vegdb::import::refresh::refresh_dir;
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::columns::{ObjectTable, OPEN_END};
use vegdb::snapshot::store::DataDir;
use vegdb::value::Value as Stored;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Days since 1970 of an ISO date.
fn days(text: &str) -> i32 {
    let d = NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap();
    (d - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32
}

/// Every record of the json/ndjson files of `dir` (pages unwrapped).
fn records(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut files: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files.iter().filter(|f| f.is_file()) {
        let text = std::fs::read_to_string(f).unwrap();
        match f.extension().and_then(|e| e.to_str()) {
            Some("ndjson") => out.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()),
            ),
            Some("json") => {
                let v: Value = serde_json::from_str(&text).unwrap();
                let key = ["veglenkesekvenser", "vegobjekter", "hendelser"]
                    .into_iter()
                    .find(|k| v.get(*k).is_some());
                match key {
                    Some(k) => out.extend(v[k].as_array().unwrap().iter().cloned()),
                    None => out.push(v),
                }
            }
            _ => {}
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("json" | "ndjson")
        ) {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn load(data: &DataDir) -> Generation {
    let id = data.current().unwrap().unwrap();
    Generation::load(&data.generation_dir(id), &|_| {})
        .unwrap()
        .0
}

fn placement_ids(o: &Value) -> Vec<u64> {
    let s = &o["stedfesting"];
    let mut out: Vec<u64> = ["linjer", "punkter"]
        .iter()
        .flat_map(|k| s[*k].as_array().into_iter().flatten())
        .map(|l| l["id"].as_u64().unwrap())
        .collect();
    for k in ["startpunkt", "sluttpunkt"] {
        if let Some(id) = s[k]["id"].as_u64() {
            out.push(id);
        }
    }
    out
}

/// A stored number of row `row` for property `p` (None when absent).
fn number(t: &ObjectTable, row: usize, p: u32) -> Option<f64> {
    match value_at(&t.property(p)?.values, row)? {
        Stored::Int(v) => Some(v as f64),
        Stored::Float(v) => Some(v),
        _ => None,
    }
}

/// The samples with the derived older versions laid over them, and a test-made older version
/// (versjon 0) of a real 915 Vegsystem with another vegnummer: an older version gives no road
/// reference.
fn source_with_history(tmp: &Path) -> PathBuf {
    let src = tmp.join("source");
    copy_dir(&fixture("uberiket"), &src);
    copy_dir(&fixture("uberiket-history"), &src);
    let real = src.join("vegobjekter/915/vegobjekt-915-1002308426.json");
    let mut o: Value = serde_json::from_str(&std::fs::read_to_string(real).unwrap()).unwrap();
    let start = o["gyldighetsperiode"]["startdato"].clone();
    o["versjon"] = Value::from(0);
    o["gyldighetsperiode"] = serde_json::json!({"startdato": "2000-01-01", "sluttdato": start});
    o["egenskaper"]["11277"]["verdi"] = Value::from(9998);
    std::fs::write(src.join("vegobjekter/915/0-older.json"), o.to_string()).unwrap();
    src
}

/// The import keeps every version of every object placed on the network (older ones in the
/// type's history, closed at their sluttdato or the next version's startdato) and every
/// closed veglenke (in the network's history, with its sluttdato); the current tables and the
/// current network are what an import of the same source without the older versions gives.
#[test]
fn import_keeps_every_version_and_every_closed_veglenke() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_with_history(tmp.path());
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let summary = import_dir(&src, &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    println!("{}", summary.render());
    let g = load(&data);

    // the fixture's sequences: all have a current veglenke (tests/import.rs checks it)
    let sequences = records(&src.join("veglenkesekvenser"));
    let on_network: HashSet<u64> = sequences
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    // versions per (type, id) of objects placed on the network, read from the files
    let catalog = Catalog::embedded();
    let mut versions: BTreeMap<(u32, u64), Vec<Value>> = BTreeMap::new();
    for e in std::fs::read_dir(src.join("vegobjekter")).unwrap() {
        let dir = e.unwrap().path();
        let t: u32 = dir.file_name().unwrap().to_str().unwrap().parse().unwrap();
        if catalog.object_type(t).is_none() {
            continue;
        }
        for o in records(&dir) {
            if placement_ids(&o).iter().any(|s| on_network.contains(s)) {
                let id = o["id"].as_u64().unwrap();
                versions.entry((t, id)).or_default().push(o);
            }
        }
    }
    let mut older = 0usize;
    let mut with_older = 0usize;
    let mut old_values = 0usize;
    for ((t, id), vs) in &mut versions {
        vs.sort_by_key(|o| o["versjon"].as_u64().unwrap());
        let got = g.versions(*t, *id);
        let got_versions: Vec<u64> = got.iter().map(|(tb, r)| tb.version[*r] as u64).collect();
        let want: Vec<u64> = vs.iter().map(|o| o["versjon"].as_u64().unwrap()).collect();
        assert_eq!(got_versions, want, "{t}/{id}");
        // the newest is the current row
        let current = &g.objects[t].table;
        let row = current.row_of(*id).unwrap();
        assert_eq!(
            current.version[row] as u64,
            *want.last().unwrap(),
            "{t}/{id}"
        );
        for (i, ((tb, r), o)) in got.iter().zip(vs.iter()).enumerate() {
            let validity = &o["gyldighetsperiode"];
            assert_eq!(
                tb.start_date[*r],
                days(validity["startdato"].as_str().unwrap())
            );
            let end = match (validity["sluttdato"].as_str(), vs.get(i + 1)) {
                (Some(d), _) => days(d),
                (None, Some(next)) => {
                    days(next["gyldighetsperiode"]["startdato"].as_str().unwrap())
                }
                (None, None) => OPEN_END,
            };
            assert_eq!(tb.end_date[*r], end, "{t}/{id} v{}", tb.version[*r]);
            // the version's own numbers (enum ids, integers, floats) as stored
            for (key, v) in o["egenskaper"].as_object().unwrap() {
                let (Ok(p), Some(n)) = (key.parse::<u32>(), v["verdi"].as_f64()) else {
                    continue;
                };
                if let Some(got) = number(tb, *r, p) {
                    assert_eq!(got, n, "{t}/{id} v{} {p}", tb.version[*r]);
                    if i + 1 < vs.len() {
                        old_values += 1;
                    }
                }
            }
        }
        older += vs.len() - 1;
        with_older += usize::from(vs.len() > 1);
    }
    assert_eq!(
        with_older, 4,
        "the fixture's three objects and the test's 915"
    );
    assert!(old_values >= 3, "{old_values}");
    assert_eq!(summary.versions_in_history.values().sum::<usize>(), older);
    let in_history: usize = g.history.values().map(|h| h.len()).sum();
    assert_eq!(in_history, older);

    // closed veglenker: (sequence, sluttdato) -> the span of their ports, from the files
    let mut closed: BTreeMap<(u64, i32), f64> = BTreeMap::new();
    for s in &sequences {
        let port = |n: &Value| {
            s["porter"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["nummer"] == *n)
                .unwrap()["posisjon"]
                .as_f64()
                .unwrap()
        };
        for l in s["veglenker"].as_array().unwrap() {
            if let Some(end) = l["gyldighetsperiode"]["sluttdato"].as_str() {
                let key = (s["id"].as_u64().unwrap(), days(end));
                *closed.entry(key).or_default() += port(&l["sluttport"]) - port(&l["startport"]);
            }
        }
    }
    assert!(!closed.is_empty());
    let h = &g.network_history;
    let mut kept: BTreeMap<(u64, i32), f64> = BTreeMap::new();
    for r in 0..h.len() {
        *kept.entry((h.link_id[r], h.end_date[r])).or_default() += h.to_pos[r] - h.from_pos[r];
    }
    assert_eq!(
        kept.keys().collect::<Vec<_>>(),
        closed.keys().collect::<Vec<_>>()
    );
    for (k, span) in &closed {
        assert!(
            (kept[k] - span).abs() < 1e-9,
            "{k:?}: {} vs {span}",
            kept[k]
        );
    }
    assert_eq!(summary.closed_link_rows, h.len());
    assert!(g.network.end_date.iter().all(|&e| e == OPEN_END));
    assert!(summary
        .render()
        .contains(&format!("{} closed veglenke rows in history", h.len())));

    // the current state is what the source without its older versions gives
    let plain = DataDir::open(tmp.path().join("plain")).unwrap();
    import_dir(
        &fixture("uberiket"),
        &plain,
        &TypeSelection::AllKnown,
        &|_| {},
    )
    .unwrap();
    let p = load(&plain);
    assert!(
        format!("{:?}", p.network) == format!("{:?}", g.network),
        "the current network differs from the import without the older versions"
    );
    assert_eq!(
        p.objects.keys().collect::<Vec<_>>(),
        g.objects.keys().collect::<Vec<_>>()
    );
    for (t, d) in &p.objects {
        assert!(
            format!("{:?}", d.table) == format!("{:?}", g.objects[t].table),
            "type {t}: the current table differs from the import without the older versions"
        );
    }

    // the day views: an older version answers before its successor's start
    let v2_start = days("2024-11-14");
    let before = g.at(v2_start - 1).unwrap();
    let after = g.at(v2_start).unwrap();
    let version_at = |view: &Generation| {
        let t = &view.objects[&105].table;
        t.row_of(589421130).map(|r| t.version[r])
    };
    assert_eq!(version_at(&before), Some(1));
    assert_eq!(version_at(&after), Some(2));
}

/// Refresh: the changed 105 object's stored version is closed at the new version's startdato
/// into the history, the removed one's at its event's day, the removed sequences' rows join
/// the network's history at their event's day; the current answer is the new version.
#[test]
fn refresh_closes_the_versions_it_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    let refresh = fixture("uberiket-refresh");
    let base_src = tmp.path().join("base");
    copy_dir(&fixture("uberiket"), &base_src);
    copy_dir(&refresh.join("base"), &base_src);
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    import_dir(&base_src, &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    let base = load(&data);

    // the events source; the changed object's new version starts on a day of its own (the
    // hand-made fixture gives it its old startdato)
    let ev = tmp.path().join("events");
    copy_dir(&refresh.join("events"), &ev);
    let page = ev.join("vegobjekter/105/ider-000000.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&page).unwrap()).unwrap();
    let new_start = "2026-06-01";
    let changed = 83589630u64;
    for o in v["vegobjekter"].as_array_mut().unwrap() {
        if o["id"] == changed {
            o["gyldighetsperiode"]["startdato"] = Value::from(new_start);
        }
    }
    std::fs::write(&page, v.to_string()).unwrap();
    let summary = refresh_dir(&ev, &data, "test").unwrap();
    println!("{}", summary.render());
    let g = load(&data);
    assert_eq!(g.id, summary.generation);

    // events after the base's siste ids, read from the files
    let siste = |p: &str| -> u64 {
        records(&refresh.join("base/hendelser").join(p))[0]["hendelseId"]
            .as_u64()
            .unwrap()
    };
    let newer = |p: &str| -> Vec<Value> {
        let after = siste(p);
        records(&ev.join("hendelser").join(p))
            .into_iter()
            .filter(|e| e["hendelseId"].as_u64().unwrap() > after)
            .collect()
    };
    let day_of = |e: &Value| days(&e["tidspunkt"].as_str().unwrap()[..10]);
    let current_states: BTreeSet<u64> = records(&ev.join("vegobjekter/105"))
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect();
    let table = &base.objects[&105].table;
    let h = &g.history[&105];
    let mut closed = 0;
    for e in newer("vegobjekter/105") {
        let id = e["vegobjektId"].as_u64().unwrap();
        let Some(row) = table.row_of(id) else {
            continue; // created
        };
        let old = table.version[row];
        let hr = (0..h.len())
            .find(|&r| h.id[r] == id && h.version[r] == old)
            .unwrap_or_else(|| panic!("105/{id} v{old} not in the history"));
        assert_eq!(h.start_date[hr], table.start_date[row]);
        assert_eq!(number(h, hr, 2021), number(table, row, 2021));
        let end = if current_states.contains(&id) {
            let now = &g.objects[&105].table;
            let r = now.row_of(id).unwrap();
            assert!(now.version[r] > old);
            now.start_date[r]
        } else {
            assert!(g.objects[&105].table.row_of(id).is_none());
            day_of(&e)
        };
        assert_eq!(h.end_date[hr], end, "105/{id}");
        closed += 1;
    }
    assert_eq!(closed, 2, "one changed and one removed 105 in the fixture");
    // 105s lying only on removed sequences are closed at the latest of those events' days
    let removed_at: BTreeMap<u64, i32> = newer("veglenkesekvenser")
        .iter()
        .filter(|e| e["hendelseType"] == "VeglenkesekvensFjernet")
        .map(|e| (e["nettelementId"].as_u64().unwrap(), day_of(e)))
        .collect();
    let named: BTreeSet<u64> = newer("vegobjekter/105")
        .iter()
        .map(|e| e["vegobjektId"].as_u64().unwrap())
        .collect();
    for row in 0..table.len() {
        let on: Vec<u64> = table.placements(row).map(|p| table.loc_link[p]).collect();
        if named.contains(&table.id[row]) || !on.iter().all(|s| removed_at.contains_key(s)) {
            continue;
        }
        let hr = (0..h.len()).find(|&r| h.id[r] == table.id[row]).unwrap();
        let end = on.iter().map(|s| removed_at[s]).max().unwrap();
        assert_eq!(h.end_date[hr], end);
        closed += 1;
    }
    assert!(closed > 2);
    assert_eq!(summary.versions_closed.get(&105), Some(&closed));
    let hr = (0..h.len()).find(|&r| h.id[r] == changed).unwrap();
    assert_eq!(h.end_date[hr], days(new_start));
    // the day before the new version: the old one valid; from its start: the new one (the
    // views of `Generation::at` select by the same `valid_at`)
    for (day, want) in [(days(new_start) - 1, 1), (days(new_start), 2)] {
        let valid: Vec<u32> = g
            .versions(105, changed)
            .into_iter()
            .filter(|(t, r)| valid_at(t.start_date[*r], t.end_date[*r], day))
            .map(|(t, r)| t.version[r])
            .collect();
        assert_eq!(valid, vec![want], "day {day}");
    }

    // removed sequences: their current rows closed at the event's day
    let mut gone = 0;
    for e in newer("veglenkesekvenser") {
        if e["hendelseType"] != "VeglenkesekvensFjernet" {
            continue;
        }
        let id = e["nettelementId"].as_u64().unwrap();
        let rows = base.network.rows_of_link(id);
        assert!(!rows.is_empty());
        assert!(g.network.rows_of_link(id).is_empty());
        let at: Vec<i32> = g
            .network_history
            .rows_of_link(id)
            .filter(|&r| g.network_history.end_date[r] == day_of(&e))
            .map(|r| g.network_history.start_date[r])
            .collect();
        let was: Vec<i32> = rows.map(|r| base.network.start_date[r]).collect();
        assert_eq!(at, was, "sequence {id}");
        gone += 1;
    }
    assert!(gone >= 1);
}
