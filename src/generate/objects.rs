//! Road objects of real catalogue types placed on the generated network.
//!
//! Stretch types that cover the network (speed limits, surfacing, traffic volume, ...) are laid
//! piece by piece along every road chain; other stretch types cover random runs that can span
//! several links; point types sit on a link position with an own point geometry beside the road.
//! Families follow catalogue relations: Skiltpunkt 95 → Skiltplate 96, Tunnel 581 → Tunnelløp 67
//! (on the generated tunnels), Rekkverk 5 → Rekkverksende 14. Types are generated in parallel
//! with one RNG per family, so output does not depend on thread scheduling.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::network::{Chain, GeneratedNetwork};
use super::values::{random_value, Value};
use crate::catalog::{datatype, Catalog, ObjectType, Placement, ValueKind};
use crate::geo::linref::point_at;
use crate::geo::Coord3;
use crate::snapshot::columns::{
    Days, DeletedTable, ObjectTable, PropertyColumn, Seconds, DIRECTION_AGAINST, DIRECTION_WITH,
    OPEN_END,
};

#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Cover every eligible chain with pieces of min..max meters.
    Cover(f64, f64),
    /// Random runs of min..max meters, `per_km` of them.
    Stretch(f64, f64, f64),
    /// Points, `per_km`.
    Point(f64),
    /// On generated tunnels (581 with child 67).
    Tunnel,
    /// On generated bridges (60).
    Bridge,
}

struct Spec {
    type_id: u32,
    layout: Layout,
    /// Share of the objects of a Cover/Stretch layout that may span several links; the others
    /// lie on one link (see `family`).
    multi: f64,
    /// Road categories it appears on (empty = all).
    categories: &'static [u8],
    /// (child type, min, max) per object.
    children: Option<(u32, usize, usize)>,
}

const ALL: &[u8] = &[];
const TRUNK: &[u8] = b"ERF";
const TOWN: &[u8] = b"K";

fn curated() -> Vec<Spec> {
    use Layout::*;
    let s = |type_id, layout, categories, children| Spec {
        type_id,
        layout,
        multi: 0.0,
        categories,
        children,
    };
    let m = |multi: f64, spec: Spec| Spec { multi, ..spec };
    // Multi-link shares: 904 as measured in real v2 data (LtGlahn's Stavanger extraction of
    // type 904, 2021: 819 of 5,648 objects, 14.5 %, have more than one stedfesting); other
    // stretch types a little higher the longer they typically run.
    vec![
        m(0.5, s(105, Cover(300.0, 3000.0), ALL, None)),
        m(0.4, s(241, Cover(200.0, 2000.0), ALL, None)),
        m(0.5, s(540, Cover(1000.0, 5000.0), TRUNK, None)),
        m(0.15, s(904, Cover(2000.0, 10000.0), TRUNK, None)),
        m(0.3, s(583, Cover(500.0, 3000.0), ALL, None)),
        m(
            0.3,
            s(5, Stretch(0.8, 50.0, 600.0), TRUNK, Some((14, 2, 2))),
        ),
        m(0.5, s(86, Stretch(0.6, 300.0, 2000.0), TOWN, None)),
        m(0.3, s(80, Stretch(0.5, 100.0, 800.0), ALL, None)),
        m(0.4, s(301, Stretch(0.3, 200.0, 1500.0), TRUNK, None)),
        s(95, Point(5.0), ALL, Some((96, 1, 3))),
        s(87, Point(6.0), TOWN, None),
        s(83, Point(3.0), ALL, None),
        s(79, Point(2.0), ALL, None),
        s(174, Point(0.8), TOWN, None),
        s(103, Point(0.4), TOWN, None),
        s(37, Point(0.5), ALL, None),
        s(47, Point(0.1), TRUNK, None),
        s(100, Point(0.02), ALL, None),
        s(45, Point(0.01), b"ER", None),
        s(162, Point(0.02), b"ER", None),
        s(581, Tunnel, ALL, Some((67, 1, 1))),
        s(60, Bridge, ALL, None),
    ]
}

