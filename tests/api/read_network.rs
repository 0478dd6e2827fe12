use std::collections::HashSet;

use crate::server::{tiny_generation_dir, TestServer};

fn point_of(v: &serde_json::Value) -> (f64, f64) {
    let wkt = v["geometri"]["wkt"].as_str().unwrap();
    let inner = wkt.trim_start_matches("POINT Z (").trim_end_matches(')');
    let xs: Vec<f64> = inner.split(' ').map(|s| s.parse().unwrap()).collect();
    (xs[0], xs[1])
}

#[tokio::test]
async fn veg_posisjon_and_back_agree() {
    let s = TestServer::start().await;
    let links = s
        .get_json("/vegnett/lenker?antall=400&vegreferanse=K,F,E", 200)
        .await;
    let mut checked = 0;
    for link in links["objekter"].as_array().unwrap().iter().step_by(9) {
        let id = link["veglenkeid"].as_u64().unwrap();
        let (a, b) = (
            link["startposisjon"].as_f64().unwrap(),
            link["sluttposisjon"].as_f64().unwrap(),
        );
        let pos = a + (b - a) * 0.37;
        let by_link = s.get_json(&format!("/veg?veglenke={pos}@{id}"), 200).await;
        assert_eq!(by_link["veglenke"]["id"], id);
        // reference -> position gives the same reference back
        let kortform = by_link["vegreferanse"]["kortform"]
            .as_str()
            .unwrap()
            .replace(' ', "");
        let by_ref = s
            .get_json(&format!("/veg?vegreferanse={kortform}"), 200)
            .await;
        assert_eq!(by_ref["vegreferanse"], by_link["vegreferanse"]);
        // the point is on the road: /posisjon finds the same link at distance 0
        let (x, y) = point_of(&by_ref);
        let near = s
            .get_json(&format!("/posisjon?nord={y}&ost={x}&maks_antall=1"), 200)
            .await;
        assert_eq!(near[0]["avstand"], 0, "{near}");
        let (nx, ny) = point_of(&near[0]);
        assert!((nx - x).abs() < 0.002 && (ny - y).abs() < 0.002);
        checked += 1;
    }
    assert!(checked >= 20);
}

#[tokio::test]
async fn wgs84_input_and_output() {
    let s = TestServer::start().await;
    let link = s
        .get_json("/vegnett/lenker?antall=1&vegreferanse=F", 200)
        .await;
    let id = link["objekter"][0]["veglenkeid"].as_u64().unwrap();
    let p = s
        .get_json(&format!("/veg?veglenke=0.5@{id}&srid=4326"), 200)
        .await;
    assert_eq!(p["geometri"]["srid"], 4326);
    let (lon, lat) = point_of(&p);
    assert!(
        (9.0..12.0).contains(&lon) && (62.5..64.5).contains(&lat),
        "lon lat order: {lon} {lat}"
    );
    let near = s
        .get_json(&format!("/posisjon?lat={lat}&lon={lon}"), 200)
        .await;
    assert_eq!(near[0]["veglenke"]["id"], id);
    assert_eq!(near[0]["geometri"]["srid"], 32633);
    let wgs = s
        .get_json(&format!("/posisjon?lat={lat}&lon={lon}&srid=wgs84"), 200)
        .await;
    assert_eq!(wgs[0]["geometri"]["srid"], 4326);
}

#[tokio::test]
async fn posisjon_defaults_and_empty_answer() {
    let s = TestServer::start().await;
    // the North Sea
    assert_eq!(
        s.get_json("/posisjon?nord=6700000&ost=-100000", 200).await,
        serde_json::json!([])
    );
    let link = s.get_json("/vegnett/lenker?antall=1", 200).await;
    let (x, y) = {
        let wkt = link["objekter"][0]["geometri"]["wkt"].as_str().unwrap();
        let first = wkt
            .trim_start_matches("LINESTRING Z (")
            .split(',')
            .next()
            .unwrap()
            .trim()
            .to_string();
        let v: Vec<f64> = first.split(' ').map(|s| s.parse().unwrap()).collect();
        (v[0], v[1])
    };
    let many = s
        .get_json(
            &format!(
                "/posisjon?nord={}&ost={}&maks_antall=5&maks_avstand=300",
                y + 12.0,
                x
            ),
            200,
        )
        .await;
    let d: Vec<i64> = many
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["avstand"].as_i64().unwrap())
        .collect();
    assert!(!d.is_empty() && d.len() <= 5);
    assert!(d.windows(2).all(|w| w[0] <= w[1]), "{d:?}");
    assert!(d.iter().all(|&v| v <= 300));
}

