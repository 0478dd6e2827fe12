//! The filters `polygon`, `ider` and `endret_etter` on object lists, statistics and
//! `/vegnett/lenker`, against brute force over the tiny generated dataset: random polygons
//! (star-shaped rings, some with a hole, some two polygons) select exactly the objects whose
//! geometry a plain `geo` check finds intersecting, and, segmented, the length of the parts
//! inside (sampled along each line); combined with `kommune`, `ider` and `endret_etter` they
//! select the intersection of what each selects alone (each of those by scanning the table), as
//! with `kartutsnitt` and `overlapp`; a polygon in longitude/latitude is exact there.
//! Through the real server the answers agree, and bad input is 422 in the v2 error shape.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use geo::{Intersects, LineString, MultiPolygon, Point, Polygon};
use proptest::prelude::*;
use roaring::RoaringBitmap;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::area::AreaKind;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::feature::Geometry;
use vegdb::generation::spatial::geometry;
use vegdb::generation::{Generation, GenerationStore, TypeData};
use vegdb::geo::area_polygon::AreaPolygon;
use vegdb::geo::map_extent::MapExtent;
use vegdb::geo::srid::Srid;
use vegdb::query::network::NetworkAreaFilter;
use vegdb::query::objects::{select, total_length, ObjectFilter};
use wkt::ToWkt;

fn tiny_dir() -> &'static std::path::Path {
    static D: OnceLock<std::path::PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, 5, tmp.path()).unwrap();
        std::mem::forget(tmp);
        dir
    })
}

fn tiny() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| Generation::load(tiny_dir(), &|_| {}).unwrap().0)
}

/// A star-shaped ring around `c`: `k` vertices at sorted angles with radii in `r`.
fn star(c: (f64, f64), radii: &[f64], turn: f64) -> LineString<f64> {
    let k = radii.len();
    let mut pts: Vec<(f64, f64)> = radii
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let a = turn + std::f64::consts::TAU * i as f64 / k as f64;
            (c.0 + r * a.cos(), c.1 + r * a.sin())
        })
        .collect();
    pts.push(pts[0]);
    LineString::from(pts)
}

/// (centre row, radii, hole, second polygon's centre row)
type Shape = (usize, Vec<f64>, bool, Option<usize>);

fn shapes() -> impl Strategy<Value = Shape> {
    (
        any::<usize>(),
        prop::collection::vec(150.0f64..3000.0, 3..12),
        any::<bool>(),
        prop::option::of(any::<usize>()),
    )
}

/// The polygon of a shape, around network vertices of the tiny dataset (storage system).
fn polygon(g: &Generation, s: &Shape) -> MultiPolygon<f64> {
    let n = &g.network;
    let centre = |i: usize| {
        let c = n.geometry(i % n.len())[0];
        (c[0], c[1])
    };
    let make = |c: (f64, f64)| {
        let min = s.1.iter().cloned().fold(f64::INFINITY, f64::min);
        let holes = if s.2 {
            vec![star(c, &[min * 0.4; 5], 0.3)]
        } else {
            vec![]
        };
        Polygon::new(star(c, &s.1, 0.0), holes)
    };
    let mut polys = vec![make(centre(s.0))];
    if let Some(other) = s.3 {
        // a second part only where it is apart from the first: parts that overlap or share
        // boundary are no valid MULTIPOLYGON (422/4011, tests/polygon_validity.rs)
        let second = make(centre(other));
        if !geo::Intersects::intersects(&second, &polys[0]) {
            polys.push(second);
        }
    }
    MultiPolygon(polys)
}

/// Does a storage geometry intersect the polygon (plain `geo`)?
fn meets(geom: &Geometry, m: &MultiPolygon<f64>) -> bool {
    let line =
        |l: &[[f64; 3]]| LineString::from(l.iter().map(|c| (c[0], c[1])).collect::<Vec<_>>());
    match geom {
        Geometry::Point(p) => Point::new(p[0], p[1]).intersects(m),
        Geometry::LineString(l) => line(l).intersects(m),
        Geometry::MultiLineString(ls) => ls.iter().any(|l| line(l).intersects(m)),
        Geometry::MultiPolygon(ps) => ps.iter().any(|rings| {
            let mut ls: Vec<LineString<f64>> = rings.iter().map(|r| line(r)).collect();
            let ext = ls.remove(0);
            Polygon::new(ext, ls).intersects(m)
        }),
    }
}

