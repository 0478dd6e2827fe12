//! The feature view of a road object: what a map, a GIS format or a feature service shows of it.
//!
//! A [`Feature`] is an object's geometry and its property values, ready to be written in any
//! format (GeoJSON, OGC API Features, vector tiles, FlatGeobuf, GeoParquet):
//!
//! - **geometry**: the object's own geometry when it has one (point, line or surface), else its
//!   *located* geometry — the road network under its placements: a point for a point-placed
//!   object (its first placement, as the v2 `geometri`), lines for line-placed ones (the
//!   sub-lines of the network rows its placements cover, pieces that touch joined into one
//!   line). This is the same geometry the v2 API writes as `geometri` / `lokasjon.geometri`
//!   (`api::object_json` builds its WKT from [`Generation::located_geometry`]).
//! - **properties**: every value the object has, in catalogue order, keyed by the property
//!   type's id *and* name, enumerated values decoded (the allowed value's name, or its number
//!   for numeric enumerations) with their id kept. Geometry properties are not repeated (they
//!   are the feature's geometry); sensitive values only when asked for.
//! - **coordinates** in a chosen [`Srid`]: storage numbers (UTM 33: 25833/32633/5973/6173 are
//!   the same numbers) or transformed through `geo::srid` (4326 is written longitude, latitude).
//!
//! ```ignore
//! let data = g.objects.get(&105).unwrap();
//! let f = g.feature(ObjectRow::new(&data.table, 0), &FeatureOptions::default())?;
//! for p in &f.properties { println!("{} = {:?}", p.name, p.value); }
//! ```

use super::rows::{ObjectRow, StoredValue};
use super::Generation;
use crate::catalog::{datatype, ObjectType, PropertyType};
use crate::error::Result;
use crate::geo::area_polygon::AreaPolygon;
use crate::geo::map_extent::MapExtent;
use crate::geo::srid::{from_storage, Srid};
use crate::geo::Coord3;
use crate::snapshot::columns::ObjectTable;

/// A geometry in one coordinate system (x, y, height). For 4326, x is longitude and y latitude.
#[derive(Debug, Clone, PartialEq)]
pub enum Geometry {
    Point(Coord3),
    LineString(Vec<Coord3>),
    /// Lines that do not touch (a placement over links that are not consecutive).
    MultiLineString(Vec<Vec<Coord3>>),
    /// Polygons, each a list of rings (the first the exterior, then holes).
    MultiPolygon(Vec<Vec<Vec<Coord3>>>),
}

