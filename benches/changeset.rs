//! The write path, start to visible: a changeset of N Skiltpunkt (95) registrations is
//! registered in the journal, started, and timed until the writer has published and swapped in
//! the generation holding it (fremdrift UTFØRT_OG_ETTERBEHANDLET). Data: the demo preset
//! (seed 42) copied into a temp data dir; set VEGDB_BENCH_DATA to a national data dir
//! (`vegdb generate --scale national`) to measure on that (it is copied first, ~0.6 GB).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use serde_json::json;
use vegdb::changeset::journal::{Progress, Record};
use vegdb::changeset::model::Changeset;
use vegdb::changeset::writer::Writer;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::snapshot::store::DataDir;

fn changeset(links: &[u64], n: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Changeset {
    let objects: Vec<_> = (0..n)
        .map(|i| {
            json!({"typeId": 95, "tempId": i.to_string(),
                "egenskaper": [{"typeId": 1876, "enum": [2868]}, {"typeId": 10854, "verdi": [format!("bench {i}")]}],
                "lokasjon": {"punkt": [{"lenkeId": links[rng.random_range(0..links.len())], "posisjon": rng.random_range(0.0..1.0)}]}})
        })
        .collect();
    serde_json::from_value(
        json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "registrer": {"vegObjekter": objects}}),
    )
    .unwrap()
}

fn record(n: usize) -> Record {
    Record::new(uuid::Uuid::new_v4().to_string(), "bench".into(), None, n)
}

fn bench(c: &mut Criterion) {
    if let Ok(filter) = std::env::var("VEGDB_LOG") {
        vegdb::server::init_tracing(&filter, false);
    }
    let tmp = tempfile::tempdir().unwrap();
    let (label, source) = match std::env::var("VEGDB_BENCH_DATA") {
        Ok(root) => ("national", DataDir::read_only(root)),
        Err(_) => {
            let src = tmp.path().join("source");
            generate_into(Scale::Demo, 42, &src).unwrap();
            ("demo", DataDir::read_only(src))
        }
    };
    let data = DataDir::open(tmp.path().join("data")).unwrap();
    data.init_from(&source).unwrap();
    let (g, _) = Generation::load(
        &data.generation_dir(data.current().unwrap().unwrap()),
        &|_| {},
    )
    .unwrap();
    let n = &g.network;
    let links: Vec<u64> = n.plain_link_rows().map(|r| n.link_id[r]).collect();
    let store = Arc::new(GenerationStore::new(g));
    let writer = Writer::start(data, store.clone()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut group = c.benchmark_group(format!("changeset_{label}"));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    for size in [10usize, 10_000] {
        group.bench_with_input(
            BenchmarkId::new("start_to_visible", size),
            &size,
            |b, &size| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let cs = changeset(&links, size, &mut rng);
                        let r = writer.journal.register(cs, record(size)).unwrap();
                        let before = store.current().id;
                        let t = Instant::now();
                        writer.start_changeset(&r.id).unwrap();
                        loop {
                            let p = writer.journal.get(&r.id).unwrap().progress;
                            if p == Progress::DoneAndVisible {
                                break;
                            }
                            assert!(!p.is_final(), "changeset ended {p:?}");
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        total += t.elapsed();
                        assert!(store.current().id > before);
                    }
                    total
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