/// The objects whose geometry intersects the polygon, and the length of their parts inside
/// (each part's line sampled in 400 pieces, a piece in when its middle is).
fn brute(g: &Generation, d: &TypeData, m: &MultiPolygon<f64>) -> (RoaringBitmap, f64) {
    let mut rows = RoaringBitmap::new();
    let mut length = 0.0;
    for o in 0..d.table.len() {
        if !geometry(g, d, o).is_some_and(|geom| meets(&geom, m)) {
            continue;
        }
        rows.insert(o as u32);
        for p in g.object_parts(&d.table, o, None) {
            if p.to <= p.from {
                continue;
            }
            let seg = g.segment(p.net_row as usize);
            const N: usize = 400;
            let step = (p.to - p.from) / N as f64;
            let inside = (0..N)
                .filter(|&i| {
                    let c = seg.point_at(p.from + (i as f64 + 0.5) * step);
                    Point::new(c[0], c[1]).intersects(m)
                })
                .count();
            length += p.length_m * inside as f64 / N as f64;
        }
    }
    (rows, length)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Random polygons select what the plain check selects, cut what it cuts, and combine
    /// with kommune, ider and endret_etter as an intersection.
    #[test]
    fn polygon_selects_and_cuts_as_brute_force(s in shapes(), ti in 0usize..3, pick in any::<u64>()) {
        let g = tiny();
        let m = polygon(g, &s);
        let a = AreaPolygon::new(Srid::Utm33Etrs89, m.clone()).unwrap();
        let d = &g.objects[&[105u32, 95, 241][ti]];
        let f = ObjectFilter { polygon: Some(std::sync::Arc::new(a.clone())), ..Default::default() };
        let rows = select(g, d, &f).into_owned();
        let (want, want_len) = brute(g, d, &m);
        prop_assert_eq!(&rows, &want);
        let len = total_length(g, d, &rows, &f, true);
        // sampling errs by at most a piece per boundary crossing
        prop_assert!((len - want_len).abs() <= 0.02 * want_len + 5.0, "{} vs {}", len, want_len);
        // with kommune, ider and endret_etter: the intersection of each alone
        let t = &d.table;
        let kommune = g.network.municipality[pick as usize % g.network.len()] as u32;
        let ids: Vec<u64> = (0..t.len()).filter(|o| !(*o as u64).wrapping_add(pick).is_multiple_of(3)).map(|o| t.id[o]).collect();
        let after = t.last_modified.get(pick as usize % t.len().max(1)).copied().unwrap_or(0);
        let by_area = select(g, d, &ObjectFilter { any_of: vec![(AreaKind::Municipality, kommune)], ..Default::default() }).into_owned();
        let by_scan: RoaringBitmap = (0..t.len())
            .filter(|&o| ids.contains(&t.id[o]) && t.last_modified[o] > after)
            .map(|o| o as u32)
            .collect();
        let all = ObjectFilter {
            any_of: vec![(AreaKind::Municipality, kommune)],
            polygon: Some(std::sync::Arc::new(a)),
            ids: Some(ids.clone()),
            modified_after: Some(after),
            ..Default::default()
        };
        let got = select(g, d, &all).into_owned();
        prop_assert_eq!(got, &(&want & &by_area) & &by_scan);
        // with kartutsnitt and overlapp: the intersection too
        let c = m.0[0].exterior().0[0];
        let e = MapExtent::new(Srid::Utm33Etrs89, [c.x - 2000.0, c.y - 2500.0, c.x + 1500.0, c.y + 2000.0]).unwrap();
        let by_box = select(g, d, &ObjectFilter { bbox: Some(e.clone()), ..Default::default() }).into_owned();
        let by_overlap = select(g, d, &ObjectFilter { overlaps: vec![(105, None)], ..Default::default() }).into_owned();
        let f = ObjectFilter {
            polygon: all.polygon.clone(),
            bbox: Some(e),
            overlaps: vec![(105, None)],
            ..Default::default()
        };
        prop_assert_eq!(select(g, d, &f).into_owned(), &(&want & &by_box) & &by_overlap);
    }

    /// Network rows: those whose geometry intersects the polygon.
    #[test]
    fn links_in_polygon_are_brute_force(s in shapes()) {
        let g = tiny();
        let m = polygon(g, &s);
        let got = g.select_segments(&NetworkAreaFilter {
            polygon: Some(std::sync::Arc::new(
                AreaPolygon::new(Srid::Utm33Etrs89, m.clone()).unwrap(),
            )),
            ..Default::default()
        });
        let n = &g.network;
        let want: RoaringBitmap = (0..n.len())
            .filter(|&r| {
                let l = n.geometry(r);
                let geom = if l.len() == 1 { Geometry::Point(l[0]) } else { Geometry::LineString(l.to_vec()) };
                meets(&geom, &m)
            })
            .map(|r| r as u32)
            .collect();
        prop_assert_eq!(got, want);
    }
}

