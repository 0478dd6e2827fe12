//! Grouped statistics (`query::grouped`) against independent expectations on the generated
//! tiny dataset: each group of a one-dimension grouping equals the plain statistics
//! (`select` + `total_length`) with that group's filter added; a grouping of several
//! dimensions equals a brute-force pass over every network row each selected object touches;
//! the network's groups equal brute-force sums over the selected rows; whole meters add up.
//! With a polygon the parts are cut to it (a plain loop over its edges) and the groups add up
//! to the ungrouped length.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::OnceLock;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use geo::line_intersection::{line_intersection, LineIntersection};
use geo::{Coord, Intersects, Line, LineString, MultiPolygon, Point, Polygon};
use proptest::prelude::*;
use roaring::RoaringBitmap;
use vegdb::area::AreaKind;
use vegdb::catalog::ValueKind;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, TypeData, MAX_AREA_VALUES};
use vegdb::geo::area_polygon::AreaPolygon;
use vegdb::geo::srid::Srid;
use vegdb::index::bitmaps::part_length;
use vegdb::query::egenskap::{Expr, Literal, Op};
use vegdb::query::grouped::{whole_meters, Dimension, Group, NONE};
use vegdb::query::network::NetworkAreaFilter;
use vegdb::query::objects::{select, total_length, ObjectFilter};
use vegdb::query::vegref::RoadRefFilter;
use vegdb::snapshot::columns::NO_ROAD_REF;

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

const TYPES: [u32; 6] = [105, 95, 241, 87, 5, 83];
const MUNICIPALITIES: [u32; 3] = [5001, 5028, 5031];

/// The enumerated properties of a type with values in the data.
fn enum_properties(g: &Generation, d: &TypeData) -> Vec<u32> {
    let t = g.catalog.object_type(d.table.type_id).unwrap();
    d.table
        .properties
        .iter()
        .filter(|c| c.values.len() > c.values.null_count())
        .filter(|c| {
            t.property(c.property_id)
                .is_some_and(|p| p.storage() == ValueKind::Enum)
        })
        .map(|c| c.property_id)
        .collect()
}

/// The codes of network row `r` in dimension `d` (a transcription of the documented keys).
fn codes(g: &Generation, d: Dimension, r: usize) -> Vec<u32> {
    let n = &g.network;
    let letter = |c: u8| vec![if c == NO_ROAD_REF { NONE } else { c as u32 }];
    match d {
        Dimension::Area(AreaKind::Municipality) => vec![n.municipality[r] as u32],
        Dimension::Area(AreaKind::County) => vec![n.county[r] as u32],
        Dimension::Area(AreaKind::Region) => vec![n.region[r] as u32],
        Dimension::Area(AreaKind::RoadDepartment) => vec![n.road_department[r] as u32],
        Dimension::Area(AreaKind::Contract) => g.areas.contracts_of(n.municipality[r]).to_vec(),
        Dimension::Category => letter(n.road_category[r]),
        Dimension::Phase => letter(n.road_status[r]),
        Dimension::RoadType => vec![n.road_type[r] as u32],
        _ => unreachable!("not a network dimension"),
    }
}

fn enum_code(d: &TypeData, property: u32, row: usize) -> u32 {
    match d.table.property(property) {
        Some(c) => {
            let a = c.values.as_primitive::<Int64Type>();
            if a.is_null(row) {
                NONE
            } else {
                a.value(row) as u32
            }
        }
        None => NONE,
    }
}

/// Every key of the product of per-dimension code lists.
fn product(lists: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut out = vec![vec![]];
    for l in lists {
        out = out
            .into_iter()
            .flat_map(|k| {
                l.iter().map(move |&c| {
                    let mut k = k.clone();
                    k.push(c);
                    k
                })
            })
            .collect();
    }
    out
}

