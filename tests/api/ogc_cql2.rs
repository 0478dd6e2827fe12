//! OGC API Features Part 3 (`api/ogc/cql2`, `queryables`): random CQL2 filters, written as
//! cql2-text and as cql2-json, against a brute-force evaluation the test makes itself
//! (three-valued, on the JSON features answered without a filter and the v2 `startdato`);
//! queryables against the features; errors in the OGC shape; and GDAL's OAPIF driver with
//! `-where` against the real binary (without `ogr2ogr` it fails; `VEGDB_SKIP_GDAL=1` skips).

use std::collections::{BTreeMap, BTreeSet};

use geo::Intersects;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use crate::bin_server::BinServer;
use crate::server::TestServer;

const UTM: &str = "http://www.opengis.net/def/crs/EPSG/0/25833";

fn ogc_root(s: &TestServer) -> String {
    s.base.replace("/nvdb/api/v2", "/ogc")
}

/// Every feature of collection `cid` that `query` selects (storage coordinates), by id.
async fn features(
    s: &TestServer,
    cid: &str,
    query: &[(&str, &str)],
) -> Result<BTreeSet<u64>, Value> {
    Ok(feature_docs(s, cid, query)
        .await?
        .iter()
        .map(|f| f["id"].as_u64().expect("id"))
        .collect())
}

async fn feature_docs(
    s: &TestServer,
    cid: &str,
    query: &[(&str, &str)],
) -> Result<Vec<Value>, Value> {
    let mut out = Vec::new();
    let mut url = format!("{}/collections/{cid}/items", ogc_root(s));
    let mut q: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    q.push(("limit".into(), "10000".into()));
    q.push(("crs".into(), UTM.into()));
    loop {
        let full = if q.is_empty() {
            url.clone()
        } else {
            format!("{url}?{}", encode(&q))
        };
        let r = s.client.get(&full).send().await.expect("request");
        let status = r.status().as_u16();
        let doc: Value = r.json().await.expect("json");
        if status != 200 {
            return Err(doc);
        }
        out.extend(
            doc["features"]
                .as_array()
                .expect("features")
                .iter()
                .cloned(),
        );
        match doc["links"].as_array().and_then(|l| {
            l.iter()
                .find(|l| l["rel"] == "next" && l["type"] != "text/html")
        }) {
            Some(next) => {
                url = next["href"].as_str().expect("href").to_string();
                q.clear();
            }
            None => return Ok(out),
        }
    }
}

fn encode(q: &[(String, String)]) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in q {
        ser.append_pair(k, v);
    }
    ser.finish()
}

/// The v2 `startdato` of every object of type `t`.
async fn start_dates(s: &TestServer, t: &str) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let mut path = format!("/vegobjekter/{t}?antall=1000&inkluder=metadata");
    loop {
        let page = s.get_json(&path, 200).await;
        let objects = page["objekter"].as_array().expect("objekter");
        if objects.is_empty() {
            return out;
        }
        for o in objects {
            let d = o["metadata"]["startdato"].as_str().expect("startdato");
            out.insert(o["id"].as_u64().expect("id"), d[..10].to_string());
        }
        let next = page["metadata"]["neste"]["href"].as_str().expect("neste");
        path = next[next.find("/vegobjekter").expect("path")..].to_string();
    }
}

#[derive(Debug, Clone)]
enum Lit {
    Num(f64),
    Text(String),
}

