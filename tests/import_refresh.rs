//! `vegdb refresh` on hand-made event pages in the OpenAPI's shapes
//! (tests/fixtures/uberiket-refresh, see README.md there) over an import of the real samples:
//! the expected result of every event is taken from the fixture files, and checked through the
//! v2 API of a real server, the new manifest and the files shared with the parent. The same
//! events are then replayed by a local stand-in of the Uberiket API that injects faults.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::import::refresh::{refresh_dir, RefreshSummary};
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::manifest::Manifest;
use vegdb::snapshot::store::DataDir;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uberiket")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uberiket-refresh")
}

/// Every record of the json/ndjson files of `dir` (pages unwrapped), read without the
/// importer's reader.
fn records(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut files: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
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
        } else if p.extension().and_then(|e| e.to_str()) != Some("py") {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn sample_sequence_ids() -> BTreeSet<u64> {
    records(&samples().join("veglenkesekvenser"))
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect()
}

/// The test's 915 Vegsystem (Kommunal veg 9999) over `sequences`, version `version`.
fn cover(sequences: &BTreeSet<u64>, version: u32, modified: &str) -> Value {
    json!({
        "id": 1, "versjon": version, "typeId": 915, "gyldighetsperiode": {"startdato": "2020-01-01"},
        "egenskaper": {
            "11276": {"type": "EnumEgenskap", "verdi": 19027},
            "11277": {"type": "HeltallEgenskap", "verdi": 9999},
            "11278": {"type": "EnumEgenskap", "verdi": 19032}
        },
        "stedfesting": {"type": "StedfestingLinjer", "linjer": sequences.iter().map(|id| json!(
            {"id": id, "startposisjon": 0.0, "sluttposisjon": 1.0, "retning": "MED"})).collect::<Vec<_>>()},
        "sistEndret": modified
    })
}

/// The base source: the samples, the cover over all of them, and the base's `siste` answers.
fn base_source(tmp: &Path) -> PathBuf {
    let src = tmp.join("base-source");
    copy_dir(&samples(), &src);
    copy_dir(&fixtures().join("base"), &src);
    let c = cover(&sample_sequence_ids(), 1, "2025-01-01T00:00:00Z");
    std::fs::write(
        src.join("vegobjekter/915/zz-cover.ndjson"),
        format!("{c}\n"),
    )
    .unwrap();
    src
}

/// Sequences removed and created by the fixture events (from the event page itself).
fn sequence_changes() -> (BTreeSet<u64>, BTreeSet<u64>) {
    let events = records(&fixtures().join("events/hendelser/veglenkesekvenser"));
    let of = |kind: &str| -> BTreeSet<u64> {
        events
            .iter()
            .filter(|e| e["hendelseType"] == kind && e["hendelseId"].as_u64().unwrap() > 5000)
            .map(|e| e["nettelementId"].as_u64().unwrap())
            .collect()
    };
    (of("VeglenkesekvensFjernet"), of("VeglenkesekvensOpprettet"))
}

/// The events source: the fixture events and current states, plus the cover's version 2 (on
/// the created sequence, off the removed ones).
fn events_source(tmp: &Path) -> PathBuf {
    let src = tmp.join("events-source");
    copy_dir(&fixtures().join("events"), &src);
    let (removed, created) = sequence_changes();
    let mut on: BTreeSet<u64> = sample_sequence_ids();
    on.retain(|s| !removed.contains(s));
    on.extend(created);
    // the cover changes, so every sequence under it is mapped again: the source holds the
    // current state of those too (unchanged samples)
    let named: BTreeSet<u64> = records(&src.join("veglenkesekvenser"))
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    let unchanged: String = records(&samples().join("veglenkesekvenser"))
        .into_iter()
        .filter(|s| {
            let id = s["id"].as_u64().unwrap();
            !removed.contains(&id) && !named.contains(&id)
        })
        .map(|s| format!("{s}\n"))
        .collect();
    std::fs::write(src.join("veglenkesekvenser/unchanged.ndjson"), unchanged).unwrap();
    // every placement of the changed 105s' current states is on lanes 1 and 2
    let page = src.join("vegobjekter/105/ider-000000.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&page).unwrap()).unwrap();
    for o in v["vegobjekter"].as_array_mut().unwrap() {
        for l in o["stedfesting"]["linjer"].as_array_mut().unwrap() {
            l["kjorefelt"] = json!(["1", "2"]);
        }
    }
    std::fs::write(&page, v.to_string()).unwrap();
    let c = cover(&on, 2, "2026-06-03T11:59:00Z");
    std::fs::create_dir_all(src.join("vegobjekter/915")).unwrap();
    std::fs::write(
        src.join("vegobjekter/915/cover-v2.json"),
        serde_json::to_string(&c).unwrap(),
    )
    .unwrap();
    src
}

async fn serve(data: &DataDir, generation: u64) -> String {
    let (g, _) = Generation::load(&data.generation_dir(generation), &|_| {}).unwrap();
    let store = Arc::new(GenerationStore::new(g));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::read_only(
        store,
        ApiConfig::new(format!("http://{addr}"), Duration::from_secs(10)),
    );
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("http://{addr}/nvdb/api/v2")
}

async fn get(base: &str, path: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json::<Value>().await.unwrap_or(Value::Null))
}

fn enum_of(object: &Value, property: u64) -> Option<u64> {
    object["egenskaper"]
        .as_array()?
        .iter()
        .find(|e| e["id"].as_u64() == Some(property))?["enum_id"]
        .as_u64()
}

/// Ids listed by `/vegobjekter/{t}/endringer?type=..&etter=2026-01-01`.
async fn changes(base: &str, t: u32, kind: &str) -> BTreeSet<u64> {
    let (status, body) = get(
        base,
        &format!("/vegobjekter/{t}/endringer?type={kind}&etter=2026-01-01"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| match &c["vegobjekt"] {
            Value::Number(n) => n.as_u64().unwrap(),
            o => o["id"].as_u64().unwrap(),
        })
        .collect()
}

fn imported(tmp: &Path, name: &str) -> DataDir {
    let data = DataDir::open(tmp.join(name)).unwrap();
    import_dir(&base_source(tmp), &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    data
}

/// Check a refreshed generation against the fixtures; `summary` is the refresh's.
async fn check_refreshed(data: &DataDir, summary: &RefreshSummary) {
    let ev = fixtures().join("events");
    // what the events say, after the base's siste ids
    let siste = |p: &str| -> u64 {
        records(&fixtures().join("base/hendelser").join(p))[0]["hendelseId"]
            .as_u64()
            .unwrap()
    };
    let newer = |p: &str, after: u64| -> Vec<Value> {
        records(&ev.join("hendelser").join(p))
            .into_iter()
            .filter(|e| e["hendelseId"].as_u64().unwrap() > after)
            .collect()
    };
    let seq_events = newer("veglenkesekvenser", siste("veglenkesekvenser"));
    let e105 = newer("vegobjekter/105", siste("vegobjekter/105"));
    let e915 = newer("vegobjekter/915", siste("vegobjekter/915"));
    assert_eq!(
        summary.events,
        BTreeMap::from([
            ("veglenkesekvenser".to_string(), seq_events.len()),
            ("vegobjekter/105".to_string(), e105.len()),
            ("vegobjekter/915".to_string(), e915.len()),
        ])
    );
    let max = |v: &[Value]| {
        v.iter()
            .map(|e| e["hendelseId"].as_u64().unwrap())
            .max()
            .unwrap()
    };
    let manifest = Manifest::read(&data.generation_dir(summary.generation)).unwrap();
    assert_eq!(manifest.parent, Some(summary.parent));
    assert_eq!(
        manifest.last_event_ids,
        BTreeMap::from([
            ("veglenkesekvenser".to_string(), max(&seq_events)),
            ("vegobjekter/105".to_string(), max(&e105)),
            ("vegobjekter/821".to_string(), siste("vegobjekter/821")),
            ("vegobjekter/915".to_string(), max(&e915)),
        ])
    );
    assert_eq!(summary.last_event_ids, manifest.last_event_ids);

    // expected object outcomes, from the events and the current states in the fixture
    let current: BTreeMap<u64, Value> = records(&ev.join("vegobjekter/105"))
        .into_iter()
        .map(|o| (o["id"].as_u64().unwrap(), o))
        .collect();
    let named: BTreeSet<u64> = e105
        .iter()
        .map(|e| e["vegobjektId"].as_u64().unwrap())
        .collect();
    let base_ids: BTreeSet<u64> = records(&samples().join("vegobjekter/105"))
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect();
    let (removed_seqs, created_seqs) = sequence_changes();
    let base = serve(data, summary.generation).await;
    let mut created = 0;
    let mut changed = 0;
    let mut removed = 0;
    for id in &named {
        let (status, body) = get(&base, &format!("/vegobjekter/105/{id}")).await;
        match current.get(id) {
            Some(o) => {
                assert_eq!(status, 200, "105/{id} {body}");
                assert_eq!(body["metadata"]["versjon"], o["versjon"], "105/{id}");
                assert_eq!(
                    enum_of(&body, 2021),
                    o["egenskaper"]["2021"]["verdi"].as_u64(),
                    "105/{id}"
                );
                let on: Vec<u64> = o["stedfesting"]["linjer"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["id"].as_u64().unwrap())
                    .collect();
                let text = body["lokasjon"].to_string();
                assert!(on.iter().all(|s| text.contains(&s.to_string())), "{text}");
                if base_ids.contains(id) {
                    changed += 1;
                } else {
                    created += 1;
                }
            }
            None => {
                assert_eq!(status, 404, "105/{id} removed upstream");
                removed += 1;
            }
        }
    }
    assert!(created >= 1 && changed >= 1 && removed >= 1);
    // an event older than the import is not applied: that object keeps its base version
    let stale: Vec<u64> = records(&ev.join("hendelser/vegobjekter/105"))
        .iter()
        .filter(|e| e["hendelseId"].as_u64().unwrap() <= siste("vegobjekter/105"))
        .map(|e| e["vegobjektId"].as_u64().unwrap())
        .collect();
    assert!(!stale.is_empty());
    for id in &stale {
        let (status, body) = get(&base, &format!("/vegobjekter/105/{id}")).await;
        assert_eq!(status, 200);
        assert_eq!(
            body["metadata"]["versjon"], 1,
            "stale event applied to {id}"
        );
    }

    // objects on the removed sequences: those lying only there are gone, the others lost
    // those placements (both counted)
    let mut only_there = 0;
    let mut partly = 0;
    for t in [105u32, 538, 591, 616, 821] {
        for o in records(&samples().join(format!("vegobjekter/{t}"))) {
            let id = o["id"].as_u64().unwrap();
            if t == 105 && named.contains(&id) {
                continue;
            }
            let on: Vec<u64> = o["stedfesting"]["linjer"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["id"].as_u64().unwrap())
                .collect();
            let lost = on.iter().filter(|s| removed_seqs.contains(s)).count();
            if lost == 0 {
                continue;
            }
            let (status, body) = get(&base, &format!("/vegobjekter/{t}/{id}")).await;
            if lost == on.len() {
                only_there += 1;
                assert_eq!(status, 404, "{t}/{id} lay only on removed sequences");
                assert!(changes(&base, t, "slettet").await.contains(&id));
            } else {
                partly += 1;
                assert_eq!(status, 200, "{t}/{id}");
                let text = body["lokasjon"].to_string();
                for s in &removed_seqs {
                    assert!(!text.contains(&format!("\"veglenkeid\":{s}")), "{text}");
                }
                assert!(changes(&base, t, "endret").await.contains(&id));
            }
        }
    }
    assert!(only_there >= 1 && partly >= 1);
    let note = |prefix: &str| -> usize {
        summary
            .skipped
            .iter()
            .filter(|(k, _)| k.contains(prefix))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(
        note("every veglenkesekvens it lay on disappeared"),
        only_there
    );
    assert_eq!(
        note("placements on a disappeared veglenkesekvens dropped"),
        partly
    );

    // /endringer lists the changed/created (ENDRET) and removed (SLETTET) 105 objects
    let endret = changes(&base, 105, "endret").await;
    let slettet = changes(&base, 105, "slettet").await;
    for id in &named {
        if current.contains_key(id) {
            assert!(endret.contains(id), "{id} not ENDRET: {endret:?}");
        } else {
            assert!(slettet.contains(id), "{id} not SLETTET: {slettet:?}");
        }
    }

    // the network: removed sequences gone, the created one served with the cover's road
    // reference, the changed one with its new lanes, the stale-evented one unchanged
    for s in &removed_seqs {
        let (status, _) = get(&base, &format!("/vegnett/lenker/{s}")).await;
        assert_eq!(status, 404, "removed sequence {s}");
    }
    for s in &created_seqs {
        let (status, rows) = get(&base, &format!("/vegnett/lenker/{s}")).await;
        assert_eq!(status, 200, "created sequence {s}");
        for r in rows.as_array().unwrap() {
            assert_eq!(r["vegreferanse"]["nummer"], 9999, "{r}");
            // the vegsystemreferanse the refresh mapped from the cover (no 916: S0D1), with
            // the cover's id and its new version
            let v = &r["vegsystemreferanse"];
            assert_eq!(
                v["vegsystem"],
                json!({"id": 1, "versjon": 2, "vegkategori": "K", "fase": "V", "nummer": 9999})
            );
            assert!(v["strekning"].get("id").is_none(), "{r}");
            assert_eq!(
                (
                    &v["strekning"]["strekning"],
                    &v["strekning"]["delstrekning"]
                ),
                (&json!(0), &json!(1))
            );
            assert_eq!(
                v["strekning"]["fra_meter"], r["vegreferanse"]["fra_meter"],
                "{r}"
            );
        }
    }
    let seqs: BTreeMap<u64, Value> = records(&ev.join("veglenkesekvenser"))
        .into_iter()
        .map(|s| (s["id"].as_u64().unwrap(), s))
        .collect();
    let named_seqs: BTreeSet<u64> = seq_events
        .iter()
        .map(|e| e["nettelementId"].as_u64().unwrap())
        .collect();
    for (id, s) in &seqs {
        let (status, rows) = get(&base, &format!("/vegnett/lenker/{id}")).await;
        assert_eq!(status, 200);
        let lanes: BTreeSet<String> = s["veglenker"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["gyldighetsperiode"].get("sluttdato").is_none())
            .map(|l| {
                l["feltoversikt"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join("#")
            })
            .collect();
        let served: BTreeSet<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["felt"].as_str().unwrap().to_string())
            .collect();
        assert!(named_seqs.contains(id));
        assert_eq!(served, lanes, "sequence {id}");
    }
}

/// Created, changed and removed objects and sequences, objects whose sequence disappeared,
/// stale events ignored, last event ids in the manifest, untouched files shared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_applies_the_events_as_a_copy_on_write_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let data = imported(tmp.path(), "data");
    let first = data.current().unwrap().unwrap();
    let m1 = Manifest::read(&data.generation_dir(first)).unwrap();
    let siste: BTreeMap<String, u64> = [
        "veglenkesekvenser",
        "vegobjekter/105",
        "vegobjekter/821",
        "vegobjekter/915",
    ]
    .iter()
    .map(|s| {
        let r = records(&fixtures().join("base/hendelser").join(s));
        (s.to_string(), r[0]["hendelseId"].as_u64().unwrap())
    })
    .collect();
    assert_eq!(m1.last_event_ids, siste, "the import records the siste ids");

    let source = events_source(tmp.path());
    let summary = refresh_dir(&source, &data, "test refresh").unwrap();
    assert_eq!(summary.parent, first);
    assert_eq!(data.current().unwrap(), Some(summary.generation));
    check_refreshed(&data, &summary).await;

    // the refreshed objects' lanes (kjorefelt of their current states) are shown as felt; an
    // object whose event was older than the import keeps its base state, without lanes
    let laned: BTreeMap<u64, Value> = records(&source.join("vegobjekter/105"))
        .into_iter()
        .inspect(|o| {
            assert!(o["stedfesting"]["linjer"]
                .as_array()
                .unwrap()
                .iter()
                .all(|l| l["kjorefelt"] == json!(["1", "2"])))
        })
        .map(|o| (o["id"].as_u64().unwrap(), o["versjon"].clone()))
        .collect();
    let base = serve(&data, summary.generation).await;
    let mut shown = 0;
    for (id, versjon) in &laned {
        let (status, body) = get(
            &base,
            &format!("/vegobjekter/105/{id}?inkluder=metadata,lokasjon"),
        )
        .await;
        if status != 200 {
            continue;
        }
        let felt: Vec<&Value> = body["lokasjon"]["stedfestinger"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["felt"])
            .collect();
        if body["metadata"]["versjon"] != *versjon {
            assert!(felt.iter().all(|f| f.is_null()), "105/{id}: {body}");
        } else {
            assert!(felt.iter().all(|f| *f == "1#2"), "105/{id}: {body}");
            shown += felt.len();
        }
    }
    assert!(shown >= 1, "{laned:?}");

    // files of untouched types are the parent's (hard links); the 105 chunk is new
    let m2 = Manifest::read(&data.generation_dir(summary.generation)).unwrap();
    let inode = |g: u64, path: &str| {
        std::fs::metadata(data.generation_dir(g).join(path))
            .unwrap()
            .ino()
    };
    let mut shared_types = BTreeSet::new();
    for f in &m2.files {
        let Some(t) = f.type_id else { continue };
        let same = m1.files.iter().any(|g| g.path == f.path)
            && inode(first, &f.path) == inode(summary.generation, &f.path);
        match t {
            538 | 591 => {
                assert!(same, "{} should be shared", f.path);
                shared_types.insert(t);
            }
            105 | 915 => assert!(!same, "{} should be rewritten", f.path),
            _ => {}
        }
    }
    assert_eq!(shared_types, BTreeSet::from([538, 591]));
    assert_eq!(summary.files_shared, m2.files.len() - summary.files_written);

    // a second refresh with the same events has nothing newer to apply
    let again = refresh_dir(&events_source(tmp.path()), &data, "again").unwrap();
    assert_eq!(again.generation, summary.generation);
    assert!(again.events.is_empty());
    assert_eq!(data.current().unwrap(), Some(summary.generation));
}

/// The binary: `vegdb refresh` prints the summary; without a generation it fails clearly.
#[test]
fn the_refresh_command_prints_its_summary_and_needs_a_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_vegdb");
    let empty = std::process::Command::new(bin)
        .args(["refresh", "--source"])
        .arg(events_source(tmp.path()))
        .arg("--data")
        .arg(tmp.path().join("empty"))
        .output()
        .unwrap();
    assert!(!empty.status.success());
    let err = String::from_utf8_lossy(&empty.stderr);
    assert!(err.contains("vegdb import first"), "{err}");

    let _ = imported(tmp.path(), "data");
    let out = std::process::Command::new(bin)
        .args(["refresh", "--source"])
        .arg(events_source(tmp.path()))
        .arg("--data")
        .arg(tmp.path().join("data"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("generation 2 (from 1)"), "{text}");
    assert!(
        text.contains("vegobjekter/105: 4 events, last event id 7004"),
        "{text}"
    );
    assert!(
        text.contains("every veglenkesekvens it lay on disappeared"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------
// A local stand-in of the Uberiket API: replays the fixture pages, injects faults.

#[derive(Default)]
struct StandIn {
    /// Event streams by path (`/hendelser/veglenkesekvenser`, `/hendelser/vegobjekter/105`).
    events: BTreeMap<String, Vec<Value>>,
    /// Current states by path (`/vegnett/veglenkesekvenser`, `/vegobjekter/105`).
    current: BTreeMap<String, Vec<Value>>,
    /// `siste` answers by path.
    latest: BTreeMap<String, Value>,
    /// (path, query, X-Client) of every call.
    calls: Mutex<Vec<(String, String, Option<String>)>>,
    /// Call number (1-based) -> fault.
    faults: BTreeMap<usize, &'static str>,
}

fn stand_in(events_src: &Path) -> StandIn {
    let mut s = StandIn::default();
    s.events.insert(
        "/hendelser/veglenkesekvenser".into(),
        records(&events_src.join("hendelser/veglenkesekvenser")),
    );
    for t in [105, 538, 591, 616, 821, 915] {
        s.events.insert(
            format!("/hendelser/vegobjekter/{t}"),
            records(&events_src.join(format!("hendelser/vegobjekter/{t}"))),
        );
        s.current.insert(
            format!("/vegobjekter/{t}"),
            records(&events_src.join(format!("vegobjekter/{t}"))),
        );
    }
    s.current.insert(
        "/vegnett/veglenkesekvenser".into(),
        records(&events_src.join("veglenkesekvenser")),
    );
    for (p, dir) in [
        ("/hendelser/veglenkesekvenser/siste", "veglenkesekvenser"),
        ("/hendelser/vegobjekter/105/siste", "vegobjekter/105"),
        ("/hendelser/vegobjekter/821/siste", "vegobjekter/821"),
        ("/hendelser/vegobjekter/915/siste", "vegobjekter/915"),
    ] {
        s.latest.insert(
            p.into(),
            records(&fixtures().join("base/hendelser").join(dir))[0].clone(),
        );
    }
    s
}

async fn stand_in_handler(
    axum::extract::State(s): axum::extract::State<Arc<StandIn>>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let path = uri.path().trim_start_matches("/api/v1").to_string();
    let query = uri.query().unwrap_or("").to_string();
    let q: BTreeMap<&str, &str> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let n = {
        let mut calls = s.calls.lock().unwrap();
        calls.push((
            path.clone(),
            query.clone(),
            headers
                .get("X-Client")
                .map(|v| v.to_str().unwrap().to_string()),
        ));
        calls.len()
    };
    let body: Option<Value> = if let Some(v) = s.latest.get(&path) {
        Some(v.clone())
    } else if let Some(events) = s.events.get(&path) {
        let start: u64 = q.get("start").map_or(0, |v| v.parse().unwrap());
        let antall: usize = q.get("antall").map_or(1000, |v| v.parse().unwrap());
        let page: Vec<Value> = events
            .iter()
            .filter(|e| e["hendelseId"].as_u64().unwrap() > start)
            .take(antall)
            .cloned()
            .collect();
        Some(
            json!({"hendelser": page, "metadata": {"returnert": page.len(), "sidestorrelse": antall}}),
        )
    } else if let Some(items) = s.current.get(&path) {
        let ids: HashSet<u64> = q
            .get("ider")
            .map(|v| v.split(',').map(|i| i.parse().unwrap()).collect())
            .unwrap_or_default();
        let found: Vec<Value> = items
            .iter()
            .filter(|o| ids.contains(&o["id"].as_u64().unwrap()))
            .cloned()
            .collect();
        let key = if path.starts_with("/vegnett") {
            "veglenkesekvenser"
        } else {
            "vegobjekter"
        };
        Some(json!({key: found, "metadata": {"returnert": found.len(), "sidestorrelse": 1000}}))
    } else {
        None
    };
    let Some(body) = body else {
        return (StatusCode::NOT_FOUND, "{}").into_response();
    };
    let text = body.to_string();
    match s.faults.get(&n) {
        Some(&"503") => (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response(),
        Some(&"500") => (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
        Some(&"truncate") => text[..text.len() / 2].to_string().into_response(),
        Some(&"timeout") => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            text.into_response()
        }
        _ => text.into_response(),
    }
}

async fn start_stand_in(s: Arc<StandIn>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(stand_in_handler).with_state(s);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/api/v1")
}

/// `refresh --source URL` against the stand-in: a 503, a truncated page, a time-out and a
/// 500 are retried; event pages are asked from the manifest's last ids on and paged until
/// empty; the current state of exactly the named ids is fetched; every call sends
/// `X-Client: vegdb`; and the result equals the refresh from the fixture directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_from_a_faulty_stand_in_equals_the_directory_refresh() {
    use vegdb::import::download::{download_events, download_latest_events, DownloadOptions};
    let tmp = tempfile::tempdir().unwrap();
    let events_src = events_source(tmp.path());
    let stand = Arc::new(StandIn {
        faults: BTreeMap::from([(1, "503"), (3, "truncate"), (5, "timeout"), (8, "500")]),
        ..stand_in(&events_src)
    });
    let url = start_stand_in(stand.clone()).await;
    let opts = DownloadOptions {
        batch: 2,
        attempts: 4,
        backoff: Duration::from_millis(5),
        timeout: Duration::from_secs(1),
        concurrency: 1,
    };

    // the import side: siste answers saved where the importer reads them
    let dl = tmp.path().join("siste");
    let (u, d, o) = (url.clone(), dl.clone(), opts.clone());
    let rep = tokio::task::spawn_blocking(move || {
        download_latest_events(&u, &d, &[105, 821, 915, 538], &o)
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(rep.records, 4, "538 has no events upstream (404): no file");
    assert!(rep.retries >= 2);
    let got = vegdb::import::events::last_event_ids(&dl, &[105, 538, 821, 915]).unwrap();
    let data = imported(tmp.path(), "data");
    let m1 = Manifest::read(&data.generation_dir(1)).unwrap();
    assert_eq!(
        got, m1.last_event_ids,
        "saved siste = what the fixture import records"
    );

    stand.calls.lock().unwrap().clear();
    let dest = tmp.path().join("download");
    let (u, d, o, last) = (
        url.clone(),
        dest.clone(),
        opts.clone(),
        m1.last_event_ids.clone(),
    );
    let under = vegdb::import::refresh::road_system_sequences(&data.generation_dir(1)).unwrap();
    let reports = tokio::task::spawn_blocking(move || {
        let road_system = |id: u64| under.get(&id).cloned().unwrap_or_default();
        download_events(
            &u,
            &d,
            &last,
            &[105, 538, 591, 616, 821, 915],
            &road_system,
            &o,
            &|_| {},
        )
    })
    .await
    .unwrap()
    .unwrap();
    let calls = stand.calls.lock().unwrap().clone();
    assert!(calls.iter().all(|c| c.2.as_deref() == Some("vegdb")));
    // every event stream starts after the manifest's id (or from the beginning without one)
    for (name, first_id) in [
        (
            "/hendelser/veglenkesekvenser",
            m1.last_event_ids.get("veglenkesekvenser"),
        ),
        (
            "/hendelser/vegobjekter/105",
            m1.last_event_ids.get("vegobjekter/105"),
        ),
        ("/hendelser/vegobjekter/538", None),
    ] {
        let first = calls.iter().find(|c| c.0 == name).unwrap();
        match first_id {
            Some(id) => assert!(first.1.contains(&format!("start={id}&")), "{first:?}"),
            None => assert!(!first.1.contains("start="), "{first:?}"),
        }
    }
    // only named ids are fetched
    let asked: BTreeSet<u64> = calls
        .iter()
        .filter(|c| c.0 == "/vegobjekter/105")
        .flat_map(|c| {
            let ider =
                c.1.split('&')
                    .find_map(|kv| kv.strip_prefix("ider="))
                    .unwrap();
            ider.split(',')
                .map(|i| i.parse::<u64>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let named: BTreeSet<u64> = records(&events_src.join("hendelser/vegobjekter/105"))
        .iter()
        .filter(|e| e["hendelseId"].as_u64().unwrap() > m1.last_event_ids["vegobjekter/105"])
        .map(|e| e["vegobjektId"].as_u64().unwrap())
        .collect();
    assert_eq!(asked, named);
    assert_eq!(reports.iter().map(|r| r.retries).sum::<usize>(), 4);

    let mut from_url = refresh_dir(&dest, &data, "url").unwrap();
    check_refreshed(&data, &from_url).await;
    let other = imported(tmp.path(), "other");
    let mut from_dir = refresh_dir(&events_src, &other, "dir").unwrap();
    from_url.seconds = 0.0;
    from_dir.seconds = 0.0;
    assert_eq!(from_url, from_dir);

    // an upstream that keeps failing ends the run with an error naming the call
    let broken = Arc::new(StandIn {
        faults: (1..=10).map(|i| (i, "503")).collect(),
        ..stand_in(&events_src)
    });
    let url = start_stand_in(broken).await;
    let (d, o) = (tmp.path().join("broken"), opts.clone());
    let err = tokio::task::spawn_blocking(move || {
        download_events(
            &url,
            &d,
            &BTreeMap::new(),
            &[105],
            &|_| Vec::new(),
            &o,
            &|_| {},
        )
    })
    .await
    .unwrap()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("after 4 attempts") && err.contains("503"),
        "{err}"
    );
}

/// A 920 Sideanleggsdel created upstream marks the rows of the sequence it lies on as a side
/// facility after `refresh --source URL`: the download fetches the sequences under a changed
/// 920 (as under a changed 915/916) and the refresh maps them again with it. Before, the 920
/// was stored but its sequence kept its rows unmarked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_marks_the_side_facility_of_a_new_920() {
    use vegdb::import::download::{download_events, DownloadOptions};
    let tmp = tempfile::tempdir().unwrap();
    // the base as a URL import of it records it: the 920 stream's siste id too (no 920 yet)
    let base = base_source(tmp.path());
    let siste = base.join("hendelser/vegobjekter/920");
    std::fs::create_dir_all(&siste).unwrap();
    std::fs::write(
        siste.join("siste.json"),
        json!({"hendelseId": 10, "hendelseType": "VegobjektVersjonOpprettet", "vegobjektId": 1,
               "vegobjektTypeId": 920, "vegobjektVersjon": 1, "tidspunkt": "2025-01-01T00:00:00Z"})
        .to_string(),
    )
    .unwrap();
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    import_dir(&base, &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    let m1 = Manifest::read(&data.generation_dir(1)).unwrap();
    assert_eq!(m1.last_event_ids.get("vegobjekter/920"), Some(&10));
    let (g1, _) = Generation::load(&data.generation_dir(1), &|_| {}).unwrap();
    let on = g1.network.link_id[0];
    assert!(
        !g1.network.side_facility.iter().any(|&s| s),
        "the base marks no side facility"
    );
    let side = json!({
        "id": 3, "versjon": 1, "typeId": 920,
        "gyldighetsperiode": {"startdato": "2020-01-01"},
        "egenskaper": {"11291": {"type": "EnumEgenskap", "verdi": 19045}},
        "stedfesting": {"type": "StedfestingLinjer", "linjer": [
            {"id": on, "startposisjon": 0.0, "sluttposisjon": 1.0, "retning": "MED"}]},
        "sistEndret": "2026-06-03T12:00:00Z"
    });
    let event = json!({
        "hendelseId": 42, "hendelseType": "VegobjektVersjonOpprettet", "vegobjektId": 3,
        "vegobjektTypeId": 920, "vegobjektVersjon": 1, "tidspunkt": "2026-06-03T12:00:00Z"
    });
    let mut stand = StandIn::default();
    stand
        .events
        .insert("/hendelser/veglenkesekvenser".into(), vec![]);
    stand
        .events
        .insert("/hendelser/vegobjekter/920".into(), vec![event]);
    stand.current.insert("/vegobjekter/920".into(), vec![side]);
    stand.current.insert(
        "/vegnett/veglenkesekvenser".into(),
        records(&samples().join("veglenkesekvenser")),
    );
    let url = start_stand_in(Arc::new(stand)).await;
    let dest = tmp.path().join("download");
    let under = vegdb::import::refresh::road_system_sequences(&data.generation_dir(1)).unwrap();
    let (u, d, last) = (url, dest.clone(), m1.last_event_ids.clone());
    tokio::task::spawn_blocking(move || {
        let road_system = |id: u64| under.get(&id).cloned().unwrap_or_default();
        download_events(
            &u,
            &d,
            &last,
            &[920],
            &road_system,
            &DownloadOptions::default(),
            &|_| {},
        )
    })
    .await
    .unwrap()
    .unwrap();
    let summary = refresh_dir(&dest, &data, "920 refresh").unwrap();
    let (g2, _) = Generation::load(&data.generation_dir(summary.generation), &|_| {}).unwrap();
    let n = &g2.network;
    let marked: Vec<usize> = (0..n.len()).filter(|&r| n.side_facility[r]).collect();
    let under: Vec<usize> = (0..n.len()).filter(|&r| n.link_id[r] == on).collect();
    assert!(!under.is_empty(), "sequence {on} has no rows");
    assert_eq!(
        marked, under,
        "side facilities are the rows of sequence {on}"
    );
}
