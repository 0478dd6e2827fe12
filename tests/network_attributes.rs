//! The network attribute filters (typeveg, detaljniva, trafikantgruppe, adskiltelop,
//! sideanlegg, konnekteringslenker) against brute force over the network rows of the tiny
//! generated dataset: random filter combinations (with and without an area filter) select the
//! same network rows, the same objects (an object qualifies by a placement touching a passing
//! row) and, segmented, the same length (the parts of the objects on passing rows); through the
//! real server, `/vegnett/lenker` and `/vegobjekter/{type}/statistikk` answer the same; bad
//! values are 422 in the v2 error shape. The generated shares of each attribute are as the
//! generator documents.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use roaring::RoaringBitmap;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::area::AreaKind;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore, TypeData};
use vegdb::query::attributes::NetworkAttributeFilter;
use vegdb::query::network::NetworkAreaFilter;
use vegdb::query::objects::{select, total_length, ObjectFilter};
use vegdb::snapshot::columns::{RoadNetwork, DETAIL_LEVEL_SHORT, SEPARATE_CARRIAGEWAYS};

fn tiny() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, 5, tmp.path()).unwrap();
        let g = Generation::load(&dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        g
    })
}

/// The filter as a plain predicate over one row's columns (written out, not the engine's).
fn row_passes(
    n: &RoadNetwork,
    r: usize,
    f: &NetworkAttributeFilter,
    municipality: Option<u16>,
) -> bool {
    let ok = |list: &[u8], v: u8| list.is_empty() || list.contains(&v);
    ok(&f.road_types, n.road_type[r])
        && ok(&f.detail_levels, n.detail_level[r])
        && ok(&f.traffic_groups, n.traffic_group[r])
        && ok(&f.separate_carriageways, n.separate_carriageways[r])
        && f.side_facility.is_none_or(|s| s == n.side_facility[r])
        && (!f.without_connection_links || !n.is_connection[r])
        && municipality.is_none_or(|m| n.municipality[r] == m)
}

/// Objects of `d` with a placement touching a row that passes the attributes and (as every
/// filter of an object list, each on its own) one touching a row of the municipality, and the
/// segmented length: the parts of the selected objects' placements on rows passing both.
fn brute(
    g: &Generation,
    d: &TypeData,
    f: &NetworkAttributeFilter,
    m: Option<u16>,
) -> (RoaringBitmap, f64) {
    let (n, t) = (&g.network, &d.table);
    let mut rows = RoaringBitmap::new();
    let mut length = 0.0;
    for o in 0..t.len() {
        let (mut on_attributes, mut in_area) = (false, m.is_none());
        let mut len = 0.0;
        for p in t.placements(o) {
            for r in 0..n.len() {
                let touches = n.link_id[r] == t.loc_link[p]
                    && n.from_pos[r] <= t.loc_to[p]
                    && n.to_pos[r] >= t.loc_from[p];
                if !touches {
                    continue;
                }
                on_attributes |= row_passes(n, r, f, None);
                in_area |= m.is_some_and(|m| n.municipality[r] == m);
                if row_passes(n, r, f, m) {
                    let (a, b) = (
                        t.loc_from[p].max(n.from_pos[r]),
                        t.loc_to[p].min(n.to_pos[r]),
                    );
                    if b > a && n.to_pos[r] > n.from_pos[r] {
                        len += (b - a) / (n.to_pos[r] - n.from_pos[r]) * n.length_m[r];
                    }
                }
            }
        }
        if on_attributes && in_area {
            rows.insert(o as u32);
            length += len;
        }
    }
    (rows, length)
}

/// A random attribute filter from proptest's picks.
fn filter(picks: &Picks) -> NetworkAttributeFilter {
    let subset = |mask: u8, n: u8| (0..n).filter(|i| mask & (1 << i) != 0).collect::<Vec<u8>>();
    NetworkAttributeFilter {
        road_types: subset(picks.0, 7),
        detail_levels: subset(picks.1, 4),
        traffic_groups: subset(picks.2, 2)
            .iter()
            .map(|&i| [b'K', b'G'][i as usize])
            .collect(),
        separate_carriageways: subset(picks.3, 3),
        side_facility: picks.4,
        without_connection_links: picks.5,
        system_refs: Vec::new(),
    }
}

