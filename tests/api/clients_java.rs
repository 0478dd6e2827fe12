//! The official Java client of NVDB API LES v2 (github.com/nvdb-vegdata/nvdb-api-client, branch
//! `V2` = tag nvdb-api-client-1.2.7; not on a package registry we use): the requests it sends and
//! the response fields and JSON types its Gson parsers require.
//!
//! Read from the source (package `no.vegvesen.nvdbapi.client`, file @ the commit read):
//! `gson/GsonUtil` @019bcdb, `gson/DatakatalogVersionParser` @796324b (lines 39-43),
//! `gson/StatusParser` @16e1924, `gson/RoadObjectParser` @06d730f (the V2 `vegsegmenter` parser),
//! `gson/AreaParser` @0d51375, `gson/GeometryParser` @1624cb3, `gson/PlacementParser` @06d730f.
//! The V2 header set (`ClientFactory.apiRevision`, `RequestHeaderFilter`), the V2 `stedfesting`
//! and link-quality names and the V2 paging rule (`GenericResultSet`) are as recorded from the V2
//! branch of the client and the project's api-facts sheet. Each assertion group names the class and
//! method and quotes the source line it stands for (line numbers differ between the V2 and V3
//! histories of the same files).

use chrono::{NaiveDate, NaiveDateTime};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::server::TestServer;

/// `ClientFactory.apiRevision`, put as `Accept` by `RequestHeaderFilter`.
const ACCEPT_REV2: &str = "application/vnd.vegvesen.nvdb-v2-rev2+json";

/// `RequestHeaderFilter`: `Accept` (the revision), `X-Client` (the application's name),
/// `User-Agent`, and `X-Datakatalog-Versjon` on every call but the catalogue's own. (The client also
/// sends `Accept-Encoding: gzip, deflate`; left out here because the test's HTTP client does not
/// decode gzip.)
fn java_headers(catalogue_version: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("Accept", HeaderValue::from_static(ACCEPT_REV2));
    h.insert("X-Client", HeaderValue::from_static("vegdb-client-suite"));
    h.insert("User-Agent", HeaderValue::from_static("nvdbapi-client"));
    if let Some(v) = catalogue_version {
        h.insert("X-Datakatalog-Versjon", HeaderValue::from_str(v).unwrap());
    }
    h
}

struct Java {
    s: TestServer,
    version: String,
}

impl Java {
    /// `ClientFactory.getDatakatalogVersion()`: `GET /vegobjekttyper/versjon` before any data
    /// client; its `versjon` goes into `X-Datakatalog-Versjon`.
    async fn start() -> Java {
        let s = TestServer::start().await;
        let v = get(&s, "/vegobjekttyper/versjon", None).await.1;
        let version = v["versjon"]
            .as_str()
            .expect("versjon is a string")
            .to_string();
        Java { s, version }
    }

    async fn get(&self, path: &str) -> Value {
        get(&self.s, path, Some(&self.version)).await.1
    }
}

/// GET with the Java client's headers; 200 expected (`JerseyHelper.execute` throws on anything
/// else). Returns (response headers, body).
async fn get(s: &TestServer, path: &str, version: Option<&str>) -> (HeaderMap, Value) {
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .headers(java_headers(version))
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.expect("body");
    assert_eq!(status, 200, "GET {path}: {text}");
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
    (headers, body)
}

/// `GsonUtil.parseIntMember`: absent, or a JSON number (`!e.get().isNumber()` throws).
fn int_or_absent(v: &Value, what: &str) {
    assert!(
        v.is_null() || v.is_i64() || v.is_u64(),
        "{what} must be an integer: {v}"
    );
}

/// `GsonUtil.parseDateTimeMember`: `v.contains("T") ? LocalDateTime.parse(v) :
/// dateTimeFormatter.parse(v, LocalDateTime::from)` with `"yyyy-MM-dd HH:mm:ss"`: no zone, no offset.
fn java_local_date_time(v: &Value, what: &str) -> NaiveDateTime {
    let text = v
        .as_str()
        .unwrap_or_else(|| panic!("{what} is a string: {v}"));
    let parsed = if text.contains('T') {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
    } else {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
    };
    parsed.unwrap_or_else(|e| panic!("{what} = {text:?} is not a Java LocalDateTime: {e}"))
}

