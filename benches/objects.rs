//! Road-object queries in process: statistics with area + enum filters, a kommune as a polygon
//! (against `kommune=`, `statistikk_105_kommune_segmented`) and for a whole type,
//! and rendering a page of 1000 objects to JSON bytes (inkluder=alle and minimum). The object
//! list of type 105 in that kommune through the routes in process, by `kommune=` and by its
//! shape as `polygon=` (`list_105_kommune`, `list_105_polygon_kommune`: the selection and one
//! page of 1000 objects, `inkluder=minimum`, as JSON bytes), and the page after a cursor in the
//! middle of the polygon's objects (`list_105_polygon_kommune_after`); the same three for the
//! kommune whose objects lie in the middle of the rows (`…_mid`). Data: the demo preset,
//! or with VEGDB_BENCH_DATA a national data dir (type 95, 1.35 M objects).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use vegdb::api::object_json::{Include, Render, StreamedObjects};
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::area::AreaKind;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::{Generation, GenerationStore};
use vegdb::geo::area_polygon::AreaPolygon;
use vegdb::geo::srid::Srid;
use vegdb::query::egenskap;
use vegdb::query::grouped::Dimension;
use vegdb::query::objects::{all_rows, select, total_length, ObjectFilter};
use vegdb::snapshot::store::DataDir;
use wkt::ToWkt;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn state() -> (String, AppState) {
    let (name, g) = if let Ok(root) = std::env::var("VEGDB_BENCH_DATA") {
        let data = DataDir::read_only(root);
        let dir = data.generation_dir(data.current().unwrap().expect("CURRENT"));
        ("national", Generation::load(&dir, &|_| {}).unwrap().0)
    } else {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Demo, 42, tmp.path()).unwrap();
        let g = Generation::load(&dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        ("demo", g)
    };
    let s = AppState::read_only(
        Arc::new(GenerationStore::new(g)),
        ApiConfig::new("http://127.0.0.1:8080", Duration::from_secs(30)),
    );
    (name.into(), s)
}

fn bench(c: &mut Criterion) {
    let (name, s) = state();
    let g = s.store.current();
    let d = &g.objects[&95];
    // the municipality with most sign points, and its most common Oppsettingsutstyr value
    let (&(_, muni), _) = d
        .index()
        .areas
        .iter()
        .filter(|((k, _), _)| *k == AreaKind::Municipality)
        .max_by_key(|(_, b)| b.len())
        .unwrap();
    let (&(_, value), _) = d
        .index()
        .enums
        .iter()
        .filter(|((p, _), _)| *p == 1876)
        .max_by_key(|(_, b)| b.len())
        .unwrap();
    let f = ObjectFilter {
        any_of: vec![(AreaKind::Municipality, muni)],
        egenskap: Some(egenskap::parse(&format!("1876={value}")).unwrap()),
        ..Default::default()
    };
    let mut group = c.benchmark_group(format!("objects_{name}"));
    eprintln!(
        "type 95: {} objects; kommune {muni}: {}; with 1876={value}: {}",
        d.table.len(),
        d.index().areas[&(AreaKind::Municipality, muni)].len(),
        select(&g, d, &f).len()
    );
    group.bench_function("statistikk_kommune_and_enum", |b| {
        b.iter(|| {
            let rows = select(&g, d, &f);
            (rows.len(), total_length(&g, d, &rows, &f, true))
        })
    });
    let none = ObjectFilter::default();
    group.bench_function("statistikk_whole_type", |b| {
        b.iter(|| g.object_statistics(d, &none, true))
    });
    let stretch = &g.objects[&105];
    assert_eq!(page_ids(&body).len(), 1000, "{kommune}");
    let polygon_body = rt.block_on(get_bytes(&routes, &polygon));
    eprintln!(
        "first pages: kommune= {} bytes, polygon= {} bytes",
        body.len(),
        polygon_body.len()
    );
    for (label, path) in [
        ("list_105_kommune", &kommune),
        ("list_105_polygon_kommune", &polygon),
        ("list_105_polygon_kommune_after", &after),
    ] {
        group.bench_function(format!("{label}{suffix}"), |b| {
            b.iter(|| rt.block_on(get_bytes(&routes, path)).len())
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
