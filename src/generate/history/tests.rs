//! The generated history, checked as stored: `generate` a tiny dataset, load it as a server
//! would, and test every version against the rules the history promises, computed here from
//! the loaded tables alone.

use std::collections::{BTreeMap, HashMap};

use arrow_array::{Array, Int64Array};

use crate::catalog::Catalog;
use crate::generate::{generate_into, Scale};
use crate::generation::Generation;
use crate::snapshot::columns::{Days, ObjectTable, RoadNetwork, OPEN_END};

/// (start, end) of every row of each link, current and closed, with its positions.
fn link_rows(g: &Generation) -> HashMap<u64, Vec<(f64, f64, Days, Days)>> {
    let mut out: HashMap<u64, Vec<_>> = HashMap::new();
    let nets: [&RoadNetwork; 2] = [&g.network, &g.network_history];
    for n in nets {
        for r in 0..n.len() {
            out.entry(n.link_id[r]).or_default().push((
                n.from_pos[r],
                n.to_pos[r],
                n.start_date[r],
                n.end_date[r],
            ));
        }
    }
    out
}

/// Whether a placement `from..=to` on `link` lies on rows that all existed from `start` to
/// `end` (at least one row).
fn existed(
    rows: &HashMap<u64, Vec<(f64, f64, Days, Days)>>,
    link: u64,
    from: f64,
    to: f64,
    start: Days,
    end: Days,
) -> bool {
    let under: Vec<_> = rows
        .get(&link)
        .map(|rs| rs.iter().filter(|r| r.0 <= to && r.1 >= from).collect())
        .unwrap_or_default();
    !under.is_empty()
        && under
            .iter()
            .all(|&&(_, _, s, e)| s <= start && (e == OPEN_END || end <= e))
}

/// Per id, (version, start, end, row in `history` or None for the current row).
type Versions = BTreeMap<u64, Vec<(u32, Days, Days, Option<usize>)>>;

fn versions_of(history: &ObjectTable, current: Option<&ObjectTable>) -> Versions {
    let mut by_id: Versions = BTreeMap::new();
    for r in 0..history.len() {
        by_id.entry(history.id[r]).or_default().push((
            history.version[r],
            history.start_date[r],
            history.end_date[r],
            Some(r),
        ));
    }
    if let Some(c) = current {
        for (id, vs) in by_id.iter_mut() {
            if let Some(r) = c.row_of(*id) {
                vs.push((c.version[r], c.start_date[r], c.end_date[r], None));
            }
        }
    }
    for vs in by_id.values_mut() {
        vs.sort_by_key(|v| v.0);
    }
    by_id
}

