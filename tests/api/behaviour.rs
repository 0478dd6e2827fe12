//! Cross-cutting behaviour: headers, media types, compression, OpenAPI coverage, status.

use crate::server::{store, TestServer};

/// An example request for every documented read operation (whether every mounted route is
/// documented is checked on the router itself: `api::tests`).
pub const ROUTES: &[(&str, &str)] = &[
    ("/vegobjekttyper", "/vegobjekttyper"),
    ("/vegobjekttyper/{id}", "/vegobjekttyper/105"),
    (
        "/vegobjekttyper/{id}/{egenskapstype}",
        "/vegobjekttyper/105/2021",
    ),
    (
        "/vegobjekttyper/egenskapstyper/{egenskapstype}",
        "/vegobjekttyper/egenskapstyper/2021",
    ),
    ("/vegobjekttyper/enheter", "/vegobjekttyper/enheter"),
    ("/vegobjekttyper/datatyper", "/vegobjekttyper/datatyper"),
    ("/vegobjekttyper/kategorier", "/vegobjekttyper/kategorier"),
    ("/vegobjekttyper/versjon", "/vegobjekttyper/versjon"),
    ("/omrader", "/omrader"),
    ("/omrader/regioner", "/omrader/regioner"),
    ("/omrader/fylker", "/omrader/fylker"),
    ("/omrader/vegavdelinger", "/omrader/vegavdelinger"),
    ("/omrader/kommuner", "/omrader/kommuner"),
    ("/omrader/kontraktsomrader", "/omrader/kontraktsomrader"),
    ("/omrader/riksvegruter", "/omrader/riksvegruter"),
    ("/status", "/status"),
    ("/veg", "/veg?veglenke=0.5@1000001"),
    ("/veg/batch", "/veg/batch?veglenker=0.5@1000001"),
    (
        "/posisjon",
        "/posisjon?lat=63.43&lon=10.39&maks_avstand=5000",
    ),
    ("/vegnett", "/vegnett"),
    ("/vegnett/lenker", "/vegnett/lenker?antall=5"),
    ("/vegnett/lenker/{id}", "/vegnett/lenker/1000001"),
    (
        "/vegnett/segmentert",
        "/vegnett/segmentert?typer=105,540&antall=5",
    ),
    (
        "/vegnett/segmentert/statistikk",
        "/vegnett/segmentert/statistikk?typer=105,540&kommune=5001",
    ),
    ("/vegnett/noder/{id}", "/vegnett/noder/1"),
    (
        "/vegnett/rute",
        "/vegnett/rute?start=0.5@1000001&slutt=0.5@1000002",
    ),
    ("/vegobjekter", "/vegobjekter"),
    (
        "/vegobjekter/{type}",
        "/vegobjekter/105/?antall=2&inkluder=alle",
    ),
    (
        "/vegobjekter/{type}/statistikk",
        "/vegobjekter/105/statistikk/",
    ),
    (
        "/vegobjekter/{type}/statistikk/gruppert",
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune,egenskap(2021)",
    ),
    (
        "/vegobjekter/statistikk",
        "/vegobjekter/statistikk?kommune=5001",
    ),
    ("/vegnett/statistikk", "/vegnett/statistikk?kommune=5001"),
    (
        "/vegnett/statistikk/gruppert",
        "/vegnett/statistikk/gruppert?gruppering=kommune,vegkategori",
    ),
    ("/vegobjekter/{type}/{id}", "/vegobjekter/105/100000000"),
    (
        "/vegobjekter/{type}/{id}/egenskaper",
        "/vegobjekter/105/100000000/egenskaper",
    ),
    (
        "/vegobjekter/{type}/{id}/egenskaper/{egenskapstype}",
        "/vegobjekter/105/100000000/egenskaper/2021",
    ),
    (
        "/vegobjekter/{type}/{id}/versjoner",
        "/vegobjekter/105/100000000/versjoner",
    ),
    (
        "/vegobjekter/{type}/{id}/{versjon}",
        "/vegobjekter/105/100000000/VERSJON",
    ),
    ("/vegobjekt", "/vegobjekt?id=100000000"),
    (
        "/vegobjekter/{type}/endringer",
        "/vegobjekter/105/endringer?type=endret&etter=2020-01-01&antall=5",
    ),
];

