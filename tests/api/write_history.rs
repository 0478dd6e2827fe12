//! The write path keeps history, through the real server: oppdater ends the current version at
//! effektDato and adds the next, korriger rewrites the version in place, slett ends the last
//! version; the generation as it was on a day (`Generation::at`) answers with the versions
//! valid then, and `endringer` lists an update as changed, never as deleted.

use serde_json::{json, Value};
use vegdb::generation::time::today;
use vegdb::generation::Generation;

use super::write_server::{changeset, usable_link, WriteServer};

/// `YYYY-MM-DD` of a day since 1970.
fn date_text(day: i32) -> String {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
    (epoch + chrono::Duration::days(day.into())).to_string()
}

/// (version, startdato, sluttdato as days) and the verdi of property 2055 of Skiltpunkt `id`
/// in `g` (None: not there).
fn sign(g: &Generation, id: u64) -> Option<(u32, i32, i32, Option<f64>)> {
    let t = &g.objects.get(&95)?.table;
    let row = t.row_of(id)?;
    let o = vegdb::changeset::working::ObjectState::from_row(t, row);
    let v = match o.values.get(&2055) {
        Some(vegdb::value::Value::Float(f)) => Some(*f),
        Some(vegdb::value::Value::Int(i)) => Some(*i as f64),
        _ => None,
    };
    Some((o.version, o.start_date, o.end_date, v))
}

/// The 2055 value of `id` on `day` (None: the object did not exist then).
fn value_on(s: &WriteServer, day: i32, id: u64) -> Option<Option<f64>> {
    let view = s.store.current().at(day).unwrap();
    sign(&view, id).map(|x| x.3)
}

async fn ok(s: &WriteServer, token: &str, c: &Value) {
    let status = s.run(token, c).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
}

#[tokio::test]
async fn oppdater_korriger_and_slett_keep_the_versions_valid_on_each_day() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let (d1, d2, d3) = (today() - 60, today() - 30, today() - 10);
    let t0 = (chrono::Utc::now() - chrono::Duration::seconds(2))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let sign_with =
        |v: &str| json!([{"typeId": 1876, "enum": [2868]}, {"typeId": 2055, "verdi": [v]}]);
    let reg = changeset(
        json!({"effektDato": date_text(d1), "registrer": {"vegObjekter": [
        {"typeId": 95, "tempId": "p", "egenskaper": sign_with("1.5"),
         "lokasjon": {"punkt": [{"lenkeId": link, "posisjon": 0.5}]}}]}}),
    );
    let status = s.run(&s.writer_token, &reg).await;
    let id = status["resultat"]["vegObjekter"][0]["nvdbId"]
        .as_u64()
        .unwrap();
    assert_eq!(
        sign(&s.store.current(), id),
        Some((1, d1, i32::MIN, Some(1.5)))
    );

    // oppdater: version 1 ends at effektDato and becomes history, version 2 starts there
    ok(
        &s,
        &s.writer_token,
        &changeset(
            json!({"effektDato": date_text(d2), "oppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": 1, "egenskaper": sign_with("2.5")}]}}),
        ),
    )
    .await;
    let g = s.store.current();
    assert_eq!(sign(&g, id), Some((2, d2, i32::MIN, Some(2.5))));
    let versions: Vec<(u32, i32, i32)> = g
        .versions(95, id)
        .iter()
        .map(|(t, r)| (t.version[*r], t.start_date[*r], t.end_date[*r]))
        .collect();
    assert_eq!(versions, [(1, d1, d2), (2, d2, i32::MIN)]);
    assert_eq!(value_on(&s, d1 - 1, id), None, "before it existed");
    assert_eq!(value_on(&s, d2 - 1, id), Some(Some(1.5)));
    assert_eq!(value_on(&s, d2, id), Some(Some(2.5)));
    assert_eq!(value_on(&s, d2 + 1, id), Some(Some(2.5)));
    // the read API shows the new version; endringer lists it as changed, not as deleted
    let (_, o) = s.read(&format!("/vegobjekter/95/{id}"), None).await;
    assert_eq!(o["metadata"]["versjon"], 2);
    assert_eq!(o["metadata"]["startdato"], date_text(d2));
    let (_, gone) = s
        .read(
            &format!("/vegobjekter/95/endringer?type=slettet&etter={t0}"),
            None,
        )
        .await;
    assert_eq!(gone["objekter"], json!([]), "{gone}");
    let (_, changed) = s
        .read(
            &format!("/vegobjekter/95/endringer?type=endret&etter={t0}"),
            None,
        )
        .await;
    let ids: Vec<&Value> = changed["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["vegobjekt"]["id"])
        .collect();
    assert_eq!(ids, [&json!(id)], "{changed}");

    // korriger (a right of its own): version 2 rewritten in place, its dates unchanged, no
    // new history
    ok(
        &s,
        &s.admin,
        &changeset(
            json!({"effektDato": date_text(d3), "korriger": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": 2, "egenskaper": sign_with("3.5")}]}}),
        ),
    )
    .await;
    let g = s.store.current();
    assert_eq!(sign(&g, id), Some((2, d2, i32::MIN, Some(3.5))));
    assert_eq!(g.versions(95, id).len(), 2);
    assert_eq!(value_on(&s, d2 + 1, id), Some(Some(3.5)));
    assert_eq!(value_on(&s, d2 - 1, id), Some(Some(1.5)));

    // an effektDato before the current version began counts as its start: version 2 then was
    // valid on no day, and no two versions overlap
    let earlier = changeset(
        json!({"effektDato": date_text(d2 - 5), "delvisOppdater": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": 2,
         "egenskaper": [{"typeId": 2055, "verdi": ["4.5"], "operasjon": "oppdater"}]}]}}),
    );
    ok(&s, &s.writer_token, &earlier).await;
    let g = s.store.current();
    assert_eq!(sign(&g, id), Some((3, d2, i32::MIN, Some(4.5))));
    assert_eq!(value_on(&s, d2 - 1, id), Some(Some(1.5)));
    assert_eq!(value_on(&s, d2, id), Some(Some(4.5)));

    // slett: the last version ends at effektDato; readable on the days before, not after
    ok(
        &s,
        &s.writer_token,
        &changeset(
            json!({"effektDato": date_text(d3), "slett": {"vegObjekter": [
        {"typeId": 95, "nvdbId": id, "versjon": 3, "kaskadeSletting": "nei"}]}}),
        ),
    )
    .await;
    let g = s.store.current();
    assert_eq!(sign(&g, id), None);
    assert_eq!(s.read(&format!("/vegobjekter/95/{id}"), None).await.0, 404);
    let versions: Vec<(u32, i32, i32)> = g
        .versions(95, id)
        .iter()
        .map(|(t, r)| (t.version[*r], t.start_date[*r], t.end_date[*r]))
        .collect();
    assert_eq!(versions, [(1, d1, d2), (2, d2, d2), (3, d2, d3)]);
    assert_eq!(value_on(&s, d3 - 1, id), Some(Some(4.5)));
    assert_eq!(value_on(&s, d3, id), None);
    let (_, gone) = s
        .read(
            &format!("/vegobjekter/95/endringer?type=slettet&etter={t0}"),
            None,
        )
        .await;
    assert_eq!(
        gone["objekter"],
        json!([{"type": "SLETTET", "vegobjekt": id}])
    );
}
