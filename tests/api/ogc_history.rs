//! The OGC API's `datetime` and the vector tiles' `tidspunkt` on the generation with history
//! of `read_history.rs` (its fixture and server). Expectations come from the version rows the
//! fixture wrote (a brute-force "valid at" / "meets the interval" over them), and the tiles are
//! decoded by GDAL's MVT driver (as `ogc.rs` uses GDAL), not by vegdb.

use std::process::Command;

use serde_json::Value;
use vegdb::snapshot::columns::{Days, OPEN_END};

use crate::read_history::{day, server, valid_on, History, AFTER, BEFORE, CHANGE};
use crate::server::TestServer;

fn root(s: &TestServer) -> String {
    s.base.trim_end_matches("/nvdb/api/v2").to_string()
}

async fn get(s: &TestServer, url: &str) -> reqwest::Response {
    s.client.get(url).send().await.unwrap()
}

/// (nvdbId, versjon) of every feature of every page of an items URL (with `?`).
async fn items(s: &TestServer, url: &str) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut next = Some(format!("{url}&limit=7"));
    while let Some(u) = next.take() {
        let r = get(s, &u).await;
        assert_eq!(r.status().as_u16(), 200, "{u}");
        let page: Value = r.json().await.unwrap();
        for f in page["features"].as_array().unwrap() {
            out.push((
                f["properties"]["nvdbId"].as_u64().unwrap(),
                f["properties"]["versjon"].as_u64().unwrap() as u32,
            ));
        }
        next = page["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["rel"] == "next")
            .map(|l| l["href"].as_str().unwrap().to_string());
    }
    out
}