#[test]
fn generated_history_keeps_its_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Tiny, 21, tmp.path()).unwrap();
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    assert!(!g.history.is_empty() && !g.network_history.is_empty());

    // closed network rows: closed, a new link id, replaced by a current link of the same
    // geometry that starts the day the old one ended
    let current_links: HashMap<u64, Vec<usize>> =
        (0..g.network.len()).fold(HashMap::new(), |mut m, r| {
            m.entry(g.network.link_id[r]).or_default().push(r);
            m
        });
    let nh = &g.network_history;
    for r in 0..nh.len() {
        assert!(nh.end_date[r] != OPEN_END && nh.end_date[r] > nh.start_date[r]);
        assert!(!current_links.contains_key(&nh.link_id[r]));
        let replacing = (0..g.network.len()).find(|&c| {
            g.network.geometry(c) == nh.geometry(r)
                && g.network.start_node[c] == nh.start_node[r]
                && g.network.from_pos[c] == nh.from_pos[r]
        });
        let c = replacing.expect("a current row replaces each closed one");
        assert_eq!(g.network.start_date[c], nh.end_date[r]);
    }
    assert!((0..g.network.len()).all(|r| g.network.end_date[r] == OPEN_END));

    let rows = link_rows(&g);
    let deleted: HashMap<u64, (u32, i64)> = (0..g.deleted.len())
        .map(|i| {
            (
                g.deleted.id[i],
                (g.deleted.version[i], g.deleted.deleted_at[i]),
            )
        })
        .collect();
    let (mut on_closed_links, mut closed_objects) = (0, 0);
    let mut a_closed = None;
    for (&t, h) in &g.history {
        let current = g.objects.get(&t).map(|d| &*d.table);
        assert!(current.is_some_and(|c| c.end_date.iter().all(|&e| e == OPEN_END)));
        for (id, vs) in versions_of(h, current) {
            // versions 1..n, consecutive and disjoint, only the newest may be open
            let numbers: Vec<u32> = vs.iter().map(|v| v.0).collect();
            assert_eq!(
                numbers,
                (1..=vs.len() as u32).collect::<Vec<_>>(),
                "{t}/{id}"
            );
            for w in vs.windows(2) {
                assert!(w[0].1 < w[0].2, "{t}/{id}: empty or open older version");
                assert_eq!(w[0].2, w[1].1, "{t}/{id}: versions not consecutive");
            }
            let last = vs.last().expect("an id with history has versions");
            match last.3 {
                None => assert_eq!(last.2, OPEN_END, "{t}/{id}: the current version is open"),
                Some(_) => {
                    // a closed object: one of the deleted ones, closed on its deletion day
                    closed_objects += 1;
                    a_closed.get_or_insert((t, id, last.0, last.1));
                    assert!(last.1 < last.2);
                    let &(v, at) = deleted.get(&id).expect("a closed object is deleted");
                    assert_eq!((v, at.div_euclid(86_400) as Days), (last.0, last.2));
                }
            }
            // each closed version lies on links that existed all its validity
            for &(_, start, end, row) in &vs {
                let Some(r) = row else { continue };
                for p in h.placements(r) {
                    let link = h.loc_link[p];
                    assert!(
                        existed(&rows, link, h.loc_from[p], h.loc_to[p], start, end),
                        "{t}/{id}: version on link {link} outside its validity"
                    );
                    on_closed_links += usize::from(!current_links.contains_key(&link));
                }
            }
        }
    }
    assert!(on_closed_links > 0 && closed_objects > 0);
    // the road as it was: the closed object is there on its last version's first day
    let (t, id, version, day) = a_closed.expect("some closed object");
    let then = g.at(day).unwrap();
    let table = &then.objects[&t].table;
    let r = table.row_of(id).expect("the closed object existed then");
    assert_eq!(table.version[r], version);
    speed_limits_were_higher(&g);
}

/// Every older speed limit (105) is at least its next version's.
fn speed_limits_were_higher(g: &Generation) {
    let catalog = Catalog::embedded();
    let (_, p) = catalog.property(2021).unwrap();
    let kmh = |t: &ObjectTable, r: usize| {
        let a = t
            .property(2021)?
            .values
            .as_any()
            .downcast_ref::<Int64Array>()?;
        a.is_valid(r)
            .then(|| p.allowed_value(a.value(r) as u32))
            .flatten()?
            .number
    };
    let h = &g.history[&105];
    let c = &g.objects[&105].table;
    let mut lowered = 0;
    for (id, vs) in versions_of(h, Some(c)) {
        let speeds: Vec<Option<f64>> = vs
            .iter()
            .map(|v| match v.3 {
                Some(r) => kmh(h, r),
                None => kmh(c, c.row_of(id).unwrap()),
            })
            .collect();
        for w in speeds.windows(2) {
            if let (Some(a), Some(b)) = (w[0], w[1]) {
                assert!(a >= b, "105/{id}: {a} then {b}");
                lowered += usize::from(a > b);
            }
        }
    }
    assert!(lowered > 0);
}

/// Whether the rows of `link` under `from..=to` (at least one) are all valid on `day`.
fn valid_on(
    rows: &HashMap<u64, Vec<(f64, f64, Days, Days)>>,
    link: u64,
    from: f64,
    to: f64,
    day: Days,
) -> bool {
    let under: Vec<_> = rows
        .get(&link)
        .map(|rs| rs.iter().filter(|r| r.0 <= to && r.1 >= from).collect())
        .unwrap_or_default();
    !under.is_empty()
        && under
            .iter()
            .all(|&&(_, _, s, e)| s <= day && (e == OPEN_END || day < e))
}