#[tokio::test]
async fn batch_is_keyed_by_submitted_value() {
    let s = TestServer::start().await;
    let link = s.get_json("/vegnett/lenker?antall=2", 200).await;
    let ids: Vec<u64> = link["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["veglenkeid"].as_u64().unwrap())
        .collect();
    let q = format!("0.25@{},0.75@{},0.5@1", ids[0], ids[1]);
    let out = s.get_json(&format!("/veg/batch?veglenker={q}"), 200).await;
    let obj = out.as_object().unwrap();
    assert_eq!(obj.len(), 3);
    assert!(obj[&format!("0.25@{}", ids[0])]["vegreferanse"].is_object());
    assert!(obj["0.5@1"].is_null());
    let one = s
        .get_json(&format!("/veg?veglenke=0.75@{}", ids[1]), 200)
        .await;
    assert_eq!(obj[&format!("0.75@{}", ids[1])], one);
    let refs: Vec<String> = [&one]
        .iter()
        .map(|v| {
            v["vegreferanse"]["kortform"]
                .as_str()
                .unwrap()
                .replace(' ', "")
        })
        .collect();
    let by_ref = s
        .get_json(
            &format!("/veg/batch?vegreferanser={},5000Ev6hp999m1", refs[0]),
            200,
        )
        .await;
    // an integer meter maps to a position within half a meter of the original one
    assert_eq!(by_ref[&refs[0]]["vegreferanse"], one["vegreferanse"]);
    assert_eq!(by_ref[&refs[0]]["veglenke"]["id"], one["veglenke"]["id"]);
    assert!(by_ref["5000Ev6hp999m1"].is_null());
}

#[tokio::test]
async fn network_pages_cover_the_filter_exactly_once() {
    let s = TestServer::start().await;
    let r = s
        .client
        .get(format!("{}/vegnett/lenker?kommune=5001&antall=137", s.base))
        .header("Accept", "application/vnd.vegvesen.nvdb-v2+json")
        .send()
        .await
        .unwrap();
    let mut page: serde_json::Value = r.json().await.unwrap();
    let total = page["metadata"]["antall"]
        .as_u64()
        .expect("revision 0 carries metadata.antall");
    let mut seen = HashSet::new();
    let mut pages = 0;
    loop {
        let items = page["objekter"].as_array().unwrap();
        assert_eq!(
            page["metadata"]["returnert"].as_u64().unwrap() as usize,
            items.len()
        );
        for l in items {
            assert_eq!(l["kommune"], 5001);
            assert!(
                seen.insert(l["kortform"].as_str().unwrap().to_string()),
                "duplicate {}",
                l["kortform"]
            );
        }
        let href = page["metadata"]["neste"]["href"]
            .as_str()
            .unwrap()
            .to_string();
        let start = page["metadata"]["neste"]["start"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            href.starts_with("http://127.0.0.1:") && href.contains("kommune=5001"),
            "{href}"
        );
        let next: serde_json::Value = s
            .client
            .get(&href)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        pages += 1;
        if next["metadata"]["returnert"] == 0 {
            assert_eq!(
                next["metadata"]["neste"]["start"],
                start.as_str(),
                "the end repeats the start"
            );
            assert!(next["objekter"].as_array().unwrap().is_empty());
            break;
        }
        page = next;
        assert!(pages < 1000);
    }
    assert_eq!(seen.len() as u64, total);
    // the brute-force count of segments in Trondheim
    let (g, _) = vegdb::generation::Generation::load(&tiny_generation_dir(), &|_| {}).unwrap();
    assert_eq!(
        g.network
            .municipality
            .iter()
            .filter(|&&m| m == 5001)
            .count() as u64,
        total
    );
}

#[tokio::test]
async fn network_filters_combine_as_documented() {
    let s = TestServer::start().await;
    let all = s.get_json("/vegnett/lenker?antall=10000", 200).await;
    let n_all = all["objekter"].as_array().unwrap().len();
    let or = s
        .get_json(
            "/vegnett/lenker?antall=10000&kommune=5001&kommune=5031",
            200,
        )
        .await;
    let a = s
        .get_json("/vegnett/lenker?antall=10000&kommune=5001", 200)
        .await;
    let b = s
        .get_json("/vegnett/lenker?antall=10000&kommune=5031", 200)
        .await;
    let len = |v: &serde_json::Value| v["objekter"].as_array().unwrap().len();
    assert_eq!(len(&or), len(&a) + len(&b));
    assert!(len(&or) < n_all);
    // AND with a road reference
    let e = s
        .get_json("/vegnett/lenker?antall=10000&fylke=50&vegreferanse=E", 200)
        .await;
    assert!(e["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["vegreferanse"]["kategori"] == "E"));
    // map extent: every link returned has a vertex piece in the box
    let l0 = &a["objekter"][0];
    let wkt = l0["geometri"]["wkt"].as_str().unwrap();
    let v: Vec<f64> = wkt
        .trim_start_matches("LINESTRING Z (")
        .split(',')
        .next()
        .unwrap()
        .trim()
        .split(' ')
        .map(|s| s.parse().unwrap())
        .collect();
    let bbox = format!(
        "{},{},{},{}",
        v[0] - 300.0,
        v[1] - 300.0,
        v[0] + 300.0,
        v[1] + 300.0
    );
    let boxed = s
        .get_json(
            &format!("/vegnett/lenker?antall=10000&kartutsnitt={bbox}"),
            200,
        )
        .await;
    let ids: HashSet<u64> = boxed["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["veglenkeid"].as_u64().unwrap())
        .collect();
    assert!(ids.contains(&l0["veglenkeid"].as_u64().unwrap()));
    assert!(ids.len() < n_all);
    // veglenke stands alone
    let id = l0["veglenkeid"].as_u64().unwrap();
    let one = s
        .get_json(&format!("/vegnett/lenker?veglenke={id}"), 200)
        .await;
    assert!(one["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["veglenkeid"] == id));
    let single = s.get_json(&format!("/vegnett/lenker/{id}"), 200).await;
    assert_eq!(
        single.as_array().unwrap().len(),
        one["objekter"].as_array().unwrap().len()
    );
}

#[tokio::test]
async fn network_and_position_errors() {
    let s = TestServer::start().await;
    s.expect_error("/veg", 422, 4004).await;
    s.expect_error("/veg?vegreferanse=5000Ev6hp1m1&veglenke=0.5@1", 422, 4009)
        .await;
    s.expect_error("/veg?vegreferanse=Ev6hp1m1", 422, 4005)
        .await;
    s.expect_error("/veg?veglenke=1.5@1000001", 422, 4005).await;
    s.expect_error("/veg?veglenke=0.5@1000001&srid=99", 422, 4002)
        .await;
    s.expect_error("/veg/batch", 422, 4004).await;
    s.expect_error(
        "/veg/batch?veglenker=0.5@1&vegreferanser=5000Ev6hp1m1",
        422,
        4009,
    )
    .await;
    let many: Vec<String> = (0..1001).map(|i| format!("0.5@{i}")).collect();
    s.expect_error(
        &format!("/veg/batch?veglenker={}", many.join(",")),
        422,
        4006,
    )
    .await;
    s.expect_error("/posisjon", 422, 4004).await;
    s.expect_error("/posisjon?nord=7000000", 422, 4009).await;
    s.expect_error("/posisjon?nord=7000000&ost=abc", 422, 4010)
        .await;
    s.expect_error("/posisjon?lat=63&lon=10&maks_avstand=-1", 422, 4002)
        .await;
    s.expect_error("/posisjon?lat=63&lon=10&maks_antall=0", 422, 4002)
        .await;
    s.expect_error("/posisjon?lat=630&lon=10", 422, 4010).await;
    s.expect_error("/posisjon?lat=63&lon=10&vegreferanse=X", 422, 4005)
        .await;
    s.expect_error("/vegnett/lenker?veglenke=1000001&kommune=5001", 422, 4009)
        .await;
    s.expect_error("/vegnett/lenker?riksvegrute=RUTE1", 422, 4013)
        .await;
    s.expect_error("/vegnett/lenker?kartutsnitt=1,2,3", 422, 4011)
        .await;
    s.expect_error("/vegnett/lenker?start=nope", 422, 4005)
        .await;
    s.expect_error("/vegnett/lenker?antall=0", 422, 4002).await;
    s.expect_error("/vegnett/lenker/123", 404, 4012).await;
    // large pages are clamped, not refused
    let big = s.get_json("/vegnett/lenker?antall=50000", 200).await;
    assert!(big["objekter"].as_array().unwrap().len() <= 10_000);
}

fn assert_no_negative_zero(v: &serde_json::Value, path: &str) {
    match v {
        serde_json::Value::Number(n) => {
            let f = n.as_f64().unwrap();
            assert!(!(f == 0.0 && f.is_sign_negative()), "-0.0 at {path}");
        }
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| assert_no_negative_zero(x, &format!("{path}[{i}]"))),
        serde_json::Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| assert_no_negative_zero(x, &format!("{path}.{k}"))),
        _ => {}
    }
}

/// Link quality carries both name sets (the vegnett example's and `verdi/geometri.md`'s, which
/// the Java client reads), `strekningslengde` is whole meters as in the vegnett example
/// (`"strekningslengde": 78`) and agrees with the 2D length of the link's own WKT.
#[tokio::test]
async fn link_quality_names_and_lengths() {
    let s = TestServer::start().await;
    let page = s.get_json("/vegnett/lenker?antall=500", 200).await;
    assert_no_negative_zero(&page, "");
    let links = page["objekter"].as_array().unwrap();
    assert_eq!(links.len(), 500);
    for link in links {
        let q = &link["geometri"]["kvalitet"];
        for key in [
            "metode",
            "nøyaktighet",
            "høydenøyaktighet",
            "toleranse",
            "synlighet",
            "målemetode",
            "nøyaktighetHøyde",
            "synbarhet",
        ] {
            assert!(q[key].is_u64(), "kvalitet.{key}: {q}");
        }
        assert!(q.get("målemetodeHøyde").is_some(), "{q}");
        assert!(q["datafangstdato"].is_string());
        assert_eq!(q["målemetode"], q["metode"]);
        assert_eq!(q["nøyaktighetHøyde"], q["høydenøyaktighet"]);
        assert_eq!(q["synbarhet"], q["synlighet"]);
        let length = link["strekningslengde"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an integer: {}", link["strekningslengde"]));
        let wkt = link["geometri"]["wkt"].as_str().unwrap();
        let coords: Vec<(f64, f64)> = wkt
            .trim_start_matches("LINESTRING Z (")
            .trim_end_matches(')')
            .split(", ")
            .map(|c| {
                let v: Vec<f64> = c.split(' ').map(|x| x.parse().unwrap()).collect();
                (v[0], v[1])
            })
            .collect();
        let measured: f64 = coords
            .windows(2)
            .map(|w| ((w[1].0 - w[0].0).powi(2) + (w[1].1 - w[0].1).powi(2)).sqrt())
            .sum();
        assert!(
            (length as f64 - measured).abs() <= 0.51,
            "{length} vs {measured}: {}",
            link["kortform"]
        );
    }
}
