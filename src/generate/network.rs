//! Road network generation inside the real municipal polygons.
//!
//! 1. A skeleton of trunk roads (E/R, numbers from the national routes) along a minimum spanning
//!    tree between municipality centres.
//! 2. Per municipality, in parallel: a street grid (K roads) around the centre sized by
//!    population, county roads (F) from the centre to villages inside the polygon, and private
//!    dead ends (P) off existing nodes.
//!
//! Every new road starts at an existing node, so the graph is connected. Paths are cut into
//! links of 40–160 m; hp parts restart at county borders and every ~10 km, and a hp border inside
//! a link splits it into two segment rows with their own road reference.
//!
//! The vegsystemreferanse of a row is its v2 reference read as the successors write it: the
//! same category, number and metres, fase V (A, P, F as the status), strekning and
//! delstrekning from the hp ([`section_of_hp`]: three hp parts a strekning, S1D1 S1D2 S1D3
//! S2D1 …, both from 1), retning MED, no arms; its 915 Vegsystem and 916 Strekning ids and
//! versions come from [`assign_system_objects`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::area::{Areas, Municipality};
use crate::geo::linref::{length_2d, sub_line};
use crate::snapshot::columns::{
    default_traffic_group, Days, RoadNetwork, DETAIL_KB, DETAIL_VT, DETAIL_VTKB, OPEN_END,
    SEPARATE_AGAINST, SEPARATE_NO, SEPARATE_WITH,
};

use super::draft::{dist, path_between, DraftBuilder, RoadSpec};
pub use super::draft::{Chain, LinkDraft, SegmentDraft};

pub struct NetworkPlan {
    pub municipalities: Vec<u16>,
    pub target_km: f64,
}

pub struct GeneratedNetwork {
    pub network: RoadNetwork,
    pub chains: Vec<Chain>,
    /// Link id of each draft index.
    pub link_ids: Vec<u64>,
}

const FIRST_LINK_ID: u64 = 1_000_001;

/// Numbers of E/R roads available in a county (from the national routes), plus generic R roads.
fn trunk_roads(areas: &Areas, county: u8) -> Vec<(u8, u32)> {
    let mut out: Vec<(u8, u32)> = areas
        .routes
        .iter()
        .filter(|r| r.counties.contains(&county))
        .flat_map(|r| r.roads.iter().copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Generate the network for the given municipalities: a trunk skeleton joining their centres,
/// then each municipality's local roads (in parallel), merged skeleton first.
pub fn generate(
    areas: &Areas,
    plan: &NetworkPlan,
    seed: u64,
    dates: (Days, Days),
) -> GeneratedNetwork {
    let ms: Vec<&Municipality> = plan
        .municipalities
        .iter()
        .filter_map(|&n| areas.municipality(n))
        .collect();
    let centres: Vec<(f64, f64)> = ms
        .iter()
        .map(|m| Areas::interior_point(&m.shape).unwrap_or((m.bbox.center().x, m.bbox.center().y)))
        .collect();
    let mut sk = DraftBuilder::new(areas, seed ^ 0x5EED, 0, ms[0].number);
    sk.date_range = dates;
    let centre_nodes: Vec<u64> = (0..ms.len()).map(|_| sk.node()).collect();
    lay_skeleton(&mut sk, areas, &ms, &centres, &centre_nodes);
    let skeleton_km: f64 = sk
        .drafts
        .iter()
        .filter(|d| d.topology_level == 0)
        .map(|d| length_2d(&d.coords))
        .sum::<f64>()
        / 1000.0;
    let remaining_km = (plan.target_km - skeleton_km).max(plan.target_km * 0.3);
    let local = LocalPlan {
        areas,
        ms: &ms,
        centres: &centres,
        centre_nodes: &centre_nodes,
        seed,
        dates,
    };
    let locals = local.lay(remaining_km);
    let (drafts, chains) = merge(sk, locals);
    finish(areas, drafts, chains, seed, dates)
}

/// The skeleton: trunk roads along the edges of a minimum spanning tree over the centres.
fn lay_skeleton(
    sk: &mut DraftBuilder,
    areas: &Areas,
    ms: &[&Municipality],
    centres: &[(f64, f64)],
    centre_nodes: &[u64],
) {
    for (e, &(a, b)) in spanning_tree(centres).iter().enumerate() {
        let county = ms[a].county;
        let roads = trunk_roads(areas, county);
        let (category, number) = if roads.is_empty() || e % 4 == 3 {
            (b'R', 100 + (e as u32 * 7) % 800)
        } else {
            roads[e % roads.len()]
        };
        let path = path_between(&mut sk.rng, centres[a], centres[b], 0.04);
        let spec = RoadSpec {
            category,
            status: b'V',
            number,
            lanes: if category == b'E' && e % 3 == 0 {
                "1#3#2#4"
            } else {
                "1#2"
            },
            theme: 7001,
            road_type: if category == b'E' && e % 5 == 0 { 1 } else { 0 },
            first_meter: 0.0,
        };
        sk.lay_road(
            &path,
            centre_nodes[a],
            Some(centre_nodes[b]),
            &spec,
            10_000.0,
        );
    }
}

/// Prim's minimum spanning tree over `points` from point 0: the edges (tree point, new point)
/// in the order they join.
fn spanning_tree(points: &[(f64, f64)]) -> Vec<(usize, usize)> {
    let n = points.len();
    let mut in_tree = vec![false; n];
    let mut best = vec![(f64::INFINITY, usize::MAX); n];
    in_tree[0] = true;
    for j in 1..n {
        best[j] = (dist(points[0], points[j]), 0);
    }
    let mut edges = Vec::new();
    for _ in 1..n {
        let (j, _) = (0..n)
            .filter(|&j| !in_tree[j])
            .map(|j| (j, best[j].0))
            .fold(
                (usize::MAX, f64::INFINITY),
                |a, b| if b.1 < a.1 { b } else { a },
            );
        if j == usize::MAX {
            break;
        }
        in_tree[j] = true;
        edges.push((best[j].1, j));
        for k in 0..n {
            if !in_tree[k] {
                let d = dist(points[j], points[k]);
                if d < best[k].0 {
                    best[k] = (d, j);
                }
            }
        }
    }
    edges
}

/// What each municipality's local network is laid from.
struct LocalPlan<'a> {
    areas: &'a Areas,
    ms: &'a [&'a Municipality],
    centres: &'a [(f64, f64)],
    centre_nodes: &'a [u64],
    seed: u64,
    dates: (Days, Days),
}

