//! Drafts of a generated road network: links as 3D paths cut into segments with their road
//! reference, and the builder that adds roads to them (used by `network.rs` for the trunk
//! roads and by `local_roads.rs` inside each municipality).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::area::{Areas, Municipality};
use crate::geo::linref::length_2d;
use crate::geo::Coord3;
use crate::snapshot::columns::Days;

/// A drawn link before ids are assigned. Segments cover `from..to` with their road reference.
#[derive(Debug, Clone)]
pub struct LinkDraft {
    pub start_node: u64,
    pub end_node: u64,
    pub coords: Vec<Coord3>,
    pub segments: Vec<SegmentDraft>,
    pub municipality: u16,
    pub lanes: &'static str,
    pub medium: u8,
    pub theme_code: u16,
    pub road_type: u8,
    pub topology_level: u8,
    /// Index (within the same draft list) of the parent link, for carriageway links.
    pub super_link: Option<usize>,
    pub is_connection: bool,
}

#[derive(Debug, Clone)]
pub struct SegmentDraft {
    pub from: f64,
    pub to: f64,
    pub category: u8,
    pub status: u8,
    pub number: u32,
    pub hp: u16,
    pub from_m: u32,
    pub to_m: u32,
}

/// A run of link ranges along one road and hp, in metering order: where stretch objects go.
#[derive(Debug, Clone)]
pub struct Chain {
    /// (global link index, from, to)
    pub parts: Vec<(usize, f64, f64)>,
    pub category: u8,
    pub municipality: u16,
    pub length_m: f64,
    /// Ranges of `parts` indexes that are tunnels / bridges.
    pub tunnels: Vec<std::ops::Range<usize>>,
    pub bridges: Vec<std::ops::Range<usize>>,
}

const STEP_M: f64 = 25.0;

fn terrain_z(x: f64, y: f64) -> f64 {
    let h = 40.0
        + 350.0 * ((x / 23_000.0).sin() * (y / 31_000.0).cos()).abs()
        + 60.0 * ((x + y) / 7_000.0).sin();
    (h.max(1.0) * 1000.0).round() / 1000.0
}

/// A wiggly path from a to b with vertices about every 25 m.
pub(super) fn path_between(
    rng: &mut ChaCha8Rng,
    a: (f64, f64),
    b: (f64, f64),
    wiggle: f64,
) -> Vec<Coord3> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let n = ((len / STEP_M).ceil() as usize).max(1);
    let (nx, ny) = (-dy / len, dx / len);
    let amp = wiggle * len.min(30_000.0);
    let (p1, p2) = (
        rng.random::<f64>() * std::f64::consts::TAU,
        rng.random::<f64>() * std::f64::consts::TAU,
    );
    let (k1, k2) = (
        1.0 + rng.random::<f64>() * 2.0,
        3.0 + rng.random::<f64>() * 5.0,
    );
    (0..=n)
        .map(|i| {
            let t = i as f64 / n as f64;
            let env = (t * std::f64::consts::PI).sin();
            let off = env
                * amp
                * (0.7 * (k1 * t * std::f64::consts::TAU + p1).sin()
                    + 0.3 * (k2 * t * std::f64::consts::TAU + p2).sin());
            let x = a.0 + dx * t + nx * off;
            let y = a.1 + dy * t + ny * off;
            [round3(x), round3(y), terrain_z(x, y)]
        })
        .collect()
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Random point inside a municipality (rejection sampling in its bbox).
pub(super) fn point_inside(rng: &mut ChaCha8Rng, m: &Municipality) -> (f64, f64) {
    use geo::Contains;
    let (min, max) = (m.bbox.min(), m.bbox.max());
    for _ in 0..200 {
        let p = (
            rng.random_range(min.x..=max.x),
            rng.random_range(min.y..=max.y),
        );
        if m.shape.contains(&geo::Point::new(p.0, p.1)) {
            return p;
        }
    }
    Areas::interior_point(&m.shape).unwrap_or(((min.x + max.x) / 2.0, (min.y + max.y) / 2.0))
}

