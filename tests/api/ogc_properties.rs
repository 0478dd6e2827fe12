//! `properties` of the OGC API (Part 6, Property Selection) on `items` and one feature.
//!
//! Oracle: the same request without `properties`. A page with `properties=S` holds the same
//! features in the same order with the same geometry, and each feature's properties are
//! exactly its unselected properties whose name is in S; a feature by id likewise. The
//! selections are random subsets of the names the unselected features carry (every name a
//! feature carries is selectable), some written in another case; unknown names are 400 in the
//! OGC error shape.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::server::TestServer;

fn ogc_root(s: &TestServer) -> String {
    s.base.replace("/nvdb/api/v2", "/ogc")
}

async fn get(s: &TestServer, url: &str) -> (u16, Value) {
    let r = s.client.get(url).send().await.expect("request");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: {e}: {text}"));
    (status, v)
}

async fn get_ok(s: &TestServer, url: &str) -> Value {
    let (status, v) = get(s, url).await;
    assert_eq!(status, 200, "GET {url}: {v}");
    v
}

fn features(page: &Value) -> &Vec<Value> {
    page["features"].as_array().expect("features")
}

/// `props` restricted to the names in `keep`.
fn restricted(props: &Value, keep: &BTreeSet<String>) -> Map<String, Value> {
    props
        .as_object()
        .expect("properties")
        .iter()
        .filter(|(k, _)| keep.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The names the features of `page` carry.
fn carried(page: &Value) -> Vec<String> {
    let mut names = BTreeSet::new();
    for f in features(page) {
        names.extend(
            f["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .cloned(),
        );
    }
    names.into_iter().collect()
}

/// Random selections from `names` (a fixed xorshift sequence, the empty one first): (the
/// names as sent, some upper-cased, and the names they select).
fn selections(names: &[String], n: usize) -> Vec<(Vec<String>, BTreeSet<String>)> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = vec![(Vec::new(), BTreeSet::new())];
    for _ in 0..n {
        let (mut sent, mut kept) = (Vec::new(), BTreeSet::new());
        for _ in 0..1 + next() % 6 {
            let name = &names[(next() % names.len() as u64) as usize];
            sent.push(if next() % 3 == 0 {
                name.to_uppercase()
            } else {
                name.clone()
            });
            kept.insert(name.clone());
        }
        out.push((sent, kept));
    }
    out
}

/// For `collection` (its unselected `base` page at `query`): every selection answers the
/// base page's features with their properties restricted, as a page and one by one (with
/// `item_query`).
async fn check_collection(s: &TestServer, collection: &str, query: &str, item_query: &str) {
    let root = ogc_root(s);
    let items = format!("{root}/collections/{collection}/items?{query}");
    let base = get_ok(s, &items).await;
    let names = carried(&base);
    assert!(names.len() > 3, "{collection}: {names:?}");
    for (sent, kept) in selections(&names, 12) {
        let list = sent.join(",");
        let page = get_ok(s, &format!("{items}&properties={}", urlencode(&list))).await;
        assert_eq!(page["numberMatched"], base["numberMatched"], "{list}");
        assert_eq!(features(&page).len(), features(&base).len(), "{list}");
        for (f, b) in features(&page).iter().zip(features(&base)) {
            assert_eq!(f["id"], b["id"], "{list}");
            assert_eq!(f["geometry"], b["geometry"], "{list}");
            let want = restricted(&b["properties"], &kept);
            assert_eq!(
                f["properties"].as_object(),
                Some(&want),
                "{collection} {list}"
            );
        }
        // one feature by id
        let b = &features(&base)[kept.len() % features(&base).len()];
        let id = match &b["id"] {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        };
        let one = format!("{root}/collections/{collection}/items/{id}");
        let f = get_ok(
            s,
            &format!("{one}?{item_query}properties={}", urlencode(&list)),
        )
        .await;
        assert_eq!(f["geometry"], b["geometry"]);
        let want = restricted(&b["properties"], &kept);
        assert_eq!(f["properties"].as_object(), Some(&want), "{one} {list}");
        if !kept.is_empty() {
            let self_link = f["links"]
                .as_array()
                .expect("links")
                .iter()
                .find(|l| l["rel"] == "self")
                .expect("self");
            assert!(self_link["href"]
                .as_str()
                .expect("href")
                .contains("properties="));
        }
    }
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn selected_properties_are_the_unselected_ones_restricted() {
    let s = TestServer::start().await;
    check_collection(&s, "105", "limit=10000", "").await;
    check_collection(&s, "vegnett", "limit=300", "").await;
    // with a filter, sortby and a crs: the selection changes no feature nor its order
    check_collection(
        &s,
        "105",
        "limit=50&filter=Fartsgrense%20%3E%3D%2060&sortby=-Fartsgrense&crs=http://www.opengis.net/def/crs/EPSG/0/25833",
        "crs=http://www.opengis.net/def/crs/EPSG/0/25833&",
    )
    .await;
}

#[tokio::test]
async fn unknown_properties_are_400_in_the_ogc_shape_and_the_parameter_is_documented() {
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    let first = get_ok(&s, &format!("{root}/collections/105/items?limit=1")).await;
    let id = features(&first)[0]["id"].as_u64().expect("id");
    for path in [
        "/collections/105/items?properties=Fartsgrense,nosuch".to_string(),
        "/collections/105/items?properties=geometry".to_string(),
        format!("/collections/105/items/{id}?properties=Fart"),
        "/collections/vegnett/items?properties=geometri".to_string(),
        "/collections/vegnett/items?properties=Fartsgrense".to_string(),
    ] {
        let (status, body) = get(&s, &format!("{root}{path}")).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["code"], "InvalidParameterValue", "{path}");
        assert!(
            body["description"]
                .as_str()
                .expect("description")
                .contains("properties"),
            "{path}: {body}"
        );
    }
    let conf = get_ok(&s, &format!("{root}/conformance")).await;
    assert!(
        conf["conformsTo"]
            .as_array()
            .expect("conformsTo")
            .iter()
            .any(|c| c
                == "http://www.opengis.net/spec/ogcapi-features-6/1.0/conf/properties-features")
    );
    let api = get_ok(&s, &format!("{root}/api")).await;
    for path in [
        "/collections/{collectionId}/items",
        "/collections/{collectionId}/items/{featureId}",
    ] {
        let params = api["paths"][path]["get"]["parameters"]
            .as_array()
            .expect("parameters");
        let p = params
            .iter()
            .find(|p| p["name"] == "properties")
            .unwrap_or_else(|| panic!("{path} documents properties"));
        assert_eq!(p["explode"], false);
        assert_eq!(p["schema"]["type"], "array");
    }
}
