//! The write interface end to end: round trips in JSON and XML, every rejection path, state
//! transitions, rights, dry runs and the overview.

use serde_json::{json, Value};
use vegdb::catalog::{Catalog, Placement};

use super::write_server::{changeset, skiltpunkt, usable_link, WriteServer, WRITE};

/// Every `kode` in a status document.
fn codes(status: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let r = &status["resultat"];
    for o in r["vegObjekter"].as_array().into_iter().flatten() {
        for i in o["feil"].as_array().into_iter().flatten() {
            out.push(i["kode"].as_str().unwrap().to_string());
        }
    }
    for i in r["feil"].as_array().into_iter().flatten() {
        out.push(i["kode"].as_str().unwrap().to_string());
    }
    out
}

fn nvdb_id(status: &Value, temp: &str) -> u64 {
    status["resultat"]["vegObjekter"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["tempId"] == temp)
        .and_then(|o| o["nvdbId"].as_u64())
        .unwrap_or_else(|| panic!("no nvdbId for {temp}: {status}"))
}

#[tokio::test]
async fn json_round_trip_register_update_delete_is_visible_in_the_read_api() {
    let s = WriteServer::start().await;
    let (link, kommune) = usable_link(&s.store.current());
    let before = s.store.current().id;
    let t0 = (chrono::Utc::now() - chrono::Duration::seconds(2))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    // numbers as strings, as KLIENTEKSP sends them
    let c = changeset(json!({"registrer": {"vegObjekter": [
        {"typeId": "95", "tempId": "p1",
         "egenskaper": [{"typeId": "1876", "enum": ["2868"]}, {"typeId": 2055, "verdi": ["1,5"]},
                        {"typeId": 4794, "verdi": ["srid=32633;POINT(270000 7040000)"]}],
         "lokasjon": {"punkt": [{"lenkeId": link.to_string(), "posisjon": "0.25"}], "linje": []},
         "assosiasjoner": [{"typeId": 96, "tempId": ["c1"]}]},
        {"typeId": 96, "tempId": "c1", "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.25}]}}
    ]}}));
    let (status, headers, body) = s.post_json("/endringssett", &s.writer_token, &c).await;
    assert_eq!(status, 201, "{body}");
    let links: Vec<Value> = serde_json::from_str(&body).unwrap();
    let rels: Vec<&str> = links.iter().map(|l| l["rel"].as_str().unwrap()).collect();
    assert_eq!(rels, ["self", "start", "kanseller", "status", "fremdrift"]);
    let id = links[0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(headers["location"], links[0]["src"].as_str().unwrap());
    assert!(
        uuid::Uuid::parse_str(&id).is_ok(),
        "changeset ids are UUIDs"
    );
    // registered, not started: nothing changed yet
    let (_, p) = s
        .get_write(&format!("/endringssett/{id}/fremdrift"), &s.writer_token)
        .await;
    assert_eq!(p, "\"IKKE_STARTET\"");
    assert_eq!(s.store.current().id, before);
    // the content reads back as registered
    let (st, content) = s
        .get_write(&format!("/endringssett/{id}"), &s.writer_token)
        .await;
    assert_eq!(st, 200);
    let content: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(content["registrer"]["vegObjekter"][0]["tempId"], "p1");
    assert_eq!(
        content["registrer"]["vegObjekter"][0]["lokasjon"]["punkt"][0]["lenkeId"],
        link
    );

    // start; the start response links self, status, fremdrift
    let (st, _, body) = s
        .post_json(
            &format!("/endringssett/{id}/start"),
            &s.writer_token,
            &json!({}),
        )
        .await;
    assert_eq!(st, 200);
    let rels: Vec<String> = serde_json::from_str::<Vec<Value>>(&body)
        .unwrap()
        .iter()
        .map(|l| l["rel"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rels, ["self", "status", "fremdrift"]);
    let status = s.wait(&s.writer_token, &id).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    assert_eq!(status["eier"], "skriver");
    assert_eq!(status["klient"], "vegdb-test");
    assert!(codes(&status).is_empty());
    let p1 = nvdb_id(&status, "p1");
    let c1 = nvdb_id(&status, "c1");
    assert_ne!(p1, c1);
    assert!(s.store.current().id > before, "a new generation");

    // readable in the read interface, with version, values, placement and relations
    let (st, o) = s
        .read(&format!("/vegobjekter/95/{p1}?inkluder=alle"), None)
        .await;
    assert_eq!(st, 200, "{o}");
    assert_eq!(o["metadata"]["versjon"], 1);
    assert_eq!(o["metadata"]["startdato"], "2026-11-01");
    let values: Vec<(u64, String)> = o["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_u64().unwrap(), e["verdi"].to_string()))
        .collect();
    assert!(values.contains(&(2055, "1.5".into())), "{values:?}");
    assert!(values.iter().any(|(id, _)| *id == 1876));
    assert_eq!(o["lokasjon"]["stedfestinger"][0]["veglenkeid"], link);
    assert_eq!(o["lokasjon"]["kommuner"][0], kommune);
    assert_eq!(o["relasjoner"]["barn"][0]["vegobjekter"][0], c1);
    assert!(o["geometri"]["wkt"]
        .as_str()
        .unwrap()
        .contains("270000 7040000"));
    let (_, child) = s
        .read(&format!("/vegobjekter/96/{c1}?inkluder=relasjoner"), None)
        .await;
    assert_eq!(child["relasjoner"]["foreldre"][0]["vegobjekter"][0], p1);
    let (_, changed) = s
        .read(
            &format!("/vegobjekter/95/endringer?type=endret&etter={t0}"),
            None,
        )
        .await;
    let changed: Vec<&Value> = changed["objekter"].as_array().unwrap().iter().collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(
        (&changed[0]["type"], &changed[0]["vegobjekt"]["id"]),
        (&json!("ENDRET"), &json!(p1))
    );

    // oppdater: a new version from effektDato with the new values
    let upd = changeset(
        json!({"effektDato": "2026-11-15", "oppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": p1, "versjon": 1,
         "egenskaper": [{"typeId": 1876, "enum": [2868]}, {"typeId": 2055, "verdi": ["2.5"]}]}]}}),
    );
    let status = s.run(&s.writer_token, &upd).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let (_, o) = s
        .read(&format!("/vegobjekter/95/{p1}?inkluder=alle"), None)
        .await;
    assert_eq!(o["metadata"]["versjon"], 2);
    assert_eq!(o["metadata"]["startdato"], "2026-11-15");
    let v2055: Vec<&Value> = o["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"] == 2055)
        .collect();
    assert_eq!(v2055[0]["verdi"], 2.5);
    // the old placement is kept when oppdater sends none
    assert_eq!(o["lokasjon"]["stedfestinger"][0]["veglenkeid"], link);

    // delvisOppdater removes one value and keeps the rest
    let part = changeset(json!({"delvisOppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": p1, "versjon": 2,
         "egenskaper": [{"typeId": 2055, "operasjon": "slett"}]}]}}));
    assert_eq!(
        s.run(&s.writer_token, &part).await["fremdrift"],
        "UTFØRT_OG_ETTERBEHANDLET"
    );
    let (_, o) = s
        .read(&format!("/vegobjekter/95/{p1}?inkluder=alle"), None)
        .await;
    assert_eq!(o["metadata"]["versjon"], 3);
    let ids: Vec<u64> = o["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert!(ids.contains(&1876) && !ids.contains(&2055), "{ids:?}");

    // slett with kaskadeSletting: both leave the read view and are listed as deleted
    let del = changeset(json!({"slett": {"vegObjekter": [
        {"typeId": 95, "nvdbId": p1, "versjon": 3, "kaskadeSletting": "ja"}]}}));
    assert_eq!(
        s.run(&s.writer_token, &del).await["fremdrift"],
        "UTFØRT_OG_ETTERBEHANDLET"
    );
    assert_eq!(
        s.read(&format!("/vegobjekter/95/{p1}?inkluder=alle"), None)
            .await
            .0,
        404
    );
    assert_eq!(s.read(&format!("/vegobjekter/96/{c1}"), None).await.0, 404);
    let (_, gone) = s
        .read(
            &format!("/vegobjekter/95/endringer?type=slettet&etter={t0}"),
            None,
        )
        .await;
    assert_eq!(
        gone["objekter"],
        json!([{"type": "SLETTET", "vegobjekt": p1}]),
        "{gone}"
    );
    // a deleted object cannot be changed again
    let again = changeset(json!({"oppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": p1, "versjon": 3, "egenskaper": []}]}}));
    let status = s.run(&s.writer_token, &again).await;
    assert_eq!(status["fremdrift"], "AVVIST");
    assert_eq!(codes(&status), ["VEGOBJEKTET_ER_LUKKET"]);
}

