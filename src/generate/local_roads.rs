//! Roads inside one municipality: a street grid (K) around the centre sized by its road budget,
//! county roads (F) from the centre to villages inside the polygon, and private dead ends (P)
//! off existing junctions. Every road starts at an existing node, so the graph stays connected.

use rand::Rng;

use super::draft::{dist, path_between, point_inside, DraftBuilder, RoadSpec};
use crate::area::Municipality;
use crate::geo::linref::length_2d;

/// K grid, F roads and P roads of one municipality, using about `budget_m` meters of road.
pub(super) fn local_roads(
    b: &mut DraftBuilder,
    m: &Municipality,
    place_in_county: u32,
    centre: (f64, f64),
    centre_node: u64,
    budget_m: f64,
) {
    street_grid(b, centre, centre_node, budget_m * 0.45);
    let f_left = county_roads(b, m, place_in_county, centre, centre_node, budget_m * 0.35);
    private_roads(b, budget_m * 0.20 + f_left.max(0.0));
}

/// K: a street grid around the centre using about `k_budget` metres, laid edge by edge.
fn street_grid(b: &mut DraftBuilder, centre: (f64, f64), centre_node: u64, k_budget: f64) {
    let spacing = 120.0;
    let side = ((k_budget / (2.0 * spacing)).sqrt().floor() as i64).clamp(1, 400);
    let angle: f64 = b.rng.random_range(0.0..1.5);
    let (ca, sa) = (angle.cos(), angle.sin());
    let half = side / 2;
    let pos = |i: i64, j: i64| -> (f64, f64) {
        let (u, v) = ((i - half) as f64 * spacing, (j - half) as f64 * spacing);
        (centre.0 + u * ca - v * sa, centre.1 + u * sa + v * ca)
    };
    let mut grid_nodes = std::collections::HashMap::new();
    grid_nodes.insert((half, half), centre_node);
    let mut street_no = 1000u32;
    for dir in 0..2 {
        for line in 0..=side {
            street_no += 1;
            let status_g = b.rng.random_bool(0.05);
            let spec = RoadSpec {
                category: b'K',
                status: if status_g { b'G' } else { b'V' },
                number: street_no,
                lanes: if status_g { "" } else { "1#2" },
                theme: if status_g { 7042 } else { 7001 },
                road_type: if status_g {
                    4
                } else if b.rng.random_bool(0.03) {
                    6
                } else {
                    0
                },
                first_meter: 0.0,
            };
            let mut meter = 0.0;
            for step in 0..side {
                let (a_ij, b_ij) = if dir == 0 {
                    ((step, line), (step + 1, line))
                } else {
                    ((line, step), (line, step + 1))
                };
                let pa = pos(a_ij.0, a_ij.1);
                let pb = pos(b_ij.0, b_ij.1);
                let na = *grid_nodes.entry(a_ij).or_insert_with(|| {
                    b.next_node += 1;
                    b.next_node
                });
                let nb = *grid_nodes.entry(b_ij).or_insert_with(|| {
                    b.next_node += 1;
                    b.next_node
                });
                let path = path_between(&mut b.rng, pa, pb, 0.01);
                let s = RoadSpec {
                    first_meter: meter,
                    ..spec_clone(&spec)
                };
                let (_, reached) = b.lay_road(&path, na, Some(nb), &s, 1e12);
                meter = reached;
                if b.rng.random_bool(0.1) {
                    b.junctions.push((nb, pb));
                }
            }
        }
    }
}

/// F: county roads from the centre to villages inside the municipality, using about `budget_m`
/// metres; returns the budget left.
fn county_roads(
    b: &mut DraftBuilder,
    m: &Municipality,
    place_in_county: u32,
    centre: (f64, f64),
    centre_node: u64,
    budget_m: f64,
) -> f64 {
    let mut f_left = budget_m;
    // county road numbers are unique per county: 1000 + 100 × (municipality's place in county)
    let mut f_no = 1000 + 100 * place_in_county;
    let mut attempts = 0;
    while f_left > 500.0 && attempts < 60 && f_no < 1000 + 100 * place_in_county + 99 {
        attempts += 1;
        let target = point_inside(&mut b.rng, m);
        let d = dist(centre, target);
        if d < 300.0 {
            continue;
        }
        let d = d.min(f_left.max(500.0));
        let t = d / dist(centre, target);
        let end = (
            centre.0 + (target.0 - centre.0) * t,
            centre.1 + (target.1 - centre.1) * t,
        );
        f_no += 1;
        let path = path_between(&mut b.rng, centre, end, 0.06);
        let spec = RoadSpec {
            category: b'F',
            status: b'V',
            number: f_no,
            lanes: "1#2",
            theme: 7001,
            road_type: 0,
            first_meter: 0.0,
        };
        b.lay_road(&path, centre_node, None, &spec, 10_000.0);
        f_left -= length_2d(&path);
    }
    f_left
}

/// P: private roads, short dead ends off existing junctions, using about `budget_m` metres.
fn private_roads(b: &mut DraftBuilder, budget_m: f64) {
    let mut p_left = budget_m;
    let mut p_no = 1u32;
    while p_left > 100.0 && !b.junctions.is_empty() {
        let (node, at) = b.junctions[b.rng.random_range(0..b.junctions.len())];
        let len = b.rng.random_range(150.0..1200.0_f64).min(p_left + 100.0);
        let dir: f64 = b.rng.random_range(0.0..std::f64::consts::TAU);
        let end = (at.0 + len * dir.cos(), at.1 + len * dir.sin());
        let path = path_between(&mut b.rng, at, end, 0.08);
        p_no += 1;
        let spec = RoadSpec {
            category: b'P',
            status: b'V',
            number: p_no,
            lanes: "1#2",
            theme: 7001,
            road_type: 0,
            first_meter: 0.0,
        };
        let first = b.drafts.len();
        b.lay_road(&path, node, None, &spec, 1e12);
        if b.rng.random_bool(0.3) {
            if let Some(d) = b.drafts.get_mut(first) {
                d.is_connection = true;
            }
        }
        p_left -= len;
    }
}

fn spec_clone(s: &RoadSpec) -> RoadSpec {
    RoadSpec {
        category: s.category,
        status: s.status,
        number: s.number,
        lanes: s.lanes,
        theme: s.theme,
        road_type: s.road_type,
        first_meter: s.first_meter,
    }
}
