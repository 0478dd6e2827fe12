//! `tidspunkt`, `alle_versjoner` and the version endpoints on a generation with history, made
//! here: the tiny generated dataset's tables, with closed versions added through
//! `GenerationBuilder::write_history`, served by the real server. Every expectation comes from
//! the version rows written (a brute-force "valid at t" over them) or from today's answers of
//! the objects whose values a closed version copies, never from the code under test.
//!
//! The history written, on the type with the most objects (`T`) and one road link:
//! - every third object `a` changed on day `CHANGE` (2020-01-01): its current version (its
//!   number one higher) starts then; its closed version, valid from `OLD_START` until
//!   `CHANGE`, is a copy of another object `b`'s row (so its values are `b`'s today);
//! - closed objects (new ids) valid from `OLD_START` until `CHANGE` only;
//! - the rows of one link `L` start on `CHANGE`; before, a closed link `L'` (a new id) with
//!   the same geometry lay there, from `OLD_START` until `CHANGE`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::time::today;
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::builder::{Description, GenerationBuilder};
use vegdb::snapshot::columns::{Days, ObjectTable, RoadNetwork, OPEN_END};
use vegdb::snapshot::store::DataDir;

use crate::server::{tiny_generation_dir, TestServer};

/// 2020-01-01 and 2010-01-01 as days since 1970.
pub(crate) const CHANGE: Days = 18262;
const OLD_START: Days = 14610;
pub(crate) const BEFORE: &str = "2015-06-01";
pub(crate) const AFTER: &str = "2021-06-01";
const CLOSED_OBJECTS: u64 = 5;

/// What the test wrote: every version row (type T), the changed objects with the object whose
/// values their closed version copies, the closed objects, and the replaced link.
pub(crate) struct History {
    pub(crate) tid: u32,
    /// (id, version, start, end) of every version row of T.
    pub(crate) versions: Vec<(u64, u32, Days, Days)>,
    /// (a, b): a's closed version copies b's row.
    pub(crate) changed: Vec<(u64, u64)>,
    pub(crate) closed: Vec<u64>,
    pub(crate) link: u64,
    pub(crate) old_link: u64,
    /// A point on the link's first segment (UTM 33).
    pub(crate) point: (f64, f64),
}

struct Fixture {
    history: History,
    store: Arc<GenerationStore>,
}

pub(crate) fn valid_at(start: Days, end: Days, day: Days) -> bool {
    start <= day && (end == OPEN_END || day < end)
}

