//! /vegnett/rute over HTTP: a route between link positions and between coordinates (the
//! points /vegnett/lenker and /posisjon give), as a chain of segments whose lengths add up,
//! the same by GET and POST, in JSON, XML and GeoJSON; 204 when not connected within a
//! corridor; errors in the v2 shape.

use crate::server::TestServer;

/// Two plain links of the tiny data: (id, start, end) of each, from /vegnett/lenker.
async fn two_links(s: &TestServer) -> Vec<(u64, f64, f64, String)> {
    let links = s
        .get_json("/vegnett/lenker?antall=300&vegreferanse=K,F,E", 200)
        .await;
    links["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["topologinivå"] == 0 && l["konnekteringslenke"] == false)
        .map(|l| {
            (
                l["veglenkeid"].as_u64().unwrap(),
                l["startposisjon"].as_f64().unwrap(),
                l["sluttposisjon"].as_f64().unwrap(),
                l["geometri"]["wkt"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn first_point(wkt: &str) -> (f64, f64) {
    let inner = &wkt[wkt.find('(').unwrap() + 1..];
    let mut xs = inner.split([',', ')']).next().unwrap().split_whitespace();
    (
        xs.next().unwrap().parse().unwrap(),
        xs.next().unwrap().parse().unwrap(),
    )
}

fn check_route(v: &serde_json::Value) -> f64 {
    assert_eq!(v["type"], "Rute", "{v}");
    let segments = v["vegnettsrutesegmenter"].as_array().unwrap();
    assert!(!segments.is_empty());
    assert_eq!(v["metadata"]["antall"], segments.len());
    let mut sum = 0.0;
    for s in segments {
        let (a, b) = (
            s["fra_posisjon"].as_f64().unwrap(),
            s["til_posisjon"].as_f64().unwrap(),
        );
        assert!(a <= b, "{s}");
        assert!(s["retning"] == "MED" || s["retning"] == "MOT", "{s}");
        assert!(s["geometri"]["wkt"]
            .as_str()
            .unwrap()
            .starts_with("LINESTRING"));
        sum += s["lengde"].as_f64().unwrap();
    }
    let total = v["metadata"]["lengde"].as_f64().unwrap();
    assert!(
        (sum - total).abs() < 0.01 * segments.len() as f64,
        "{sum} vs {total}"
    );
    total
}

#[tokio::test]
async fn route_between_link_positions_and_back_is_as_long() {
    let s = TestServer::start().await;
    let links = two_links(&s).await;
    let mut connected = 0;
    for i in 0..6 {
        let (a, b) = (
            &links[i * 7 % links.len()],
            &links[(i * 13 + 40) % links.len()],
        );
        let start = format!("{}@{}", (a.1 + a.2) / 2.0, a.0);
        let end = format!("{}@{}", b.1 + (b.2 - b.1) * 0.25, b.0);
        let r = s
            .get(&format!("/vegnett/rute?start={start}&slutt={end}"))
            .await;
        if r.status() == 204 {
            continue;
        }
        assert_eq!(r.status(), 200);
        let there: serde_json::Value = r.json().await.unwrap();
        let back = s
            .get_json(&format!("/vegnett/rute?start={end}&slutt={start}"), 200)
            .await;
        let (l1, l2) = (check_route(&there), check_route(&back));
        assert!((l1 - l2).abs() < 0.01, "{l1} vs {l2}");
        let first = &there["vegnettsrutesegmenter"][0];
        assert_eq!(first["veglenkesekvensid"], a.0);
        assert_eq!(there["metadata"]["start"]["avstand"], 0.0);
        connected += 1;
    }
    assert!(connected >= 3, "only {connected} of 6 pairs connected");
}

#[tokio::test]
async fn route_between_coordinates_snaps_and_post_answers_the_same() {
    let s = TestServer::start().await;
    let links = two_links(&s).await;
    let (a, b) = (&links[3], &links[links.len() / 2]);
    let ((x1, y1), (x2, y2)) = (first_point(&a.3), first_point(&b.3));
    // 5 m off the road
    let (start, end) = (format!("{},{}", x1 + 3.0, y1 + 4.0), format!("{x2},{y2}"));
    let q = format!("start={start}&slutt={end}&maks_avstand=50");
    let got = s.get_json(&format!("/vegnett/rute?{q}"), 200).await;
    check_route(&got);
    assert!(got["metadata"]["start"]["avstand"].as_f64().unwrap() <= 5.0 + 1e-6);
    let posted: serde_json::Value = s
        .client
        .post(format!("{}/vegnett/rute", s.base))
        .json(&serde_json::json!({"start": start, "slutt": end, "maks_avstand": 50}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(posted, got);
    // kortform: the same segments without their geometry
    let short = s
        .get_json(&format!("/vegnett/rute?{q}&kortform=true"), 200)
        .await;
    assert_eq!(short["metadata"], got["metadata"]);
    let segments = short["vegnettsrutesegmenter"].as_array().unwrap();
    assert_eq!(
        segments.len(),
        got["vegnettsrutesegmenter"].as_array().unwrap().len()
    );
    assert!(segments
        .iter()
        .all(|s| s.get("geometri").is_none() && s["lengde"].is_number()));
    // GeoJSON: one feature per segment; XML: the same route
    let geo: serde_json::Value = s
        .client
        .get(format!("{}/vegnett/rute?{q}", s.base))
        .header("accept", "application/geo+json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(geo["type"], "FeatureCollection");
    assert_eq!(
        geo["features"].as_array().unwrap().len(),
        got["vegnettsrutesegmenter"].as_array().unwrap().len()
    );
    assert_eq!(geo["features"][0]["geometry"]["type"], "LineString");
    let xml = s
        .client
        .get(format!("{}/vegnett/rute?{q}", s.base))
        .header("accept", "application/xml")
        .send()
        .await
        .unwrap();
    assert_eq!(xml.status(), 200);
    let text = xml.text().await.unwrap();
    assert!(
        text.contains("<vegnettsrutesegmenter") && text.contains("KOMPLETT"),
        "{text}"
    );
}

#[tokio::test]
async fn a_tight_corridor_or_far_points_give_204_or_errors() {
    let s = TestServer::start().await;
    let links = two_links(&s).await;
    // the two ends of the tiny data far apart, and a corridor of 1 m: no route keeps in it
    let (a, b) = (&links[0], &links[links.len() - 1]);
    let (x1, y1) = first_point(&a.3);
    let (x2, y2) = first_point(&b.3);
    let q = format!("start={x1},{y1}&slutt={x2},{y2}");
    let free = s.get(&format!("/vegnett/rute?{q}")).await;
    assert_eq!(free.status(), 200);
    let narrow = s.get(&format!("/vegnett/rute?{q}&omkrets=1")).await;
    if (x1 - x2).hypot(y1 - y2) > 500.0 {
        assert!(narrow.status() == 204 || narrow.status() == 200);
    }
    for (path, code) in [
        ("/vegnett/rute", 4004),
        ("/vegnett/rute?start=1,2", 4004),
        ("/vegnett/rute?start=abc&slutt=1,2", 4010),
        (
            "/vegnett/rute?start=0.1-0.2@1000001&slutt=0.5@1000002",
            4010,
        ),
        ("/vegnett/rute?start=2@1000001&slutt=0.5@1000002", 4005),
        (
            "/vegnett/rute?start=0.5@99999999999&slutt=0.5@1000002",
            4005,
        ),
        ("/vegnett/rute?start=0,0&slutt=0.5@1000002", 4005),
        (
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002&omkrets=0",
            4002,
        ),
        (
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002&maks_avstand=-1",
            4002,
        ),
        (
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002&trafikantgruppe=X",
            4006,
        ),
        (
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002&tidspunkt=igår",
            4007,
        ),
        (
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002&ukjent=1",
            4013,
        ),
    ] {
        s.expect_error(path, 422, code).await;
    }
    let r = s
        .client
        .post(format!("{}/vegnett/rute", s.base))
        .body("[1,2]")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
}

#[tokio::test]
async fn a_links_nodes_list_the_link_at_its_ends() {
    let s = TestServer::start().await;
    let links = s.get_json("/vegnett/lenker?antall=200", 200).await;
    let mut checked = 0;
    for l in links["objekter"].as_array().unwrap().iter().step_by(11) {
        let id = l["veglenkeid"].as_u64().unwrap();
        for (node, pos) in [
            (&l["startnode"], &l["startposisjon"]),
            (&l["sluttnode"], &l["sluttposisjon"]),
        ] {
            let node = node.as_str().unwrap();
            let doc = s.get_json(&format!("/vegnett/noder/{node}"), 200).await;
            assert_eq!(doc["id"], node);
            let ends = doc["lenker"].as_array().unwrap();
            assert_eq!(doc["antall"], ends.len());
            // the link's row ends at the node where its veglenke does: its first row's start
            // or its last row's end, so one of its ends is listed there
            assert!(
                ends.iter().any(|e| e["veglenkeid"] == id),
                "{node}: {doc} lacks link {id} ({pos})"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10);
    s.expect_error("/vegnett/noder/999999999999", 404, 4012)
        .await;
    s.expect_error("/vegnett/noder/abc", 422, 4002).await;
}

#[tokio::test]
async fn a_track_is_matched_to_the_route_it_follows() {
    let s = TestServer::start().await;
    let links = two_links(&s).await;
    let (a, b) = (&links[5], &links[links.len() / 3]);
    let q = format!(
        "start={}@{}&slutt={}@{}",
        (a.1 + a.2) / 2.0,
        a.0,
        (b.1 + b.2) / 2.0,
        b.0
    );
    let route = s.get_json(&format!("/vegnett/rute?{q}"), 200).await;
    // the route's own vertices, every third, moved 10 m: a track along it
    let mut points = Vec::new();
    for seg in route["vegnettsrutesegmenter"].as_array().unwrap() {
        let wkt = seg["geometri"]["wkt"].as_str().unwrap();
        let inner = &wkt[wkt.find('(').unwrap() + 1..wkt.len() - 1];
        for (i, c) in inner.split(',').enumerate() {
            if i % 3 == 0 {
                let xs: Vec<f64> = c.split_whitespace().map(|v| v.parse().unwrap()).collect();
                points.push(format!("{} {}", xs[0] + 8.0, xs[1] - 6.0));
            }
        }
    }
    points.truncate(900);
    let track = format!("LINESTRING ({})", points.join(", "));
    let body = serde_json::json!({"geometri": track, "maks_avstand": 50});
    let r = s
        .client
        .post(format!("{}/vegnett/rute", s.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let matched: serde_json::Value = r.json().await.unwrap();
    let (want, got) = (check_route(&route), check_route(&matched));
    // the track starts and ends at vertices near the route's ends: within 10 %
    assert!((got - want).abs() <= 0.1 * want + 50.0, "{got} vs {want}");
    s.expect_error(
        "/vegnett/rute?geometri=LINESTRING(1 2, 3 4)&start=0.5@1000001",
        422,
        4009,
    )
    .await;
    s.expect_error("/vegnett/rute?geometri=POINT(1 2)", 422, 4010)
        .await;
}

#[tokio::test]
async fn a_route_on_a_day_uses_that_days_network() {
    let s = TestServer::start().await;
    let q = "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002";
    let today = s.get_json(q, 200).await;
    // a day after today answers as today; a day before the data has no such links
    assert_eq!(
        s.get_json(&format!("{q}&tidspunkt=2999-01-01"), 200).await,
        today
    );
    s.expect_error(&format!("{q}&tidspunkt=1900-01-01"), 422, 4005)
        .await;
}

#[tokio::test]
async fn objects_along_a_route_by_its_link_intervals() {
    let s = TestServer::start().await;
    let route = s
        .get_json(
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000040&kortform=true",
            200,
        )
        .await;
    let intervals: Vec<String> = route["vegnettsrutesegmenter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kortform"].as_str().unwrap().to_string())
        .collect();
    assert!(!intervals.is_empty());
    let ids = |v: &serde_json::Value| -> std::collections::BTreeSet<u64> {
        v["objekter"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_u64().unwrap())
            .collect()
    };
    // the route's intervals as one `veglenke` filter: the union of the intervals one by one
    let all = s
        .get_json(
            &format!(
                "/vegobjekter/105?veglenke={}&antall=10000",
                intervals.join(",")
            ),
            200,
        )
        .await;
    let mut union = std::collections::BTreeSet::new();
    for i in &intervals {
        let one = s
            .get_json(&format!("/vegobjekter/105?veglenke={i}&antall=10000"), 200)
            .await;
        union.extend(ids(&one));
    }
    assert!(!union.is_empty(), "no speed limit along {intervals:?}");
    assert_eq!(ids(&all), union);
    let stats = s
        .get_json(
            &format!(
                "/vegobjekter/105/statistikk?veglenke={}",
                intervals.join(",")
            ),
            200,
        )
        .await;
    assert_eq!(stats["antall"], union.len());
}

/// `rute`: the objects along a route by its segments' intervals, combinable with other filters
/// and measured on their part inside the intervals. The oracle: each object's placements
/// (`inkluder=lokasjon`) overlapped with each segment's interval, at the segment's metres per
/// unit of link position (generated links have their positions proportional to length).
#[tokio::test]
async fn the_objects_along_a_route_are_cut_to_it() {
    let s = TestServer::start().await;
    let route = s
        .get_json(
            "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000040&kortform=true",
            200,
        )
        .await;
    let segments: Vec<(u64, f64, f64, f64, String)> = route["vegnettsrutesegmenter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["veglenkeid"].as_u64().unwrap(),
                s["fra_posisjon"].as_f64().unwrap(),
                s["til_posisjon"].as_f64().unwrap(),
                s["lengde"].as_f64().unwrap(),
                s["kortform"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let links: std::collections::BTreeSet<u64> = segments.iter().map(|s| s.0).collect();
    assert_eq!(links.len(), segments.len(), "a link twice in {segments:?}");
    let rute: Vec<&str> = segments.iter().map(|s| s.4.as_str()).collect();
    let rute = rute.join(",");
    let listed = s
        .get_json(
            &format!("/vegobjekter/105?rute={rute}&inkluder=lokasjon&antall=10000"),
            200,
        )
        .await;
    let objects = listed["objekter"].as_array().unwrap();
    assert!(!objects.is_empty(), "no speed limit along {rute}");
    let mut want_length = 0.0;
    for o in objects {
        let mut on = false;
        for p in o["lokasjon"]["stedfestinger"].as_array().unwrap() {
            let link = p["veglenkeid"].as_u64().unwrap();
            let (f, t) = (
                p["fra_posisjon"].as_f64().unwrap(),
                p["til_posisjon"].as_f64().unwrap(),
            );
            for &(l, a, b, metres, _) in &segments {
                if l == link && f <= b && t >= a {
                    on = true;
                    if b > a {
                        want_length += (t.min(b) - f.max(a)).max(0.0) / (b - a) * metres;
                    }
                }
            }
        }
        assert!(on, "{} is not on the route", o["id"]);
    }
    // the same objects as the route's intervals as a veglenke filter
    let by_links = s
        .get_json(
            &format!("/vegobjekter/105?veglenke={rute}&antall=10000"),
            200,
        )
        .await;
    assert_eq!(
        by_links["objekter"].as_array().unwrap().len(),
        objects.len()
    );
    let stats = s
        .get_json(&format!("/vegobjekter/105/statistikk?rute={rute}"), 200)
        .await;
    assert_eq!(stats["antall"], objects.len());
    let got = stats["strekningslengde"].as_f64().unwrap();
    assert!(
        (got - want_length).abs() <= 1.0 + 0.001 * want_length,
        "strekningslengde {got}, oracle {want_length}"
    );
    // uncut, the whole objects are longer
    let whole = s
        .get_json(
            &format!("/vegobjekter/105/statistikk?rute={rute}&segmentering=false"),
            200,
        )
        .await;
    assert!(whole["strekningslengde"].as_f64().unwrap() >= got);
    // grouped by kommune: the groups add up to the route's length
    let grouped = s
        .get_json(
            &format!("/vegobjekter/105/statistikk/gruppert?gruppering=kommune&rute={rute}"),
            200,
        )
        .await;
    let sum: f64 = grouped
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["strekningslengde"].as_f64().unwrap())
        .sum();
    assert!((sum - got).abs() <= 1.0 * grouped.as_array().unwrap().len() as f64);
    // combined with an area filter (veglenke cannot be): the objects of both
    let kommune = objects[0]["lokasjon"]["kommuner"][0].as_u64().unwrap();
    let both = s
        .get_json(
            &format!("/vegobjekter/105?rute={rute}&kommune={kommune}&antall=10000"),
            200,
        )
        .await;
    let n = both["objekter"].as_array().unwrap().len();
    assert!(n >= 1 && n <= objects.len());
    s.get_json(
        &format!("/vegobjekter/105?rute={rute}&veglenke={rute}"),
        422,
    )
    .await;
    for bad in ["x", "0.5-0.2@1000001", "rute=", "1.5@1"] {
        s.get_json(&format!("/vegobjekter/105/statistikk?rute={bad}"), 422)
            .await;
    }
}
