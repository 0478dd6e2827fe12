//! The statistics tables over HTTP: grouped object and network statistics against the plain
//! `statistikk` calls and the network's links, every type's row against its own statistics,
//! the CSV answers against the JSON ones (a quoting-aware reader), XML, and the errors.

use serde_json::Value;

use crate::server::TestServer;

/// The records of a CSV text (RFC 4180: quoted fields, doubled quotes, CRLF lines).
fn read_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && record.is_empty(),
        "unterminated: {text}"
    );
    records
}

async fn text(s: &TestServer, path: &str, accept: &str) -> (u16, String, String) {
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .header("Accept", accept)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    (status, ct, r.text().await.unwrap())
}

/// A JSON cell as the CSV writes it.
fn as_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn sum(rows: &Value, member: &str) -> u64 {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r[member].as_u64().unwrap())
        .sum()
}

#[tokio::test]
async fn each_municipality_row_is_the_plain_statistics_of_that_municipality() {
    let s = TestServer::start().await;
    for (t, filter) in [
        (105, ""),
        (105, "&egenskap=2021!=null"),
        (95, "&vegreferanse=K"),
        (241, "&segmentering=false"),
        // the KOSTRA-style network attribute filters
        (
            105,
            "&trafikantgruppe=K&detaljniva=VT,VTKB&adskiltelop=med,nei&sideanlegg=false&konnekteringslenker=false",
        ),
    ] {
        let rows = s
            .get_json(
                &format!("/vegobjekter/{t}/statistikk/gruppert?gruppering=kommune{filter}"),
                200,
            )
            .await;
        let rows = rows.as_array().unwrap();
        assert!(!rows.is_empty(), "{t}{filter}");
        let keys: Vec<u64> = rows
            .iter()
            .map(|r| r["kommune"].as_u64().unwrap())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "rows sorted by key");
        for r in rows {
            let k = r["kommune"].as_u64().unwrap();
            let plain = s
                .get_json(
                    &format!("/vegobjekter/{t}/statistikk?kommune={k}{filter}"),
                    200,
                )
                .await;
            assert_eq!(r["antall"], plain["antall"], "{t} {k}{filter}");
            // each row's whole meters is its length rounded down or up
            let (got, want) = (
                r["strekningslengde"].as_i64().unwrap(),
                plain["strekningslengde"].as_i64().unwrap(),
            );
            assert!((got - want).abs() <= 1, "{t} {k}{filter}: {got} vs {want}");
        }
        let total = s
            .get_json(
                &format!(
                    "/vegobjekter/{t}/statistikk?{}",
                    filter.trim_start_matches('&')
                ),
                200,
            )
            .await;
        if !filter.contains("segmentering=false") {
            let rows = Value::Array(rows.clone());
            assert_eq!(
                sum(&rows, "strekningslengde"),
                total["strekningslengde"].as_u64().unwrap(),
                "{t}{filter}: the groups add up exactly"
            );
        }
    }
}

#[tokio::test]
async fn property_groups_are_the_plain_statistics_of_each_value() {
    let s = TestServer::start().await;
    let rows = s
        .get_json(
            "/vegobjekter/105/statistikk/gruppert?gruppering=egenskap(2021)&kommune=5001",
            200,
        )
        .await;
    let total = s
        .get_json("/vegobjekter/105/statistikk?kommune=5001", 200)
        .await;
    assert_eq!(sum(&rows, "antall"), total["antall"].as_u64().unwrap());
    assert_eq!(
        sum(&rows, "strekningslengde"),
        total["strekningslengde"].as_u64().unwrap()
    );
    let catalog = s.get_json("/vegobjekttyper/105/2021", 200).await;
    for r in rows.as_array().unwrap() {
        let id = r["egenskap_2021"]["enum_id"]
            .as_u64()
            .expect("every 105 has a value");
        let allowed = catalog["tillatte_verdier"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("{id} is an allowed value"));
        assert_eq!(
            r["egenskap_2021"]["verdi"].as_f64(),
            allowed["verdi"].as_f64(),
            "{r}"
        );
        let plain = s
            .get_json(
                &format!("/vegobjekter/105/statistikk?kommune=5001&egenskap=2021={id}"),
                200,
            )
            .await;
        assert_eq!(r["antall"], plain["antall"], "{r}");
    }
}

