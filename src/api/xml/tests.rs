use super::*;
use serde_json::json;

fn xml(root: &str, v: &serde_json::Value, pretty: bool) -> String {
    String::from_utf8(to_xml(XmlRoot::named(root), v, pretty, XmlStyle::default()).unwrap())
        .unwrap()
}

const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";

#[test]
fn lists_are_named_by_the_singular() {
    let v =
        json!([{"id": 105, "navn": "Fartsgrense", "egenskapstyper": [{"id": 2021}], "x": null}]);
    assert_eq!(
        xml("vegobjekttyper", &v, false),
        format!("{HEAD}<vegobjekttyper><vegobjekttype><id>105</id><navn>Fartsgrense</navn><egenskapstyper><egenskapstype><id>2021</id></egenskapstype></egenskapstyper></vegobjekttype></vegobjekttyper>")
    );
}

#[test]
fn scalars_are_written_as_json_writes_them_and_escaped() {
    let v = json!({"a": 80.0, "b": 80, "c": true, "d": "x < y & \"z\"", "e": [], "f": {}, "g": ""});
    assert_eq!(
        xml("r", &v, false),
        format!("{HEAD}<r><a>80.0</a><b>80</b><c>true</c><d>x &lt; y &amp; \"z\"</d><e/><f/><g></g></r>")
    );
}

#[test]
fn unknown_list_names_repeat_and_bad_keys_become_entries() {
    let v = json!({"felt": ["1", "2"], "0.5@12": {"x": 1}, "xmlns": 2, "": 3});
    assert_eq!(
        xml("batch", &v, false),
        format!("{HEAD}<batch><felt><felt>1</felt><felt>2</felt></felt><oppføring nøkkel=\"0.5@12\"><x>1</x></oppføring><oppføring nøkkel=\"xmlns\">2</oppføring><oppføring nøkkel=\"\">3</oppføring></batch>")
    );
}

#[test]
fn pretty_indents_two_spaces() {
    let v = json!({"datakatalog": {"id": 2038, "versjon": "2.38"}, "tom": []});
    assert_eq!(
        xml("status", &v, true),
        format!("{HEAD}\n<status>\n  <datakatalog>\n    <id>2038</id>\n    <versjon>2.38</versjon>\n  </datakatalog>\n  <tom/>\n</status>\n")
    );
}

#[test]
fn top_level_scalars_and_single_roots() {
    assert_eq!(
        xml("fremdrift", &json!("UTFØRT"), false),
        format!("{HEAD}<fremdrift>UTFØRT</fremdrift>")
    );
    let root = XmlRoot {
        list: "vegobjekter",
        single: "vegobjekt",
    };
    let one =
        String::from_utf8(to_xml(root, &json!({"id": 1}), false, XmlStyle::default()).unwrap())
            .unwrap();
    assert_eq!(one, format!("{HEAD}<vegobjekt><id>1</id></vegobjekt>"));
    let many =
        String::from_utf8(to_xml(root, &json!([{"id": 1}]), false, XmlStyle::default()).unwrap())
            .unwrap();
    assert_eq!(
        many,
        format!("{HEAD}<vegobjekter><vegobjekt><id>1</id></vegobjekt></vegobjekter>")
    );
}

#[derive(serde::Serialize)]
struct Link {
    rel: &'static str,
    src: String,
}

#[derive(serde::Serialize)]
#[serde(rename = "$liste")]
struct Page {
    objekter: Vec<u32>,
}

#[derive(serde::Serialize)]
enum Shape {
    Point { x: i32 },
    Pair(i32, i32),
    Wrapped(u8),
    Empty,
}

#[test]
fn namespace_and_attributes_by_style() {
    let style = XmlStyle {
        namespace: Some("http://nvdb.vegvesen.no/apiskriv/domain/v2"),
        attributes: &[("ressurs", "rel"), ("ressurs", "src")],
        ..Default::default()
    };
    let links = vec![Link {
        rel: "self",
        src: "http://h/a?b=1&c=\"2\"".into(),
    }];
    let out = String::from_utf8(to_xml(XmlRoot::named("ressurser"), &links, false, style).unwrap())
        .unwrap();
    assert_eq!(
        out,
        format!("{HEAD}<ressurser xmlns=\"http://nvdb.vegvesen.no/apiskriv/domain/v2\"><ressurs rel=\"self\" src=\"http://h/a?b=1&amp;c=&quot;2&quot;\"/></ressurser>")
    );
}

