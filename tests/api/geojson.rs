//! GeoJSON answers of the read API (`api/geojson.rs`), checked against the v2 JSON answers of
//! the same server as the oracle: the same objects (each once over the `next` links), the
//! same property values, the same coordinates as the v2 WKT, lon/lat ranges, and 415 where
//! GeoJSON is not offered.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::server::TestServer;

/// Every object of `type_id` in the v2 JSON list (all pages), by id.
async fn v2_objects(s: &TestServer, type_id: u32, query: &str) -> BTreeMap<u64, Value> {
    let mut out = BTreeMap::new();
    let mut path = format!("/vegobjekter/{type_id}?antall=200&{query}");
    loop {
        let page = s.get_json(&path, 200).await;
        let objects = page["objekter"].as_array().expect("objekter");
        if objects.is_empty() {
            break;
        }
        for o in objects {
            assert!(out
                .insert(o["id"].as_u64().expect("id"), o.clone())
                .is_none());
        }
        let next = page["metadata"]["neste"]["href"].as_str().expect("neste");
        path = next[next.find("/vegobjekter").expect("path")..].to_string();
    }
    out
}

/// GET a GeoJSON URL (absolute or below the read base) and parse it.
async fn geojson(s: &TestServer, url: &str) -> Value {
    let url = if url.starts_with("http") {
        url.to_string()
    } else {
        format!("{}{url}", s.base)
    };
    let r = s.client.get(&url).send().await.expect("request");
    assert_eq!(r.status(), 200, "GET {url}");
    assert_eq!(
        r.headers()["content-type"],
        "application/geo+json",
        "GET {url}"
    );
    let text = r.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e})"))
}

/// Every feature over the `next` links, starting at `first`.
async fn all_features(s: &TestServer, first: &str) -> (Vec<Value>, usize) {
    let mut features = Vec::new();
    let mut pages = 0;
    let mut url = first.to_string();
    loop {
        let fc = geojson(s, &url).await;
        assert_eq!(fc["type"], "FeatureCollection");
        let fs = fc["features"].as_array().expect("features");
        assert_eq!(fc["numberReturned"].as_u64(), Some(fs.len() as u64));
        features.extend(fs.iter().cloned());
        pages += 1;
        let next = fc["links"]
            .as_array()
            .expect("links")
            .iter()
            .find(|l| l["rel"] == "next")
            .map(|l| l["href"].as_str().expect("href").to_string());
        match next {
            Some(n) => url = n,
            None => break,
        }
        assert!(pages < 10_000, "paging does not end");
    }
    (features, pages)
}

fn coords(v: &Value, out: &mut Vec<Vec<f64>>) {
    match v.as_array() {
        Some(a) if a.first().is_some_and(Value::is_number) => {
            out.push(a.iter().map(|n| n.as_f64().expect("number")).collect())
        }
        Some(a) => a.iter().for_each(|x| coords(x, out)),
        None => panic!("not a coordinate array: {v}"),
    }
}

fn all_coords(geometry: &Value) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    coords(&geometry["coordinates"], &mut out);
    out
}

/// The first coordinate of v2 WKT, read by hand.
fn first_wkt_coord(wkt: &str) -> (f64, f64) {
    let inner = wkt[wkt.find('(').expect("(")..].trim_start_matches('(');
    let nums: Vec<f64> = inner
        .split([',', ')'])
        .next()
        .expect("a coordinate")
        .split_whitespace()
        .map(|n| n.parse().expect("number"))
        .collect();
    (nums[0], nums[1])
}

fn lon_lat(c: &[f64]) -> bool {
    (4.0..32.0).contains(&c[0]) && (57.0..72.0).contains(&c[1])
}