impl LocalPlan<'_> {
    /// The municipal networks, in parallel, each in its own node id space, sharing
    /// `remaining_km` by the square root of the population.
    fn lay(&self, remaining_km: f64) -> Vec<DraftBuilder<'_>> {
        let weight: Vec<f64> = self
            .ms
            .iter()
            .map(|m| (m.population as f64).sqrt().max(20.0))
            .collect();
        let wsum: f64 = weight.iter().sum();
        self.ms
            .par_iter()
            .enumerate()
            .map(|(i, m)| {
                let budget_m = remaining_km * 1000.0 * weight[i] / wsum;
                let mut b = DraftBuilder::new(
                    self.areas,
                    self.seed.wrapping_mul(31).wrapping_add(m.number as u64),
                    (i as u64 + 1) << 32,
                    m.number,
                );
                b.date_range = self.dates;
                let place = self.ms[..i].iter().filter(|o| o.county == m.county).count() as u32;
                super::local_roads::local_roads(
                    &mut b,
                    m,
                    place,
                    self.centres[i],
                    self.centre_nodes[i],
                    budget_m,
                );
                b
            })
            .collect()
    }
}

/// The skeleton's drafts and chains first, then each municipality's in order (their draft
/// indexes shifted).
fn merge(sk: DraftBuilder, locals: Vec<DraftBuilder>) -> (Vec<LinkDraft>, Vec<Chain>) {
    let mut drafts = sk.drafts;
    let mut chains = sk.chains;
    for b in locals {
        let base = drafts.len();
        chains.extend(b.chains.into_iter().map(|mut c| {
            for p in &mut c.parts {
                p.0 += base;
            }
            c
        }));
        drafts.extend(b.drafts.into_iter().map(|mut d| {
            d.super_link = d.super_link.map(|s| s + base);
            d
        }));
    }
    (drafts, chains)
}