fn xml_changeset(link: u64) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<endringssett xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2" effektDato="2026-11-01" datakatalogversjon="{}">
  <registrer><vegObjekter>
    <vegObjekt typeId="95" tempId="x1">
      <egenskaper><egenskap typeId="1876"><enum>2868</enum></egenskap>
        <egenskap typeId="10854"><verdi>Registrert &amp; kontrollert</verdi></egenskap></egenskaper>
      <lokasjon><punkt lenkeId="{link}" posisjon="0.75" retning="MOT"/></lokasjon>
    </vegObjekt>
  </vegObjekter></registrer>
</endringssett>"#,
        Catalog::embedded().version.version
    )
}

async fn post_xml(s: &WriteServer, path: &str, body: String) -> (u16, String, String) {
    let r = s
        .client
        .post(format!("{}{WRITE}{path}", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header("Content-Type", "application/xml")
        .header("Accept", "application/xml")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    (status, ct, r.text().await.unwrap())
}

async fn get_xml(s: &WriteServer, path: &str) -> String {
    s.client
        .get(format!("{}{WRITE}{path}", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header("Accept", "application/xml")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn xml_round_trip_uses_the_v2_namespace_and_shapes() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let (status, ct, body) = post_xml(&s, "/endringssett", xml_changeset(link)).await;
    assert_eq!(status, 201, "{body}");
    assert!(ct.starts_with("application/xml"));
    let (root, v) = vegdb::api::write::xml::parse(body.as_bytes()).unwrap();
    assert_eq!(root, "ressurser");
    assert!(body.contains(r#"xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2""#));
    let rels: Vec<&str> = v["ressurs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rel"].as_str().unwrap())
        .collect();
    assert_eq!(rels, ["self", "start", "kanseller", "status", "fremdrift"]);
    let id = v["ressurs"][0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let (st, _, _) = post_xml(&s, &format!("/endringssett/{id}/start"), String::new()).await;
    assert_eq!(st, 200);
    let mut progress = String::new();
    for _ in 0..3000 {
        progress = get_xml(&s, &format!("/endringssett/{id}/fremdrift")).await;
        if progress.contains("UTFØRT_OG_ETTERBEHANDLET") || progress.contains("AVVIST") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (root, p) = vegdb::api::write::xml::parse(progress.as_bytes()).unwrap();
    assert_eq!(
        (root.as_str(), p.as_str()),
        ("fremdrift", Some("UTFØRT_OG_ETTERBEHANDLET"))
    );
    let status = get_xml(&s, &format!("/endringssett/{id}/status")).await;
    let (root, st) = vegdb::api::write::xml::parse(status.as_bytes()).unwrap();
    assert_eq!(root, "status");
    assert_eq!(st["eier"], "skriver");
    let obj = &st["resultat"]["vegObjekter"][0];
    assert_eq!(obj["tempId"], "x1");
    let id95: u64 = obj["nvdbId"].as_str().unwrap().parse().unwrap();
    let (code, o) = s
        .read(&format!("/vegobjekter/95/{id95}?inkluder=alle"), None)
        .await;
    assert_eq!(code, 200);
    let text: Vec<&Value> = o["egenskaper"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"] == 10854)
        .collect();
    assert_eq!(text[0]["verdi"], "Registrert & kontrollert");
    assert_eq!(o["lokasjon"]["stedfestinger"][0]["retning"], "MOT");
    // the content in XML reads back into the same changeset
    let content = get_xml(&s, &format!("/endringssett/{id}")).await;
    let (root, v) = vegdb::api::write::xml::parse(content.as_bytes()).unwrap();
    assert_eq!(root, "endringssett");
    let back: vegdb::changeset::model::Changeset = serde_json::from_value(v).unwrap();
    let (_, sent) = vegdb::api::write::xml::parse(xml_changeset(link).as_bytes()).unwrap();
    let mut sent: vegdb::changeset::model::Changeset = serde_json::from_value(sent).unwrap();
    sent.id = Some(id.clone());
    assert_eq!(back, sent);
    // a duplicate tempId is a 400 fault in the fault namespace
    let dup = xml_changeset(link).replace(
        "</vegObjekter>",
        r#"<vegObjekt typeId="95" tempId="x1"/></vegObjekter>"#,
    );
    let (st, _, body) = post_xml(&s, "/endringssett", dup).await;
    assert_eq!(st, 400);
    let (root, f) = vegdb::api::write::xml::parse(body.as_bytes()).unwrap();
    assert_eq!(root, "fault");
    assert!(body.contains("http://nvdb.vegvesen.no/apiskriv/fault/v1"));
    assert_eq!(f["message"], "Må være unik: tempId");
}

/// A point- or line-placed object of type `t` at `link` with the given properties.
fn object_of(t: u32, temp: &str, link: u64, props: Value) -> Value {
    let placement = Catalog::embedded().object_type(t).unwrap().placement;
    let lokasjon = match placement {
        Placement::Line => json!({"linje": [{"lenkeId": link, "fra": 0.1, "til": 0.6}]}),
        _ => json!({"punkt": [{"lenkeId": link, "posisjon": 0.5}]}),
    };
    json!({"typeId": t, "tempId": temp, "egenskaper": props, "lokasjon": lokasjon})
}

#[tokio::test]
async fn every_validation_rule_rejects_the_whole_changeset_with_its_code() {
    let s = WriteServer::start().await;
    let g = s.store.current();
    let (link, _) = usable_link(&g);
    let cat = Catalog::embedded();
    let t95 = cat.object_type(95).unwrap();
    let p = |id| t95.property(id).unwrap();
    let max_1877 = p(1877).max.unwrap();
    let min_1884 = p(1884).min.unwrap();
    let long_text = "x".repeat(p(10854).field_length.unwrap() as usize + 1);
    let existing = g.objects[&95].table.id[0];
    let existing_version = g.objects[&95].table.version[0];
    let existing_96 = g.objects.get(&96).map(|d| d.table.id[0]);
    // the only absolutely required property of the catalogue: Fartsgrense (105) 2021
    let required = cat
        .types
        .iter()
        .flat_map(|t| t.property_types.iter().map(move |p| (t, p)))
        .find(|(_, p)| p.importance == 1)
        .unwrap();
    let cases: Vec<(&str, Value)> = vec![
        (
            "UKJENT_VEGOBJEKTTYPE",
            json!({"typeId": 999_999, "tempId": "1"}),
        ),
        (
            "UKJENT_EGENSKAPSTYPE",
            object_of(95, "1", link, json!([{"typeId": 5530, "verdi": ["A"]}])),
        ),
        (
            "MANGLER_OBLIGATORISKE_EGENSKAPER",
            object_of(required.0.id, "1", link, json!([])),
        ),
        (
            "UGYLDIG_VERDI",
            object_of(95, "1", link, json!([{"typeId": 1877, "verdi": ["mange"]}])),
        ),
        (
            "UGYLDIG_ENUMVERDI",
            object_of(95, "1", link, json!([{"typeId": 1876, "enum": [1]}])),
        ),
        (
            "STØRRE_ENN_ABSOLUTT_MAKSIMUM",
            object_of(
                95,
                "1",
                link,
                json!([{"typeId": 1877, "verdi": [(max_1877 + 1.0).to_string()]}]),
            ),
        ),
        (
            "MINDRE_ENN_ABSOLUTT_MINIMUM",
            object_of(
                95,
                "1",
                link,
                json!([{"typeId": 1884, "verdi": [(min_1884 - 1.0).to_string()]}]),
            ),
        ),
        (
            "FOR_MANGE_DESIMALER",
            object_of(95, "1", link, json!([{"typeId": 2055, "verdi": ["1.25"]}])),
        ),
        (
            "OVERSKRIDER_FELTLENGDE",
            object_of(
                95,
                "1",
                link,
                json!([{"typeId": 10854, "verdi": [long_text]}]),
            ),
        ),
        (
            "UGYLDIG_FLERVERDI",
            object_of(
                95,
                "1",
                link,
                json!([{"typeId": 1877, "verdi": ["1", "2"]}]),
            ),
        ),
        (
            "UGYLDIG_GEOMETRI",
            object_of(
                95,
                "1",
                link,
                json!([{"typeId": 4794, "verdi": ["srid=32633;LINESTRING(1 2, 3 4)"]}]),
            ),
        ),
        ("UKJENT_LENKE", skiltpunkt("1", 987_654_321, 0.5)),
        ("UGYLDIG_POSISJON", skiltpunkt("1", link, 1.5)),
        (
            "UGYLDIG_STEDFESTING",
            json!({"typeId": 95, "tempId": "1", "lokasjon": {"linje": [{"lenkeId": link, "fra": 0.1, "til": 0.2}]}}),
        ),
        ("MANGLER_LOKASJON", json!({"typeId": 95, "tempId": "1"})),
        ("UGYLDIG_ASSOSIASJON", {
            let mut o = skiltpunkt("1", link, 0.5);
            o["assosiasjoner"] = json!([{"typeId": 105, "nvdbId": [existing]}]);
            o
        }),
        ("UKJENT_TEMPID", {
            let mut o = skiltpunkt("1", link, 0.5);
            o["assosiasjoner"] = json!([{"typeId": 96, "tempId": ["finnes-ikke"]}]);
            o
        }),
    ];
    for (code, bad) in cases {
        // a valid object beside the bad one: all or nothing
        let c =
            changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("ok", link, 0.3), bad]}}));
        let objects_before = s.store.current().object_count();
        let status = s.run(&s.writer_token, &c).await;
        assert_eq!(status["fremdrift"], "AVVIST", "{code}: {status}");
        assert_eq!(status["avvistårsak"], "VALIDERINGSFEIL", "{code}");
        assert!(
            codes(&status).contains(&code.to_string()),
            "{code}: {status}"
        );
        let ok = &status["resultat"]["vegObjekter"][0];
        assert_eq!(ok["tempId"], "ok");
        assert!(ok.get("nvdbId").is_none(), "{code}: nothing is registered");
        assert_eq!(s.store.current().object_count(), objects_before, "{code}");
    }
    // objects that must exist
    let update = |id: u64, t: u32, v: u32| {
        changeset(json!({"oppdater": {"vegObjekter": [
            {"typeId": t, "nvdbId": id, "versjon": v, "egenskaper": [{"typeId": 1876, "enum": [2868]}]}]}}))
    };
    for (c, code) in [
        (update(1, 95, 1), "VEGOBJEKTET_FINNES_IKKE"),
        (update(existing, 95, existing_version + 1), "UKJENT_VERSJON"),
    ] {
        let status = s.run(&s.writer_token, &c).await;
        assert_eq!(status["fremdrift"], "AVVIST");
        assert_eq!(codes(&status), [code], "{status}");
    }
    if let Some(id96) = existing_96 {
        let status = s.run(&s.admin, &update(id96, 95, 1)).await;
        assert_eq!(codes(&status), ["FEIL_VEGOBJEKTTYPE"], "{status}");
    }
    // the same object twice
    let twice = changeset(json!({
        "oppdater": {"vegObjekter": [{"typeId": 95, "nvdbId": existing, "versjon": existing_version, "egenskaper": [{"typeId": 1876, "enum": [2868]}]}]},
        "slett": {"vegObjekter": [{"typeId": 95, "nvdbId": existing, "versjon": existing_version, "kaskadeSletting": "nei"}]}}));
    let status = s.run(&s.writer_token, &twice).await;
    assert!(
        codes(&status).contains(&"KONFLIKT_MELLOM_VEGOBJEKTER".to_string()),
        "{status}"
    );

    // version conflict: someone else updated the object after the changeset was made
    let first = s
        .register(&s.writer_token, &update(existing, 95, existing_version))
        .await;
    let stale = s
        .register(&s.writer_token, &update(existing, 95, existing_version))
        .await;
    s.start_changeset(&s.writer_token, &first).await;
    assert_eq!(
        s.wait(&s.writer_token, &first).await["fremdrift"],
        "UTFØRT_OG_ETTERBEHANDLET"
    );
    s.start_changeset(&s.writer_token, &stale).await;
    let status = s.wait(&s.writer_token, &stale).await;
    assert_eq!(status["fremdrift"], "AVVIST");
    assert_eq!(codes(&status), ["VERSJONSKONFLIKT"]);
    let (_, o) = s.read(&format!("/vegobjekter/95/{existing}"), None).await;
    assert_eq!(
        o["metadata"]["versjon"],
        existing_version + 1,
        "applied once"
    );

    // an outdated catalogue version is a warning, not an error
    let mut c = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("w", link, 0.4)]}}));
    c["datakatalogversjon"] = json!("1.00");
    let status = s.run(&s.writer_token, &c).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET");
    assert_eq!(
        status["resultat"]["advarsel"][0]["kode"],
        "IKKE_GJELDENDE_DATAKATALOGVERSJON"
    );
}