/// Extra real types with small densities, so that the dataset has at least `min_types` types.
fn tail(catalog: &Catalog, taken: &[u32], min_types: usize) -> Vec<Spec> {
    let mut out = Vec::new();
    let mut have = taken.len() + 3; // 96, 67, 14 come as children
    for t in &catalog.types {
        if have >= min_types {
            break;
        }
        let usable = matches!(t.placement, Placement::Point | Placement::Line)
            && !taken.contains(&t.id)
            && !crate::area::AreaKind::ALL
                .iter()
                .any(|k| k.object_type() == t.id)
            && ![96, 67, 14].contains(&t.id)
            && !t.control.must_have_parent
            && !t.name.to_lowercase().contains("historisk")
            && t.value_properties().count() >= 2
            && t.id < 1000;
        if !usable {
            continue;
        }
        let layout = if t.placement == Placement::Line {
            Layout::Stretch(0.15, 100.0, 1500.0)
        } else {
            Layout::Point(0.25)
        };
        out.push(Spec {
            type_id: t.id,
            layout,
            multi: 0.3,
            categories: ALL,
            children: None,
        });
        have += 1;
    }
    out
}

/// Mean length of a generated link (links are cut 40–160 m).
const MEAN_LINK_M: f64 = 100.0;

/// Expected objects per km of a spec (for calibrating densities).
fn per_km(spec: &Spec) -> f64 {
    let kids = spec
        .children
        .map(|(_, a, b)| (a + b) as f64 / 2.0)
        .unwrap_or(0.0);
    match spec.layout {
        Layout::Cover(a, b) => {
            1000.0 / (spec.multi * (a + b) / 2.0 + (1.0 - spec.multi) * MEAN_LINK_M)
        }
        Layout::Stretch(k, _, _) | Layout::Point(k) => k * (1.0 + kids),
        _ => 0.0,
    }
}

pub struct ObjectPlan {
    pub objects_per_km: f64,
    pub min_types: usize,
    /// Day range for start dates; last_modified up to `now`.
    pub dates: (Days, Days),
    pub now: Seconds,
    pub deleted_share: f64,
    /// Links that replaced an older one on their `start_date` (`history::replace_links`): an
    /// object above version 1 on one was carried over, its current version starting that day.
    pub replaced: HashSet<u64>,
}

/// A table under construction with local ids (0..n) and child refs as local indexes.
struct Draft {
    table: ObjectTable,
    cols: Vec<(u32, ColumnDraft)>,
}

enum ColumnDraft {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
}

impl Draft {
    fn new(t: &ObjectType, rng: &mut ChaCha8Rng) -> Draft {
        // every required property, sensitive ones, and up to eight optional ones
        let mut cols = Vec::new();
        let mut optional = 0;
        for p in t.value_properties() {
            if p.importance == 9 {
                continue;
            }
            let take =
                p.importance <= 2 || p.sensitivity > 0 || (optional < 8 && rng.random_bool(0.6));
            if !take {
                continue;
            }
            if p.importance > 2 {
                optional += 1;
            }
            let c = match p.storage() {
                ValueKind::Enum | ValueKind::Integer => ColumnDraft::Int(Int64Builder::new()),
                ValueKind::Float => ColumnDraft::Float(Float64Builder::new()),
                _ => ColumnDraft::Text(StringBuilder::new()),
            };
            cols.push((p.id, c));
        }
        Draft {
            table: ObjectTable::new(t.id),
            cols,
        }
    }

    fn finish(mut self) -> ObjectTable {
        for (id, c) in self.cols {
            let values: ArrayRef = match c {
                ColumnDraft::Int(mut b) => Arc::new(b.finish()),
                ColumnDraft::Float(mut b) => Arc::new(b.finish()),
                ColumnDraft::Text(mut b) => Arc::new(b.finish()),
            };
            self.table.properties.push(PropertyColumn {
                property_id: id,
                values,
            });
        }
        self.table
    }
}

struct Ctx<'a> {
    net: &'a GeneratedNetwork,
    catalog: &'a Catalog,
    plan: &'a ObjectPlan,
    link_len: &'a [f64],
    /// The day each link draft started (its rows' `start_date`).
    link_start: &'a [Days],
}

