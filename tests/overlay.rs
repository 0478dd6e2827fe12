//! Dynamic segmentation (`query::overlay`) against a brute-force overlay written here: per
//! network row, every end of every selected stretch placement on its link cuts the row, and each
//! elementary interval lists, per type, the objects with a placement spanning it. Random network
//! selections, type sets and object subsets over the tiny data and the demo snapshot, the types'
//! intervals gathered both ways (every object's placements, or link by link from the placements
//! ordered by link); the pieces of a row tile it exactly.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use roaring::RoaringBitmap;
use vegdb::area::AreaKind;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::query::network::NetworkAreaFilter;
use vegdb::query::overlay::{links_of, overlay, totals, LinkIntervals, TotalsLayer};

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

fn demo() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
        let current = std::fs::read_to_string(root.join("CURRENT")).unwrap();
        let dir = root.join(format!("gen-{:06}", current.trim().parse::<u64>().unwrap()));
        Generation::load(&dir, &|_| {}).unwrap().0
    })
}

/// (link, from, to, per type: [(object row, lane specific)]) of one elementary interval.
type Expected = (u64, f64, f64, Vec<Vec<(u32, bool)>>);

/// (type index, from, to, object row, lane specific) of one placement.
type Placement = (usize, f64, f64, u32, bool);