#[tokio::test]
async fn malformed_requests_get_fault_entities_with_4xx() {
    let s = WriteServer::start_with(|c| c.max_changeset_bytes = 4096).await;
    let (link, _) = usable_link(&s.store.current());
    let good = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let post = |body: String, ct: &'static str, token: Option<String>, client: bool| {
        let mut r = s
            .client
            .post(format!("{}{WRITE}/endringssett", s.root))
            .header("Content-Type", ct)
            .body(body);
        if client {
            r = r.header("X-Client", "t");
        }
        if let Some(t) = token {
            r = r.header("Authorization", format!("Bearer {t}"));
        }
        async move {
            let r = r.send().await.unwrap();
            let st = r.status().as_u16();
            let text = r.text().await.unwrap();
            // an XML request gets an XML fault (Accept defaults to the Content-Type)
            let body: Value = if text.starts_with('<') {
                let (root, v) = vegdb::api::write::xml::parse(text.as_bytes()).unwrap();
                assert_eq!(root, "fault");
                v
            } else {
                serde_json::from_str(&text).unwrap_or_else(|_| panic!("fault json: {st} {text}"))
            };
            (
                st,
                body["message"].as_str().expect("fault message").to_string(),
            )
        }
    };
    let w = || Some(s.writer_token.clone());
    let cases = [
        (post(good.to_string(), "application/json", w(), false).await, 400, "X-Client"),
        (post(good.to_string(), "application/json", None, true).await, 401, "innlogging"),
        (post(good.to_string(), "application/json", Some("feil".into()), true).await, 401, "token"),
        (post("{".into(), "application/json", w(), true).await, 400, "JSON"),
        (post("<endringssett".into(), "application/xml", w(), true).await, 400, "XML"),
        (post(good.to_string(), "text/csv", w(), true).await, 415, "Content-Type"),
        (post(json!({"effektDato": "i går", "datakatalogversjon": "2", "registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}).to_string(), "application/json", w(), true).await, 400, "effektDato"),
        (post(changeset(json!({})).to_string(), "application/json", w(), true).await, 400, "ingen vegobjekter"),
        (post(changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5), skiltpunkt("1", link, 0.6)]}})).to_string(), "application/json", w(), true).await, 400, "Må være unik: tempId"),
        (post(changeset(json!({"slett": {"vegObjekter": [{"typeId": 95, "nvdbId": 1, "versjon": 1}]}})).to_string(), "application/json", w(), true).await, 400, "kaskadeSletting"),
        (post(changeset(json!({"oppdater": {"vegObjekter": [{"typeId": 95}]}})).to_string(), "application/json", w(), true).await, 400, "nvdbId"),
        (post(changeset(json!({"korriger": {"vegObjekter": [{"typeId": 95, "nvdbId": 1, "versjon": 1}]}})).to_string(), "application/json", w(), true).await, 403, "korriger"),
        (post(changeset(json!({"registrer": {"vegObjekter": [object_of(105, "1", link, json!([]))]}})).to_string(), "application/json", Some(s.limited_token.clone()), true).await, 403, "105"),
        (post(changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}})).to_string(), "application/json", Some(s.sensitive_token.clone()), true).await, 403, "skriverett"),
        (post("x".repeat(5000), "application/json", w(), true).await, 413, "grensen"),
    ];
    for (i, ((status, message), want, needle)) in cases.into_iter().enumerate() {
        assert_eq!(status, want, "case {i}: {message}");
        assert!(
            message.contains(needle),
            "case {i}: '{message}' lacks '{needle}'"
        );
    }
    // the SSO cookie of real v2 clients works like a bearer token
    let r = s
        .client
        .post(format!("{}{WRITE}/endringssett", s.root))
        .header("X-Client", "t")
        .header(
            "Cookie",
            format!("iPlanetDirectoryProOAM={}", s.writer_token),
        )
        .header("Content-Type", "application/json")
        .body(good.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    // both older paths answer too
    for base in ["/nvdb/apiskriv/v2", "/registry/apiskriv/rest/v2"] {
        let r = s
            .client
            .post(format!("{}{base}/endringssett", s.root))
            .headers(WriteServer::headers(&s.writer_token))
            .header("Content-Type", "application/json")
            .body(good.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201, "{base}");
    }
}