impl Ctx<'_> {
    fn link_id(&self, idx: usize) -> u64 {
        self.net.link_ids[idx]
    }

    /// Point (with height) at position `pos` of link draft `idx`.
    fn point_on(&self, idx: usize, pos: f64) -> Coord3 {
        let n = &self.net.network;
        for r in n.rows_of_link(self.link_id(idx)) {
            if pos >= n.from_pos[r] && pos <= n.to_pos[r] {
                let span = (n.to_pos[r] - n.from_pos[r]).max(1e-12);
                return point_at(n.geometry(r), (pos - n.from_pos[r]) / span);
            }
        }
        [f64::NAN; 3]
    }

    /// The chain range [a, b) meters as placements.
    fn placements(&self, chain: &Chain, a: f64, b: f64) -> Vec<(usize, f64, f64)> {
        let mut out = Vec::new();
        let mut at = 0.0;
        for &(idx, from, to) in &chain.parts {
            let len = self.link_len[idx] * (to - from);
            let (s, e) = (at, at + len);
            if e > a && s < b && len > 0.0 {
                let f0 = from + (to - from) * ((a - s).max(0.0) / len);
                let f1 = from + (to - from) * ((b.min(e) - s) / len);
                if f1 > f0 {
                    out.push((idx, round8(f0), round8(f1)));
                }
            }
            at = e;
        }
        out
    }

    /// The chain meters [start, end) of the link part that contains meter `m`.
    fn part_around(&self, chain: &Chain, m: f64) -> (f64, f64) {
        let mut at = 0.0;
        for &(idx, from, to) in &chain.parts {
            let len = self.link_len[idx] * (to - from);
            if m + 0.01 < at + len {
                return (at, at + len);
            }
            at += len;
        }
        (at, chain.length_m.max(at))
    }

    /// Point at `m` meters along the chain: (link draft index, position).
    fn point(&self, chain: &Chain, m: f64) -> (usize, f64) {
        let mut at = 0.0;
        for &(idx, from, to) in &chain.parts {
            let len = self.link_len[idx] * (to - from);
            if m <= at + len {
                let f = if len > 0.0 { (m - at) / len } else { 0.0 };
                return (idx, round8(from + (to - from) * f.clamp(0.0, 1.0)));
            }
            at += len;
        }
        let &(idx, _, to) = chain.parts.last().expect("chains are never empty");
        (idx, to)
    }
}

/// (placements, own point geometry, local index of a child made in advance)
type Item = (Vec<(usize, f64, f64)>, Option<Coord3>, Option<u64>);

fn round8(v: f64) -> f64 {
    (v * 1e8).round() / 1e8
}

