//! Road-object queries in process: statistics with area + enum filters, a kommune as a polygon
//! (against `kommune=`, `statistikk_105_kommune_segmented`) and for a whole type,
//! and rendering a page of 1000 objects to JSON bytes (inkluder=alle and minimum). The object
//! list of type 105 in that kommune through the routes in process, by `kommune=` and by its
//! shape as `polygon=` (`list_105_kommune`, `list_105_polygon_kommune`: the selection and one
//! page of 1000 objects, `inkluder=minimum`, as JSON bytes), and the page after a cursor in the
//! middle of the polygon's objects (`list_105_polygon_kommune_after`), and the first page of a
//! polygon not prepared yet (`list_105_polygon_kommune_cold`; the others reuse the polygon the
//! generation keeps); the same for the kommune whose objects lie in the middle of the rows
//! (`…_mid`). Data: the demo preset,
//! or with VEGDB_BENCH_DATA a national data dir (type 95, 1.35 M objects).
#![allow(clippy::unwrap_used)] // a benchmark may unwrap

use criterion::{criterion_group, criterion_main, Criterion};
use vegdb::api::object_json::{Include, Render, StreamedObjects};
use vegdb::api::state::AppState;
use vegdb::area::AreaKind;
use vegdb::geo::area_polygon::AreaPolygon;
use vegdb::geo::srid::Srid;
use vegdb::query::egenskap;
use vegdb::query::grouped::Dimension;
use vegdb::query::objects::{all_rows, select, total_length, ObjectFilter};
use wkt::ToWkt;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;
use support::{app_state, get_bytes, load};

fn state() -> (String, AppState) {
    let (name, g) = load();
    (name, app_state(g))
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
    let fk = ObjectFilter {
        any_of: vec![(AreaKind::Municipality, muni)],
        ..Default::default()
    };
    group.bench_function("statistikk_105_kommune_segmented", |b| {
        b.iter(|| g.object_statistics(stretch, &fk, true))
    });
    // the same municipality as a polygon (its own shape, in storage coordinates): the objects
    // whose geometry meets it, stretches cut to it
    let shape = g.areas.municipality(muni as u16).unwrap().shape.clone();
    let vertices: usize = shape
        .0
        .iter()
        .map(|p| p.exterior().0.len() + p.interiors().iter().map(|r| r.0.len()).sum::<usize>())
        .sum();
    let fp = ObjectFilter {
        polygon: Some(std::sync::Arc::new(
            AreaPolygon::new(Srid::Utm33Etrs89, shape).unwrap(),
        )),
        ..Default::default()
    };
    eprintln!(
        "kommune {muni} as a polygon of {vertices} vertices: type 105 {} objects (kommune= {})",
        select(&g, stretch, &fp).len(),
        select(&g, stretch, &fk).len()
    );
    group.bench_function("statistikk_105_polygon_kommune_segmented", |b| {
        b.iter(|| {
            let rows = select(&g, stretch, &fp);
            (rows.len(), total_length(&g, stretch, &rows, &fp, true))
        })
    });
    list_pages(&mut group, &s, muni, "");
    // a kommune whose objects lie in the middle of the rows: the first page reads the rows'
    // boxes in vain, then asks the spatial index
    let middle = stretch.table.len() as u32 / 2;
    let (&(_, late), _) = stretch
        .index()
        .areas
        .iter()
        .find(|((k, _), b)| *k == AreaKind::Municipality && b.contains(middle))
        .unwrap();
    list_pages(&mut group, &s, late, "_mid");
    // grouped statistics over every object of type 105: by kommune and Fartsgrense (one entry
    // per object and kommune), and by road category (one per piece)
    let every = all_rows(stretch);
    for (label, dims) in [
        (
            "grouped_105_kommune_fartsgrense",
            vec![
                Dimension::Area(AreaKind::Municipality),
                Dimension::Enum(2021),
            ],
        ),
        ("grouped_105_vegkategori", vec![Dimension::Category]),
    ] {
        group.bench_function(label, |b| {
            b.iter(|| g.group_objects(stretch, &every, &none, true, &dims).len())
        });
    }
    let rows: Vec<u32> = all_rows(d)
        .iter()
        .skip(d.table.len() / 2)
        .take(1000)
        .collect();
    let parts: Vec<(String, Vec<String>)> = if std::env::var("VEGDB_BENCH_PARTS").is_ok() {
        [
            "metadata",
            "egenskaper",
            "lokasjon",
            "geometri",
            "relasjoner",
        ]
        .iter()
        .map(|w| (format!("page_1000_{w}"), vec![w.to_string()]))
        .collect()
    } else {
        vec![]
    };
    for (label, words) in [
        ("page_1000_alle".to_string(), vec!["alle".to_string()]),
        ("page_1000_minimum".to_string(), vec!["minimum".to_string()]),
    ]
    .into_iter()
    .chain(parts)
    {
        let render = Render {
            s: &s,
            g: &g,
            srid: Srid::default(),
            include: Include::from_words(&words, &[], false),
            tolerance_m: None,
            segment_by: None,
            revision: 2,
            z_tag: true,
            sensitive: false,
        };
        let mut buf = Vec::with_capacity(1 << 20);
        group.bench_function(&label, |b| {
            b.iter(|| {
                buf.clear();
                let page = StreamedObjects {
                    render: &render,
                    data: d,
                    rows: &rows,
                };
                serde_json::to_writer(&mut buf, &page).unwrap();
                buf.len()
            })
        });
    }
    group.finish();
}

