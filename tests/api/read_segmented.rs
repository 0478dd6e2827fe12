//! GET /vegnett/segmentert over the tiny data: pieces tile the links `/vegnett/lenker` selects,
//! carry the objects `/vegobjekter` places there, page completely, come as CSV, and bad input
//! gets the v2 error shape.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::server::TestServer;

async fn all_pages(s: &TestServer, query: &str, antall: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path = format!("/vegnett/segmentert?{query}&antall={antall}");
    for _ in 0..10_000 {
        let page = s.get_json(&path, 200).await;
        let items = page["objekter"].as_array().unwrap();
        assert_eq!(page["metadata"]["returnert"], items.len());
        if items.is_empty() {
            return out;
        }
        assert!(items.len() <= antall);
        out.extend(items.iter().cloned());
        let start = page["metadata"]["neste"]["start"].as_str().unwrap();
        path = format!("/vegnett/segmentert?{query}&antall={antall}&start={start}");
    }
    panic!("paging did not end");
}

fn pos(v: &Value, name: &str) -> f64 {
    v[name].as_f64().unwrap()
}

#[tokio::test]
async fn pieces_tile_the_selected_links_and_page_completely() {
    let s = TestServer::start().await;
    tiles(&s, "vegreferanse=E,R,F").await;
    // a past day: the links and objects of that day
    tiles(&s, "vegreferanse=E,R,F&tidspunkt=2025-01-01").await;
}

async fn tiles(s: &TestServer, filter: &str) {
    let links = s
        .get_json(&format!("/vegnett/lenker?{filter}&antall=10000"), 200)
        .await;
    let links = links["objekter"].as_array().unwrap();
    assert!(!links.is_empty(), "{filter}");
    let q = format!("typer=105,540&{filter}");
    let pieces = all_pages(s, &q, 10_000).await;
    // per link: the link rows' intervals, and the pieces' intervals, merged where they touch
    let mut want: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for l in links {
        want.entry(l["veglenkeid"].as_u64().unwrap())
            .or_default()
            .push((pos(l, "startposisjon"), pos(l, "sluttposisjon")));
    }
    let mut got: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for p in &pieces {
        let (a, b) = (pos(p, "fra_posisjon"), pos(p, "til_posisjon"));
        assert!(a < b, "{p}");
        assert!(p["geometri"]["wkt"]
            .as_str()
            .unwrap()
            .starts_with("LINESTRING"));
        assert!(p["lengde"].as_f64().unwrap() >= 0.0);
        assert!(p["vegreferanse"].is_object(), "{p}");
        let v = got
            .entry(p["veglenkesekvensid"].as_u64().unwrap())
            .or_default();
        assert!(
            v.last().is_none_or(|&(_, to)| to <= a),
            "overlap or order: {p}"
        );
        v.push((a, b));
    }
    assert_eq!(merged(got), merged(want));
    assert!(pieces.len() > links.len(), "objects cut the links");
    // small pages give the same pieces
    assert_eq!(all_pages(s, &q, 7).await, pieces);
}

fn merged(m: BTreeMap<u64, Vec<(f64, f64)>>) -> BTreeMap<u64, Vec<(f64, f64)>> {
    m.into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut out: Vec<(f64, f64)> = Vec::new();
            for (a, b) in v {
                match out.last_mut() {
                    Some(last) if last.1 == a => last.1 = b,
                    _ => out.push((a, b)),
                }
            }
            (k, out)
        })
        .collect()
}