#[test]
fn envelopes_take_the_list_root_and_enums_follow_json() {
    let root = XmlRoot {
        list: "vegobjekter",
        single: "vegobjekt",
    };
    let out = String::from_utf8(
        to_xml(
            root,
            &Page { objekter: vec![1] },
            false,
            XmlStyle::default(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        out,
        format!("{HEAD}<vegobjekter><objekter><objekt>1</objekt></objekter></vegobjekter>")
    );
    let shapes = vec![
        Shape::Point { x: 1 },
        Shape::Pair(2, 3),
        Shape::Wrapped(4),
        Shape::Empty,
    ];
    let out = String::from_utf8(
        to_xml(
            XmlRoot::named("former"),
            &shapes,
            false,
            XmlStyle::default(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        out,
        format!("{HEAD}<former><former><Point><x>1</x></Point></former><former><Pair><Pair>2</Pair><Pair>3</Pair></Pair></former><former><Wrapped>4</Wrapped></former><former>Empty</former></former>")
    );
}

#[test]
fn names_are_checked() {
    for ok in [
        "a",
        "vegobjekttyper",
        "må_ha_mor",
        "kjørefelt_relevant",
        "_x",
        "a-b.c",
    ] {
        assert!(is_xml_name(ok), "{ok}");
    }
    for bad in ["", "1a", "a b", "a:b", "xml", "XMLfoo", "0.5@1", "a<b"] {
        assert!(!is_xml_name(bad), "{bad}");
    }
}

#[test]
fn optional_empty_lists_and_fragments() {
    let style = XmlStyle {
        omit_empty: &["feil"],
        fragment: true,
        ..Default::default()
    };
    let v = json!({"feil": [], "advarsel": [], "vegObjekter": [{"feil": [{"kode": "X"}]}]});
    let out =
        String::from_utf8(to_xml(XmlRoot::named("resultat"), &v, false, style).unwrap()).unwrap();
    assert_eq!(
        out,
        "<resultat><advarsel/><vegObjekter><vegObjekt><feil><feil><kode>X</kode></feil></feil></vegObjekt></vegObjekter></resultat>"
    );
}

#[test]
fn attributes_after_children_go_into_the_start_tag() {
    let style = XmlStyle {
        attributes: &[("a", "x"), ("a", "y"), ("b", "z")],
        ..Default::default()
    };
    // `x` before and `y` after the children; `z` of an empty child; a `>` in a value
    let v = json!({"x": "1", "c": {"b": {"z": "2>"}, "d": "t"}, "e": "3", "y": "q\"<>"});
    let out = String::from_utf8(to_xml(XmlRoot::named("a"), &v, false, style).unwrap()).unwrap();
    assert_eq!(
        out,
        format!(
            "{HEAD}<a x=\"1\" y=\"q&quot;&lt;&gt;\"><c><b z=\"2&gt;\"/><d>t</d></c><e>3</e></a>"
        )
    );
    // nested: the inner element's late attribute lands in its own tag, not the root's
    let v = json!({"b": [{"k": "v", "z": "1"}], "y": "2"});
    let style = XmlStyle {
        attributes: &[("a", "y"), ("b", "z")],
        bare_lists: &["b"],
        ..Default::default()
    };
    let out = String::from_utf8(to_xml(XmlRoot::named("a"), &v, false, style).unwrap()).unwrap();
    assert_eq!(out, format!("{HEAD}<a y=\"2\"><b z=\"1\"><k>v</k></b></a>"));
}

#[test]
fn bare_lists_repeat_their_element() {
    let style = XmlStyle {
        bare_lists: &["verdi", "punkt"],
        ..Default::default()
    };
    let v = json!({"verdi": ["1", "2"], "punkt": [], "egenskaper": [{"verdi": ["3"]}]});
    let out = String::from_utf8(to_xml(XmlRoot::named("e"), &v, true, style).unwrap()).unwrap();
    assert_eq!(
        out,
        format!("{HEAD}\n<e>\n  <verdi>1</verdi>\n  <verdi>2</verdi>\n  <egenskaper>\n    <egenskap>\n      <verdi>3</verdi>\n    </egenskap>\n  </egenskaper>\n</e>\n")
    );
    // a top-level list keeps its root
    let out =
        String::from_utf8(to_xml(XmlRoot::named("verdi"), &json!(["1"]), false, style).unwrap())
            .unwrap();
    assert_eq!(out, format!("{HEAD}<verdi><verdi>1</verdi></verdi>"));
}
