use std::collections::HashSet;

use crate::server::{golden, store, tiny_generation_dir, TestServer};

async fn page_all(s: &TestServer, first: &str) -> (Vec<serde_json::Value>, u64) {
    let r = s
        .client
        .get(format!("{}{first}", s.base))
        .header("Accept", "application/vnd.vegvesen.nvdb-v2+json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{first}");
    let mut page: serde_json::Value = r.json().await.unwrap();
    let total = page["metadata"]["antall"].as_u64().unwrap();
    let mut all = Vec::new();
    loop {
        let items = page["objekter"].as_array().unwrap().clone();
        if items.is_empty() {
            break;
        }
        all.extend(items);
        let href = page["metadata"]["neste"]["href"]
            .as_str()
            .unwrap()
            .to_string();
        page = s
            .client
            .get(&href)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    }
    (all, total)
}

#[tokio::test]
async fn statistics_count_equals_objects_reached_by_paging() {
    let s = TestServer::start().await;
    for (t, q) in [
        (105, "kommune=5001&egenskap=2021!=null"),
        (95, "fylke=50"),
        (87, "kommune=5031,5028"),
        (5, "vegreferanse=E"),
        (241, ""),
        (95, "egenskap=%22egenskap(1876)%20in%20[7988,2868]%22"),
    ] {
        let stats = s
            .get_json(&format!("/vegobjekter/{t}/statistikk/?{q}"), 200)
            .await;
        let (all, total) = page_all(&s, &format!("/vegobjekter/{t}/?antall=97&{q}")).await;
        let ids: HashSet<u64> = all.iter().map(|o| o["id"].as_u64().unwrap()).collect();
        assert_eq!(ids.len(), all.len(), "{t} {q}: duplicates across pages");
        assert_eq!(
            stats["antall"].as_u64().unwrap(),
            all.len() as u64,
            "{t} {q}"
        );
        assert_eq!(total, all.len() as u64);
        let mut sorted: Vec<u64> = ids.into_iter().collect();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            all.iter()
                .map(|o| o["id"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            "pages are in id order"
        );
    }
}

#[tokio::test]
async fn paging_across_a_generation_swap_neither_skips_nor_repeats() {
    let s = TestServer::start().await;
    let (expected, _) = page_all(&s, "/vegobjekter/83/?antall=500").await;
    let mut page = s.get_json("/vegobjekter/83/?antall=50", 200).await;
    let mut seen = Vec::new();
    let mut swapped = false;
    loop {
        let items = page["objekter"].as_array().unwrap().clone();
        if items.is_empty() {
            break;
        }
        seen.extend(items.iter().map(|o| o["id"].as_u64().unwrap()));
        if !swapped {
            // publish-equivalent: a freshly loaded generation replaces the current one
            let (g, _) =
                vegdb::snapshot::generation::Generation::load(&tiny_generation_dir(), &|_| {})
                    .unwrap();
            store().swap(g);
            swapped = true;
        }
        let href = page["metadata"]["neste"]["href"]
            .as_str()
            .unwrap()
            .to_string();
        page = s
            .client
            .get(&href)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    }
    let want: Vec<u64> = expected.iter().map(|o| o["id"].as_u64().unwrap()).collect();
    assert_eq!(seen, want);
}

#[tokio::test]
async fn objects_render_as_golden_and_inkluder_controls_content() {
    let s = TestServer::start().await;
    let list = s.get_json("/vegobjekter/95/?antall=3", 200).await;
    let first = &list["objekter"][0];
    assert_eq!(
        first.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["id", "href"],
        "no inkluder = id and href"
    );
    let id = first["id"].as_u64().unwrap();
    let full = s.get_json(&format!("/vegobjekter/95/{id}"), 200).await;
    golden("vegobjekter/skiltpunkt", &full);
    for key in [
        "metadata",
        "egenskaper",
        "geometri",
        "lokasjon",
        "relasjoner",
    ] {
        assert!(full.get(key).is_some(), "{key}");
    }
    assert!(
        full.get("vegsegmenter").is_none(),
        "default is alle except vegsegmenter"
    );
    let seg = s
        .get_json(&format!("/vegobjekter/95/{id}?inkluder=vegsegmenter"), 200)
        .await;
    assert!(seg["vegsegmenter"].is_array() && seg.get("egenskaper").is_none());
    let min = s
        .get_json("/vegobjekter/95/?antall=1&inkluder=minimum", 200)
        .await;
    assert!(min["objekter"][0]["metadata"]["versjon"].is_u64());
    // inkludergeometri
    let none = s
        .get_json(
            &format!("/vegobjekter/95/{id}?inkluder=alle&inkludergeometri=ingen"),
            200,
        )
        .await;
    assert!(none.get("geometri").is_none() && none["lokasjon"].get("geometri").is_none());
    assert!(none["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["datatype"] != 17));
    // rev 0 vs newest sist_modifisert format
    let r = s
        .client
        .get(format!("{}/vegobjekter/95/{id}", s.base))
        .header("Accept", "application/vnd.vegvesen.nvdb-v2+json")
        .send()
        .await
        .unwrap();
    let rev0: serde_json::Value = r.json().await.unwrap();
    assert!(rev0["metadata"]["sist_modifisert"]
        .as_str()
        .unwrap()
        .contains(' '));
    assert!(full["metadata"]["sist_modifisert"]
        .as_str()
        .unwrap()
        .contains('T'));
}

#[tokio::test]
async fn segmentation_cuts_stretches_to_the_area() {
    let s = TestServer::start().await;
    let seg = s
        .get_json(
            "/vegobjekter/105/?antall=10000&inkluder=lokasjon&kommune=5031",
            200,
        )
        .await;
    let whole = s
        .get_json(
            "/vegobjekter/105/?antall=10000&inkluder=lokasjon&kommune=5031&segmentering=false",
            200,
        )
        .await;
    let seg_objs = seg["objekter"].as_array().unwrap();
    assert_eq!(seg_objs.len(), whole["objekter"].as_array().unwrap().len());
    for o in seg_objs {
        assert_eq!(
            o["lokasjon"]["kommuner"],
            serde_json::json!([5031]),
            "{}",
            o["id"]
        );
    }
    let sum = |v: &serde_json::Value| {
        v["objekter"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["lokasjon"]["strekningslengde"].as_f64().unwrap())
            .sum::<f64>()
    };
    assert!(sum(&seg) <= sum(&whole));
    let stats = s
        .get_json("/vegobjekter/105/statistikk/?kommune=5031", 200)
        .await;
    assert!(
        (stats["strekningslengde"].as_f64().unwrap() - sum(&seg)).abs() < 1.0,
        "{stats} vs {}",
        sum(&seg)
    );
    let stats_whole = s
        .get_json(
            "/vegobjekter/105/statistikk/?kommune=5031&segmentering=false",
            200,
        )
        .await;
    assert!((stats_whole["strekningslengde"].as_f64().unwrap() - sum(&whole)).abs() < 1.0);
}

#[tokio::test]
async fn depth_properties_and_redirect() {
    let s = TestServer::start().await;
    let list = s
        .get_json("/vegobjekter/95/?antall=200&inkluder=relasjoner", 200)
        .await;
    let parent = list["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| !o["relasjoner"]["barn"].as_array().unwrap().is_empty())
        .unwrap();
    let id = parent["id"].as_u64().unwrap();
    let children: Vec<u64> = parent["relasjoner"]["barn"][0]["vegobjekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let d1 = s
        .get_json(&format!("/vegobjekter/95/{id}?dybde=1"), 200)
        .await;
    assert_eq!(d1.as_array().unwrap().len(), 1);
    let full = s
        .get_json(&format!("/vegobjekter/95/{id}?dybde=full"), 200)
        .await;
    let got: Vec<u64> = full
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect();
    assert_eq!(got[0], id);
    assert_eq!(&got[1..], &children[..]);
    let child = s
        .get_json(&format!("/vegobjekter/96/{}", children[0]), 200)
        .await;
    assert_eq!(child["relasjoner"]["foreldre"][0]["vegobjekter"][0], id);
    // egenskaper
    let props = s
        .get_json(&format!("/vegobjekter/95/{id}/egenskaper"), 200)
        .await;
    let one = &props.as_array().unwrap()[0];
    let pid = one["id"].as_u64().unwrap();
    assert_eq!(
        &s.get_json(&format!("/vegobjekter/95/{id}/egenskaper/{pid}"), 200)
            .await,
        one
    );
    s.expect_error(&format!("/vegobjekter/95/{id}/egenskaper/1"), 404, 4012)
        .await;
    // redirect
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .get(format!("{}/vegobjekt?id={id}", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    assert_eq!(
        r.headers()["location"].to_str().unwrap(),
        format!("{}/vegobjekter/95/{id}", s.base)
    );
    let followed = s.get_json(&format!("/vegobjekt?id={id}"), 200).await;
    assert_eq!(followed["id"], id);
    s.expect_error("/vegobjekt?id=1", 404, 4012).await;
    s.expect_error(&format!("/vegobjekter/96/{id}"), 404, 4012)
        .await;
}

#[tokio::test]
async fn sensitive_values_are_never_shown() {
    let s = TestServer::start().await;
    let catalog = vegdb::catalog::Catalog::embedded();
    let t = catalog.object_type(87).unwrap();
    let sensitive: Vec<u64> = t
        .property_types
        .iter()
        .filter(|p| p.sensitivity > 0)
        .map(|p| p.id as u64)
        .collect();
    assert!(!sensitive.is_empty());
    let (g, _) =
        vegdb::snapshot::generation::Generation::load(&tiny_generation_dir(), &|_| {}).unwrap();
    let col = g.objects[&87]
        .table
        .property(sensitive[0] as u32)
        .expect("the generator fills sensitive values");
    use arrow_array::Array;
    assert!(col.values.len() > col.values.null_count());
    let all = s
        .get_json("/vegobjekter/87/?antall=10000&inkluder=egenskaper", 200)
        .await;
    for o in all["objekter"].as_array().unwrap() {
        for e in o["egenskaper"].as_array().unwrap() {
            assert!(!sensitive.contains(&e["id"].as_u64().unwrap()));
        }
    }
}

#[tokio::test]
async fn change_lists() {
    let s = TestServer::start().await;
    let changed = s
        .get_json(
            "/vegobjekter/105/endringer?type=endret&etter=2026-06-01&antall=10000",
            200,
        )
        .await;
    let items = changed["objekter"].as_array().unwrap();
    assert!(!items.is_empty());
    for i in items {
        assert_eq!(i["type"], "ENDRET");
        assert!(
            i["vegobjekt"]["metadata"]["sist_modifisert"]
                .as_str()
                .unwrap()
                > "2026-05-31T22:00:00"
        );
    }
    let deleted = s
        .get_json(
            "/vegobjekter/105/endringer?type=slettet&etter=2019-01-01T00:00:00Z",
            200,
        )
        .await;
    assert!(deleted["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["type"] == "SLETTET" && i["vegobjekt"].is_u64()));
    s.expect_error("/vegobjekter/105/endringer?etter=2020-01-01", 422, 4004)
        .await;
    s.expect_error("/vegobjekter/105/endringer?type=endret", 422, 4004)
        .await;
    s.expect_error(
        "/vegobjekter/105/endringer?type=endret&etter=igår",
        422,
        4007,
    )
    .await;
    s.expect_error(
        "/vegobjekter/105/endringer?type=ny&etter=2020-01-01",
        422,
        4005,
    )
    .await;
    s.expect_error(
        "/vegobjekter/105/endringer?type=endret&etter=2020-01-01&kommune=5001",
        422,
        4013,
    )
    .await;
}

#[tokio::test]
async fn object_query_errors() {
    let s = TestServer::start().await;
    s.expect_error("/vegobjekter/99999/", 404, 4012).await;
    s.expect_error("/vegobjekter/abc/", 422, 4002).await;
    let m = s
        .expect_error("/vegobjekter/105/?egenskap=2021%3E%3D%3D5", 422, 4005)
        .await;
    assert!(m.contains("posisjon"), "{m}");
    s.expect_error("/vegobjekter/105/?egenskap=2021%3C2738", 422, 4005)
        .await;
    s.expect_error("/vegobjekter/105/?egenskap=1876=2868", 422, 4005)
        .await;
    s.expect_error("/vegobjekter/105/?overlapp=abc", 422, 4005)
        .await;
    s.expect_error("/vegobjekter/105/?overlapp=67(1=1", 422, 4005)
        .await;
    s.expect_error("/vegobjekter/105/?veglenke=1000001&kommune=5001", 422, 4009)
        .await;
    s.expect_error(
        "/vegobjekter/105/?kontraktsomrade=%22finnes%20ikke%22",
        422,
        4005,
    )
    .await;
    s.expect_error("/vegobjekter/105/?inkluder=alt", 422, 4006)
        .await;
    s.expect_error("/vegobjekter/105/?geometritoleranse=-3", 422, 4002)
        .await;
    for bad in [
        "antall=10",
        "start=x",
        "inkluder=alle",
        "geometritoleranse=10",
        "dybde=2",
    ] {
        s.expect_error(&format!("/vegobjekter/105/statistikk/?{bad}"), 422, 4013)
            .await;
    }
    // quoted filters and the documented overlapp forms are accepted
    s.get_json("/vegobjekter/95/?egenskap=%22(1876=2868%20OR%201876=7988)%22&overlapp=105(2021=2738)&overlapp=105", 200).await;
    s.get_json(
        "/vegobjekter/95/?overlapp=%22105(egenskap(2021)=2738)%22",
        200,
    )
    .await;
    s.get_json("/vegobjekter/95/?riksvegrute=%22RUTE2A%202014-2023%22&kontraktsomrade=%225001%20Trondheim%20-%20Tr%C3%A5ante%202019-2024%22", 200).await;
}

#[tokio::test]
async fn geometry_tolerance_simplifies_located_lines() {
    let s = TestServer::start().await;
    let vertices =
        |v: &serde_json::Value| v["geometri"]["wkt"].as_str().unwrap().matches(',').count() + 1;
    let list = s
        .get_json("/vegobjekter/105/?antall=200&inkluder=geometri", 200)
        .await;
    let simplified = s
        .get_json(
            "/vegobjekter/105/?antall=200&inkluder=geometri&geometritoleranse=30",
            200,
        )
        .await;
    let (a, b) = (
        list["objekter"].as_array().unwrap(),
        simplified["objekter"].as_array().unwrap(),
    );
    assert_eq!(a.len(), b.len());
    let (mut fewer, mut total) = (0, 0);
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x["id"], y["id"]);
        assert!(vertices(y) <= vertices(x));
        assert!(vertices(y) >= 2, "a line keeps its ends");
        fewer += usize::from(vertices(y) < vertices(x));
        total += 1;
    }
    assert!(
        fewer * 2 > total,
        "most speed-limit lines lose vertices at 30 m: {fewer} of {total}"
    );
    // ends are kept exactly
    let first_point = |v: &serde_json::Value| {
        v["geometri"]["wkt"]
            .as_str()
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(first_point(&a[0]), first_point(&b[0]));
}
