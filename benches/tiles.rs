//! Vector tiles, in process: the time to render and encode one tile of the `vegnett`
//! layer at zoom 12, over a sample of the zoom-12 tiles that hold road (300 distinct tiles, drawn
//! uniformly from the tiles under 200,000 random network vertices, seed 15), and the same tiles of
//! the speed-limit layer (type 105). Prints the median, p90 and p99 per tile, then criterion
//! times a pass over the first 50 tiles. Data: the demo preset (seed 42) or, with
//! `VEGDB_BENCH_DATA=/tmp/vn`, a national data dir. With `VEGDB_TILES_OUT=FILE` the sampled tiles
//! are written there (`z x y` per line) for `tools/bench_tiles_postgis.sh`.
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use std::collections::BTreeSet;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::store::DataDir;
use vegdb::tiles::mercator::{storage_to_world, TileId};
use vegdb::tiles::{render, LayerId};

// the server's allocator
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ZOOM: u8 = 12;

fn load() -> (String, Generation) {
    if let Ok(root) = std::env::var("VEGDB_BENCH_DATA") {
        let data = DataDir::read_only(root);
        let dir = data.generation_dir(data.current().unwrap().expect("CURRENT"));
        return (
            "national".into(),
            Generation::load(&dir, &|_| {}).unwrap().0,
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Demo, 42, tmp.path()).unwrap();
    let g = Generation::load(&dir, &|_| {}).unwrap().0;
    std::mem::forget(tmp);
    ("demo".into(), g)
}

fn sample_tiles(g: &Generation) -> Vec<TileId> {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let coords = &g.network.coords;
    let scale = (1u64 << ZOOM) as f64;
    let mut set = BTreeSet::new();
    for _ in 0..200_000 {
        let c = coords[rng.random_range(0..coords.len())];
        let w = storage_to_world(c[0], c[1]).unwrap();
        set.insert(((w.0 * scale) as u64, (w.1 * scale) as u64));
    }
    let all: Vec<(u64, u64)> = set.into_iter().collect();
    let mut picked = BTreeSet::new();
    while picked.len() < 300.min(all.len()) {
        picked.insert(all[rng.random_range(0..all.len())]);
    }
    picked
        .into_iter()
        .map(|(x, y)| TileId::new(ZOOM as u32, x, y).unwrap())
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(name: &str, g: &Generation, layer: LayerId, tiles: &[TileId]) {
    // first pass builds what is built on first use (the object layer's index)
    let mut bytes = 0usize;
    for &t in tiles {
        bytes += render(g, layer, t).unwrap().len();
    }
    let mut ms: Vec<f64> = tiles
        .iter()
        .map(|&t| {
            let s = Instant::now();
            std::hint::black_box(render(g, layer, t).unwrap());
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    println!(
        "tiles {name} {:?} z{ZOOM}: {} tiles, median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean size {} bytes",
        layer,
        tiles.len(),
        percentile(&ms, 0.5),
        percentile(&ms, 0.9),
        percentile(&ms, 0.99),
        ms[ms.len() - 1],
        bytes / tiles.len().max(1)
    );
}

fn bench(c: &mut Criterion) {
    let started = Instant::now();
    let (name, g) = load();
    println!("loaded {name} in {:.1} s", started.elapsed().as_secs_f64());
    let tiles = sample_tiles(&g);
    if let Ok(path) = std::env::var("VEGDB_TILES_OUT") {
        let text: String = tiles
            .iter()
            .map(|t| format!("{} {} {}\n", t.z, t.x, t.y))
            .collect();
        std::fs::write(&path, text).unwrap();
    }
    let start = Instant::now();
    let _ = g.objects[&105].object_index(&g);
    println!(
        "type 105 tile index built in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    report(&name, &g, LayerId::Network, &tiles);
    report(&name, &g, LayerId::Objects(105), &tiles);
    let first: Vec<TileId> = tiles.iter().take(50).copied().collect();
    let mut group = c.benchmark_group(format!("tiles_{name}"));
    group.sample_size(10);
    group.bench_function("vegnett_z12_50_tiles", |b| {
        b.iter(|| {
            for &t in &first {
                std::hint::black_box(render(&g, LayerId::Network, t).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
