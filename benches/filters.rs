//! A CQL2 `filter` of the OGC API against the equivalent `egenskap` filter, in process through
//! the routes (no network): `/ogc/collections/105/items` with `Fartsgrense=<v>` (a property
//! parameter, compiled to the `egenskap` expression `2021=<value id>`) and with
//! `filter=Fartsgrense = <v>` (cql2-text), for the rarest and the most common speed limit.
//! `limit=1`, so each answer is the whole selection (its `numberMatched`) and one feature; the
//! two answers are checked to match the same count first.
//!
//! Also the point road system reference lookup of `/veg?vegsystemreferanse=`: 100 references
//! (a metre inside every n-th row with one) through the index (`system_ref::locate`) against
//! the scan of every row (`locate_scan`), and the index's build (once per network, on the
//! first lookup). And the `vegsystemreferanse=` filter of object lists, statistikk and
//! `/vegnett/lenker` (`NetworkAttributeFilter::rows`): a whole road, one delstrekning, a metre
//! range of it and three references at once, through the same index against the check of every
//! row (`rows_scan`, what the filter did before). Data: the demo preset (seed 42), or with VEGDB_BENCH_DATA a national data
//! dir.
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use criterion::{criterion_group, criterion_main, Criterion};
use tower::ServiceExt;
use vegdb::api::state::{ApiConfig, AppState};
use vegdb::generation::GenerationStore;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Fartsgrense's property id.
const SPEED: u32 = 2021;