/// Append one object (metadata, placements, own geometry, property values).
fn push_object(
    ctx: &Ctx,
    d: &mut Draft,
    rng: &mut ChaCha8Rng,
    t: &ObjectType,
    placements: &[(usize, f64, f64)],
    geometry: Option<Coord3>,
    road_category: u8,
) {
    let tb = &mut d.table;
    let local = tb.id.len() as u64;
    tb.id.push(local);
    let version = match rng.random_range(0..100) {
        0..70 => 1,
        70..90 => 2,
        90..97 => 3,
        _ => rng.random_range(4..8),
    };
    tb.version.push(version);
    // an object starts no earlier than the links it lies on; carried over to a link that
    // replaced another, its current version starts the day the new link did
    let (d0, d1) = ctx.plan.dates;
    let lo = placements
        .iter()
        .map(|&(idx, _, _)| ctx.link_start[idx])
        .fold(d0, Days::max);
    let carried = version > 1
        && placements
            .iter()
            .any(|&(idx, _, _)| ctx.plan.replaced.contains(&ctx.link_id(idx)));
    let span = (d1 - lo).max(1);
    let drawn =
        lo + (span as f64 * (1.0 - (1.0 - rng.random::<f64>()).powi(version as i32))) as i32;
    let start = if carried { lo } else { drawn.min(d1.max(lo)) };
    tb.start_date.push(start);
    tb.end_date.push(OPEN_END);
    let start_s = start as i64 * 86_400;
    let modified = start_s + rng.random_range(0..(ctx.plan.now - start_s).max(1));
    tb.last_modified.push(modified.min(ctx.plan.now));
    for &(idx, from, to) in placements {
        tb.loc_link.push(ctx.link_id(idx));
        tb.loc_from.push(from);
        tb.loc_to.push(to);
        tb.loc_direction.push(if rng.random_bool(0.9) {
            DIRECTION_WITH
        } else {
            DIRECTION_AGAINST
        });
        tb.loc_lanes.push(Box::default());
    }
    tb.loc_offsets.push(tb.loc_link.len() as u32);
    if let Some(g) = geometry {
        if t.geometry_property(datatype::GEOM_POINT).is_some() {
            tb.geom_coords.push(g);
        }
    }
    tb.geom_offsets.push(tb.geom_coords.len() as u32);
    tb.child_offsets.push(tb.child_id.len() as u32);
    for (pid, col) in &mut d.cols {
        let p = t
            .property(*pid)
            .expect("columns come from the type's properties");
        let fill = match p.importance {
            1 => true,
            2 => rng.random_bool(0.9),
            _ => rng.random_bool(if p.sensitivity > 0 { 0.5 } else { 0.35 }),
        };
        let mut v = if fill {
            random_value(rng, p, local)
        } else {
            None
        };
        if *pid == 2021 {
            // speed limits by road category
            let kmh: &[u32] = match road_category {
                b'E' => &[80, 80, 90, 100, 110, 70],
                b'R' | b'F' => &[80, 80, 60, 70, 50],
                b'K' => &[30, 40, 50, 50, 30],
                _ => &[30, 50, 20, 40],
            };
            let want = kmh[rng.random_range(0..kmh.len())] as f64;
            v = p
                .allowed_values
                .as_ref()
                .and_then(|vs| vs.iter().find(|a| a.number == Some(want)))
                .map(|a| Value::Int(a.id as i64))
                .or(v);
        }
        match (col, v) {
            (ColumnDraft::Int(b), Some(Value::Int(x))) => b.append_value(x),
            (ColumnDraft::Float(b), Some(Value::Float(x))) => b.append_value(x),
            (ColumnDraft::Text(b), Some(Value::Text(x))) => b.append_value(x),
            (ColumnDraft::Int(b), _) => b.append_null(),
            (ColumnDraft::Float(b), _) => b.append_null(),
            (ColumnDraft::Text(b), _) => b.append_null(),
        }
    }
}

fn side_point(ctx: &Ctx, idx: usize, pos: f64, rng: &mut ChaCha8Rng) -> Coord3 {
    let p = ctx.point_on(idx, pos);
    let q = ctx.point_on(idx, (pos + 0.01).min(1.0));
    let (dx, dy) = (q[0] - p[0], q[1] - p[1]);
    let l = (dx * dx + dy * dy).sqrt();
    let off = rng.random_range(2.0..8.0) * if rng.random_bool(0.5) { 1.0 } else { -1.0 };
    if l > 0.0 && l.is_finite() {
        [r3(p[0] - dy / l * off), r3(p[1] + dx / l * off), r3(p[2])]
    } else {
        [r3(p[0]), r3(p[1]), r3(p[2])]
    }
}