/// Control characters and over-long identifiers are refused at registration (and by the
/// validator) with a fault naming the field, in JSON and XML alike; tab and line breaks in a
/// text value stay allowed.
#[tokio::test]
async fn control_characters_and_huge_ids_are_refused_naming_the_field() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let with_text = |temp: &str, text: &str| {
        let mut o = skiltpunkt(temp, link, 0.5);
        o["egenskaper"]
            .as_array_mut()
            .unwrap()
            .push(json!({"typeId": 10854, "verdi": [text]}));
        changeset(json!({"registrer": {"vegObjekter": [o]}}))
    };
    let mut associated = skiltpunkt("mor", link, 0.5);
    associated["assosiasjoner"] = json!([{"typeId": 96, "tempId": ["d\u{7f}"]}]);
    let json_cases = [
        (
            with_text("a\0b", "tekst"),
            "registrer/vegObjekt[0]/tempId",
            "U+0000",
        ),
        (
            with_text("1", "a\u{1}b"),
            "registrer/vegObjekt[0]/egenskap[typeId=10854]/verdi",
            "U+0001",
        ),
        (
            with_text("1", "a\u{1b}[31m"),
            "egenskap[typeId=10854]/verdi",
            "U+001B",
        ),
        (
            with_text("1", "a\u{85}"),
            "egenskap[typeId=10854]/verdi",
            "U+0085",
        ),
        (
            with_text("x".repeat(1 << 20).as_str(), "tekst"),
            "registrer/vegObjekt[0]/tempId",
            "1048576 tegn",
        ),
        (
            with_text(&"x".repeat(256), "tekst"),
            "registrer/vegObjekt[0]/tempId",
            "256 tegn",
        ),
        (
            changeset(json!({"registrer": {"vegObjekter": [associated]}})),
            "registrer/vegObjekt[0]/assosiasjon[typeId=96]/tempId",
            "U+007F",
        ),
        (
            json!({"effektDato": "2026-11-01\u{0}", "datakatalogversjon": "2", "registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}),
            "effektDato",
            "U+0000",
        ),
        (
            {
                let mut c = with_text("1", "t");
                c["ansvarlig"] = json!("Kari\u{8}");
                c
            },
            "ansvarlig",
            "U+0008",
        ),
    ];
    for (i, (c, field, needle)) in json_cases.into_iter().enumerate() {
        for path in ["/endringssett", "/endringssett/validator"] {
            let (st, _, body) = s.post_json(path, &s.writer_token, &c).await;
            assert_eq!(st, 400, "case {i} {path}: {body}");
            let fault: Value = serde_json::from_str(&body).unwrap();
            let message = fault["message"].as_str().unwrap();
            assert!(
                message.contains(field) && message.contains(needle),
                "case {i} {path}: '{message}' lacks '{field}' or '{needle}'"
            );
            assert!(message.len() < 300, "case {i}: the text is not echoed");
        }
    }
    // tab, line feed and carriage return are text, and a 255-character tempId is an id
    let ok = with_text(&"x".repeat(255), "linje 1\r\nlinje 2\tmed tab");
    s.register(&s.writer_token, &ok).await;

    // XML: a character reference and a raw control character, in an attribute and in text
    let xml = xml_changeset(link);
    let xml_cases = [
        (
            xml.replace("tempId=\"x1\"", "tempId=\"x&#1;1\""),
            "registrer/vegObjekt[0]/tempId",
            "U+0001",
        ),
        (
            xml.replace("tempId=\"x1\"", "tempId=\"x\u{2}1\""),
            "registrer/vegObjekt[0]/tempId",
            "U+0002",
        ),
        (
            xml.replace("Registrert &amp;", "Registrert &#27;"),
            "egenskap[typeId=10854]/verdi",
            "U+001B",
        ),
        (
            xml.replace("Registrert &amp;", "Registrert \u{7}"),
            "egenskap[typeId=10854]/verdi",
            "U+0007",
        ),
        (
            xml.replace("tempId=\"x1\"", &format!("tempId=\"{}\"", "x".repeat(300))),
            "registrer/vegObjekt[0]/tempId",
            "300 tegn",
        ),
    ];
    for (i, (body, field, needle)) in xml_cases.into_iter().enumerate() {
        let (st, ct, text) = post_xml(&s, "/endringssett", body).await;
        assert_eq!(st, 400, "xml case {i}: {text}");
        assert!(ct.contains("xml"), "{ct}");
        let (root, v) = vegdb::api::write::xml::parse(text.as_bytes()).unwrap();
        assert_eq!(root, "fault");
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains(field) && message.contains(needle),
            "xml case {i}: '{message}' lacks '{field}' or '{needle}'"
        );
    }
    let (st, _, text) = post_xml(
        &s,
        "/endringssett",
        xml.replace("Registrert &amp;", "Registrert&#9;&#10;"),
    )
    .await;
    assert_eq!(st, 201, "{text}");
}