/// Builds drafts in a local id space (nodes from `node_base`).
pub(super) struct DraftBuilder<'a> {
    pub(super) areas: &'a Areas,
    pub(super) rng: ChaCha8Rng,
    pub(super) drafts: Vec<LinkDraft>,
    pub(super) chains: Vec<Chain>,
    pub(super) next_node: u64,
    /// (node id, position) of nodes usable as junctions
    pub(super) junctions: Vec<(u64, (f64, f64))>,
    pub(super) home: u16,
    pub(super) date_range: (Days, Days),
    /// Next hp per (category, number, county) for roads numbered per county (E, R, F).
    pub(super) hp_counters: std::collections::HashMap<(u8, u32, u8), u16>,
}

pub(super) struct RoadSpec {
    pub(super) category: u8,
    pub(super) status: u8,
    pub(super) number: u32,
    pub(super) lanes: &'static str,
    pub(super) theme: u16,
    pub(super) road_type: u8,
    /// Meter value the road continues from (K streets laid edge by edge).
    pub(super) first_meter: f64,
}

impl<'a> DraftBuilder<'a> {
    pub(super) fn new(areas: &'a Areas, seed: u64, node_base: u64, home: u16) -> Self {
        DraftBuilder {
            areas,
            rng: ChaCha8Rng::seed_from_u64(seed),
            drafts: Vec::new(),
            chains: Vec::new(),
            next_node: node_base,
            junctions: Vec::new(),
            home,
            date_range: (0, 0),
            hp_counters: Default::default(),
        }
    }

    pub(super) fn node(&mut self) -> u64 {
        self.next_node += 1;
        self.next_node
    }

    fn municipality_at(&self, x: f64, y: f64) -> u16 {
        self.areas
            .municipality_at(x, y)
            .map(|m| m.number)
            .unwrap_or(self.home)
    }

    /// The next hp part of a road in a county. K and P roads are numbered per municipality and
    /// keep hp 1.
    fn next_hp(&mut self, spec: &RoadSpec, county: u8) -> u16 {
        if matches!(spec.category, b'K' | b'P') {
            return 1;
        }
        let c = self
            .hp_counters
            .entry((spec.category, spec.number, county))
            .or_insert(0);
        *c += 1;
        *c
    }

    /// Lay a road along `coords` from node `start` (ending at `end` if given). Returns the end
    /// node and the meter value reached.
    pub(super) fn lay_road(
        &mut self,
        coords: &[Coord3],
        start: u64,
        end: Option<u64>,
        spec: &RoadSpec,
        hp_every_m: f64,
    ) -> (u64, f64) {
        let structures = self.structures(spec, length_2d(coords));
        let mut walk = Walk {
            hp: 0,
            meter: spec.first_meter,
            walked: 0.0,
            node: start,
            county: 0,
            hp_every_m,
            hp_border: hp_every_m,
            chain: Chain {
                parts: vec![],
                category: spec.category,
                municipality: self.home,
                length_m: 0.0,
                tunnels: vec![],
                bridges: vec![],
            },
        };
        walk.hp_border = walk.next_hp_at(0.0);
        let mut i0 = 0usize;
        while i0 + 1 < coords.len() {
            let (i1, len) = self.next_link_end(coords, i0);
            let geom = coords[i0..=i1].to_vec();
            let mid = geom[geom.len() / 2];
            let m = self.municipality_at(mid[0], mid[1]);
            let is_last = i1 + 1 >= coords.len();
            let end_node = match (is_last, end) {
                (true, Some(end)) => end,
                _ => self.node(),
            };
            self.enter_county(&mut walk, spec, (m / 100) as u8);
            let segments = self.segments(&mut walk, spec, len, is_last);
            let (in_tunnel, on_bridge) = structures.at(walk.walked, len);
            let medium = if in_tunnel {
                b'U'
            } else if on_bridge {
                b'L'
            } else {
                b'T'
            };
            let idx = self.drafts.len();
            self.drafts.push(LinkDraft {
                start_node: walk.node,
                end_node,
                coords: geom,
                segments,
                municipality: m,
                lanes: spec.lanes,
                medium,
                theme_code: spec.theme,
                road_type: spec.road_type,
                topology_level: 0,
                super_link: None,
                is_connection: false,
            });
            self.add_to_chain(&mut walk.chain, idx, len, in_tunnel, on_bridge);
            walk.chain.municipality = m;
            if spec.category == b'E' && medium == b'T' && self.rng.random_bool(0.04) {
                self.add_carriageways(idx);
            }
            if self.rng.random_bool(0.15) {
                self.junctions
                    .push((end_node, (coords[i1][0], coords[i1][1])));
            }
            walk.node = end_node;
            walk.walked += len;
            i0 = i1;
        }
        self.finish_chain(&mut walk.chain);
        (walk.node, walk.meter)
    }