#[tokio::test]
async fn network_statistics_count_the_links_and_groups_add_up() {
    let s = TestServer::start().await;
    for filter in [
        "",
        "kommune=5001",
        "vegreferanse=K",
        "trafikantgruppe=K&detaljniva=VT,VTKB&adskiltelop=med,nei&sideanlegg=false&konnekteringslenker=false",
    ] {
        let plain = s
            .get_json(&format!("/vegnett/statistikk?{filter}"), 200)
            .await;
        let r = s
            .client
            .get(format!("{}/vegnett/lenker?antall=1&{filter}", s.base))
            .header("Accept", "application/vnd.vegvesen.nvdb-v2+json")
            .send()
            .await
            .unwrap();
        let page: Value = r.json().await.unwrap();
        assert_eq!(plain["antall"], page["metadata"]["antall"], "{filter}");
        for grouping in ["kommune", "vegkategori,vegfase", "typeveg,fylke,region"] {
            let rows = s
                .get_json(
                    &format!("/vegnett/statistikk/gruppert?gruppering={grouping}&{filter}"),
                    200,
                )
                .await;
            assert_eq!(sum(&rows, "antall"), plain["antall"].as_u64().unwrap());
            assert_eq!(
                sum(&rows, "strekningslengde"),
                plain["strekningslengde"].as_u64().unwrap(),
                "{grouping} {filter}"
            );
        }
    }
}