pub(crate) fn day(text: &str) -> Days {
    let d = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap();
    (d - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as Days
}

fn date(d: Days) -> String {
    (chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + chrono::Duration::days(d as i64))
        .format("%Y-%m-%d")
        .to_string()
}

/// Type T's table with every third object changed (returned with its closed versions) and
/// closed objects added to the history.
fn object_history(t: &ObjectTable) -> (ObjectTable, ObjectTable, Vec<(u64, u64)>, Vec<u64>) {
    let mut current = t.clone();
    let n = t.len();
    let changed_rows: Vec<usize> = (0..n).step_by(3).collect();
    let copied_rows: Vec<usize> = changed_rows.iter().map(|&r| (r + 1) % n).collect();
    let mut closed = t.take(&copied_rows).unwrap();
    let mut changed = Vec::new();
    for (i, &r) in changed_rows.iter().enumerate() {
        changed.push((t.id[r], t.id[copied_rows[i]]));
        closed.id[i] = t.id[r];
        closed.version[i] = t.version[r];
        closed.start_date[i] = OLD_START;
        closed.end_date[i] = CHANGE;
        current.version[r] = t.version[r] + 1;
        current.start_date[r] = CHANGE;
    }
    // closed objects: copies of the first rows, with new ids, gone since CHANGE
    let max_id = *t.id.iter().max().unwrap();
    let mut gone = t
        .take(&(0..CLOSED_OBJECTS as usize).collect::<Vec<_>>())
        .unwrap();
    let gone_ids: Vec<u64> = (1..=CLOSED_OBJECTS).map(|k| max_id + k).collect();
    for (i, &id) in gone_ids.iter().enumerate() {
        gone.id[i] = id;
        gone.version[i] = 3;
        gone.start_date[i] = OLD_START;
        gone.end_date[i] = CHANGE;
    }
    let both = ObjectTable::concat(t.type_id, vec![closed, gone]).unwrap();
    let mut order: Vec<usize> = (0..both.len()).collect();
    order.sort_by_key(|&r| (both.id[r], both.version[r]));
    (current, both.take(&order).unwrap(), changed, gone_ids)
}

/// The network with link `link`'s rows starting on CHANGE, and the closed link that lay there.
fn network_history(net: &RoadNetwork, link: u64) -> (RoadNetwork, RoadNetwork, u64) {
    let mut current = net.clone();
    let rows: Vec<usize> = (0..net.len()).filter(|&r| net.link_id[r] == link).collect();
    let old_link = net.link_id.iter().max().unwrap() + 1000;
    let mut closed = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    for &r in &rows {
        current.start_date[r] = CHANGE;
        closed.append_rows(net, r..r + 1);
    }
    for r in 0..closed.len() {
        closed.link_id[r] = old_link;
        closed.start_date[r] = OLD_START;
        closed.end_date[r] = CHANGE;
    }
    closed.build_link_index();
    (current, closed, old_link)
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (g, _) = Generation::load(&tiny_generation_dir(), &|_| {}).unwrap();
        let tid = *g
            .objects
            .iter()
            .max_by_key(|(_, d)| d.table.len())
            .unwrap()
            .0;
        let (current_t, closed_t, changed, closed) = object_history(&g.objects[&tid].table);
        // a link of one row, of a road (not a connection), with a first segment of some length
        let r = (0..g.network.len())
            .find(|&r| {
                let link = g.network.link_id[r];
                let single = (r == 0 || g.network.link_id[r - 1] != link)
                    && (r + 1 == g.network.len() || g.network.link_id[r + 1] != link);
                let (a, b) = (g.network.geom_offsets[r] as usize, g.network.coords.len());
                single && !g.network.is_connection[r] && a + 1 < b && g.network.length_m[r] > 50.0
            })
            .unwrap();
        let link = g.network.link_id[r];
        let c = g.network.geom_offsets[r] as usize;
        let (p0, p1) = (g.network.coords[c], g.network.coords[c + 1]);
        let point = ((p0[0] + p1[0]) / 2.0, (p0[1] + p1[1]) / 2.0);
        let (net, net_closed, old_link) = network_history(&g.network, link);

        let root = tempfile::tempdir().unwrap();
        let data = DataDir::open(root.path()).unwrap();
        let mut builder = GenerationBuilder::fresh(&data, g.catalog, g.areas).unwrap();
        let tables: Vec<&ObjectTable> = g
            .objects
            .iter()
            .map(|(t, d)| if *t == tid { &current_t } else { &d.table })
            .collect();
        builder
            .write_tables(&net, tables, Some(&g.deleted))
            .unwrap();
        builder
            .write_history(&net, &net_closed, [&closed_t])
            .unwrap();
        let published = builder
            .publish(
                &data,
                Description {
                    origin: "read_history test".into(),
                    provenance: g.manifest.provenance.clone(),
                    changesets: vec![],
                    last_event_ids: g.manifest.last_event_ids.clone(),
                },
            )
            .unwrap();
        let (loaded, _) = Generation::load(&published.dir, &|_| {}).unwrap();
        std::mem::forget(root);
        let mut versions = Vec::new();
        for t in [&current_t, &closed_t] {
            for r in 0..t.len() {
                versions.push((t.id[r], t.version[r], t.start_date[r], t.end_date[r]));
            }
        }
        versions.sort();
        Fixture {
            history: History {
                tid,
                versions,
                changed,
                closed,
                link,
                old_link,
                point,
            },
            store: Arc::new(GenerationStore::new(loaded)),
        }
    })
}

pub(crate) async fn server() -> (TestServer, &'static History) {
    let f = fixture();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::read_only(
        f.store.clone(),
        ApiConfig::new(format!("http://{addr}"), Duration::from_secs(30)),
    );
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    let s = TestServer {
        base: format!("http://{addr}/nvdb/api/v2"),
        client: reqwest::Client::new(),
    };
    (s, &f.history)
}