    /// Where a road's tunnel and bridge lie: decided once per road.
    fn structures(&mut self, spec: &RoadSpec, total: f64) -> Structures {
        let tunnel_len =
            if matches!(spec.category, b'E' | b'R') && total > 6000.0 && self.rng.random_bool(0.35)
            {
                self.rng.random_range(600.0..3000.0)
            } else {
                0.0
            };
        let tunnel_at = self.rng.random_range(0.2..0.6) * total;
        let bridge_at = if self.rng.random_bool(0.4) {
            self.rng.random_range(0.1..0.9) * total
        } else {
            f64::INFINITY
        };
        Structures {
            tunnel_len,
            tunnel_at,
            bridge_at,
        }
    }

    /// The vertex the next link ends at (from vertex `i0`) and its length: vertices are walked
    /// until the link reaches a random target length, and a tiny last link is avoided.
    fn next_link_end(&mut self, coords: &[Coord3], i0: usize) -> (usize, f64) {
        let target = self.rng.random_range(40.0..160.0);
        let mut i1 = i0 + 1;
        let mut len = seg_len(&coords[i0], &coords[i1]);
        while len < target && i1 + 1 < coords.len() {
            len += seg_len(&coords[i1], &coords[i1 + 1]);
            i1 += 1;
        }
        if coords.len() - 1 - i1 < 2 && i1 + 1 < coords.len() {
            while i1 + 1 < coords.len() {
                len += seg_len(&coords[i1], &coords[i1 + 1]);
                i1 += 1;
            }
        }
        (i1, len)
    }

    /// The walk reaches a link in `county`: the first link takes an hp; a new county (for roads
    /// numbered per county) a new hp, with meters restarting and the chain ended.
    fn enter_county(&mut self, walk: &mut Walk, spec: &RoadSpec, county: u8) {
        if walk.county == 0 {
            walk.hp = self.next_hp(spec, county);
        } else if county != walk.county && spec.category != b'K' && spec.category != b'P' {
            walk.hp = self.next_hp(spec, county);
            walk.meter = 0.0;
            self.finish_chain(&mut walk.chain);
            walk.hp_border = walk.next_hp_at(walk.walked);
        }
        walk.county = county;
    }

    /// The segment rows of the next link (`len` metres): one, or two where an hp border falls
    /// inside it (the second on the next hp, its meters from 0).
    fn segments(
        &mut self,
        walk: &mut Walk,
        spec: &RoadSpec,
        len: f64,
        is_last: bool,
    ) -> Vec<SegmentDraft> {
        let row = |hp, from, to, from_m: f64, to_m: f64| SegmentDraft {
            from,
            to,
            category: spec.category,
            status: spec.status,
            number: spec.number,
            hp,
            from_m: from_m.round() as u32,
            to_m: to_m.round() as u32,
        };
        let (walked, border) = (walk.walked, walk.hp_border);
        if walked + len > border && border > walked + 1.0 && !is_last {
            let f = (border - walked) / len;
            let first = row(walk.hp, 0.0, f, walk.meter, walk.meter + (border - walked));
            walk.hp = self.next_hp(spec, walk.county);
            let rest = len - (border - walked);
            let second = row(walk.hp, f, 1.0, 0.0, rest);
            walk.meter = rest;
            walk.hp_border = walk.next_hp_at(walked + len);
            vec![first, second]
        } else {
            let only = row(walk.hp, 0.0, 1.0, walk.meter, walk.meter + len);
            walk.meter += len;
            vec![only]
        }
    }