/// `GsonUtil.parseDateMember`: `LocalDate.parse(s, ofPattern("yyyy-MM-dd"))`.
fn java_local_date(v: &Value, what: &str) {
    let text = v
        .as_str()
        .unwrap_or_else(|| panic!("{what} is a string: {v}"));
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .unwrap_or_else(|e| panic!("{what} = {text:?} is not yyyy-MM-dd: {e}"));
    assert_eq!(text.len(), 10, "{what} = {text:?}");
}

/// `GeometryParser.parse`: `wkt` string, `srid` number, `forenklet`/`egengeometri` booleans.
fn geometry(g: &Value, what: &str) {
    assert!(g["wkt"].is_string(), "{what}.wkt: {g}");
    int_or_absent(&g["srid"], &format!("{what}.srid"));
    for flag in ["forenklet", "egengeometri"] {
        assert!(
            g[flag].is_null() || g[flag].is_boolean(),
            "{what}.{flag}: {g}"
        );
    }
}

#[tokio::test]
async fn client_factory_reads_the_catalogue_version_triple() {
    let s = TestServer::start().await;
    // `DatakatalogVersionParser.parseVersion`: `Integer id = parseIntMember(obj, "id"); String version
    // = parseStringMember(obj, "versjon"); LocalDate date = parseDateMember(obj, "dato")`, unboxed by
    // `new Version(id, ...)`: a missing id is a NullPointerException.
    let (_, v) = get(&s, "/vegobjekttyper/versjon", None).await;
    assert!(v["id"].is_u64(), "versjon.id: {v}");
    assert!(v["versjon"].is_string(), "{v}");
    java_local_date(&v["dato"], "versjon.dato");
    // The same triple as /status.datakatalog.
    let (_, status) = get(&s, "/status", None).await;
    assert_eq!(status["datakatalog"], v);
}

#[tokio::test]
async fn status_client_parses_the_last_update_as_local_time() {
    let java = Java::start().await;
    // `StatusParser.parseStatus`: `JsonObject datagrunnlag = obj.get("datagrunnlag").getAsJsonObject();
    // LocalDateTime date = parseDateTimeMember(datagrunnlag, "sist_oppdatert");` and the catalogue
    // version through `DatakatalogVersionParser.parseVersion`, which needs `id` and `dato`.
    let status = java.get("/status").await;
    let rev2 = status["datagrunnlag"]["sist_oppdatert"].clone();
    java_local_date_time(&rev2, "sist_oppdatert");
    assert!(
        rev2.as_str().unwrap().contains('T'),
        "rev2 writes yyyy-MM-ddTHH:mm:ss: {rev2}"
    );
    assert!(status["datakatalog"]["id"].is_u64(), "{status}");
    // Formatted per revision exactly like metadata.sist_modifisert: the space form before rev2.
    let object = java
        .get("/vegobjekter/105?antall=1&inkluder=metadata")
        .await;
    let modified = &object["objekter"][0]["metadata"]["sist_modifisert"];
    assert_eq!(
        modified.as_str().unwrap().contains('T'),
        rev2.as_str().unwrap().contains('T')
    );
    let mut h = java_headers(None);
    h.insert(
        "Accept",
        HeaderValue::from_static("application/vnd.vegvesen.nvdb-v2-rev1+json"),
    );
    let rev1: Value = java
        .s
        .client
        .get(format!("{}/status", java.s.base))
        .headers(h)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let rev1 = &rev1["datagrunnlag"]["sist_oppdatert"];
    java_local_date_time(rev1, "rev1 sist_oppdatert");
    assert!(
        rev1.as_str().unwrap().contains(' '),
        "rev1 writes yyyy-MM-dd HH:mm:ss: {rev1}"
    );
}

#[tokio::test]
async fn content_type_names_the_revision_served() {
    // The client asks for `ACCEPT_REV2`; the answer names the revision actually served, so
    // a client can tell which field formats it got.
    let java = Java::start().await;
    for path in [
        "/status",
        "/vegobjekttyper/105",
        "/vegobjekter/105?antall=1",
    ] {
        let (headers, _) = get(&java.s, path, Some(&java.version)).await;
        let ct = headers["content-type"].to_str().unwrap();
        assert!(ct.starts_with(ACCEPT_REV2), "{path}: Content-Type {ct}");
    }
}

