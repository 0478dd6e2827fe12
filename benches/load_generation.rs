//! Generation and load benchmarks. Data: the `tiny` and `demo` presets generated into a temp
//! dir (seed 42). For the national dataset set VEGDB_BENCH_DATA to a data dir made with
//! `vegdb generate --scale national` (load is measured with 3 samples).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use criterion::{criterion_group, criterion_main, Criterion};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::store::DataDir;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("generation");
    g.sample_size(10);
    for scale in [Scale::Tiny, Scale::Demo] {
        g.bench_function(format!("generate_{}", scale.name()), |b| {
            b.iter(|| {
                let tmp = tempfile::tempdir().unwrap();
                generate_into(scale, 42, tmp.path()).unwrap();
            })
        });
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(scale, 42, tmp.path()).unwrap();
        g.bench_function(format!("load_{}", scale.name()), |b| {
            b.iter(|| Generation::load(&dir, &|_| {}).unwrap())
        });
    }
    g.finish();
    if let Ok(root) = std::env::var("VEGDB_BENCH_DATA") {
        let data = DataDir::read_only(root);
        let dir = data.generation_dir(data.current().unwrap().expect("CURRENT"));
        let mut g = c.benchmark_group("national");
        g.sample_size(10);
        g.measurement_time(std::time::Duration::from_secs(60));
        g.bench_function("load_national", |b| {
            b.iter(|| Generation::load(&dir, &|_| {}).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
