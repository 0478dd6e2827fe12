
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
    // the route's own vertices, every third, moved 8 m: a track along it
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