/// A filter the test writes both ways and evaluates itself.
#[derive(Debug, Clone)]
enum T {
    And(Vec<T>),
    Or(Vec<T>),
    Not(Box<T>),
    Cmp(&'static str, String, Lit),
    Like(String, String),
    In(String, Vec<Lit>),
    Between(String, Lit, Lit),
    IsNull(String),
    /// S_INTERSECTS(geometry, BBOX(...)) in 25833.
    Bbox([f64; 4]),
    /// T_AFTER(startdato, DATE(d)) / T_BEFORE.
    StartAfter(String, bool),
    /// T_INTERSECTS(INTERVAL(startdato, sluttdato), INTERVAL(a, b)).
    Valid(String, String),
}

fn lit_text(l: &Lit) -> String {
    match l {
        Lit::Num(n) => n.to_string(),
        Lit::Text(t) => format!("'{}'", t.replace('\'', "''")),
    }
}
fn lit_json(l: &Lit) -> Value {
    match l {
        Lit::Num(n) => json!(n),
        Lit::Text(t) => json!(t),
    }
}
fn prop_text(p: &str) -> String {
    format!("\"{}\"", p.replace('"', "\"\""))
}

fn text(t: &T) -> String {
    match t {
        T::And(v) => format!("({})", v.iter().map(text).collect::<Vec<_>>().join(" AND ")),
        T::Or(v) => format!("({})", v.iter().map(text).collect::<Vec<_>>().join(" OR ")),
        T::Not(x) => format!("NOT ({})", text(x)),
        T::Cmp(op, p, l) => format!("{} {op} {}", prop_text(p), lit_text(l)),
        T::Like(p, pat) => format!(
            "{} LIKE {}",
            prop_text(p),
            lit_text(&Lit::Text(pat.clone()))
        ),
        T::In(p, v) => format!(
            "{} IN ({})",
            prop_text(p),
            v.iter().map(lit_text).collect::<Vec<_>>().join(", ")
        ),
        T::Between(p, a, b) => format!(
            "{} BETWEEN {} AND {}",
            prop_text(p),
            lit_text(a),
            lit_text(b)
        ),
        T::IsNull(p) => format!("{} IS NULL", prop_text(p)),
        T::Bbox(b) => format!(
            "S_INTERSECTS(geometry, BBOX({}, {}, {}, {}))",
            b[0], b[1], b[2], b[3]
        ),
        T::StartAfter(d, after) => format!(
            "{}(startdato, DATE('{d}'))",
            if *after { "T_AFTER" } else { "T_BEFORE" }
        ),
        T::Valid(a, b) => {
            format!("T_INTERSECTS(INTERVAL(startdato, sluttdato), INTERVAL('{a}', '{b}'))")
        }
    }
}

fn cql_json(t: &T) -> Value {
    let p = |p: &str| json!({"property": p});
    match t {
        T::And(v) => json!({"op": "and", "args": v.iter().map(cql_json).collect::<Vec<_>>()}),
        T::Or(v) => json!({"op": "or", "args": v.iter().map(cql_json).collect::<Vec<_>>()}),
        T::Not(x) => json!({"op": "not", "args": [cql_json(x)]}),
        T::Cmp(op, n, l) => json!({"op": op, "args": [p(n), lit_json(l)]}),
        T::Like(n, pat) => json!({"op": "like", "args": [p(n), pat]}),
        T::In(n, v) => {
            json!({"op": "in", "args": [p(n), v.iter().map(lit_json).collect::<Vec<_>>()]})
        }
        T::Between(n, a, b) => json!({"op": "between", "args": [p(n), lit_json(a), lit_json(b)]}),
        T::IsNull(n) => json!({"op": "isNull", "args": [p(n)]}),
        T::Bbox(b) => json!({"op": "s_intersects", "args": [p("geometry"), {"bbox": b}]}),
        T::StartAfter(d, after) => {
            json!({"op": if *after { "t_after" } else { "t_before" }, "args": [p("startdato"), {"date": d}]})
        }
        T::Valid(a, b) => {
            json!({"op": "t_intersects", "args": [{"interval": [p("startdato"), p("sluttdato")]}, {"interval": [a, b]}]})
        }
    }
}

/// CQL2 LIKE with `%` and `_` (the test's patterns have no escapes).
fn like(pat: &[char], s: &[char]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some(('%', rest)) => (0..=s.len()).any(|i| like(rest, &s[i..])),
        Some(('_', rest)) => !s.is_empty() && like(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && like(rest, &s[1..]),
    }
}

fn cmp(v: Option<&Value>, op: &str, l: &Lit) -> Option<bool> {
    let ord = match (v?, l) {
        (Value::Number(x), Lit::Num(y)) => x.as_f64()?.partial_cmp(y)?,
        (Value::String(x), Lit::Text(y)) => x.as_str().cmp(y.as_str()),
        _ => return None,
    };
    use std::cmp::Ordering::*;
    Some(match op {
        "=" => ord == Equal,
        "<>" => ord != Equal,
        "<" => ord == Less,
        ">" => ord == Greater,
        "<=" => ord != Greater,
        _ => ord != Less,
    })
}

/// The test's own three-valued evaluation on one feature.
fn eval(t: &T, props: &Map<String, Value>, geom: Option<&geo::Geometry<f64>>) -> Option<bool> {
    let get = |p: &str| props.get(p).filter(|v| !v.is_null());
    match t {
        T::And(v) => {
            let r: Vec<Option<bool>> = v.iter().map(|x| eval(x, props, geom)).collect();
            if r.contains(&Some(false)) {
                Some(false)
            } else if r.iter().all(|x| *x == Some(true)) {
                Some(true)
            } else {
                None
            }
        }
        T::Or(v) => {
            let r: Vec<Option<bool>> = v.iter().map(|x| eval(x, props, geom)).collect();
            if r.contains(&Some(true)) {
                Some(true)
            } else if r.iter().all(|x| *x == Some(false)) {
                Some(false)
            } else {
                None
            }
        }
        T::Not(x) => eval(x, props, geom).map(|b| !b),
        T::Cmp(op, p, l) => cmp(get(p), op, l),
        T::Like(p, pat) => match get(p)? {
            Value::String(s) => Some(like(
                &pat.chars().collect::<Vec<_>>(),
                &s.chars().collect::<Vec<_>>(),
            )),
            _ => None,
        },
        T::In(p, v) => {
            let r: Vec<Option<bool>> = v.iter().map(|l| cmp(get(p), "=", l)).collect();
            if r.contains(&Some(true)) {
                Some(true)
            } else if r.iter().all(|x| *x == Some(false)) {
                Some(false)
            } else {
                None
            }
        }
        T::Between(p, a, b) => match (cmp(get(p), ">=", a), cmp(get(p), "<=", b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        T::IsNull(p) => Some(get(p).is_none()),
        T::Bbox(b) => Some(geom.is_some_and(|g| {
            g.intersects(&geo::Rect::new(
                geo::coord! {x: b[0], y: b[1]},
                geo::coord! {x: b[2], y: b[3]},
            ))
        })),
        T::StartAfter(d, after) => {
            let s = get("startdato")?.as_str()?;
            Some(if *after {
                s > d.as_str()
            } else {
                s < d.as_str()
            })
        }
        // today's objects have no sluttdato: their validity is open
        T::Valid(_, b) => Some(get("startdato")?.as_str()? <= b.as_str()),
    }
}

fn geometry(g: &Value) -> Option<geo::Geometry<f64>> {
    let c = |v: &Value| geo::coord! {x: v[0].as_f64().expect("x"), y: v[1].as_f64().expect("y")};
    let line = |v: &Value| geo::LineString(v.as_array().expect("line").iter().map(c).collect());
    let poly = |v: &Value| {
        let rings: Vec<geo::LineString<f64>> =
            v.as_array().expect("rings").iter().map(line).collect();
        geo::Polygon::new(rings[0].clone(), rings[1..].to_vec())
    };
    let k = &g["coordinates"];
    Some(match g["type"].as_str()? {
        "Point" => geo::Geometry::Point(geo::Point(c(k))),
        "LineString" => geo::Geometry::LineString(line(k)),
        "MultiLineString" => geo::Geometry::MultiLineString(geo::MultiLineString(
            k.as_array().expect("lines").iter().map(line).collect(),
        )),
        "Polygon" => geo::Geometry::Polygon(poly(k)),
        "MultiPolygon" => geo::Geometry::MultiPolygon(geo::MultiPolygon(
            k.as_array().expect("polygons").iter().map(poly).collect(),
        )),
        other => panic!("geometry type {other}"),
    })
}

/// The queryable properties seen on the features, with their values.
fn seen_values(fs: &[Value]) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for f in fs {
        for (k, v) in f["properties"].as_object().expect("properties") {
            let skip = [
                "vegobjekttype",
                "vegobjekttypenavn",
                "egengeometri",
                "startdato",
            ];
            if skip.contains(&k.as_str()) || v.is_boolean() {
                continue;
            }
            if k.ends_with("_id") && f["properties"].get(&k[..k.len() - 3]).is_some() {
                continue;
            }
            out.entry(k.clone()).or_default().push(v.clone());
        }
    }
    out
}

fn random_lit(rng: &mut impl Rng, seen: &[Value]) -> Lit {
    let v = &seen[rng.random_range(0..seen.len())];
    match v {
        Value::Number(n) => {
            let n = n.as_f64().expect("number");
            match rng.random_range(0..4) {
                0 => Lit::Num(n + 1.0),
                1 => Lit::Num(n - 0.5),
                _ => Lit::Num(n),
            }
        }
        Value::String(s) => Lit::Text(s.clone()),
        other => Lit::Text(other.to_string()),
    }
}

const DAYS: &[&str] = &[
    "1990-01-01",
    "2010-06-15",
    "2015-01-01",
    "2018-03-01",
    "2020-12-31",
    "2024-01-01",
];

fn random_leaf(rng: &mut impl Rng, seen: &BTreeMap<String, Vec<Value>>, fs: &[Value]) -> T {
    let keys: Vec<&String> = seen.keys().collect();
    let p = keys[rng.random_range(0..keys.len())].clone();
    let vals = &seen[&p];
    let l = random_lit(rng, vals);
    match rng.random_range(0..10) {
        0 => {
            let ops = ["=", "<>", "<", ">", "<=", ">="];
            T::Cmp(ops[rng.random_range(0..ops.len())], p, l)
        }
        1 | 2 => T::Cmp("=", p, l),
        3 => T::In(
            p,
            (0..rng.random_range(1..4))
                .map(|_| random_lit(rng, vals))
                .collect(),
        ),
        4 => {
            let (a, b) = (random_lit(rng, vals), random_lit(rng, vals));
            T::Between(p, a, b)
        }
        5 => match l {
            Lit::Text(s) => {
                let cs: Vec<char> = s.chars().collect();
                let cut = rng.random_range(0..=cs.len());
                let pat = match rng.random_range(0..3) {
                    0 => format!("{}%", cs[..cut].iter().collect::<String>()),
                    1 => format!("%{}", cs[cut..].iter().collect::<String>()),
                    _ => cs
                        .iter()
                        .enumerate()
                        .map(|(i, c)| if i == cut { '_' } else { *c })
                        .collect(),
                };
                T::Like(p, pat.replace('\\', ""))
            }
            l => T::Cmp(">=", p, l),
        },
        6 => T::IsNull(p),
        7 => {
            let f = &fs[rng.random_range(0..fs.len())];
            let (x, y) = first_xy(&f["geometry"]);
            let r = rng.random_range(10.0..3000.0);
            T::Bbox([x - r, y - r, x + r * 0.5, y + r * 0.7])
        }
        8 => T::StartAfter(
            DAYS[rng.random_range(0..DAYS.len())].into(),
            rng.random_bool(0.5),
        ),
        _ => T::Valid(DAYS[0].into(), DAYS[rng.random_range(0..DAYS.len())].into()),
    }
}

fn first_xy(g: &Value) -> (f64, f64) {
    let mut v = &g["coordinates"];
    while v[0].is_array() {
        v = &v[0];
    }
    (v[0].as_f64().unwrap_or(0.0), v[1].as_f64().unwrap_or(0.0))
}

fn random_expr(
    rng: &mut impl Rng,
    seen: &BTreeMap<String, Vec<Value>>,
    fs: &[Value],
    depth: u32,
) -> T {
    if depth == 0 || rng.random_bool(0.4) {
        return random_leaf(rng, seen, fs);
    }
    let n = rng.random_range(2..4);
    let kids: Vec<T> = (0..n)
        .map(|_| random_expr(rng, seen, fs, depth - 1))
        .collect();
    match rng.random_range(0..3) {
        0 => T::And(kids),
        1 => T::Or(kids),
        _ => T::Not(Box::new(kids.into_iter().next().expect("kid"))),
    }
}

/// The three object collections with the most features.
async fn busiest_collections(s: &TestServer) -> Vec<String> {
    let cols = s
        .client
        .get(format!("{}/collections", ogc_root(s)))
        .send()
        .await
        .expect("collections")
        .json::<Value>()
        .await
        .expect("json");
    let mut counted = Vec::new();
    for c in cols["collections"].as_array().expect("collections") {
        let id = c["id"].as_str().expect("id");
        if id == "vegnett" {
            continue;
        }
        let page: Value = s
            .client
            .get(format!("{}/collections/{id}/items?limit=1", ogc_root(s)))
            .send()
            .await
            .expect("items")
            .json()
            .await
            .expect("json");
        counted.push((
            page["numberMatched"].as_u64().expect("numberMatched"),
            id.to_string(),
        ));
    }
    counted.sort();
    counted
        .iter()
        .rev()
        .take(3)
        .map(|(_, id)| id.clone())
        .collect()
}

#[tokio::test]
async fn random_filters_answer_what_a_brute_force_evaluation_selects() {
    let s = TestServer::start().await;
    for cid in busiest_collections(&s).await {
        let mut fs = feature_docs(&s, &cid, &[]).await.expect("all features");
        let starts = start_dates(&s, &cid).await;
        for f in &mut fs {
            let id = f["id"].as_u64().expect("id");
            f["properties"]["startdato"] = json!(starts[&id]);
        }
        let seen = seen_values(&fs);
        let geoms: Vec<Option<geo::Geometry<f64>>> =
            fs.iter().map(|f| geometry(&f["geometry"])).collect();
        for seed in 0..40u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let t = random_expr(&mut rng, &seen, &fs, 2);
            let expected: BTreeSet<u64> = fs
                .iter()
                .zip(&geoms)
                .filter(|(f, g)| {
                    eval(
                        &t,
                        f["properties"].as_object().expect("properties"),
                        g.as_ref(),
                    ) == Some(true)
                })
                .map(|(f, _)| f["id"].as_u64().expect("id"))
                .collect();
            let as_text = text(&t);
            let got = features(&s, &cid, &[("filter", &as_text), ("filter-crs", UTM)])
                .await
                .unwrap_or_else(|e| panic!("{cid} seed {seed}: {as_text}: {e}"));
            assert_eq!(got, expected, "{cid} seed {seed}: {as_text}");
            let as_json = cql_json(&t).to_string();
            let got = features(
                &s,
                &cid,
                &[
                    ("filter", &as_json),
                    ("filter-lang", "cql2-json"),
                    ("filter-crs", UTM),
                ],
            )
            .await
            .unwrap_or_else(|e| panic!("{cid} seed {seed}: {as_json}: {e}"));
            assert_eq!(got, expected, "{cid} seed {seed}: {as_json}");
        }
    }
}

#[tokio::test]
async fn queryables_name_what_the_features_carry_and_errors_are_400() {
    let s = TestServer::start().await;
    let root = ogc_root(&s);
    let q: Value = s
        .client
        .get(format!("{root}/collections/105/queryables"))
        .send()
        .await
        .expect("queryables")
        .json()
        .await
        .expect("json");
    assert_eq!(q["type"], "object");
    let props = q["properties"].as_object().expect("properties");
    assert_eq!(props["geometry"]["format"], "geometry-any");
    // every property a feature carries (but the ids of enumerated values) is a queryable,
    // with the JSON type of its values, and enumerated values among the allowed ones
    let fs = feature_docs(&s, "105", &[]).await.expect("features");
    for (k, vals) in seen_values(&fs) {
        let schema = &props
            .get(&k)
            .unwrap_or_else(|| panic!("{k} is not a queryable"))["type"];
        for v in &vals {
            let kind = if v.is_number() {
                ["number", "integer"]
            } else {
                ["string", "string"]
            };
            assert!(
                kind.contains(&schema.as_str().expect("type")),
                "{k}: {v} vs {schema}"
            );
            if let Some(allowed) = props[&k]["enum"].as_array() {
                assert!(allowed.contains(v), "{k}: {v} not in its enum");
            }
        }
    }
    let conf: Value = s
        .client
        .get(format!("{root}/conformance"))
        .send()
        .await
        .expect("conformance")
        .json()
        .await
        .expect("json");
    for c in [
        "ogcapi-features-3/1.0/conf/filter",
        "cql2/1.0/conf/cql2-text",
        "cql2/1.0/conf/cql2-json",
    ] {
        assert!(conf["conformsTo"].to_string().contains(c), "{c}");
    }
    for (filter, lang) in [
        ("Fartsgrense = ", "cql2-text"),
        ("nosuchproperty = 1", "cql2-text"),
        ("Fartsgrense = 80 AND", "cql2-text"),
        ("S_INTERSECTS(geometry, POLYGON((1 2, 3)))", "cql2-text"),
        ("{\"op\": \"=\", \"args\": [1]}", "cql2-json"),
        ("{\"op\": \"nope\", \"args\": [1, 2]}", "cql2-json"),
        ("Fartsgrense = 80", "sql"),
        (&"(".repeat(100), "cql2-text"),
    ] {
        let e = features(&s, "105", &[("filter", filter), ("filter-lang", lang)])
            .await
            .expect_err(filter);
        assert_eq!(e["code"], "InvalidParameterValue", "{filter}: {e}");
    }
    let e = features(&s, "vegnett", &[("filter", "nvdbId = 1")])
        .await
        .expect_err("vegnett");
    assert_eq!(e["code"], "InvalidParameterValue");
    // a polygon crossing itself (a bow tie in lon/lat) is refused, not answered
    for (filter, lang) in [
        (
            "S_INTERSECTS(geometry, POLYGON((10.5 63.3, 10.6 63.4, 10.6 63.3, 10.5 63.4, 10.5 63.3)))",
            "cql2-text",
        ),
        (
            r#"{"op":"s_intersects","args":[{"property":"geometry"},{"type":"Polygon","coordinates":[[[10.5,63.3],[10.6,63.4],[10.6,63.3],[10.5,63.4],[10.5,63.3]]]}]}"#,
            "cql2-json",
        ),
    ] {
        let e = features(&s, "105", &[("filter", filter), ("filter-lang", lang)])
            .await
            .expect_err(filter);
        assert_eq!(e["code"], "InvalidParameterValue", "{filter}: {e}");
        let d = e["description"].as_str().expect("description");
        assert!(d.contains("crosses or touches itself"), "{filter}: {d}");
    }
    // a hole outside its exterior, and a hole crossing it: simple rings, not valid together
    for filter in [
        "S_INTERSECTS(geometry, POLYGON((10.5 63.3, 10.6 63.3, 10.6 63.4, 10.5 63.4, 10.5 63.3), (10.7 63.3, 10.8 63.3, 10.8 63.4, 10.7 63.3)))",
        "S_INTERSECTS(geometry, POLYGON((10.5 63.3, 10.6 63.3, 10.6 63.4, 10.5 63.4, 10.5 63.3), (10.55 63.35, 10.7 63.35, 10.7 63.37, 10.55 63.35)))",
    ] {
        let e = features(&s, "105", &[("filter", filter), ("filter-lang", "cql2-text")])
            .await
            .expect_err(filter);
        assert_eq!(e["code"], "InvalidParameterValue", "{filter}: {e}");
        let d = e["description"].as_str().expect("description");
        assert!(d.contains("not valid together"), "{filter}: {d}");
    }
}

#[tokio::test]
async fn gdal_sends_where_as_a_cql2_filter_and_gets_the_servers_answer() {
    if std::env::var("VEGDB_SKIP_GDAL").is_ok_and(|v| v == "1") {
        eprintln!("VEGDB_SKIP_GDAL=1: GDAL test skipped");
        return;
    }
    let server = BinServer::start(&[]).await;
    let root = server.root.clone();
    let client = reqwest::Client::new();
    for (where_, filter) in [
        ("Fartsgrense = 80", "Fartsgrense = 80"),
        (
            "Fartsgrense >= 60 AND NOT (Fartsgrense = 70)",
            "Fartsgrense >= 60 AND NOT Fartsgrense = 70",
        ),
        (
            "Fartsgrense < 50 OR Fartsgrense > 90",
            "Fartsgrense < 50 OR Fartsgrense > 90",
        ),
    ] {
        let expected: Value = client
            .get(format!(
                "{root}/ogc/collections/105/items?{}",
                encode(&[
                    ("filter".into(), filter.into()),
                    ("limit".into(), "10000".into())
                ])
            ))
            .send()
            .await
            .expect("items")
            .json()
            .await
            .expect("json");
        let expected: BTreeSet<u64> = expected["features"]
            .as_array()
            .expect("features")
            .iter()
            .map(|f| f["id"].as_u64().expect("id"))
            .collect();
        assert!(!expected.is_empty(), "{filter} selects something");
        let src = format!("OAPIF:{root}/ogc/collections/105");
        let w = where_.to_string();
        let (log, copy) = tokio::task::spawn_blocking(move || {
            let dir = tempfile::tempdir().expect("temp dir");
            let out = dir.path().join("out.geojson");
            let out_s = out.to_str().expect("utf-8").to_string();
            let o = std::process::Command::new("ogr2ogr")
                .args(["--debug", "on", "-f", "GeoJSON", &out_s, &src, "-where", &w])
                .output()
                .expect("ogr2ogr runs (install Debian gdal-bin, or VEGDB_SKIP_GDAL=1)");
            let log = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(o.status.success(), "ogr2ogr failed: {log}");
            let copy: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("output"))
                .expect("GeoJSON");
            (log, copy)
        })
        .await
        .expect("gdal");
        // GDAL asked the server (it did not filter the whole collection itself)
        assert!(
            log.lines()
                .any(|l| l.contains("Fetch(") && l.contains("filter=")),
            "GDAL did not send a filter for {where_}:\n{log}"
        );
        let got: BTreeSet<u64> = copy["features"]
            .as_array()
            .expect("features")
            .iter()
            .map(|f| f["properties"]["nvdbId"].as_u64().expect("nvdbId"))
            .collect();
        assert_eq!(got, expected, "{where_}");
    }
}

