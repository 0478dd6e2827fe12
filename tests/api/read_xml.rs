//! XML on the read API and response revisions. The XML rule (`vegdb::api::xml`) is asserted,
//! not only snapshotted: every XML answer and every XML golden file is parsed here with
//! quick-xml into a plain tree and walked against its JSON twin by an independent checker.

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::Value;

use crate::behaviour::ROUTES;
use crate::server::{golden, TestServer};

/// A parsed XML element.
#[derive(Debug)]
struct Node {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
    text: String,
}

fn parse_xml(text: &str) -> Node {
    use quick_xml::events::{BytesStart, Event};
    use quick_xml::Reader;
    fn open(e: &BytesStart) -> Node {
        Node {
            name: e.name().into_inner().to_string(),
            attrs: e
                .attributes()
                .map(|a| {
                    let a = a.unwrap();
                    (
                        a.key.into_inner().to_string(),
                        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                            .unwrap()
                            .into_owned(),
                    )
                })
                .collect(),
            children: Vec::new(),
            text: String::new(),
        }
    }
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Node> = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => stack.push(open(&e)),
            Event::Empty(e) => {
                let n = open(&e);
                match stack.last_mut() {
                    Some(p) => p.children.push(n),
                    None => return n,
                }
            }
            Event::End(_) => {
                let n = stack.pop().expect("balanced");
                match stack.last_mut() {
                    Some(p) => p.children.push(n),
                    None => return n,
                }
            }
            Event::Text(t) => {
                if let Some(n) = stack.last_mut() {
                    let raw: &str = &t;
                    n.text
                        .push_str(&quick_xml::escape::unescape(raw).expect("valid text"));
                }
            }
            Event::GeneralRef(r) => {
                if let Some(n) = stack.last_mut() {
                    match r.resolve_char_ref().expect("valid reference") {
                        Some(c) => n.text.push(c),
                        None => n.text.push_str(
                            quick_xml::escape::resolve_predefined_entity(&r).expect("known entity"),
                        ),
                    }
                }
            }
            Event::Eof => panic!("document ended early"),
            _ => {}
        }
    }
}

/// Walk `json` and `node` together: the element is `name` (or the entry element carrying it),
/// object fields are the children in order (nulls left out), list items are children named by
/// the singular, scalars are the text as JSON writes them.
fn check(json: &Value, node: &Node, name: &str, path: &str) -> Result<(), String> {
    let here = format!("{path}/{name}");
    if node.name == vegdb::api::xml::ENTRY {
        let key = node
            .attrs
            .iter()
            .find(|(k, _)| k == vegdb::api::xml::ENTRY_KEY);
        if key.map(|(_, v)| v.as_str()) != Some(name) {
            return Err(format!("{here}: entry element with key {key:?}"));
        }
    } else if node.name != name {
        return Err(format!("{here}: element named {}", node.name));
    }
    let expect_children: Vec<(String, &Value)> = match json {
        Value::Object(m) => m
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v))
            .collect(),
        Value::Array(a) => {
            let item = vegdb::api::xml::singular(name).to_string();
            a.iter()
                .filter(|v| !v.is_null())
                .map(|v| (item.clone(), v))
                .collect()
        }
        Value::Null => return Err(format!("{here}: null written")),
        scalar => {
            let text = match scalar {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if !node.children.is_empty() || node.text != text {
                return Err(format!("{here}: text {:?}, expected {text:?}", node.text));
            }
            return Ok(());
        }
    };
    if expect_children.len() != node.children.len() {
        return Err(format!(
            "{here}: {} children, expected {}",
            node.children.len(),
            expect_children.len()
        ));
    }
    if expect_children.is_empty() && !node.text.is_empty() {
        return Err(format!("{here}: text in an empty container"));
    }
    for ((k, v), child) in expect_children.iter().zip(&node.children) {
        check(v, child, k, &here)?;
    }
    Ok(())
}

/// The document's root is `root` and everything below it follows the rule (a top-level null
/// is an empty root).
fn check_document(json: &Value, xml: &str, root: &str) -> Result<(), String> {
    let node = parse_xml(xml);
    if json.is_null() {
        return match (
            node.name == root,
            node.children.is_empty() && node.text.is_empty(),
        ) {
            (true, true) => Ok(()),
            _ => Err(format!("null document: {xml}")),
        };
    }
    check(json, &node, root, "")
}

