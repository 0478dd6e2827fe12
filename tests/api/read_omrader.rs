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
    golden(
        "omrader/fylker_vegobjekt",
        &s.get_json("/omrader/fylker?inkluder=vegobjekt", 200).await,
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

/// The area kinds, names and types of the v2 documentation (`endepunkt/omrader.md`) and the
/// catalogue's area object types.
const AREA_KINDS: &[(&str, &str, u64)] = &[
    ("regioner", "Regioner", 534),
    ("fylker", "Fylker", 945),
    ("vegavdelinger", "Vegavdelinger", 537),
    ("kommuner", "Kommuner", 946),
    ("riksvegruter", "Riksvegruter", 704),
    ("kontraktsomrader", "Kontraktsområder", 580),
];

#[tokio::test]
async fn names_are_the_documented_ones() {
    let s = TestServer::start().await;
    let kinds = s.get_json("/omrader", 200).await;
    let got: Vec<(&str, &str)> = kinds
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["navn"].as_str().unwrap(), k["href"].as_str().unwrap()))
        .collect();
    assert_eq!(got.len(), AREA_KINDS.len());
    for ((navn, href), (path, name, _)) in got.iter().zip(AREA_KINDS) {
        assert_eq!(navn, name);
        assert!(href.ends_with(&format!("/omrader/{path}")), "{href}");
    }
    let regions = s.get_json("/omrader/regioner", 200).await;
    let names: Vec<&str> = regions
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["navn"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Øst", "Sør", "Vest", "Midt", "Nord"]);
    let network = s.get_json("/vegnett", 200).await;
    assert_eq!(network.as_array().unwrap().len(), 1);
    assert_eq!(network[0]["navn"], "Veglenker");
    assert!(network[0]["href"]
        .as_str()
        .unwrap()
        .ends_with("/vegnett/lenker"));
}

/// The object's geometry (own geometry, a polygon) parsed independently of vegdb's writer.
fn surface_of(object: &serde_json::Value) -> geo::MultiPolygon<f64> {
    use wkt::TryFromWkt;
    let text = object["geometri"]["wkt"].as_str().unwrap_or_else(|| {
        panic!("no geometri: {object}");
    });
    match geo::Geometry::<f64>::try_from_wkt_str(text).unwrap() {
        geo::Geometry::Polygon(p) => geo::MultiPolygon::new(vec![p]),
        geo::Geometry::MultiPolygon(m) => m,
        other => panic!("not a surface: {other:?}"),
    }
}

fn point_in(wkt_text: &str) -> geo::Point<f64> {
    use wkt::TryFromWkt;
    geo::Point::try_from_wkt_str(wkt_text).unwrap()
}

#[tokio::test]
async fn every_area_names_its_road_object() {
    use geo::Contains;
    let s = TestServer::start().await;
    for (path, _, type_id) in AREA_KINDS {
        // without inkluder: no vegobjekt
        let plain = s.get_json(&format!("/omrader/{path}"), 200).await;
        assert!(plain[0].get("vegobjekt").is_none(), "{path}: {}", plain[0]);
        let list = s
            .get_json(&format!("/omrader/{path}?inkluder=vegobjekt"), 200)
            .await;
        let list = list.as_array().unwrap();
        let alle = s
            .get_json(&format!("/omrader/{path}?inkluder=alle"), 200)
            .await;
        let mut ids = std::collections::HashSet::new();
        for (i, area) in list.iter().enumerate() {
            let o = &area["vegobjekt"];
            assert_eq!(o["type"], *type_id, "{path}: {area}");
            assert!(ids.insert(o["id"].as_u64().unwrap()), "{path}: ids differ");
            assert_eq!(alle[i]["vegobjekt"], *o, "{path}: alle includes vegobjekt");
            assert!(area.get("kartutsnitt").is_none());
            // every href of the small kinds, a sample of the municipalities
            if list.len() > 40 && i % 23 != 0 {
                continue;
            }
            let href = o["href"].as_str().unwrap();
            assert!(href.ends_with(&format!("/vegobjekter/{type_id}/{}", o["id"])));
            let object: serde_json::Value = s
                .client
                .get(href)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(object["id"], o["id"], "{href}: {object}");
            assert_eq!(object["metadata"]["type"]["id"], *type_id, "{href}");
            // the centre point the area list gives lies in the object's geometry
            if let Some(centre) = alle[i].get("senterpunkt") {
                let shape = surface_of(&object);
                let p = point_in(centre["wkt"].as_str().unwrap());
                assert!(shape.contains(&p), "{path} {}: {p:?} outside", area["navn"]);
            }
        }
    }
    // listable, and the municipality object is found by its own municipality
    let listed = s
        .get_json("/vegobjekter/946/?inkluder=egenskaper&antall=1000", 200)
        .await;
    assert_eq!(listed["objekter"].as_array().unwrap().len(), 357);
    let trondheim = s
        .get_json("/vegobjekter/946/?kommune=5001&inkluder=egenskaper", 200)
        .await;
    let objs = trondheim["objekter"].as_array().unwrap();
    assert_eq!(objs.len(), 1, "{trondheim}");
    let number = objs[0]["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == 11769)
        .unwrap();
    assert_eq!(number["verdi"], 5001);
}
