//! Road-object selection against a brute-force evaluator: random combinations of area,
//! egenskap and overlapp filters on the tiny dataset, and statistics against summed parts.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::sync::OnceLock;

use arrow_array::Array;
use proptest::prelude::*;
use roaring::RoaringBitmap;
use vegdb::area::AreaKind;
use vegdb::catalog::ValueKind;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, TypeData};
use vegdb::index::bitmaps::part_length;
use vegdb::query::egenskap::{self, matches_row, Cell, Expr, Literal, Op, Rows};
use vegdb::query::objects::{select, total_length, ObjectFilter, TableRows};

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

/// Network rows an object touches, by brute force.
fn touched(g: &Generation, d: &TypeData, row: usize) -> Vec<usize> {
    let t = &d.table;
    let n = &g.network;
    let mut out = Vec::new();
    for p in t.placements(row) {
        for r in 0..n.len() {
            if n.link_id[r] == t.loc_link[p]
                && n.from_pos[r] <= t.loc_to[p]
                && n.to_pos[r] >= t.loc_from[p]
            {
                out.push(r);
            }
        }
    }
    out
}

fn brute(g: &Generation, d: &TypeData, f: &ObjectFilter) -> RoaringBitmap {
    let n = &g.network;
    let rows = TableRows { g, data: d };
    let mut out = RoaringBitmap::new();
    for row in 0..d.table.len() {
        let net = touched(g, d, row);
        let in_any = f.any_of.is_empty()
            || net.iter().any(|&r| {
                f.any_of.iter().any(|&(k, v)| match k {
                    AreaKind::Municipality => n.municipality[r] as u32 == v,
                    AreaKind::County => n.county[r] as u32 == v,
                    AreaKind::Region => n.region[r] as u32 == v,
                    AreaKind::RoadDepartment => n.road_department[r] as u32 == v,
                    _ => false,
                })
            });
        let in_contract = f.contracts.is_empty()
            || net.iter().any(|&r| {
                g.areas.contracts.iter().enumerate().any(|(i, c)| {
                    f.contracts.contains(&(i as u32))
                        && c.municipalities.contains(&n.municipality[r])
                })
            });
        let in_route = f.routes.is_empty()
            || net.iter().any(|&r| {
                f.routes.iter().any(|&i| {
                    g.areas.routes[i as usize].covers(
                        n.road_category[r],
                        n.road_number[r],
                        n.county[r],
                    )
                })
            });
        let on_road = f.roads.is_empty()
            || net.iter().any(|&r| {
                let key = vegdb::index::network::row_key(n, r);
                f.roads
                    .iter()
                    .any(|q| q.matches(&key, n.from_m[r], n.to_m[r]))
            });
        // the feature's geometry (own, else located; storage numbers) intersects the box
        let in_box = f.bbox.as_ref().is_none_or(|e| {
            let [x0, y0, x1, y1] = e.rect();
            let rect = geo::Rect::new(geo::Coord { x: x0, y: y0 }, geo::Coord { x: x1, y: y1 });
            let feature = g
                .feature(
                    vegdb::generation::rows::ObjectRow::new(&d.table, row),
                    &vegdb::generation::feature::FeatureOptions {
                        geometry_only: true,
                        ..Default::default()
                    },
                )
                .unwrap();
            let c = |p: &[f64; 3]| geo::Coord { x: p[0], y: p[1] };
            let line = |l: &[[f64; 3]]| geo::LineString::new(l.iter().map(c).collect());
            use geo::Intersects;
            use vegdb::generation::feature::Geometry;
            match feature.geometry {
                None => false,
                Some(Geometry::Point(p)) => geo::Point::from(c(&p)).intersects(&rect),
                Some(Geometry::LineString(l)) => line(&l).intersects(&rect),
                Some(Geometry::MultiLineString(ls)) => ls.iter().any(|l| line(l).intersects(&rect)),
                Some(Geometry::MultiPolygon(ps)) => ps.iter().any(|rings| {
                    let mut rs = rings.iter().map(|r| line(r));
                    let ext = rs.next().unwrap();
                    geo::Polygon::new(ext, rs.collect()).intersects(&rect)
                }),
            }
        });
        let on_link = f.links.is_empty()
            || d.table.placements(row).any(|p| {
                f.links.iter().any(|l| {
                    l.link_id == d.table.loc_link[p]
                        && d.table.loc_from[p] <= l.to
                        && d.table.loc_to[p] >= l.from
                })
            });
        let props = f
            .egenskap
            .as_ref()
            .is_none_or(|e| matches_row(e, &rows, row as u32));
        let overlaps = f.overlaps.iter().all(|(ot, e)| {
            let od = &g.objects[ot];
            let orows = TableRows { g, data: od };
            let t = &d.table;
            t.placements(row).any(|p| {
                (0..od.table.len()).any(|o| {
                    e.as_ref().is_none_or(|e| matches_row(e, &orows, o as u32))
                        && od.table.placements(o).any(|q| {
                            od.table.loc_link[q] == t.loc_link[p]
                                && od.table.loc_from[q] <= t.loc_to[p]
                                && od.table.loc_to[q] >= t.loc_from[p]
                        })
                })
            })
        });
        if in_any && in_contract && in_route && on_road && in_box && on_link && props && overlaps {
            out.insert(row as u32);
        }
    }
    out
}

