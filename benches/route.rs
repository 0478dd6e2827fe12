//! Shortest routes (the /vegnett/rute core), in process: random pairs of link positions 1-50 km
//! apart (straight line) on the default route network. Reports the graph's build time and
//! size, the per-route latency distribution, and criterion's time per batch of 100 routes.
//! Data: the demo preset (seed 42) or, with VEGDB_BENCH_DATA, a national data dir;
//! VEGDB_BENCH_ROUTES pairs for the latency distribution (1,000 unless set).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vegdb::generation::Generation;
use vegdb::index::graph::RouteGraph;
use vegdb::query::route::{shortest_route, RouteFilter, RoutePoint, RouteQuery};

// the server's allocator
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;
use support::load;

/// `count` random pairs of points (mid-row) 1-50 km apart on rows the default filter passes.
pub fn pairs(g: &Generation, count: usize) -> Vec<RouteQuery> {
    let n = &g.network;
    let f = RouteFilter::default();
    let rows: Vec<usize> = (0..n.len()).filter(|&r| f.passes(n, r)).collect();
    let mid = |r: usize| {
        let c = n.geometry(r)[n.geometry(r).len() / 2];
        (c[0], c[1])
    };
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let (a, b) = (
            rows[rng.random_range(0..rows.len())],
            rows[rng.random_range(0..rows.len())],
        );
        let ((x1, y1), (x2, y2)) = (mid(a), mid(b));
        let d = (x1 - x2).hypot(y1 - y2);
        if !(1_000.0..=50_000.0).contains(&d) {
            continue;
        }
        let point = |r: usize, t: f64| RoutePoint {
            row: r as u32,
            position: n.from_pos[r] + t * (n.to_pos[r] - n.from_pos[r]),
        };
        out.push(RouteQuery {
            start: point(a, rng.random_range(0.0..1.0)),
            end: point(b, rng.random_range(0.0..1.0)),
            filter: f,
            corridor_m: None,
        });
    }
    out
}

fn bench(c: &mut Criterion) {
    let (name, g) = load();
    let t = std::time::Instant::now();
    let graph = RouteGraph::build_base(&g.network);
    let base_ms = t.elapsed().as_secs_f64() * 1000.0;
    let base_bytes = graph.heap_bytes();
    let t = std::time::Instant::now();
    let hierarchy = graph.make_hierarchy(&g.network);
    let hierarchy_ms = t.elapsed().as_secs_f64() * 1000.0;
    let up_edges = hierarchy.up_to.len();
    let _ = graph.hierarchy.set(hierarchy);
    eprintln!(
        "{name}: graph of {} vertices, {} rows built in {base_ms:.0} ms, {:.1} MB, bound factor {:.4}; \
         hierarchy ({up_edges} upward edges) in {hierarchy_ms:.0} ms, {:.1} MB more",
        graph.vertex_count(),
        g.network.len(),
        base_bytes as f64 / 1e6,
        graph.bound_factor,
        (graph.heap_bytes() - base_bytes) as f64 / 1e6,
    );
    let count = std::env::var("VEGDB_BENCH_ROUTES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1_000)
        .max(100);
    let qs = pairs(&g, count);
    let mut lat: Vec<u128> = Vec::with_capacity(qs.len());
    let mut found = 0;
    for q in &qs {
        let t = std::time::Instant::now();
        found += std::hint::black_box(shortest_route(&graph, &g.network, q)).is_some() as usize;
        lat.push(t.elapsed().as_nanos());
    }
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize] as f64 / 1e6;
    eprintln!(
        "{name}: {} routes 1-50 km ({found} connected): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        qs.len(),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    let batch = &qs[..100];
    let mut group = c.benchmark_group("route");
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.sample_size(10);
    group.bench_function(format!("{name}/100 random routes 1-50 km"), |b| {
        b.iter(|| {
            for q in batch {
                std::hint::black_box(shortest_route(&graph, &g.network, q));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