    /// Add draft `idx` (`len` metres) to the road's chain: a link split by an hp border ends
    /// the chain at the split; a whole link extends the tunnel and bridge runs it lies in.
    fn add_to_chain(
        &mut self,
        chain: &mut Chain,
        idx: usize,
        len: f64,
        in_tunnel: bool,
        on_bridge: bool,
    ) {
        if self.drafts[idx].segments.len() == 2 {
            let f = self.drafts[idx].segments[0].to;
            chain.parts.push((idx, 0.0, f));
            chain.length_m += len * f;
            self.finish_chain(chain);
            chain.parts.push((idx, f, 1.0));
            chain.length_m += len * (1.0 - f);
        } else {
            let n = chain.parts.len();
            if in_tunnel {
                extend_run(&mut chain.tunnels, n);
            }
            if on_bridge {
                extend_run(&mut chain.bridges, n);
            }
            chain.parts.push((idx, 0.0, 1.0));
            chain.length_m += len;
        }
    }

    /// Separate carriageways for trunk link `idx`: two parallel links one level down.
    fn add_carriageways(&mut self, idx: usize) {
        for (side, lanes) in [(6.0, "1"), (-6.0, "2")] {
            let g = offset(&self.drafts[idx].coords, side);
            let mut d = self.drafts[idx].clone();
            d.coords = g;
            d.lanes = lanes;
            d.topology_level = 1;
            d.road_type = 1;
            d.super_link = Some(idx);
            self.drafts.push(d);
        }
    }

    fn finish_chain(&mut self, chain: &mut Chain) {
        if !chain.parts.is_empty() {
            let done = std::mem::replace(
                chain,
                Chain {
                    parts: vec![],
                    category: chain.category,
                    municipality: chain.municipality,
                    length_m: 0.0,
                    tunnels: vec![],
                    bridges: vec![],
                },
            );
            self.chains.push(done);
        }
    }
}

/// Where a road's tunnel and bridge lie, in metres walked along it.
struct Structures {
    tunnel_len: f64,
    tunnel_at: f64,
    bridge_at: f64,
}

impl Structures {
    /// Whether a link from `walked` over `len` metres is in the tunnel, and on the bridge.
    fn at(&self, walked: f64, len: f64) -> (bool, bool) {
        let in_tunnel = self.tunnel_len > 0.0
            && walked + len > self.tunnel_at
            && walked < self.tunnel_at + self.tunnel_len;
        let on_bridge = walked <= self.bridge_at && walked + len > self.bridge_at;
        (in_tunnel, on_bridge)
    }
}

/// How far a road being laid has come: its hp, meter value, metres walked, last node, county,
/// the next hp border and the chain it is building.
struct Walk {
    hp: u16,
    meter: f64,
    walked: f64,
    node: u64,
    county: u8,
    hp_every_m: f64,
    hp_border: f64,
    chain: Chain,
}

impl Walk {
    /// The first hp border after `walked` metres.
    fn next_hp_at(&self, walked: f64) -> f64 {
        ((walked / self.hp_every_m).floor() + 1.0) * self.hp_every_m
    }
}

fn extend_run(runs: &mut Vec<std::ops::Range<usize>>, n: usize) {
    match runs.last_mut() {
        Some(r) if r.end == n => r.end = n + 1,
        _ => runs.push(n..n + 1),
    }
}

fn seg_len(a: &Coord3, b: &Coord3) -> f64 {
    ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt()
}

fn offset(coords: &[Coord3], d: f64) -> Vec<Coord3> {
    let n = coords.len();
    (0..n)
        .map(|i| {
            let (a, b) = (coords[i.saturating_sub(1)], coords[(i + 1).min(n - 1)]);
            let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
            let l = (dx * dx + dy * dy).sqrt().max(1e-9);
            let c = coords[i];
            [round3(c[0] - dy / l * d), round3(c[1] + dx / l * d), c[2]]
        })
        .collect()
}

pub(super) fn dist(a: (f64, f64), b: (f64, f64)) -> f64 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}