/// (typeveg mask, detaljniva mask, trafikantgruppe mask, adskiltelop mask, sideanlegg,
/// konnekteringslenker=false)
type Picks = (u8, u8, u8, u8, Option<bool>, bool);

/// The filter as query parameters.
fn query(f: &NetworkAttributeFilter) -> String {
    const TYPEVEG: [&str; 7] = [
        "enkelBilveg",
        "kanalisertVeg",
        "rampe",
        "rundkjøring",
        "gangOgSykkelveg",
        "bilferje",
        "gatetun",
    ];
    let list = |name: &str, v: Vec<String>| {
        if v.is_empty() {
            String::new()
        } else {
            format!("&{name}={}", v.join(","))
        }
    };
    let mut q = String::new();
    q += &list(
        "typeveg",
        f.road_types
            .iter()
            .map(|&i| TYPEVEG[i as usize].to_string())
            .collect(),
    );
    q += &list(
        "detaljniva",
        f.detail_levels
            .iter()
            .map(|&i| DETAIL_LEVEL_SHORT[i as usize].to_lowercase())
            .collect(),
    );
    q += &list(
        "trafikantgruppe",
        f.traffic_groups
            .iter()
            .map(|&g| (g as char).to_string())
            .collect(),
    );
    q += &list(
        "adskiltelop",
        f.separate_carriageways
            .iter()
            .map(|&i| SEPARATE_CARRIAGEWAYS[i as usize].to_uppercase())
            .collect(),
    );
    if let Some(s) = f.side_facility {
        q += &format!("&sideanlegg={s}");
    }
    if f.without_connection_links {
        q += "&konnekteringslenker=false";
    }
    q
}

fn picks() -> impl Strategy<Value = Picks> {
    // each list empty about half the time, so most combinations keep rows
    let mask = |bits: u32| prop_oneof![Just(0u8), 1u8..(1u8 << bits)];
    (
        mask(7),
        mask(4),
        mask(2),
        mask(3),
        prop::option::of(any::<bool>()),
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    #[test]
    fn rows_objects_and_segmented_lengths_equal_brute_force(p in picks(), area in prop::option::of(0usize..3), ti in 0usize..3) {
        let g = tiny();
        let f = filter(&p);
        let m = area.map(|i| [5001u16, 5028, 5031][i]);
        // network rows
        let got = g.select_segments(&NetworkAreaFilter {
            any_of: m.map(|m| (AreaKind::Municipality, m as u32)).into_iter().collect(),
            attributes: f.clone(),
            ..Default::default()
        });
        let n = &g.network;
        let want: RoaringBitmap = (0..n.len()).filter(|&r| row_passes(n, r, &f, m)).map(|r| r as u32).collect();
        prop_assert_eq!(got, want);
        // objects and their segmented length
        let d = &g.objects[&[105u32, 95, 241][ti]];
        let of = ObjectFilter {
            any_of: m.map(|m| (AreaKind::Municipality, m as u32)).into_iter().collect(),
            network: f.clone(),
            ..Default::default()
        };
        let rows = select(g, d, &of).into_owned();
        let (want_rows, want_len) = brute(g, d, &f, m);
        prop_assert_eq!(&rows, &want_rows, "{:?}", f);
        let len = total_length(g, d, &rows, &of, true);
        prop_assert!((len - want_len).abs() <= 1e-6 * want_len.max(1.0), "{} vs {}", len, want_len);
    }
}

/// A real server over the tiny generation.
async fn serve() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 5, tmp.path()).unwrap();
    let g = Generation::load(&dir, &|_| {}).unwrap().0;
    std::mem::forget(tmp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::read_only(
        Arc::new(GenerationStore::new(g)),
        ApiConfig::new(format!("http://{addr}"), Duration::from_secs(30)),
    );
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    format!("http://{addr}/nvdb/api/v2")
}

