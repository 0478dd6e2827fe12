//! Nearest road position (the /posisjon core), in process. Query mix as in the peer benchmarks:
//! 80 % near a road (a random vertex + up to ±10 m noise), 20 % uniform over the extent (mostly
//! misses). Data: the demo preset (seed 42) or, with VEGDB_BENCH_DATA, a national data dir.
//! Reported time is per batch of 10,000 queries.
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vegdb::generation::Generation;
use vegdb::query::network::{nearest, NearestFilter, NearestQuery};

// the server's allocator
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;
use support::load;

pub fn queries(g: &Generation, count: usize) -> Vec<(f64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let n = &g.network;
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for c in &n.coords {
        x0 = x0.min(c[0]);
        y0 = y0.min(c[1]);
        x1 = x1.max(c[0]);
        y1 = y1.max(c[1]);
    }
    (0..count)
        .map(|_| {
            if rng.random_bool(0.8) {
                let c = n.coords[rng.random_range(0..n.coords.len())];
                (
                    c[0] + rng.random_range(-10.0..10.0),
                    c[1] + rng.random_range(-10.0..10.0),
                )
            } else {
                (rng.random_range(x0..x1), rng.random_range(y0..y1))
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let (name, g) = load();
    let qs = queries(&g, 10_000);
    // per-query latency distribution (each query timed alone; Instant costs ~20 ns of it)
    let mut lat: Vec<u128> = Vec::with_capacity(qs.len() * 5);
    for _ in 0..5 {
        for &(x, y) in &qs {
            let t = std::time::Instant::now();
            let q = NearestQuery {
                x,
                y,
                max_distance_m: 30.0,
                max_count: 1,
                filter: NearestFilter::default(),
            };
            std::hint::black_box(nearest(
                &g.network,
                &g.network_indexes,
                &g.network_index,
                &q,
            ));
            lat.push(t.elapsed().as_nanos());
        }
    }
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize];
    eprintln!(
        "nearest_{name} per query: p50 {} ns, p90 {} ns, p99 {} ns, max {} ns",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        lat[lat.len() - 1]
    );
    let mut group = c.benchmark_group(format!("nearest_{name}"));
    group.throughput(Throughput::Elements(qs.len() as u64));
    group.bench_function("posisjon_core_30m", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for &(x, y) in &qs {
                let q = NearestQuery {
                    x,
                    y,
                    max_distance_m: 30.0,
                    max_count: 1,
                    filter: NearestFilter::default(),
                };
                hits += nearest(&g.network, &g.network_indexes, &g.network_index, &q).len();
            }
            hits
        })
    });
    group.bench_function("grid_visit_only_30m", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for &(x, y) in &qs {
                let mut best = f64::INFINITY;
                g.network_indexes
                    .grid
                    .visit_within(x, y, 30.0, |_, d2| best = best.min(d2));
                hits += usize::from(best.is_finite());
            }
            hits
        })
    });
    group.bench_function("plain_rstar_nearest_neighbor", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for &(x, y) in &qs {
                if let Some((_, d2)) = g.network_index.nearest_row(x, y) {
                    hits += usize::from(d2 <= 900.0);
                }
            }
            hits
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
