//! The road system reference (vegsystemreferanse) through the real server on the committed
//! demo snapshot: the filter on `/vegnett/lenker`, the object lists, `statistikk` and the
//! grouped network statistics selects what a plain loop over the network rows finds (the
//! reference written out here, not the engine's matcher), alone and with `kommune`; `/veg`
//! answers the successors' spellings at the place `vegreferanse` names; position results and
//! links carry the row's reference; bad forms are 422 in the v2 error shape.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::columns::{RoadNetwork, NO_ROAD_REF};
use vegdb::snapshot::store::DataDir;

use crate::server::TestServer;

fn demo() -> Arc<GenerationStore> {
    static STORE: OnceLock<Arc<GenerationStore>> = OnceLock::new();
    STORE
        .get_or_init(|| {
            let d = DataDir::read_only(
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo"),
            );
            let current = d.current().unwrap().unwrap();
            let (g, _) = Generation::load(&d.generation_dir(current), &|_| {}).unwrap();
            Arc::new(GenerationStore::new(g))
        })
        .clone()
}

async fn demo_server() -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::read_only(
        demo(),
        ApiConfig::new(format!("http://{addr}"), Duration::from_secs(60)),
    );
    tokio::spawn(vegdb::server::serve(
        listener,
        state,
        std::future::pending(),
    ));
    TestServer {
        base: format!("http://{addr}/nvdb/api/v2"),
        client: reqwest::Client::new(),
    }
}

/// A reference filter as the test states it.
#[derive(Debug, Clone, Default)]
struct Want {
    municipality: Option<u16>,
    category: u8,
    phase: Option<u8>,
    number: Option<u32>,
    sections: Option<(u16, u16)>,
    subsection: Option<u16>,
    metres: Option<(u32, u32)>,
}

impl Want {
    /// `EV6 S1D1 m0-500` and its parts.
    fn text(&self) -> String {
        let mut s = String::new();
        if let Some(m) = self.municipality {
            s += &format!("{m:04} ");
        }
        s.push(self.category as char);
        if let Some(p) = self.phase {
            s.push(p as char);
        }
        if let Some(n) = self.number {
            s += &n.to_string();
        }
        if let Some((a, b)) = self.sections {
            s += &if a == b {
                format!(" S{a}")
            } else {
                format!(" S{a}-{b}")
            };
        }
        if let Some(d) = self.subsection {
            s += &format!("D{d}");
        }
        if let Some((a, b)) = self.metres {
            s += &format!(" m{a}-{b}");
        }
        s
    }

    /// Row `r` has this reference (metres: the ranges overlap, ends included).
    fn holds(&self, n: &RoadNetwork, r: usize) -> bool {
        n.system_category[r] == self.category
            && self.phase.is_none_or(|p| n.system_phase[r] == p)
            && self.number.is_none_or(|v| n.system_number[r] == v)
            && self.municipality.is_none_or(|m| n.municipality[r] == m)
            && self
                .sections
                .is_none_or(|(a, b)| a <= n.section[r] && n.section[r] <= b)
            && self.subsection.is_none_or(|d| n.subsection[r] == d)
            && self
                .metres
                .is_none_or(|(a, b)| n.section_from_m[r] <= b && a <= n.section_to_m[r])
    }
}

/// Filters of every granularity around some rows of the demo (every 2,000th with a reference).
fn wants(n: &RoadNetwork) -> Vec<Want> {
    let mut out = Vec::new();
    for r in (0..n.len())
        .step_by(2000)
        .filter(|&r| n.system_category[r] != NO_ROAD_REF)
    {
        let full = Want {
            municipality: None,
            category: n.system_category[r],
            phase: Some(n.system_phase[r]),
            number: Some(n.system_number[r]),
            sections: Some((n.section[r], n.section[r])),
            subsection: Some(n.subsection[r]),
            metres: Some((n.section_from_m[r] + 1, n.section_to_m[r] + 40)),
        };
        out.push(Want {
            sections: None,
            subsection: None,
            metres: None,
            ..full.clone()
        });
        out.push(Want {
            phase: None,
            subsection: None,
            metres: None,
            ..full.clone()
        });
        out.push(Want {
            metres: None,
            ..full.clone()
        });
        out.push(full.clone());
        out.push(Want {
            municipality: Some(n.municipality[r]),
            metres: None,
            ..full.clone()
        });
    }
    out.push(Want {
        category: b'F',
        phase: Some(b'V'),
        ..Default::default()
    });
    out
}

