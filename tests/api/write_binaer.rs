//! `/binaer` (content-addressed store, raw and multipart, size limit) and the converters.

use serde_json::{json, Value};
use sha2::Digest;

use super::write_server::{usable_link, WriteServer, WRITE};

#[tokio::test]
async fn binaries_round_trip_raw_and_multipart_with_a_size_limit() {
    let s = WriteServer::start_with(|c| c.max_binary_bytes = 1000).await;
    let bytes: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
    let expected_id = vegdb::util::hex(&sha2::Sha256::digest(&bytes));
    let post = |body: reqwest::Body, ct: &'static str| {
        s.client
            .post(format!("{}{WRITE}/binaer", s.root))
            .headers(WriteServer::headers(&s.writer_token))
            .header("Content-Type", ct)
            .body(body)
            .send()
    };
    let r = post(bytes.clone().into(), "image/png").await.unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["ressursId"],
        expected_id.as_str(),
        "the id is the SHA-256 of the bytes"
    );
    assert!(location.ends_with(&expected_id));
    // the same upload answered in XML: `<binaer ressursId href/>` in the domain namespace
    let r = s
        .client
        .post(format!("{}{WRITE}/binaer", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header("Content-Type", "image/png")
        .header("Accept", "application/xml")
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let text = r.text().await.unwrap();
    assert!(
        text.ends_with(&format!(
            r#"<binaer xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2" ressursId="{expected_id}" href="{location}"/>"#
        )),
        "{text}"
    );
    let (root, x) = vegdb::api::write::xml::parse(text.as_bytes()).unwrap();
    assert_eq!(root, "binaer");
    assert_eq!(x, json!({ "ressursId": expected_id, "href": location }));
    // download: same bytes, same content type
    let r = s
        .client
        .get(format!("{}{WRITE}/binaer/{expected_id}", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "image/png");
    assert_eq!(r.bytes().await.unwrap().as_ref(), bytes.as_slice());
    // multipart: the file part is stored, same bytes give the same id
    let boundary = "XyZ123";
    let mut mp = Vec::new();
    mp.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"beskrivelse\"\r\n\r\nskilt\r\n"
        )
        .as_bytes(),
    );
    mp.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"fil\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n").as_bytes());
    mp.extend_from_slice(&bytes);
    mp.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let r = s
        .client
        .post(format!("{}{WRITE}/binaer", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(mp)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    assert_eq!(
        r.json::<Value>().await.unwrap()["ressursId"],
        expected_id.as_str()
    );
    // limits and errors
    let big = vec![1u8; 1001];
    let r = post(big.into(), "application/octet-stream").await.unwrap();
    assert_eq!(r.status().as_u16(), 413);
    assert!(r.json::<Value>().await.unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("1000"));
    assert_eq!(
        post(Vec::<u8>::new().into(), "text/plain")
            .await
            .unwrap()
            .status()
            .as_u16(),
        400
    );
    for (id, status) in [
        (&"0".repeat(64), 404),
        (&"..%2Fusers.json".to_string(), 404),
    ] {
        let r = s
            .client
            .get(format!("{}{WRITE}/binaer/{id}", s.root))
            .headers(WriteServer::headers(&s.writer_token))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{id}");
    }
    // only writers upload
    let r = s
        .client
        .post(format!("{}{WRITE}/binaer", s.root))
        .headers(WriteServer::headers(&s.sensitive_token))
        .body(vec![1u8, 2, 3])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
}

#[tokio::test]
async fn converted_sosi_geojson_and_sosi_register_once_placed() {
    let s = WriteServer::start().await;
    let (link, _) = usable_link(&s.store.current());
    let doc = json!({"type": "FeatureCollection",
        "crs": {"type": "name", "properties": {"name": "EPSG:4326"}},
        "features": [{"type": "Feature", "id": 1,
            "geometry": {"type": "Point", "coordinates": [10.39, 63.43]},
            "properties": {"objekttypenavn": "Skiltpunkt_95", "Oppsettingsutstyr_1876": "2868",
                "AvstandFraDekkekant_1884": "0,30", "PTEMA": "7001",
                "datafangstdato": "2015-01-05", "kvalitet": {"målemetode": 96, "nøyaktighet": 5}}}]});
    let (st, _, body) = s
        .post_json("/konverter/sosiGeoJson", &s.writer_token, &doc)
        .await;
    assert_eq!(st, 200, "{body}");
    let mut cs: Value = serde_json::from_str(&body).unwrap();
    let o = &cs["registrer"]["vegObjekter"][0];
    assert_eq!(o["typeId"], 95);
    assert!(
        o.get("lokasjon").is_none(),
        "the converter produces no lokasjon"
    );
    // the client adds the placement and registers the converted changeset
    cs["registrer"]["vegObjekter"][0]["lokasjon"] =
        json!({"punkt": [{"lenkeId": link, "posisjon": 0.5}]});
    let status = s.run(&s.writer_token, &cs).await;
    assert_eq!(status["fremdrift"], "UTFØRT_OG_ETTERBEHANDLET", "{status}");
    let id = status["resultat"]["vegObjekter"][0]["nvdbId"]
        .as_u64()
        .unwrap();
    let (_, o) = s
        .read(&format!("/vegobjekter/95/{id}?inkluder=alle"), None)
        .await;
    let wkt = o["geometri"]["wkt"].as_str().unwrap();
    // 10.39 E, 63.43 N lies in Trondheim, near (270 500, 7 041 200) in UTM 33 (Nidarosdomen)
    let xy: Vec<f64> = wkt
        .trim_start_matches("POINT Z (")
        .trim_end_matches(')')
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        (xy[0] - 270_500.0).abs() < 2_000.0 && (xy[1] - 7_041_200.0).abs() < 2_000.0,
        "{wkt}"
    );

    let sosi = ".HODE\n..TEGNSETT ISO8859-1\n..TRANSPAR\n...KOORDSYS 23\n...ORIGO-NØ 0 0\n...ENHET 0.01\n...VERT-DATUM NN54\n.PUNKT 1:\n..OBJTYPE Skiltpunkt_95\n..Oppsettingsutstyr_1876 2868\n..NØH\n704479700 26584700 1000\n.SLUTT\n";
    let r = s
        .client
        .post(format!("{}{WRITE}/konverter/sosi", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .header("Content-Type", "text/plain")
        .body(sosi)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let cs: Value = r.json().await.unwrap();
    assert_eq!(
        cs["registrer"]["vegObjekter"][0]["egenskaper"][0]["enum"],
        json!([2868])
    );
    // malformed input: 400 with the reason
    let r = s
        .client
        .post(format!("{}{WRITE}/konverter/sosi", s.root))
        .headers(WriteServer::headers(&s.writer_token))
        .body(sosi.replace("KOORDSYS 23", "KOORDSYS 32"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.json::<Value>().await.unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("KOORDSYS"));
    let (st, _, body) = s
        .post_json(
            "/konverter/sosiGeoJson",
            &s.writer_token,
            &json!({"type": "Feature"}),
        )
        .await;
    assert_eq!(st, 400, "{body}");
}