/// The groups by brute force: every network row of the whole network that each selected
/// object's placements overlap (a scan of all rows per placement).
fn brute_objects(
    g: &Generation,
    d: &TypeData,
    f: &ObjectFilter,
    segment: bool,
    dims: &[Dimension],
) -> BTreeMap<Vec<u32>, (u64, f64)> {
    let n = &g.network;
    let t = &d.table;
    let clip = segment && f.segments();
    let mut out: BTreeMap<Vec<u32>, (u64, f64)> = BTreeMap::new();
    for o in select(g, d, f).iter() {
        let o = o as usize;
        let mut seen: BTreeMap<Vec<u32>, f64> = BTreeMap::new();
        let on_network = dims.iter().any(|d| !matches!(d, Dimension::Enum(_)));
        let whole = d.index().length_m[o];
        if !on_network {
            let key: Vec<u32> = dims
                .iter()
                .map(|&dim| match dim {
                    Dimension::Enum(p) => enum_code(d, p, o),
                    _ => unreachable!(),
                })
                .collect();
            let mut length = 0.0;
            for p in t.placements(o) {
                for r in 0..n.len() {
                    if n.link_id[r] == t.loc_link[p]
                        && n.from_pos[r] <= t.loc_to[p]
                        && n.to_pos[r] >= t.loc_from[p]
                        && (!clip || f.row_passes(g, r))
                    {
                        length += inside(g, cut_to(f, clip), r, t.loc_from[p], t.loc_to[p]);
                    }
                }
            }
            seen.insert(key, if clip { length } else { whole });
        } else {
            for p in t.placements(o) {
                for r in 0..n.len() {
                    let overlaps = n.link_id[r] == t.loc_link[p]
                        && n.from_pos[r] <= t.loc_to[p]
                        && n.to_pos[r] >= t.loc_from[p];
                    if !overlaps {
                        continue;
                    }
                    let lists: Vec<Vec<u32>> = dims
                        .iter()
                        .map(|&dim| match dim {
                            Dimension::Enum(pid) => vec![enum_code(d, pid, o)],
                            other => codes(g, other, r),
                        })
                        .collect();
                    let part = if !segment {
                        0.0
                    } else if !clip || f.row_passes(g, r) {
                        inside(g, cut_to(f, clip), r, t.loc_from[p], t.loc_to[p])
                    } else {
                        0.0
                    };
                    for key in product(&lists) {
                        *seen.entry(key).or_default() += part;
                    }
                }
            }
            if !segment {
                for v in seen.values_mut() {
                    *v = whole;
                }
            }
        }
        for (key, length) in seen {
            let e = out.entry(key).or_default();
            e.0 += 1;
            e.1 += length;
        }
    }
    out
}

/// The polygon the parts are cut to: `f`'s when clipping.
fn cut_to(f: &ObjectFilter, clip: bool) -> Option<&AreaPolygon> {
    f.polygon.as_deref().filter(|_| clip)
}