impl Geometry {
    /// The geometry with every coordinate transformed from storage (UTM 33) into `srid`;
    /// heights pass through.
    pub fn to_srid(&self, srid: Srid) -> Result<Geometry> {
        if srid.is_native() {
            return Ok(self.clone());
        }
        let c = |p: &Coord3| -> Result<Coord3> {
            let (x, y) = from_storage(srid, p[0], p[1])?;
            Ok([x, y, p[2]])
        };
        let line = |l: &[Coord3]| l.iter().map(c).collect::<Result<Vec<_>>>();
        Ok(match self {
            Geometry::Point(p) => Geometry::Point(c(p)?),
            Geometry::LineString(l) => Geometry::LineString(line(l)?),
            Geometry::MultiLineString(ls) => {
                Geometry::MultiLineString(ls.iter().map(|l| line(l)).collect::<Result<Vec<_>>>()?)
            }
            Geometry::MultiPolygon(ps) => Geometry::MultiPolygon(
                ps.iter()
                    .map(|rings| rings.iter().map(|r| line(r)).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    /// Every coordinate, in order.
    pub fn coords(&self) -> Box<dyn Iterator<Item = &Coord3> + '_> {
        match self {
            Geometry::Point(p) => Box::new(std::iter::once(p)),
            Geometry::LineString(l) => Box::new(l.iter()),
            Geometry::MultiLineString(ls) => Box::new(ls.iter().flatten()),
            Geometry::MultiPolygon(ps) => Box::new(ps.iter().flatten().flatten()),
        }
    }

    /// `[min x, min y, max x, max y]`.
    pub fn bbox(&self) -> [f64; 4] {
        self.coords().fold(
            [
                f64::INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
            ],
            |b, c| {
                [
                    b[0].min(c[0]),
                    b[1].min(c[1]),
                    b[2].max(c[0]),
                    b[3].max(c[1]),
                ]
            },
        )
    }

    /// Does the geometry (storage coordinates) intersect map extent `e`'s rectangle, in the
    /// rectangle's own system?
    pub fn meets(&self, e: &MapExtent) -> bool {
        match self {
            Geometry::Point(p) => e.meets_line(&[*p]),
            Geometry::LineString(l) => e.meets_line(l),
            Geometry::MultiLineString(ls) => ls.iter().any(|l| e.meets_line(l)),
            Geometry::MultiPolygon(ps) => ps.iter().any(|p| e.meets_polygon(p)),
        }
    }

    /// Does it intersect polygon filter `a`?
    pub fn meets_area(&self, a: &AreaPolygon) -> bool {
        match self {
            Geometry::Point(p) => a.meets_line(&[*p]),
            Geometry::LineString(l) => a.meets_line(l),
            Geometry::MultiLineString(ls) => a.meets_lines(ls),
            Geometry::MultiPolygon(ps) => ps.iter().any(|p| a.meets_polygon(p)),
        }
    }

    /// The geometry of an own-geometry run (`ObjectTable::own_geometry`); None when empty.
    pub fn from_own(coords: &[Coord3]) -> Option<Geometry> {
        match coords {
            [] => None,
            s if crate::geo::surface::is_surface(s) => {
                Some(Geometry::MultiPolygon(crate::geo::surface::polygons(s)))
            }
            [p] => Some(Geometry::Point(*p)),
            line => Some(Geometry::LineString(line.to_vec())),
        }
    }
}

/// The part of one placement on one network row: link positions `from..=to` (clipped to the
/// row) of the link `link_id`, which row `net_row` belongs to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Piece {
    pub net_row: usize,
    pub link_id: u64,
    pub from: f64,
    pub to: f64,
    /// The placement's direction (`DIRECTION_WITH` / `DIRECTION_AGAINST`).
    pub direction: u8,
    /// The placement's index in the table's placement columns (`loc_*`).
    pub placement: usize,
}

/// A decoded property value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PropertyValue<'a> {
    /// An allowed value: its id, its name, and its number for numeric enumerations.
    Enum {
        id: u32,
        name: &'a str,
        number: Option<f64>,
    },
    Integer(i64),
    Float(f64),
    /// Text, dates (`YYYY-MM-DD`), times, booleans as stored.
    Text(&'a str),
}

/// One property value of a feature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Property<'a> {
    /// The property type's id.
    pub id: u32,
    /// The property type's name (catalogue).
    pub name: &'a str,
    pub value: PropertyValue<'a>,
    /// Unit short name, e.g. `km/h`.
    pub unit: Option<&'a str>,
}

/// What a feature is built with.
#[derive(Debug, Clone, Copy, Default)]
pub struct FeatureOptions {
    /// Coordinate system of the geometry (default 32633, the storage numbers).
    pub srid: Srid,
    /// Include sensitive (sensitivitet 1) values.
    pub sensitive: bool,
    /// Leave the properties out (geometry only).
    pub geometry_only: bool,
}

/// An object as a feature: see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature<'a> {
    pub type_id: u32,
    pub id: u64,
    pub version: u32,
    /// None for an object with neither own geometry nor a placement on the network.
    pub geometry: Option<Geometry>,
    /// Whether `geometry` is the object's own (else located on the network).
    pub own_geometry: bool,
    pub properties: Vec<Property<'a>>,
}

impl Generation {
    /// The feature view of `object` (a row of a table of this generation).
    pub fn feature<'a>(
        &'a self,
        object: ObjectRow<'a>,
        opts: &FeatureOptions,
    ) -> Result<Feature<'a>> {
        let own = Geometry::from_own(object.own_geometry());
        let own_geometry = own.is_some();
        let storage = match own {
            Some(g) => Some(g),
            None => {
                let pieces = self.placement_pieces(object.table(), object.row(), |_| true);
                self.located_geometry(&pieces)
            }
        };
        let geometry = match storage {
            Some(g) if !opts.srid.is_native() => Some(g.to_srid(opts.srid)?),
            native => native,
        };
        let properties = match self.catalog.object_type(object.type_id()) {
            Some(t) if !opts.geometry_only => properties(t, object, opts.sensitive),
            _ => Vec::new(),
        };
        Ok(Feature {
            type_id: object.type_id(),
            id: object.id(),
            version: object.version(),
            geometry,
            own_geometry,
            properties,
        })
    }

    /// The property values of `object` as its feature carries them (without building its
    /// geometry): catalogue order, sensitive values only when `sensitive`.
    pub fn object_properties<'a>(
        &'a self,
        object: ObjectRow<'a>,
        sensitive: bool,
    ) -> Vec<Property<'a>> {
        match self.catalog.object_type(object.type_id()) {
            Some(t) => properties(t, object, sensitive),
            None => Vec::new(),
        }
    }

    /// The pieces of object `row`'s placements on the network rows they overlap, in placement
    /// order, keeping only rows for which `keep(net_row)` is true. A point placement on the
    /// border of two rows belongs to the first.
    pub fn placement_pieces(
        &self,
        table: &ObjectTable,
        row: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Piece> {
        let n = &self.network;
        let mut out: Vec<Piece> = Vec::new();
        for p in table.placements(row) {
            let (link_id, from, to) = (table.loc_link[p], table.loc_from[p], table.loc_to[p]);
            for r in n.rows_overlapping(link_id, from, to) {
                if !keep(r) {
                    continue;
                }
                if from == to
                    && out.last().is_some_and(|q| {
                        q.link_id == link_id
                            && q.from == from
                            && table.loc_lanes[q.placement] == table.loc_lanes[p]
                    })
                {
                    continue;
                }
                out.push(Piece {
                    net_row: r,
                    link_id,
                    from: from.max(n.from_pos[r]),
                    to: to.min(n.to_pos[r]),
                    direction: table.loc_direction[p],
                    placement: p,
                });
            }
        }
        out
    }

    /// The located geometry of placement pieces, in storage coordinates: a point when every
    /// piece is a point (the first one), else the pieces' sub-lines with consecutive pieces
    /// that touch (within 1 µm) joined — one `LineString`, or a `MultiLineString` when they do
    /// not all join. None without pieces.
    pub fn located_geometry(&self, pieces: &[Piece]) -> Option<Geometry> {
        let first = pieces.first()?;
        if pieces.iter().all(|p| p.from == p.to) {
            return Some(Geometry::Point(
                self.segment(first.net_row).point_at(first.from),
            ));
        }
        let mut lines: Vec<Vec<Coord3>> = Vec::new();
        for p in pieces.iter().filter(|p| p.to > p.from) {
            let piece = self.segment(p.net_row).sub_line(p.from, p.to);
            match lines.last_mut() {
                Some(l)
                    if l.last().is_some_and(|e| {
                        (e[0] - piece[0][0]).abs() < 1e-6 && (e[1] - piece[0][1]).abs() < 1e-6
                    }) =>
                {
                    l.extend_from_slice(&piece[1..])
                }
                _ => lines.push(piece),
            }
        }
        Some(if lines.len() == 1 {
            Geometry::LineString(lines.swap_remove(0))
        } else {
            Geometry::MultiLineString(lines)
        })
    }
}