#[tokio::test]
async fn every_documented_read_operation_answers_its_example() {
    let s = TestServer::start().await;
    let doc = s.get_json("/openapi.json", 200).await;
    let paths = doc["paths"].as_object().expect("paths");
    let first = s
        .get_json("/vegobjekter/105/?antall=1&inkluder=metadata", 200)
        .await;
    let id = first["objekter"][0]["id"].as_u64().unwrap().to_string();
    let version = first["objekter"][0]["metadata"]["versjon"].to_string();
    assert!(paths.len() >= 30, "{:?}", paths.keys().collect::<Vec<_>>());
    for template in paths.keys() {
        let (_, example) = ROUTES
            .iter()
            .find(|(t, _)| t == template)
            .unwrap_or_else(|| panic!("no example request for the documented {template}"));
        let example = &example
            .replace("100000000", &id)
            .replace("VERSJON", &version);
        let r = s.get(example).await;
        assert_eq!(r.status(), 200, "{example}");
    }
}

#[tokio::test]
async fn request_id_and_cors_on_every_response_including_errors() {
    let s = TestServer::start().await;
    for path in [
        "/status",
        "/vegobjekttyper/999999",
        "/finnes/ikke",
        "/omrader?x=1",
    ] {
        let r = s
            .client
            .get(format!("{}{path}", s.base))
            .header("Origin", "https://example.org")
            .send()
            .await
            .unwrap();
        assert!(
            r.headers().contains_key("x-request-id"),
            "{path}: {:?}",
            r.headers()
        );
        assert_eq!(r.headers()["access-control-allow-origin"], "*", "{path}");
    }
    // a client's own request id is echoed
    let r = s
        .client
        .get(format!("{}/status", s.base))
        .header("X-REQUEST-ID", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "abc-123");
}

#[tokio::test]
async fn media_types_follow_the_v2_rules() {
    let s = TestServer::start().await;
    let url = format!("{}/vegobjekttyper/105", s.base);
    for accept in [
        "application/json",
        "application/vnd.vegvesen.nvdb-v2+json",
        "application/vnd.vegvesen.nvdb-v2-rev2+json",
        "text/html,application/xhtml+xml,*/*;q=0.8",
    ] {
        let r = s
            .client
            .get(&url)
            .header("Accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{accept}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .contains("json"));
    }
    let r = s
        .client
        .get(&url)
        .header("Accept", "image/png")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body[0]["code"], 4001);
    // a vendor type sent as Content-Type on GET (seen in real scripts) is ignored
    let r = s
        .client
        .get(&url)
        .header("Content-Type", "application/vnd.vegvesen.nvdb-v2+json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // format suffix
    let a = s.get_json("/vegobjekttyper/105.json", 200).await;
    assert_eq!(a, s.get_json("/vegobjekttyper/105", 200).await);
}

#[tokio::test]
async fn gzip_when_asked_and_pretty_printing() {
    let s = TestServer::start().await;
    let r = s
        .client
        .get(format!("{}/vegobjekttyper?inkluder=alle", s.base))
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-encoding"], "gzip");
    let plain = s.get("/status").await.text().await.unwrap();
    let pretty = s.get("/status?pretty=true").await.text().await.unwrap();
    assert!(!plain.contains('\n') && pretty.contains('\n'));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&plain).unwrap(),
        serde_json::from_str::<serde_json::Value>(&pretty).unwrap()
    );
}

#[tokio::test]
async fn status_names_the_catalogue_and_the_generation_time() {
    let s = TestServer::start().await;
    let st = s.get_json("/status", 200).await;
    assert_eq!(
        st["datakatalog"]["versjon"],
        vegdb::catalog::Catalog::embedded().version.version
    );
    // zone-less Norwegian local time (the Java v2 client parses it with LocalDateTime.parse
    // when it has a `T`, else with `yyyy-MM-dd HH:mm:ss`): the generation time + 1 or 2 hours
    let created = chrono::DateTime::parse_from_rfc3339(&store().current().manifest.created)
        .unwrap()
        .naive_utc();
    let t = st["datagrunnlag"]["sist_oppdatert"].as_str().unwrap();
    let local = chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S").expect(t);
    let offset = (local - created).num_seconds();
    assert!(offset == 3600 || offset == 7200, "{t} vs {created}");
    for (accept, format) in [
        (
            "application/vnd.vegvesen.nvdb-v2-rev1+json",
            "%Y-%m-%d %H:%M:%S",
        ),
        ("application/vnd.vegvesen.nvdb-v2+json", "%Y-%m-%d %H:%M:%S"),
        (
            "application/vnd.vegvesen.nvdb-v2-rev2+json",
            "%Y-%m-%dT%H:%M:%S",
        ),
    ] {
        let r = s
            .client
            .get(format!("{}/status", s.base))
            .header("Accept", accept)
            .send()
            .await
            .unwrap();
        let v: serde_json::Value = r.json().await.unwrap();
        let t = v["datagrunnlag"]["sist_oppdatert"].as_str().unwrap();
        assert_eq!(
            chrono::NaiveDateTime::parse_from_str(t, format).expect(t),
            local,
            "{accept}"
        );
    }
}