/// `ider` and `endret_etter` alone: the rows a scan of the table finds.
#[test]
fn ids_and_modified_after_scan_the_table() {
    let g = tiny();
    for (&tid, d) in g.objects.iter().take(8) {
        let t = &d.table;
        let ids: Vec<u64> = t.id.iter().step_by(7).copied().chain([u64::MAX]).collect();
        let got = select(
            g,
            d,
            &ObjectFilter {
                ids: Some(ids.clone()),
                ..Default::default()
            },
        );
        let want: RoaringBitmap = (0..t.len())
            .filter(|&o| o % 7 == 0)
            .map(|o| o as u32)
            .collect();
        assert_eq!(*got, want, "type {tid}");
        let mut times: Vec<i64> = t.last_modified.to_vec();
        times.sort_unstable();
        let after = times.get(times.len() / 2).copied().unwrap_or(0);
        let got = select(
            g,
            d,
            &ObjectFilter {
                modified_after: Some(after),
                ..Default::default()
            },
        );
        assert_eq!(got.len(), d.count_modified_after(after), "type {tid}");
        for o in got.iter() {
            assert!(t.last_modified[o as usize] > after);
        }
    }
}

/// A polygon in longitude/latitude is exact there: the objects whose geometry, its vertices
/// transformed into 4326, intersects it (plain `geo`).
#[test]
fn a_lon_lat_polygon_is_exact_in_lon_lat() {
    let g = tiny();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..10 {
        let s = proptest::strategy::ValueTree::current(&shapes().new_tree(&mut runner).unwrap());
        let utm = polygon(g, &s);
        // the same shape's vertices in lon/lat, straight there
        let ll = MultiPolygon(
            utm.0
                .iter()
                .map(|p| {
                    let ring = |l: &LineString<f64>| {
                        LineString::from(
                            l.coords()
                                .map(|c| {
                                    vegdb::geo::srid::from_storage(Srid::Wgs84, c.x, c.y).unwrap()
                                })
                                .collect::<Vec<_>>(),
                        )
                    };
                    Polygon::new(ring(p.exterior()), p.interiors().iter().map(ring).collect())
                })
                .collect(),
        );
        let a = AreaPolygon::new(Srid::Wgs84, ll.clone()).unwrap();
        for tid in [105u32, 95] {
            let d = &g.objects[&tid];
            let got = select(
                g,
                d,
                &ObjectFilter {
                    polygon: Some(std::sync::Arc::new(a.clone())),
                    ..Default::default()
                },
            )
            .into_owned();
            let want: RoaringBitmap = (0..d.table.len())
                .filter(|&o| {
                    geometry(g, d, o)
                        .is_some_and(|geom| meets(&geom.to_srid(Srid::Wgs84).unwrap(), &ll))
                })
                .map(|o| o as u32)
                .collect();
            assert_eq!(got, want, "type {tid}");
        }
    }
}

