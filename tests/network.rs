//! Road network engine against independent expectations: nearest positions against a
//! brute-force scan of every segment, and road reference ↔ link position inverses.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::sync::OnceLock;

use proptest::prelude::*;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::index::network::{row_key, RoadKey};
use vegdb::query::network::{
    locate_link, locate_road_ref, meter_exact, nearest, nearest_brute_force, NearestFilter,
    NearestQuery,
};
use vegdb::query::vegref::{HpMeter, RoadRefFilter};

fn tiny() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, 99, tmp.path()).unwrap();
        let g = Generation::load(&dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        g
    })
}

fn check(
    x: f64,
    y: f64,
    radius: f64,
    count: usize,
    filter: &NearestFilter,
) -> Result<(), TestCaseError> {
    let g = tiny();
    let q = NearestQuery {
        x,
        y,
        max_distance_m: radius,
        max_count: count,
        filter: filter.clone(),
    };
    let got = nearest(&g.network, &g.network_indexes, &g.network_index, &q);
    let want = nearest_brute_force(&g.network, &q);
    let got_rows: Vec<(u32, f64)> = got.iter().map(|p| (p.row, p.distance_m)).collect();
    prop_assert_eq!(
        got_rows.len(),
        want.len(),
        "({}, {}) r={} k={}: {:?} vs {:?}",
        x,
        y,
        radius,
        count,
        got_rows,
        want
    );
    for ((row, d), (wrow, wd2)) in got_rows.iter().zip(&want) {
        prop_assert_eq!(row, wrow, "({}, {}) r={}", x, y, radius);
        prop_assert!((d - wd2.sqrt()).abs() < 1e-9);
    }
    for w in got.windows(2) {
        prop_assert!(w[0].distance_m <= w[1].distance_m);
    }
    Ok(())
}

