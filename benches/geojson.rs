//! A page of 1000 road objects of type 105 (Fartsgrense) rendered to bytes in process: as
//! GeoJSON (`api::geojson`, WGS 84 and UTM 33) and as v2 JSON with the same content
//! (`inkluder=egenskaper,geometri`, WKT in the same srid). Data: the demo preset (seed 42),
//! or with VEGDB_BENCH_DATA a national data dir.
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde::ser::{SerializeSeq, Serializer};
use vegdb::api::geojson::{push_object, Crs};
use vegdb::api::object_json::{Include, Render, StreamedObjects};
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::geo::srid::Srid;
use vegdb::snapshot::store::DataDir;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn state() -> AppState {
    let g = if let Ok(root) = std::env::var("VEGDB_BENCH_DATA") {
        let data = DataDir::read_only(root);
        let dir = data.generation_dir(data.current().unwrap().expect("CURRENT"));
        Generation::load(&dir, &|_| {}).unwrap().0
    } else {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Demo, 42, tmp.path()).unwrap();
        let g = Generation::load(&dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        g
    };
    AppState::read_only(
        Arc::new(GenerationStore::new(g)),
        ApiConfig::new("http://127.0.0.1:8080", Duration::from_secs(30)),
    )
}

fn v2_json(s: &AppState, g: &Generation, rows: &[u32], srid: Srid) -> Vec<u8> {
    let words = ["egenskaper".to_string(), "geometri".to_string()];
    let render = Render {
        s,
        g,
        srid,
        include: Include::from_words(&words, &[], false),
        tolerance_m: None,
        segment_by: None,
        revision: 2,
        z_tag: true,
        sensitive: false,
    };
    let mut out = Vec::with_capacity(1 << 20);
    let mut ser = serde_json::Serializer::new(&mut out);
    let mut seq = ser.serialize_seq(Some(rows.len())).unwrap();
    StreamedObjects {
        render: &render,
        data: &g.objects[&105],
        rows,
    }
    .write(&mut seq)
    .unwrap();
    seq.end().unwrap();
    out
}

fn geojson(g: &Generation, rows: &[u32], srid: Srid) -> String {
    let data = &g.objects[&105];
    let mut out = String::with_capacity(1 << 20);
    out.push('[');
    for (i, &r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_object(&mut out, g, data, r as usize, Crs::new(srid), false).unwrap();
    }
    out.push(']');
    out
}

fn bench(c: &mut Criterion) {
    let s = state();
    let g = s.store.current();
    let rows: Vec<u32> = (0..g.objects[&105].table.len().min(1000) as u32).collect();
    for srid in [Srid::Wgs84, Srid::Utm33Wgs84] {
        eprintln!(
            "type 105, {} objects, srid {}: GeoJSON {} bytes, v2 JSON {} bytes",
            rows.len(),
            srid.code(),
            geojson(&g, &rows, srid).len(),
            v2_json(&s, &g, &rows, srid).len()
        );
        c.bench_function(&format!("page_1000_type105_geojson_{}", srid.code()), |b| {
            b.iter(|| geojson(&g, &rows, srid).len())
        });
        c.bench_function(&format!("page_1000_type105_v2_json_{}", srid.code()), |b| {
            b.iter(|| v2_json(&s, &g, &rows, srid).len())
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