/// The ids of a list page's objects.
fn page_ids(body: &[u8]) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    v["objekter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect()
}

/// One list page of type 105 (1000 objects, `inkluder=minimum`) by `kommune=` and by the
/// kommune's shape as `polygon=` (first page, and the page after a cursor in the middle of
/// the polygon's objects), through the routes, each label ending in `suffix`; the pages are
/// checked against the full selection first.
fn list_pages(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    s: &AppState,
    muni: u32,
    suffix: &str,
) {
    let g = s.store.current();
    let stretch = &g.objects[&105];
    let ids = &stretch.table.id;
    let shape = g.areas.municipality(muni as u16).unwrap().shape.clone();
    let a = AreaPolygon::new(Srid::Utm33Etrs89, shape).unwrap();
    let fp = ObjectFilter {
        polygon: Some(std::sync::Arc::new(a.clone())),
        ..Default::default()
    };
    let in_polygon = select(&g, stretch, &fp).into_owned();
    eprintln!(
        "kommune {muni}: type 105 rows {:?}..={:?}, {} in its shape",
        in_polygon.min(),
        in_polygon.max(),
        in_polygon.len()
    );
    let routes = vegdb::api::router::routes(s.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = "/nvdb/api/v2/vegobjekter/105?antall=1000&inkluder=minimum";
    let kommune = format!("{base}&kommune={muni}");
    let text: String =
        url::form_urlencoded::byte_serialize(a.shape().wkt_string().as_bytes()).collect();
    let polygon = format!("{base}&srid=25833&polygon={text}");
    let middle = in_polygon.select(in_polygon.len() as u32 / 2).unwrap_or(0);
    let cursor = vegdb::api::cursor::Cursor {
        generation: g.id,
        key: ids[middle as usize],
        key2: 0.0,
    };
    let after = format!("{polygon}&start={}", cursor.encode());
    for (path, skip) in [(&polygon, 0), (&after, in_polygon.len() / 2 + 1)] {
        let got = page_ids(&rt.block_on(get_bytes(&routes, path)));
        let want: Vec<u64> = in_polygon
            .iter()
            .skip(skip as usize)
            .take(1000)
            .map(|r| ids[r as usize])
            .collect();
        assert_eq!(got, want, "{path}");
    }
    let body = rt.block_on(get_bytes(&routes, &kommune));
    let fk = ObjectFilter {
        any_of: vec![(AreaKind::Municipality, muni)],
        ..Default::default()
    };
    let in_kommune: Vec<u64> = select(&g, stretch, &fk)
        .iter()
        .take(1000)
        .map(|r| ids[r as usize])
        .collect();
    assert_eq!(page_ids(&body), in_kommune, "{kommune}");
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
    // the first page of a polygon the generation has not prepared yet: each request spells
    // it with another count of leading spaces (32 spellings, twice the polygons kept)
    let cold: Vec<String> = (0..32)
        .map(|k| format!("{base}&srid=25833&polygon={}{text}", "+".repeat(k)))
        .collect();
    let mut k = 0;
    group.bench_function(format!("list_105_polygon_kommune_cold{suffix}"), |b| {
        b.iter(|| {
            k = (k + 1) % cold.len();
            rt.block_on(get_bytes(&routes, &cold[k])).len()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