async fn text(s: &TestServer, path: &str) -> (u16, String) {
    let r = s.get(path).await;
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// The (id, versjon) of every object over all pages of `path` (with `?`), `antall` a page.
async fn all_pages(s: &TestServer, path: &str, antall: usize) -> Vec<(u64, u32)> {
    let url = format!("{}{path}&inkluder=metadata&antall={antall}", s.base);
    let mut out = Vec::new();
    for o in every_object(s, &url).await {
        out.push((
            o["id"].as_u64().unwrap(),
            o["metadata"]["versjon"].as_u64().unwrap() as u32,
        ));
    }
    out
}

/// The `objekter` of every page of a list from `url` on (following `neste` until a page is
/// empty; no page larger than the `antall` in the URL).
async fn every_object(s: &TestServer, url: &str) -> Vec<Value> {
    let antall: usize = url
        .split("antall=")
        .nth(1)
        .and_then(|a| a.split('&').next()?.parse().ok())
        .unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut url = url.to_string();
    for _ in 0..10_000 {
        let page: Value = s
            .client
            .get(&url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let objects = page["objekter"].as_array().unwrap();
        if objects.is_empty() {
            return out;
        }
        assert!(objects.len() <= antall, "{url}");
        out.extend(objects.iter().cloned());
        url = page["metadata"]["neste"]["href"]
            .as_str()
            .unwrap()
            .to_string();
    }
    panic!("no end of pages");
}

pub(crate) fn valid_on(h: &History, d: Days) -> Vec<(u64, u32)> {
    h.versions
        .iter()
        .filter(|v| valid_at(v.2, v.3, d))
        .map(|v| (v.0, v.1))
        .collect()
}

#[tokio::test]
async fn lists_and_statistics_at_a_day_are_the_versions_valid_then() {
    let (s, h) = server().await;
    let tid = h.tid;
    for (when, d) in [
        (BEFORE, day(BEFORE)),
        (AFTER, day(AFTER)),
        ("2019-12-31", CHANGE - 1),
        ("2020-01-01", CHANGE),
    ] {
        let expected = valid_on(h, d);
        assert!(!expected.is_empty(), "{when}");
        let got = all_pages(&s, &format!("/vegobjekter/{tid}?tidspunkt={when}"), 7).await;
        assert_eq!(got, expected, "list at {when}");
        let stats = s
            .get_json(
                &format!("/vegobjekter/{tid}/statistikk?tidspunkt={when}"),
                200,
            )
            .await;
        assert_eq!(
            stats["antall"],
            expected.len() as u64,
            "statistikk at {when}"
        );
        // the GeoJSON list: the same objects
        let geo = s
            .get_json(
                &format!("/vegobjekter/{tid}.geojson?tidspunkt={when}&antall=10000"),
                200,
            )
            .await;
        assert_eq!(
            geo["features"].as_array().unwrap().len(),
            expected.len(),
            "geojson at {when}"
        );
    }
    // before, the closed objects are there and the changed ones have their old version
    let before = valid_on(h, day(BEFORE));
    for id in &h.closed {
        assert!(before.iter().any(|(i, _)| i == id));
    }
    // the next page's href keeps the day
    let page = s
        .get_json(
            &format!("/vegobjekter/{tid}?tidspunkt={BEFORE}&antall=2"),
            200,
        )
        .await;
    let next = page["metadata"]["neste"]["href"].as_str().unwrap();
    assert!(next.contains(&format!("tidspunkt={BEFORE}")), "{next}");
    // today: every current row, as without tidspunkt
    let today = s
        .get_json(&format!("/vegobjekter/{tid}/statistikk"), 200)
        .await;
    let current = h.versions.iter().filter(|v| v.3 == OPEN_END).count();
    assert_eq!(today["antall"], current as u64);
    // a day before the data: nothing
    let none = s
        .get_json(&format!("/vegobjekter/{tid}?tidspunkt=1900-01-01"), 200)
        .await;
    assert_eq!(none["objekter"], serde_json::json!([]));
    let none = s
        .get_json(
            &format!("/vegobjekter/{tid}/statistikk?tidspunkt=1900-01-01"),
            200,
        )
        .await;
    assert_eq!(none["antall"], 0);
}

#[tokio::test]
async fn one_object_and_its_properties_at_a_day_are_its_version_then() {
    let (s, h) = server().await;
    let tid = h.tid;
    for &(a, b) in h.changed.iter().take(4) {
        let old = h
            .versions
            .iter()
            .find(|v| v.0 == a && v.3 == CHANGE)
            .unwrap();
        let new = h
            .versions
            .iter()
            .find(|v| v.0 == a && v.3 == OPEN_END)
            .unwrap();
        let o = s
            .get_json(
                &format!("/vegobjekter/{tid}/{a}?tidspunkt={BEFORE}&inkluder=metadata,egenskaper"),
                200,
            )
            .await;
        assert_eq!(o["metadata"]["versjon"], old.1);
        assert_eq!(o["metadata"]["startdato"], date(OLD_START));
        assert_eq!(o["metadata"]["sluttdato"], date(CHANGE));
        // the closed version's values are b's (today)
        let props = s
            .get_json(
                &format!("/vegobjekter/{tid}/{a}/egenskaper?tidspunkt={BEFORE}"),
                200,
            )
            .await;
        let of_b = s
            .get_json(&format!("/vegobjekter/{tid}/{b}/egenskaper"), 200)
            .await;
        assert_eq!(props, of_b);
        assert_eq!(o["egenskaper"], of_b);
        let o = s
            .get_json(
                &format!("/vegobjekter/{tid}/{a}?tidspunkt={AFTER}&inkluder=metadata"),
                200,
            )
            .await;
        assert_eq!(o["metadata"]["versjon"], new.1);
        assert!(o["metadata"].get("sluttdato").is_none(), "{o}");
        // dybde answers at the day too
        let list = s
            .get_json(
                &format!("/vegobjekter/{tid}/{a}?tidspunkt={BEFORE}&dybde=1&inkluder=metadata"),
                200,
            )
            .await;
        assert_eq!(list[0]["metadata"]["versjon"], old.1);
    }
    // a closed object: there before, 404 after and today; nothing exists before the data
    let gone = h.closed[0];
    s.get_json(
        &format!("/vegobjekter/{tid}/{gone}?tidspunkt={BEFORE}"),
        200,
    )
    .await;
    s.expect_error(
        &format!("/vegobjekter/{tid}/{gone}?tidspunkt={AFTER}"),
        404,
        4012,
    )
    .await;
    s.expect_error(&format!("/vegobjekter/{tid}/{gone}"), 404, 4012)
        .await;
    let a = h.changed[0].0;
    s.expect_error(
        &format!("/vegobjekter/{tid}/{a}?tidspunkt=1900-01-01"),
        404,
        4012,
    )
    .await;
    s.expect_error(
        &format!("/vegobjekter/{tid}/{a}/egenskaper?tidspunkt=1900-01-01"),
        404,
        4012,
    )
    .await;
}

#[tokio::test]
async fn versions_are_listed_oldest_first_and_each_is_served() {
    let (s, h) = server().await;
    let tid = h.tid;
    let (a, b) = h.changed[1];
    let rows: Vec<_> = h.versions.iter().filter(|v| v.0 == a).collect();
    let list = s
        .get_json(&format!("/vegobjekter/{tid}/{a}/versjoner"), 200)
        .await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), rows.len());
    for (e, v) in list.iter().zip(&rows) {
        assert_eq!(e["versjon"], v.1);
        assert_eq!(e["startdato"], date(v.2));
        match v.3 {
            OPEN_END => assert!(e.get("sluttdato").is_none(), "{e}"),
            end => assert_eq!(e["sluttdato"], date(end)),
        }
        let href = e["href"].as_str().unwrap();
        assert!(
            href.ends_with(&format!("/vegobjekter/{tid}/{a}/{}", v.1)),
            "{href}"
        );
        let one: Value = s
            .client
            .get(href)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(one["id"], a);
        assert_eq!(one["metadata"]["versjon"], v.1);
    }
    // the old version's values are b's
    let old = s
        .get_json(
            &format!("/vegobjekter/{tid}/{a}/{}?inkluder=egenskaper", rows[0].1),
            200,
        )
        .await;
    let of_b = s
        .get_json(&format!("/vegobjekter/{tid}/{b}/egenskaper"), 200)
        .await;
    assert_eq!(old["egenskaper"], of_b);
    // the current version is the object today
    let cur = s
        .get_json(
            &format!("/vegobjekter/{tid}/{a}/{}?inkluder=alle", rows[1].1),
            200,
        )
        .await;
    let today = s
        .get_json(&format!("/vegobjekter/{tid}/{a}?inkluder=alle"), 200)
        .await;
    assert_eq!(cur, today);
    // unknown version, object, type; a last segment that is no number stays an unknown path
    s.expect_error(&format!("/vegobjekter/{tid}/{a}/99"), 404, 4012)
        .await;
    s.expect_error(&format!("/vegobjekter/{tid}/1/versjoner"), 404, 4012)
        .await;
    s.expect_error(&format!("/vegobjekter/{tid}/1/1"), 404, 4012)
        .await;
    s.expect_error(&format!("/vegobjekter/{tid}/{a}/x"), 404, 4012)
        .await;
    // paths that named nothing before these routes still do
    for path in [
        "/vegobjekter/105/statistikk/1",
        "/vegobjekter/x/1/2",
        "/vegobjekter/x/1/versjoner",
    ] {
        let message = s.expect_error(path, 404, 4012).await;
        assert_eq!(message, "Ressursen finnes ikke", "{path}");
    }
    s.expect_error(&format!("/vegobjekter/{tid}/{a}/versjoner?x=1"), 422, 4013)
        .await;
    // XML
    let (status, xml) = text(&s, &format!("/vegobjekter/{tid}/{a}/versjoner.xml")).await;
    assert_eq!(status, 200, "{xml}");
    assert!(xml.contains("<versjoner><versjon><versjon>"), "{xml}");
    let (status, xml) = text(&s, &format!("/vegobjekter/{tid}/{a}/{}.xml", rows[0].1)).await;
    assert_eq!(status, 200, "{xml}");
    assert!(
        xml.contains("<vegobjekt>")
            && xml.contains(&format!("<sluttdato>{}</sluttdato>", date(CHANGE))),
        "{xml}"
    );
}