async fn get(url: &str) -> (u16, serde_json::Value) {
    let r = reqwest::Client::new()
        .get(url)
        .header("X-Client", "vegdb-test")
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or_default())
}

/// Through the server: `/vegnett/lenker` returns the passing rows and `statistikk` counts the
/// objects and sums their segmented length as brute force does, for seeded random filters
/// (the lower-/upper-case spellings the query uses are accepted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_what_brute_force_selects() {
    let base = serve().await;
    let g = tiny();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = picks();
    let mut nonempty = 0;
    for i in 0..25 {
        let f = filter(&strategy.new_tree(&mut runner).unwrap().current());
        let q = query(&f);
        let m = (i % 2 == 0).then_some(5001u16);
        let area = m.map(|m| format!("&kommune={m}")).unwrap_or_default();
        let (status, body) = get(&format!("{base}/vegnett/lenker?antall=10000{q}{area}")).await;
        assert_eq!(status, 200, "{q}: {body}");
        let n = &g.network;
        let want = (0..n.len()).filter(|&r| row_passes(n, r, &f, m)).count();
        assert_eq!(
            body["objekter"].as_array().unwrap().len(),
            want,
            "{q}{area}"
        );
        let (status, body) = get(&format!("{base}/vegobjekter/105/statistikk?{q}{area}")).await;
        assert_eq!(status, 200, "{q}: {body}");
        let (rows, length) = brute(g, &g.objects[&105], &f, m);
        assert_eq!(body["antall"].as_u64().unwrap(), rows.len(), "{q}{area}");
        let got = body["strekningslengde"].as_f64().unwrap();
        assert!((got - length).abs() <= 1.0, "{q}{area}: {got} vs {length}");
        nonempty += usize::from(!rows.is_empty());
    }
    assert!(nonempty >= 5, "{nonempty}");
    for (q, code) in [
        ("detaljniva=VTKBX", 4006),
        ("trafikantgruppe=KG", 4006),
        ("adskiltelop=ja", 4006),
        ("typeveg=motorveg", 4006),
        ("sideanlegg=ja", 4008),
        ("konnekteringslenker=nei", 4008),
    ] {
        for path in [
            "/vegnett/lenker",
            "/vegobjekter/105",
            "/vegobjekter/105/statistikk",
        ] {
            let (status, body) = get(&format!("{base}{path}?{q}")).await;
            assert_eq!(status, 422, "{path}?{q}: {body}");
            assert_eq!(body[0]["code"], code, "{path}?{q}: {body}");
            assert!(body[0]["message"].is_string(), "{body}");
        }
    }
}

/// The generated shares, as `generate::network` documents them: most rows VEGTRASE_OG_KJOREBANE
/// and K, some G, some side facilities (private dead ends), and separate carriageway pairs
/// (KJOREBANE, Med and Mot, under a VEGTRASE trunk link).
#[test]
fn the_generated_attributes_have_believable_shares() {
    let n = &tiny().network;
    let share =
        |p: &dyn Fn(usize) -> bool| (0..n.len()).filter(|&r| p(r)).count() as f64 / n.len() as f64;
    assert!(share(&|r| n.detail_level[r] == 3) > 0.9);
    assert!(share(&|r| n.traffic_group[r] == b'K') > 0.85);
    let g = share(&|r| n.traffic_group[r] == b'G');
    assert!(g > 0.0 && g < 0.15, "{g}");
    let side = share(&|r| n.side_facility[r]);
    assert!(side > 0.0 && side < 0.1, "{side}");
    assert!((0..n.len()).all(|r| !n.side_facility[r] || n.road_category[r] == b'P'));
    let with = share(&|r| n.separate_carriageways[r] == 1);
    let against = share(&|r| n.separate_carriageways[r] == 2);
    assert!(with > 0.0 && with == against, "{with} {against}");
    assert!((0..n.len()).all(|r| (n.separate_carriageways[r] != 0) == (n.detail_level[r] == 1)));
    assert!((0..n.len()).any(|r| n.detail_level[r] == 0));
}
