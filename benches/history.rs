//! Queries at a past day against the same queries today, and what the first query of a day
//! costs (building the view, `generation::time`). Data: the demo preset (seed 42), or with
//! VEGDB_BENCH_DATA a national data dir (`vegdb generate --scale national`, with its generated
//! history). The day: VEGDB_BENCH_DAY (YYYY-MM-DD), default 2019-06-01.
//!
//! Each query is benched twice, `today` (the generation) and `past` (its view at the day,
//! built before timing): the target is past <= 1.5 x today. `view_build` times
//! building the view of a new day (each iteration asks a day not kept). `list_105_bbox_*`: the
//! first page of type 105 in a 2 km box (`kartutsnitt`, `inkluder=minimum`, `antall=1000`, 64
//! boxes around random objects, one per iteration in turn) through the routes in process, as
//! JSON bytes: the page `tools/bench_history_pg.sh` asks over HTTP, without the wire.
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vegdb::area::AreaKind;
use vegdb::generation::Generation;
use vegdb::query::network::{nearest, NearestFilter, NearestQuery};
use vegdb::query::objects::{select, total_length, ObjectFilter};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;
use support::{app_state, get_bytes, load};

/// VEGDB_BENCH_DAY, default 2019-06-01.
fn day_text() -> String {
    std::env::var("VEGDB_BENCH_DAY").unwrap_or_else(|_| "2019-06-01".into())
}

fn day() -> i32 {
    let d = chrono::NaiveDate::parse_from_str(&day_text(), "%Y-%m-%d").unwrap();
    (d - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32
}

/// Points near the network (80 %) or anywhere in its extent, as `benches/nearest.rs` asks.
fn points(g: &Generation, count: usize) -> Vec<(f64, f64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let c = &g.network.coords;
    (0..count)
        .map(|_| {
            let p = c[rng.random_range(0..c.len())];
            (
                p[0] + rng.random_range(-10.0..10.0),
                p[1] + rng.random_range(-10.0..10.0),
            )
        })
        .collect()
}

/// The municipality with most objects of `type_id` in `g`.
fn busiest(g: &Generation, type_id: u32) -> u32 {
    let d = &g.objects[&type_id];
    let (&(_, muni), _) = d
        .index()
        .areas
        .iter()
        .filter(|((k, _), _)| *k == AreaKind::Municipality)
        .max_by_key(|(_, b)| b.len())
        .unwrap();
    muni
}

fn bench(c: &mut Criterion) {
    let (name, g) = load();
    let day = day();
    let versions: usize = g.history.values().map(|t| t.len()).sum();
    eprintln!(
        "history_{name}: {} current objects, {versions} closed versions in {} types, {} closed link rows",
        g.object_count(),
        g.history.len(),
        g.network_history.len()
    );
    let t = Instant::now();
    let past = g.at(day).unwrap();
    eprintln!(
        "view at day {day}: built in {} ms; {} objects, {} link rows (today {} / {})",
        t.elapsed().as_millis(),
        past.object_count(),
        past.network.len(),
        g.object_count(),
        g.network.len()
    );
    let mut group = c.benchmark_group(format!("history_{name}"));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));

    let muni = busiest(&g, 105);
    let f = ObjectFilter {
        any_of: vec![(AreaKind::Municipality, muni)],
        ..Default::default()
    };
    for (label, at) in [("today", &g), ("past", &*past)] {
        let Some(d) = at.objects.get(&105) else {
            continue;
        };
        group.bench_function(format!("statistikk_105_kommune_{label}"), |b| {
            b.iter(|| {
                let rows = select(at, d, &f);
                (rows.len(), total_length(at, d, &rows, &f, true))
            })
        });
    }
    let qs = points(&g, 2_000);
    for (label, at) in [("today", &g), ("past", &*past)] {
        group.bench_function(format!("posisjon_2000_{label}"), |b| {
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
                    hits += nearest(&at.network, &at.network_indexes, &at.network_index, &q).len();
                }
                hits
            })
        });
    }
    group.sample_size(10);
    let mut next = day;
    group.bench_function("view_build", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // a day not kept: the previous ones fill the cache, this one is new
                next -= 1;
                let t = Instant::now();
                std::hint::black_box(g.at(next).unwrap());
                total += t.elapsed();
            }
            total
        })
    });
    list_in_boxes(&mut group, g);
    group.finish();
}

/// `list_105_bbox_today` and `list_105_bbox_past` (see the head of this file).
fn list_in_boxes(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    g: Generation,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let index = g.objects[&105].object_index(&g);
    let rows = g.objects[&105].table.len() as u32;
    let mut boxes = Vec::new();
    while boxes.len() < 64 {
        let [x0, y0, x1, y1] = index.box_of(rng.random_range(0..rows));
        if x0 <= x1 {
            let (x, y) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
            boxes.push(format!(
                "{:.1},{:.1},{:.1},{:.1}",
                x - 1000.0,
                y - 1000.0,
                x + 1000.0,
                y + 1000.0
            ));
        }
    }
    let routes = vegdb::api::router::routes(app_state(g));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let day = day_text();
    for (label, at) in [
        ("today", String::new()),
        ("past", format!("&tidspunkt={day}")),
    ] {
        let paths: Vec<String> = boxes
            .iter()
            .map(|b| {
                format!(
                    "/nvdb/api/v2/vegobjekter/105?kartutsnitt={b}{at}&inkluder=minimum&antall=1000"
                )
            })
            .collect();
        let bytes: usize = paths
            .iter()
            .map(|p| rt.block_on(get_bytes(&routes, p)).len())
            .sum();
        eprintln!(
            "list_105_bbox_{label}: {} bytes a page on average",
            bytes / paths.len()
        );
        let mut k = 0;
        group.bench_function(format!("list_105_bbox_{label}"), |b| {
            b.iter(|| {
                k = (k + 1) % paths.len();
                rt.block_on(get_bytes(&routes, &paths[k])).len()
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
