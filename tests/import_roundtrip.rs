//! Round-trip oracle of the import: a generated dataset (tiny scale) exported to
//! Uberiket-shaped files (`vegdb::import::export`), imported, and served next to the original;
//! the read endpoints must answer the same, up to the differences the mapping documents
//! (ARCHITECTURE.md "Import round trip"), which are listed here exactly and counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vegdb::api::{ApiConfig, AppState};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::import::export::export_generation;
use vegdb::import::{import_dir, TypeSelection};
use vegdb::snapshot::store::DataDir;

async fn serve(g: Generation) -> String {
    let store = Arc::new(GenerationStore::new(g));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::read_only(
        store,
        ApiConfig::new("http://vegdb.test".to_string(), Duration::from_secs(30)),
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

/// Paths (array indices as `[]`) where `a` and `b` differ.
fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => diff(u, v, &p, out),
                    _ => out.push(p),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (u, v) in x.iter().zip(y) {
                diff(u, v, &format!("{path}[]"), out);
            }
        }
        // JSON numbers: equal as numbers (1 == 1.0)
        (Value::Number(x), Value::Number(y)) if x.as_f64() != y.as_f64() => {
            out.push(path.to_string())
        }
        (Value::Number(_), Value::Number(_)) => {}
        _ if a != b => out.push(path.to_string()),
        _ => {}
    }
}

/// Differences by path: the oracle's whole finding.
#[derive(Default)]
struct Findings {
    compared: BTreeMap<&'static str, usize>,
    diffs: BTreeMap<String, usize>,
}

impl Findings {
    fn compare(&mut self, endpoint: &'static str, a: &Value, b: &Value) {
        *self.compared.entry(endpoint).or_default() += 1;
        let mut d = Vec::new();
        diff(a, b, endpoint, &mut d);
        for p in d {
            *self.diffs.entry(p).or_default() += 1;
        }
    }
}

/// Metres of road references may differ by rounding (the import counts metres from
/// sequence lengths, the generator from walked lengths): |a - b| <= 1 is equal.
fn relax_metres(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x.iter_mut() {
                if let Some(w) = y.get(k) {
                    if (k.ends_with("meter") || k == "fra_meter" || k == "til_meter")
                        && v.is_number()
                        && w.is_number()
                        && (v.as_f64().unwrap() - w.as_f64().unwrap()).abs() <= 1.0
                    {
                        *v = w.clone();
                    } else {
                        relax_metres(v, w);
                    }
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for (v, w) in x.iter_mut().zip(y) {
                relax_metres(v, w);
            }
        }
        (Value::String(s), Value::String(t)) if s != t => {
            // kortform "…m123" / "…m123-456": metres within 1
            if let (Some(u), Some(v)) = (metres_of(s), metres_of(t)) {
                if u.0 == v.0
                    && u.1.len() == v.1.len()
                    && u.1.iter().zip(&v.1).all(|(p, q)| (p - q).abs() <= 1)
                {
                    *s = t.clone();
                }
            }
        }
        _ => {}
    }
}

/// A kortform split into its text before the last `m` and the metre numbers after it.
fn metres_of(s: &str) -> Option<(String, Vec<i64>)> {
    let i = s.rfind('m')?;
    let nums: Option<Vec<i64>> = s[i + 1..].split('-').map(|n| n.parse().ok()).collect();
    Some((s[..i].to_string(), nums?))
}

/// Differences the mapping cannot avoid, by path prefix (documented in ARCHITECTURE.md).
const DOCUMENTED: &[(&str, &str)] = &[
    // Uberiket's Veglenke has no medium: imported rows are T
    ("lenker[][].medium", "no medium upstream"),
    // own geometry travels as a GeometriEgenskap, which the import does not store (the
    // geometry shown is then the placement's; the Geom* egenskaper are removed before
    // comparing)
    (
        "vegobjekter.objekter[].geometri",
        "own geometry not imported",
    ),
];

/// Without the egenskaper that show the own geometry (GeomPunkt, GeomLinje, ...).
fn without_geometry_properties(v: &mut Value) {
    for o in v["objekter"].as_array_mut().into_iter().flatten() {
        if let Some(e) = o["egenskaper"].as_array_mut() {
            e.retain(|p| {
                !p["datatype_tekst"]
                    .as_str()
                    .is_some_and(|d| d.starts_with("Geom"))
            });
        }
    }
}