/// The brute-force overlay of network `rows` with the given (type, selected objects).
fn brute_force(
    g: &Generation,
    rows: &RoaringBitmap,
    types: &[(u32, RoaringBitmap)],
    only_covered: bool,
) -> Vec<Expected> {
    let n = &g.network;
    // every stretch placement of every selected object: (type index, from, to, row, lanes)
    let mut all: BTreeMap<u64, Vec<Placement>> = BTreeMap::new();
    for (t, (type_id, objects)) in types.iter().enumerate() {
        let table = &g.objects[type_id].table;
        for o in objects {
            for p in table.placements(o as usize) {
                all.entry(table.loc_link[p]).or_default().push((
                    t,
                    table.loc_from[p],
                    table.loc_to[p],
                    o,
                    !table.loc_lanes[p].is_empty(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    for r in rows {
        let r = r as usize;
        let (link, lo, hi) = (n.link_id[r], n.from_pos[r], n.to_pos[r]);
        let on_link = all.get(&link).cloned().unwrap_or_default();
        let mut cuts = vec![lo, hi];
        for &(_, a, b, _, _) in &on_link {
            if a < b {
                cuts.extend([a, b].into_iter().filter(|&x| x > lo && x < hi));
            }
        }
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        if cuts.len() == 1 {
            cuts.push(hi);
        }
        for w in cuts.windows(2) {
            let mut per_type: Vec<BTreeMap<u32, bool>> = vec![BTreeMap::new(); types.len()];
            for &(t, a, b, o, lanes) in &on_link {
                if a < b && a <= w[0] && b >= w[1] {
                    *per_type[t].entry(o).or_insert(false) |= lanes;
                }
            }
            if only_covered && per_type.iter().any(BTreeMap::is_empty) {
                continue;
            }
            let covers = per_type
                .into_iter()
                .map(|m| m.into_iter().collect())
                .collect();
            out.push((link, w[0], w[1], covers));
        }
    }
    out
}

fn counties(g: &Generation) -> Vec<u8> {
    let mut c = g.network.county.clone();
    c.sort_unstable();
    c.dedup();
    c
}

fn stretch_types(g: &Generation) -> Vec<u32> {
    g.objects
        .iter()
        .filter(|(_, d)| {
            let t = &d.table;
            (0..t.loc_link.len()).any(|p| t.loc_from[p] < t.loc_to[p])
        })
        .map(|(&id, _)| id)
        .collect()
}

fn check(
    g: &Generation,
    county: Option<u8>,
    type_picks: &[usize],
    keep_every: u32,
    only_covered: bool,
) -> Result<(), TestCaseError> {
    let rows = g.select_segments(&NetworkAreaFilter {
        any_of: county
            .map(|c| vec![(AreaKind::County, u32::from(c))])
            .unwrap_or_default(),
        ..Default::default()
    });
    let candidates = stretch_types(g);
    let mut types: Vec<(u32, RoaringBitmap)> = Vec::new();
    for &i in type_picks {
        let id = candidates[i % candidates.len()];
        if types.iter().any(|(t, _)| *t == id) {
            continue;
        }
        let len = g.objects[&id].table.len() as u32;
        // a subset of the objects, as an egenskap filter would select
        let objects: RoaringBitmap = (0..len).filter(|o| o % keep_every != 1).collect();
        types.push((id, objects));
    }
    let links = links_of(&g.network, &rows);
    let layers: Vec<LinkIntervals> = types
        .iter()
        .map(|(id, o)| LinkIntervals::build(&g.objects[id].table, o, Some(&links)))
        .collect();
    let got = overlay(&g.network, rows.iter(), &layers, only_covered);
    // the same gathered link by link from the type's placements ordered by link (the API's way)
    let mut sorted: Vec<u64> = links.iter().copied().collect();
    sorted.sort_unstable();
    let on_links: Vec<LinkIntervals> = types
        .iter()
        .map(|(id, o)| {
            let d = &g.objects[id];
            LinkIntervals::build_on_links(&d.table, &d.link_placements(), o, sorted.iter().copied())
        })
        .collect();
    prop_assert_eq!(
        &overlay(&g.network, rows.iter(), &on_links, only_covered),
        &got
    );
    let want = brute_force(g, &rows, &types, only_covered);
    let got: Vec<Expected> = got
        .iter()
        .map(|p| {
            let covers = p
                .covers
                .iter()
                .map(|c| c.iter().map(|c| (c.row, c.lane_specific)).collect())
                .collect();
            (p.link_id, p.from, p.to, covers)
        })
        .collect();
    prop_assert_eq!(got.len(), want.len());
    prop_assert_eq!(&got, &want);
    check_totals(g, &rows, &types, only_covered, &want)?;
    if !only_covered {
        tiles(g, &rows, &overlay(&g.network, rows.iter(), &layers, false))?;
    }
    Ok(())
}

/// The overlay's figures (`totals`, without making pieces) are those of the brute-force pieces:
/// their number, their summed length, and per type the pieces it covers and their length.
fn check_totals(
    g: &Generation,
    rows: &RoaringBitmap,
    types: &[(u32, RoaringBitmap)],
    only_covered: bool,
    want: &[Expected],
) -> Result<(), TestCaseError> {
    let n = &g.network;
    let mut by_link: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for r in rows {
        by_link
            .entry(n.link_id[r as usize])
            .or_default()
            .push(r as usize);
    }
    let length = |(link, from, to, _): &Expected| {
        // the selected row holding the piece: on its link, spanning it
        let r = by_link[link]
            .iter()
            .copied()
            .find(|&r| n.from_pos[r] <= *from && n.to_pos[r] >= *to)
            .unwrap();
        if n.to_pos[r] <= n.from_pos[r] {
            0.0
        } else {
            (to - from) / (n.to_pos[r] - n.from_pos[r]) * n.length_m[r]
        }
    };
    let mut expected = (0u64, 0.0f64, vec![(0u64, 0.0f64); types.len()]);
    for e in want {
        let l = length(e);
        expected.0 += 1;
        expected.1 += l;
        for (t, covers) in e.3.iter().enumerate() {
            if !covers.is_empty() {
                expected.2[t].0 += 1;
                expected.2[t].1 += l;
            }
        }
    }
    let placed: Vec<_> = types
        .iter()
        .map(|(id, o)| (&g.objects[id], g.objects[id].link_placements(), o))
        .collect();
    let layers: Vec<Option<TotalsLayer<'_>>> = placed
        .iter()
        .map(|(d, index, o)| {
            Some(TotalsLayer {
                table: &d.table,
                index,
                objects: Some(o),
            })
        })
        .collect();
    let got = totals(n, rows, &layers, only_covered);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    prop_assert_eq!(got.pieces, expected.0);
    prop_assert!(
        close(got.length_m, expected.1),
        "{} vs {}",
        got.length_m,
        expected.1
    );
    for (t, ((gc, gl), (wc, wl))) in got.covered.iter().zip(&expected.2).enumerate() {
        prop_assert_eq!(gc, wc, "type {}", types[t].0);
        prop_assert!(close(*gl, *wl), "type {}: {} vs {}", types[t].0, gl, wl);
    }
    Ok(())
}

/// The pieces of each row follow each other from its start to its end, lengths summing to its.
fn tiles(
    g: &Generation,
    rows: &RoaringBitmap,
    pieces: &[vegdb::query::overlay::Piece],
) -> Result<(), TestCaseError> {
    let n = &g.network;
    let mut by_row: BTreeMap<u32, Vec<&vegdb::query::overlay::Piece>> = BTreeMap::new();
    for p in pieces {
        by_row.entry(p.net_row).or_default().push(p);
    }
    prop_assert_eq!(by_row.len() as u64, rows.len());
    for (r, ps) in by_row {
        let r = r as usize;
        prop_assert_eq!(ps[0].from, n.from_pos[r]);
        prop_assert_eq!(ps[ps.len() - 1].to, n.to_pos[r]);
        for w in ps.windows(2) {
            prop_assert_eq!(w[0].to, w[1].from);
            prop_assert!(w[0].from < w[0].to);
        }
        let sum: f64 = ps.iter().map(|p| p.length_m).sum();
        prop_assert!(
            (sum - n.length_m[r]).abs() < 1e-6 * n.length_m[r].max(1.0),
            "row {}: {} vs {}",
            r,
            sum,
            n.length_m[r]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn tiny_overlay_equals_brute_force(
        county in proptest::option::of(0usize..16),
        picks in proptest::collection::vec(0usize..64, 1..5),
        keep_every in 2u32..6,
        only_covered in any::<bool>(),
    ) {
        let g = tiny();
        let county = county.map(|i| counties(g)[i % counties(g).len()]);
        check(g, county, &picks, keep_every, only_covered)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn demo_overlay_equals_brute_force(
        picks in proptest::collection::vec(0usize..64, 1..4),
        keep_every in 2u32..6,
        only_covered in any::<bool>(),
    ) {
        let g = demo();
        let county = g.network.county.first().copied();
        check(g, county, &picks, keep_every, only_covered)?;
    }
}

#[test]
fn speed_limit_and_traffic_volume_cut_the_demo_network() {
    let g = demo();
    let rows = g.select_segments(&NetworkAreaFilter::default());
    let types: Vec<(u32, RoaringBitmap)> = [105u32, 540]
        .iter()
        .map(|&t| (t, (0..g.objects[&t].table.len() as u32).collect()))
        .collect();
    let layers: Vec<LinkIntervals> = types
        .iter()
        .map(|(id, o)| LinkIntervals::build(&g.objects[id].table, o, None))
        .collect();
    let pieces = overlay(&g.network, rows.iter(), &layers, true);
    // the objects cut the rows: more pieces than rows over the whole network
    assert!(overlay(&g.network, rows.iter(), &layers, false).len() as u64 > rows.len());
    assert!(pieces.len() as u64 > rows.len() / 4, "{}", pieces.len());
    assert!(pieces
        .iter()
        .all(|p| p.covers.iter().all(|c| !c.is_empty())));
    assert_eq!(pieces, {
        let mut v = overlay(&g.network, rows.iter(), &layers, false);
        v.retain(|p| p.covers.iter().all(|c| !c.is_empty()));
        v
    });
}

#[test]
fn geoparquet_export_holds_the_overlay() {
    let (batches, meta) = export_and_check(None);
    assert_eq!(meta.num_row_groups(), 1);
    // written in row groups of 1,000 pieces as they are made: the same columns, rows and
    // footer metadata (`geo` with the bbox of every piece, the Arrow schema)
    let (grouped, grouped_meta) = export_and_check(Some(1000));
    assert!(
        grouped_meta.num_row_groups() > 3,
        "{}",
        grouped_meta.num_row_groups()
    );
    assert!(grouped_meta
        .row_groups()
        .iter()
        .all(|rg| rg.num_rows() <= 1000));
    let one = |b: &[arrow_array::RecordBatch]| {
        arrow_select::concat::concat_batches(&b[0].schema(), b).unwrap()
    };
    assert_eq!(one(&grouped), one(&batches));
    assert_eq!(
        grouped_meta.file_metadata().key_value_metadata(),
        meta.file_metadata().key_value_metadata()
    );
}

/// The export of the tiny data's overlay of 105 and 540 (in row groups of `row_group` pieces,
/// or the default), read back and checked against the brute-force overlay: its batches and
/// metadata.
fn export_and_check(
    row_group: Option<usize>,
) -> (
    Vec<arrow_array::RecordBatch>,
    parquet::file::metadata::ParquetMetaData,
) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::{Array, RecordBatch};
    use vegdb::catalog::ValueKind;
    use vegdb::generation::rows::{ObjectRow, StoredValue};
    let g = tiny();
    let types = [105u32, 540];
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s.parquet");
    // 105 carries Fartsgrense (2021) only, 540 no values
    let r = vegdb::export::segmented::export_segmented_in_groups(
        g,
        &types,
        &[Some(vec![2021]), Some(vec![])],
        &[],
        vegdb::geo::srid::Srid::Utm33Wgs84,
        &out,
        row_group.unwrap_or(vegdb::export::segmented::ROW_GROUP_PIECES),
    )
    .unwrap();
    // the expectation: the brute-force overlay of every row with every object
    let rows: RoaringBitmap = (0..g.network.len() as u32).collect();
    let all: Vec<(u32, RoaringBitmap)> = types
        .iter()
        .map(|&t| (t, (0..g.objects[&t].table.len() as u32).collect()))
        .collect();
    let want = brute_force(g, &rows, &all, false);
    assert_eq!(r.features, want.len());
    let file = std::fs::File::open(&out).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let reader_meta = reader.metadata().clone();
    assert!(reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .any(|kv| kv.key == "geo"));
    let batches: Vec<RecordBatch> = reader.build().unwrap().map(Result::unwrap).collect();
    let names: Vec<String> = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    // the chosen values only: Fartsgrense (a numeric enumeration: its number and value id)
    let per_type: Vec<&String> = names.iter().filter(|n| n.starts_with("540_")).collect();
    assert_eq!(per_type, ["540_id", "540_versjon", "540_feltspesifikk"]);
    assert!(names.iter().any(|n| n == "105_Fartsgrense"), "{names:?}");
    assert!(names.iter().any(|n| n == "105_Fartsgrense_id"), "{names:?}");
    let limits = g.catalog.object_type(105).unwrap().property(2021).unwrap();
    let mut i = 0;
    for b in &batches {
        let col = |n: &str| b.column_by_name(n).unwrap();
        let link = col("veglenkesekvensid").as_primitive::<Int64Type>();
        let from = col("fra_posisjon").as_primitive::<Float64Type>();
        let to = col("til_posisjon").as_primitive::<Float64Type>();
        for k in 0..b.num_rows() {
            let (wl, wf, wt, covers) = &want[i];
            assert_eq!(
                (link.value(k) as u64, from.value(k), to.value(k)),
                (*wl, *wf, *wt)
            );
            for (t, type_id) in types.iter().enumerate() {
                let table = &g.objects[type_id].table;
                let list = |c: &str| col(&format!("{type_id}_{c}")).as_list::<i32>().clone();
                let (ids, versions) = (list("id"), list("versjon"));
                if covers[t].is_empty() {
                    assert!(ids.is_null(k) && versions.is_null(k));
                    continue;
                }
                let rows: Vec<usize> = covers[t].iter().map(|&(o, _)| o as usize).collect();
                let want_ids: Vec<i64> = rows.iter().map(|&o| table.id[o] as i64).collect();
                let want_versions: Vec<i64> =
                    rows.iter().map(|&o| i64::from(table.version[o])).collect();
                let got = |l: &arrow_array::ListArray| {
                    l.value(k).as_primitive::<Int64Type>().values().to_vec()
                };
                assert_eq!(got(&ids), want_ids);
                assert_eq!(got(&versions), want_versions);
                if *type_id != 105 {
                    continue;
                }
                // the stored enumeration id, and its number from the catalogue
                let stored: Vec<Option<u32>> = rows
                    .iter()
                    .map(
                        |&o| match ObjectRow::new(table, o).value(2021, ValueKind::Enum) {
                            Some(StoredValue::Enum(id)) => Some(id),
                            _ => None,
                        },
                    )
                    .collect();
                let value_ids = list("Fartsgrense_id");
                let value_ids = value_ids.value(k);
                let value_ids = value_ids.as_primitive::<Int64Type>();
                let numbers = list("Fartsgrense");
                let numbers = numbers.value(k);
                let numbers = numbers.as_primitive::<Float64Type>();
                for (j, s) in stored.iter().enumerate() {
                    let number = s.and_then(|id| limits.allowed_value(id)?.number);
                    assert_eq!(value_ids.is_valid(j).then(|| value_ids.value(j) as u32), *s);
                    assert_eq!(numbers.is_valid(j).then(|| numbers.value(j)), number);
                }
            }
            i += 1;
        }
    }
    assert_eq!(i, want.len());
    let meta = (*reader_meta).clone();
    (batches, meta)
}
