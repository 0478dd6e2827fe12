//! OGC API Features under `/ogc` (`api/ogc`): the documents, paging over next/prev links
//! against the v2 JSON list as oracle, property filters against the v2 `egenskap` filter, CRS
//! (Part 2) against the v2 WKT in the same system, errors, HTML; and GDAL's OAPIF driver
//! (`ogrinfo`, `ogr2ogr`, Debian `gdal-bin`) against the real binary. Without `ogrinfo` the
//! GDAL test fails (set `VEGDB_SKIP_GDAL=1` to skip it locally).

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

use crate::bin_server::BinServer;
use crate::server::{store, TestServer};

const CRS84: &str = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";

fn ogc_root(s: &TestServer) -> String {
    s.base.replace("/nvdb/api/v2", "/ogc")
}

async fn get(s: &TestServer, url: &str, accept: Option<&str>) -> reqwest::Response {
    let mut r = s.client.get(url);
    if let Some(a) = accept {
        r = r.header("Accept", a);
    }
    r.send().await.expect("request")
}

async fn get_ok(s: &TestServer, url: &str) -> (Value, reqwest::header::HeaderMap) {
    let r = get(s, url, None).await;
    assert_eq!(r.status(), 200, "GET {url}");
    let headers = r.headers().clone();
    let text = r.text().await.expect("body");
    (
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: {e}: {text}")),
        headers,
    )
}

fn link<'a>(doc: &'a Value, rel: &str) -> Option<&'a str> {
    doc["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == rel && l["type"] != "text/html")
        .and_then(|l| l["href"].as_str())
}

fn first_coord(geometry: &Value) -> (f64, f64) {
    let mut v = &geometry["coordinates"];
    while v[0].is_array() {
        v = &v[0];
    }
    (v[0].as_f64().expect("x"), v[1].as_f64().expect("y"))
}

fn first_wkt_coord(wkt: &str) -> (f64, f64) {
    let inner = wkt[wkt.find('(').expect("(")..].trim_start_matches('(');
    let nums: Vec<f64> = inner
        .split([',', ')'])
        .next()
        .expect("coordinate")
        .split_whitespace()
        .map(|n| n.parse().expect("number"))
        .collect();
    (nums[0], nums[1])
}

/// The ids of all v2 JSON objects of a type with an optional `egenskap` filter.
async fn v2_ids(s: &TestServer, type_id: u32, filter: &str) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    let mut path = format!("/vegobjekter/{type_id}?antall=500{filter}");
    loop {
        let page = s.get_json(&path, 200).await;
        let objects = page["objekter"].as_array().expect("objekter");
        if objects.is_empty() {
            break;
        }
        out.extend(objects.iter().map(|o| o["id"].as_u64().expect("id")));
        let next = page["metadata"]["neste"]["href"].as_str().expect("neste");
        path = next[next.find("/vegobjekter").expect("path")..].to_string();
    }
    out
}

#[tokio::test]
async fn landing_conformance_and_collections() {
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    let (landing, _) = get_ok(&s, &root).await;
    for rel in ["conformance", "data", "service-desc", "self"] {
        assert!(link(&landing, rel).is_some(), "landing lacks {rel}");
    }
    let (conf, _) = get_ok(&s, link(&landing, "conformance").expect("conformance")).await;
    let classes: Vec<&str> = conf["conformsTo"]
        .as_array()
        .expect("conformsTo")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(classes.contains(&"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core"));
    assert!(classes.contains(&"http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs"));
    let (api, _) = get_ok(&s, link(&landing, "service-desc").expect("api")).await;
    assert!(api["paths"]["/collections/{collectionId}/items"].is_object());
    let (cols, _) = get_ok(&s, link(&landing, "data").expect("data")).await;
    let ids: Vec<&str> = cols["collections"]
        .as_array()
        .expect("collections")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    // oracle: the types with objects in the served generation, plus the network
    let g = store().current();
    let mut expected: Vec<String> = vec!["vegnett".into()];
    expected.extend(
        g.objects
            .iter()
            .filter(|(_, d)| !d.table.is_empty())
            .map(|(t, _)| t.to_string()),
    );
    assert_eq!(ids, expected);
    let c105 = &cols["collections"][ids.iter().position(|i| *i == "105").expect("105")];
    assert_eq!(c105["title"], "Fartsgrense");
    assert_eq!(c105["itemType"], "feature");
    assert!(c105["crs"]
        .as_array()
        .expect("crs")
        .iter()
        .any(|c| c == "http://www.opengis.net/def/crs/EPSG/0/25833"));
    let bbox = &c105["extent"]["spatial"]["bbox"][0];
    assert!(bbox[0].as_f64().expect("x") > 4.0 && bbox[3].as_f64().expect("y") < 72.0);
    let (one, _) = get_ok(&s, &format!("{root}/collections/105")).await;
    assert_eq!(one["id"], "105");
    // HTML by f= and by Accept
    for (url, accept) in [
        (format!("{root}/collections?f=html"), None),
        (
            format!("{root}/collections/105/items?limit=3"),
            Some("text/html,*/*"),
        ),
    ] {
        let r = get(&s, &url, accept).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/html;charset=utf-8");
        let text = r.text().await.expect("html");
        assert!(text.starts_with("<!DOCTYPE html>") && text.contains("Fartsgrense"));
    }
}