#[tokio::test]
async fn every_type_row_is_that_types_statistics() {
    let s = TestServer::start().await;
    let rows = s
        .get_json("/vegobjekter/statistikk?kommune=5031", 200)
        .await;
    let rows = rows.as_array().unwrap();
    assert!(rows.len() > 5);
    for r in rows {
        let id = r["id"].as_u64().unwrap();
        let plain = s
            .get_json(&format!("/vegobjekter/{id}/statistikk?kommune=5031"), 200)
            .await;
        assert_eq!(r["statistikk"], plain, "{id}");
        assert!(r["href"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/vegobjekter/{id}")));
    }
}

#[tokio::test]
async fn csv_answers_are_the_json_rows() {
    let s = TestServer::start().await;
    for path in [
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune,egenskap(2021)",
        "/vegnett/statistikk/gruppert?gruppering=kontraktsomrade,typeveg",
        "/vegobjekter/statistikk?fylke=50",
    ] {
        let json = s.get_json(path, 200).await;
        let (status, ct, by_accept) = text(&s, path, "text/csv").await;
        assert_eq!(
            (status, ct.as_str()),
            (200, "text/csv;charset=utf-8"),
            "{path}"
        );
        let suffixed = path.replacen('?', ".csv?", 1);
        let (status, _, by_suffix) = text(&s, &suffixed, "application/json").await;
        assert_eq!(status, 200);
        assert_eq!(by_accept, by_suffix, "{path}");
        let records = read_csv(&by_accept);
        let header = &records[0];
        let rows = json.as_array().unwrap();
        assert_eq!(records.len(), rows.len() + 1, "{path}");
        for (record, row) in records[1..].iter().zip(rows) {
            assert_eq!(record.len(), header.len());
            for (name, cell) in header.iter().zip(record) {
                let value = name.split('.').fold(row, |v, k| &v[k]);
                assert_eq!(cell, &as_cell(value), "{path}: {name} of {row}");
            }
        }
    }
    let (_, _, one) = text(&s, "/vegnett/statistikk.csv", "*/*").await;
    let plain = s.get_json("/vegnett/statistikk", 200).await;
    assert_eq!(
        read_csv(&one),
        vec![
            vec!["antall".to_string(), "strekningslengde".to_string()],
            vec![
                plain["antall"].to_string(),
                plain["strekningslengde"].to_string()
            ]
        ]
    );
}

/// A grouped table in compact JSON (written straight from the groups) is, byte for byte, what
/// serde writes of the pretty answer's rows (the rows made and serialized), for every kind of
/// key: numbers, letters, road types, contract names, allowed values.
#[tokio::test]
async fn compact_grouped_json_is_the_serialized_rows() {
    let s = TestServer::start().await;
    for path in [
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune,egenskap(2021)",
        "/vegobjekter/105/statistikk/gruppert?gruppering=kontraktsomrade,vegkategori,egenskap(2021)",
        "/vegobjekter/105/statistikk/gruppert?gruppering=typeveg,vegfase&segmentering=false",
        "/vegobjekter/105/statistikk/gruppert?gruppering=fylke,egenskap(2021)&kommune=5001",
        "/vegnett/statistikk/gruppert?gruppering=kontraktsomrade,typeveg",
        "/vegnett/statistikk/gruppert?gruppering=region,vegavdeling,vegkategori,vegfase",
        "/vegnett/statistikk/gruppert?gruppering=kommune&fylke=99",
    ] {
        let (status, _, compact) = text(&s, path, "application/json").await;
        assert_eq!(status, 200, "{path}: {compact}");
        let (status, _, pretty) = text(&s, &format!("{path}&pretty=true"), "application/json").await;
        assert_eq!(status, 200, "{path}: {pretty}");
        if compact != "[]" {
            assert_ne!(compact, pretty, "{path}: the pretty answer is pretty");
        }
        let rows: Value = serde_json::from_str(&pretty).unwrap();
        assert_eq!(compact, serde_json::to_string(&rows).unwrap(), "{path}");
    }
}

#[tokio::test]
async fn object_lists_come_as_flat_csv_rows() {
    let s = TestServer::start().await;
    let page = s
        .get_json(
            "/vegobjekter/96/?antall=40&inkluder=egenskaper,metadata",
            200,
        )
        .await;
    let (status, ct, body) = text(&s, "/vegobjekter/96.csv?antall=40", "*/*").await;
    assert_eq!((status, ct.as_str()), (200, "text/csv;charset=utf-8"));
    let records = read_csv(&body);
    let header = &records[0];
    assert_eq!(header[..4], ["id", "versjon", "startdato", "sluttdato"]);
    let objects = page["objekter"].as_array().unwrap();
    assert_eq!(records.len(), objects.len() + 1);
    for (record, o) in records[1..].iter().zip(objects) {
        assert_eq!(record[0], o["id"].to_string());
        assert_eq!(record[1], o["metadata"]["versjon"].to_string());
        for p in o["egenskaper"].as_array().unwrap() {
            let Some(i) = header
                .iter()
                .position(|h| Some(h.as_str()) == p["navn"].as_str())
            else {
                continue; // a geometry property
            };
            assert_eq!(
                record[i],
                as_cell(&p["verdi"]),
                "{} of {}",
                p["navn"],
                o["id"]
            );
        }
    }
    // the next page is linked
    let r = s.get("/vegobjekter/96.csv?antall=40").await;
    let link = r.headers()["link"].to_str().unwrap().to_string();
    assert!(
        link.contains("/vegobjekter/96.csv?antall=40&start=") && link.ends_with("rel=\"next\"")
    );
}

#[tokio::test]
async fn xml_rows_carry_the_json_members() {
    let s = TestServer::start().await;
    let (status, ct, body) = text(
        &s,
        "/vegobjekter/105/statistikk/gruppert.xml?gruppering=vegkategori,egenskap(2021)",
        "*/*",
    )
    .await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("application/xml"), "{ct}");
    assert!(body.starts_with("<?xml"), "{body}");
    assert!(body.contains("<gruppert><gruppert><vegkategori>"), "{body}");
    assert!(body.contains("<egenskap_2021><enum_id>"), "{body}");
}

#[tokio::test]
async fn bad_groupings_are_422_in_the_error_shape() {
    let s = TestServer::start().await;
    for path in [
        "/vegobjekter/105/statistikk/gruppert",
        "/vegobjekter/105/statistikk/gruppert?gruppering=",
        "/vegobjekter/105/statistikk/gruppert?gruppering=gate",
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune,kommune",
        "/vegobjekter/105/statistikk/gruppert?gruppering=egenskap(x)",
        "/vegobjekter/105/statistikk/gruppert?gruppering=egenskap(1)",
        "/vegobjekter/105/statistikk/gruppert?gruppering=egenskap(2021",
        // not enumerated
        "/vegobjekter/105/statistikk/gruppert?gruppering=egenskap(5127)",
        "/vegobjekter/105/statistikk/gruppert?gruppering=fylke,kommune,region,vegkategori,vegfase",
        "/vegnett/statistikk/gruppert?gruppering=egenskap(2021)",
        "/vegnett/statistikk/gruppert.csv?gruppering=riksvegrute",
    ] {
        s.expect_error(path, 422, 4005).await;
    }
    s.expect_error(
        "/vegobjekter/105/statistikk/gruppert?gruppering=kommune&antall=3",
        422,
        4013,
    )
    .await;
    s.expect_error("/vegnett/statistikk?start=abc", 422, 4013)
        .await;
    s.expect_error("/vegobjekter/statistikk?egenskap=2021=2726", 422, 4013)
        .await;
    s.expect_error(
        "/vegobjekter/99999/statistikk/gruppert?gruppering=kommune",
        404,
        4012,
    )
    .await;
    // a network attribute given empty names no value: refused, as an unknown one
    for name in ["typeveg", "detaljniva", "trafikantgruppe", "adskiltelop"] {
        s.expect_error(&format!("/vegobjekter/105/statistikk?{name}="), 422, 4006)
            .await;
        s.expect_error(&format!("/vegnett/lenker?{name}=,"), 422, 4006)
            .await;
    }
    // CSV only where a table is
    s.expect_error("/vegobjekttyper.csv", 415, 4001).await;
    s.expect_error("/vegobjekter/105.csv?alle_versjoner=true", 415, 4001)
        .await;
}

#[tokio::test]
async fn a_past_day_groups_that_days_objects() {
    let s = TestServer::start().await;
    let day = "tidspunkt=2016-06-01";
    let rows = s
        .get_json(
            &format!("/vegobjekter/105/statistikk/gruppert?gruppering=kommune&{day}"),
            200,
        )
        .await;
    let plain = s
        .get_json(&format!("/vegobjekter/105/statistikk?{day}"), 200)
        .await;
    let now = s.get_json("/vegobjekter/105/statistikk", 200).await;
    assert_ne!(plain, now, "the day differs from today");
    assert_eq!(
        sum(&rows, "strekningslengde"),
        plain["strekningslengde"].as_u64().unwrap()
    );
    for r in rows.as_array().unwrap() {
        let k = &r["kommune"];
        let p = s
            .get_json(
                &format!("/vegobjekter/105/statistikk?kommune={k}&{day}"),
                200,
            )
            .await;
        assert_eq!(r["antall"], p["antall"], "{k}");
    }
}

/// `polygon=` on the network statistics: the rows meeting a small square (as many as
/// `/vegnett/lenker` lists), measured inside it: at most the square's diagonal per row, less
/// than the longest row's whole length; the groups add up to it.
#[tokio::test]
async fn network_statistics_measure_the_rows_inside_a_polygon() {
    let s = TestServer::start().await;
    let g = crate::server::store().current();
    let n = &g.network;
    let r = (0..n.len())
        .max_by(|&a, &b| n.length_m[a].total_cmp(&n.length_m[b]))
        .unwrap();
    // a square of a fifth of the longest row's length around its middle vertex
    let half = n.length_m[r] / 10.0;
    assert!(half > 5.0, "{}", n.length_m[r]);
    let c = n.geometry(r)[n.geometry(r).len() / 2];
    let (x0, y0, x1, y1) = (c[0] - half, c[1] - half, c[0] + half, c[1] + half);
    let filter = format!(
        "polygon=POLYGON(({x0}%20{y0},{x1}%20{y0},{x1}%20{y1},{x0}%20{y1},{x0}%20{y0}))&srid=25833"
    );
    let plain = s
        .get_json(&format!("/vegnett/statistikk?{filter}"), 200)
        .await;
    let page: Value = s
        .client
        .get(format!("{}/vegnett/lenker?antall=1&{filter}", s.base))
        .header("Accept", "application/vnd.vegvesen.nvdb-v2+json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let antall = plain["antall"].as_u64().unwrap();
    assert!(antall >= 1);
    assert_eq!(plain["antall"], page["metadata"]["antall"], "{plain}");
    let inside = plain["strekningslengde"].as_u64().unwrap();
    let diagonal = 2.0 * half * 2f64.sqrt();
    assert!(
        inside > 0 && inside as f64 <= antall as f64 * diagonal + 1.0,
        "{plain}"
    );
    assert!(
        (inside as f64) < n.length_m[r],
        "{plain}: not cut to the square"
    );
    for grouping in ["kommune", "vegkategori,vegfase"] {
        let rows = s
            .get_json(
                &format!("/vegnett/statistikk/gruppert?gruppering={grouping}&{filter}"),
                200,
            )
            .await;
        assert_eq!(sum(&rows, "antall"), antall);
        assert_eq!(sum(&rows, "strekningslengde"), inside, "{grouping}");
    }
}