/// `RoadObjectParser.parse` and the V2 `parseSegment`/`parsePlacement` on one object.
fn road_object(o: &Value, datatypes: &[u64]) {
    // `parseIntMember(obj, "id")`, `"metadata.type.id"`, `"metadata.versjon"`;
    // `parseDateMember(obj, "metadata.startdato")`; `parseDateTimeMember(obj, "metadata.sist_modifisert")`.
    assert!(o["id"].is_u64(), "{o}");
    assert!(o["metadata"]["type"]["id"].is_u64(), "{o}");
    assert!(o["metadata"]["versjon"].is_u64(), "{o}");
    java_local_date(&o["metadata"]["startdato"], "metadata.startdato");
    let modified = java_local_date_time(&o["metadata"]["sist_modifisert"], "sist_modifisert");
    assert!(o["metadata"]["sist_modifisert"]
        .as_str()
        .unwrap()
        .contains('T'));
    let _ = modified;
    // `parseAttribute`: `parseIntMember(obj, "id")`, `parseIntMember(obj, "enum_id")`, `int
    // dataTypeId = parseIntMember(obj, "datatype"); DataType dataType = dataTypes.get(dataTypeId);
    // ... dataType.getJavaType()`: the datatype must be one of /vegobjekttyper/datatyper.
    for e in o["egenskaper"].as_array().expect("egenskaper") {
        assert!(e["id"].is_u64() && e["navn"].is_string(), "{e}");
        int_or_absent(&e["enum_id"], "enum_id");
        let dt = e["datatype"].as_u64().expect("datatype");
        assert!(
            datatypes.contains(&dt),
            "datatype {dt} not in /vegobjekttyper/datatyper"
        );
        assert!(
            e["verdi"].is_string() || e["verdi"].is_number() || e["verdi"].is_boolean(),
            "{e}"
        );
    }
    // `parseAssociation`: `parseIntMember(obj, "type.id")`, `obj.get("vegobjekter").getAsJsonArray()`.
    for rel in ["barn", "foreldre"] {
        for a in o["relasjoner"][rel].as_array().into_iter().flatten() {
            assert!(a["type"]["id"].is_u64(), "{a}");
            assert!(a["vegobjekter"].is_array(), "{a}");
        }
    }
    // `parseLocation`: `parseIntListMember` of kommuner/fylker/regioner/vegavdelinger;
    // `AreaParser.parseContractArea`: `parseIntMember(obj, "nummer")`; `parseRoute`:
    // `parseStringMember(obj, "nummer")`; `parseDoubleMember(obj, "strekningslengde")`.
    let loc = &o["lokasjon"];
    for list in ["kommuner", "fylker", "regioner", "vegavdelinger"] {
        assert!(
            loc[list].as_array().expect(list).iter().all(Value::is_u64),
            "{loc}"
        );
    }
    for k in loc["kontraktsområder"].as_array().into_iter().flatten() {
        assert!(k["nummer"].is_u64() && k["navn"].is_string(), "{k}");
    }
    for r in loc["riksvegruter"].as_array().into_iter().flatten() {
        assert!(r["nummer"].is_string() && r["navn"].is_string(), "{r}");
    }
    assert!(loc["strekningslengde"].is_number(), "{loc}");
    geometry(&o["geometri"], "geometri");
    // `parseSegment`: `PlacementParser.parsePlacement(obj.getAsJsonObject("stedfesting"))`,
    // `GeometryParser.parse(obj.getAsJsonObject("geometri"))`, `parseIntMember` of kommune, fylke,
    // region, vegavdeling and strekningslengde, `obj.has("vegreferanse")`.
    let segments = o["vegsegmenter"]
        .as_array()
        .expect("inkluder=alle has vegsegmenter");
    assert!(!segments.is_empty(), "{o}");
    for seg in segments {
        let st = &seg["stedfesting"];
        assert!(st["veglenkeid"].is_u64(), "stedfesting.veglenkeid: {seg}");
        if st["posisjon"].is_null() {
            assert!(
                st["fra_posisjon"].is_number() && st["til_posisjon"].is_number(),
                "{seg}"
            );
        } else {
            assert!(st["posisjon"].is_number(), "{seg}");
        }
        assert!(st["retning"].is_string(), "stedfesting.retning: {seg}");
        for opt in ["sideposisjon", "felt"] {
            assert!(st[opt].is_null() || st[opt].is_string(), "{seg}");
        }
        geometry(&seg["geometri"], "vegsegment.geometri");
        for n in ["kommune", "fylke", "region", "vegavdeling"] {
            assert!(seg[n].is_u64(), "vegsegment.{n}: {seg}");
        }
        // `parseIntMember` needs a number; Gson truncates a fraction, so any number parses.
        assert!(seg["strekningslengde"].is_number(), "{seg}");
        assert!(seg["vegreferanse"].is_object(), "{seg}");
    }
}

