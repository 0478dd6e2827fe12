//! `vegdb import` on the real Uberiket samples (tests/fixtures/uberiket, see SOURCES.md):
//! the summary's counts against counts taken from the fixture files directly, and the v2 API
//! of a real server on the imported generation against the sample values.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::catalog::Catalog;
use vegdb::generation::{Generation, GenerationStore};
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::store::DataDir;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uberiket")
}

/// Every record in a fixture directory, read without the importer's reader.
fn records(dir: &Path, key: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "ndjson")
            )
        })
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        if f.extension().unwrap() == "ndjson" {
            out.extend(
                text.lines()
                    .filter(|l| !l.is_empty())
                    .map(|l| serde_json::from_str(l).unwrap()),
            );
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            match v.get(key) {
                Some(Value::Array(items)) => out.extend(items.iter().cloned()),
                _ => out.push(v),
            }
        }
    }
    out
}

fn first_point(wkt: &str) -> (f64, f64) {
    let body = &wkt[wkt.find('(').unwrap() + 1..];
    let mut it = body
        .split(',')
        .next()
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse::<f64>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// A real server on generation `generation` of `data`; returns the v2 base URL.
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

async fn reqwest_get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn get(base: String, path: String) -> (u16, Value) {
    let r = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("X-Client", "vegdb-test")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json::<Value>().await.unwrap_or(Value::Null))
}

/// GET every fixture object; for those served (200): the real id and version, and every value
/// the catalogue can hold shown and equal to the sample's. Returns how many were served.
async fn check_objects(base: &str, by_type: &BTreeMap<u32, Vec<Value>>) -> usize {
    let catalog = Catalog::embedded();
    let mut served = 0;
    for (t, objs) in by_type {
        for o in objs {
            let id = o["id"].as_u64().unwrap();
            let (status, body) = get(
                base.to_string(),
                format!("/vegobjekter/{t}/{id}?inkluder=alle"),
            )
            .await;
            if status != 200 {
                assert_eq!(status, 404, "{t}/{id}: {body}");
                continue;
            }
            served += 1;
            assert_eq!(body["id"].as_u64(), Some(id));
            assert_eq!(body["metadata"]["versjon"].as_u64(), o["versjon"].as_u64());
            let props = body["egenskaper"].as_array().cloned().unwrap_or_default();
            let ty = catalog.object_type(*t).unwrap();
            for (key, v) in o["egenskaper"].as_object().unwrap() {
                let pid: u32 = key.parse().unwrap();
                let Some(pt) = ty.property(pid) else {
                    assert!(
                        !props.iter().any(|p| p["id"] == pid),
                        "{t}/{id}: unknown {pid} shown"
                    );
                    continue;
                };
                if v["type"] == "EnumEgenskap"
                    && pt
                        .allowed_value(v["verdi"].as_u64().unwrap() as u32)
                        .is_none()
                {
                    continue;
                }
                let p = props
                    .iter()
                    .find(|p| p["id"] == pid)
                    .unwrap_or_else(|| panic!("{t}/{id}: property {pid} not shown"));
                if v["type"] == "EnumEgenskap" {
                    assert_eq!(p["enum_id"], v["verdi"], "{t}/{id} {key}");
                } else if v["type"] == "FlyttallEgenskap" || v["type"] == "HeltallEgenskap" {
                    // a number the catalogue types as text is shown as its decimal text
                    let shown = match &p["verdi"] {
                        Value::String(s) => s.parse::<f64>().ok(),
                        other => other.as_f64(),
                    };
                    assert_eq!(shown, v["verdi"].as_f64(), "{t}/{id} {key}");
                } else {
                    assert_eq!(p["verdi"], v["verdi"], "{t}/{id} {key}");
                }
            }
        }
    }
    served
}