/// The length of placement `from..=to` on network row `r`, and with a polygon only the share
/// of its line inside the polygon: every edge of the line cut at every crossing with a polygon
/// edge (all edges, a plain loop), a piece inside when its middle is.
fn inside(g: &Generation, polygon: Option<&AreaPolygon>, r: usize, from: f64, to: f64) -> f64 {
    let n = &g.network;
    let whole = part_length(n, r, from, to);
    let Some(m) = polygon.map(|a| a.shape()) else {
        return whole;
    };
    let (a, b) = (from.max(n.from_pos[r]), to.min(n.to_pos[r]));
    if whole == 0.0 || b <= a {
        return 0.0;
    }
    let line = g.segment(r).sub_line(a, b);
    let edges: Vec<Line<f64>> =
        m.0.iter()
            .flat_map(|p| std::iter::once(p.exterior()).chain(p.interiors()))
            .flat_map(|ring| ring.lines())
            .collect();
    let (mut total, mut within) = (0.0, 0.0);
    for w in line.windows(2) {
        let e = Line::new(
            Coord {
                x: w[0][0],
                y: w[0][1],
            },
            Coord {
                x: w[1][0],
                y: w[1][1],
            },
        );
        let len = (e.dx().powi(2) + e.dy().powi(2)).sqrt();
        total += len;
        let param = |c: Coord<f64>| {
            let d = e.delta();
            ((c.x - e.start.x) * d.x + (c.y - e.start.y) * d.y) / (d.x * d.x + d.y * d.y)
        };
        let mut ts = vec![0.0, 1.0];
        for &k in &edges {
            match line_intersection(e, k) {
                Some(LineIntersection::SinglePoint { intersection, .. }) => {
                    ts.push(param(intersection))
                }
                Some(LineIntersection::Collinear { intersection }) => {
                    ts.push(param(intersection.start));
                    ts.push(param(intersection.end));
                }
                None => {}
            }
        }
        ts.retain(|t| (0.0..=1.0).contains(t));
        ts.sort_by(f64::total_cmp);
        for t in ts.windows(2) {
            let mid = (t[0] + t[1]) / 2.0;
            let c = Point::new(e.start.x + mid * e.dx(), e.start.y + mid * e.dy());
            if c.intersects(m) {
                within += (t[1] - t[0]) * len;
            }
        }
    }
    if total == 0.0 {
        0.0
    } else {
        whole * within / total
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn assert_groups(got: &[Group], want: &BTreeMap<Vec<u32>, (u64, f64)>) -> Result<(), String> {
    let keys: Vec<Vec<u32>> = got.iter().map(|g| g.key.to_vec()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    if keys != sorted {
        return Err("groups are not sorted by key".into());
    }
    if keys != want.keys().cloned().collect::<Vec<_>>() {
        return Err(format!(
            "keys {keys:?} != {:?}",
            want.keys().collect::<Vec<_>>()
        ));
    }
    for gr in got {
        let (count, length) = want[&gr.key.to_vec()];
        if gr.count != count || !close(gr.length_m, length) {
            return Err(format!(
                "group {:?}: ({}, {}) != ({count}, {length})",
                gr.key, gr.count, gr.length_m
            ));
        }
    }
    Ok(())
}

/// A user filter: egenskap on an enumerated value, a road filter, a contract area (AND-ed).
fn user_filter(
    g: &Generation,
    d: &TypeData,
    cond: Option<(usize, usize)>,
    road: Option<usize>,
    contract: Option<usize>,
) -> ObjectFilter {
    let mut f = ObjectFilter::default();
    let props = enum_properties(g, d);
    if let (Some((pick, salt)), false) = (cond, props.is_empty()) {
        let p = props[pick % props.len()];
        let present: Vec<u32> = (0..d.table.len())
            .map(|r| enum_code(d, p, r))
            .filter(|&c| c != NONE)
            .collect();
        f.egenskap = Some(Expr::Cmp {
            property: p,
            op: if salt % 3 == 0 { Op::Ne } else { Op::Eq },
            value: Literal::Number(present[salt % present.len()] as f64),
        });
    }
    if let Some(r) = road {
        f.roads
            .push(RoadRefFilter::parse(["E", "Kv", "F", "K", "P"][r]).unwrap());
    }
    if let Some(c) = contract {
        let mine: Vec<u32> = (0..g.areas.contracts.len() as u32)
            .filter(|&i| {
                let c = &g.areas.contracts[i as usize];
                MUNICIPALITIES
                    .iter()
                    .any(|&m| c.municipalities.contains(&(m as u16)))
            })
            .collect();
        f.contracts.push(mine[c % mine.len()]);
    }
    f
}

fn dimension(g: &Generation, d: &TypeData, pick: usize) -> Dimension {
    let props = enum_properties(g, d);
    match pick % 9 {
        0 => Dimension::Area(AreaKind::Municipality),
        1 => Dimension::Area(AreaKind::County),
        2 => Dimension::Area(AreaKind::Region),
        3 => Dimension::Area(AreaKind::RoadDepartment),
        4 => Dimension::Area(AreaKind::Contract),
        5 => Dimension::Category,
        6 => Dimension::Phase,
        7 => Dimension::RoadType,
        _ if props.is_empty() => Dimension::Category,
        _ => Dimension::Enum(props[pick / 9 % props.len()]),
    }
}

/// A random polygon around a network vertex of the tiny dataset (storage system): a
/// star-shaped ring with `radii` (meters), a hole when `hole`.
fn star_polygon(g: &Generation, centre_row: usize, radii: &[f64], hole: bool) -> AreaPolygon {
    let c = g.network.geometry(centre_row % g.network.len())[0];
    let ring = |radii: &[f64], turn: f64| {
        let k = radii.len();
        let mut pts: Vec<(f64, f64)> = radii
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let a = turn + std::f64::consts::TAU * i as f64 / k as f64;
                (c[0] + r * a.cos(), c[1] + r * a.sin())
            })
            .collect();
        pts.push(pts[0]);
        LineString::from(pts)
    };
    let min = radii.iter().cloned().fold(f64::INFINITY, f64::min);
    let holes = if hole {
        vec![ring(&[min * 0.4; 5], 0.3)]
    } else {
        vec![]
    };
    let shape = MultiPolygon(vec![Polygon::new(ring(radii, 0.0), holes)]);
    AreaPolygon::new(Srid::Utm33Etrs89, shape).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// With a polygon, segmented: the groups are a brute-force pass that cuts every part to
    /// the polygon by a plain loop over its edges, and their lengths add up to the ungrouped
    /// `strekningslengde` (`total_length`), also in whole meters.
    #[test]
    fn polygon_groups_add_up_to_the_ungrouped_cut(
        ti in 0usize..6, picks in prop::collection::vec(0usize..90, 1..3),
        centre in any::<usize>(), radii in prop::collection::vec(150.0f64..3000.0, 3..10),
        hole in any::<bool>(), area in prop::option::of(0usize..3), road in prop::option::of(0usize..5)
    ) {
        let g = tiny();
        let d = &g.objects[&TYPES[ti]];
        let mut f = user_filter(g, d, None, road, None);
        f.polygon = Some(Arc::new(star_polygon(g, centre, &radii, hole)));
        if let Some(i) = area {
            f.any_of.push((AreaKind::Municipality, MUNICIPALITIES[i]));
        }
        let mut dims: Vec<Dimension> = Vec::new();
        for p in picks {
            let dim = dimension(g, d, p);
            if !dims.contains(&dim) && dim != Dimension::Area(AreaKind::Contract) {
                dims.push(dim);
            }
        }
        prop_assume!(!dims.is_empty());
        let rows = select(g, d, &f);
        let groups = g.group_objects(d, &rows, &f, true, &dims);
        let want = brute_objects(g, d, &f, true, &dims);
        // the plain loop and the engine's edge index cut at the same crossings up to rounding
        let loose = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-3;
        let keys: Vec<Vec<u32>> = groups.iter().map(|g| g.key.to_vec()).collect();
        prop_assert_eq!(&keys, &want.keys().cloned().collect::<Vec<_>>());
        for gr in &groups {
            let (count, length) = want[&gr.key.to_vec()];
            prop_assert_eq!(gr.count, count, "{:?}", gr.key);
            prop_assert!(loose(gr.length_m, length), "{:?}: {} != {}", gr.key, gr.length_m, length);
        }
        let ungrouped = total_length(g, d, &rows, &f, true);
        let lengths: Vec<f64> = groups.iter().map(|g| g.length_m).collect();
        let sum: f64 = lengths.iter().sum();
        prop_assert!(close(sum, ungrouped), "groups {} != ungrouped {}", sum, ungrouped);
        let brute: f64 = want.values().map(|v| v.1).sum();
        prop_assert!(loose(ungrouped, brute), "ungrouped {} != brute force {}", ungrouped, brute);
        let whole = whole_meters(&lengths, Some(sum));
        prop_assert_eq!(whole.iter().sum::<u64>(), (ungrouped.round().max(0.0)) as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// One dimension: each group is the plain statistics with the group's filter added (an
    /// area through `any_of` or the contract list, a value through the enum's bitmap).
    #[test]
    fn each_group_is_the_plain_statistics_of_its_filter(
        ti in 0usize..6, pick in 0usize..90, cond in prop::option::of((0usize..20, 0usize..1000)),
        road in prop::option::of(0usize..5), segment in any::<bool>()
    ) {
        let g = tiny();
        let d = &g.objects[&TYPES[ti]];
        let f = user_filter(g, d, cond, road, None);
        let dim = dimension(g, d, pick);
        let groups = match dim {
            Dimension::Area(_) | Dimension::Enum(_) => g.group_objects(d, &select(g, d, &f), &f, segment, &[dim]),
            _ => return Ok(()),
        };
        let mut want = BTreeMap::new();
        let keys: Vec<u32> = match dim {
            Dimension::Area(kind) => d.index().areas.keys().filter(|k| k.0 == kind).map(|k| k.1).collect(),
            Dimension::Enum(p) => (0..d.table.len()).map(|r| enum_code(d, p, r)).collect(),
            _ => unreachable!(),
        };
        for code in keys {
            let (rows, with_group) = match dim {
                Dimension::Area(AreaKind::Contract) => {
                    let mut h = f.clone();
                    h.contracts.push(code);
                    (select(g, d, &h).into_owned(), h)
                }
                Dimension::Area(kind) => {
                    let mut h = f.clone();
                    h.any_of.push((kind, code));
                    (select(g, d, &h).into_owned(), h)
                }
                Dimension::Enum(p) => {
                    let rows: RoaringBitmap = select(g, d, &f)
                        .iter()
                        .filter(|&r| enum_code(d, p, r as usize) == code)
                        .collect();
                    (rows, f.clone())
                }
                _ => unreachable!(),
            };
            if rows.is_empty() {
                continue;
            }
            let length = total_length(g, d, &rows, &with_group, segment);
            want.insert(vec![code], (rows.len(), length));
        }
        if let Err(e) = assert_groups(&groups, &want) {
            return Err(TestCaseError::fail(format!("{dim:?} {f:?}: {e}")));
        }
    }

    /// Several dimensions: the groups of a brute-force pass, and the whole meters add up to
    /// the ungrouped length's when the groups split it.
    #[test]
    fn groups_equal_a_brute_force_pass(
        ti in 0usize..6, picks in prop::collection::vec(0usize..90, 1..4),
        cond in prop::option::of((0usize..20, 0usize..1000)), road in prop::option::of(0usize..5),
        contract in prop::option::of(0usize..8), area in prop::option::of(0usize..3), segment in any::<bool>()
    ) {
        let g = tiny();
        let d = &g.objects[&TYPES[ti]];
        let mut f = user_filter(g, d, cond, road, contract);
        if let Some(i) = area {
            f.any_of.push((AreaKind::Municipality, MUNICIPALITIES[i]));
        }
        let mut dims: Vec<Dimension> = Vec::new();
        for p in picks {
            let dim = dimension(g, d, p);
            if !dims.contains(&dim) {
                dims.push(dim);
            }
        }
        let rows = select(g, d, &f);
        let groups = g.group_objects(d, &rows, &f, segment, &dims);
        let want = brute_objects(g, d, &f, segment, &dims);
        if let Err(e) = assert_groups(&groups, &want) {
            return Err(TestCaseError::fail(format!("{dims:?} {f:?} segment {segment}: {e}")));
        }
        let splits = !dims.contains(&Dimension::Area(AreaKind::Contract))
            && (segment || dims.iter().all(|d| matches!(d, Dimension::Enum(_))));
        if splits {
            // the sums `total_length` makes (without its shortcut for a whole table)
            let ungrouped: f64 = if segment && f.segments() {
                rows.iter().map(|o| g.object_parts(&d.table, o as usize, Some(&f)).iter().map(|p| p.length_m).sum::<f64>()).sum()
            } else {
                rows.iter().map(|o| d.index().length_m[o as usize]).sum()
            };
            let lengths: Vec<f64> = groups.iter().map(|g| g.length_m).collect();
            prop_assert!(close(lengths.iter().sum(), ungrouped));
            let whole = whole_meters(&lengths, Some(lengths.iter().sum()));
            prop_assert_eq!(whole.iter().sum::<u64>(), ungrouped.round() as u64);
            for (w, l) in whole.iter().zip(&lengths) {
                prop_assert!(*w as f64 >= l.floor() && *w as f64 <= l.ceil());
            }
        }
    }

    /// The network's groups: brute-force sums over the selected rows; with a polygon each
    /// row's length inside it (the plain loop of `inside`), adding up to `network_totals`.
    #[test]
    fn network_groups_equal_brute_force_sums(
        picks in prop::collection::vec(0usize..8, 1..4), area in prop::option::of(0usize..3),
        road in prop::option::of(0usize..5),
        shape in prop::option::of((any::<usize>(), prop::collection::vec(150.0f64..3000.0, 3..10), any::<bool>()))
    ) {
        let g = tiny();
        let d = &g.objects[&105];
        let mut dims: Vec<Dimension> = Vec::new();
        for p in picks {
            let dim = dimension(g, d, p);
            if !dims.contains(&dim) {
                dims.push(dim);
            }
        }
        let filter = NetworkAreaFilter {
            any_of: area.map(|i| (AreaKind::Municipality, MUNICIPALITIES[i])).into_iter().collect(),
            roads: road.map(|r| RoadRefFilter::parse(["E", "Kv", "F", "K", "P"][r]).unwrap()).into_iter().collect(),
            bbox: None,
            attributes: Default::default(),
            polygon: shape.map(|(c, radii, hole)| Arc::new(star_polygon(g, c, &radii, hole))),
        };
        let polygon = filter.polygon.as_deref();
        let rows = g.select_segments(&filter);
        let groups = g.group_network(&rows, &dims, polygon);
        let n = &g.network;
        let length_of = |r: usize| inside(g, polygon, r, n.from_pos[r], n.to_pos[r]);
        let mut want: BTreeMap<Vec<u32>, (u64, f64)> = BTreeMap::new();
        for r in 0..n.len() {
            if !rows.contains(r as u32) {
                continue;
            }
            let lists: Vec<Vec<u32>> = dims.iter().map(|&dim| codes(g, dim, r)).collect();
            for key in product(&lists) {
                let e = want.entry(key).or_default();
                e.0 += 1;
                e.1 += length_of(r);
            }
        }
        // the plain loop and the engine's edge index cut at the same crossings up to rounding
        let loose = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-3;
        let keys: Vec<Vec<u32>> = groups.iter().map(|g| g.key.to_vec()).collect();
        prop_assert_eq!(&keys, &want.keys().cloned().collect::<Vec<_>>());
        for gr in &groups {
            let (count, length) = want[&gr.key.to_vec()];
            prop_assert_eq!(gr.count, count, "{:?}", gr.key);
            prop_assert!(loose(gr.length_m, length), "{:?}: {} != {}", gr.key, gr.length_m, length);
        }
        let (count, length) = g.network_totals(&rows, polygon);
        prop_assert_eq!(count, rows.len());
        let brute: f64 = rows.iter().map(|r| length_of(r as usize)).sum();
        prop_assert!(loose(length, brute), "{} != {}", length, brute);
        if !dims.contains(&Dimension::Area(AreaKind::Contract)) {
            prop_assert!(close(groups.iter().map(|g| g.length_m).sum(), length));
        }
    }
}

#[test]
fn every_object_of_a_type_by_municipality_is_its_area_index() {
    let g = tiny();
    let d = &g.objects[&105];
    let f = ObjectFilter::default();
    let rows = select(g, d, &f);
    let dims = [Dimension::Area(AreaKind::Municipality)];
    let fast = g.group_objects(d, &rows, &f, true, &dims);
    let want = brute_objects(g, d, &f, true, &dims);
    assert_groups(&fast, &want).unwrap();
    assert_eq!(fast.len(), 3, "{fast:?}");
}

/// Every object of each type by each area kind with runs and each enumerated property (the
/// entries clustered by area and value), either order of the two, segmented or not: the
/// groups of the brute-force pass.
#[test]
fn every_object_by_area_and_property_is_the_brute_force_pass() {
    let g = tiny();
    let f = ObjectFilter::default();
    let mut checked = 0;
    for t in TYPES {
        let d = &g.objects[&t];
        let rows = select(g, d, &f);
        for p in enum_properties(g, d) {
            for kind in [
                AreaKind::Municipality,
                AreaKind::County,
                AreaKind::Region,
                AreaKind::RoadDepartment,
            ] {
                for dims in [
                    [Dimension::Area(kind), Dimension::Enum(p)],
                    [Dimension::Enum(p), Dimension::Area(kind)],
                ] {
                    for segment in [true, false] {
                        let got = g.group_objects(d, &rows, &f, segment, &dims);
                        let want = brute_objects(g, d, &f, segment, &dims);
                        if let Err(e) = assert_groups(&got, &want) {
                            panic!("type {t} {dims:?} segment {segment}: {e}");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked >= 40, "{checked}");
    // each type keeps the clustered index of its first pairs only; the groupings past them
    // took the pass over the entries (and were checked above alike)
    for t in TYPES {
        let d = &g.objects[&t];
        let pairs = enum_properties(g, d).len() * 4;
        let kept = enum_properties(g, d)
            .into_iter()
            .flat_map(|p| {
                [
                    AreaKind::Municipality,
                    AreaKind::County,
                    AreaKind::Region,
                    AreaKind::RoadDepartment,
                ]
                .map(|k| d.area_values(g, k, p).is_some())
            })
            .filter(|&k| k)
            .count();
        assert_eq!(kept, pairs.min(MAX_AREA_VALUES), "type {t}");
    }
}
