//! `kartutsnitt` (the map-extent filter of object lists) against a plain geometric check: on
//! the tiny dataset with its generated history, today and at random past days, in storage
//! numbers and in longitude/latitude, the objects the filter selects are exactly those whose
//! geometry (own, else located on the day's network), written in the extent's system, meets
//! the rectangle (`geo`'s `Intersects`, touching counts). Boxes from a few metres to a few
//! kilometres, so that some objects lie wholly inside (the filter takes them without an exact
//! test), some cross the edge and some only come near it.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::sync::{Arc, OnceLock};

use geo::{Coord, Intersects, LineString, Point, Polygon, Rect};
use proptest::prelude::*;
use roaring::RoaringBitmap;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::feature::{FeatureOptions, Geometry};
use vegdb::generation::rows::ObjectRow;
use vegdb::generation::time::today;
use vegdb::generation::{Generation, TypeData};
use vegdb::geo::map_extent::MapExtent;
use vegdb::geo::srid::{from_storage, Srid};
use vegdb::query::objects::{select, ObjectFilter};

fn tiny() -> &'static Generation {
    static G: OnceLock<Generation> = OnceLock::new();
    G.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = generate_into(Scale::Tiny, 7, tmp.path()).unwrap();
        let g = Generation::load(&dir, &|_| {}).unwrap().0;
        std::mem::forget(tmp);
        g
    })
}

/// Located types (line and point objects) and one with own geometry.
const TYPES: [u32; 6] = [105, 95, 241, 87, 5, 83];

/// Does `geometry` (in the rectangle's system) meet `rect`? The plain check.
fn meets(geometry: &Geometry, rect: &Rect<f64>) -> bool {
    let c = |p: &[f64; 3]| Coord { x: p[0], y: p[1] };
    let line = |l: &[[f64; 3]]| LineString::new(l.iter().map(c).collect());
    match geometry {
        Geometry::Point(p) => Point::from(c(p)).intersects(rect),
        Geometry::LineString(l) => line(l).intersects(rect),
        Geometry::MultiLineString(ls) => ls.iter().any(|l| line(l).intersects(rect)),
        Geometry::MultiPolygon(ps) => ps.iter().any(|rings| {
            let mut rs = rings.iter().map(|r| line(r));
            let exterior = rs.next().unwrap();
            Polygon::new(exterior, rs.collect()).intersects(rect)
        }),
    }
}

/// What the oracle found: the rows, and how many of them lie wholly inside the rectangle.
struct Expected {
    rows: RoaringBitmap,
    wholly_inside: u64,
}

/// Every row of `d`, its geometry written in `srid`, tested against `rect` in that system.
fn brute(g: &Generation, d: &TypeData, srid: Srid, rect: [f64; 4]) -> Expected {
    let r = Rect::new(
        Coord {
            x: rect[0],
            y: rect[1],
        },
        Coord {
            x: rect[2],
            y: rect[3],
        },
    );
    let opts = FeatureOptions {
        srid,
        geometry_only: true,
        ..Default::default()
    };
    let mut rows = RoaringBitmap::new();
    let mut wholly_inside = 0;
    for row in 0..d.table.len() {
        let f = g.feature(ObjectRow::new(&d.table, row), &opts).unwrap();
        let Some(geometry) = f.geometry else {
            continue;
        };
        if meets(&geometry, &r) {
            rows.insert(row as u32);
            let b = geometry.bbox();
            if b[0] > rect[0] && b[1] > rect[1] && b[2] < rect[2] && b[3] < rect[3] {
                wholly_inside += 1;
            }
        }
    }
    Expected {
        rows,
        wholly_inside,
    }
}

/// A square of half side `half` metres around a vertex of the network, in `srid`.
fn square(g: &Generation, seed: usize, half: f64, srid: Srid) -> [f64; 4] {
    let c = g.network.coords[seed % g.network.coords.len()];
    let (x0, y0, x1, y1) = (c[0] - half, c[1] - half, c[0] + half, c[1] + half);
    if srid.is_native() {
        return [x0, y0, x1, y1];
    }
    let (a, b) = from_storage(srid, x0, y0).unwrap();
    let (c, d) = from_storage(srid, x1, y1).unwrap();
    [a.min(c), b.min(d), a.max(c), b.max(d)]
}

fn check(g: &Generation, ti: usize, seed: usize, half: f64, srid: Srid) -> Expected {
    let Some(d) = g.objects.get(&TYPES[ti]) else {
        return Expected {
            rows: RoaringBitmap::new(),
            wholly_inside: 0,
        };
    };
    let rect = square(g, seed, half, srid);
    let f = ObjectFilter {
        bbox: Some(MapExtent::new(srid, rect).unwrap()),
        ..Default::default()
    };
    let got = select(g, d, &f).into_owned();
    let want = brute(g, d, srid, rect);
    assert_eq!(
        got,
        want.rows,
        "type {} box {rect:?} in {srid:?}: selected {} objects, the oracle {}",
        TYPES[ti],
        got.len(),
        want.rows.len()
    );
    want
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn kartutsnitt_selects_what_meets_the_box(ti in 0usize..6, seed in any::<usize>(), half in 5.0f64..4000.0,
                                              lon_lat in any::<bool>(), past in prop::option::of(0i32..6000)) {
        let g0 = tiny();
        let view: Arc<Generation>;
        let g = match past {
            Some(days_ago) => {
                view = g0.at(today() - 1 - days_ago).unwrap();
                &*view
            }
            None => g0,
        };
        let srid = if lon_lat { Srid::Wgs84 } else { Srid::Utm33Etrs89 };
        check(g, ti, seed, half, srid);
    }
}

/// The boxes above exercise every class of candidate: objects wholly inside (the filter's
/// shortcut), objects meeting the box across its edge, and objects near it that do not.
#[test]
fn boxes_hold_objects_wholly_inside_and_across_the_edge() {
    let g = tiny();
    let (mut inside, mut across) = (0, 0);
    for seed in 0..40usize {
        for half in [300.0, 1500.0, 4000.0] {
            let want = check(g, 0, seed * 7919, half, Srid::Utm33Etrs89);
            inside += want.wholly_inside;
            across += want.rows.len() - want.wholly_inside;
        }
    }
    assert!(
        inside > 50 && across > 50,
        "inside {inside}, across {across}"
    );
}
