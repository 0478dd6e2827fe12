//! The road at a past day against a brute-force oracle: a generation with history (the tiny
//! dataset, with older versions, closed objects and closed, moved links added here by a
//! seeded rule) written in format 4 and loaded, and at random days its view
//! (`Generation::at`) compared with "valid at t" evaluated over every version row: which
//! version of each object, `statistikk` (count and length in a kommune), the nearest road
//! position, and each object's versions.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vegdb::area::{AreaKind, Areas};
use vegdb::catalog::Catalog;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::time::today;
use vegdb::generation::Generation;
use vegdb::index::bitmaps::part_length;
use vegdb::index::grid::segment_distance2;
use vegdb::query::network::{nearest, NearestFilter, NearestQuery};
use vegdb::query::objects::{select, total_length, ObjectFilter};
use vegdb::snapshot::builder::{Description, GenerationBuilder};
use vegdb::snapshot::columns::{Days, ObjectTable, RoadNetwork, OPEN_END};
use vegdb::snapshot::store::DataDir;

const YEAR: Days = 365;

/// The oracle's own rule: valid from `s` (inclusive) to `e` (exclusive, `OPEN_END` = open).
fn valid(s: Days, e: Days, day: Days) -> bool {
    s <= day && (e == OPEN_END || day < e)
}

struct Fixture {
    g: Generation,
    /// Every version row: (type, table with current and closed rows).
    all: BTreeMap<u32, ObjectTable>,
    /// Every network row, current and closed.
    net: RoadNetwork,
    /// Rows of `net` by link id.
    rows_of: HashMap<u64, Vec<usize>>,
    first_day: Days,
}

/// Older versions, closed objects and closed links added to the tiny dataset.
fn with_history(g0: &Generation) -> (BTreeMap<u32, ObjectTable>, RoadNetwork) {
    let mut rng = ChaCha8Rng::seed_from_u64(28);
    let mut history = BTreeMap::new();
    let mut next_id = g0.next_object_id;
    for (&t, d) in &g0.objects {
        let cur = &d.table;
        let mut rows: Vec<(usize, u64, u32, Days, Days)> = Vec::new();
        for r in 0..cur.len() {
            let start = cur.start_date[r];
            // older versions: up to three, back to back before the current one
            if rng.random_bool(0.3) {
                let mut end = start;
                for k in 1..=rng.random_range(1..=3u32) {
                    let s = end - rng.random_range(30..4 * YEAR);
                    rows.push((r, cur.id[r], cur.version[r] + 100 - k, s, end));
                    end = s;
                }
            }
            // a closed object of its own
            if rng.random_bool(0.05) {
                let s = start - rng.random_range(2 * YEAR..8 * YEAR);
                rows.push((r, next_id, 1, s, s + rng.random_range(30..2 * YEAR)));
                next_id += 1;
            }
        }
        rows.sort_by_key(|&(_, id, v, _, _)| (id, v));
        let order: Vec<usize> = rows.iter().map(|r| r.0).collect();
        let mut h = cur.take(&order).unwrap();
        for (i, &(_, id, v, s, e)) in rows.iter().enumerate() {
            h.id[i] = id;
            h.version[i] = v;
            h.start_date[i] = s;
            h.end_date[i] = e;
        }
        if !h.is_empty() {
            history.insert(t, h);
        }
    }
    // closed links: a link's rows as they lay before (5 m east), closed when the link's
    // current rows started
    let n = &g0.network;
    let mut closed = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    let links: BTreeSet<u64> = n.link_id.iter().copied().collect();
    for link in links {
        if !rng.random_bool(0.05) {
            continue;
        }
        let rows = n.rows_of_link(link);
        let end = rows.clone().map(|r| n.start_date[r]).min().unwrap();
        let start = end - rng.random_range(YEAR..10 * YEAR);
        for r in rows {
            closed.append_rows(n, r..r + 1);
            let i = closed.len() - 1;
            closed.start_date[i] = start;
            closed.end_date[i] = end;
            let geo = closed.geom_offsets[i] as usize..closed.geom_offsets[i + 1] as usize;
            for c in &mut closed.coords[geo] {
                c[0] += 5.0;
            }
        }
    }
    (history, closed)
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, 5, &tmp.path().join("base")).unwrap();
        let g0 = Generation::load(&dir, &|_| {}).unwrap().0;
        let (history, closed) = with_history(&g0);
        let data = DataDir::open(tmp.path().join("data")).unwrap();
        let mut b =
            GenerationBuilder::fresh(&data, Catalog::embedded(), Areas::embedded()).unwrap();
        let tables = g0.objects.values().map(|d| &*d.table);
        b.write_tables(&g0.network, tables, Some(&g0.deleted))
            .unwrap();
        b.write_history(&g0.network, &closed, history.values())
            .unwrap();
        let published = b.publish(&data, Description::default()).unwrap();
        let g = Generation::load(&published.dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        assert_eq!(g.network_history.len(), closed.len());
        let mut all = BTreeMap::new();
        for (&t, d) in &g0.objects {
            let mut parts = vec![d.table.clone()];
            parts.extend(history.get(&t).cloned());
            all.insert(t, ObjectTable::concat_any_order(t, parts).unwrap());
        }
        let mut net = (*g0.network).clone();
        net.append_rows(&closed, 0..closed.len());
        let first_day = all
            .values()
            .flat_map(|t| t.start_date.iter())
            .chain(net.start_date.iter())
            .copied()
            .min()
            .unwrap();
        let mut rows_of: HashMap<u64, Vec<usize>> = HashMap::new();
        for r in 0..net.len() {
            rows_of.entry(net.link_id[r]).or_default().push(r);
        }
        Fixture {
            g,
            all,
            net,
            rows_of,
            first_day,
        }
    })
}