#[tokio::test]
async fn road_object_client_pages_objects_with_inkluder_alle() {
    let java = Java::start().await;
    let datatypes: Vec<u64> = java
        .get("/vegobjekttyper/datatyper")
        .await
        .as_array()
        .expect("datatyper")
        .iter()
        .map(|d| d["id"].as_u64().expect("datatype id"))
        .collect();
    let total = java.get("/vegobjekter/105/statistikk").await["antall"]
        .as_u64()
        .unwrap();
    // `GenericResultSet`: pages with `antall` and `start = metadata.neste.start`; the next page
    // asks for `antall = metadata.returnert`; it stops when `neste.start` is missing or equal to
    // the previous token.
    let mut ids = Vec::new();
    let mut antall = 500;
    let mut start: Option<String> = None;
    loop {
        let mut path = format!("/vegobjekter/105?segmentering=true&inkluder=alle&antall={antall}");
        if let Some(s) = &start {
            path.push_str(&format!("&start={s}"));
        }
        let page = java.get(&path).await;
        for o in page["objekter"].as_array().expect("objekter") {
            road_object(o, &datatypes);
            ids.push(o["id"].as_u64().unwrap());
        }
        let returned = page["metadata"]["returnert"].as_u64().expect("returnert");
        let next = page["metadata"]["neste"]["start"]
            .as_str()
            .map(str::to_string);
        if next.is_none() || next == start || returned == 0 {
            break;
        }
        antall = returned;
        start = next;
        assert!(ids.len() as u64 <= total, "paging repeats objects");
    }
    assert_eq!(ids.len() as u64, total);
    // A single object asked for with `inkluder=alle` parses the same way.
    let one = java
        .get(&format!("/vegobjekter/105/{}?inkluder=alle", ids[0]))
        .await;
    road_object(&one, &datatypes);
}