#[tokio::test]
async fn all_versions_page_through_every_version_once() {
    let (s, h) = server().await;
    let tid = h.tid;
    let expected: Vec<(u64, u32)> = h.versions.iter().map(|v| (v.0, v.1)).collect();
    for antall in [1, 7, 1000] {
        if antall == 1 && expected.len() > 400 {
            continue;
        }
        let got = all_pages(
            &s,
            &format!("/vegobjekter/{tid}?alle_versjoner=true"),
            antall,
        )
        .await;
        assert_eq!(got, expected, "antall {antall}");
    }
    // each shows its own dates
    let page = s
        .get_json(
            &format!("/vegobjekter/{tid}?alle_versjoner=true&inkluder=metadata&antall=10000"),
            200,
        )
        .await;
    for (o, v) in page["objekter"].as_array().unwrap().iter().zip(&h.versions) {
        assert_eq!(o["metadata"]["startdato"], date(v.2), "{o}");
        let end = (v.3 != OPEN_END).then(|| Value::from(date(v.3)));
        assert_eq!(o["metadata"].get("sluttdato").cloned(), end, "{o}");
    }
    // a filter selects among the versions: a version is in when its object, on the last day
    // of the version, is in the same filter's answer at that day (`tidspunkt`, checked by its
    // own oracle; the last day, as the fixture's older versions start before their links)
    let any: Value = s
        .get_json(
            &format!("/vegobjekter/{tid}?inkluder=lokasjon&antall=1"),
            200,
        )
        .await;
    let kommune = any["objekter"][0]["lokasjon"]["kommuner"][0]
        .as_u64()
        .unwrap();
    let last_day = |end: Days| if end == OPEN_END { today() } else { end - 1 };
    // the versions whose last day is one of a few days (one listing per day) on which every
    // link had started (the fixture's older versions reach back before their links)
    let links = every_object(&s, &format!("{}/vegnett/lenker?antall=1000", s.base)).await;
    let links_from = links
        .iter()
        .map(|l| day(l["metadata"]["startdato"].as_str().unwrap()))
        .max()
        .unwrap();
    let mut days: Vec<Days> = h
        .versions
        .iter()
        .map(|v| last_day(v.3))
        .filter(|&d| d >= links_from)
        .collect();
    days.sort();
    days.dedup();
    let step = (days.len() / 4).max(1);
    let mut chosen: Vec<Days> = days.iter().step_by(step).copied().collect();
    chosen.push(today());
    let mut at_day: HashMap<Days, HashSet<u64>> = HashMap::new();
    for &d in &chosen {
        let path = format!("/vegobjekter/{tid}?kommune={kommune}&tidspunkt={}", date(d));
        let ids = all_pages(&s, &path, 1000).await.into_iter().map(|o| o.0);
        at_day.insert(d, ids.collect());
    }
    let considered = |v: &(u64, u32, Days, Days)| at_day.contains_key(&last_day(v.3));
    let expected: Vec<(u64, u32)> = h
        .versions
        .iter()
        .filter(|v| considered(v) && at_day[&last_day(v.3)].contains(&v.0))
        .map(|v| (v.0, v.1))
        .collect();
    assert!(!expected.is_empty() && expected.len() < h.versions.len());
    let path = format!("/vegobjekter/{tid}?alle_versjoner=true&kommune={kommune}");
    let versions: HashMap<(u64, u32), &(u64, u32, Days, Days)> =
        h.versions.iter().map(|v| ((v.0, v.1), v)).collect();
    let got: Vec<(u64, u32)> = all_pages(&s, &path, 7)
        .await
        .into_iter()
        .filter(|k| considered(versions[k]))
        .collect();
    assert_eq!(got, expected, "{path}");
    s.expect_error(
        &format!("/vegobjekter/{tid}?alle_versjoner=true&tidspunkt={BEFORE}"),
        422,
        4009,
    )
    .await;
    s.expect_error(&format!("/vegobjekter/{tid}?alle_versjoner=ja"), 422, 4008)
        .await;
}