#[tokio::test]
async fn items_page_over_next_and_prev_links_exactly_once() {
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    let oracle = v2_ids(&s, 105, "").await;
    let mut seen = Vec::new();
    let mut url = format!("{root}/collections/105/items?limit=7");
    let mut second_page_prev = None;
    let mut pages = 0;
    loop {
        let (fc, headers) = get_ok(&s, &url).await;
        assert_eq!(headers["content-type"], "application/geo+json");
        assert_eq!(headers["content-crs"], format!("<{CRS84}>").as_str());
        assert_eq!(fc["numberMatched"].as_u64(), Some(oracle.len() as u64));
        let fs = fc["features"].as_array().expect("features");
        assert_eq!(fc["numberReturned"].as_u64(), Some(fs.len() as u64));
        for f in fs {
            seen.push(f["id"].as_u64().expect("id"));
            let (x, y) = first_coord(&f["geometry"]);
            assert!((4.0..32.0).contains(&x) && (57.0..72.0).contains(&y));
        }
        pages += 1;
        if pages == 2 {
            second_page_prev = link(&fc, "prev").map(str::to_string);
        }
        match link(&fc, "next") {
            Some(n) => url = n.to_string(),
            None => break,
        }
    }
    assert_eq!(seen.len(), oracle.len(), "some object twice or missing");
    assert_eq!(seen.iter().copied().collect::<BTreeSet<_>>(), oracle);
    // prev of page 2 is page 1
    let (first, _) = get_ok(&s, &second_page_prev.expect("prev link")).await;
    let first_ids: Vec<u64> = first["features"]
        .as_array()
        .expect("features")
        .iter()
        .map(|f| f["id"].as_u64().expect("id"))
        .collect();
    assert_eq!(first_ids, seen[..7]);
    // one feature by id
    let (f, _) = get_ok(&s, &format!("{root}/collections/105/items/{}", seen[0])).await;
    assert_eq!(f["type"], "Feature");
    assert_eq!(f["id"].as_u64(), Some(seen[0]));
    // the road network: every segment once, ids resolvable
    let (net, _) = get_ok(&s, &format!("{root}/collections/vegnett/items?limit=10000")).await;
    let v2 = s.get_json("/vegnett/lenker?antall=10000", 200).await;
    assert_eq!(
        net["numberMatched"].as_u64(),
        Some(v2["objekter"].as_array().expect("links").len() as u64)
    );
    let fid = net["features"][3]["id"].as_str().expect("kortform id");
    let (one, _) = get_ok(&s, &format!("{root}/collections/vegnett/items/{fid}")).await;
    assert_eq!(one["geometry"], net["features"][3]["geometry"]);
}

