//! Tests of the media negotiation.

use super::*;

#[test]
fn a_request_without_accept_or_suffix_is_negotiated_as_the_rules_say() {
    for (geojson, csv) in [(false, false), (true, false), (false, true), (true, true)] {
        let geojson = Extra { geojson, csv };
        for pretty in [false, true] {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, HeaderValue::from_static("x"));
            let remembered = negotiate_with(&h, pretty, geojson).unwrap();
            let by_rules = negotiate_by_rules(&h, pretty, geojson).unwrap();
            assert_eq!(remembered, by_rules);
            // and the same as asking for anything
            h.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
            assert_eq!(negotiate_with(&h, pretty, geojson).unwrap(), by_rules);
        }
    }
}

#[test]
fn content_types_are_valid_header_values_of_the_negotiated_type() {
    for accept in [
        "application/json",
        "application/xml",
        "application/geo+json",
        "application/vnd.vegvesen.nvdb-v2+json",
        "application/vnd.vegvesen.nvdb-v2+xml",
        "application/vnd.vegvesen.nvdb-v2-rev0+json",
        "application/vnd.vegvesen.nvdb-v2-rev1+xml",
        "application/vnd.vegvesen.nvdb-v2-rev2+json",
    ] {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        let n = negotiate_geo(&h, false).unwrap();
        let ct = n.content_type();
        assert_eq!(ct.to_str().unwrap().split(';').next().unwrap(), accept);
        if !n.geojson {
            assert_eq!(ct.to_str().unwrap(), n.content_type_text());
        }
    }
}

fn neg(accept: Option<&str>, suffix: Option<&str>) -> ApiResult<Negotiated> {
    let mut h = HeaderMap::new();
    if let Some(a) = accept {
        h.insert(header::ACCEPT, HeaderValue::from_str(a).unwrap());
    }
    if let Some(s) = suffix {
        h.insert(SUFFIX_FORMAT, HeaderValue::from_str(s).unwrap());
    }
    negotiate(&h, false)
}

#[test]
fn revisions_and_formats() {
    let n = neg(None, None).unwrap();
    assert_eq!((n.format, n.revision, n.vendor), (Format::Json, 2, false));
    assert_eq!(n.content_type(), "application/json;charset=utf-8");
    let n = neg(Some("application/vnd.vegvesen.nvdb-v2+json"), None).unwrap();
    assert!(n.plain_vendor && n.wkt_z_tag() && n.total_count() && !n.old_importance_text());
    assert!(!n.datetime_with_t());
    let n = neg(Some("application/vnd.vegvesen.nvdb-v2-rev0+json"), None).unwrap();
    assert!(!n.wkt_z_tag() && n.total_count() && n.old_importance_text());
    assert_eq!(
        n.content_type(),
        "application/vnd.vegvesen.nvdb-v2-rev0+json;charset=utf-8"
    );
    let n = neg(Some("application/vnd.vegvesen.nvdb-v2-rev1+xml"), None).unwrap();
    assert_eq!((n.format, n.revision), (Format::Xml, 1));
    assert!(n.wkt_z_tag() && !n.total_count() && !n.datetime_with_t());
    let n = neg(Some("application/vnd.vegvesen.nvdb-v2-rev7+json"), None).unwrap();
    assert_eq!(
        n.content_type(),
        "application/vnd.vegvesen.nvdb-v2-rev2+json;charset=utf-8"
    );
    assert_eq!(neg(Some("text/xml"), None).unwrap().format, Format::Xml);
    assert_eq!(
        neg(Some("application/xml"), None).unwrap().content_type(),
        "application/xml;charset=utf-8"
    );
    assert_eq!(
        neg(Some("text/html,application/xhtml+xml,*/*;q=0.8"), None)
            .unwrap()
            .format,
        Format::Json
    );
    assert_eq!(neg(Some("image/png"), None).unwrap_err().code, 4001);
    // the suffix wins; the revision comes from an Accept range of that format
    let n = neg(
        Some("application/vnd.vegvesen.nvdb-v2-rev1+xml"),
        Some("xml"),
    )
    .unwrap();
    assert_eq!((n.format, n.revision, n.vendor), (Format::Xml, 1, true));
    let n = neg(Some("application/json"), Some("xml")).unwrap();
    assert_eq!((n.format, n.revision), (Format::Xml, 2));
    assert_eq!(
        neg(Some("image/png"), Some("json")).unwrap().format,
        Format::Json
    );
}

#[test]
fn geojson_only_where_negotiated_for() {
    let mut h = HeaderMap::new();
    h.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/geo+json"),
    );
    assert_eq!(negotiate(&h, false).unwrap_err().code, 4001);
    let n = negotiate_geo(&h, false).unwrap();
    assert!(n.geojson && n.format == Format::Json);
    assert_eq!(n.content_type(), GEOJSON);
    let mut h = HeaderMap::new();
    h.insert(SUFFIX_FORMAT, HeaderValue::from_static("geojson"));
    assert!(negotiate_geo(&h, false).unwrap().geojson);
    assert_eq!(negotiate(&h, false).unwrap_err().code, 4001);
    // a v2 client's types never give GeoJSON
    let mut h = HeaderMap::new();
    h.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/vnd.vegvesen.nvdb-v2+json, */*"),
    );
    assert!(!negotiate_geo(&h, false).unwrap().geojson);
}

#[test]
fn static_content_types_are_the_built_ones() {
    for format in [Format::Json, Format::Xml] {
        for (vendor, plain_vendor) in [(false, false), (true, false), (true, true), (false, true)] {
            for revision in 0..=NEWEST_REVISION {
                let n = Negotiated {
                    revision,
                    format,
                    vendor,
                    plain_vendor,
                    ..Negotiated::default_json(false)
                };
                assert_eq!(n.content_type(), n.content_type_text().as_str(), "{n:?}");
            }
        }
    }
}

#[test]
fn resources_name_the_root() {
    let r = Resource::from_path("/vegobjekttyper");
    assert_eq!(
        (r.root().list, r.root().single),
        ("vegobjekttyper", "vegobjekttyper")
    );
    let r = Resource::from_path("/vegobjekter/105/123");
    assert_eq!(
        (r.root().list, r.root().single),
        ("vegobjekter", "vegobjekt")
    );
    assert_eq!(Resource::from_path("/").name(), DEFAULT_ROOT);
    assert_eq!(Resource::from_path("/a%20b").name(), DEFAULT_ROOT);
}