#[tokio::test]
async fn the_network_at_a_day_has_the_link_that_lay_there() {
    let (s, h) = server().await;
    let (x, y) = h.point;
    let near = |when: &str| format!("/posisjon?nord={y}&ost={x}&maks_avstand=5{when}");
    let today = s.get_json(&near(""), 200).await;
    assert_eq!(today[0]["veglenke"]["id"], h.link, "{today}");
    let before = s
        .get_json(&near(&format!("&tidspunkt={BEFORE}")), 200)
        .await;
    assert_eq!(before[0]["veglenke"]["id"], h.old_link, "{before}");
    // the direct route leaves a request with tidspunkt to the general path; an escaped name too
    let escaped = s
        .get_json(&near(&format!("&%74idspunkt={BEFORE}")), 200)
        .await;
    assert_eq!(escaped, before);
    let none = s.get_json(&near("&tidspunkt=1900-01-01"), 200).await;
    assert_eq!(none, serde_json::json!([]));
    let (old, link) = (h.old_link, h.link);
    let r = s.get(&format!("/veg?veglenke=0.5@{old}")).await;
    assert_eq!(r.status().as_u16(), 204);
    let at = s
        .get_json(&format!("/veg?veglenke=0.5@{old}&tidspunkt={BEFORE}"), 200)
        .await;
    assert_eq!(at["veglenke"]["id"], old);
    let r = s
        .get(&format!("/veg?veglenke=0.5@{link}&tidspunkt={BEFORE}"))
        .await;
    assert_eq!(r.status().as_u16(), 204);
    let batch = s
        .get_json(
            &format!("/veg/batch?veglenker=0.5@{old},0.5@{link}&tidspunkt={BEFORE}"),
            200,
        )
        .await;
    assert_eq!(
        batch[format!("0.5@{old}")]["veglenke"]["id"],
        old,
        "{batch}"
    );
    assert!(batch[format!("0.5@{link}")].is_null(), "{batch}");
    let l = s
        .get_json(&format!("/vegnett/lenker/{old}?tidspunkt={BEFORE}"), 200)
        .await;
    assert!(l.to_string().contains(&old.to_string()));
    s.expect_error(&format!("/vegnett/lenker/{old}"), 404, 4012)
        .await;
}