/// The versions (id, version) meeting the days `from..=to` (None: open), brute force.
fn meeting(h: &History, from: Option<Days>, to: Option<Days>) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32)> = h
        .versions
        .iter()
        .filter(|&&(_, _, start, end)| {
            let after_from = from.is_none_or(|f| end == OPEN_END || end > f);
            let before_to = to.is_none_or(|t| start <= t);
            after_from && before_to
        })
        .map(|v| (v.0, v.1))
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn ogc_items_at_an_instant_are_the_versions_valid_that_day() {
    let (s, h) = server().await;
    let items_url = format!("{}/ogc/collections/{}/items?f=json", root(&s), h.tid);
    for (when, d) in [
        (BEFORE.to_string(), day(BEFORE)),
        (AFTER.to_string(), day(AFTER)),
        ("2019-12-31".to_string(), CHANGE - 1),
        ("2020-01-01".to_string(), CHANGE),
        ("2019-12-31T23:59:59+01:00".to_string(), CHANGE - 1),
        ("2020-01-01T00:00:00Z".to_string(), CHANGE),
    ] {
        let mut expected = valid_on(h, d);
        expected.sort();
        assert!(!expected.is_empty());
        let q: String = form_urlencoded::byte_serialize(when.as_bytes()).collect();
        let mut got = items(&s, &format!("{items_url}&datetime={q}")).await;
        got.sort();
        assert_eq!(got, expected, "datetime={when}");
    }
    // a changed object's values before the change are the copied object's (today's values)
    let (a, b) = h.changed[0];
    let feature = |page: &Value, id: u64| {
        page["features"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["properties"]["nvdbId"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no feature {id}"))
    };
    let page = |q: &str| format!("{items_url}&limit=10000{q}");
    let today: Value = get(&s, &page("")).await.json().await.unwrap();
    let before: Value = get(&s, &page(&format!("&datetime={BEFORE}")))
        .await
        .json()
        .await
        .unwrap();
    let mut old = feature(&before, a)["properties"].clone();
    let mut copied = feature(&today, b)["properties"].clone();
    for p in [&mut old, &mut copied] {
        for k in ["nvdbId", "versjon"] {
            p.as_object_mut().unwrap().remove(k);
        }
    }
    assert_eq!(old, copied, "object {a} before the change has {b}'s values");
    // today's answer without datetime is unchanged by a future instant (but its timeStamp)
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("timeStamp");
        v.as_object_mut().unwrap().remove("links");
        v
    };
    let future: Value = get(&s, &page("&datetime=2999-01-01"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(strip(future), strip(today));
    // a day before the data: nothing
    assert_eq!(
        items(&s, &format!("{items_url}&datetime=1900-01-01")).await,
        vec![]
    );
    // the network collection at an instant has the closed link, not today's
    let net = format!(
        "{}/ogc/collections/vegnett/items?f=json&limit=10000",
        root(&s)
    );
    let links = |v: &Value| -> Vec<u64> {
        v["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["properties"]["veglenkeid"].as_u64().unwrap_or(0))
            .collect()
    };
    let now: Value = get(&s, &net).await.json().await.unwrap();
    let then: Value = get(&s, &format!("{net}&datetime={BEFORE}"))
        .await
        .json()
        .await
        .unwrap();
    assert!(links(&now).contains(&h.link) && !links(&now).contains(&h.old_link));
    assert!(links(&then).contains(&h.old_link) && !links(&then).contains(&h.link));
}

#[tokio::test]
async fn ogc_items_over_an_interval_are_every_version_meeting_it() {
    let (s, h) = server().await;
    let items_url = format!("{}/ogc/collections/{}/items?f=json", root(&s), h.tid);
    let d = |t: &str| Some(day(t));
    for (q, from, to) in [
        (format!("{BEFORE}/{AFTER}"), d(BEFORE), d(AFTER)),
        (
            "2019-12-31/2019-12-31".to_string(),
            Some(CHANGE - 1),
            Some(CHANGE - 1),
        ),
        (
            "2020-01-01/2020-02-01".to_string(),
            Some(CHANGE),
            Some(CHANGE + 31),
        ),
        (format!("../{BEFORE}"), None, d(BEFORE)),
        (format!("{AFTER}/.."), d(AFTER), None),
        ("2020-01-01T10:00:00Z/".to_string(), Some(CHANGE), None),
        ("../..".to_string(), None, None),
        ("../1900-01-01".to_string(), None, d("1900-01-01")),
    ] {
        let expected = meeting(h, from, to);
        let enc: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
        let got = items(&s, &format!("{items_url}&datetime={enc}")).await;
        assert_eq!(got, expected, "datetime={q}");
    }
    // across the change, a changed object is there twice: both versions
    let both = meeting(h, d(BEFORE), d(AFTER));
    let (a, _) = h.changed[0];
    assert_eq!(both.iter().filter(|v| v.0 == a).count(), 2);
    // numberMatched counts versions
    let r: Value = get(&s, &format!("{items_url}&datetime=../..&limit=1"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["numberMatched"], h.versions.len() as u64);
}

/// A feature's geometry (GeoJSON Point, LineString or their Multi forms) as a `geo` geometry.
fn geometry(g: &Value) -> Option<geo::Geometry<f64>> {
    let pt = |c: &Value| geo::coord! { x: c[0].as_f64().unwrap(), y: c[1].as_f64().unwrap() };
    let line = |c: &Value| geo::LineString(c.as_array().unwrap().iter().map(pt).collect());
    let c = &g["coordinates"];
    Some(match g["type"].as_str()? {
        "Point" => geo::Point(pt(c)).into(),
        "LineString" => line(c).into(),
        "MultiLineString" => geo::MultiLineString(c.as_array()?.iter().map(line).collect()).into(),
        "MultiPoint" => {
            geo::MultiPoint(c.as_array()?.iter().map(|p| geo::Point(pt(p))).collect()).into()
        }
        other => panic!("geometry type {other}"),
    })
}

#[tokio::test]
async fn an_interval_with_a_box_or_a_property_filter_selects_among_the_versions_meeting_it() {
    use geo::{BoundingRect, Intersects};
    let (s, h) = server().await;
    let items_url = format!("{}/ogc/collections/{}/items?f=json", root(&s), h.tid);
    let span = format!("{BEFORE}/{AFTER}");
    let all: Value = get(&s, &format!("{items_url}&datetime={span}&limit=10000"))
        .await
        .json()
        .await
        .unwrap();
    let all = all["features"].as_array().unwrap().clone();
    assert_eq!(
        all.len(),
        meeting(h, Some(day(BEFORE)), Some(day(AFTER))).len()
    );
    let key = |f: &Value| {
        (
            f["properties"]["nvdbId"].as_u64().unwrap(),
            f["properties"]["versjon"].as_u64().unwrap() as u32,
        )
    };
    // a box over the south-west quarter of the versions' extent, checked with `geo`
    let geoms: Vec<Option<geo::Geometry<f64>>> =
        all.iter().map(|f| geometry(&f["geometry"])).collect();
    let extent = geo::GeometryCollection(geoms.iter().flatten().cloned().collect())
        .bounding_rect()
        .unwrap();
    let (min, max) = (extent.min(), extent.max());
    let mid = geo::coord! { x: (min.x + max.x) / 2.0, y: (min.y + max.y) / 2.0 };
    let rect = geo::Rect::new(min, mid);
    let expected: Vec<(u64, u32)> = all
        .iter()
        .zip(&geoms)
        .filter(|(_, g)| g.as_ref().is_some_and(|g| g.intersects(&rect)))
        .map(|(f, _)| key(f))
        .collect();
    assert!(!expected.is_empty() && expected.len() < all.len());
    let bbox = format!("{},{},{},{}", min.x, min.y, mid.x, mid.y);
    let got = items(&s, &format!("{items_url}&datetime={span}&bbox={bbox}")).await;
    assert_eq!(got, expected, "bbox={bbox}");
    // a property filter: an enumerated property with a value some versions have
    let t = vegdb::catalog::Catalog::embedded()
        .object_type(h.tid)
        .unwrap();
    let (name, value) = t
        .property_types
        .iter()
        .filter(|p| p.allowed_values.is_some() && p.sensitivity == 0)
        .find_map(|p| {
            let v = all.iter().find_map(|f| f["properties"][&p.name].as_str())?;
            Some((p.name.clone(), v.to_string()))
        })
        .expect("an enumerated property with a value");
    let expected: Vec<(u64, u32)> = all
        .iter()
        .filter(|f| f["properties"][&name].as_str() == Some(&value))
        .map(key)
        .collect();
    assert!(!expected.is_empty());
    let enc = |t: &str| form_urlencoded::byte_serialize(t.as_bytes()).collect::<String>();
    let got = items(
        &s,
        &format!("{items_url}&datetime={span}&{}={}", enc(&name), enc(&value)),
    )
    .await;
    assert_eq!(got, expected, "{name}={value}");
}

#[tokio::test]
async fn bad_datetimes_are_400_in_the_ogc_shape() {
    let (s, h) = server().await;
    let r0 = root(&s);
    for q in [
        "2020-13-01",
        "2020-02-30",
        "yesterday",
        "2020-01-01T12:00:00",
        "2021-01-01/2020-01-01",
        "2020-01-01/2020-02-01/2020-03-01",
        "2020-1-1",
    ] {
        let enc: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
        for cid in [h.tid.to_string(), "vegnett".to_string()] {
            let url = format!("{r0}/ogc/collections/{cid}/items?datetime={enc}");
            let r = get(&s, &url).await;
            assert_eq!(r.status().as_u16(), 400, "{url}");
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["code"], "InvalidParameterValue", "{url}: {body}");
            assert!(body["description"].as_str().unwrap().contains("datetime"));
        }
    }
    // intervals: not on vegnett
    let url = format!("{r0}/ogc/collections/vegnett/items?datetime=../..");
    assert_eq!(get(&s, &url).await.status().as_u16(), 400, "{url}");
    // the OpenAPI document describes the parameter
    let api: Value = get(&s, &format!("{r0}/ogc/api"))
        .await
        .json()
        .await
        .unwrap();
    let params = api["paths"]["/collections/{collectionId}/items"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .clone();
    let dt = params.iter().find(|p| p["name"] == "datetime").unwrap();
    assert!(dt["description"].as_str().unwrap().contains("interval"));
}

/// Web Mercator tile (x, y) of a point at zoom `z` (textbook formulas).
fn tile_of(lon: f64, lat: f64, z: u32) -> (u32, u32) {
    let n = f64::from(1u32 << z);
    let r = lat.to_radians();
    let x = (lon + 180.0) / 360.0 * n;
    let y = (1.0 - (r.tan() + 1.0 / r.cos()).ln() / std::f64::consts::PI) / 2.0 * n;
    (x as u32, y as u32)
}

/// The features of an MVT tile decoded by GDAL's MVT driver: (veglenke, WKT geometry).
fn decode(bytes: &[u8], z: u32, x: u32, y: u32) -> Vec<(u64, String)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{z}/{x}"));
    std::fs::create_dir_all(&path).unwrap();
    let file = path.join(format!("{y}.mvt"));
    std::fs::write(&file, bytes).unwrap();
    let out = dir.path().join("out.geojson");
    let status = Command::new("ogr2ogr")
        .args(["-f", "GeoJSON"])
        .arg(&out)
        .arg(&file)
        .status()
        .expect("ogr2ogr runs (Debian gdal-bin)");
    assert!(status.success());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    doc["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["properties"]["veglenke"].as_u64().unwrap(),
                f["geometry"].to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tiles_at_a_day_show_the_network_of_that_day() {
    if std::env::var("VEGDB_SKIP_GDAL").is_ok_and(|v| v == "1") {
        eprintln!("VEGDB_SKIP_GDAL=1: GDAL test skipped");
        return;
    }
    let (s, h) = server().await;
    let (lon, lat) =
        vegdb::geo::srid::from_storage(vegdb::geo::srid::Srid::Wgs84, h.point.0, h.point.1)
            .unwrap();
    let z = 14;
    let (x, y) = tile_of(lon, lat, z);
    let url = format!("{}/tiles/vegnett/{z}/{x}/{y}.mvt", root(&s));
    let fetch = |q: &'static str| {
        let (s, url) = (&s, url.clone());
        async move {
            let r = get(s, &format!("{url}{q}")).await;
            assert_eq!(r.status().as_u16(), 200, "{url}{q}");
            let etag = r.headers()["etag"].to_str().unwrap().to_string();
            (r.bytes().await.unwrap().to_vec(), etag)
        }
    };
    let (today, today_tag) = fetch("").await;
    let (before, before_tag) = fetch("?tidspunkt=2015-06-01").await;
    let (future, _) = fetch("?tidspunkt=2999-01-01").await;
    assert_eq!(future, today, "a future day is today's tile");
    assert_ne!(before_tag, today_tag, "the ETag names the day");
    let (today_f, before_f) = (decode(&today, z, x, y), decode(&before, z, x, y));
    let geometry_of = |fs: &[(u64, String)], link: u64| -> Vec<String> {
        fs.iter()
            .filter(|f| f.0 == link)
            .map(|f| f.1.clone())
            .collect()
    };
    // today: the link, not the closed one; that day: the closed one where the link lies now
    assert!(!geometry_of(&today_f, h.link).is_empty());
    assert!(geometry_of(&today_f, h.old_link).is_empty());
    assert!(geometry_of(&before_f, h.link).is_empty());
    assert_eq!(
        geometry_of(&before_f, h.old_link),
        geometry_of(&today_f, h.link),
        "the closed link has the geometry it had (the link that replaced it has the same)"
    );
    // every other feature of that day is today's (the only closed link is the replaced one;
    // links that started later are not there yet)
    let mut missing: Vec<&(u64, String)> = before_f
        .iter()
        .filter(|f| f.0 != h.old_link && !today_f.contains(f))
        .collect();
    missing.truncate(5);
    assert!(missing.is_empty(), "not in today's tile: {missing:?}");
    // a conditional request with the day's ETag is 304; a bad day is 400
    let r = s
        .client
        .get(format!("{url}?tidspunkt=2015-06-01"))
        .header("if-none-match", &before_tag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 304);
    let r = get(&s, &format!("{url}?tidspunkt=2015-13-01")).await;
    assert_eq!(r.status().as_u16(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(body[0]["message"].as_str().unwrap().contains("tidspunkt"));
}