/// (serde_json's parser may miss the last bit of a float: positions are compared to 9
/// decimals.)
/// Every page of a list (`objekter`, pages of `antall=10000`), following `metadata.neste`.
async fn all_pages(s: &TestServer, path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut next = Some(path.to_string());
    while let Some(p) = next.take() {
        let body = s.get_json(&p, 200).await;
        let items = body["objekter"].as_array().unwrap().clone();
        let full = items.len() == 10_000 && body["metadata"]["neste"]["href"].is_string();
        out.extend(items);
        if full {
            let href = body["metadata"]["neste"]["href"].as_str().unwrap();
            next = Some(href[href.find("/nvdb/api/v2").unwrap() + 12..].to_string());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_link_filter_selects_the_rows_a_plain_loop_finds() {
    let s = demo_server().await;
    let g = demo().current();
    let n = &g.network;
    let cases = wants(n);
    assert!(cases.len() > 40, "{}", cases.len());
    let mut nonempty = 0;
    for (i, w) in cases.iter().enumerate() {
        let want: BTreeSet<(u64, String)> = (0..n.len())
            .filter(|&r| w.holds(n, r))
            .map(|r| (n.link_id[r], format!("{:.9}", n.from_pos[r] + 0.0)))
            .collect();
        nonempty += usize::from(!want.is_empty());
        // the spellings: as written, without spaces, lower case
        let text = match i % 3 {
            0 => w.text(),
            1 => w.text().replace(' ', ""),
            _ => w.text().to_lowercase(),
        };
        let q = form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let links = all_pages(
            &s,
            &format!("/vegnett/lenker?vegsystemreferanse={q}&antall=10000"),
        )
        .await;
        let got: BTreeSet<(u64, String)> = links
            .iter()
            .map(|l| {
                (
                    l["veglenkeid"].as_u64().unwrap(),
                    format!("{:.9}", l["startposisjon"].as_f64().unwrap()),
                )
            })
            .collect();
        assert!(
            got == want,
            "{text}: {} answered, {} expected; only answered: {:?}; only expected: {:?}",
            got.len(),
            want.len(),
            got.difference(&want).take(5).collect::<Vec<_>>(),
            want.difference(&got).take(5).collect::<Vec<_>>()
        );
        // every link answered carries the reference it was selected by
        for l in &links {
            let v = &l["vegsystemreferanse"];
            assert_eq!(
                v["vegsystem"]["vegkategori"],
                (w.category as char).to_string()
            );
            assert!(v["kortform"].as_str().unwrap().starts_with(&format!(
                "{}{}",
                w.category as char,
                v["vegsystem"]["fase"].as_str().unwrap()
            )));
        }
        // network statistics grouped by category: the same rows
        let st = s
            .get_json(
                &format!(
                    "/vegnett/statistikk/gruppert?gruppering=vegkategori&vegsystemreferanse={q}"
                ),
                200,
            )
            .await;
        let rows: u64 = st
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["antall"].as_u64().unwrap())
            .sum();
        assert_eq!(
            rows,
            want.len() as u64,
            "{text}: grouped network statistics"
        );
    }
    assert!(nonempty > 40, "{nonempty}");
    // several references, comma-separated: the union
    let (a, b) = (&cases[3], &cases[8]);
    let want = (0..n.len())
        .filter(|&r| a.holds(n, r) || b.holds(n, r))
        .count();
    let q = form_urlencoded::byte_serialize(format!("{},{}", a.text(), b.text()).as_bytes())
        .collect::<String>();
    let got = all_pages(
        &s,
        &format!("/vegnett/lenker?vegsystemreferanse={q}&antall=10000"),
    )
    .await;
    assert_eq!(got.len(), want);
}

/// Objects of `type_id` with a placement touching a row the reference holds on and (each
/// filter on its own, as every filter of an object list) one touching a row of `kommune`.
fn objects_oracle(g: &Generation, type_id: u32, w: &Want, kommune: Option<u16>) -> BTreeSet<u64> {
    let n = &g.network;
    let mut rows_of: HashMap<u64, Vec<usize>> = HashMap::new();
    for r in 0..n.len() {
        rows_of.entry(n.link_id[r]).or_default().push(r);
    }
    let t = &g.objects[&type_id].table;
    let mut out = BTreeSet::new();
    for o in 0..t.len() {
        let (mut on_ref, mut in_area) = (false, kommune.is_none());
        for p in t.placements(o) {
            for &r in rows_of
                .get(&t.loc_link[p])
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                if n.from_pos[r] <= t.loc_to[p] && n.to_pos[r] >= t.loc_from[p] {
                    on_ref |= w.holds(n, r);
                    in_area |= kommune.is_some_and(|k| n.municipality[r] == k);
                }
            }
        }
        if on_ref && in_area {
            out.insert(t.id[o]);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_lists_and_statistics_select_the_objects_on_matching_rows() {
    let s = demo_server().await;
    let g = demo().current();
    let cases = wants(&g.network);
    let mut nonempty = 0;
    for (i, w) in cases.iter().enumerate().step_by(3) {
        let type_id = if i % 2 == 0 { 105 } else { 95 };
        let kommune = (i % 4 == 0).then(|| {
            let r = (0..g.network.len()).find(|&r| w.holds(&g.network, r));
            r.map_or(5001, |r| g.network.municipality[r])
        });
        let want = objects_oracle(&g, type_id, w, kommune);
        nonempty += usize::from(!want.is_empty());
        let q = form_urlencoded::byte_serialize(w.text().as_bytes()).collect::<String>();
        let area = kommune.map_or(String::new(), |k| format!("&kommune={k}"));
        let list = all_pages(
            &s,
            &format!(
                "/vegobjekter/{type_id}?vegsystemreferanse={q}{area}&antall=10000&inkluder=minimum"
            ),
        )
        .await;
        let got: BTreeSet<u64> = list.iter().map(|o| o["id"].as_u64().unwrap()).collect();
        assert_eq!(got, want, "{} {area} on {type_id}", w.text());
        let st = s
            .get_json(
                &format!("/vegobjekter/{type_id}/statistikk?vegsystemreferanse={q}{area}"),
                200,
            )
            .await;
        assert_eq!(
            st["antall"].as_u64().unwrap(),
            want.len() as u64,
            "{}",
            w.text()
        );
        // grouped by category (segmented: the parts on matching rows, all of its category)
        let grouped = s
            .get_json(
                &format!("/vegobjekter/{type_id}/statistikk/gruppert?gruppering=vegkategori&vegsystemreferanse={q}{area}"),
                200,
            )
            .await;
        let groups = grouped.as_array().unwrap();
        if want.is_empty() {
            assert!(groups.is_empty(), "{grouped}");
        } else {
            assert_eq!(groups.len(), 1, "{grouped}");
            assert_eq!(
                groups[0]["antall"].as_u64().unwrap(),
                want.len() as u64,
                "{grouped}"
            );
        }
    }
    assert!(nonempty > 10, "{nonempty}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn veg_answers_the_successors_spellings_where_vegreferanse_points() {
    let s = demo_server().await;
    let g = demo().current();
    let n = &g.network;
    let mut checked = 0;
    for r in (0..n.len()).step_by(997) {
        if n.system_category[r] == NO_ROAD_REF
            || n.topology_level[r] != 0
            || n.section_to_m[r] <= n.section_from_m[r] + 2
        {
            continue;
        }
        // a metre inside the row (generated: the v2 metres are the same)
        let m = n.section_from_m[r] + 1;
        let (c, p, num, sec, sub) = (
            n.system_category[r] as char,
            n.system_phase[r] as char,
            n.system_number[r],
            n.section[r],
            n.subsection[r],
        );
        let by_v2 = s
            .get_json(
                &format!(
                    "/veg?vegreferanse={:02}{:02}{c}{}{num}hp{}m{m}",
                    n.county[r],
                    if matches!(c, 'K' | 'P') {
                        n.municipality[r] % 100
                    } else {
                        0
                    },
                    (n.road_status[r] as char).to_ascii_lowercase(),
                    n.hp[r]
                ),
                200,
            )
            .await;
        // K and P roads are numbered per kommune: the successors name it in front
        let kommune = if matches!(c, 'K' | 'P') {
            format!("{:04} ", n.municipality[r])
        } else {
            String::new()
        };
        for spelling in [
            format!("{kommune}{c}{p}{num}S{sec}D{sub}m{m}"),
            format!("{kommune}{c}{p}{num} S{sec}D{sub} m{m}"),
            format!("{kommune}{c}{p}{num}s{sec}d{sub}m{m}")
                .to_lowercase()
                .replace(' ', ""),
        ] {
            let q = form_urlencoded::byte_serialize(spelling.as_bytes()).collect::<String>();
            let got = s
                .get_json(&format!("/veg?vegsystemreferanse={q}"), 200)
                .await;
            assert_eq!(
                got["vegsystemreferanse"]["kortform"],
                format!("{c}{p}{num} S{sec}D{sub} m{m}"),
                "{spelling}"
            );
            assert_eq!(got["vegsystemreferanse"]["strekning"]["meter"], m);
            assert_eq!(got["veglenke"], by_v2["veglenke"], "{spelling}");
            assert_eq!(got["geometri"], by_v2["geometri"], "{spelling}");
            assert_eq!(got["vegreferanse"], by_v2["vegreferanse"], "{spelling}");
        }
        checked += 1;
    }
    assert!(checked > 5, "{checked}");
    // off the network: 204, as vegreferanse
    let r = s.get("/veg?vegsystemreferanse=EV6S99D99m1").await;
    assert_eq!(r.status().as_u16(), 204);
    // /veg/batch: null where there is none
    let b = s
        .get_json("/veg/batch?vegsystemreferanser=EV6S1D1m10,EV6S99D99m1", 200)
        .await;
    assert_eq!(
        b["EV6S1D1m10"]["vegsystemreferanse"]["kortform"],
        "EV6 S1D1 m10"
    );
    assert!(b["EV6S99D99m1"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_and_positions_carry_the_rows_reference() {
    let s = demo_server().await;
    let g = demo().current();
    let n = &g.network;
    let links = s.get_json("/vegnett/lenker?antall=500", 200).await;
    let mut by_row: BTreeMap<(u64, String), usize> = BTreeMap::new();
    for r in 0..n.len() {
        by_row.insert((n.link_id[r], format!("{:.9}", n.from_pos[r] + 0.0)), r);
    }
    for l in links["objekter"].as_array().unwrap() {
        let key = (
            l["veglenkeid"].as_u64().unwrap(),
            format!("{:.9}", l["startposisjon"].as_f64().unwrap()),
        );
        let r = by_row[&key];
        let v = &l["vegsystemreferanse"];
        if n.system_category[r] == NO_ROAD_REF {
            assert!(v.is_null());
            continue;
        }
        let kortform = format!(
            "{}{}{} S{}D{} m{}-{}",
            n.system_category[r] as char,
            n.system_phase[r] as char,
            n.system_number[r],
            n.section[r],
            n.subsection[r],
            n.section_from_m[r],
            n.section_to_m[r]
        );
        if n.section_from_m[r] != n.section_to_m[r] {
            assert_eq!(v["kortform"], kortform);
        }
        assert_eq!(v["strekning"]["fra_meter"], n.section_from_m[r]);
        assert_eq!(v["strekning"]["til_meter"], n.section_to_m[r]);
        assert_eq!(v["vegsystem"]["nummer"], n.system_number[r]);
        assert_eq!(
            v["strekning"]["trafikantgruppe"],
            (n.traffic_group[r] as char).to_string()
        );
    }
    // a position result: the reference of the row found, its metre the v2 one (generated data)
    let r = (0..n.len())
        .find(|&r| n.system_category[r] == b'E' && n.topology_level[r] == 0)
        .unwrap();
    let [x, y, _] = n.geometry(r)[1];
    let p = s
        .get_json(&format!("/posisjon?ost={x}&nord={y}&maks_avstand=50"), 200)
        .await;
    let first = &p.as_array().unwrap()[0];
    assert_eq!(
        first["vegsystemreferanse"]["strekning"]["meter"],
        first["vegreferanse"]["meter"]
    );
    assert_eq!(
        first["vegsystemreferanse"]["vegsystem"]["nummer"],
        first["vegreferanse"]["nummer"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_references_are_422_in_the_v2_error_shape() {
    let s = demo_server().await;
    for bad in [
        "X6",
        "EVS1",
        "EV6S",
        "EV6S1D",
        "EV6S1D1m500-200",
        "EV18S41D1M2403KD3M0-35",
    ] {
        for path in [
            format!("/vegnett/lenker?vegsystemreferanse={bad}"),
            format!("/vegobjekter/105?vegsystemreferanse={bad}"),
            format!("/vegobjekter/105/statistikk?vegsystemreferanse={bad}"),
            format!(
                "/vegobjekter/105/statistikk/gruppert?gruppering=fylke&vegsystemreferanse={bad}"
            ),
            format!("/vegnett/statistikk?vegsystemreferanse={bad}"),
            format!("/veg?vegsystemreferanse={bad}"),
        ] {
            let m = s.expect_error(&path, 422, 4005).await;
            assert!(m.contains("vegsystemreferanse"), "{path}: {m}");
        }
    }
    // /veg needs a point; the position parameters do not combine
    s.expect_error("/veg?vegsystemreferanse=EV6S1D1", 422, 4005)
        .await;
    s.expect_error("/veg?vegsystemreferanse=EV6S1D1m0-5", 422, 4005)
        .await;
    s.expect_error(
        "/veg?vegsystemreferanse=EV6S1D1m1&vegreferanse=5000Ev6hp1m1",
        422,
        4009,
    )
    .await;
}