async fn get(routes: &axum::Router, path: &str) -> serde_json::Value {
    let req = Request::get(path)
        .header("host", "127.0.0.1:8080")
        .body(Body::empty())
        .unwrap();
    let r = routes.clone().oneshot(req).await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    let body = axum::body::to_bytes(r.into_body(), 1 << 24).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

fn bench(c: &mut Criterion) {
    let (name, g) = support::load();
    let s = AppState::read_only(
        Arc::new(GenerationStore::new(g)),
        ApiConfig::new("http://127.0.0.1:8080", Duration::from_secs(60)),
    );
    let g = s.store.current();
    let d = &g.objects[&105];
    // the speed limits by how many objects have them: the rarest and the most common
    let mut by_count: Vec<(u64, u32)> = d
        .index()
        .enums
        .iter()
        .filter(|((p, _), _)| *p == SPEED)
        .map(|((_, v), b)| (b.len(), *v))
        .collect();
    by_count.sort_unstable();
    let t = g.catalog.object_type(105).unwrap();
    let number = |id: u32| {
        t.property(SPEED)
            .unwrap()
            .allowed_value(id)
            .unwrap()
            .number
            .unwrap()
    };
    let routes = vegdb::api::router::routes(s.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group(format!("filters_{name}"));
    let picks = [
        ("rarest", by_count[0]),
        ("commonest", by_count[by_count.len() - 1]),
    ];
    for (which, (count, value)) in picks {
        let v = number(value);
        let egenskap = format!("/ogc/collections/105/items?limit=1&Fartsgrense={v}");
        let cql2 = format!("/ogc/collections/105/items?limit=1&filter=Fartsgrense%20%3D%20{v}");
        let a = rt.block_on(get(&routes, &egenskap));
        let b = rt.block_on(get(&routes, &cql2));
        assert_eq!(a["numberMatched"], b["numberMatched"]);
        assert_eq!(a["numberMatched"].as_u64(), Some(count));
        eprintln!(
            "type 105: {} objects; Fartsgrense = {v}: {count}",
            d.table.len()
        );
        group.bench_function(format!("egenskap_{which}"), |bch| {
            bch.iter(|| rt.block_on(get(&routes, &egenskap)))
        });
        group.bench_function(format!("cql2_{which}"), |bch| {
            bch.iter(|| rt.block_on(get(&routes, &cql2)))
        });
    }
    group.finish();
    system_refs(c, &name, &g);
}

fn system_refs(c: &mut Criterion, name: &str, g: &vegdb::generation::Generation) {
    use vegdb::index::network::SystemRefIndex;
    use vegdb::query::system_ref::{locate, locate_scan, SystemRefFilter};
    let n = &g.network;
    let with_ref: Vec<usize> = (0..n.len())
        .filter(|&r| n.system_category[r] != vegdb::snapshot::columns::NO_ROAD_REF)
        .collect();
    let refs: Vec<SystemRefFilter> = (0..100)
        .map(|i| with_ref[i * with_ref.len() / 100])
        .map(|r| {
            let m = (n.section_from_m[r] + n.section_to_m[r]) / 2;
            let text = format!(
                "{}{}{}S{}D{}m{m}",
                n.system_category[r] as char,
                n.system_phase[r] as char,
                n.system_number[r],
                n.section[r],
                n.subsection[r]
            );
            SystemRefFilter::parse_point(&text).unwrap()
        })
        .collect();
    let idx = g.network_indexes.system_refs(n);
    for f in &refs {
        assert_eq!(locate(n, idx, f), locate_scan(n, f), "{}", f.short());
    }
    eprintln!(
        "network: {} rows, {} with a road system reference",
        n.len(),
        with_ref.len()
    );
    let mut group = c.benchmark_group(format!("veg_vegsystemreferanse_{name}"));
    group.bench_function("index_100_lookups", |b| {
        b.iter(|| refs.iter().filter_map(|f| locate(n, idx, f)).count())
    });
    group.sample_size(10);
    group.bench_function("scan_100_lookups", |b| {
        b.iter(|| refs.iter().filter_map(|f| locate_scan(n, f)).count())
    });
    group.bench_function("index_build", |b| {
        b.iter(|| SystemRefIndex::build(n).phases().len())
    });
    group.finish();
    system_ref_filters(c, name, g, &with_ref);
}

/// The `vegsystemreferanse=` filter through the index against the scan, for references at
/// the row in the middle of those with one.
fn system_ref_filters(
    c: &mut Criterion,
    name: &str,
    g: &vegdb::generation::Generation,
    with_ref: &[usize],
) {
    use vegdb::query::attributes::NetworkAttributeFilter;
    use vegdb::query::system_ref::SystemRefFilter;
    let n = &g.network;
    let at = |r: usize| {
        format!(
            "{}{}{}",
            n.system_category[r] as char, n.system_phase[r] as char, n.system_number[r]
        )
    };
    let part = |r: usize| format!("{}S{}D{}", at(r), n.section[r], n.subsection[r]);
    let r = with_ref[with_ref.len() / 2];
    let (m0, m1) = (n.section_from_m[r], n.section_to_m[r] + 500);
    let cases = [
        ("road", at(r)),
        ("delstrekning", part(r)),
        ("metres", format!("{}m{m0}-{m1}", part(r))),
        (
            "three",
            [
                with_ref.len() / 4,
                with_ref.len() / 2,
                3 * with_ref.len() / 4,
            ]
            .map(|i| format!("{}m0-1000", part(with_ref[i])))
            .join(","),
        ),
    ];
    let mut group = c.benchmark_group(format!("vegsystemreferanse_filter_{name}"));
    for (which, text) in cases {
        let f = NetworkAttributeFilter {
            system_refs: text
                .split(',')
                .map(|t| SystemRefFilter::parse(t).unwrap())
                .collect(),
            ..Default::default()
        };
        let rows = f.rows(n, &g.network_indexes);
        assert_eq!(rows, f.rows_scan(n), "{text}");
        eprintln!("vegsystemreferanse={text}: {} rows", rows.len());
        group.bench_function(format!("index_{which}"), |b| {
            b.iter(|| f.rows(n, &g.network_indexes).len())
        });
        group.bench_function(format!("scan_{which}"), |b| b.iter(|| f.rows_scan(n).len()));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