#[tokio::test]
async fn property_filters_bbox_and_crs() {
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    // the allowed value "80" of Fartsgrense (2021) from the catalogue endpoint
    let t = s.get_json("/vegobjekttyper/105", 200).await;
    let p = t["egenskapstyper"]
        .as_array()
        .expect("egenskapstyper")
        .iter()
        .find(|p| p["id"] == 2021)
        .expect("2021");
    let v80 = p["tillatte_verdier"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["verdi"].as_f64() == Some(80.0))
        .expect("80")["id"]
        .as_u64()
        .expect("id");
    let oracle = v2_ids(&s, 105, &format!("&egenskap=2021={v80}")).await;
    assert!(!oracle.is_empty());
    for query in ["Fartsgrense=80", "fartsgrense=80", &format!("2021={v80}")] {
        let (fc, _) = get_ok(
            &s,
            &format!("{root}/collections/105/items?limit=10000&{query}"),
        )
        .await;
        let ids: BTreeSet<u64> = fc["features"]
            .as_array()
            .expect("features")
            .iter()
            .map(|f| {
                assert_eq!(f["properties"]["Fartsgrense"], 80);
                f["id"].as_u64().expect("id")
            })
            .collect();
        assert_eq!(ids, oracle, "{query}");
    }
    // crs: UTM numbers equal the v2 WKT's; EPSG:4326 is lat, lon
    let v2 = s
        .get_json(
            "/vegobjekter/105?antall=3&inkluder=geometri&srid=25833",
            200,
        )
        .await;
    let (utm, h) = get_ok(
        &s,
        &format!(
            "{root}/collections/105/items?limit=3&crs=http://www.opengis.net/def/crs/EPSG/0/25833"
        ),
    )
    .await;
    assert_eq!(
        h["content-crs"],
        "<http://www.opengis.net/def/crs/EPSG/0/25833>"
    );
    let (lonlat, _) = get_ok(&s, &format!("{root}/collections/105/items?limit=3")).await;
    let (latlon, _) = get_ok(
        &s,
        &format!(
            "{root}/collections/105/items?limit=3&crs=http://www.opengis.net/def/crs/EPSG/0/4326"
        ),
    )
    .await;
    for i in 0..3 {
        assert_eq!(utm["features"][i]["id"], v2["objekter"][i]["id"]);
        let (x, y) = first_coord(&utm["features"][i]["geometry"]);
        let (wx, wy) = first_wkt_coord(v2["objekter"][i]["geometri"]["wkt"].as_str().expect("wkt"));
        assert!((x - wx).abs() < 1e-3 && (y - wy).abs() < 1e-3);
        let (lon, lat) = first_coord(&lonlat["features"][i]["geometry"]);
        let (a, b) = first_coord(&latlon["features"][i]["geometry"]);
        assert_eq!((a, b), (lat, lon));
    }
    // bbox around the first feature's first point: it is in, every answer touches the box
    let (lon, lat) = first_coord(&lonlat["features"][0]["geometry"]);
    let bbox = [lon - 0.001, lat - 0.001, lon + 0.001, lat + 0.001];
    let q = format!("{},{},{},{}", bbox[0], bbox[1], bbox[2], bbox[3]);
    let (inside, _) = get_ok(
        &s,
        &format!("{root}/collections/105/items?limit=10000&bbox={q}"),
    )
    .await;
    let fs = inside["features"].as_array().expect("features");
    assert!(fs.iter().any(|f| f["id"] == lonlat["features"][0]["id"]));
    assert!(fs.len() < v2_ids(&s, 105, "").await.len());
    // the same box as EPSG:4326 (lat, lon order) selects the same features
    let q2 = format!("{},{},{},{}", bbox[1], bbox[0], bbox[3], bbox[2]);
    let (same, _) = get_ok(
        &s,
        &format!("{root}/collections/105/items?limit=10000&bbox={q2}&bbox-crs=http://www.opengis.net/def/crs/EPSG/0/4326"),
    )
    .await;
    assert_eq!(same["numberMatched"], inside["numberMatched"]);
}

#[tokio::test]
async fn errors_are_4xx_in_the_ogc_shape() {
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    for (path, status) in [
        ("/collections/nope", 404),
        ("/collections/nope/items", 404),
        ("/collections/105/items/1", 404),
        ("/collections/vegnett/items/0-1@1", 404),
        ("/collections/105/items?limit=0", 400),
        ("/collections/105/items?limit=x", 400),
        ("/collections/105/items?offset=-1", 400),
        ("/collections/105/items?bbox=1,2,3", 400),
        ("/collections/105/items?bbox=a,b,c,d", 400),
        ("/collections/105/items?bbox=10,64,9,63", 400),
        (
            "/collections/105/items?crs=http://www.opengis.net/def/crs/EPSG/0/3857",
            400,
        ),
        ("/collections/105/items?Fartsgrense=81", 400),
        ("/collections/105/items?nosuchproperty=1", 400),
        ("/collections/vegnett/items?Fartsgrense=80", 400),
        ("/collections/105/items?datetime=2020-01-32", 400),
        ("/collections?f=xml", 400),
        ("/conformance?x=1", 400),
    ] {
        let r = get(&s, &format!("{root}{path}"), None).await;
        assert_eq!(r.status().as_u16(), status, "{path}");
        assert_eq!(r.headers()["content-type"], "application/json", "{path}");
        let body: Value = r.json().await.expect("error body");
        assert!(
            body["code"].is_string() && body["description"].is_string(),
            "{path}: {body}"
        );
    }
}