/// A real server over the tiny generation.
async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = AppState::read_only(
        Arc::new(GenerationStore::new(
            Generation::load(tiny_dir(), &|_| {}).unwrap().0,
        )),
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

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Through the server: statistikk, the list and `/vegnett/lenker` answer what brute force
/// selects for seeded random polygons (WKT and the plain coordinate list); `ider` and
/// `endret_etter` combine; bad input is 422 with a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_what_brute_force_selects() {
    let base = serve().await;
    let g = tiny();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = shapes();
    let mut nonempty = 0;
    for i in 0..12 {
        let s = proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).unwrap());
        let m = polygon(g, &s);
        let text = if i % 3 == 0 {
            // the plain coordinate list (one ring)
            let ring: Vec<String> = m.0[0]
                .exterior()
                .coords()
                .map(|c| format!("{} {}", c.x, c.y))
                .collect();
            ring.join(", ")
        } else {
            m.wkt_string()
        };
        let m = if i % 3 == 0 {
            MultiPolygon(vec![Polygon::new(m.0[0].exterior().clone(), vec![])])
        } else {
            m
        };
        let q = format!("polygon={}&srid=25833", enc(&text));
        let (status, body) = get(&format!("{base}/vegobjekter/105/statistikk?{q}")).await;
        assert_eq!(status, 200, "{q}: {body}");
        let (rows, length) = brute(g, &g.objects[&105], &m);
        assert_eq!(body["antall"].as_u64().unwrap(), rows.len(), "{q}");
        let got = body["strekningslengde"].as_f64().unwrap();
        assert!(
            (got - length).abs() <= 0.02 * length + 5.0,
            "{q}: {got} vs {length}"
        );
        nonempty += usize::from(!rows.is_empty());
        let (status, body) = get(&format!("{base}/vegnett/lenker?antall=10000&{q}")).await;
        assert_eq!(status, 200, "{q}: {body}");
        let want = (0..g.network.len())
            .filter(|&r| {
                let l = g.network.geometry(r);
                LineString::from(l.iter().map(|c| (c[0], c[1])).collect::<Vec<_>>()).intersects(&m)
            })
            .count();
        assert_eq!(body["objekter"].as_array().unwrap().len(), want, "{q}");
        // ider: the listed objects among the polygon's
        let ids: Vec<String> = g.objects[&105]
            .table
            .id
            .iter()
            .take(40)
            .map(u64::to_string)
            .collect();
        let (status, body) = get(&format!(
            "{base}/vegobjekter/105?antall=1000&{q}&ider={}",
            ids.join(",")
        ))
        .await;
        assert_eq!(status, 200, "{q}: {body}");
        let want = rows.iter().filter(|&o| o < 40).count();
        assert_eq!(body["objekter"].as_array().unwrap().len(), want, "{q}");
        // every part of every listed object, cut to the polygon, with kartutsnitt and overlapp
        let (x0, y0) = (m.0[0].exterior().0[0].x, m.0[0].exterior().0[0].y);
        let (status, body) = get(&format!(
            "{base}/vegobjekter/95?antall=1000&inkluder=alle&{q}&overlapp=105&kartutsnitt={},{},{},{}",
            x0 - 5000.0, y0 - 5000.0, x0 + 5000.0, y0 + 5000.0
        ))
        .await;
        assert_eq!(status, 200, "{q}: {body}");
    }
    assert!(nonempty >= 4, "{nonempty}");
    let many: Vec<String> = (1..=1001).map(|i| i.to_string()).collect();
    let big: Vec<String> = (0..2_001).map(|i| format!("{} {}", i, i % 2)).collect();
    for (q, code) in [
        ("polygon=POLYGON((0 0, 1 0))".to_string(), 4011),
        ("polygon=POLYGON((0 0, 1 0, 1 1, 0 0)".to_string(), 4011),
        ("polygon=LINESTRING(0 0, 1 1)".to_string(), 4011),
        (format!("polygon={}", enc(&big.join(","))), 4011),
        (format!("ider={}", many.join(",")), 4003),
        ("ider=1,x".to_string(), 4003),
        ("endret_etter=27.05.2015".to_string(), 0),
    ] {
        for path in ["/vegobjekter/105", "/vegobjekter/105/statistikk"] {
            let (status, body) = get(&format!("{base}{path}?{q}")).await;
            assert_eq!(status, 422, "{path}?{q}: {body}");
            if code != 0 {
                assert_eq!(body[0]["code"], code, "{path}?{q}: {body}");
            }
            assert!(body[0]["message"].is_string(), "{body}");
        }
    }
    let (status, body) = get(&format!("{base}/vegnett/lenker?polygon=POLYGON((0%200))")).await;
    assert_eq!(status, 422, "{body}");
    // a ring crossing itself (a bow tie in the demo's area), in both spellings: refused where
    // every polygon is taken, naming where it crosses
    let bowtie = "270000 7030000, 271000 7031000, 271000 7030000, 270000 7031000";
    for q in [
        format!(
            "polygon={}&srid=25833",
            enc(&format!("POLYGON(({bowtie}))"))
        ),
        format!("polygon={}&srid=25833", enc(bowtie)),
    ] {
        for path in [
            "/vegobjekter/105",
            "/vegobjekter/105/statistikk",
            "/vegnett/lenker",
        ] {
            let (status, body) = get(&format!("{base}{path}?{q}")).await;
            assert_eq!(status, 422, "{path}?{q}: {body}");
            assert_eq!(body[0]["code"], 4011, "{path}?{q}: {body}");
            let m = body[0]["message"].as_str().unwrap();
            assert!(
                m.contains("krysser eller berører seg selv ved (270500 7030500)"),
                "{m}"
            );
        }
    }
    // endret_etter in the endringer forms
    let (status, body) = get(&format!(
        "{base}/vegobjekter/105/statistikk?endret_etter=2015-05-27"
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let want = g.objects[&105].count_modified_after(1_432_677_600);
    assert_eq!(body["antall"].as_u64().unwrap(), want);
}

/// The ids of an object list walked page by page through the server: JSON (the newest
/// revision: no total, a page decided lazily) until a page returns nothing, following
/// `neste.start`; CSV following its `Link` header until there is none.
async fn walk(base: &str, query: &str, csv: bool) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut url = if csv {
        format!("{base}/vegobjekter/105.csv?{query}")
    } else {
        format!("{base}/vegobjekter/105?{query}")
    };
    for _ in 0..10_000 {
        let r = reqwest::Client::new()
            .get(&url)
            .header("X-Client", "vegdb-test")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{url}");
        if csv {
            let next = r.headers().get("link").map(|l| {
                let l = l.to_str().unwrap();
                l[l.find('<').unwrap() + 1..l.find('>').unwrap()].to_string()
            });
            let text = r.text().await.unwrap();
            let rows: Vec<&str> = text.lines().skip(1).collect();
            assert!(
                !rows.is_empty() || ids.is_empty(),
                "an empty page past the first: {url}"
            );
            ids.extend(
                rows.iter()
                    .map(|l| l.split(',').next().unwrap().parse::<u64>().unwrap()),
            );
            match next {
                Some(n) => url = n,
                None => return ids,
            }
        } else {
            let body: serde_json::Value = r.json().await.unwrap();
            let page = body["objekter"].as_array().unwrap();
            assert_eq!(
                body["metadata"]["returnert"].as_u64().unwrap(),
                page.len() as u64
            );
            assert!(body["metadata"].get("antall").is_none(), "{body}");
            if page.is_empty() {
                return ids;
            }
            ids.extend(page.iter().map(|o| o["id"].as_u64().unwrap()));
            let start = body["metadata"]["neste"]["start"].as_str().unwrap();
            url = format!("{base}/vegobjekter/105?{query}&start={start}");
        }
    }
    panic!("no end: {url}");
}