fn filter(conn: bool, detailed: bool) -> NearestFilter {
    NearestFilter {
        include_connection_links: conn,
        include_detailed_links: detailed,
        roads: vec![],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Points near the network (a random vertex plus noise), any radius, count and flags.
    #[test]
    fn nearest_equals_brute_force_near_roads(seed in any::<usize>(), dx in -80.0f64..80.0, dy in -80.0f64..80.0,
                                             radius in prop::sample::select(vec![0.5, 5.0, 30.0, 100.0, 250.0, 2000.0]),
                                             count in 1usize..6, conn in any::<bool>(), detailed in any::<bool>()) {
        let n = &tiny().network;
        let c = n.coords[seed % n.coords.len()];
        check(c[0] + dx, c[1] + dy, radius, count, &filter(conn, detailed))?;
    }

    /// Points exactly on vertices (several links meet at nodes: ties broken by row).
    #[test]
    fn nearest_on_vertices(seed in any::<usize>(), count in 1usize..5) {
        let n = &tiny().network;
        let c = n.coords[seed % n.coords.len()];
        check(c[0], c[1], 30.0, count, &filter(false, false))?;
        check(c[0], c[1], 30.0, count, &filter(true, true))?;
    }

    /// Far outside the network: nothing within reach, or the true nearest for huge radii.
    #[test]
    fn nearest_far_away(x in -50_000.0f64..1_100_000.0, y in 6_450_000.0f64..7_950_000.0) {
        check(x, y, 30.0, 1, &filter(false, false))?;
        check(x, y, 100_000.0, 2, &filter(false, false))?;
    }

    /// The grid's own walk over many columns, at radii nearest hands to the R-tree (the walk
    /// must still be right): every row within reach, at its distance.
    #[test]
    fn grid_walk_over_many_columns(seed in any::<usize>(), radius in prop::sample::select(vec![700.0, 1500.0, 3000.0])) {
        let g = tiny();
        let c = g.network.coords[seed % g.network.coords.len()];
        let mut got = std::collections::BTreeMap::new();
        g.network_indexes.grid.visit_within(c[0] + 7.0, c[1] - 3.0, radius, |p, d2| {
            let e = got.entry(p.row).or_insert(f64::INFINITY);
            *e = f64::min(*e, d2);
        });
        let q = NearestQuery { x: c[0] + 7.0, y: c[1] - 3.0, max_distance_m: radius, max_count: usize::MAX, filter: filter(true, true) };
        let mut want = nearest_brute_force(&g.network, &q);
        want.sort_by_key(|w| w.0);
        prop_assert_eq!(got.len(), want.len());
        for ((row, d2), (wrow, wd2)) in got.iter().zip(&want) {
            prop_assert_eq!(row, wrow);
            prop_assert!((d2 - wd2).abs() < 1e-6);
        }
    }

    /// Restricting to road references keeps exactly the matching rows.
    #[test]
    fn nearest_restricted_to_a_road(seed in any::<usize>(), cat in prop::sample::select(vec!["E", "F", "K", "Rv", "P"])) {
        let n = &tiny().network;
        let c = n.coords[seed % n.coords.len()];
        let f = NearestFilter { roads: vec![RoadRefFilter::parse(cat).unwrap()], ..Default::default() };
        check(c[0] + 20.0, c[1] - 15.0, 500.0, 3, &f)?;
    }
}

/// The point reference `key` at meter `m`.
fn point_ref(key: &RoadKey, m: u32) -> RoadRefFilter {
    RoadRefFilter {
        county: Some(key.county),
        municipality_part: Some(key.municipality_part),
        category: Some(key.category),
        status: Some(key.status),
        number: Some(key.number),
        from: Some(HpMeter {
            hp: key.hp,
            meter: Some(m),
        }),
        to: None,
    }
}

#[test]
fn road_reference_and_link_position_are_inverses() {
    let g = tiny();
    let n = &g.network;
    let mut checked = 0;
    for row in (0..n.len()).step_by(7) {
        if n.topology_level[row] != 0 || n.to_m[row] == n.from_m[row] {
            continue;
        }
        let key = row_key(n, row);
        for m in [n.from_m[row], (n.from_m[row] + n.to_m[row]) / 2] {
            let f = point_ref(&key, m);
            let p = locate_road_ref(n, &g.network_indexes, &f)
                .expect("a meter inside the segment is found");
            // meter -> position -> meter within 1 mm
            let back_row = p.row as usize;
            assert!(
                (meter_exact(n, back_row, p.position) - m as f64).abs() < 1e-3,
                "{}",
                key.point(m)
            );
            // position -> reference gives the same reference
            let q = locate_link(n, p.link_id.get(), p.position).unwrap();
            let q_ref = row_key(n, q.row as usize).point(q.meter);
            if q.row == p.row {
                assert_eq!(q_ref, key.point(m));
            } else {
                // a point where two hp parts meet has both references; each leads to the same place
                let other = locate_road_ref(
                    n,
                    &g.network_indexes,
                    &RoadRefFilter::parse_point(&q_ref).unwrap(),
                )
                .unwrap();
                assert_eq!(
                    (other.link_id, other.position),
                    (p.link_id, p.position),
                    "{q_ref} vs {}",
                    key.point(m)
                );
            }
            // the text form parses back to the same point
            let again = locate_road_ref(
                n,
                &g.network_indexes,
                &RoadRefFilter::parse_point(&key.point(m)).unwrap(),
            )
            .unwrap();
            assert_eq!((again.link_id, again.position), (p.link_id, p.position));
            checked += 1;
        }
    }
    assert!(checked > 300, "{checked}");
}

/// The oracle: every level-0 row of the road part scanned, the first by (from_m, link id)
/// whose meters hold the meter; none when no row does (meters before, between and past the
/// rows too).
#[test]
fn a_point_reference_is_the_first_row_by_meter_that_holds_it() {
    let g = tiny();
    let n = &g.network;
    let mut found = 0;
    for row in (0..n.len()).step_by(3) {
        if n.topology_level[row] != 0 {
            continue;
        }
        let key = row_key(n, row);
        let (lo, hi) = (n.from_m[row], n.to_m[row]);
        for m in [
            0,
            lo.saturating_sub(1),
            lo,
            (lo + hi) / 2,
            hi,
            hi + 1,
            hi + 5000,
        ] {
            let f = point_ref(&key, m);
            let expected = (0..n.len())
                .filter(|&r| n.topology_level[r] == 0 && row_key(n, r) == key)
                .filter(|&r| n.from_m[r] <= m && m <= n.to_m[r])
                .min_by_key(|&r| (n.from_m[r], n.link_id[r], r));
            let got = locate_road_ref(n, &g.network_indexes, &f).map(|p| p.row as usize);
            assert_eq!(got, expected, "{}", key.point(m));
            found += usize::from(got.is_some());
        }
    }
    assert!(found > 100, "{found} references found");
}

/// (row to start from, metre offset from its from-metre, phase given, municipality: 0 none,
/// 1 the row's, 2 another, strekning/delstrekning nudge)
type SystemCase = (usize, i64, bool, u8, (i32, i32));

fn system_case() -> impl Strategy<Value = SystemCase> {
    (
        any::<usize>(),
        -3i64..400,
        any::<bool>(),
        0u8..3,
        prop_oneof![
            6 => Just((0, 0)),
            1 => (-1i32..=1, -1i32..=1),
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The indexed lookup of a point road system reference (`system_ref::locate`, what `/veg`
    /// answers) finds the row and position a scan of every row finds (`locate_scan`), for
    /// references near real rows: inside, at and past their metres, with and without phase
    /// and municipality, and at neighbouring strekninger and delstrekninger.
    #[test]
    fn the_system_ref_index_finds_what_a_scan_finds(c in system_case()) {
        use vegdb::query::system_ref::{locate, locate_scan, SystemRefFilter};
        let g = tiny();
        let n = &g.network;
        let with_ref: Vec<usize> =
            (0..n.len()).filter(|&r| n.system_category[r] != vegdb::snapshot::columns::NO_ROAD_REF).collect();
        prop_assume!(!with_ref.is_empty());
        let (pick, dm, phase, kommune, (ds, dd)) = c;
        let r = with_ref[pick % with_ref.len()];
        let m = (i64::from(n.section_from_m[r]) + dm).max(0) as u32;
        let f = SystemRefFilter {
            municipality: match kommune {
                0 => None,
                1 => Some(n.municipality[r]),
                _ => Some(n.municipality[r] ^ 1),
            },
            category: n.system_category[r],
            phase: phase.then_some(n.system_phase[r]),
            number: Some(n.system_number[r]),
            sections: {
                let s = (i64::from(n.section[r]) + i64::from(ds)).max(0) as u32;
                Some((s, s))
            },
            subsection: Some((i64::from(n.subsection[r]) + i64::from(dd)).max(0) as u32),
            metres: Some((m, m)),
        };
        let idx = g.network_indexes.system_refs(n);
        let got = locate(n, idx, &f);
        let want = locate_scan(n, &f);
        prop_assert_eq!(got.map(|(r, p)| (r, p.to_bits())), want.map(|(r, p)| (r, p.to_bits())), "{}", f.short());
        // through the generation too
        let p = g.locate_system_ref(&f).map(|p| p.row as usize);
        prop_assert_eq!(p, want.map(|(r, _)| r));
    }
}

/// A `vegsystemreferanse` filter near network row `pick`: how far it goes (0 category only,
/// 1 number, 2 strekning range, 3 delstrekning, 4 metre range), phase given, municipality (0
/// none, 1 the row's, 2 another), strekning nudge and range width, metre range offsets.
type SystemFilterCase = (usize, u8, bool, u8, (i32, u32), (i64, i64));

fn system_filter_case() -> impl Strategy<Value = SystemFilterCase> {
    (
        any::<usize>(),
        0u8..5,
        any::<bool>(),
        0u8..3,
        (-1i32..=1, 0u32..3),
        (-300i64..300, 0i64..600),
    )
}

fn system_filter(
    n: &vegdb::snapshot::columns::RoadNetwork,
    r: usize,
    c: SystemFilterCase,
) -> vegdb::query::system_ref::SystemRefFilter {
    let (_, depth, phase, kommune, (ds, width), (dm, len)) = c;
    let s = (i64::from(n.section[r]) + i64::from(ds)).max(0) as u32;
    let sections = if depth == 2 { (s, s + width) } else { (s, s) };
    let m = (i64::from(n.section_from_m[r]) + dm).max(0) as u32;
    vegdb::query::system_ref::SystemRefFilter {
        municipality: match kommune {
            0 => None,
            1 => Some(n.municipality[r]),
            _ => Some(n.municipality[r] ^ 1),
        },
        category: n.system_category[r],
        phase: phase.then_some(n.system_phase[r]),
        number: (depth >= 1).then_some(n.system_number[r]),
        sections: (depth >= 2).then_some(sections),
        subsection: (depth >= 3).then_some(n.subsection[r]).map(u32::from),
        metres: (depth >= 4).then_some((m, m + len as u32)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The `vegsystemreferanse` filter of object lists, statistikk and `/vegnett/lenker`
    /// selects through the rows sorted by road system reference (`system_ref::select`,
    /// `NetworkAttributeFilter::rows` and `retain`) exactly the rows a check of every row
    /// selects (`select_scan`, `rows_scan`), for one to three references near real rows (any
    /// depth from the category to a metre range, with and without phase and municipality),
    /// alone and with another network attribute, and within a given set of rows.
    #[test]
    fn the_system_ref_filter_selects_what_a_scan_selects(
        cases in prop::collection::vec(system_filter_case(), 1..4),
        group in prop::option::of(prop::sample::select(vec![b'K', b'G'])),
        every in 1usize..4,
    ) {
        use vegdb::query::attributes::NetworkAttributeFilter;
        use vegdb::query::system_ref::{select, select_scan};
        let g = tiny();
        let n = &g.network;
        let with_ref: Vec<usize> =
            (0..n.len()).filter(|&r| n.system_category[r] != vegdb::snapshot::columns::NO_ROAD_REF).collect();
        prop_assume!(!with_ref.is_empty());
        let idx = g.network_indexes.system_refs(n);
        let refs: Vec<_> = cases
            .iter()
            .map(|c| system_filter(n, with_ref[c.0 % with_ref.len()], *c))
            .collect();
        for f in &refs {
            let mut got = select(n, idx, f);
            got.sort_unstable();
            prop_assert_eq!(got, select_scan(n, f), "{}", f.short());
        }
        let f = NetworkAttributeFilter {
            traffic_groups: group.into_iter().collect(),
            system_refs: refs,
            ..Default::default()
        };
        let want = f.rows_scan(n);
        prop_assert_eq!(&f.rows(n, &g.network_indexes), &want);
        let some: roaring::RoaringBitmap = (0..n.len() as u32).step_by(every).collect();
        prop_assert_eq!(f.retain(n, &g.network_indexes, &some), &want & &some);
    }
}

#[test]
fn the_system_ref_index_is_exercised_on_tiny() {
    use vegdb::query::system_ref::{locate_scan, SystemRefFilter};
    // the tiny network has several phases and topology levels to choose among
    let g = tiny();
    let n = &g.network;
    let idx = g.network_indexes.system_refs(n);
    assert!(!idx.phases().is_empty());
    let found = (0..n.len())
        .step_by(11)
        .filter(|&r| n.system_category[r] != vegdb::snapshot::columns::NO_ROAD_REF)
        .filter(|&r| {
            let f = SystemRefFilter::parse_point(&format!(
                "{}{}{}S{}D{}m{}",
                n.system_category[r] as char,
                n.system_phase[r] as char,
                n.system_number[r],
                n.section[r],
                n.subsection[r],
                n.section_from_m[r]
            ))
            .unwrap();
            locate_scan(n, &f).is_some()
                && g.locate_system_ref(&f).map(|p| p.row)
                    == locate_scan(n, &f).map(|(r, _)| r as u32)
        })
        .count();
    assert!(found > 100, "{found}");
}