#[tokio::test]
async fn covering_objects_are_the_objects_placed_there() {
    let s = TestServer::start().await;
    let pieces = all_pages(&s, "typer=105&vegreferanse=E,R,F&kun_dekket=true", 10_000).await;
    assert!(!pieces.is_empty());
    let mut checked = 0;
    for p in pieces.iter().step_by(pieces.len() / 20 + 1) {
        let covers = &p["vegobjekter"]["vegobjekttype_105"];
        let list = match covers {
            Value::Array(a) => a.clone(),
            Value::Object(_) => vec![covers.clone()],
            other => panic!("kun_dekket piece not covered: {other}"),
        };
        let (link, a, b) = (
            p["veglenkesekvensid"].as_u64().unwrap(),
            pos(p, "fra_posisjon"),
            pos(p, "til_posisjon"),
        );
        for o in list {
            let id = o["id"].as_u64().unwrap();
            let obj = s
                .get_json(
                    &format!("/vegobjekter/105/{id}?inkluder=metadata,lokasjon,egenskaper"),
                    200,
                )
                .await;
            assert_eq!(obj["metadata"]["versjon"], o["versjon"]);
            let spans = obj["lokasjon"]["stedfestinger"].as_array().unwrap();
            assert!(
                // stedfestinger are written with 8 decimals
                spans
                    .iter()
                    .any(|st| st["veglenkeid"].as_u64() == Some(link)
                        && pos(st, "fra_posisjon") <= a + 1e-8
                        && pos(st, "til_posisjon") >= b - 1e-8),
                "{id} does not span {a}..{b}@{link}: {spans:?}"
            );
            // every value of the object, keyed by property id
            for e in obj["egenskaper"].as_array().unwrap() {
                if e["verdi"].is_null() || e["datatype"].as_u64().is_some_and(|d| d >= 16) {
                    continue;
                }
                let key = format!("egenskap_{}", e["id"]);
                assert!(o["egenskaper"].get(&key).is_some(), "{key} missing: {o}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 5);
}

#[tokio::test]
async fn chosen_values_only_covered_pieces_and_csv() {
    let s = TestServer::start().await;
    let page = s
        .get_json(
            "/vegnett/segmentert?typer=105,540&egenskaper=105(2021),540()&kun_dekket=true&antall=50",
            200,
        )
        .await;
    let items = page["objekter"].as_array().unwrap();
    assert!(!items.is_empty());
    for p in items {
        for t in ["vegobjekttype_105", "vegobjekttype_540"] {
            let v = &p["vegobjekter"][t];
            assert!(!v.is_null(), "{p}");
            let first = if v.is_array() { &v[0] } else { v };
            let keys: Vec<&String> = first["egenskaper"].as_object().unwrap().keys().collect();
            if t.ends_with("540") {
                assert!(keys.is_empty(), "{p}");
            } else {
                assert!(keys.iter().all(|k| *k == "egenskap_2021"), "{p}");
            }
        }
    }
    let r = s
        .get("/vegnett/segmentert.csv?typer=105,540&egenskaper=105(2021),540()&kun_dekket=true&antall=50")
        .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let text = r.text().await.unwrap();
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), items.len() + 1);
    let header: Vec<&str> = lines[0].split(',').collect();
    for c in [
        "veglenkesekvensid",
        "fra_posisjon",
        "til_posisjon",
        "lengde",
        "geometri.wkt",
    ] {
        assert!(header.contains(&c), "{c} not in {header:?}");
    }
    let first = items[0]["veglenkesekvensid"].to_string();
    assert!(lines[1].starts_with(&first), "{}", lines[1]);
    // XML: the same page, one element per piece
    let r = s
        .get("/vegnett/segmentert.xml?typer=105,540&egenskaper=105(2021),540()&kun_dekket=true&antall=50")
        .await;
    assert_eq!(r.status(), 200);
    let xml = r.text().await.unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert_eq!(
        xml.matches("<veglenkesekvensid>").count(),
        items.len(),
        "{xml}"
    );
}

#[tokio::test]
async fn bad_input_is_a_v2_error() {
    let s = TestServer::start().await;
    for q in [
        "",
        "typer=999999",
        "typer=abc",
        "typer=105,105",
        "typer=105,540,241,581,583,595,616,105,67,96,21",
        "typer=105&egenskaper=540(1)",
        "typer=105&egenskaper=105(abc)",
        "typer=105&egenskaper=105(999999)",
        "typer=105&egenskaper=105",
        "typer=105&egenskap=105(nonsense",
        "typer=105&egenskap=105(2021=)",
        "typer=105&egenskap=540(1=1)",
        "typer=105&kun_dekket=kanskje",
        "typer=105&antall=0",
        "typer=105&start=garbage",
        "typer=105&ukjent=1",
    ] {
        refused(&s, &format!("/vegnett/segmentert?{q}")).await;
    }
}

/// `path` is answered 4xx in the v2 error shape.
async fn refused(s: &TestServer, path: &str) {
    let r = s.get(path).await;
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    assert!((400..500).contains(&status), "{path}: {status} {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v[0]["code"].is_u64(), "{path}: {body}");
}

#[tokio::test]
async fn geojson_has_the_json_pieces_as_features() {
    let s = TestServer::start().await;
    let q = "typer=105,540&vegreferanse=E&antall=40";
    let json = s.get_json(&format!("/vegnett/segmentert?{q}"), 200).await;
    let items = json["objekter"].as_array().unwrap();
    let geo = s
        .get_json(&format!("/vegnett/segmentert.geojson?{q}"), 200)
        .await;
    assert_eq!(geo["type"], "FeatureCollection");
    let features = geo["features"].as_array().unwrap();
    assert_eq!(features.len(), items.len());
    for (f, p) in features.iter().zip(items) {
        assert_eq!(f["id"], p["kortform"]);
        assert_eq!(f["geometry"]["type"], "LineString");
        assert!(f["properties"].get("geometri").is_none());
        assert_eq!(f["properties"]["vegobjekter"], p["vegobjekter"]);
        // WGS 84 by default: Trøndelag's longitudes and latitudes
        let c = &f["geometry"]["coordinates"][0];
        assert!((5.0..15.0).contains(&c[0].as_f64().unwrap()), "{c}");
        assert!((60.0..66.0).contains(&c[1].as_f64().unwrap()), "{c}");
    }
    if items.len() == 40 {
        assert!(geo["links"][0]["href"]
            .as_str()
            .unwrap()
            .contains("segmentert.geojson"));
    }
}

/// `/vegnett/segmentert/statistikk` against the pieces of every page for the same filters: the
/// number of pieces, their length and per type the pieces it covers (summed here from the
/// pieces' `vegobjekter` and `lengde`, which are rounded to the millimetre).
#[tokio::test]
async fn statistics_are_the_figures_of_the_pieces() {
    let s = TestServer::start().await;
    for q in [
        "typer=105,540&vegreferanse=E,R,F",
        "typer=105,540&vegreferanse=E,R,F&kun_dekket=true",
        "typer=540,105,241&vegreferanse=E,R,F&tidspunkt=2025-01-01",
        "typer=105,540&egenskap=540(4623>=3000)&vegreferanse=E,R",
        "typer=105,540",
    ] {
        let pieces = all_pages(&s, q, 10_000).await;
        let types: Vec<u64> = q["typer=".len()..]
            .split('&')
            .next()
            .unwrap()
            .split(',')
            .map(|t| t.parse().unwrap())
            .collect();
        let mut length = 0.0;
        let mut covered = vec![(0u64, 0.0f64); types.len()];
        for p in &pieces {
            let l = p["lengde"].as_f64().unwrap();
            length += l;
            for (t, id) in types.iter().enumerate() {
                if !p["vegobjekter"][format!("vegobjekttype_{id}")].is_null() {
                    covered[t].0 += 1;
                    covered[t].1 += l;
                }
            }
        }
        let st = s
            .get_json(&format!("/vegnett/segmentert/statistikk?{q}"), 200)
            .await;
        assert_eq!(st["antall"], pieces.len(), "{q}: {st}");
        // whole meters against a sum of millimetres: within half a metre and the pieces'
        // rounding
        let near = |got: &Value, want: f64, n: u64| {
            let got = got.as_f64().unwrap();
            (got - want).abs() <= 0.5 + 0.0005 * n as f64
        };
        assert!(
            near(&st["strekningslengde"], length, pieces.len() as u64),
            "{q}: {st} {length}"
        );
        let per_type = st["vegobjekttyper"].as_array().unwrap();
        assert_eq!(per_type.len(), types.len());
        for ((row, id), (n, l)) in per_type.iter().zip(&types).zip(&covered) {
            assert_eq!(row["id"], *id, "{q}: {st}");
            assert_eq!(row["antall"], *n, "{q}: type {id}: {st}");
            assert!(near(&row["strekningslengde"], *l, *n), "{q}: {st} {l}");
        }
        if q.contains("kun_dekket") {
            assert!(per_type.iter().all(|r| r["antall"] == st["antall"]), "{st}");
        }
    }
    // XML and CSV (one line per type)
    let q = "typer=105,540&vegreferanse=E";
    let r = s
        .get(&format!("/vegnett/segmentert/statistikk.xml?{q}"))
        .await;
    assert_eq!(r.status(), 200);
    let xml = r.text().await.unwrap();
    assert!(
        xml.starts_with("<?xml") && xml.contains("<strekningslengde>"),
        "{xml}"
    );
    let r = s
        .get(&format!("/vegnett/segmentert/statistikk.csv?{q}"))
        .await;
    assert_eq!(r.status(), 200);
    let csv = r.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].contains("strekningslengde"), "{csv}");
    // bad input: the v2 error shape, 4xx
    for q in [
        "",
        "typer=abc",
        "typer=105,105",
        "typer=105&egenskaper=105(2021)",
        "typer=105&antall=10",
        "typer=105&egenskap=105(nonsense",
        "typer=105&kun_dekket=kanskje",
        "typer=105&tidspunkt=2020-13-45",
    ] {
        refused(&s, &format!("/vegnett/segmentert/statistikk?{q}")).await;
    }
}