/// A random condition over a property that has values in the data.
fn condition(d: &TypeData, g: &Generation, pick: usize, kind: usize, salt: usize) -> Option<Expr> {
    let t = g.catalog.object_type(d.table.type_id)?;
    let cols: Vec<_> = d
        .table
        .properties
        .iter()
        .filter(|c| c.values.len() > c.values.null_count())
        .collect();
    let col = cols.get(pick % cols.len().max(1))?;
    let p = t.property(col.property_id)?;
    let rows = TableRows { g, data: d };
    let present: Vec<u32> = (0..d.table.len() as u32)
        .filter(|&r| !col.values.is_null(r as usize))
        .collect();
    let r = present[salt % present.len()];
    let value = match rows.cell(p.id, r) {
        Cell::Number(v) => Literal::Number(v),
        Cell::Text(s) => Literal::Text(s.to_string()),
        Cell::Null => Literal::Null,
    };
    let enumish = p.storage() == ValueKind::Enum;
    Some(match kind % 6 {
        0 => Expr::Cmp {
            property: p.id,
            op: Op::Eq,
            value,
        },
        1 => Expr::Cmp {
            property: p.id,
            op: Op::Ne,
            value,
        },
        2 if !enumish => Expr::Cmp {
            property: p.id,
            op: [Op::Lt, Op::Le, Op::Gt, Op::Ge][salt % 4],
            value,
        },
        3 => Expr::Cmp {
            property: p.id,
            op: if salt.is_multiple_of(2) {
                Op::Eq
            } else {
                Op::Ne
            },
            value: Literal::Null,
        },
        4 => {
            let other = rows.cell(p.id, present[(salt * 7 + 3) % present.len()]);
            let v2 = match other {
                Cell::Number(v) => Literal::Number(v),
                Cell::Text(s) => Literal::Text(s.to_string()),
                Cell::Null => Literal::Null,
            };
            Expr::In {
                property: p.id,
                values: vec![value, v2],
                negated: salt % 2 == 1,
            }
        }
        _ => Expr::Cmp {
            property: p.id,
            op: Op::Eq,
            value,
        },
    })
}

const TYPES: [u32; 6] = [105, 95, 241, 87, 5, 83];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn selection_equals_brute_force(ti in 0usize..6, areas in prop::collection::vec((0usize..4, 0usize..3), 0..3),
                                    contract in prop::option::of(0usize..4), conds in prop::collection::vec((0usize..20, 0usize..6, 0usize..1000), 0..3),
                                    or in any::<bool>(), overlap in prop::option::of((0usize..20, 0usize..1000)),
                                    road in prop::option::of(0usize..5), bbox in prop::option::of((any::<usize>(), 100.0f64..2000.0)),
                                    route in prop::option::of(0usize..20), link in prop::option::of(any::<usize>())) {
        let g = tiny();
        let d = &g.objects[&TYPES[ti]];
        let municipalities = [5001u32, 5028, 5031];
        let mut f = ObjectFilter::default();
        for (kind, i) in areas {
            f.any_of.push(match kind {
                0 => (AreaKind::Municipality, municipalities[i]),
                1 => (AreaKind::County, 50),
                2 => (AreaKind::Region, [4, 1, 5][i]),
                _ => (AreaKind::RoadDepartment, 50),
            });
        }
        if let Some(c) = contract {
            let mine: Vec<u32> = g.areas.contracts.iter().enumerate().filter(|(_, c)| c.municipalities.contains(&5001) || c.municipalities.contains(&5031)).map(|(i, _)| i as u32).collect();
            f.contracts.push(mine[c % mine.len()]);
        }
        let parts: Vec<Expr> = conds.iter().filter_map(|&(p, k, s)| condition(d, g, p, k, s)).collect();
        if !parts.is_empty() {
            f.egenskap = Some(if parts.len() == 1 { parts[0].clone() } else if or { Expr::Or(parts) } else { Expr::And(parts) });
        }
        if let Some((p, s)) = overlap {
            let speed = &g.objects[&105];
            f.overlaps.push((105, condition(speed, g, p, 0, s)));
        }
        if let Some(r) = road {
            f.roads.push(vegdb::query::vegref::RoadRefFilter::parse(["E", "Kv", "F", "Ev6hp1", "5000Rv"][r]).unwrap());
        }
        if let Some((seed, half)) = bbox {
            let c = g.network.coords[seed % g.network.coords.len()];
            f.bbox = Some(
                vegdb::geo::map_extent::MapExtent::new(
                    vegdb::geo::srid::Srid::Utm33Etrs89,
                    [c[0] - half, c[1] - half, c[0] + half, c[1] + half],
                )
                .unwrap(),
            );
        }
        if let Some(i) = route {
            f.routes.push((i % g.areas.routes.len()) as u32);
        }
        if let Some(seed) = link {
            // veglenke stands alone: a link that some object of this type is placed on
            let t = &d.table;
            let p = seed % t.loc_link.len();
            f = ObjectFilter { links: vec![vegdb::query::vegref::LinkRef { link_id: t.loc_link[p], from: 0.0, to: 1.0 }], egenskap: f.egenskap.clone(), ..Default::default() };
        }
        let got = select(g, d, &f).into_owned();
        let want = brute(g, d, &f);
        prop_assert_eq!(got, want, "filter {:?}", f);
    }
}