/// The test's own order of two property values: numbers by value, texts by bytes, missing last.
fn value_order(a: Option<&Value>, b: Option<&Value>) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a.filter(|v| !v.is_null()), b.filter(|v| !v.is_null())) {
        (None, None) => Equal,
        (None, _) => Greater,
        (_, None) => Less,
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            x.as_f64().expect("x").total_cmp(&y.as_f64().expect("y"))
        }
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (x, y) => panic!("mixed values {x:?} {y:?}"),
    }
}

#[tokio::test]
async fn sortby_orders_as_a_stable_sort_of_the_unsorted_answer() {
    let s = TestServer::start().await;
    for cid in busiest_collections(&s).await {
        let fs = feature_docs(&s, &cid, &[]).await.expect("all features");
        let keys: Vec<String> = seen_values(&fs).into_keys().collect();
        for seed in 0..6u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let chosen: Vec<(String, bool)> = (0..rng.random_range(1..3))
                .map(|_| {
                    (
                        keys[rng.random_range(0..keys.len())].clone(),
                        rng.random_bool(0.5),
                    )
                })
                .collect();
            let sortby = chosen
                .iter()
                .map(|(k, d)| format!("{}\"{k}\"", if *d { "-" } else { "+" }))
                .collect::<Vec<_>>()
                .join(",");
            let mut expected = fs.clone();
            expected.sort_by(|a, b| {
                for (k, d) in &chosen {
                    let o = value_order(a["properties"].get(k), b["properties"].get(k));
                    let o = if *d { o.reverse() } else { o };
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
                std::cmp::Ordering::Equal
            });
            let expected: Vec<u64> = expected
                .iter()
                .map(|f| f["id"].as_u64().expect("id"))
                .collect();
            let got: Vec<u64> = feature_docs(&s, &cid, &[("sortby", &sortby)])
                .await
                .unwrap_or_else(|e| panic!("{cid} sortby={sortby}: {e}"))
                .iter()
                .map(|f| f["id"].as_u64().expect("id"))
                .collect();
            assert_eq!(got, expected, "{cid} sortby={sortby}");
        }
    }
    let e = features(&s, "105", &[("sortby", "geometry")])
        .await
        .expect_err("geometry");
    assert_eq!(e["code"], "InvalidParameterValue");
    let e = features(&s, "105", &[("sortby", "nosuch")])
        .await
        .expect_err("nosuch");
    assert_eq!(e["code"], "InvalidParameterValue");
}
