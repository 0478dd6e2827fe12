use crate::server::{golden, TestServer};
use vegdb::geo::srid::{to_storage, Srid};

#[tokio::test]
async fn area_lists_match_golden_files() {
    let s = TestServer::start().await;
    golden(
        "omrader/regioner",
        &s.get_json("/omrader/regioner", 200).await,
    );
    golden("omrader/fylker", &s.get_json("/omrader/fylker", 200).await);
    golden(
        "omrader/vegavdelinger",
        &s.get_json("/omrader/vegavdelinger", 200).await,
    );
    golden(
        "omrader/riksvegruter",
        &s.get_json("/omrader/riksvegruter", 200).await,
    );
}

#[tokio::test]
async fn index_links_every_area_kind() {
    let s = TestServer::start().await;
    let kinds = s.get_json("/omrader", 200).await;
    for k in kinds.as_array().unwrap() {
        let href = k["href"].as_str().unwrap();
        assert!(
            href.starts_with("http://127.0.0.1:"),
            "absolute href from the public URL: {href}"
        );
        let r = s.client.get(href).send().await.unwrap();
        assert_eq!(r.status(), 200, "{href}");
    }
    assert_eq!(kinds.as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn municipalities_are_the_real_division() {
    let s = TestServer::start().await;
    let k = s.get_json("/omrader/kommuner", 200).await;
    let k = k.as_array().unwrap();
    assert_eq!(k.len(), 357);
    let trondheim = k.iter().find(|m| m["nummer"] == 5001).unwrap();
    assert!(
        trondheim["navn"].as_str().unwrap().starts_with("Trondheim"),
        "{trondheim}"
    );
    assert_eq!(trondheim["fylke"], 50);
    assert_eq!(trondheim["region"], 4);
    assert_eq!(trondheim["vegavdeling"], 50);
    let contracts = s.get_json("/omrader/kontraktsomrader", 200).await;
    assert!(contracts.as_array().unwrap().iter().all(|c| c["navn"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{:04}", c["nummer"].as_u64().unwrap()))));
}

#[tokio::test]
async fn map_extent_and_centre_are_in_the_requested_srid() {
    let s = TestServer::start().await;
    let k = s
        .get_json("/omrader/kommuner?inkluder=alle&srid=4326", 200)
        .await;
    let oslo = k
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["nummer"] == 301)
        .unwrap();
    assert_eq!(oslo["kartutsnitt"]["srid"], 4326);
    let centre = oslo["senterpunkt"]["wkt"].as_str().unwrap();
    let inner = centre.trim_start_matches("POINT (").trim_end_matches(')');
    let xy: Vec<f64> = inner.split(' ').map(|v| v.parse().unwrap()).collect();
    // lon, lat order; inside Oslo
    assert!(
        (10.4..11.0).contains(&xy[0]) && (59.8..60.2).contains(&xy[1]),
        "{centre}"
    );
    let (x, y) = to_storage(Srid::Wgs84, xy[0], xy[1]).unwrap();
    assert_eq!(
        vegdb::area::Areas::embedded()
            .municipality_at(x, y)
            .map(|m| m.number),
        Some(301)
    );
    let utm = s
        .get_json("/omrader/fylker?inkluder=kartutsnitt", 200)
        .await;
    let wkt = utm[0]["kartutsnitt"]["wkt"].as_str().unwrap();
    assert!(wkt.starts_with("POLYGON (("), "{wkt}");
    assert_eq!(utm[0]["kartutsnitt"]["srid"], 32633);
    assert!(utm[0].get("senterpunkt").is_none());
}

#[tokio::test]
async fn area_parameter_errors() {
    let s = TestServer::start().await;
    s.expect_error("/omrader/fylker?srid=1234", 422, 4002).await;
    s.expect_error("/omrader/fylker?inkluder=polygon", 422, 4006)
        .await;
    s.expect_error("/omrader/kommuner?fylke=50", 422, 4013)
        .await;
    s.expect_error("/omrader/land", 404, 4012).await;
}