#[tokio::test]
async fn a_future_day_is_today_byte_for_byte_and_bad_days_are_refused() {
    let (s, h) = server().await;
    let tid = h.tid;
    let (a, _) = h.changed[2];
    let (x, y) = h.point;
    let link = h.link;
    let paths = [
        format!("/vegobjekter/{tid}/statistikk"),
        format!("/vegobjekter/{tid}/{a}"),
        format!("/vegobjekter/{tid}/{a}/egenskaper"),
        format!("/posisjon?nord={y}&ost={x}&maks_avstand=50&maks_antall=3"),
        format!("/veg?veglenke=0.5@{link}"),
        format!("/vegnett/lenker/{link}"),
    ];
    for path in &paths {
        let join = if path.contains('?') { '&' } else { '?' };
        let (s0, today) = text(&s, path).await;
        let (s1, future) = text(&s, &format!("{path}{join}tidspunkt=2999-01-01")).await;
        assert_eq!((s0, &today), (s1, &future), "{path}");
        assert_eq!(s0, 200, "{path}: {today}");
        for bad in ["2020-1-1", "01.01.2020", "2020-02-30", "i+dag", ""] {
            s.expect_error(&format!("{path}{join}tidspunkt={bad}"), 422, 4007)
                .await;
        }
        s.expect_error(
            &format!("{path}{join}tidspunkt={BEFORE}&tidspunkt={BEFORE}"),
            422,
            4014,
        )
        .await;
    }
    let list = format!("/vegobjekter/{tid}?antall=5");
    let (_, today) = text(&s, &list).await;
    let (_, future) = text(&s, &format!("{list}&tidspunkt=2999-01-01")).await;
    let objects = |t: &str| serde_json::from_str::<Value>(t).unwrap()["objekter"].clone();
    assert_eq!(objects(&today), objects(&future));
    // routes that do not answer at a day refuse the parameter
    s.expect_error(&format!("/vegobjekter?tidspunkt={BEFORE}"), 422, 4013)
        .await;
    s.expect_error(&format!("/vegobjekttyper?tidspunkt={BEFORE}"), 422, 4013)
        .await;
    // an escaped name is the same parameter
    let v = s
        .get_json(
            &format!("/vegobjekter/{tid}/{a}?%74idspunkt={BEFORE}&inkluder=metadata"),
            200,
        )
        .await;
    let old = h
        .versions
        .iter()
        .find(|v| v.0 == a && v.3 == CHANGE)
        .unwrap();
    assert_eq!(v["metadata"]["versjon"], old.1);
    let ids: BTreeSet<u64> = h.versions.iter().map(|v| v.0).collect();
    let per_id: BTreeMap<u64, usize> = ids
        .iter()
        .map(|id| (*id, h.versions.iter().filter(|v| v.0 == *id).count()))
        .collect();
    assert!(per_id.values().any(|&n| n == 2));
}

#[tokio::test]
async fn the_document_names_the_parameters_and_the_version_routes() {
    let (s, _) = server().await;
    let doc = s.get_json("/openapi.json", 200).await;
    let names = |path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} documented"))
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    for path in [
        "/vegobjekter/{type}",
        "/vegobjekter/{type}/statistikk",
        "/vegobjekter/{type}/{id}",
        "/vegobjekter/{type}/{id}/egenskaper",
        "/vegobjekter/{type}/{id}/egenskaper/{egenskapstype}",
        "/vegnett/lenker",
        "/vegnett/lenker/{id}",
        "/veg",
        "/veg/batch",
        "/posisjon",
    ] {
        assert!(names(path).contains(&"tidspunkt".to_string()), "{path}");
    }
    assert!(names("/vegobjekter/{type}").contains(&"alle_versjoner".to_string()));
    for path in [
        "/vegobjekter/{type}/{id}/versjoner",
        "/vegobjekter/{type}/{id}/{versjon}",
    ] {
        assert!(!names(path).contains(&"tidspunkt".to_string()), "{path}");
    }
}