#[test]
fn relation_filter_selects_parents_of_matching_children() {
    let g = tiny();
    let parents = &g.objects[&95];
    let plates = &g.objects[&96];
    let expr = egenskap::parse("relasjon(96, egenskap(5530)!=null)").unwrap();
    egenskap::check(&expr, g.catalog, g.catalog.object_type(95).unwrap()).unwrap();
    let got = egenskap::evaluate(&expr, &TableRows { g, data: parents });
    let plate_rows = TableRows { g, data: plates };
    let mut want = RoaringBitmap::new();
    for r in 0..parents.table.len() {
        let any = parents.table.children(r).any(|c| {
            let pr = plates.table.row_of(parents.table.child_id[c]).unwrap() as u32;
            plate_rows.cell(5530, pr) != Cell::Null
        });
        if any {
            want.insert(r as u32);
        }
    }
    assert_eq!(got, want);
    assert!(!want.is_empty());
}

#[test]
fn statistics_lengths_equal_summed_parts() {
    let g = tiny();
    let d = &g.objects[&105];
    let n = &g.network;
    for &m in &[5001u32, 5028, 5031] {
        let f = ObjectFilter {
            any_of: vec![(AreaKind::Municipality, m)],
            ..Default::default()
        };
        let rows = select(g, d, &f);
        // segmented: only parts on links in the municipality
        let mut want = 0.0;
        let mut whole = 0.0;
        for o in rows.iter() {
            let t = &d.table;
            for p in t.placements(o as usize) {
                for r in 0..n.len() {
                    if n.link_id[r] == t.loc_link[p] {
                        let l = part_length(n, r, t.loc_from[p], t.loc_to[p]);
                        whole += l;
                        if n.municipality[r] as u32 == m {
                            want += l;
                        }
                    }
                }
            }
        }
        let got = total_length(g, d, &rows, &f, true);
        assert!(
            (got - want).abs() < 1e-6 * want.max(1.0),
            "{m}: {got} vs {want}"
        );
        let unseg = total_length(g, d, &rows, &f, false);
        assert!(
            (unseg - whole).abs() < 1e-6 * whole.max(1.0),
            "{m}: {unseg} vs {whole}"
        );
        // statistikk's own path (the index's figures for one area) says the same
        for (segment, length) in [(true, want), (false, whole)] {
            let (count, got) = g.object_statistics(d, &f, segment);
            assert_eq!(count, rows.len(), "{m}");
            assert!(
                (got - length).abs() < 1e-6 * length.max(1.0),
                "{m}: {got} vs {length}"
            );
        }
        // with an egenskap filter the precomputed path is not used: same definition
        let f2 = ObjectFilter {
            egenskap: Some(egenskap::parse("2021!=null").unwrap()),
            ..f.clone()
        };
        let rows2 = select(g, d, &f2);
        assert_eq!(rows2, rows, "every speed limit has a value");
        let got2 = total_length(g, d, &rows2, &f2, true);
        assert!((got2 - want).abs() < 1e-6 * want.max(1.0));
    }
    // the whole network is covered by speed limits: total length ≈ network length (level 0)
    let net: f64 = (0..n.len())
        .filter(|&r| n.topology_level[r] == 0)
        .map(|r| n.length_m[r])
        .sum();
    let all = total_length(
        g,
        d,
        &vegdb::query::objects::all_rows(d),
        &ObjectFilter::default(),
        true,
    );
    assert!((all - net).abs() / net < 0.01, "{all} vs {net}");
    let (count, every) = g.object_statistics(d, &ObjectFilter::default(), true);
    assert_eq!(count, d.table.len() as u64);
    assert!((every - all).abs() < 1e-6 * all, "{every} vs {all}");
}