/// Walking a polygon's list page by page (random polygons and page sizes, alone and with a
/// kommune) gives, in order and each once, the objects brute force finds: in JSON, whose pages
/// are decided lazily, and in CSV, whose last page has no next link; revision 0 still counts
/// them all in `metadata.antall`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polygon_pages_walk_to_what_brute_force_selects() {
    let base = serve().await;
    let g = tiny();
    let d = &g.objects[&105];
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (shapes(), 1usize..40, any::<bool>());
    let mut walked = 0;
    for _ in 0..10 {
        let (s, size, with_kommune) =
            proptest::strategy::ValueTree::current(&strategy.new_tree(&mut runner).unwrap());
        let m = polygon(g, &s);
        let (mut rows, _) = brute(g, d, &m);
        let mut q = format!("antall={size}&polygon={}&srid=25833", enc(&m.wkt_string()));
        if with_kommune {
            let k = g.network.municipality[s.0 % g.network.len()] as u32;
            q.push_str(&format!("&kommune={k}"));
            rows &= select(
                g,
                d,
                &ObjectFilter {
                    any_of: vec![(AreaKind::Municipality, k)],
                    ..Default::default()
                },
            )
            .into_owned();
        }
        let want: Vec<u64> = rows.iter().map(|r| d.table.id[r as usize]).collect();
        assert_eq!(walk(&base, &q, false).await, want, "{q}");
        assert_eq!(walk(&base, &q, true).await, want, "{q} (csv)");
        let r = reqwest::Client::new()
            .get(format!("{base}/vegobjekter/105?{q}"))
            .header("Accept", "application/vnd.vegvesen.nvdb-v2+json")
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(
            body["metadata"]["antall"].as_u64(),
            Some(want.len() as u64),
            "{q}"
        );
        walked += usize::from(want.len() > size);
    }
    assert!(walked >= 3, "{walked} walks of more than a page");
}