/// Assign link ids and node ids and build the columnar network.
fn finish(
    areas: &Areas,
    drafts: Vec<LinkDraft>,
    chains: Vec<Chain>,
    seed: u64,
    dates: (Days, Days),
) -> GeneratedNetwork {
    // dense node ids in order of first appearance
    let mut node_ids: std::collections::HashMap<u64, u64> =
        std::collections::HashMap::with_capacity(drafts.len() * 2);
    let mut next = 0u64;
    let mut dense = |n: u64, map: &mut std::collections::HashMap<u64, u64>| -> u64 {
        *map.entry(n).or_insert_with(|| {
            next += 1;
            next
        })
    };
    let link_ids: Vec<u64> = (0..drafts.len() as u64)
        .map(|i| FIRST_LINK_ID + i)
        .collect();
    let attributes = NetworkAttributes::of(&drafts, &link_ids);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xC0FFEE);
    let mut n = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    for (i, d) in drafts.iter().enumerate() {
        let start = dense(d.start_node, &mut node_ids);
        let end = dense(d.end_node, &mut node_ids);
        let m = areas
            .municipality(d.municipality)
            .expect("drafts use real municipalities");
        let start_date = rng.random_range(dates.0..dates.1);
        let capture = rng.random_range(dates.0..dates.1);
        let (method, acc) = [(96u8, 10u16), (12, 50), (21, 100), (32, 300)][rng.random_range(0..4)];
        let total_len = length_2d(&d.coords);
        for s in &d.segments {
            let g = if s.from == 0.0 && s.to == 1.0 {
                d.coords.clone()
            } else {
                sub_line(&d.coords, s.from, s.to)
            };
            n.link_id.push(link_ids[i]);
            n.from_pos.push(s.from);
            n.to_pos.push(s.to);
            n.start_node.push(start);
            n.end_node.push(end);
            n.length_m
                .push(((s.to - s.from) * total_len * 1000.0).round() / 1000.0);
            n.coords.extend_from_slice(&g);
            n.geom_offsets.push(n.coords.len() as u32);
            n.municipality.push(m.number);
            n.county.push(m.county);
            n.region.push(m.region);
            n.road_department.push(m.road_department);
            n.road_category.push(s.category);
            n.road_status.push(s.status);
            n.road_number.push(s.number);
            n.hp.push(s.hp);
            n.from_m.push(s.from_m);
            n.to_m.push(s.to_m.max(s.from_m));
            n.lanes.push(d.lanes.to_string());
            n.medium.push(d.medium);
            n.theme_code.push(d.theme_code);
            n.is_connection.push(d.is_connection);
            n.topology_level.push(d.topology_level);
            n.super_id
                .push(d.super_link.map(|s| link_ids[s]).unwrap_or(0));
            n.road_type.push(d.road_type);
            n.start_date.push(start_date);
            n.end_date.push(OPEN_END);
            n.q_method.push(method);
            n.q_accuracy.push(acc);
            n.q_height_accuracy.push(acc * 2);
            n.q_tolerance.push(acc / 2 + 1);
            n.q_visibility.push(0);
            n.q_capture_date.push(capture);
            n.detail_level.push(attributes.detail[i]);
            n.traffic_group
                .push(default_traffic_group(s.status, d.road_type));
            n.side_facility.push(attributes.side_facility[i]);
            n.separate_carriageways.push(attributes.separate[i]);
            // the vegsystemreferanse the v2 reference gives (the same category, number and
            // metres; retning MED, no arms), with strekning and delstrekning from the hp
            n.push_system_ref_from_v2();
            let (section, subsection) = section_of_hp(s.hp);
            *n.section.last_mut().expect("pushed") = section;
            *n.subsection.last_mut().expect("pushed") = subsection;
        }
    }
    assign_system_objects(&mut n);
    n.build_link_index();
    GeneratedNetwork {
        network: n,
        chains,
        link_ids,
    }
}

/// The network attributes of each draft that its road does not give by itself. Decided from
/// the drafts and link ids alone (no draw from the generator's random streams, so adding them
/// changed no other generated value):
/// - detaljnivå: a trunk link with separate carriageways is VEGTRASE, its two carriageways
///   KJOREBANE, every other link VEGTRASE_OG_KJOREBANE (as most real veglenker); no KJOREFELT;
/// - adskilte løp: the carriageway pair is Med (lane 1, along the metering) and Mot (lane 2),
///   every other link Nei, so `adskiltelop=med,nei` counts a road once;
/// - sideanlegg: one in eight private dead ends (category P; by the link id's hash), standing
///   for rest areas and parking places off the road;
/// - trafikantgruppe (per row, `default_traffic_group`): G on the footpath streets (status G,
///   typeVeg gang- og sykkelveg, about 5 % of the street grid), K everywhere else.
struct NetworkAttributes {
    detail: Vec<u8>,
    separate: Vec<u8>,
    side_facility: Vec<bool>,
}