#[tokio::test]
async fn cancel_restart_and_ownership_follow_the_state_rules() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let c = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let post = |path: String, token: String| {
        let s = &s;
        async move { s.post_json(&path, &token, &json!({})).await }
    };
    let w = s.writer_token.clone();
    // cancel before start
    let id = s.register(&w, &c).await;
    let (st, _, body) = post(format!("/endringssett/{id}/kanseller"), w.clone()).await;
    assert_eq!(st, 200, "{body}");
    let rels: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(
        rels.iter()
            .map(|r| r["rel"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["self", "status"]
    );
    assert_eq!(s.wait(&w, &id).await["fremdrift"], "KANSELLERT");
    let (st, _, body) = post(format!("/endringssett/{id}/start"), w.clone()).await;
    assert_eq!(st, 409, "{body}");
    assert!(body.contains("KANSELLERT"));
    // no cancel once processing began; no restart unless VENTER
    let id = s.register(&w, &c).await;
    s.start_changeset(&w, &id).await;
    s.wait(&w, &id).await;
    assert_eq!(
        post(format!("/endringssett/{id}/kanseller"), w.clone())
            .await
            .0,
        409
    );
    assert_eq!(
        post(format!("/endringssett/{id}/restart"), w.clone())
            .await
            .0,
        409
    );
    assert_eq!(
        post(format!("/endringssett/{id}/start"), w.clone()).await.0,
        409
    );
    // (the injected failure needs the `failpoints` feature)
    #[cfg(feature = "failpoints")]
    {
        // a failure while publishing leaves the changeset VENTER (SYSTEMFEIL) until restarted
        let generation = s.store.current().id;
        s.writer.fail_next_publish();
        let id = s.register(&w, &c).await;
        s.start_changeset(&w, &id).await;
        let status = s.wait(&w, &id).await;
        assert_eq!(status["fremdrift"], "VENTER", "{status}");
        assert_eq!(status["venteårsak"], "SYSTEMFEIL");
        assert_eq!(s.store.current().id, generation, "nothing published");
        assert_eq!(
            post(format!("/endringssett/{id}/kanseller"), w.clone())
                .await
                .0,
            409
        );
        let (st, _, body) = post(format!("/endringssett/{id}/restart"), w.clone()).await;
        assert_eq!(st, 200, "{body}");
        let status = s.wait(&w, &id).await;
        assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
        assert!(status.get("venteårsak").is_none());
    }
    // unknown ids and other users' changesets
    assert_eq!(
        post("/endringssett/nope/start".into(), w.clone()).await.0,
        404
    );
    assert_eq!(s.get_write("/endringssett/nope/status", &w).await.0, 404);
    // another user's changeset is answered like an unknown id (404, same fault): the answer
    // does not tell whether the id exists
    let unknown = "00000000-0000-4000-8000-000000000000";
    for path in ["/status", "/fremdrift", ""] {
        let (st, body) = s
            .get_write(&format!("/endringssett/{id}{path}"), &s.limited_token)
            .await;
        let (st2, body2) = s
            .get_write(&format!("/endringssett/{unknown}{path}"), &s.limited_token)
            .await;
        assert_eq!((st, st2), (404, 404), "{path}: {body} / {body2}");
        assert_eq!(
            body.replace(&id, "ID"),
            body2.replace(unknown, "ID"),
            "{path}"
        );
    }
    assert_eq!(
        s.get_write(&format!("/endringssett/{id}/status"), &s.admin)
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn municipality_rights_reject_at_processing_and_dry_runs_publish_nothing() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let c = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let status = s.run(&s.elsewhere_token, &c).await;
    assert_eq!(status["fremdrift"], "AVVIST");
    assert_eq!(status["avvistårsak"], "IKKE_AUTORISERT");
    assert_eq!(codes(&status), ["MANGLER_TILGANG"]);

    let before = (s.store.current().id, s.store.current().object_count());
    let r = s
        .client
        .post(format!("{}{WRITE}/endringssett", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header("X-NVDB-DryRun", "true")
        .header("Content-Type", "application/json")
        .body(c.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let id = r.headers()["location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    s.start_changeset(&s.writer_token, &id).await;
    let status = s.wait(&s.writer_token, &id).await;
    assert_eq!(status["fremdrift"], "UTFØRT", "{status}");
    assert_eq!(
        (s.store.current().id, s.store.current().object_count()),
        before
    );

    // the validator registers nothing
    let (st, _, body) = s
        .post_json("/endringssett/validator", &s.writer_token, &c)
        .await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["fremdrift"], "UTFØRT");
    let bad = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", 987_654_321, 0.5)]}}));
    let (_, _, body) = s
        .post_json("/endringssett/validator", &s.writer_token, &bad)
        .await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["fremdrift"], "AVVIST");
    assert_eq!(codes(&v), ["UKJENT_LENKE"]);
    let (_, _, body) = s
        .post_json(
            "/endringssett/validator?skipLocation=true",
            &s.writer_token,
            &bad,
        )
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["fremdrift"],
        "UTFØRT"
    );
    let (st, _, _) = s
        .post_json(
            "/endringssett/validator?skipLocation=ja",
            &s.writer_token,
            &bad,
        )
        .await;
    assert_eq!(st, 400);
    assert_eq!(s.store.current().id, before.0);
}

#[tokio::test]
async fn the_overview_filters_pages_and_orders() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let c = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(s.register(&s.writer_token, &c).await);
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    s.run(&s.writer_token, &c).await; // a fifth, done
    let list = |q: &str, token: &str| {
        let q = q.to_string();
        let token = token.to_string();
        let s = &s;
        async move {
            let (st, body) = s.get_write(&format!("/endringssett{q}"), &token).await;
            assert_eq!(st, 200, "{body}");
            serde_json::from_str::<Vec<Value>>(&body).unwrap()
        }
    };
    let all = list("", &s.writer_token).await;
    assert_eq!(all.len(), 5);
    assert_eq!(all[0]["id"], ids[0].as_str());
    let rev = list("?reverse=true&max=2", &s.writer_token).await;
    assert_eq!(rev.len(), 2);
    assert_ne!(rev[0]["id"], ids[0].as_str());
    let page = list("?skip=1&max=2", &s.writer_token).await;
    assert_eq!(
        page.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(),
        [json!(ids[1]), json!(ids[2])]
    );
    assert_eq!(list("?status=IKKE_STARTET", &s.writer_token).await.len(), 4);
    assert_eq!(
        list("?status=UTFØRT_OG_ETTERBEHANDLET", &s.writer_token)
            .await
            .len(),
        1
    );
    let from = all[2]["mottatt"].as_str().unwrap();
    let from_ms = chrono::DateTime::parse_from_rfc3339(from)
        .unwrap()
        .timestamp_millis();
    assert_eq!(
        list(&format!("?fra={from_ms}"), &s.writer_token)
            .await
            .len(),
        3
    );
    // other users see only their own; admin sees all
    assert_eq!(list("", &s.limited_token).await.len(), 0);
    assert_eq!(list("", &s.admin).await.len(), 5);
    for bad in ["?max=-1", "?max=5000", "?status=FERDIG", "?ukjent=1"] {
        assert_eq!(
            s.get_write(&format!("/endringssett{bad}"), &s.writer_token)
                .await
                .0,
            400,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn sensitive_values_are_shown_only_to_users_with_the_right() {
    let s = WriteServer::start().await;
    let g = s.store.current();
    let (link, _) = usable_link(&g);
    let cat = Catalog::embedded();
    let (t, p) = cat
        .types
        .iter()
        .filter(|t| matches!(t.placement, Placement::Point | Placement::Line))
        .flat_map(|t| t.property_types.iter().map(move |p| (t, p)))
        .find(|(t, p)| {
            p.sensitivity > 0
                && p.datatype == vegdb::catalog::datatype::TEXT
                && t.property_types.iter().all(|q| q.importance != 1)
        })
        .expect("a type with a sensitive text property");
    let c = changeset(json!({"registrer": {"vegObjekter": [
        object_of(t.id, "s", link, json!([{"typeId": p.id, "verdi": ["Hemmelig Eier"]}]))]}}));
    let status = s.run(&s.admin, &c).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let id = nvdb_id(&status, "s");
    let has = |o: &Value| {
        o["egenskaper"]
            .as_array()
            .is_some_and(|a| a.iter().any(|e| e["id"] == p.id))
    };
    let path = format!("/vegobjekter/{}/{id}?inkluder=alle", t.id);
    assert!(!has(&s.read(&path, None).await.1), "hidden from the public");
    assert!(
        !has(&s.read(&path, Some(&s.writer_token)).await.1),
        "hidden without the right"
    );
    assert!(
        has(&s.read(&path, Some(&s.sensitive_token)).await.1),
        "shown with sensitiv"
    );
    assert!(
        has(&s.read(&path, Some(&s.admin)).await.1),
        "shown to admin"
    );
}

/// Every write route, as (method, template, example).
const WRITE_ROUTES: &[(&str, &str, &str)] = &[
    ("post", "/endringssett/validator", "/endringssett/validator"),
    ("post", "/endringssett", "/endringssett"),
    ("get", "/endringssett", "/endringssett"),
    ("get", "/endringssett/{id}", "/endringssett/x"),
    ("post", "/endringssett/{id}/start", "/endringssett/x/start"),
    (
        "post",
        "/endringssett/{id}/kanseller",
        "/endringssett/x/kanseller",
    ),
    (
        "post",
        "/endringssett/{id}/restart",
        "/endringssett/x/restart",
    ),
    (
        "get",
        "/endringssett/{id}/fremdrift",
        "/endringssett/x/fremdrift",
    ),
    ("get", "/endringssett/{id}/status", "/endringssett/x/status"),
    ("post", "/binaer", "/binaer"),
    ("get", "/binaer/{id}", "/binaer/x"),
    ("post", "/konverter/sosiGeoJson", "/konverter/sosiGeoJson"),
    ("post", "/konverter/sosi", "/konverter/sosi"),
];

#[tokio::test]
async fn every_write_route_is_documented_and_demands_x_client() {
    let s = WriteServer::start().await;
    let r = s
        .client
        .get(format!("{}{WRITE}/openapi.json", s.root))
        .send()
        .await
        .unwrap();
    let doc: Value = r.json().await.unwrap();
    let paths = doc["paths"].as_object().unwrap();
    let mut documented = 0;
    for (method, template, example) in WRITE_ROUTES {
        assert!(
            paths[*template].get(*method).is_some(),
            "{method} {template} undocumented"
        );
        let req = match *method {
            "get" => s.client.get(format!("{}{WRITE}{example}", s.root)),
            _ => s.client.post(format!("{}{WRITE}{example}", s.root)),
        };
        let r = req
            .header("Authorization", format!("Bearer {}", s.admin))
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status().as_u16(),
            400,
            "{method} {example} without X-Client"
        );
        let body: Value = r.json().await.unwrap();
        assert!(body["message"].as_str().unwrap().contains("X-Client"));
        documented += 1;
    }
    // a wrong method is a fault too
    let r = s
        .client
        .get(format!("{}{WRITE}/endringssett/x/start", s.root))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert!(r.json::<Value>().await.unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("GET"));
    let operations: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(
        operations,
        documented,
        "no undocumented extras: {:?}",
        paths.keys()
    );
}

#[tokio::test]
async fn the_status_of_a_large_changeset_lists_every_object() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let n = vegdb::changeset::journal::RESULTS_KEPT_IN_MEMORY + 20;
    let objects: Vec<Value> = (0..n)
        .map(|i| skiltpunkt(&format!("t{i}"), link, 0.5))
        .collect();
    let status = s
        .run(
            &s.writer_token,
            &changeset(json!({"registrer": {"vegObjekter": objects}})),
        )
        .await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET");
    let results = status["resultat"]["vegObjekter"].as_array().unwrap();
    assert_eq!(results.len(), n);
    let ids: std::collections::HashSet<u64> = results
        .iter()
        .map(|o| o["nvdbId"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), n, "distinct nvdbIds");
}

#[tokio::test]
async fn x_nvdb_delay_holds_processing_back_for_polling_tests() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let c = changeset(json!({"registrer": {"vegObjekter": [skiltpunkt("1", link, 0.5)]}}));
    let post = |delay: &'static str| {
        s.client
            .post(format!("{}{WRITE}/endringssett", s.root))
            .headers(WriteServer::headers(&s.writer_token))
            .header("X-NVDB-Delay", delay)
            .header("Content-Type", "application/json")
            .body(c.to_string())
            .send()
    };
    for bad in ["-1", "soon", "301"] {
        assert_eq!(post(bad).await.unwrap().status().as_u16(), 400, "{bad}");
    }
    let r = post("1").await.unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let id = r.headers()["location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let started = std::time::Instant::now();
    s.start_changeset(&s.writer_token, &id).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (_, p) = s
        .get_write(&format!("/endringssett/{id}/fremdrift"), &s.writer_token)
        .await;
    assert_eq!(p, "\"BEHANDLES\"");
    let status = s.wait(&s.writer_token, &id).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET");
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
}

#[tokio::test]
async fn a_read_only_service_answers_the_write_api_with_503() {
    let tmp = tempfile::tempdir().unwrap();
    let users = tmp.path().join("users.json");
    let token = vegdb::users::add_user(&users, "kari", vec![vegdb::users::Role::Write], None, None)
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut state = vegdb::api::state::AppState::read_only(
        super::server::store(),
        vegdb::api::state::ApiConfig::new(
            format!("http://{addr}"),
            std::time::Duration::from_secs(10),
        ),
    );
    state.users = std::sync::Arc::new(vegdb::users::Users::open(&users).unwrap());
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    let r = reqwest::Client::new()
        .post(format!("http://{addr}{WRITE}/endringssett"))
        .headers(WriteServer::headers(&token))
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("ikke aktivert"),
        "{body}"
    );
}

/// The status document and the overview come from the same typed documents in both formats:
/// XML has the XSD's attributes (`<feil kode>`, `<vegObjekt tempId>`, `<endringssett id href>`)
/// and leaves empty optional `feil`/`advarsel` lists out.
#[tokio::test]
async fn xml_status_and_overview_follow_the_xsd_shapes() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let bad = xml_changeset(link).replace(r#"typeId="95""#, r#"typeId="999999""#);
    let (status, _, body) = post_xml(&s, "/endringssett/validator", bad).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with(r#"<?xml version="1.0" encoding="UTF-8"?><status xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2">"#), "{body}");
    assert!(
        body.contains(
            r#"<vegObjekt tempId="x1"><feil><feil kode="UKJENT_VEGOBJEKTTYPE"><melding>"#
        ),
        "{body}"
    );
    assert!(
        !body.contains("<advarsel"),
        "empty optional lists are left out: {body}"
    );
    let (root, v) = vegdb::api::write::xml::parse(body.as_bytes()).unwrap();
    assert_eq!(root, "status");
    assert_eq!(v["fremdrift"], "AVVIST");
    // the overview: one changeset registered, as id/href attributes in XML, fields in JSON
    let (st, _, _) = post_xml(&s, "/endringssett", xml_changeset(link)).await;
    assert_eq!(st, 201);
    let list = get_xml(&s, "/endringssett").await;
    let (root, v) = vegdb::api::write::xml::parse(list.as_bytes()).unwrap();
    assert_eq!(root, "endringssettliste");
    let item = &v["endringssett"];
    let item = if item.is_array() { &item[0] } else { item };
    assert!(item["href"]
        .as_str()
        .unwrap()
        .ends_with(item["id"].as_str().unwrap()));
    assert_eq!(item["fremdrift"], "IKKE_STARTET");
    assert!(list.contains(r#"<endringssett id=""#), "{list}");
}

/// `felt` of a placement in a changeset (registrer, oppdater, delvisOppdater; JSON and XML) is
/// kept and shown as the placement's `felt` in the read API (JSON and XML, `lokasjon` and
/// `vegsegmenter`); a placement without lanes has none.
#[tokio::test]
async fn lanes_of_a_placement_are_kept_and_read_back_as_felt() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let read_xml = |id: u64| {
        let url = format!(
            "{}/nvdb/api/v2/vegobjekter/95/{id}?inkluder=lokasjon",
            s.root
        );
        let client = s.client.clone();
        async move {
            let r = client
                .get(url)
                .header("Accept", "application/xml")
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.text().await.unwrap()
        }
    };
    let felt = |o: &Value| -> (Option<String>, Option<String>) {
        (
            o["lokasjon"]["stedfestinger"][0]["felt"]
                .as_str()
                .map(String::from),
            o["vegsegmenter"][0]["stedfesting"]["felt"]
                .as_str()
                .map(String::from),
        )
    };
    let reg = changeset(json!({"registrer": {"vegObjekter": [
        {"typeId": 95, "tempId": "f1", "egenskaper": [{"typeId": 1876, "enum": [2868]}],
         "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.4, "felt": "1#2"}]}}]}}));
    let status = s.run(&s.writer_token, &reg).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let id = nvdb_id(&status, "f1");
    let (st, o) = s
        .read(&format!("/vegobjekter/95/{id}?inkluder=alle"), None)
        .await;
    assert_eq!(st, 200, "{o}");
    assert_eq!(felt(&o), (Some("1#2".into()), Some("1#2".into())), "{o}");
    // the v2 documentation's order: the positions, then felt
    let placement = serde_json::to_string(&o["lokasjon"]["stedfestinger"][0]).unwrap();
    assert!(
        placement.find("\"posisjon\"").unwrap() < placement.find("\"felt\"").unwrap(),
        "{placement}"
    );
    let xml = read_xml(id).await;
    assert!(
        xml.contains("<stedfesting><veglenkeid>") && xml.contains("<felt>1#2</felt>"),
        "{xml}"
    );

    // oppdater with a new location: its lanes replace the old
    let upd = changeset(json!({"oppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": 1,
         "egenskaper": [{"typeId": 1876, "enum": [2868]}],
         "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.4, "felt": "1R1"}]}}]}}));
    let status = s.run(&s.writer_token, &upd).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let (_, o) = s
        .read(&format!("/vegobjekter/95/{id}?inkluder=alle"), None)
        .await;
    assert_eq!(felt(&o), (Some("1R1".into()), Some("1R1".into())), "{o}");
    // oppdater without a location keeps the lanes
    let keep = changeset(json!({"oppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": 2,
         "egenskaper": [{"typeId": 1876, "enum": [2868]}]}]}}));
    let status = s.run(&s.writer_token, &keep).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let (_, o) = s
        .read(&format!("/vegobjekter/95/{id}?inkluder=alle"), None)
        .await;
    assert_eq!(felt(&o).0.as_deref(), Some("1R1"), "{o}");

    // delvisOppdater: a location with other lanes, then one without lanes
    for (version, lanes) in [(3, Some("2#4")), (4, None)] {
        let mut punkt = json!({"lenkeId": link, "posisjon": 0.4});
        if let Some(l) = lanes {
            punkt["felt"] = json!(l);
        }
        let part = changeset(json!({"delvisOppdater": {"vegObjekter": [
            {"typeId": 95, "nvdbId": id, "versjon": version,
             "lokasjon": {"operasjon": "oppdater", "punkt": [punkt]}}]}}));
        let status = s.run(&s.writer_token, &part).await;
        assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
        let (_, o) = s
            .read(&format!("/vegobjekter/95/{id}?inkluder=alle"), None)
            .await;
        assert_eq!(o["metadata"]["versjon"], version + 1);
        let want = lanes.map(String::from);
        assert_eq!(felt(&o), (want.clone(), want), "{o}");
    }
    let xml = read_xml(id).await;
    assert!(!xml.contains("<felt>"), "{xml}");

    // the XML changeset's `felt` attribute
    let body = xml_changeset(link).replace(
        r#"posisjon="0.75" retning="MOT"/>"#,
        r#"posisjon="0.75" retning="MOT" felt="3"/>"#,
    );
    assert!(body.contains(r#"felt="3""#));
    let (status, _, res) = post_xml(&s, "/endringssett", body).await;
    assert_eq!(status, 201, "{res}");
    let (_, v) = vegdb::api::write::xml::parse(res.as_bytes()).unwrap();
    let cid = v["ressurs"][0]["src"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let (st, _, _) = post_xml(&s, &format!("/endringssett/{cid}/start"), String::new()).await;
    assert_eq!(st, 200);
    let status = s.wait(&s.writer_token, &cid).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let x1 = nvdb_id(&status, "x1");
    let (_, o) = s
        .read(&format!("/vegobjekter/95/{x1}?inkluder=alle"), None)
        .await;
    assert_eq!(felt(&o), (Some("3".into()), Some("3".into())), "{o}");
}