/// An object's placements as the file lists them (lines and points): sequence id, positions
/// (from ≤ to) and the lanes as v2's `felt` writes them (codes joined by `#`, "" = none).
fn fixture_placements(o: &Value) -> Vec<(u64, f64, f64, String)> {
    let st = &o["stedfesting"];
    let lanes = |l: &Value| {
        l["kjorefelt"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| c.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join("#")
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for l in st["linjer"].as_array().into_iter().flatten() {
        let (a, b) = (
            l["startposisjon"].as_f64().unwrap(),
            l["sluttposisjon"].as_f64().unwrap(),
        );
        out.push((l["id"].as_u64().unwrap(), a.min(b), a.max(b), lanes(l)));
    }
    for p in st["punkter"].as_array().into_iter().flatten() {
        let pos = p["posisjon"].as_f64().unwrap();
        out.push((p["id"].as_u64().unwrap(), pos, pos, lanes(p)));
    }
    out
}

/// GET every fixture object with `inkluder=lokasjon`; for those served, every shown placement
/// (`lokasjon.stedfestinger`) lies inside a placement of the file on its sequence and shows
/// that placement's lanes as `felt` (absent without lanes). Returns how many shown placements
/// have `felt`.
async fn check_lanes(base: &str, by_type: &BTreeMap<u32, Vec<Value>>) -> usize {
    let mut with_lanes = 0;
    for (t, objs) in by_type {
        for o in objs {
            let id = o["id"].as_u64().unwrap();
            let (status, body) = get(
                base.to_string(),
                format!("/vegobjekter/{t}/{id}?inkluder=lokasjon"),
            )
            .await;
            if status != 200 {
                continue;
            }
            let given = fixture_placements(o);
            for s in body["lokasjon"]["stedfestinger"].as_array().unwrap() {
                let link = s["veglenkeid"].as_u64().unwrap();
                let (from, to) = match s.get("posisjon") {
                    Some(p) => (p.as_f64().unwrap(), p.as_f64().unwrap()),
                    None => (
                        s["fra_posisjon"].as_f64().unwrap(),
                        s["til_posisjon"].as_f64().unwrap(),
                    ),
                };
                let p = given
                    .iter()
                    .find(|p| p.0 == link && p.1 - 1e-9 <= from && to <= p.2 + 1e-9)
                    .unwrap_or_else(|| panic!("{t}/{id}: {s} is no placement of the file"));
                if p.3.is_empty() {
                    assert!(s.get("felt").is_none(), "{t}/{id}: {s}");
                } else {
                    assert_eq!(s["felt"].as_str(), Some(p.3.as_str()), "{t}/{id}: {s}");
                    with_lanes += 1;
                }
            }
        }
    }
    with_lanes
}

/// The sequence ids of an object's placements (lines and points), as the file lists them.
fn placement_ids(o: &Value) -> Vec<u64> {
    let st = &o["stedfesting"];
    ["linjer", "punkter"]
        .iter()
        .flat_map(|k| st[*k].as_array().cloned().unwrap_or_default())
        .map(|l| l["id"].as_u64().unwrap())
        .collect()
}

/// Does sequence `s` (a fixture record) have a current veglenke (no sluttdato)?
fn has_current_link(s: &Value) -> bool {
    s["veglenker"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["gyldighetsperiode"].get("sluttdato").is_none())
}

/// The veglenke of sequence `s` covering link position `pos` (between its ports' positions).
fn link_at(s: &Value, pos: f64) -> Option<&Value> {
    let port = |n: &Value| {
        s["porter"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["nummer"] == *n)
            .and_then(|p| p["posisjon"].as_f64())
    };
    s["veglenker"].as_array().unwrap().iter().find(|l| {
        l["gyldighetsperiode"].get("sluttdato").is_none()
            && matches!((port(&l["startport"]), port(&l["sluttport"])), (Some(a), Some(b)) if a <= pos && pos <= b)
    })
}

fn objects_by_type(dir: &Path) -> BTreeMap<u32, Vec<Value>> {
    let mut by_type = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("vegobjekter")).unwrap() {
        let p = e.unwrap().path();
        let t: u32 = p.file_name().unwrap().to_str().unwrap().parse().unwrap();
        by_type.insert(t, records(&p, "vegobjekter"));
    }
    by_type
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A copy of the fixtures plus one test-made 915 (Kommunal veg 9999, as an NDJSON stream) over
/// every sample sequence; returns the source dir and the sequence ids.
fn covered_source(tmp: &Path) -> (PathBuf, HashSet<u64>) {
    let src = tmp.join("source");
    copy_dir(&fixtures(), &src);
    let sequences = records(&fixtures().join("veglenkesekvenser"), "veglenkesekvenser");
    let ids: HashSet<u64> = sequences
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    let cover = serde_json::json!({
        "id": 1, "versjon": 1, "typeId": 915, "gyldighetsperiode": {"startdato": "2020-01-01"},
        "egenskaper": {
            "11276": {"type": "EnumEgenskap", "verdi": 19027},
            "11277": {"type": "HeltallEgenskap", "verdi": 9999},
            "11278": {"type": "EnumEgenskap", "verdi": 19032}
        },
        "stedfesting": {"type": "StedfestingLinjer", "linjer": ids.iter().map(|id| serde_json::json!(
            {"id": id, "startposisjon": 0.0, "sluttposisjon": 1.0, "retning": "MED"})).collect::<Vec<_>>()},
        "sistEndret": "2025-01-01T00:00:00Z"
    });
    std::fs::write(
        src.join("vegobjekter/915/zz-cover.ndjson"),
        format!("{cover}\n"),
    )
    .unwrap();
    (src, ids)
}

/// A test-made 916 Strekning (S3D4) over all of 1938758 and 0.2–0.6 of 605545 (against):
/// rows on them carry hp 304 and metres counted from the start of its first placement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strekning_gives_hp_and_metres_along_its_placements() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = covered_source(tmp.path());
    let strekning = serde_json::json!({
        "id": 1003449570, "versjon": 3, "typeId": 916, "gyldighetsperiode": {"startdato": "2020-01-01"},
        "egenskaper": {
            "11281": {"type": "HeltallEgenskap", "verdi": 3},
            "11284": {"type": "HeltallEgenskap", "verdi": 4},
            "11292": {"type": "EnumEgenskap", "verdi": 19046}
        },
        "stedfesting": {"type": "StedfestingLinjer", "linjer": [
            {"id": 1938758, "startposisjon": 0.0, "sluttposisjon": 1.0, "retning": "MED"},
            {"id": 605545, "startposisjon": 0.2, "sluttposisjon": 0.6, "retning": "MOT"}
        ]},
        "sistEndret": "2025-01-01T00:00:00Z"
    });
    std::fs::create_dir_all(src.join("vegobjekter/916")).unwrap();
    std::fs::write(src.join("vegobjekter/916/s.json"), strekning.to_string()).unwrap();
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let summary = import_dir(&src, &data, &TypeSelection::parse("105").unwrap(), &|_| {}).unwrap();
    let len = |id: u64| {
        records(&fixtures().join("veglenkesekvenser"), "veglenkesekvenser")
            .into_iter()
            .find(|s| s["id"].as_u64() == Some(id))
            .unwrap()["lengde"]
            .as_f64()
            .unwrap()
    };
    let (len_a, len_b) = (len(1938758), len(605545));
    let base = serve(&data, summary.generation).await;
    let (_, rows_a) = get(base.clone(), "/vegnett/lenker/1938758".into()).await;
    for r in rows_a.as_array().unwrap() {
        let v = &r["vegreferanse"];
        assert_eq!(v["hp"], 304);
        let (f0, f1) = (
            r["startposisjon"].as_f64().unwrap(),
            r["sluttposisjon"].as_f64().unwrap(),
        );
        assert_eq!(v["fra_meter"].as_f64().unwrap(), (f0 * len_a).round());
        assert_eq!(v["til_meter"].as_f64().unwrap(), (f1 * len_a).round());
        // the vegsystemreferanse keeps the 916's own numbers, arm and direction
        let s = &r["vegsystemreferanse"]["strekning"];
        assert_eq!(
            (&s["strekning"], &s["delstrekning"]),
            (&3.into(), &4.into())
        );
        assert_eq!((&s["arm"], &s["retning"]), (&true.into(), &"MED".into()));
        assert_eq!(s["fra_meter"], v["fra_meter"]);
        assert_eq!(s["til_meter"], v["til_meter"]);
        // the successors' object references: the 916's and the covering 915's id and versjon
        assert_eq!((&s["id"], &s["versjon"]), (&1003449570.into(), &3.into()));
        let system = &r["vegsystemreferanse"]["vegsystem"];
        let id_version = |o: &Value| (o["id"].as_u64(), o["versjon"].as_u64());
        assert!(
            objects_by_type(&src)[&915]
                .iter()
                .any(|o| id_version(o) == id_version(system)),
            "{system}"
        );
    }
    let (_, rows_b) = get(base.clone(), "/vegnett/lenker/605545".into()).await;
    let mut inside = 0;
    for r in rows_b.as_array().unwrap() {
        let v = &r["vegreferanse"];
        let (f0, f1) = (
            r["startposisjon"].as_f64().unwrap(),
            r["sluttposisjon"].as_f64().unwrap(),
        );
        if f0 >= 0.2 - 1e-9 && f1 <= 0.6 + 1e-9 {
            inside += 1;
            assert_eq!(v["hp"], 304);
            let s = &r["vegsystemreferanse"]["strekning"];
            assert_eq!((&s["strekning"], &s["retning"]), (&3.into(), &"MOT".into()));
            assert_eq!(s["fra_meter"], v["fra_meter"]);
            assert_eq!(s["til_meter"], v["til_meter"]);
            // against the sequence: metres grow from 0.6 down to 0.2
            assert_eq!(
                v["fra_meter"].as_f64().unwrap(),
                (len_a + (0.6 - f1) * len_b).round()
            );
            assert_eq!(
                v["til_meter"].as_f64().unwrap(),
                (len_a + (0.6 - f0) * len_b).round()
            );
        } else {
            assert_eq!(v["hp"], 1, "fallback outside the 916");
            let s = &r["vegsystemreferanse"]["strekning"];
            assert_eq!(
                (&s["strekning"], &s["delstrekning"]),
                (&0.into(), &1.into())
            );
            assert!(s.get("id").is_none() && s.get("versjon").is_none(), "{r}");
        }
    }
    // split at the 915 end at 0.476: two pieces, so with and against give different metres
    assert!(inside >= 2, "{inside}");
}

/// The real objects of 105, 538, 591, 616 and 821 lie on sequences the samples' 915 objects do
/// not cover. With one test-made 915 (Kommunal veg 9999) over every sample sequence added as an
/// NDJSON stream, every real object whose sequences are in the samples is imported and served
/// with its real values; `--types` limits what is imported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_objects_on_covered_sequences_are_served_with_their_values() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, ids) = covered_source(tmp.path());
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let chosen = TypeSelection::parse("105,538,591,616,821").unwrap();
    let summary = import_dir(&src, &data, &chosen, &|_| {}).unwrap();
    println!("{}", summary.render());
    let by_type: BTreeMap<u32, Vec<Value>> = objects_by_type(&src)
        .into_iter()
        .filter(|(t, _)| *t != 915)
        .collect();
    // expected: objects with at least one placement on a sample sequence
    for (t, objs) in &by_type {
        let expected = objs
            .iter()
            .filter(|o| {
                o["stedfesting"]["linjer"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| ids.contains(&l["id"].as_u64().unwrap()))
            })
            .count();
        assert_eq!(
            summary.objects_imported.get(t).copied().unwrap_or(0),
            expected,
            "type {t}"
        );
    }
    assert!(!summary.objects_imported.contains_key(&915));
    let base = serve(&data, summary.generation).await;
    let served = check_objects(&base, &by_type).await;
    assert_eq!(served, summary.objects_imported.values().sum::<usize>());
    assert!(served >= 10, "{served}");
    let (status, _) = get(base.clone(), "/vegobjekter/915/1002308426".into()).await;
    assert_eq!(status, 404);
    // every piece of a current veglenke is now covered: no sequence is left out
    assert!(!summary
        .skipped
        .keys()
        .any(|r| r.contains("not covered by any 915")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_samples_import_and_are_served_with_real_ids_geometry_and_values() {
    let tmp = tempfile::tempdir().unwrap();
    let data = DataDir::open(tmp.path()).unwrap();
    let summary = import_dir(&fixtures(), &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    println!("{}", summary.render());

    // counts from the files
    let sequences = records(&fixtures().join("veglenkesekvenser"), "veglenkesekvenser");
    assert_eq!(summary.sequences_read, sequences.len());
    let links: usize = sequences
        .iter()
        .map(|s| s["veglenker"].as_array().unwrap().len())
        .sum();
    assert_eq!(summary.links_read, links);
    let by_type = objects_by_type(&fixtures());
    let read: BTreeMap<u32, usize> = by_type.iter().map(|(t, v)| (*t, v.len())).collect();
    assert_eq!(summary.objects_read, read);
    // every object read is either imported or counted as skipped with a reason
    let skipped_objects: usize = summary
        .skipped
        .iter()
        .filter(|(r, _)| {
            r.contains("object with no placement") || r.contains("object type not in the catalogue")
        })
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        summary.objects_imported.values().sum::<usize>() + skipped_objects,
        read.values().sum::<usize>()
    );
    // every sequence with a current veglenke comes in, with or without a road reference (in
    // the samples: all 45, though 915 Vegsystem covers only 12 of them)
    let current: HashSet<u64> = sequences
        .iter()
        .filter(|s| has_current_link(s))
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    assert_eq!(current.len(), sequences.len());
    assert_eq!(summary.sequences_imported, current.len());
    // every object with a placement on one of them comes in (the 8 speed limits too); only
    // placements on sequences absent from the source are dropped, each counted
    let catalog = Catalog::embedded();
    let mut absent_placements: BTreeMap<u32, usize> = BTreeMap::new();
    for (t, objs) in &by_type {
        if catalog.object_type(*t).is_none() {
            continue;
        }
        let expected = objs
            .iter()
            .filter(|o| placement_ids(o).iter().any(|i| current.contains(i)))
            .count();
        assert_eq!(
            summary.objects_imported.get(t).copied().unwrap_or(0),
            expected,
            "type {t}"
        );
        let absent: usize = objs
            .iter()
            .map(|o| {
                placement_ids(o)
                    .iter()
                    .filter(|i| !current.contains(i))
                    .count()
            })
            .sum();
        if absent > 0 {
            absent_placements.insert(*t, absent);
        }
    }
    assert_eq!(summary.objects_imported.get(&105), Some(&8));
    assert_eq!(
        summary.objects_imported.values().sum::<usize>(),
        read.values().sum::<usize>()
    );
    for (t, n) in &absent_placements {
        assert_eq!(
            summary.skipped.get(&format!("type {t}: placement on a veglenkesekvens absent from the source (or without a current veglenke)")),
            Some(n),
            "type {t}"
        );
    }
    assert!(!absent_placements.is_empty());
    // 616's egenskapstyper that the embedded catalogue lacks are counted per occurrence
    let unknown_616: usize = by_type[&616]
        .iter()
        .flat_map(|o| o["egenskaper"].as_object().unwrap().keys())
        .filter(|k| k.as_str() != "5528")
        .count();
    let counted_616: usize = summary
        .skipped
        .iter()
        .filter(|(r, _)| {
            r.starts_with("type 616: egenskapstype") && r.ends_with("not in the catalogue")
        })
        .map(|(_, n)| n)
        .sum();
    assert!(unknown_616 > 0);
    // only objects that were placed on the network reach the property mapping
    assert!(counted_616 <= unknown_616);

    let base = serve(&data, summary.generation).await;
    let get = |path: String| get(base.clone(), path);

    // sequences: every one served has its real id and the first point of a current veglenke
    // whose start port is at position 0 (EPSG:5973 is UTM33 + NN2000: same x/y in storage)
    let mut served = HashSet::new();
    for s in &sequences {
        let id = s["id"].as_u64().unwrap();
        let (status, body) = get(format!("/vegnett/lenker/{id}")).await;
        if status != 200 {
            assert_eq!(status, 404, "sequence {id}");
            continue;
        }
        served.insert(id);
        let rows = body.as_array().unwrap();
        assert!(rows.iter().all(|r| r["veglenkeid"].as_u64() == Some(id)));
        let port0: Vec<u64> = s["porter"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["posisjon"].as_f64() == Some(0.0))
            .map(|p| p["nummer"].as_u64().unwrap())
            .collect();
        let first_row = rows
            .iter()
            .find(|r| r["startposisjon"].as_f64() == Some(0.0));
        let first_link = s["veglenker"].as_array().unwrap().iter().find(|l| {
            port0.contains(&l["startport"].as_u64().unwrap())
                && l["gyldighetsperiode"].get("sluttdato").is_none()
        });
        if let (Some(row), Some(link)) = (first_row, first_link) {
            let (ax, ay) = first_point(row["geometri"]["wkt"].as_str().unwrap());
            let (sx, sy) = first_point(link["geometri"]["wkt"].as_str().unwrap());
            assert!(
                (ax - sx).abs() < 0.01 && (ay - sy).abs() < 0.01,
                "sequence {id}: {ax},{ay} vs {sx},{sy}"
            );
            assert_eq!(row["kommune"].as_u64(), link["kommune"].as_u64());
        }
    }
    assert!(served.len() >= 3, "served sequences: {served:?}");
    assert_eq!(served.len(), summary.sequences_imported);

    // every row: a road reference exactly where a 915 covers it, and the medium of its
    // veglenke (Uberiket's number 2 = L; absent = T)
    let covered: Vec<(u64, f64, f64)> = by_type[&915]
        .iter()
        .flat_map(|o| o["stedfesting"]["linjer"].as_array().unwrap().clone())
        .map(|l| {
            let (a, b) = (
                l["startposisjon"].as_f64().unwrap(),
                l["sluttposisjon"].as_f64().unwrap(),
            );
            (l["id"].as_u64().unwrap(), a.min(b), a.max(b))
        })
        .collect();
    let (mut with_ref, mut without_ref, mut in_air) = (0, 0, HashSet::new());
    for s in &sequences {
        let id = s["id"].as_u64().unwrap();
        let (status, body) = get(format!("/vegnett/lenker/{id}")).await;
        assert_eq!(status, 200, "sequence {id}");
        for row in body.as_array().unwrap() {
            let mid = (row["startposisjon"].as_f64().unwrap()
                + row["sluttposisjon"].as_f64().unwrap())
                / 2.0;
            let is_covered = covered
                .iter()
                .any(|&(c, a, b)| c == id && a <= mid && mid <= b);
            assert_eq!(
                row.get("vegreferanse").is_some(),
                is_covered,
                "sequence {id} at {mid}: {row}"
            );
            if is_covered {
                with_ref += 1;
            } else {
                without_ref += 1;
            }
            let link = link_at(s, mid).unwrap();
            let want = if link["geometri"]["medium"] == 2 {
                in_air.insert((id, link["nummer"].as_u64().unwrap()));
                "L"
            } else {
                "T"
            };
            assert_eq!(row["medium"], want, "sequence {id} at {mid}");
        }
    }
    assert!(with_ref > 0 && without_ref > 0, "{with_ref} {without_ref}");
    // 6 veglenker carry medium 2, one of them closed (605545 #2, not in the network)
    assert_eq!(in_air.len(), 5, "{in_air:?}");

    // an object on links without a road reference: 200, no vegreferanser, no vegsegmenter,
    // its placements and geometry kept
    for q in [
        "/vegobjekter/105/78712521?inkluder=alle",
        "/vegobjekter/105/78712521",
    ] {
        let (status, body) = get(q.into()).await;
        assert_eq!(status, 200, "{q}: {body}");
        assert_eq!(
            body["lokasjon"]["vegreferanser"],
            serde_json::json!([]),
            "{q}"
        );
        assert_eq!(
            body["lokasjon"]["stedfestinger"][0]["veglenkeid"].as_u64(),
            Some(365652),
            "{q}"
        );
        assert!(body["geometri"]["wkt"].as_str().is_some(), "{q}");
    }
    let (_, body) = get("/vegobjekter/105/78712521?inkluder=alle".into()).await;
    assert_eq!(body["vegsegmenter"], serde_json::json!([]));
    // lists, statistics and the road-reference filters answer, without a server error
    let (status, body) = get("/vegobjekter/105?inkluder=alle".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["objekter"].as_array().unwrap().len(), 8);
    let (status, body) = get("/vegobjekter/105/statistikk".into()).await;
    assert_eq!((status, body["antall"].as_u64()), (200, Some(8)), "{body}");
    // a link position on such a link: no position answer (a position carries a road reference)
    let (status, _) = get("/veg?veglenke=0.5@365652".into()).await;
    assert_eq!(status, 204);
    let (status, body) = get("/vegobjekter/105?vegreferanse=K".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"]["returnert"].as_u64(), Some(0), "{body}");
    let (status, body) = get("/vegnett/lenker?vegreferanse=K&antall=1000".into()).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("vegreferanse").is_some()));
    // /posisjon on a point of 365652 never answers with that link
    let seq_365652 = sequences.iter().find(|s| s["id"] == 365652).unwrap();
    let (x, y) = first_point(
        seq_365652["veglenker"][0]["geometri"]["wkt"]
            .as_str()
            .unwrap(),
    );
    let (status, body) = get(format!(
        "/posisjon?ost={x}&nord={y}&srid=5973&maks_avstand=5000&maks_antall=10"
    ))
    .await;
    assert!(status == 200 || status == 404, "{status} {body}");
    assert!(body
        .as_array()
        .into_iter()
        .flatten()
        .all(|p| p["veglenke"]["id"] != 365652));
    let ogc = base.replace("/nvdb/api/v2", "");
    let (status, body) =
        reqwest_get(&format!("{ogc}/ogc/collections/vegnett/items?limit=1000")).await;
    assert_eq!(status, 200, "{body}");
    // the OGC features are the same rows: as many without a road reference as above
    let fc: Value = serde_json::from_str(&body).unwrap();
    let features = fc["features"].as_array().unwrap();
    assert_eq!(features.len(), with_ref + without_ref);
    assert_eq!(
        features
            .iter()
            .filter(|f| f["properties"].get("vegreferanse").is_none())
            .count(),
        without_ref
    );

    let objects_served = check_objects(&base, &by_type).await;
    assert_eq!(
        objects_served,
        summary.objects_imported.values().sum::<usize>()
    );
    // lanes (kjorefelt) come through as `felt`: on every placement of the samples that has
    // them (2 of type 591), none dropped or counted
    let with_lanes = check_lanes(&base, &by_type).await;
    let in_samples: usize = by_type
        .values()
        .flatten()
        .flat_map(fixture_placements)
        .filter(|p| !p.3.is_empty())
        .count();
    assert_eq!(with_lanes, in_samples);
    assert!(in_samples >= 2, "{in_samples}");
    assert!(
        !summary.skipped.keys().any(|r| r.contains("kjorefelt")),
        "{:?}",
        summary.skipped
    );
    // the road system object on 1938758 (covering it fully) carries Vegnummer 17308
    let (status, body) = get("/vegobjekter/915/1002308426?inkluder=alle".into()).await;
    assert_eq!(status, 200, "{body}");
    let nummer = body["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == 11277)
        .unwrap();
    assert_eq!(nummer["verdi"].as_i64(), Some(17308));
}

/// A `GeometriEgenskap` is the object's own geometry: stored, shown as `geometri` with
/// `egengeometri: true` and as the geometry property; one of the wrong kind is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_geometry_is_imported_and_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("source");
    copy_dir(&fixtures(), &src);
    // a line beside 41383 (its first two vertices, 2 m east) as 591's "Geometri, linje"
    let seq: Value = serde_json::from_str(
        &std::fs::read_to_string(src.join("veglenkesekvenser/veglenkesekvens-41383.json")).unwrap(),
    )
    .unwrap();
    let wkt = seq["veglenker"][0]["geometri"]["wkt"].as_str().unwrap();
    let body = &wkt[wkt.find('(').unwrap() + 1..wkt.rfind(')').unwrap()];
    let pts: Vec<Vec<f64>> = body
        .split(',')
        .take(2)
        .map(|p| p.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    let line: Vec<(f64, f64, f64)> = pts.iter().map(|p| (p[0] + 2.0, p[1], p[2])).collect();
    let own = format!(
        "LINESTRING Z({})",
        line.iter()
            .map(|(x, y, z)| format!("{x} {y} {z}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let edit = |path: &str, key: &str, wkt: &str| {
        let p = src.join(path);
        let mut o: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        o["egenskaper"][key] = serde_json::json!(
            {"type": "GeometriEgenskap", "verdi": {"wkt": wkt, "srid": 5973}});
        std::fs::write(&p, o.to_string()).unwrap();
    };
    edit("vegobjekter/591/vegobjekt-591-848324148.json", "6924", &own);
    // a point for 105's line property: not the datatype's kind, counted
    edit(
        "vegobjekter/105/vegobjekt-105-78712521.json",
        "11845",
        &format!("POINT Z({} {} {})", line[0].0, line[0].1, line[0].2),
    );
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let summary = import_dir(
        &src,
        &data,
        &TypeSelection::parse("105,591").unwrap(),
        &|_| {},
    )
    .unwrap();
    println!("{}", summary.render());
    let own_skips: Vec<(&String, &usize)> = summary
        .skipped
        .iter()
        .filter(|(r, _)| r.contains("own geometry"))
        .collect();
    assert_eq!(
        own_skips,
        vec![(
            &"type 105: egenskapstype 11845: own geometry not stored: not the datatype's kind (surfaces are not stored)".to_string(),
            &1
        )]
    );
    let base = serve(&data, summary.generation).await;
    let (status, body) = get(
        base.clone(),
        "/vegobjekter/591/848324148?inkluder=alle&srid=5973".into(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["geometri"]["egengeometri"], true, "{body}");
    let shown = body["geometri"]["wkt"].as_str().unwrap();
    assert!(shown.starts_with("LINESTRING"), "{shown}");
    let (x, y) = first_point(shown);
    assert!(
        (x - line[0].0).abs() < 0.01 && (y - line[0].1).abs() < 0.01,
        "{shown} vs {own}"
    );
    let prop = body["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == 6924)
        .unwrap_or_else(|| panic!("no 6924 in {body}"));
    let (px, py) = first_point(prop["verdi"].as_str().unwrap());
    assert!((px - line[0].0).abs() < 0.01 && (py - line[0].1).abs() < 0.01);
    // the speed limit keeps its placement's geometry
    let (status, body) = get(base, "/vegobjekter/105/78712521?inkluder=alle".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["geometri"]["egengeometri"], true, "{body}");
    assert!(!body["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["id"] == 11845));
    // lane placements are kept, not counted
    assert!(!summary.skipped.keys().any(|r| r.contains("kjorefelt")));
}

/// The real binary: a summary on stdout and a published generation; a truncated page and a
/// bad `--types` fail with a message naming the problem and publish nothing.
#[test]
fn the_command_imports_and_refuses_bad_input() {
    let bin = env!("CARGO_BIN_EXE_vegdb");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = std::process::Command::new(bin)
        .args(["import", "--types", "915,105", "--source"])
        .arg(fixtures())
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("generation 1: "), "{stdout}");
    assert!(
        stdout.contains("type 915: 7 of 7 objects imported"),
        "{stdout}"
    );
    assert_eq!(DataDir::open(&data).unwrap().current().unwrap(), Some(1));

    let bad = tmp.path().join("bad");
    copy_dir(&fixtures(), &bad);
    let page = bad.join("veglenkesekvenser/veglenkesekvens-8967.json");
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(&page, &text[..text.len() / 2]).unwrap();
    let out = std::process::Command::new(bin)
        .args(["import", "--source"])
        .arg(&bad)
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("veglenkesekvens-8967.json"), "{stderr}");
    assert_eq!(DataDir::open(&data).unwrap().current().unwrap(), Some(1));

    let out = std::process::Command::new(bin)
        .args(["import", "--types", "105,x", "--source"])
        .arg(fixtures())
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a type id: 'x'"));
}

/// (path, start, X-Client) of one call to the stand-in.
type Call = (String, Option<u64>, Option<String>);

/// A local stand-in for the Uberiket API: serves the fixture records on the `/stream` endpoints
/// (`start` = after this id, `antall`), records every call, and injects faults by call number.
#[derive(Default)]
struct StandIn {
    streams: BTreeMap<String, Vec<(u64, String)>>,
    /// (path, start, X-Client) of every call.
    calls: std::sync::Mutex<Vec<Call>>,
    /// call number (1-based) -> fault: 503, 502 or "truncate"
    faults: BTreeMap<usize, &'static str>,
    /// When set, every call answers 404 (the upstream goes away: the run dies).
    dead: std::sync::atomic::AtomicBool,
    /// Calls being answered now, and the most at once; each answer waits `delay_ms`.
    in_flight: std::sync::atomic::AtomicUsize,
    max_in_flight: std::sync::atomic::AtomicUsize,
    delay_ms: u64,
}

fn stand_in_records() -> BTreeMap<String, Vec<(u64, String)>> {
    let mut streams = BTreeMap::new();
    let mut put = |name: String, recs: Vec<Value>| {
        let mut v: Vec<(u64, String)> = recs
            .into_iter()
            .map(|r| (r["id"].as_u64().unwrap(), r.to_string()))
            .collect();
        v.sort();
        streams.insert(name, v);
    };
    put(
        "/vegnett/veglenkesekvenser/stream".into(),
        records(&fixtures().join("veglenkesekvenser"), "veglenkesekvenser"),
    );
    for (t, recs) in objects_by_type(&fixtures()) {
        put(format!("/vegobjekter/{t}/stream"), recs);
    }
    streams
}

async fn stand_in_handler(
    axum::extract::State(s): axum::extract::State<Arc<StandIn>>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let path = uri.path().trim_start_matches("/api/v1").to_string();
    let q: BTreeMap<String, String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let start = q.get("start").map(|v| v.parse::<u64>().unwrap());
    let antall: usize = q.get("antall").map(|v| v.parse().unwrap()).unwrap_or(1000);
    let client = headers
        .get("X-Client")
        .map(|v| v.to_str().unwrap().to_string());
    let n = {
        let mut calls = s.calls.lock().unwrap();
        calls.push((path.clone(), start, client));
        calls.len()
    };
    if s.delay_ms > 0 {
        use std::sync::atomic::Ordering::SeqCst;
        let now = s.in_flight.fetch_add(1, SeqCst) + 1;
        s.max_in_flight.fetch_max(now, SeqCst);
        tokio::time::sleep(Duration::from_millis(s.delay_ms)).await;
        s.in_flight.fetch_sub(1, SeqCst);
    }
    if s.dead.load(std::sync::atomic::Ordering::SeqCst) {
        return (axum::http::StatusCode::NOT_FOUND, "gone").into_response();
    }
    let body: String = s
        .streams
        .get(&path)
        .map(|v| {
            v.iter()
                .filter(|(id, _)| start.is_none_or(|s| *id > s))
                .take(antall)
                .map(|(_, l)| format!("{l}\n"))
                .collect()
        })
        .unwrap_or_default();
    match s.faults.get(&n) {
        Some(&"503") => (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy").into_response(),
        Some(&"502") => (axum::http::StatusCode::BAD_GATEWAY, "bad gateway").into_response(),
        Some(&"truncate") => body[..body.len() / 2].to_string().into_response(),
        _ => body.into_response(),
    }
}

/// `--source URL` against the stand-in: faults (503, a truncated body, 502) are retried; the
/// upstream dying mid-run fails the run with progress saved; the next run resumes after the
/// last saved id (no call restarts a finished stream); every call sends `X-Client: vegdb`; and
/// the download imports to the same result as the fixture directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_retries_resumes_and_imports_like_the_files() {
    use vegdb::import::download::{download, DownloadOptions};
    let stand = Arc::new(StandIn {
        streams: stand_in_records(),
        faults: BTreeMap::from([(1, "503"), (3, "truncate"), (6, "502")]),
        ..Default::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .fallback(stand_in_handler)
        .with_state(stand.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let base = format!("http://{addr}/api/v1");
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("download");
    let types = vec![105, 538, 591, 616, 821, 915];
    let opts = DownloadOptions {
        batch: 5,
        attempts: 4,
        backoff: Duration::from_millis(5),
        timeout: Duration::from_secs(10),
        concurrency: 1,
    };

    // run 1 dies when the upstream goes away after 9 calls
    let (b, d, t, o, s) = (
        base.clone(),
        dest.clone(),
        types.clone(),
        opts.clone(),
        stand.clone(),
    );
    let watcher = tokio::spawn(async move {
        loop {
            if s.calls.lock().unwrap().len() >= 9 {
                s.dead.store(true, std::sync::atomic::Ordering::SeqCst);
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let first = tokio::task::spawn_blocking(move || download(&b, &d, &t, &o, &|_| {}))
        .await
        .unwrap();
    watcher.await.unwrap();
    let err = first.unwrap_err().to_string();
    assert!(err.contains("404"), "{err}");
    let calls_run1 = stand.calls.lock().unwrap().len();
    let saved: Value = serde_json::from_slice(
        &std::fs::read(dest.join("veglenkesekvenser/progress.state")).unwrap(),
    )
    .unwrap();
    let saved_last = saved["last_id"]
        .as_u64()
        .expect("progress saved before the failure");

    // run 2 resumes
    stand.dead.store(false, std::sync::atomic::Ordering::SeqCst);
    let (b, d, t, o) = (base.clone(), dest.clone(), types.clone(), opts.clone());
    let reports = tokio::task::spawn_blocking(move || download(&b, &d, &t, &o, &|_| {}))
        .await
        .unwrap()
        .unwrap();
    let calls = stand.calls.lock().unwrap().clone();
    assert!(calls.iter().all(|c| c.2.as_deref() == Some("vegdb")));
    let first_of_run2 = &calls[calls_run1];
    assert_eq!(first_of_run2.0, "/vegnett/veglenkesekvenser/stream");
    assert!(
        first_of_run2.1.is_some_and(|s| s >= saved_last),
        "{first_of_run2:?} {saved_last}"
    );
    assert_eq!(reports[0].resumed_from, first_of_run2.1);
    // faults were retried in run 1 (3 of them), none in run 2
    assert_eq!(reports.iter().map(|r| r.retries).sum::<usize>(), 0);
    // the downloaded records are exactly the upstream's, each once
    for (name, recs) in &stand.streams {
        let dir = if name.starts_with("/vegnett") {
            dest.join("veglenkesekvenser")
        } else {
            dest.join(name.trim_start_matches('/').trim_end_matches("/stream"))
        };
        let got: Vec<u64> = records(&dir, "")
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = recs.iter().map(|r| r.0).collect();
        assert_eq!(got, want, "{name}");
    }

    let data_a = DataDir::open(tmp.path().join("a")).unwrap();
    let data_b = DataDir::open(tmp.path().join("b")).unwrap();
    let sel = TypeSelection::Only(types.clone());
    let mut a = import_dir(&dest, &data_a, &sel, &|_| {}).unwrap();
    let mut b = import_dir(&fixtures(), &data_b, &sel, &|_| {}).unwrap();
    a.seconds = 0.0;
    b.seconds = 0.0;
    a.phases.clear();
    b.phases.clear();
    assert_eq!(a, b);
}

/// `--concurrency 3`: streams are downloaded in parallel (never more than 3 calls at once, and
/// more than one), with the same records as one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_download_is_bounded_and_downloads_the_same() {
    use std::sync::atomic::Ordering::SeqCst;
    use vegdb::import::download::{download, DownloadOptions};
    let stand = Arc::new(StandIn {
        streams: stand_in_records(),
        delay_ms: 30,
        ..Default::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .fallback(stand_in_handler)
        .with_state(stand.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let base = format!("http://{addr}/api/v1");
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("download");
    let opts = DownloadOptions {
        batch: 3,
        attempts: 2,
        backoff: Duration::from_millis(5),
        timeout: Duration::from_secs(10),
        concurrency: 3,
    };
    let (b, d) = (base.clone(), dest.clone());
    let types = vec![105, 538, 591, 616, 821, 915];
    let t = types.clone();
    let reports = tokio::task::spawn_blocking(move || download(&b, &d, &t, &opts, &|_| {}))
        .await
        .unwrap()
        .unwrap();
    let max = stand.max_in_flight.load(SeqCst);
    assert!((2..=3).contains(&max), "{max} calls at once");
    assert_eq!(reports[0].name, "veglenkesekvenser");
    for (name, recs) in &stand.streams {
        let dir = if name.starts_with("/vegnett") {
            dest.join("veglenkesekvenser")
        } else {
            dest.join(name.trim_start_matches('/').trim_end_matches("/stream"))
        };
        let got: Vec<u64> = records(&dir, "")
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = recs.iter().map(|r| r.0).collect();
        assert_eq!(got, want, "{name}");
    }
}

/// A veglenke whose WKT holds a finite, absurd vertex (`1e20`, `±1e308`) imported
/// with exit 0 and published a generation no server could load (the grid grew by ~1 GB/s, the
/// R-tree panicked). Now each such veglenke is skipped and counted like other bad records, and
/// the generation loads with every other row of the same import without them.
#[test]
fn a_veglenke_with_an_absurd_vertex_is_skipped_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = covered_source(tmp.path());
    let sel = TypeSelection::parse("915").unwrap();
    let clean = DataDir::open(tmp.path().join("clean")).unwrap();
    let clean_summary = import_dir(&src, &clean, &sel, &|_| {}).unwrap();

    // two current veglenker of 41423 get an extra vertex: one at x = 1e20, one at ±1e308
    let page = src.join("veglenkesekvenser/veglenkesekvens-41423.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&page).unwrap()).unwrap();
    let seq = &mut doc["veglenkesekvenser"][0];
    let port = |seq: &Value, n: &Value| {
        seq["porter"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["nummer"] == *n)
            .unwrap()["posisjon"]
            .as_f64()
            .unwrap()
    };
    let mut spoiled = Vec::new();
    for (i, vertex) in [(0, "1e20 7041316 55"), (1, "-1e308 1e308 0")] {
        let link = &seq["veglenker"][i];
        assert!(link["gyldighetsperiode"]["sluttdato"].is_null());
        spoiled.push((port(seq, &link["startport"]), port(seq, &link["sluttport"])));
        let wkt = seq["veglenker"][i]["geometri"]["wkt"].as_str().unwrap();
        let at = wkt.find(',').unwrap();
        let wkt = format!("{}, {vertex}{}", &wkt[..at], &wkt[at..]);
        seq["veglenker"][i]["geometri"]["wkt"] = Value::String(wkt);
    }
    std::fs::write(&page, doc.to_string()).unwrap();

    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let summary = import_dir(&src, &data, &sel, &|_| {}).unwrap();
    let outside: usize = summary
        .skipped
        .iter()
        .filter(|(r, _)| r.contains("outside the storage extent"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(outside, 2, "{}", summary.render());
    assert!(summary
        .render()
        .contains("veglenke: coordinate outside the storage extent"));
    assert_eq!(summary.links_read, clean_summary.links_read);

    let rows = |data: &DataDir, id: u64| {
        let (g, _) = Generation::load(&data.generation_dir(id), &|_| {}).unwrap();
        let n = &g.network;
        (0..n.len())
            .map(|r| {
                (
                    n.link_id[r],
                    n.from_pos[r],
                    n.to_pos[r],
                    n.geometry(r).to_vec(),
                )
            })
            .collect::<Vec<_>>()
    };
    let expected: Vec<_> = rows(&clean, clean_summary.generation)
        .into_iter()
        .filter(|(link, from, to, _)| {
            !(*link == 41423
                && spoiled
                    .iter()
                    .any(|&(a, b)| *from >= a - 1e-12 && *to <= b + 1e-12))
        })
        .collect();
    let got = rows(&data, summary.generation);
    assert!(got.len() < rows(&clean, clean_summary.generation).len());
    assert_eq!(got, expected);
}

/// `detaljniva` of every veglenke, `medium` and the 916/920 attributes are kept on the rows,
/// and each network attribute filter of `/vegnett/lenker` returns exactly the rows whose
/// source says so. The samples hold VEGTRASE and VEGTRASE_OG_KJOREBANE veglenker; two sample
/// sequences are copied with every veglenke relabelled KJOREBANE (41718) and KJOREFELT
/// (365652), so each detail level has real veglenker; a test-made 916 (adskilte løp mot,
/// trafikantgruppe G) lies on 493278 and a test-made 920 Sideanleggsdel on 41658.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detail_levels_and_road_system_attributes_are_kept_and_filtered() {
    use vegdb::snapshot::columns::DETAIL_LEVELS;
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = covered_source(tmp.path());
    let seq_dir = src.join("veglenkesekvenser");
    for (id, level) in [(41718, "KJOREBANE"), (365652, "KJOREFELT")] {
        let path = seq_dir.join(format!("veglenkesekvens-{id}.json"));
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for l in v["veglenkesekvenser"][0]["veglenker"]
            .as_array_mut()
            .unwrap()
        {
            l["detaljniva"] = level.into();
        }
        std::fs::write(&path, v.to_string()).unwrap();
    }
    let placed = |type_id: u32, id: u64, seq: u64, egenskaper: Value| {
        serde_json::json!({
            "id": id, "versjon": 1, "typeId": type_id,
            "gyldighetsperiode": {"startdato": "2020-01-01"}, "egenskaper": egenskaper,
            "stedfesting": {"type": "StedfestingLinjer", "linjer": [
                {"id": seq, "startposisjon": 0.0, "sluttposisjon": 1.0, "retning": "MED"}]},
            "sistEndret": "2025-01-01T00:00:00Z"
        })
    };
    let strekning = placed(
        916,
        2,
        493278,
        serde_json::json!({
            "11281": {"type": "HeltallEgenskap", "verdi": 1},
            "11284": {"type": "HeltallEgenskap", "verdi": 1},
            "11283": {"type": "EnumEgenskap", "verdi": 19091},
            "11289": {"type": "EnumEgenskap", "verdi": 19037}
        }),
    );
    let side = placed(
        920,
        3,
        41658,
        serde_json::json!({"11291": {"type": "EnumEgenskap", "verdi": 19045}}),
    );
    for (t, o) in [(916, strekning), (920, side)] {
        std::fs::create_dir_all(src.join(format!("vegobjekter/{t}"))).unwrap();
        std::fs::write(src.join(format!("vegobjekter/{t}/o.json")), o.to_string()).unwrap();
    }
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    let summary = import_dir(&src, &data, &TypeSelection::parse("105").unwrap(), &|_| {}).unwrap();
    let (g, _) = Generation::load(&data.generation_dir(summary.generation), &|_| {}).unwrap();
    let sequences = records(&seq_dir, "veglenkesekvenser");
    let n = &g.network;
    // per row (link id, start position): its source veglenke
    let mut expected: BTreeMap<&str, HashSet<(u64, String)>> = BTreeMap::new();
    let key = |link: u64, from: f64| (link, format!("{from:.6}"));
    for r in 0..n.len() {
        let s = sequences
            .iter()
            .find(|s| s["id"].as_u64() == Some(n.link_id[r]))
            .unwrap();
        let link = link_at(s, (n.from_pos[r] + n.to_pos[r]) / 2.0).unwrap();
        let level = link["detaljniva"].as_str().unwrap();
        assert_eq!(DETAIL_LEVELS[n.detail_level[r] as usize], level, "row {r}");
        let medium = if link["geometri"]["medium"] == 2 {
            b'L'
        } else {
            b'T'
        };
        assert_eq!(n.medium[r], medium, "row {r}");
        let on = |id: u64| n.link_id[r] == id;
        let gs = link["typeVeg"] == "GANG_OG_SYKKELVEG";
        assert_eq!(
            n.traffic_group[r],
            if on(493278) || gs { b'G' } else { b'K' }
        );
        assert_eq!(n.separate_carriageways[r], if on(493278) { 2 } else { 0 });
        assert_eq!(n.side_facility[r], on(41658), "row {r}");
        let short = ["VT", "KB", "KF", "VTKB"][n.detail_level[r] as usize];
        let k = key(n.link_id[r], n.from_pos[r]);
        expected.entry(short).or_default().insert(k.clone());
        if on(493278) {
            expected
                .entry("adskiltelop=Mot")
                .or_default()
                .insert(k.clone());
        }
        if on(493278) || gs {
            expected
                .entry("trafikantgruppe=g")
                .or_default()
                .insert(k.clone());
        }
        if on(41658) {
            expected.entry("sideanlegg=true").or_default().insert(k);
        }
    }
    let base = serve(&data, summary.generation).await;
    let answer = |q: String| {
        let base = base.clone();
        async move {
            let (status, body) = get(base, format!("/vegnett/lenker?antall=10000&{q}")).await;
            assert_eq!(status, 200, "{q}: {body}");
            body["objekter"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    key(
                        l["veglenkeid"].as_u64().unwrap(),
                        l["startposisjon"].as_f64().unwrap(),
                    )
                })
                .collect::<HashSet<_>>()
        }
    };
    for level in ["VT", "KB", "KF", "VTKB"] {
        let want = &expected[level];
        assert!(!want.is_empty(), "{level}");
        assert_eq!(
            &answer(format!("detaljniva={level}")).await,
            want,
            "{level}"
        );
    }
    for q in ["adskiltelop=Mot", "trafikantgruppe=g", "sideanlegg=true"] {
        let want = &expected[q];
        assert!(!want.is_empty(), "{q}");
        assert_eq!(&answer(q.to_string()).await, want, "{q}");
    }
    let (status, body) = get(base.clone(), "/vegnett/lenker?detaljniva=VX".into()).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body[0]["code"], 4006, "{body}");
}

/// The vegsystemreferanse (category, phase, number) of a 915 Vegsystem of the samples, by the
/// catalogue's value ids of vegkategori (11276) and vegfase (11278), written out here.
fn road_system_of(o: &Value) -> (char, char, u64) {
    let e = &o["egenskaper"];
    let category = match e["11276"]["verdi"].as_u64().unwrap() {
        19024 => 'E',
        19025 => 'R',
        19026 => 'F',
        19027 => 'K',
        19028 => 'P',
        19029 => 'S',
        v => panic!("vegkategori {v}"),
    };
    let phase = match e["11278"]["verdi"].as_u64().unwrap() {
        19030 => 'P',
        19031 => 'A',
        19032 => 'V',
        19090 => 'F',
        v => panic!("vegfase {v}"),
    };
    (category, phase, e["11277"]["verdi"].as_u64().unwrap())
}

/// After the import of the real samples, every network row's vegsystemreferanse is what the
/// samples' 915 placements give, computed here from the fixture JSON: the 915 whose placement
/// holds the row gives category, phase and number, and its id and version (the successors'
/// `vegsystem.id` and `versjon`) (the samples have no 916: strekning 0,
/// delstrekning 1 as the fallback hp 1 unfolds; metres along the sequence from the
/// placement's start; retning MED, no arm); a row no 915 covers has none. The API's links
/// carry the same reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn road_system_references_are_what_the_samples_915_placements_give() {
    use vegdb::snapshot::columns::NO_ROAD_REF;
    let tmp = tempfile::tempdir().unwrap();
    let data = DataDir::open(tmp.path()).unwrap();
    let summary = import_dir(&fixtures(), &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    let sequences = records(&fixtures().join("veglenkesekvenser"), "veglenkesekvenser");
    let length = |id: u64| {
        sequences
            .iter()
            .find(|s| s["id"].as_u64() == Some(id))
            .and_then(|s| s["lengde"].as_f64())
    };
    // (sequence, from, to, category, phase, number, (915 id, version)) of every 915 placement
    let mut placements = Vec::new();
    for o in &objects_by_type(&fixtures())[&915] {
        let (c, p, num) = road_system_of(o);
        let object = (o["id"].as_u64().unwrap(), o["versjon"].as_u64().unwrap());
        for l in o["stedfesting"]["linjer"].as_array().unwrap() {
            let (a, b) = (
                l["startposisjon"].as_f64().unwrap(),
                l["sluttposisjon"].as_f64().unwrap(),
            );
            placements.push((
                l["id"].as_u64().unwrap(),
                a.min(b),
                a.max(b),
                c,
                p,
                num,
                object,
            ));
        }
    }
    let (g, _) = Generation::load(&data.generation_dir(summary.generation), &|_| {}).unwrap();
    let n = &g.network;
    let mut expected = BTreeMap::new();
    let (mut with_ref, mut without) = (0, 0);
    for r in 0..n.len() {
        let mid = (n.from_pos[r] + n.to_pos[r]) / 2.0;
        let covering = placements
            .iter()
            .find(|p| p.0 == n.link_id[r] && p.1 <= mid && mid <= p.2);
        let Some(&(_, start, _, c, p, num, object)) = covering else {
            assert_eq!(n.system_category[r], NO_ROAD_REF, "row {r}");
            assert_eq!((n.system_id[r], n.section_id[r]), (0, 0), "row {r}");
            without += 1;
            continue;
        };
        // the 915's id and version; no 916 in the samples: none
        assert_eq!(
            (n.system_id[r], u64::from(n.system_version[r])),
            object,
            "row {r}"
        );
        assert_eq!((n.section_id[r], n.section_version[r]), (0, 0), "row {r}");
        with_ref += 1;
        assert_eq!(
            (
                n.system_category[r] as char,
                n.system_phase[r] as char,
                u64::from(n.system_number[r])
            ),
            (c, p, num),
            "row {r} on {}",
            n.link_id[r]
        );
        assert_eq!((n.section[r], n.subsection[r]), (0, 1), "row {r}");
        assert!(!n.section_against[r] && !n.arm[r], "row {r}");
        let metres = length(n.link_id[r]).map(|len| {
            (
                ((n.from_pos[r] - start) * len).round() as u32,
                ((n.to_pos[r] - start) * len).round() as u32,
            )
        });
        if let Some((m0, m1)) = metres {
            assert_eq!(
                (n.section_from_m[r], n.section_to_m[r]),
                (m0, m1.max(m0)),
                "row {r}"
            );
        }
        let kortform = format!(
            "{c}{p}{num} S0D1 m{}",
            if n.section_from_m[r] == n.section_to_m[r] {
                n.section_from_m[r].to_string()
            } else {
                format!("{}-{}", n.section_from_m[r], n.section_to_m[r])
            }
        );
        expected.insert(
            (n.link_id[r], format!("{:.9}", n.from_pos[r])),
            (kortform, object),
        );
    }
    assert!(with_ref >= 10 && without >= 1, "{with_ref} {without}");
    let phases: HashSet<u8> = n.system_phase.iter().copied().collect();
    assert!(
        phases.contains(&b'A') && phases.contains(&b'V'),
        "{phases:?}"
    );
    // the API's links carry the same reference
    let base = serve(&data, summary.generation).await;
    let (status, links) = get(base, "/vegnett/lenker?antall=10000".into()).await;
    assert_eq!(status, 200);
    let mut seen = 0;
    for l in links["objekter"].as_array().unwrap() {
        let key = (
            l["veglenkeid"].as_u64().unwrap(),
            format!("{:.9}", l["startposisjon"].as_f64().unwrap()),
        );
        match expected.get(&key) {
            Some((k, (id, version))) => {
                let v = &l["vegsystemreferanse"];
                assert_eq!(v["kortform"], k.as_str());
                // the successors' vegsystem.id and versjon; strekning without them (no 916)
                assert_eq!(v["vegsystem"]["id"].as_u64(), Some(*id), "{l}");
                assert_eq!(v["vegsystem"]["versjon"].as_u64(), Some(*version), "{l}");
                assert!(v["strekning"].get("id").is_none(), "{l}");
                assert!(v["strekning"].get("versjon").is_none(), "{l}");
                seen += 1;
            }
            None => assert!(l.get("vegsystemreferanse").is_none(), "{l}"),
        }
    }
    assert_eq!(seen, expected.len());
}