#[tokio::test]
async fn object_pages_as_geojson_equal_the_v2_json_list() {
    let s = TestServer::start().await;
    let oracle = v2_objects(&s, 105, "inkluder=egenskaper,geometri&srid=4326").await;
    assert!(oracle.len() > 30, "too few speed limits: {}", oracle.len());
    let (features, pages) = all_features(&s, "/vegobjekter/105.geojson?antall=13").await;
    assert!(pages > 2);
    let ids: Vec<u64> = features
        .iter()
        .map(|f| f["id"].as_u64().expect("id"))
        .collect();
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "an object twice");
    assert_eq!(unique, oracle.keys().copied().collect::<BTreeSet<_>>());
    for f in &features {
        let id = f["id"].as_u64().expect("id");
        let v2 = &oracle[&id];
        let props = f["properties"].as_object().expect("properties");
        assert_eq!(props["nvdbId"].as_u64(), Some(id));
        assert_eq!(props["vegobjekttype"], 105);
        assert_eq!(props["vegobjekttypenavn"], "Fartsgrense");
        let mut expected_keys = 0;
        for e in v2["egenskaper"].as_array().expect("egenskaper") {
            if e["datatype_tekst"]
                .as_str()
                .is_some_and(|t| t.starts_with("Geom"))
            {
                continue;
            }
            let name = e["navn"].as_str().expect("navn");
            assert_eq!(props.get(name), Some(&e["verdi"]), "{id} {name}");
            expected_keys += 1;
            if let Some(enum_id) = e.get("enum_id") {
                assert_eq!(
                    props.get(&format!("{name}_id")),
                    Some(enum_id),
                    "{id} {name}"
                );
                expected_keys += 1;
            }
        }
        assert_eq!(props.len(), expected_keys + 5, "{id}: {props:?}");
        let geometry = &f["geometry"];
        let cs = all_coords(geometry);
        assert!(cs.iter().all(|c| lon_lat(c)), "{id}: {geometry}");
        let (x, y) = first_wkt_coord(v2["geometri"]["wkt"].as_str().expect("wkt"));
        assert!(
            (cs[0][0] - x).abs() < 1e-7 && (cs[0][1] - y).abs() < 1e-7,
            "{id}: {:?} vs WKT {x} {y}",
            cs[0]
        );
        let line_placed = !v2["geometri"]["egengeometri"].as_bool().unwrap_or(false);
        if line_placed {
            assert!(
                matches!(
                    geometry["type"].as_str(),
                    Some("LineString" | "MultiLineString")
                ),
                "{id}: {geometry}"
            );
        }
    }
    // the statistics count the same objects
    let stats = s.get_json("/vegobjekter/105/statistikk", 200).await;
    assert_eq!(stats["antall"].as_u64(), Some(features.len() as u64));
}

#[tokio::test]
async fn accept_header_suffix_srid_and_single_objects() {
    let s = TestServer::start().await;
    let by_suffix = geojson(&s, "/vegobjekter/105.geojson?antall=5").await;
    let r = s
        .client
        .get(format!("{}/vegobjekter/105?antall=5", s.base))
        .header("Accept", "application/geo+json")
        .send()
        .await
        .expect("request");
    assert_eq!(r.headers()["content-type"], "application/geo+json");
    let by_accept: Value = r.json().await.expect("json");
    assert_eq!(by_suffix["features"], by_accept["features"]);
    assert_eq!(by_suffix.get("crs"), None, "WGS 84 carries no crs member");
    // srid: UTM numbers equal to the v2 WKT, named in the crs member
    let utm = geojson(&s, "/vegobjekter/105.geojson?antall=5&srid=25833").await;
    assert_eq!(
        utm["crs"]["properties"]["name"],
        "urn:ogc:def:crs:EPSG::25833"
    );
    let v2 = s
        .get_json(
            "/vegobjekter/105?antall=5&inkluder=geometri&srid=25833",
            200,
        )
        .await;
    for (f, o) in utm["features"]
        .as_array()
        .expect("features")
        .iter()
        .zip(v2["objekter"].as_array().expect("objekter"))
    {
        assert_eq!(f["id"], o["id"]);
        let c = &all_coords(&f["geometry"])[0];
        let (x, y) = first_wkt_coord(o["geometri"]["wkt"].as_str().expect("wkt"));
        assert!((c[0] - x).abs() < 1e-3 && (c[1] - y).abs() < 1e-3);
        assert!((6.4e6..8.0e6).contains(&c[1]));
    }
    // a single object is a Feature; with dybde a collection of it and its descendants
    let id = by_suffix["features"][0]["id"].as_u64().expect("id");
    let one = geojson(&s, &format!("/vegobjekter/105/{id}.geojson")).await;
    assert_eq!(one["type"], "Feature");
    assert_eq!(one["id"].as_u64(), Some(id));
    assert_eq!(one["properties"], by_suffix["features"][0]["properties"]);
    let deep = geojson(&s, &format!("/vegobjekter/105/{id}.geojson?dybde=2")).await;
    assert_eq!(deep["features"][0]["id"].as_u64(), Some(id));
    // v2 JSON and XML clients see no difference
    let plain = s.get_json("/vegobjekter/105?antall=5", 200).await;
    assert!(plain["objekter"].is_array());
}