fn ogr(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| {
        panic!(
            "{tool} cannot run ({e}): install Debian gdal-bin (or set VEGDB_SKIP_GDAL=1 locally)"
        )
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{tool} {args:?} failed:\n{text}");
    text
}

fn feature_count(ogrinfo: &str) -> u64 {
    ogrinfo
        .lines()
        .find_map(|l| l.strip_prefix("Feature Count: "))
        .unwrap_or_else(|| panic!("no feature count in\n{ogrinfo}"))
        .trim()
        .parse()
        .expect("count")
}

#[tokio::test]
async fn gdal_reads_the_ogc_api_and_geojson() {
    if std::env::var("VEGDB_SKIP_GDAL").is_ok_and(|v| v == "1") {
        eprintln!("VEGDB_SKIP_GDAL=1: GDAL test skipped");
        return;
    }
    let server = BinServer::start(&[]).await;
    let root = server.root.clone();
    let client = reqwest::Client::new();
    let cols: Value = client
        .get(format!("{root}/ogc/collections"))
        .send()
        .await
        .expect("collections")
        .json()
        .await
        .expect("json");
    let ids: Vec<String> = cols["collections"]
        .as_array()
        .expect("collections")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_string())
        .collect();
    let src = format!("OAPIF:{root}/ogc");
    let (listing, copy) = tokio::task::spawn_blocking({
        let src = src.clone();
        move || {
            let listing = ogr("ogrinfo", &["-ro", "-q", &src]);
            let dir = tempfile::tempdir().expect("temp dir");
            let out = dir.path().join("105.geojson");
            let out_s = out.to_str().expect("utf-8").to_string();
            ogr("ogr2ogr", &["-f", "GeoJSON", &out_s, &src, "105"]);
            let copy: Value =
                serde_json::from_str(&std::fs::read_to_string(&out).expect("ogr2ogr output"))
                    .expect("GeoJSON");
            (listing, copy)
        }
    })
    .await
    .expect("gdal runs");
    for id in &ids {
        assert!(
            listing
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(id.as_str())),
            "ogrinfo does not list layer {id}:\n{listing}"
        );
    }
    let expected: Value = client
        .get(format!("{root}/ogc/collections/105/items?limit=1"))
        .send()
        .await
        .expect("items")
        .json()
        .await
        .expect("json");
    let n = expected["numberMatched"].as_u64().expect("numberMatched");
    let copied = copy["features"].as_array().expect("features");
    assert_eq!(copied.len() as u64, n, "ogr2ogr copied a different count");
    let copied_ids: BTreeSet<String> = copied
        .iter()
        .map(|f| f["properties"]["nvdbId"].to_string())
        .collect();
    assert_eq!(copied_ids.len() as u64, n);
    assert!(copied
        .iter()
        .all(|f| f["properties"]["Fartsgrense"].is_number()
            || f["properties"].get("Fartsgrense").is_none()));
    // a .geojson answer of the v2 API opens in ogrinfo with its feature count
    let url = format!("{root}/nvdb/api/v2/vegobjekter/105.geojson?antall=25");
    let page: Value = client
        .get(&url)
        .send()
        .await
        .expect("page")
        .json()
        .await
        .expect("json");
    let info = tokio::task::spawn_blocking(move || ogr("ogrinfo", &["-ro", "-so", "-al", &url]))
        .await
        .expect("ogrinfo runs");
    assert_eq!(
        feature_count(&info),
        page["numberReturned"].as_u64().expect("numberReturned")
    );
    assert!(info.contains("Fartsgrense"), "{info}");
}