/// (id, version) of every version valid at `day`, by type.
fn valid_versions(f: &Fixture, day: Days) -> BTreeMap<u32, BTreeSet<(u64, u32)>> {
    f.all
        .iter()
        .map(|(&t, table)| {
            let set = (0..table.len())
                .filter(|&r| valid(table.start_date[r], table.end_date[r], day))
                .map(|r| (table.id[r], table.version[r]))
                .collect();
            (t, set)
        })
        .collect()
}

/// Network rows valid at `day` that an object row touches (the area rule: overlaps or
/// touches its placement).
fn touched(f: &Fixture, t: &ObjectTable, row: usize, day: Days) -> Vec<usize> {
    let n = &f.net;
    let mut out = Vec::new();
    for p in t.placements(row) {
        let rows = f
            .rows_of
            .get(&t.loc_link[p])
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for &r in rows {
            if valid(n.start_date[r], n.end_date[r], day)
                && n.from_pos[r] <= t.loc_to[p]
                && n.to_pos[r] >= t.loc_from[p]
            {
                out.push(r);
            }
        }
    }
    out
}

fn check_day(f: &Fixture, day: Days, seed: u64) {
    let view = f.g.at(day).unwrap();
    let want = valid_versions(f, day);
    // 1. which version of each object
    for (&t, set) in &want {
        let got: BTreeSet<(u64, u32)> = view
            .objects
            .get(&t)
            .map(|d| {
                (0..d.table.len())
                    .map(|r| (d.table.id[r], d.table.version[r]))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(&got, set, "type {t} at day {day}");
    }
    // the network: the rows valid that day
    let rows_valid = (0..f.net.len())
        .filter(|&r| valid(f.net.start_date[r], f.net.end_date[r], day))
        .count();
    assert_eq!(view.network.len(), rows_valid, "network at day {day}");

    // 2. statistikk in a kommune, for type 105 (stretches) and 95 (points)
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for t in [105u32, 95] {
        let (Some(table), Some(d)) = (f.all.get(&t), view.objects.get(&t)) else {
            continue;
        };
        let munis: BTreeSet<u16> = f.net.municipality.iter().copied().collect();
        let munis: Vec<u16> = munis.into_iter().collect();
        let muni = munis[rng.random_range(0..munis.len())];
        let (mut count, mut length) = (0u64, 0.0);
        for r in (0..table.len()).filter(|&r| valid(table.start_date[r], table.end_date[r], day)) {
            let inside: Vec<usize> = touched(f, table, r, day)
                .into_iter()
                .filter(|&s| f.net.municipality[s] == muni)
                .collect();
            if inside.is_empty() {
                continue;
            }
            count += 1;
            for p in table.placements(r) {
                for &s in inside
                    .iter()
                    .filter(|&&s| f.net.link_id[s] == table.loc_link[p])
                {
                    length += part_length(&f.net, s, table.loc_from[p], table.loc_to[p]);
                }
            }
        }
        let filter = ObjectFilter {
            any_of: vec![(AreaKind::Municipality, muni as u32)],
            ..Default::default()
        };
        let rows = select(&view, d, &filter);
        assert_eq!(
            rows.len(),
            count,
            "type {t} kommune {muni} at day {day}: count"
        );
        let got = total_length(&view, d, &rows, &filter, true);
        assert!(
            (got - length).abs() < 1e-6 * length.max(1.0),
            "type {t} kommune {muni} at day {day}: length {got} vs {length}"
        );
    }

    // 3. the nearest road position: its distance is the least over the rows valid that day
    let n = &f.net;
    for _ in 0..20 {
        let r = rng.random_range(0..n.len());
        let c = n.coords[n.geom_offsets[r] as usize];
        let (x, y) = (
            c[0] + rng.random_range(-8.0..8.0),
            c[1] + rng.random_range(-8.0..8.0),
        );
        let q = NearestQuery {
            x,
            y,
            max_distance_m: 30.0,
            max_count: 1,
            filter: NearestFilter::default(),
        };
        let best = (0..n.len())
            .filter(|&r| valid(n.start_date[r], n.end_date[r], day) && q.filter.accepts(n, r))
            .flat_map(|r| {
                let g = &n.coords[n.geom_offsets[r] as usize..n.geom_offsets[r + 1] as usize];
                g.windows(2)
                    .map(|w| segment_distance2(x, y, w[0][0], w[0][1], w[1][0], w[1][1]))
                    .collect::<Vec<_>>()
            })
            .fold(f64::INFINITY, f64::min)
            .sqrt();
        let got = nearest(
            &view.network,
            &view.network_indexes,
            &view.network_index,
            &q,
        );
        match got.first() {
            Some(p) => assert!(
                (p.distance_m - best).abs() < 1e-6,
                "nearest at day {day}: {} vs {best}",
                p.distance_m
            ),
            None => assert!(best > 30.0, "nearest at day {day}: none, oracle {best}"),
        }
        // the view answers from today's and the closed rows' indexes (`day_rows`): the same
        // positions as its own network's indexes give, at radii the grid covers and beyond
        for (max_distance_m, max_count) in [(30.0, 1), (60.0, 5), (3000.0, 4)] {
            let q = NearestQuery {
                max_distance_m,
                max_count,
                ..q.clone()
            };
            let own = nearest(
                &view.network,
                &view.network_indexes,
                &view.network_index,
                &q,
            );
            assert_eq!(
                view.nearest(&q),
                own,
                "nearest at day {day} within {max_distance_m} m"
            );
        }
    }

    // 4. every version of some objects, oldest first
    for (&t, table) in &f.all {
        for _ in 0..5 {
            let id = table.id[rng.random_range(0..table.len())];
            let mut want: Vec<(u32, Days, Days)> = (0..table.len())
                .filter(|&r| table.id[r] == id)
                .map(|r| (table.version[r], table.start_date[r], table.end_date[r]))
                .collect();
            want.sort();
            let got: Vec<(u32, Days, Days)> =
                f.g.versions(t, id)
                    .iter()
                    .map(|(tb, r)| (tb.version[*r], tb.start_date[*r], tb.end_date[*r]))
                    .collect();
            assert_eq!(got, want, "versions of {t}/{id}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// At random days from before the data to today, every query kind agrees with the oracle.
    #[test]
    fn a_past_day_answers_what_was_valid_then(offset in 0i32..20_000, seed in any::<u64>()) {
        let f = fixture();
        let span = (today() - 1 - (f.first_day - 400)).max(1);
        let day = f.first_day - 400 + offset % span;
        check_day(f, day, seed);
    }
}

/// Days the history makes interesting: each boundary of a closed version, and the day before.
#[test]
fn boundaries_of_closed_versions_answer_the_version_valid_on_each_side() {
    let f = fixture();
    let mut days: BTreeSet<Days> = BTreeSet::new();
    for t in f.g.history.values().take(3) {
        for r in (0..t.len()).step_by(97) {
            for d in [t.start_date[r], t.end_date[r]] {
                days.extend([d - 1, d]);
            }
        }
    }
    for r in (0..f.g.network_history.len()).step_by(53) {
        let end = f.g.network_history.end_date[r];
        days.extend([end - 1, end]);
    }
    let mut by_rows = 0;
    for day in days.into_iter().filter(|&d| d < today()).take(16) {
        check_day(f, day, day as u64);
        by_rows += usize::from(f.g.at(day).unwrap().day_rows.is_some());
    }
    // at closed links' ends the network differs from today's, so these views answer nearest
    // questions from today's and the closed rows' indexes
    assert!(by_rows > 0, "no view answered from day_rows");
}

/// Today and later: the generation itself; before the first version, nothing.
#[test]
fn today_is_the_generation_and_before_the_data_nothing_existed() {
    let f = fixture();
    assert!(Generation::is_today(today()));
    assert!(Generation::is_today(today() + 1000));
    let before = f.g.at(f.first_day - 1).unwrap();
    assert_eq!(before.object_count(), 0);
    assert_eq!(before.network.len(), 0);
}
