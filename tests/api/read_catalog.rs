use crate::server::{golden, TestServer};

#[tokio::test]
async fn speed_limit_type_matches_golden_file() {
    let s = TestServer::start().await;
    golden(
        "catalog/vegobjekttype_105",
        &s.get_json("/vegobjekttyper/105", 200).await,
    );
    golden(
        "catalog/egenskapstype_105_2021",
        &s.get_json("/vegobjekttyper/105/2021", 200).await,
    );
    golden(
        "catalog/enheter",
        &s.get_json("/vegobjekttyper/enheter", 200).await,
    );
    golden(
        "catalog/kategorier",
        &s.get_json("/vegobjekttyper/kategorier", 200).await,
    );
}

#[tokio::test]
async fn single_type_without_inkluder_has_everything_and_inkluder_limits_it() {
    let s = TestServer::start().await;
    let all = s.get_json("/vegobjekttyper/95", 200).await;
    for key in [
        "egenskapstyper",
        "relasjonstyper",
        "styringsparametere",
        "kategorier",
    ] {
        assert!(all.get(key).is_some(), "missing {key}");
    }
    // id comes first, as in the real service
    assert_eq!(all.as_object().unwrap().keys().next().unwrap(), "id");
    let barn: Vec<u64> = all["relasjonstyper"]["barn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"]["id"].as_u64().unwrap())
        .collect();
    assert!(
        barn.contains(&96),
        "Skiltpunkt has Skiltplate children: {barn:?}"
    );
    let some = s
        .get_json("/vegobjekttyper/95?inkluder=relasjonstyper", 200)
        .await;
    assert!(some.get("relasjonstyper").is_some());
    assert!(some.get("egenskapstyper").is_none());
    assert!(some.get("kategorier").is_none());
}

#[tokio::test]
async fn type_list_is_complete_and_filters_by_category() {
    let s = TestServer::start().await;
    let list = s.get_json("/vegobjekttyper", 200).await;
    let list = list.as_array().unwrap();
    let catalog = vegdb::catalog::Catalog::embedded();
    assert_eq!(list.len(), catalog.types.len());
    assert!(list.len() >= 414);
    assert!(
        list.iter().all(|t| t.get("egenskapstyper").is_none()),
        "base fields only by default"
    );
    let with = s
        .get_json("/vegobjekttyper?inkluder=egenskapstyper", 200)
        .await;
    assert!(with
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["egenskapstyper"].is_array()));
    // category 19 (Vegnett - Regulering - Trafikk) holds 105 but not 95
    let cat = s.get_json("/vegobjekttyper?kategori=19", 200).await;
    let ids: Vec<u64> = cat
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = catalog
        .types
        .iter()
        .filter(|t| t.categories.contains(&19))
        .map(|t| t.id as u64)
        .collect();
    assert_eq!(ids, expected);
    assert!(ids.contains(&105) && !ids.contains(&95));
}

#[tokio::test]
async fn catalogue_errors_use_the_api_error_shape() {
    let s = TestServer::start().await;
    s.expect_error("/vegobjekttyper/999999", 404, 4012).await;
    s.expect_error("/vegobjekttyper/105/1", 404, 4012).await;
    s.expect_error("/vegobjekttyper/abc", 422, 4002).await;
    let msg = s
        .expect_error("/vegobjekttyper?vegvdeling=1", 422, 4013)
        .await;
    assert!(msg.contains("vegvdeling"), "{msg}");
    s.expect_error("/vegobjekttyper?inkluder=alt", 422, 4006)
        .await;
    s.expect_error("/vegobjekttyper?kategori=x", 422, 4003)
        .await;
    s.expect_error(
        "/vegobjekttyper/105?inkluder=alle&inkluder=alle&pretty=ja",
        422,
        4008,
    )
    .await;
}

#[tokio::test]
async fn data_types_units_and_version() {
    let s = TestServer::start().await;
    let dt = s.get_json("/vegobjekttyper/datatyper", 200).await;
    let tekst = dt
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == 1)
        .unwrap();
    assert_eq!(tekst["navn"], "Tekst");
    assert_eq!(tekst["kortnavn"], "T");
    assert_eq!(s.get_json("/datatyper", 200).await, dt);
    assert_eq!(
        s.get_json("/kategorier", 200).await,
        s.get_json("/vegobjekttyper/kategorier", 200).await
    );
    let v = s.get_json("/vegobjekttyper/versjon", 200).await;
    assert_eq!(
        v["versjon"],
        vegdb::catalog::Catalog::embedded().version.version
    );
    // the Java v2 client (DatakatalogVersionParser) reads an int id, versjon and a dato
    // `yyyy-MM-dd`; the same triple as /status.datakatalog
    assert!(v["id"].is_u64(), "{v}");
    assert!(
        chrono::NaiveDate::parse_from_str(v["dato"].as_str().unwrap(), "%Y-%m-%d").is_ok(),
        "{v}"
    );
    assert_eq!(v, s.get_json("/status", 200).await["datakatalog"]);
    let p = s.get_json("/vegobjekttyper/egenskapstyper/2021", 200).await;
    assert_eq!(p["navn"], "Fartsgrense");
}