#[tokio::test]
async fn the_root_page_links_the_ogc_api_tiles_and_map() {
    let s = TestServer::start().await;
    let root = s.base.replace("/nvdb/api/v2", "");
    let html = "text/html,application/xhtml+xml,*/*;q=0.8";
    let r = get(&s, &format!("{root}/"), Some(html)).await;
    assert_eq!(r.status(), 200);
    let page = r.text().await.expect("page");
    for path in ["/ogc", "/tiles", "/kart"] {
        assert!(
            page.contains(&format!("<a href=\"{path}\">")),
            "the root page does not link {path}:\n{page}"
        );
        let r = get(&s, &format!("{root}{path}"), Some(html)).await;
        assert_eq!(r.status(), 200, "{path}");
    }
}

/// A GeoJSON geometry (lon/lat) as a `geo` geometry.
fn geo_geometry(g: &Value) -> geo::Geometry<f64> {
    use geo::{Coord, LineString, MultiLineString, MultiPolygon, Point, Polygon};
    let c = |v: &Value| Coord {
        x: v[0].as_f64().expect("x"),
        y: v[1].as_f64().expect("y"),
    };
    let line = |v: &Value| LineString::new(v.as_array().expect("line").iter().map(c).collect());
    let poly = |v: &Value| {
        let rings: Vec<LineString<f64>> = v.as_array().expect("rings").iter().map(line).collect();
        let mut rings = rings.into_iter();
        Polygon::new(rings.next().expect("exterior"), rings.collect())
    };
    let k = &g["coordinates"];
    match g["type"].as_str().expect("type") {
        "Point" => Point::from(c(k)).into(),
        "LineString" => line(k).into(),
        "MultiLineString" => {
            MultiLineString::new(k.as_array().expect("lines").iter().map(line).collect()).into()
        }
        "Polygon" => poly(k).into(),
        "MultiPolygon" => {
            MultiPolygon::new(k.as_array().expect("polygons").iter().map(poly).collect()).into()
        }
        other => panic!("geometry type {other}"),
    }
}

#[tokio::test]
async fn bbox_answers_hold_exactly_the_features_that_intersect_the_box() {
    use geo::{Coord, Intersects, Rect};
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    for collection in ["105", "vegnett"] {
        let (all, _) = get_ok(
            &s,
            &format!("{root}/collections/{collection}/items?limit=10000"),
        )
        .await;
        let all = all["features"].as_array().expect("features").clone();
        assert!(all.len() < 10000, "one page holds every feature");
        // boxes around three features, a few hundred metres wide: many features cross an edge
        for f in [&all[0], &all[all.len() / 2], &all[all.len() - 1]] {
            let (lon, lat) = first_coord(&f["geometry"]);
            let b = [lon - 0.004, lat - 0.002, lon + 0.004, lat + 0.002];
            let grown = Rect::new(
                Coord {
                    x: b[0] - 1e-7,
                    y: b[1] - 1e-7,
                },
                Coord {
                    x: b[2] + 1e-7,
                    y: b[3] + 1e-7,
                },
            );
            let shrunk = Rect::new(
                Coord {
                    x: b[0] + 1e-7,
                    y: b[1] + 1e-7,
                },
                Coord {
                    x: b[2] - 1e-7,
                    y: b[3] - 1e-7,
                },
            );
            let (answer, _) = get_ok(
                &s,
                &format!(
                    "{root}/collections/{collection}/items?limit=10000&bbox={},{},{},{}",
                    b[0], b[1], b[2], b[3]
                ),
            )
            .await;
            let got: BTreeSet<String> = answer["features"]
                .as_array()
                .expect("features")
                .iter()
                .map(|f| f["id"].to_string())
                .collect();
            assert_eq!(answer["numberMatched"].as_u64(), Some(got.len() as u64));
            let mut sure_in = BTreeSet::new();
            let mut sure_out = BTreeSet::new();
            for f in &all {
                let g = geo_geometry(&f["geometry"]);
                if g.intersects(&shrunk) {
                    sure_in.insert(f["id"].to_string());
                } else if !g.intersects(&grown) {
                    sure_out.insert(f["id"].to_string());
                }
            }
            assert!(
                sure_in.iter().all(|id| got.contains(id)),
                "{collection} {b:?}: a feature in the box is left out"
            );
            assert!(
                got.iter().all(|id| !sure_out.contains(id)),
                "{collection} {b:?}: a feature outside the box is answered"
            );
            assert!(got.contains(&f["id"].to_string()));
        }
    }
}