fn r3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Generate one family (a type and its child type, if any). Returns drafts with local ids.
fn family(ctx: &Ctx, spec: &Spec, seed: u64, density: f64) -> Vec<Draft> {
    let mut rng =
        ChaCha8Rng::seed_from_u64(seed ^ (spec.type_id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let t = ctx
        .catalog
        .object_type(spec.type_id)
        .expect("specs name catalogue types");
    let child_t = spec
        .children
        .and_then(|(c, _, _)| ctx.catalog.object_type(c));
    let d = Draft::new(t, &mut rng);
    let cd = child_t.map(|ct| Draft::new(ct, &mut rng));
    let mut f = Family {
        ctx,
        spec,
        density,
        rng,
        t,
        child_t,
        d,
        cd,
    };
    let eligible = |c: &Chain| spec.categories.is_empty() || spec.categories.contains(&c.category);
    for chain in ctx.net.chains.iter().filter(|c| eligible(c)) {
        let items = match spec.layout {
            Layout::Cover(a, b) => f.cover(chain, a, b),
            Layout::Stretch(k, a, b) => f.stretches(chain, k, a, b),
            Layout::Point(k) => f.points(chain, k),
            Layout::Tunnel => f.tunnels(chain),
            Layout::Bridge => chain
                .bridges
                .iter()
                .map(|run| (chain.parts[run.clone()].to_vec(), None, None))
                .collect(),
        };
        for item in items {
            f.push(chain, item);
        }
    }
    let mut out = vec![f.d];
    out.extend(f.cd);
    out
}

/// One family being generated: its type's draft and its child type's.
struct Family<'a> {
    ctx: &'a Ctx<'a>,
    spec: &'a Spec,
    density: f64,
    rng: ChaCha8Rng,
    t: &'a ObjectType,
    child_t: Option<&'a ObjectType>,
    d: Draft,
    cd: Option<Draft>,
}

impl Family<'_> {
    /// Objects covering the whole chain end to end, each `a..b` metres long or the rest of the
    /// link it starts on.
    fn cover(&mut self, chain: &Chain, a: f64, b: f64) -> Vec<Item> {
        let (ctx, rng) = (self.ctx, &mut self.rng);
        let mut items = Vec::new();
        let mut at = 0.0;
        while at < chain.length_m - 0.5 {
            let end = if !rng.random_bool(self.spec.multi) {
                ctx.part_around(chain, at).1
            } else {
                let len = rng.random_range(a..b);
                if chain.length_m - (at + len) < a / 3.0 {
                    chain.length_m
                } else {
                    (at + len).min(chain.length_m)
                }
            };
            let pl = ctx.placements(chain, at, end);
            if !pl.is_empty() {
                items.push((pl, None, None));
            }
            at = end;
        }
        items
    }

    /// About `k` objects per km of `a..b` metres, over several links or within one.
    fn stretches(&mut self, chain: &Chain, k: f64, a: f64, b: f64) -> Vec<Item> {
        let (ctx, rng) = (self.ctx, &mut self.rng);
        let mut items = Vec::new();
        let n = poisson(rng, k * self.density * chain.length_m / 1000.0);
        for _ in 0..n {
            let len = rng.random_range(a..b).min(chain.length_m);
            let (lo, hi) = if rng.random_bool(self.spec.multi) {
                (0.0, chain.length_m)
            } else {
                ctx.part_around(chain, rng.random_range(0.0..chain.length_m.max(0.001)))
            };
            let len = len.min(hi - lo);
            let start = rng.random_range(lo..=(hi - len).max(lo));
            let pl = ctx.placements(chain, start, start + len);
            if !pl.is_empty() {
                items.push((pl, None, None));
            }
        }
        items
    }

    /// About `k` point objects per km, each with a geometry beside the road.
    fn points(&mut self, chain: &Chain, k: f64) -> Vec<Item> {
        let (ctx, rng) = (self.ctx, &mut self.rng);
        let n = poisson(rng, k * self.density * chain.length_m / 1000.0);
        (0..n)
            .map(|_| {
                let (idx, pos) = ctx.point(chain, rng.random_range(0.0..chain.length_m.max(0.001)));
                let g = side_point(ctx, idx, pos, rng);
                (vec![(idx, pos, pos)], Some(g), None)
            })
            .collect()
    }

    /// A tunnel (a point at its mouth) per tunnel run of the chain, with its bore (the child,
    /// covering the run) made at once.
    fn tunnels(&mut self, chain: &Chain) -> Vec<Item> {
        let ctx = self.ctx;
        let mut items = Vec::new();
        for run in &chain.tunnels {
            let parts: Vec<(usize, f64, f64)> = chain.parts[run.clone()].to_vec();
            let (idx, pos, _) = parts[0];
            let g = ctx.point_on(idx, pos);
            let child = match (self.child_t, self.cd.as_mut()) {
                (Some(ct), Some(cd)) => {
                    let local = cd.table.id.len() as u64;
                    push_object(ctx, cd, &mut self.rng, ct, &parts, None, chain.category);
                    Some(local)
                }
                _ => None,
            };
            items.push((vec![(idx, pos, pos)], Some(g), child));
        }
        items
    }

    /// Add an item as an object of the type, with its children: the one made already, or
    /// `lo..=hi` new ones (at a point parent, or at the ends of a stretch parent).
    fn push(&mut self, chain: &Chain, (pl, g, premade): Item) {
        let ctx = self.ctx;
        let row = self.d.table.id.len();
        push_object(
            ctx,
            &mut self.d,
            &mut self.rng,
            self.t,
            &pl,
            g,
            chain.category,
        );
        let (Some((_, lo, hi)), Some(ct), Some(cd)) =
            (self.spec.children, self.child_t, self.cd.as_mut())
        else {
            return;
        };
        let d = &mut self.d;
        if let Some(child_local) = premade {
            d.table.child_type.push(ct.id);
            d.table.child_id.push(child_local);
        } else {
            let n = self.rng.random_range(lo..=hi);
            for k in 0..n {
                let child_pl = if pl.len() == 1 && pl[0].1 == pl[0].2 {
                    pl.clone()
                } else {
                    let (idx, f, e) = if k == 0 {
                        pl[0]
                    } else {
                        *pl.last().expect("non-empty")
                    };
                    let pos = if k == 0 { f } else { e };
                    vec![(idx, pos, pos)]
                };
                let cg = g
                    .or_else(|| Some(side_point(ctx, child_pl[0].0, child_pl[0].1, &mut self.rng)));
                let child_local = cd.table.id.len() as u64;
                push_object(ctx, cd, &mut self.rng, ct, &child_pl, cg, chain.category);
                d.table.child_type.push(ct.id);
                d.table.child_id.push(child_local);
            }
        }
        d.table.child_offsets[row + 1] = d.table.child_id.len() as u32;
    }
}