#[tokio::test]
async fn statistics_and_simplified_geometry_parse() {
    let java = Java::start().await;
    // `RoadObjectParser.parseStatistics`: `int numFound = parseIntMember(obj, "antall"); long length
    // = parseLongMember(obj, "strekningslengde")`; integers as in the documentation.
    let stat = java.get("/vegobjekter/105/statistikk?kommune=5001").await;
    assert!(stat["antall"].is_u64(), "{stat}");
    assert!(
        stat["strekningslengde"].is_u64(),
        "strekningslengde as a whole number: {stat}"
    );
    // `GeometryParser.parse`: `parseBooleanMember(obj, "forenklet")`; the client sends any integer
    // as `geometritoleranse`, and a simplified geometry says so.
    let full = java
        .get("/vegobjekter/105?antall=100&inkluder=geometri")
        .await;
    let simple = java
        .get("/vegobjekter/105?antall=100&inkluder=geometri&geometritoleranse=25")
        .await;
    let vertices = |g: &Value| g["wkt"].as_str().unwrap().matches(',').count() + 1;
    let mut simplified = 0;
    for (f, o) in full["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .zip(simple["objekter"].as_array().unwrap())
    {
        assert_eq!(f["id"], o["id"]);
        geometry(&o["geometri"], "geometri");
        // Marked exactly when vertices were dropped.
        let dropped = vertices(&o["geometri"]) < vertices(&f["geometri"]);
        assert_eq!(o["geometri"]["forenklet"] == true, dropped, "{f}\n{o}");
        assert!(f["geometri"]["forenklet"] != true, "{f}");
        simplified += usize::from(dropped);
    }
    assert!(
        simplified > 0,
        "a tolerance of 25 m simplifies some speed limit line"
    );
}

#[tokio::test]
async fn road_net_client_parses_links() {
    let java = Java::start().await;
    // V2 `RoadNetClient`: `/vegnett/lenker` with `kommune` and `antall`; the link fields the V2
    // `LinkParser` reads (as recorded from the V2 branch: `veglenkeid`, `startposisjon`,
    // `sluttposisjon`, `kortform`, `konnekteringslenke`, `kommune`, `fylke`, `region`,
    // `vegavdeling`, `strekningslengde`, `geometri`) and the geometry quality under the names the
    // Java client uses: `målemetode`, `nøyaktighet`, `målemetodeHøyde`, `nøyaktighetHøyde`,
    // `synbarhet` (`GsonUtil.parseIntMember` needs numbers).
    let page = java.get("/vegnett/lenker?kommune=5001&antall=100").await;
    let links = page["objekter"].as_array().expect("objekter");
    assert!(!links.is_empty());
    for l in links {
        assert!(l["veglenkeid"].is_u64(), "{l}");
        assert!(
            l["startposisjon"].is_number() && l["sluttposisjon"].is_number(),
            "{l}"
        );
        assert!(
            l["kortform"].is_string() && l["konnekteringslenke"].is_boolean(),
            "{l}"
        );
        for n in ["kommune", "fylke", "region", "vegavdeling"] {
            assert!(l[n].is_u64(), "{n}: {l}");
        }
        assert!(l["strekningslengde"].is_number(), "{l}");
        geometry(&l["geometri"], "geometri");
        let q = &l["geometri"]["kvalitet"];
        if !q.is_null() {
            for name in [
                "målemetode",
                "nøyaktighet",
                "målemetodeHøyde",
                "nøyaktighetHøyde",
                "synbarhet",
            ] {
                // Present under every name; a value the link lacks (e.g. a height method) may
                // be null, which `getNode` treats as absent.
                assert!(
                    q.get(name).is_some_and(|v| v.is_null() || v.is_u64()),
                    "geometri.kvalitet.{name}: {q}"
                );
            }
        }
    }
    let one = java
        .get(&format!("/vegnett/lenker/{}", links[0]["veglenkeid"]))
        .await;
    // One link by id: its parts as an array of the same link shape.
    let parts = one.as_array().expect("an array of link parts");
    assert!(!parts.is_empty());
    assert!(
        parts
            .iter()
            .all(|p| p["veglenkeid"] == links[0]["veglenkeid"]),
        "{one}"
    );
}

#[tokio::test]
async fn position_and_road_reference_clients() {
    let java = Java::start().await;
    let link = &java.get("/vegnett/lenker?kommune=5001&antall=1").await["objekter"][0];
    let r = &link["vegreferanse"];
    // `RoadRefRequest.getQueryParam`: `%02d%02d` + category + status + number + `hp` + n + `m` + n.
    let n = |k: &str| {
        r[k].as_u64()
            .unwrap_or_else(|| panic!("vegreferanse.{k}: {r}"))
    };
    let s = |k: &str| {
        r[k].as_str()
            .unwrap_or_else(|| panic!("vegreferanse.{k}: {r}"))
    };
    let text = format!(
        "{:02}{:02}{}{}{}hp{}m{}",
        n("fylke"),
        n("kommune"),
        s("kategori"),
        s("status"),
        n("nummer"),
        n("hp"),
        n("fra_meter")
    );
    let hit = java.get(&format!("/veg?vegreferanse={text}")).await;
    // V2 `RoadPlacementParser`: `vegreferanse`, `veglenke{id, posisjon}`, `geometri`.
    assert!(
        hit["veglenke"]["id"].is_u64() && hit["veglenke"]["posisjon"].is_number(),
        "{hit}"
    );
    geometry(&hit["geometri"], "geometri");
    // `PositionClient`: `/posisjon?nord=..&ost=..` → array; `PlacementParser.parsePosition`:
    // `obj.getAsJsonPrimitive("avstand").getAsDouble()`, `veglenke`, `geometri`.
    let wkt = hit["geometri"]["wkt"].as_str().unwrap();
    let xy: Vec<&str> = wkt[wkt.find('(').unwrap() + 1..]
        .split_whitespace()
        .collect();
    let found = java
        .get(&format!("/posisjon?ost={}&nord={}", xy[0], xy[1]))
        .await;
    let first = &found.as_array().expect("an array")[0];
    assert!(first["avstand"].is_number(), "{first}");
    assert!(first["veglenke"]["id"].is_u64(), "{first}");
    geometry(&first["geometri"], "geometri");
    // `RoadReferenceClient` uses `executeOptional`: 204 (or 404) is "no result". A well-formed
    // reference that matches nothing (an 8-digit meter) is 204, not an error.
    let none = java
        .s
        .client
        .get(format!(
            "{}/veg?vegreferanse=5000Ev6hp1m12345678",
            java.s.base
        ))
        .headers(java_headers(Some(&java.version)))
        .send()
        .await
        .unwrap();
    assert_eq!(
        none.status().as_u16(),
        204,
        "{}",
        none.text().await.unwrap()
    );
}

#[tokio::test]
async fn area_client_parses_areas_with_their_road_object() {
    let java = Java::start().await;
    // `AreaParser.parseMun`/`parseCounty`: `parseStringMember(obj, "navn")`, `int number =
    // parseIntMember(obj, "nummer")`, `kartutsnitt`/`senterpunkt` geometries, and `parseId`:
    // `long fid = parseLongMember(obj, "vegobjekt.id"); int tid = parseIntMember(obj,
    // "vegobjekt.type")`, so the ids are numbers.
    for kind in ["regioner", "fylker", "vegavdelinger", "kommuner"] {
        let areas = java.get(&format!("/omrader/{kind}?inkluder=alle")).await;
        for a in areas.as_array().expect("array") {
            assert!(a["navn"].is_string() && a["nummer"].is_u64(), "{a}");
            // `parseGeometry`: `if (!obj.has(fieldName)) return null;` else `GeometryParser.parse`.
            for g in ["kartutsnitt", "senterpunkt"] {
                if a.get(g).is_some() {
                    geometry(&a[g], g);
                }
            }
            let v = &a["vegobjekt"];
            assert!(
                v["id"].is_u64() && v["type"].is_u64(),
                "{kind}: vegobjekt {{id, type}}: {a}"
            );
        }
    }
    // `parseRoute`: `nummer` a string; `parseContractArea`: `nummer` an integer.
    for r in java.get("/omrader/riksvegruter").await.as_array().unwrap() {
        assert!(r["nummer"].is_string() && r["navn"].is_string(), "{r}");
    }
    for k in java
        .get("/omrader/kontraktsomrader")
        .await
        .as_array()
        .unwrap()
    {
        assert!(k["nummer"].is_u64() && k["navn"].is_string(), "{k}");
    }
}

#[tokio::test]
async fn changes_parser_reads_changed_and_deleted_objects() {
    let java = Java::start().await;
    // `ChangesParser`: `type` and `vegobjekt`, a full object or (deleted) a bare id:
    // `if (vegobjekt.isJsonPrimitive())`.
    // `ChangesRequest` sends `type` (endret/slettet) and `etter`.
    for (kind, deleted) in [("endret", false), ("slettet", true)] {
        let page = java
            .get(&format!(
                "/vegobjekter/105/endringer?type={kind}&etter=2000-01-01&antall=50"
            ))
            .await;
        let items = page["objekter"].as_array().expect("objekter");
        assert!(!items.is_empty(), "{kind}: {page}");
        for c in items {
            assert!(c["type"].is_string(), "{c}");
            if deleted {
                assert!(
                    c["vegobjekt"].is_u64(),
                    "a deleted object is a bare id: {c}"
                );
            } else {
                assert!(c["vegobjekt"]["id"].is_u64(), "{c}");
            }
        }
    }
}
