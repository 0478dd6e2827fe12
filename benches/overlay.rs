//! Dynamic segmentation (the /vegnett/segmentert core), in process: the whole network of one
//! county cut by speed limit (105), traffic volume (540) and road width (241, where the data
//! has it). Reports the piece count, and criterion's time for gathering the types' intervals,
//! for the overlay of every selected row, and for the figures alone (`totals`). Data: the demo preset (seed 42) or, with
//! VEGDB_BENCH_DATA, a data dir (national: county 50).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roaring::RoaringBitmap;
use vegdb::area::AreaKind;
use vegdb::generation::Generation;
use vegdb::query::network::NetworkAreaFilter;
use vegdb::query::overlay::{links_of, overlay, totals, LinkIntervals, TotalsLayer};

// the server's allocator
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;
use support::load;

fn layers(g: &Generation, types: &[u32], rows: &RoaringBitmap) -> Vec<LinkIntervals> {
    let links = links_of(&g.network, rows);
    types
        .iter()
        .map(|t| {
            let d = &g.objects[t];
            let all: RoaringBitmap = (0..d.table.len() as u32).collect();
            LinkIntervals::build(&d.table, &all, Some(&links))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let (name, g) = load();
    let rows = g.select_segments(&NetworkAreaFilter {
        any_of: vec![(AreaKind::County, 50)],
        ..Default::default()
    });
    let types: Vec<u32> = [105, 540, 241]
        .into_iter()
        .filter(|t| g.objects.contains_key(t))
        .collect();
    let built = layers(&g, &types, &rows);
    let pieces = overlay(&g.network, rows.iter(), &built, false).len();
    eprintln!(
        "{name}: county 50, {} rows, types {types:?}: {pieces} pieces",
        rows.len()
    );
    let mut group = c.benchmark_group(format!("overlay_{name}"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(rows.len()));
    group.bench_function("gather_intervals", |b| b.iter(|| layers(&g, &types, &rows)));
    group.bench_function("overlay_rows", |b| {
        b.iter(|| overlay(&g.network, rows.iter(), &built, false).len())
    });
    // the figures alone (`/vegnett/segmentert/statistikk`): pieces counted, not made, the
    // intervals gathered link by link from the types' placements ordered by link
    let placed: Vec<_> = types
        .iter()
        .map(|t| (&g.objects[t], g.objects[t].link_placements()))
        .collect();
    let totals_layers: Vec<Option<TotalsLayer<'_>>> = placed
        .iter()
        .map(|(d, index)| {
            Some(TotalsLayer {
                table: &d.table,
                index,
                objects: None,
            })
        })
        .collect();
    let figures = totals(&g.network, &rows, &totals_layers, false);
    assert_eq!(figures.pieces, pieces as u64);
    group.bench_function("totals", |b| {
        b.iter(|| totals(&g.network, &rows, &totals_layers, false).pieces)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