impl NetworkAttributes {
    fn of(drafts: &[LinkDraft], link_ids: &[u64]) -> NetworkAttributes {
        let mut has_carriageways = vec![false; drafts.len()];
        for d in drafts {
            if let Some(p) = d.super_link {
                has_carriageways[p] = true;
            }
        }
        let detail = drafts
            .iter()
            .zip(&has_carriageways)
            .map(|(d, &parent)| match (d.super_link, parent) {
                (Some(_), _) => DETAIL_KB,
                (None, true) => DETAIL_VT,
                (None, false) => DETAIL_VTKB,
            })
            .collect();
        let separate = drafts
            .iter()
            .map(|d| match (d.super_link, d.lanes) {
                (Some(_), "1") => SEPARATE_WITH,
                (Some(_), _) => SEPARATE_AGAINST,
                (None, _) => SEPARATE_NO,
            })
            .collect();
        let side_facility = drafts
            .iter()
            .zip(link_ids)
            .map(|(d, &id)| {
                d.super_link.is_none()
                    && d.segments.first().is_some_and(|s| s.category == b'P')
                    && mix(id).is_multiple_of(8)
            })
            .collect();
        NetworkAttributes {
            detail,
            separate,
            side_facility,
        }
    }
}

/// How many hp parts (of ~10 km) make one generated strekning.
const HP_PER_SECTION: u16 = 3;

/// The strekning and delstrekning of generated hp `hp` (counted from 1 per road and county, K
/// and P roads always 1): every three hp parts make one strekning, each a delstrekning of it,
/// both counted from 1 as NVDB's are (hp 1, 2, 3 = S1D1, S1D2, S1D3; hp 4 = S2D1). The metres
/// are the hp's (both restart at each part), so the reference names the same stretch as the
/// v2 one. `import` folds a real 916's numbers into hp = strekning × 100 + delstrekning, so a
/// generated hp comes back from `export`/`import` as that fold (hp 4 → 201).
pub fn section_of_hp(hp: u16) -> (u16, u16) {
    let i = hp.max(1) - 1;
    (i / HP_PER_SECTION + 1, i % HP_PER_SECTION + 1)
}

/// The first id of the generated 915 Vegsystem and 916 Strekning objects: ten digits, as the
/// real ones (`1002128812`), far above the generated road objects' ids.
const FIRST_SYSTEM_ID: u64 = 1_002_000_001;
const FIRST_SECTION_ID: u64 = 1_003_000_001;

/// The 915 Vegsystem and 916 Strekning each row's vegsystemreferanse comes from, as ids and
/// versions: one 915 per road (vegkategori, fase, nummer; per kommune for K and P roads, which
/// are numbered per kommune), one 916 per road part (the road, hp, fylke) and the attributes a
/// 916 carries (trafikantgruppe, adskilte løp, arm), so each stretch of a carriageway is one
/// object, as `import::export` writes them back. Ids count up in the order of those keys from
/// [`FIRST_SYSTEM_ID`] and [`FIRST_SECTION_ID`]; versions 1 to 3 by the id's hash (no draw from
/// the random streams). A row without a road reference has none.
fn assign_system_objects(n: &mut RoadNetwork) {
    use crate::snapshot::columns::NO_ROAD_REF;
    use std::collections::BTreeMap;
    type SystemKey = (u8, u8, u32, u16);
    type SectionKey = (SystemKey, u16, u8, (u8, u8, bool));
    let system = |n: &RoadNetwork, r: usize| -> SystemKey {
        let c = n.system_category[r];
        let kommune = if matches!(c, b'K' | b'P') {
            n.municipality[r]
        } else {
            0
        };
        (c, n.system_phase[r], n.system_number[r], kommune)
    };
    let section = |n: &RoadNetwork, r: usize| -> SectionKey {
        (
            system(n, r),
            n.hp[r],
            n.county[r],
            (n.traffic_group[r], n.separate_carriageways[r], n.arm[r]),
        )
    };
    let with_ref: Vec<usize> = (0..n.len())
        .filter(|&r| n.system_category[r] != NO_ROAD_REF)
        .collect();
    let mut systems: BTreeMap<SystemKey, u64> =
        with_ref.iter().map(|&r| (system(n, r), 0)).collect();
    let mut sections: BTreeMap<SectionKey, u64> =
        with_ref.iter().map(|&r| (section(n, r), 0)).collect();
    for (id, v) in (FIRST_SYSTEM_ID..).zip(systems.values_mut()) {
        *v = id;
    }
    for (id, v) in (FIRST_SECTION_ID..).zip(sections.values_mut()) {
        *v = id;
    }
    let version = |id: u64| 1 + (mix(id) % 3) as u32;
    for r in with_ref {
        let (a, b) = (systems[&system(n, r)], sections[&section(n, r)]);
        n.system_id[r] = a;
        n.system_version[r] = version(a);
        n.section_id[r] = b;
        n.section_version[r] = version(b);
    }
}

/// A well-spread hash of a link id (splitmix64's finaliser).
fn mix(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