#[tokio::test]
async fn links_positions_and_areas_as_geojson() {
    let s = TestServer::start().await;
    // links: every segment once over the next links; the JSON list is the oracle
    let mut oracle = BTreeSet::new();
    let mut path = "/vegnett/lenker?antall=500".to_string();
    loop {
        let page = s.get_json(&path, 200).await;
        let items = page["objekter"].as_array().expect("objekter");
        if items.is_empty() {
            break;
        }
        for l in items {
            assert!(oracle.insert(l["kortform"].as_str().expect("kortform").to_string()));
        }
        let next = page["metadata"]["neste"]["href"].as_str().expect("neste");
        path = next[next.find("/vegnett").expect("path")..].to_string();
    }
    let (features, _) = all_features(&s, "/vegnett/lenker.geojson?antall=400").await;
    let ids: Vec<String> = features
        .iter()
        .map(|f| f["id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(ids.len(), oracle.len());
    assert_eq!(ids.iter().cloned().collect::<BTreeSet<_>>(), oracle);
    for f in &features {
        assert_eq!(f["geometry"]["type"], "LineString");
        assert!(all_coords(&f["geometry"]).iter().all(|c| lon_lat(c)));
        assert!(f["properties"]["veglenkeid"].is_u64());
        assert!(f["properties"].get("geometri").is_none());
    }
    // a position at a link's first coordinate
    let c = &all_coords(&features[0]["geometry"])[0];
    let pos = geojson(
        &s,
        &format!(
            "/posisjon.geojson?lat={}&lon={}&maks_avstand=50",
            c[1], c[0]
        ),
    )
    .await;
    let found = pos["features"].as_array().expect("features");
    assert_eq!(found.len(), 1);
    let p = &all_coords(&found[0]["geometry"])[0];
    assert!((p[0] - c[0]).abs() < 1e-4 && (p[1] - c[1]).abs() < 1e-4);
    assert!(found[0]["properties"]["veglenke"]["id"].is_u64());
    // areas: the kartutsnitt rectangle, as the v2 list gives it in 4326
    let areas = geojson(&s, "/omrader/kommuner.geojson").await;
    let v2 = s
        .get_json("/omrader/kommuner?inkluder=kartutsnitt&srid=4326", 200)
        .await;
    let list = v2.as_array().expect("list");
    let fs = areas["features"].as_array().expect("features");
    assert_eq!(fs.len(), list.len());
    for (f, m) in fs.iter().zip(list) {
        assert_eq!(f["properties"]["nummer"], m["nummer"]);
        assert_eq!(f["geometry"]["type"], "MultiPolygon");
        let ring = all_coords(&f["geometry"]);
        assert_eq!(ring.len(), 5);
        let (x, y) = first_wkt_coord(m["kartutsnitt"]["wkt"].as_str().expect("wkt"));
        assert!((ring[0][0] - x).abs() < 1e-7 && (ring[0][1] - y).abs() < 1e-7);
    }
}

#[tokio::test]
async fn geojson_is_415_where_not_offered() {
    let s = TestServer::start().await;
    let r = s
        .client
        .get(format!("{}/vegobjekttyper", s.base))
        .header("Accept", "application/geo+json")
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 415);
    let body: Value = r.json().await.expect("error body");
    assert_eq!(body[0]["code"], 4001);
    s.expect_error("/status.geojson", 415, 4001).await;
    s.expect_error("/vegobjekter/105/statistikk.geojson", 415, 4001)
        .await;
}