fn poisson(rng: &mut ChaCha8Rng, mean: f64) -> usize {
    // floor + Bernoulli remainder: the right mean, cheap and deterministic
    let base = mean.floor();
    base as usize + usize::from(rng.random_bool((mean - base).clamp(0.0, 1.0)))
}

/// Generate all objects; ids are assigned per type in ascending type order.
pub fn generate(
    catalog: &Catalog,
    net: &GeneratedNetwork,
    plan: &ObjectPlan,
    seed: u64,
) -> (BTreeMap<u32, ObjectTable>, DeletedTable) {
    let mut specs = curated();
    let taken: Vec<u32> = specs.iter().map(|s| s.type_id).collect();
    specs.extend(tail(catalog, &taken, plan.min_types));
    let base_per_km: f64 = specs.iter().map(per_km).sum();
    let covered_per_km: f64 = specs
        .iter()
        .filter(|s| matches!(s.layout, Layout::Cover(..)))
        .map(per_km)
        .sum();
    let density =
        ((plan.objects_per_km - covered_per_km) / (base_per_km - covered_per_km)).max(0.05);

    // length of each link draft (sum over its segments)
    let n = &net.network;
    let mut link_len = vec![0.0; net.link_ids.len()];
    let mut link_start = vec![plan.dates.0; net.link_ids.len()];
    for r in 0..n.len() {
        let idx = (n.link_id[r] - net.link_ids[0]) as usize;
        link_len[idx] += n.length_m[r];
        link_start[idx] = link_start[idx].max(n.start_date[r]);
    }
    let ctx = Ctx {
        net,
        catalog,
        plan,
        link_len: &link_len,
        link_start: &link_start,
    };
    let families: Vec<Vec<Draft>> = specs
        .par_iter()
        .map(|s| family(&ctx, s, seed, density))
        .collect();

    // assign ids: ascending type id, contiguous per type
    let mut tables: BTreeMap<u32, ObjectTable> = BTreeMap::new();
    for fam in families {
        for d in fam {
            let t = d.finish();
            if !t.is_empty() {
                tables.insert(t.type_id, t);
            }
        }
    }
    let mut next_id = 100_000_000u64;
    let mut base_of: BTreeMap<u32, u64> = BTreeMap::new();
    for (&type_id, t) in tables.iter_mut() {
        base_of.insert(type_id, next_id);
        for id in &mut t.id {
            *id += next_id;
        }
        next_id += t.len() as u64 + 1000;
    }
    for t in tables.values_mut() {
        for (k, id) in t.child_id.iter_mut().enumerate() {
            *id += base_of[&t.child_type[k]];
        }
    }

    // deleted history: ids after all current objects
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xDE1E7ED);
    let mut deleted = DeletedTable::default();
    for (&type_id, t) in &tables {
        let k = poisson(&mut rng, t.len() as f64 * plan.deleted_share);
        for _ in 0..k {
            deleted.type_id.push(type_id);
            deleted.id.push(next_id);
            next_id += 1;
            deleted.version.push(rng.random_range(1..4));
            let lo = plan.now - 6 * 365 * 86_400;
            deleted.deleted_at.push(rng.random_range(lo..plan.now));
        }
    }
    (tables, deleted)
}