/// Every placement of `t`'s row `r` lies on link rows valid on the row's first day and on
/// the day before its end.
fn check_row(rows: &HashMap<u64, Vec<(f64, f64, Days, Days)>>, t: &ObjectTable, r: usize) {
    let (start, end) = (t.start_date[r], t.end_date[r]);
    for p in t.placements(r) {
        let (link, from, to) = (t.loc_link[p], t.loc_from[p], t.loc_to[p]);
        let days = [Some(start), (end != OPEN_END).then(|| end - 1)];
        for day in days.into_iter().flatten() {
            assert!(
                valid_on(rows, link, from, to, day),
                "{}/{} v{} ({start}..{end}) on link {link} ({from}..{to}), not valid on {day}: {:?}",
                t.type_id,
                t.id[r],
                t.version[r],
                rows.get(&link)
            );
        }
    }
}

#[test]
fn every_version_lies_within_its_links_validity_over_seeds() {
    for seed in [3, 21, 1_000_003] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, seed, tmp.path()).unwrap();
        let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
        let rows = link_rows(&g);
        for data in g.objects.values() {
            for r in 0..data.table.len() {
                check_row(&rows, &data.table, r);
            }
        }
        for h in g.history.values() {
            for r in 0..h.len() {
                check_row(&rows, h, r);
            }
        }
        carried_over(&g, seed);
    }
}

/// The committed demo is `generate --scale demo` output: the same holds for it.
#[test]
fn the_demo_lies_within_its_links_validity() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
    let current = std::fs::read_to_string(root.join("CURRENT")).unwrap();
    let dir = root.join(format!("gen-{:06}", current.trim().parse::<u64>().unwrap()));
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let rows = link_rows(&g);
    let tables = g.objects.values().map(|d| &*d.table);
    for t in tables.chain(g.history.values().map(|h| &**h)) {
        for r in 0..t.len() {
            check_row(&rows, t, r);
        }
    }
    carried_over(&g, 42);
}

/// Objects above version 1 on a link that replaced another, current since the day it did,
/// were carried over: their previous version lies on the old link at the same positions.
fn carried_over(g: &Generation, seed: u64) {
    // the replacing link of each closed link: the current link of the same first row
    let (n, nh) = (&g.network, &g.network_history);
    let mut old_of: HashMap<u64, (u64, Days)> = HashMap::new();
    for r in 0..nh.len() {
        let c = (0..n.len())
            .find(|&c| n.geometry(c) == nh.geometry(r) && n.from_pos[c] == nh.from_pos[r])
            .expect("a current row replaces each closed one");
        old_of.insert(n.link_id[c], (nh.link_id[r], nh.end_date[r]));
    }
    let mut carried = 0;
    for (&t, data) in &g.objects {
        let c = &data.table;
        let Some(h) = g.history.get(&t) else { continue };
        for r in 0..c.len() {
            let on_new: Vec<usize> = c
                .placements(r)
                .filter(|&p| {
                    old_of
                        .get(&c.loc_link[p])
                        .is_some_and(|o| o.1 == c.start_date[r])
                })
                .collect();
            if c.version[r] < 2 || on_new.is_empty() {
                continue;
            }
            let Some(prev) =
                (0..h.len()).find(|&k| h.id[k] == c.id[r] && h.version[k] == c.version[r] - 1)
            else {
                continue;
            };
            assert_eq!(h.end_date[prev], c.start_date[r], "{t}/{}", c.id[r]);
            for p in on_new {
                let (old, _) = old_of[&c.loc_link[p]];
                assert!(
                    h.placements(prev).any(|q| h.loc_link[q] == old
                        && h.loc_from[q] == c.loc_from[p]
                        && h.loc_to[q] == c.loc_to[p]),
                    "{t}/{}: not carried over from link {old}",
                    c.id[r]
                );
            }
            // moved, not changed: the version before has the current version's values
            for col in &c.properties {
                let before = h
                    .properties
                    .iter()
                    .find(|k| k.property_id == col.property_id)
                    .expect("the history has the type's columns");
                assert!(
                    *col.values.slice(r, 1) == *before.values.slice(prev, 1),
                    "{t}/{}: property {} changed when carried over",
                    c.id[r],
                    col.property_id
                );
            }
            carried += 1;
        }
    }
    assert!(
        carried > 0,
        "seed {seed}: no object carried over to a new link"
    );
}