/// The values of `object`, decoded, in catalogue order.
fn properties<'a>(t: &'a ObjectType, object: ObjectRow<'a>, sensitive: bool) -> Vec<Property<'a>> {
    let mut out = Vec::new();
    for p in &t.property_types {
        if p.is_geometry() || (p.sensitivity > 0 && !sensitive) {
            continue;
        }
        let Some(value) = object
            .value(p.id, p.storage())
            .and_then(|stored| decode(p, stored))
        else {
            continue;
        };
        out.push(Property {
            id: p.id,
            name: &p.name,
            value,
            unit: p.unit.as_ref().map(|u| u.short_name.as_str()),
        });
    }
    out
}

/// A stored value of property `p` as features carry it (None for an enumeration id that is
/// no allowed value of `p`).
pub fn decode<'a>(p: &'a PropertyType, stored: StoredValue<'a>) -> Option<PropertyValue<'a>> {
    Some(match stored {
        StoredValue::Enum(id) => {
            let av = p.allowed_value(id)?;
            PropertyValue::Enum {
                id,
                name: &av.name,
                number: av.number.filter(|_| p.datatype == datatype::ENUM_NUMBER),
            }
        }
        StoredValue::Integer(v) => PropertyValue::Integer(v),
        StoredValue::Float(v) => PropertyValue::Float(v),
        StoredValue::Text(v) => PropertyValue::Text(v),
    })
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::catalog::Placement;

    fn demo() -> &'static Generation {
        crate::generation::demo_for_tests()
    }

    /// The point at link position `pos`, by walking the row's polyline by hand (2D length).
    fn point_on_link(g: &Generation, link: u64, pos: f64) -> [f64; 2] {
        let n = &g.network;
        let r = n
            .rows_of_link(link)
            .find(|&r| n.from_pos[r] <= pos && pos <= n.to_pos[r])
            .expect("a row of the link at the position");
        let c = n.geometry(r);
        let fraction = (pos - n.from_pos[r]) / (n.to_pos[r] - n.from_pos[r]);
        let seg: Vec<f64> = c
            .windows(2)
            .map(|w| ((w[1][0] - w[0][0]).powi(2) + (w[1][1] - w[0][1]).powi(2)).sqrt())
            .collect();
        let mut left = fraction * seg.iter().sum::<f64>();
        for (i, len) in seg.iter().enumerate() {
            if left <= *len || i == seg.len() - 1 {
                let t = if *len > 0.0 {
                    (left / len).min(1.0)
                } else {
                    0.0
                };
                return [
                    c[i][0] + t * (c[i + 1][0] - c[i][0]),
                    c[i][1] + t * (c[i + 1][1] - c[i][1]),
                ];
            }
            left -= len;
        }
        [c[0][0], c[0][1]]
    }

    fn close(a: &Coord3, b: [f64; 2]) -> bool {
        (a[0] - b[0]).abs() < 1e-3 && (a[1] - b[1]).abs() < 1e-3
    }

    #[test]
    fn a_line_object_runs_between_its_placement_ends() {
        let g = demo();
        let data = g.objects.get(&105).expect("speed limits in the demo");
        let t = &data.table;
        let mut checked = 0;
        for row in 0..t.len() {
            let ps = t.placements(row);
            if ps.len() != 1 || !t.own_geometry(row).is_empty() {
                continue;
            }
            let p = ps.start;
            let (link, from, to) = (t.loc_link[p], t.loc_from[p], t.loc_to[p]);
            let f = g
                .feature(ObjectRow::new(t, row), &FeatureOptions::default())
                .expect("a feature");
            assert!(!f.own_geometry);
            let Some(Geometry::LineString(line)) = &f.geometry else {
                panic!("object {} has no single line: {:?}", f.id, f.geometry);
            };
            let (a, b) = (point_on_link(g, link, from), point_on_link(g, link, to));
            assert!(close(&line[0], a), "start {:?} vs {a:?}", line[0]);
            assert!(close(line.last().expect("coords"), b));
            checked += 1;
            if checked == 200 {
                break;
            }
        }
        assert!(checked > 20, "only {checked} single-placement speed limits");
    }

    #[test]
    fn point_placements_locate_at_their_position_and_own_geometry_wins() {
        let g = demo();
        let (mut located, mut own) = (0, 0);
        for (&type_id, data) in &g.objects {
            let Some(ot) = g.catalog.object_type(type_id) else {
                continue;
            };
            if ot.placement != Placement::Point {
                continue;
            }
            let t = &data.table;
            for row in (0..t.len()).take(50) {
                if t.placements(row).is_empty() {
                    continue;
                }
                let p = t.placements(row).start;
                let pieces = g.placement_pieces(t, row, |_| true);
                let Some(Geometry::Point(c)) = g.located_geometry(&pieces) else {
                    panic!("point placement without a point");
                };
                assert!(close(&c, point_on_link(g, t.loc_link[p], t.loc_from[p])));
                located += 1;
                let f = g
                    .feature(ObjectRow::new(t, row), &FeatureOptions::default())
                    .expect("a feature");
                if t.own_geometry(row).is_empty() {
                    assert_eq!(f.geometry, Some(Geometry::Point(c)));
                } else {
                    assert!(f.own_geometry);
                    assert_eq!(f.geometry, Geometry::from_own(t.own_geometry(row)));
                    own += 1;
                }
            }
        }
        assert!(located > 20 && own > 0, "{located} located, {own} own");
    }

    #[test]
    fn properties_decode_against_the_catalogue_file() {
        // the catalogue file read on its own, not through `catalog`
        let text = include_str!("../catalog/data/datakatalog.json");
        let doc: serde_json::Value = serde_json::from_str(text).expect("catalogue json");
        let types = doc["vegobjekttyper"].as_array().expect("a list of types");
        let t105 = types
            .iter()
            .find(|t| t["id"] == 105)
            .expect("type 105 in the file");
        let g = demo();
        let data = g.objects.get(&105).expect("speed limits");
        let mut enums = 0;
        for row in 0..data.table.len().min(300) {
            let f = g
                .feature(ObjectRow::new(&data.table, row), &FeatureOptions::default())
                .expect("a feature");
            for p in &f.properties {
                let pt = t105["egenskapstyper"]
                    .as_array()
                    .expect("property types")
                    .iter()
                    .find(|e| e["id"] == p.id)
                    .expect("property type in the file");
                assert_eq!(pt["navn"].as_str(), Some(p.name));
                if let PropertyValue::Enum { id, name, number } = p.value {
                    let av = pt["tillatte_verdier"]
                        .as_array()
                        .expect("allowed values")
                        .iter()
                        .find(|v| v["id"] == id)
                        .expect("allowed value in the file");
                    assert_eq!(av["navn"].as_str(), Some(name));
                    if let Some(n) = number {
                        assert_eq!(av["verdi"].as_f64(), Some(n));
                    }
                    enums += 1;
                }
            }
        }
        assert!(enums > 100, "only {enums} enum values seen");
    }

    #[test]
    fn wgs84_features_are_lon_lat_in_norway_and_match_the_storage_ones() {
        let g = demo();
        let data = g.objects.get(&105).expect("speed limits");
        for row in (0..data.table.len()).step_by(97).take(30) {
            let o = ObjectRow::new(&data.table, row);
            let utm = g.feature(o, &FeatureOptions::default()).expect("utm");
            let opts = FeatureOptions {
                srid: Srid::Wgs84,
                ..Default::default()
            };
            let wgs = g.feature(o, &opts).expect("wgs84");
            assert_eq!(utm.properties, wgs.properties);
            let (u, w) = (
                utm.geometry.expect("geometry"),
                wgs.geometry.expect("geometry"),
            );
            assert_eq!(u.coords().count(), w.coords().count());
            for (a, b) in u.coords().zip(w.coords()) {
                assert!(
                    (4.0..32.0).contains(&b[0]) && (57.0..72.0).contains(&b[1]),
                    "{b:?}"
                );
                let (x, y) = crate::geo::srid::to_storage(Srid::Wgs84, b[0], b[1]).expect("back");
                assert!((x - a[0]).abs() < 0.01 && (y - a[1]).abs() < 0.01);
            }
        }
    }
}
