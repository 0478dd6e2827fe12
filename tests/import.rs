//! `vegdb import` on the real Uberiket samples (tests/fixtures/uberiket, see SOURCES.md):
//! the summary's counts against counts taken from the fixture files directly, and the v2 API
//! of a real server on the imported generation against the sample values.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vegdb::api::{ApiConfig, AppState};
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::generation::{Generation, GenerationStore};
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
    let mut by_type: BTreeMap<u32, Vec<Value>> = BTreeMap::new();
    for e in std::fs::read_dir(fixtures().join("vegobjekter")).unwrap() {
        let p = e.unwrap().path();
        let t: u32 = p.file_name().unwrap().to_str().unwrap().parse().unwrap();
        by_type.insert(t, records(&p, "vegobjekter"));
    }
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

    // a real server on the imported generation
    let (g, _) = Generation::load(&data.generation_dir(summary.generation), &|_| {}).unwrap();
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
    let base = format!("http://{addr}/nvdb/api/v2");
    let client = reqwest::Client::new();
    let get = |path: String| {
        let client = client.clone();
        let url = format!("{base}{path}");
        async move {
            let r = client
                .get(&url)
                .header("X-Client", "vegdb-test")
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };

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

    // objects: real id, version, and every catalogued value equal to the sample's
    let mut objects_served = 0;
    for (t, objs) in &by_type {
        for o in objs {
            let id = o["id"].as_u64().unwrap();
            let (status, body) = get(format!("/vegobjekter/{t}/{id}?inkluder=alle")).await;
            if status != 200 {
                continue;
            }
            objects_served += 1;
            assert_eq!(body["id"].as_u64(), Some(id));
            assert_eq!(body["metadata"]["versjon"].as_u64(), o["versjon"].as_u64());
            let props = body["egenskaper"].as_array().cloned().unwrap_or_default();
            for (key, v) in o["egenskaper"].as_object().unwrap() {
                let pid: u64 = key.parse().unwrap();
                let Some(p) = props.iter().find(|p| p["id"].as_u64() == Some(pid)) else {
                    continue;
                };
                if v["type"] == "EnumEgenskap" {
                    assert_eq!(p["enum_id"], v["verdi"], "{t}/{id} {key}");
                } else if v["type"] == "FlyttallEgenskap" || v["type"] == "HeltallEgenskap" {
                    assert_eq!(p["verdi"].as_f64(), v["verdi"].as_f64(), "{t}/{id} {key}");
                } else {
                    assert_eq!(p["verdi"], v["verdi"], "{t}/{id} {key}");
                }
            }
        }
    }
    assert_eq!(
        objects_served,
        summary.objects_imported.values().sum::<usize>()
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