/// Replace the random test port as `golden` does.
fn normalize_hosts(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("http://127.0.0.1:") {
        out.push_str(&rest[..at]);
        out.push_str("http://HOST");
        rest =
            rest[at + "http://127.0.0.1:".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compare with `tests/golden/<name>.xml` (`VEGDB_UPDATE_GOLDEN=1` rewrites it).
fn golden_xml(name: &str, actual: &str) {
    let actual = normalize_hosts(actual);
    let path = golden_dir().join(format!("{name}.xml"));
    if std::env::var("VEGDB_UPDATE_GOLDEN").is_ok() {
        std::fs::write(&path, &actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}", path.display()));
    assert_eq!(expected, actual, "response differs from {}", path.display());
}

async fn get_with(s: &TestServer, path: &str, accept: &str) -> (u16, String, String) {
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .header("Accept", accept)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, ct, r.text().await.unwrap())
}

/// `/a/b/?x=1` → `/a/b.xml?x=1`
fn with_suffix(path: &str, suffix: &str) -> String {
    let (p, q) = path
        .split_once('?')
        .map_or((path, None), |(p, q)| (p, Some(q)));
    let p = p.trim_end_matches('/');
    match q {
        Some(q) => format!("{p}{suffix}?{q}"),
        None => format!("{p}{suffix}"),
    }
}

#[tokio::test]
async fn every_read_route_answers_xml_by_accept_and_by_suffix() {
    let s = TestServer::start().await;
    let doc = s.get_json("/openapi.json", 200).await;
    let first = s
        .get_json("/vegobjekter/105/?antall=1&inkluder=metadata", 200)
        .await;
    let id = first["objekter"][0]["id"].as_u64().unwrap().to_string();
    let version = first["objekter"][0]["metadata"]["versjon"].to_string();
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() > 20);
    for (template, item) in paths {
        if item.get("get").is_none() {
            continue;
        }
        let (_, example) = ROUTES
            .iter()
            .find(|(t, _)| t == template)
            .unwrap_or_else(|| panic!("no example request for {template}"));
        let example = example
            .replace("100000000", &id)
            .replace("VERSJON", &version);
        if template == "/vegobjekt" {
            // a redirect without body; the Accept header travels to the object
            let (status, ct, body) = get_with(&s, &example, "application/xml").await;
            assert_eq!(status, 200, "{example}: {body}");
            assert!(ct.starts_with("application/xml"), "{example}: {ct}");
            continue;
        }
        let json = s.get_json(&example, 200).await;
        let by_suffix = with_suffix(&example, ".xml");
        for (path, accept) in [
            (example.as_str(), "application/xml"),
            (example.as_str(), "text/xml"),
            (
                example.as_str(),
                "application/vnd.vegvesen.nvdb-v2-rev2+xml",
            ),
            (by_suffix.as_str(), "*/*"),
            (by_suffix.as_str(), "application/json"),
        ] {
            let (status, ct, body) = get_with(&s, path, accept).await;
            assert_eq!(status, 200, "{path} ({accept}): {body}");
            assert!(ct.contains("xml"), "{path} ({accept}): {ct}");
            let root = parse_xml(&body).name;
            check_document(&json, &body, &root)
                .unwrap_or_else(|e| panic!("{path} ({accept}): {e}\n{body}"));
        }
        let (status, ct, _) =
            get_with(&s, &with_suffix(&example, ".json"), "application/xml").await;
        assert_eq!(status, 200, "{example}.json");
        assert!(ct.contains("json"), "{example}.json: {ct}");
    }
}

#[tokio::test]
async fn xml_roots_are_named_by_the_resource_and_pretty_indents() {
    let s = TestServer::start().await;
    for (path, root, item) in [
        (
            "/vegobjekttyper.xml",
            "vegobjekttyper",
            Some("vegobjekttype"),
        ),
        ("/vegobjekttyper/105.xml", "vegobjekttype", None),
        ("/vegobjekttyper/105/2021.xml", "egenskapstype", None),
        ("/omrader/fylker.xml", "fylker", Some("fylke")),
        ("/vegnett/lenker.xml?antall=2", "lenker", Some("objekter")),
        (
            "/vegobjekter/105.xml?antall=2",
            "vegobjekter",
            Some("objekter"),
        ),
        ("/status.xml", "status", Some("datagrunnlag")),
        ("/vegobjekttyper/versjon.xml", "versjon", Some("id")),
    ] {
        let (status, _, body) = get_with(&s, path, "*/*").await;
        assert_eq!(status, 200, "{path}: {body}");
        let n = parse_xml(&body);
        assert_eq!(n.name, root, "{path}");
        if let Some(item) = item {
            assert_eq!(n.children[0].name, item, "{path}");
        }
    }
    let (_, _, pretty) = get_with(&s, "/status.xml?pretty=true", "*/*").await;
    assert!(
        pretty.contains("\n  <datagrunnlag>\n    <sist_oppdatert>"),
        "{pretty}"
    );
    let (_, _, plain) = get_with(&s, "/status.xml", "*/*").await;
    assert!(!plain.contains('\n'));
    // errors keep the API's JSON error shape
    let (status, ct, body) = get_with(&s, "/vegobjekttyper/99999.xml", "*/*").await;
    assert_eq!(status, 404);
    assert!(ct.contains("json"), "{ct}");
    let e: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(e[0]["code"], 4012);
}

#[tokio::test]
async fn xml_golden_files_are_the_rule_applied_to_their_json_twins() {
    let s = TestServer::start().await;
    let first = s.get_json("/vegobjekter/95/?antall=1", 200).await;
    let id = first["objekter"][0]["id"].as_u64().unwrap();
    let cases = [
        (
            "catalog/vegobjekttype_105",
            "/vegobjekttyper/105".to_string(),
            "vegobjekttype",
        ),
        (
            "vegobjekter/skiltpunkt_alle",
            format!("/vegobjekter/95/{id}?inkluder=alle"),
            "vegobjekt",
        ),
        ("omrader/fylker", "/omrader/fylker".to_string(), "fylker"),
        (
            "vegnett/lenker_side",
            "/vegnett/lenker?kommune=5001&antall=2".to_string(),
            "lenker",
        ),
    ];
    std::fs::create_dir_all(golden_dir().join("vegnett")).unwrap();
    for (name, path, _) in &cases {
        golden(name, &s.get_json(path, 200).await);
        let (status, _, xml) = get_with(&s, path, "application/xml").await;
        assert_eq!(status, 200, "{path}");
        golden_xml(name, &xml);
    }
    // the committed files, independently of the server
    for (name, _, root) in &cases {
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(golden_dir().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        let xml = std::fs::read_to_string(golden_dir().join(format!("{name}.xml"))).unwrap();
        check_document(&json, &xml, root).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[tokio::test]
async fn revisions_choose_wkt_tags_counts_and_content_types() {
    let s = TestServer::start().await;
    let path = "/vegnett/lenker?kommune=5001&antall=3";
    let cases = [
        (
            "application/vnd.vegvesen.nvdb-v2-rev0+json",
            "application/vnd.vegvesen.nvdb-v2-rev0+json;charset=utf-8",
            false,
            true,
        ),
        (
            "application/vnd.vegvesen.nvdb-v2+json",
            "application/vnd.vegvesen.nvdb-v2+json;charset=utf-8",
            true,
            true,
        ),
        (
            "application/vnd.vegvesen.nvdb-v2-rev1+json",
            "application/vnd.vegvesen.nvdb-v2-rev1+json;charset=utf-8",
            true,
            false,
        ),
        (
            "application/vnd.vegvesen.nvdb-v2-rev2+json",
            "application/vnd.vegvesen.nvdb-v2-rev2+json;charset=utf-8",
            true,
            false,
        ),
        (
            "application/json",
            "application/json;charset=utf-8",
            true,
            false,
        ),
    ];
    for (accept, content_type, z, total) in cases {
        let (status, ct, body) = get_with(&s, path, accept).await;
        assert_eq!(status, 200, "{accept}");
        assert_eq!(ct, content_type, "{accept}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let wkt = v["objekter"][0]["geometri"]["wkt"].as_str().unwrap();
        assert_eq!(wkt.starts_with("LINESTRING Z ("), z, "{accept}: {wkt}");
        if !z {
            assert!(wkt.starts_with("LINESTRING ("), "{wkt}");
            // still three coordinates per vertex
            let first = wkt["LINESTRING (".len()..].split(',').next().unwrap();
            assert_eq!(first.split_whitespace().count(), 3, "{wkt}");
        }
        assert_eq!(v["metadata"].get("antall").is_some(), total, "{accept}");
    }
    // XML forms name their revision too
    let (_, ct, _) = get_with(&s, path, "application/vnd.vegvesen.nvdb-v2-rev1+xml").await;
    assert_eq!(
        ct,
        "application/vnd.vegvesen.nvdb-v2-rev1+xml;charset=utf-8"
    );
    let (_, ct, _) = get_with(&s, path, "application/vnd.vegvesen.nvdb-v2+xml").await;
    assert_eq!(ct, "application/vnd.vegvesen.nvdb-v2+xml;charset=utf-8");
    // positions and objects follow the same rule
    let link = s.get_json("/vegnett/lenker?antall=1", 200).await;
    let wkt = link["objekter"][0]["geometri"]["wkt"].as_str().unwrap();
    let xy: Vec<&str> = wkt["LINESTRING Z (".len()..]
        .split_whitespace()
        .take(2)
        .collect();
    let pos = &format!("/posisjon?ost={}&nord={}", xy[0], xy[1]);
    let (_, _, rev0) = get_with(&s, pos, "application/vnd.vegvesen.nvdb-v2-rev0+json").await;
    let (_, _, plain) = get_with(&s, pos, "application/vnd.vegvesen.nvdb-v2+json").await;
    let rev0: Value = serde_json::from_str(&rev0).unwrap();
    let plain: Value = serde_json::from_str(&plain).unwrap();
    assert!(rev0[0]["geometri"]["wkt"]
        .as_str()
        .unwrap()
        .starts_with("POINT ("));
    assert!(plain[0]["geometri"]["wkt"]
        .as_str()
        .unwrap()
        .starts_with("POINT Z ("));
    let first = s.get_json("/vegobjekter/105/?antall=1", 200).await;
    let id = first["objekter"][0]["id"].as_u64().unwrap();
    let obj = format!("/vegobjekter/105/{id}");
    let (_, _, rev0) = get_with(&s, &obj, "application/vnd.vegvesen.nvdb-v2-rev0+json").await;
    let rev0: Value = serde_json::from_str(&rev0).unwrap();
    assert!(rev0["geometri"]["wkt"]
        .as_str()
        .unwrap()
        .starts_with("LINESTRING ("));
    let (_, _, plain) = get_with(&s, &obj, "application/vnd.vegvesen.nvdb-v2+json").await;
    let plain: Value = serde_json::from_str(&plain).unwrap();
    assert!(plain["geometri"]["wkt"].as_str().unwrap().contains(" Z ("));
}

#[tokio::test]
async fn revision_0_writes_the_old_importance_text() {
    let s = TestServer::start().await;
    let texts = |v: &Value| -> Vec<String> {
        v["egenskapstyper"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["viktighet_tekst"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, _, newest) = get_with(&s, "/vegobjekttyper/105", "application/json").await;
    let (_, _, plain) = get_with(
        &s,
        "/vegobjekttyper/105",
        "application/vnd.vegvesen.nvdb-v2+json",
    )
    .await;
    let (_, _, rev0) = get_with(
        &s,
        "/vegobjekttyper/105",
        "application/vnd.vegvesen.nvdb-v2-rev0+json",
    )
    .await;
    let newest = texts(&serde_json::from_str(&newest).unwrap());
    assert!(
        newest.iter().any(|t| t == "PÅKREVD_IKKE_ABSOLUTT"),
        "{newest:?}"
    );
    assert_eq!(texts(&serde_json::from_str(&plain).unwrap()), newest);
    let rev0 = texts(&serde_json::from_str(&rev0).unwrap());
    for (old, new) in rev0.iter().zip(&newest) {
        let expect = if new == "PÅKREVD_IKKE_ABSOLUTT" {
            "PÅKREVD"
        } else {
            new.as_str()
        };
        assert_eq!(old, expect);
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        "[a-zæøå_][a-zæøå0-9_]{0,8}",
        Just("0.5@123".to_string()),
        Just("xmlns".to_string()),
        Just(String::new()),
        "[ -~]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1.0e12f64..1.0e12).prop_map(Value::from),
        "[ -~æøåÆØÅ\t\n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Any JSON value, rendered by the serializer, parses back to the same structure.
    #[test]
    fn random_json_follows_the_rule_in_xml(v in json_value(), pretty in any::<bool>()) {
        use vegdb::api::xml::{to_xml, XmlRoot, XmlStyle};
        let xml = String::from_utf8(to_xml(XmlRoot::named("respons"), &v, pretty, XmlStyle::default()).unwrap()).unwrap();
        // pretty printing adds whitespace only between elements, which the checker ignores
        // beside child elements (leaf text is compared exactly)
        let r = check_document(&v, &xml, "respons");
        prop_assert!(r.is_ok(), "{:?}\n{}", r, xml);
    }
}