fn documented(path: &str) -> bool {
    DOCUMENTED.iter().any(|(p, _)| path.starts_with(p))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_import_round_trip_serves_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let gen_dir = generate_into(Scale::Tiny, 7, &tmp.path().join("orig")).unwrap();
    let (orig, _) = Generation::load(&gen_dir, &|_| {}).unwrap();
    let export = tmp.path().join("export");
    let exported = export_generation(&orig, &export).unwrap();
    assert_eq!(exported.sequences, {
        let mut l: Vec<u64> = orig.network.link_id.clone();
        l.dedup();
        l.len()
    });
    let data = DataDir::open(tmp.path().join("imported")).unwrap();
    let summary = import_dir(&export, &data, &TypeSelection::AllKnown, &|_| {}).unwrap();
    println!("{}", summary.render());
    let (back, _) = Generation::load(&data.generation_dir(summary.generation), &|_| {}).unwrap();
    // what the import could not take, by reason: only documented reasons
    for reason in summary.skipped.keys() {
        let ok = reason.contains("object with no placement on the imported network")
            || reason.contains("[kept]");
        assert!(ok, "undocumented skip: {reason}");
    }
    let types: Vec<u32> = orig.objects.keys().copied().collect();
    let links: Vec<u64> = {
        let mut l = orig.network.link_id.clone();
        l.dedup();
        l.into_iter().step_by(17).take(150).collect()
    };
    let mut points: Vec<(f64, f64)> = Vec::new();
    for &l in links.iter().take(60) {
        let r = orig.network.rows_of_link(l).start;
        let g = orig.network.geometry(r);
        let c = g[g.len() / 2];
        points.push((c[0], c[1]));
    }
    let a = serve(orig).await;
    let b = serve(back).await;
    let mut f = Findings::default();

    // the network, link by link
    for l in &links {
        let (sa, ra) = get(&a, &format!("/vegnett/lenker/{l}")).await;
        let (sb, mut rb) = get(&b, &format!("/vegnett/lenker/{l}")).await;
        assert_eq!((sa, sb), (200, 200), "link {l}");
        relax_metres(&mut rb, &ra);
        f.compare("lenker", &Value::Array(vec![ra]), &Value::Array(vec![rb]));
    }
    // objects, type by type (first page with everything)
    let mut object_types = 0;
    for &t in &types {
        let q = format!("/vegobjekter/{t}?inkluder=alle&antall=200");
        let (sa, oa) = get(&a, &q).await;
        let (sb, mut ob) = get(&b, &q).await;
        assert_eq!(sa, 200);
        if oa["objekter"].as_array().is_none_or(|o| o.is_empty()) {
            continue;
        }
        assert_eq!(sb, 200);
        // objects without any placement (the area objects) are not imported, counted: the
        // type's count drops by exactly that many, and such types are not compared further
        let unplaced = summary
            .skipped
            .get(&format!(
                "type {t}: object with no placement on the imported network"
            ))
            .copied()
            .unwrap_or(0);
        let (_, sa) = get(&a, &format!("/vegobjekter/{t}/statistikk")).await;
        let (_, sb) = get(&b, &format!("/vegobjekter/{t}/statistikk")).await;
        assert_eq!(
            sa["antall"].as_u64().unwrap(),
            sb["antall"].as_u64().unwrap() + unplaced as u64,
            "type {t}"
        );
        if unplaced > 0 {
            continue;
        }
        object_types += 1;
        let mut oa = oa;
        without_geometry_properties(&mut oa);
        without_geometry_properties(&mut ob);
        relax_metres(&mut ob, &oa);
        f.compare("vegobjekter", &oa, &ob);
        f.compare("statistikk", &sa, &sb);
    }
    assert!(object_types >= 5, "{object_types}");
    // positions and references
    for (x, y) in &points {
        let q = format!("/posisjon?ost={x}&nord={y}&srid=25833&maks_antall=3");
        let (_, pa) = get(&a, &q).await;
        let (_, mut pb) = get(&b, &q).await;
        relax_metres(&mut pb, &pa);
        f.compare(
            "posisjon",
            &Value::Array(vec![pa.clone()]),
            &Value::Array(vec![pb]),
        );
        if let Some(k) = pa[0]["vegreferanse"]["kortform"].as_str() {
            let q = format!("/veg?vegreferanse={}", k.replace(' ', ""));
            let (_, va) = get(&a, &q).await;
            let (_, mut vb) = get(&b, &q).await;
            relax_metres(&mut vb, &va);
            f.compare("veg", &va, &vb);
        }
    }
    println!("compared: {:?}", f.compared);
    for (p, n) in &f.diffs {
        println!(
            "{n:>6}  {p}{}",
            if documented(p) { "  (documented)" } else { "" }
        );
    }
    let undocumented: Vec<&String> = f.diffs.keys().filter(|p| !documented(p)).collect();
    assert!(
        undocumented.is_empty(),
        "undocumented differences: {undocumented:?}"
    );
    assert!(f.compared["lenker"] >= 100 && f.compared["posisjon"] >= 50);
}
