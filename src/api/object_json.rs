//! The road object as the v2 API shows it, built from the columnar tables.
//!
//! `vegsegmenter` (shape not given by the spec): one element per placement part on a road link
//! segment, in the shape the v2 clients read (see `SegmentDoc`): `{stedfesting: {veglenkeid,
//! posisjon | fra_posisjon + til_posisjon, kortform, retning}, geometri, vegreferanse, kommune,
//! fylke, region, vegavdeling, strekningslengde}`. `inkluder=alle` includes them on lists and
//! single objects; the single object's default (no `inkluder`) is everything else.

use std::collections::BTreeMap;

use serde::Serialize;

pub use super::object_docs::*;
use serde_json::Value;

use super::dto::{system_ref_point, system_ref_stretch, SystemRefAny};
use super::error::ApiResult;
use super::state::AppState;
use crate::catalog::{datatype, ObjectType};
use crate::generation::feature::{Geometry, Piece};
use crate::generation::rows::{ObjectRow, StoredValue};
use crate::generation::{Generation, TypeData};
use crate::geo::srid::Srid;
use crate::geo::{wkt, Coord3};
use crate::query::objects::{ObjectFilter, Part};
use crate::query::system_ref::SystemPoint;
use crate::snapshot::columns::ObjectTable;

/// What to include (parsed from `inkluder` and `inkludergeometri`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Include {
    pub metadata: bool,
    pub properties: bool,
    pub relations: bool,
    pub location: bool,
    pub segments: bool,
    pub geometry: bool,
    /// inkludergeometri: own geometry under egenskaper / the `geometri` field / under lokasjon.
    pub geom_property: bool,
    pub geom_derived: bool,
    pub geom_location: bool,
}

pub const INKLUDER: &[&str] = &[
    "metadata",
    "egenskaper",
    "relasjoner",
    "lokasjon",
    "vegsegmenter",
    "geometri",
    "alle",
    "minimum",
];
pub const INKLUDERGEOMETRI: &[&str] = &["egenskap", "utledet", "lokasjon", "ingen"];

impl Include {
    /// `minimum` is id, href and metadata. `alle` is everything, vegsegmenter included; the
    /// default of a single object (`default_all`, no `inkluder`) is everything but vegsegmenter.
    pub fn from_words(words: &[String], geometry_words: &[String], default_all: bool) -> Include {
        let has = |w: &str| words.iter().any(|x| x == w);
        let all = has("alle") || (words.is_empty() && default_all);
        let mut inc = Include {
            metadata: all || has("metadata") || has("minimum"),
            properties: all || has("egenskaper"),
            relations: all || has("relasjoner"),
            location: all || has("lokasjon"),
            segments: has("alle") || has("vegsegmenter"),
            geometry: all || has("geometri"),
            ..Default::default()
        };
        let g = |w: &str| geometry_words.is_empty() || geometry_words.iter().any(|x| x == w);
        let none = geometry_words.iter().any(|x| x == "ingen");
        inc.geom_property = !none && g("egenskap");
        inc.geom_derived = !none && g("utledet");
        inc.geom_location = !none && g("lokasjon");
        inc
    }
}

/// Everything an object rendering needs besides the object.
pub struct Render<'a> {
    pub s: &'a AppState,
    pub g: &'a Generation,
    pub srid: Srid,
    pub include: Include,
    /// Douglas–Peucker tolerance in meters.
    pub tolerance_m: Option<f64>,
    /// Cut placements to this filter (segmentering=true with area filters).
    pub segment_by: Option<&'a ObjectFilter>,
    /// sist_modifisert written `YYYY-MM-DD HH:MM:SS` (revisions 0 and 1) or with a `T`.
    pub revision: u8,
    /// 3D WKT tagged `Z` (`Negotiated::wkt_z_tag`).
    pub z_tag: bool,
    /// Show sensitivitet-1 values (the caller has the right; see `users`).
    pub sensitive: bool,
}

/// The owned counterpart of [`Render`], for a response body that renders after its handler has
/// returned (a streamed page builds the borrowed `Render` from it for each chunk).
pub struct RenderOwned {
    pub s: AppState,
    pub g: std::sync::Arc<Generation>,
    pub srid: Srid,
    pub include: Include,
    pub tolerance_m: Option<f64>,
    pub segment_by: Option<ObjectFilter>,
    pub revision: u8,
    pub z_tag: bool,
    pub sensitive: bool,
}

impl RenderOwned {
    pub fn render(&self) -> Render<'_> {
        Render {
            s: &self.s,
            g: &self.g,
            srid: self.srid,
            include: self.include,
            tolerance_m: self.tolerance_m,
            segment_by: self.segment_by.as_ref(),
            revision: self.revision,
            z_tag: self.z_tag,
            sensitive: self.sensitive,
        }
    }
}

/// A geometry written as WKT, and whether `geometritoleranse` removed vertices from it.
pub struct Wkt {
    pub text: String,
    pub simplified: bool,
}

/// Douglas–Peucker simplification (`geo::simplify`, in the plane); the flag tells whether
/// vertices were removed.
fn simplify(coords: Vec<Coord3>, tolerance: Option<f64>) -> (Vec<Coord3>, bool) {
    match tolerance {
        Some(t) if coords.len() > 2 => {
            let kept = crate::geo::simplify::douglas_peucker(&coords, |c| (c[0], c[1]), t);
            let before = coords.len();
            let coords: Vec<Coord3> = coords
                .into_iter()
                .zip(kept)
                .filter_map(|(c, k)| k.then_some(c))
                .collect();
            let simplified = coords.len() < before;
            (coords, simplified)
        }
        _ => (coords, false),
    }
}

impl<'a> Render<'a> {
    pub fn href(&self, type_id: u32, id: u64) -> String {
        format!(
            "{}{}/vegobjekter/{type_id}/{id}",
            self.s.public_url(),
            super::route::READ_BASE
        )
    }

    fn geometry(&self, w: Wkt, egengeometri: Option<bool>) -> GeometryDoc {
        GeometryDoc {
            wkt: w.text,
            srid: self.srid.code(),
            egengeometri,
            forenklet: w.simplified.then_some(true),
        }
    }

    /// Located geometry of the parts: a point, or lines (contiguous parts joined), as
    /// `Generation::located_geometry` builds it.
    fn located_wkt(&self, ps: &[Part]) -> ApiResult<Option<Wkt>> {
        let pieces: Vec<Piece> = ps
            .iter()
            .map(|p| Piece {
                net_row: p.net_row as usize,
                link_id: p.link_id,
                from: p.from,
                to: p.to,
                direction: p.direction,
                placement: p.placement as usize,
            })
            .collect();
        let lines = match self.g.located_geometry(&pieces) {
            None => return Ok(None),
            Some(Geometry::Point(c)) => {
                return Ok(Some(Wkt {
                    text: wkt::point_z(self.srid, &c, self.z_tag)?,
                    simplified: false,
                }))
            }
            Some(Geometry::LineString(l)) => vec![l],
            Some(Geometry::MultiLineString(ls)) => ls,
            // never built from pieces; rings as lines keeps this total
            Some(Geometry::MultiPolygon(ps)) => ps.into_iter().flatten().collect(),
        };
        let mut simplified = false;
        let lines: Vec<Vec<Coord3>> = lines
            .into_iter()
            .map(|l| {
                let (l, s) = simplify(l, self.tolerance_m);
                simplified |= s;
                l
            })
            .collect();
        Ok(Some(Wkt {
            text: wkt::lines_z(self.srid, &lines, self.z_tag)?,
            simplified,
        }))
    }

    fn own_wkt(&self, table: &ObjectTable, row: usize) -> ApiResult<Option<Wkt>> {
        Ok(match ObjectRow::new(table, row).own_geometry() {
            [] => None,
            surface if crate::geo::surface::is_surface(surface) => Some(Wkt {
                text: crate::geo::surface::to_wkt(self.srid, surface)?,
                simplified: false,
            }),
            [p] => Some(Wkt {
                text: wkt::point_z(self.srid, p, self.z_tag)?,
                simplified: false,
            }),
            line => {
                let (line, simplified) = simplify(line.to_vec(), self.tolerance_m);
                Some(Wkt {
                    text: wkt::linestring_z(self.srid, &line, self.z_tag)?,
                    simplified,
                })
            }
        })
    }

    /// The property values (without sensitive ones), in catalogue order.
    pub fn property_docs(
        &self,
        t: &'a ObjectType,
        table: &'a ObjectTable,
        row: usize,
    ) -> ApiResult<Vec<PropertyDoc<'a>>> {
        let own = self.own_wkt(table, row)?;
        self.property_docs_with(t, table, row, own.as_ref().map(|w| w.text.as_str()))
    }

    /// As `property_docs`, with the object's own geometry already written as WKT.
    fn property_docs_with(
        &self,
        t: &'a ObjectType,
        table: &'a ObjectTable,
        row: usize,
        own: Option<&str>,
    ) -> ApiResult<Vec<PropertyDoc<'a>>> {
        let object = ObjectRow::new(table, row);
        let mut out = Vec::new();
        for p in &t.property_types {
            if p.sensitivity > 0 && !self.sensitive {
                continue;
            }
            let doc = |verdi: VerdiDoc<'a>| PropertyDoc {
                id: p.id,
                navn: &p.name,
                datatype: p.datatype,
                datatype_tekst: &p.datatype_tekst,
                verdi,
                enum_id: None,
                enhet: None,
            };
            if p.is_geometry() {
                if !self.include.geom_property {
                    continue;
                }
                let fits = match object.own_geometry() {
                    [] => false,
                    g if crate::geo::surface::is_surface(g) => p.datatype == datatype::GEOM_SURFACE,
                    [_] => p.datatype == datatype::GEOM_POINT,
                    _ => p.datatype == datatype::GEOM_LINE,
                };
                if fits && t.geometry_property(p.datatype).map(|g| g.id) == Some(p.id) {
                    if let Some(w) = own {
                        out.push(doc(VerdiDoc::Owned(w.to_string())));
                    }
                }
                continue;
            }
            // only properties with a value: look the value up before building anything
            let Some(value) = object.value(p.id, p.storage()) else {
                continue;
            };
            let mut d = match value {
                StoredValue::Enum(id) => {
                    let Some(av) = p.allowed_value(id) else {
                        continue;
                    };
                    let mut d = doc(match av.number {
                        Some(num) if p.datatype == datatype::ENUM_NUMBER => {
                            VerdiDoc::Number(Num(num))
                        }
                        _ => VerdiDoc::Text(&av.name),
                    });
                    d.enum_id = Some(id);
                    d
                }
                StoredValue::Integer(v) => doc(VerdiDoc::Int(v)),
                StoredValue::Float(v) => doc(VerdiDoc::Number(Num(v))),
                StoredValue::Text(v) => doc(VerdiDoc::Text(v)),
            };
            d.enhet = p.unit.as_ref().map(Into::into);
            out.push(d);
        }
        Ok(out)
    }

    /// `lanes`: the table's placement lanes (`ObjectTable::loc_lanes`).
    fn location(&self, ps: &[Part], lanes: &[Box<str>]) -> ApiResult<LocationDoc<'a>> {
        let g = self.g;
        let areas = g.areas;
        let uniq16 = |f: &dyn Fn(usize) -> u16| {
            let mut v: Vec<u16> = ps.iter().map(|p| f(p.net_row as usize)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let uniq = |f: &dyn Fn(usize) -> u8| {
            let mut v: Vec<u8> = ps.iter().map(|p| f(p.net_row as usize)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let kommuner = uniq16(&|r| g.segment(r).municipality());
        let mut contracts: Vec<u32> = kommuner
            .iter()
            .flat_map(|&m| areas.contracts_of(m).iter().copied())
            .collect();
        contracts.sort_unstable();
        contracts.dedup();
        let mut routes: Vec<u32> = Vec::new();
        for p in ps {
            let l = g.segment(p.net_row as usize);
            if matches!(l.road_category(), b'E' | b'R') {
                routes.extend(areas.routes_of(l.road_category(), l.road_number(), l.county()));
            }
        }
        routes.sort_unstable();
        routes.dedup();
        let geometri = if self.include.geometry && self.include.geom_location {
            self.located_wkt(ps)?.map(|w| self.geometry(w, None))
        } else {
            None
        };
        let point = is_point(ps);
        Ok(LocationDoc {
            fylker: uniq(&|r| g.segment(r).county()),
            regioner: uniq(&|r| g.segment(r).region()),
            vegavdelinger: uniq(&|r| g.segment(r).road_department()),
            kontraktsomrader: contracts
                .iter()
                .map(|&c| {
                    let c = &areas.contracts[c as usize];
                    ContractDoc {
                        nummer: c.number,
                        navn: &c.name,
                    }
                })
                .collect(),
            riksvegruter: routes
                .iter()
                .map(|&i| {
                    let r = &areas.routes[i as usize];
                    RouteDoc {
                        nummer: &r.number,
                        navn: &r.name,
                        periode: &r.period,
                    }
                })
                .collect(),
            vegreferanser: ps.iter().filter_map(|p| road_ref_of(g, p, point)).collect(),
            vegsystemreferanser: ps
                .iter()
                .filter_map(|p| system_ref_of(g, p, point))
                .collect(),
            stedfestinger: merged(ps, lanes)
                .iter()
                .map(|p| PlacementDoc::new(p, point, &lanes[p.placement as usize]))
                .collect(),
            geometri,
            strekningslengde: whole_meters(ps.iter().map(|p| p.length_m).sum()),
            kommuner,
        })
    }

    /// One segment per part; every part has a geometry (a point or a line on its link).
    fn segments(&self, ps: &[Part], lanes: &[Box<str>]) -> ApiResult<Vec<SegmentDoc>> {
        let point = is_point(ps);
        let mut out = Vec::with_capacity(ps.len());
        for p in ps {
            // a part on a row without a road reference has no segment (v2's segments are
            // pieces of the road-referenced network; clients read `vegreferanse` of each)
            let Some(vegreferanse) = road_ref_of(self.g, p, point) else {
                continue;
            };
            let Some(w) = self.located_wkt(std::slice::from_ref(p))? else {
                continue;
            };
            let l = self.g.segment(p.net_row as usize);
            out.push(SegmentDoc {
                stedfesting: PlacementDoc::new(p, point, &lanes[p.placement as usize]),
                geometri: self.geometry(w, None),
                vegreferanse,
                kommune: l.municipality(),
                fylke: l.county(),
                region: l.region(),
                vegavdeling: l.road_department(),
                strekningslengde: whole_meters(p.length_m),
            });
        }
        Ok(out)
    }

    /// The object at `row` of `data`, ready to serialize.
    pub fn doc(&self, data: &'a TypeData, row: usize) -> ApiResult<ObjectDoc<'a>> {
        let table = &data.table;
        let t = self
            .g
            .catalog
            .object_type(table.type_id)
            .expect("loaded types are catalogue types");
        let object = ObjectRow::new(table, row);
        let id = object.id();
        let inc = self.include;
        let metadata = inc.metadata.then(|| MetadataDoc {
            kind: TypeRefDoc {
                id: t.id,
                navn: &t.name,
            },
            versjon: object.version(),
            startdato: DateText(object.start_date()),
            sist_modifisert: DateTimeText(object.last_modified(), self.revision >= 2),
            sluttdato: object.end_date().map(DateText),
        });
        // the own geometry's WKT is written once, for egenskaper and for geometri
        let own = if (inc.properties && inc.geom_property) || (inc.geometry && inc.geom_derived) {
            self.own_wkt(table, row)?
        } else {
            None
        };
        let egenskaper = if inc.properties {
            let own_text = own.as_ref().map(|w| w.text.as_str());
            Some(self.property_docs_with(t, table, row, own_text)?)
        } else {
            None
        };
        let need_parts = inc.location
            || inc.segments
            || (inc.geometry && inc.geom_derived && object.own_geometry().is_empty());
        let ps = if need_parts {
            self.g.object_parts(table, row, self.segment_by)
        } else {
            Vec::new()
        };
        let geometri = if inc.geometry && inc.geom_derived {
            match own {
                Some(w) => Some(self.geometry(w, Some(true))),
                None => self
                    .located_wkt(&ps)?
                    .map(|w| self.geometry(w, Some(false))),
            }
        } else {
            None
        };
        Ok(ObjectDoc {
            id,
            href: HrefText {
                base: self.s.public_url(),
                type_id: t.id,
                id,
            },
            metadata,
            egenskaper,
            geometri,
            lokasjon: if inc.location {
                Some(self.location(&ps, &table.loc_lanes)?)
            } else {
                None
            },
            relasjoner: inc.relations.then(|| self.relations(table, row)),
            vegsegmenter: if inc.segments {
                Some(self.segments(&ps, &table.loc_lanes)?)
            } else {
                None
            },
        })
    }

    /// The object as a JSON value (for responses that wrap it).
    pub fn object(&self, data: &'a TypeData, row: usize) -> ApiResult<Value> {
        Ok(serde_json::to_value(self.doc(data, row)?).expect("object docs serialize"))
    }

    fn relations(&self, table: &ObjectTable, row: usize) -> RelationsDoc<'a> {
        let cat = self.g.catalog;
        let kind = |t: u32| TypeRefDoc {
            id: t,
            navn: cat.object_type(t).map(|t| t.name.as_str()).unwrap_or(""),
        };
        let mut foreldre = Vec::new();
        let object = ObjectRow::new(table, row);
        if let Some(&(pt, pid)) = self.g.parents.get(&object.id()) {
            foreldre.push(RelatedDoc {
                kind: kind(pt),
                vegobjekter: vec![pid],
            });
        }
        let mut children: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for (child_type, child_id) in object.children() {
            children.entry(child_type).or_default().push(child_id);
        }
        let barn = children
            .into_iter()
            .map(|(t, ids)| RelatedDoc {
                kind: kind(t),
                vegobjekter: ids,
            })
            .collect();
        RelationsDoc { foreldre, barn }
    }
}

/// The road reference of a part; None on a row without one.
fn road_ref_of(g: &Generation, p: &Part, point: bool) -> Option<RoadRefDoc> {
    let r = p.net_row as usize;
    let key = g.segment(r).road_key();
    if !key.has_road_ref() {
        return None;
    }
    let (a, b) = (
        g.meter_at(r, p.from).round() as u32,
        g.meter_at(r, p.to).round() as u32,
    );
    Some(RoadRefDoc::new(&key, a.min(b), a.max(b), point))
}

/// The road system reference of a part; None on a row without one.
fn system_ref_of(g: &Generation, p: &Part, point: bool) -> Option<SystemRefAny> {
    let r = p.net_row as usize;
    let (key, _, _) = g.segment_system_ref(r)?;
    let (a, b) = g.system_metres(r, p.from, p.to);
    Some(if point {
        SystemRefAny::Point(system_ref_point(&SystemPoint { key, meter: a }))
    } else {
        SystemRefAny::Stretch(system_ref_stretch(&key, a, b))
    })
}

/// A point object: every part is a point (its placements carry `posisjon` and its road
/// references `meter`), the same test that makes its located geometry a POINT.
fn is_point(ps: &[Part]) -> bool {
    !ps.is_empty() && ps.iter().all(|p| p.from == p.to)
}

/// stedfestinger: parts on the same link that touch (and have the same lanes, `lanes` being
/// the table's placement lanes) are merged.
fn merged(ps: &[Part], lanes: &[Box<str>]) -> Vec<Part> {
    let mut merged: Vec<Part> = Vec::new();
    for p in ps {
        match merged.last_mut() {
            Some(m)
                if m.link_id == p.link_id
                    && (m.to - p.from).abs() < 1e-12
                    && p.to > p.from
                    && lanes[m.placement as usize] == lanes[p.placement as usize] =>
            {
                m.to = p.to
            }
            _ => merged.push(*p),
        }
    }
    merged
}

/// A page of objects rendered while serializing: each object is built, written and dropped
/// before the next, so no page-sized intermediate exists.
pub struct StreamedObjects<'a> {
    pub render: &'a Render<'a>,
    pub data: &'a TypeData,
    pub rows: &'a [u32],
}

impl StreamedObjects<'_> {
    /// Write the objects as elements of `seq` (a whole page or one chunk of a streamed one).
    pub fn write<S: serde::ser::SerializeSeq>(&self, seq: &mut S) -> Result<(), S::Error> {
        use serde::ser::Error;
        for &r in self.rows {
            let doc = self
                .render
                .doc(self.data, r as usize)
                .map_err(|e| S::Error::custom(e.message))?;
            seq.serialize_element(&doc)?;
        }
        Ok(())
    }
}

impl StreamedObjects<'_> {
    /// The objects as compact JSON, separated by commas, byte for byte what serde writes for
    /// their [`ObjectDoc`]s, when they are light (id, href and metadata at most: the list's
    /// `inkluder=minimum`); false, with nothing written, for any other rendering. The texts
    /// shared by every object (the href up to the id, the type) are escaped once.
    pub fn write_json(&self, out: &mut Vec<u8>) -> bool {
        let inc = self.render.include;
        if inc.properties || inc.relations || inc.location || inc.segments || inc.geometry {
            return false;
        }
        let table = &self.data.table;
        let Some(t) = self.render.g.catalog.object_type(table.type_id) else {
            return false;
        };
        let href = format!(
            "{}{}/vegobjekter/{}/",
            self.render.s.public_url(),
            super::route::READ_BASE,
            t.id
        );
        let kind = TypeRefDoc {
            id: t.id,
            navn: &t.name,
        };
        let (Ok(mut href), Ok(kind)) = (serde_json::to_vec(&href), serde_json::to_vec(&kind))
        else {
            return false;
        };
        href.pop(); // the closing quote: the id and a quote follow
        let mut ids = itoa::Buffer::new();
        for (i, &r) in self.rows.iter().enumerate() {
            let object = ObjectRow::new(table, r as usize);
            let id = ids.format(object.id()).as_bytes();
            out.extend_from_slice(if i == 0 { b"{\"id\":" } else { b",{\"id\":" });
            out.extend_from_slice(id);
            out.extend_from_slice(b",\"href\":");
            out.extend_from_slice(&href);
            out.extend_from_slice(id);
            out.push(b'"');
            if inc.metadata {
                out.extend_from_slice(b",\"metadata\":{\"type\":");
                out.extend_from_slice(&kind);
                out.extend_from_slice(b",\"versjon\":");
                out.extend_from_slice(itoa::Buffer::new().format(object.version()).as_bytes());
                out.extend_from_slice(b",\"startdato\":");
                push_date_json(out, object.start_date());
                out.extend_from_slice(b",\"sist_modifisert\":");
                push_date_time_json(out, object.last_modified(), self.render.revision >= 2);
                if let Some(end) = object.end_date() {
                    out.extend_from_slice(b",\"sluttdato\":");
                    push_date_json(out, end);
                }
                out.push(b'}');
            }
            out.push(b'}');
        }
        true
    }
}

impl Serialize for StreamedObjects<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.rows.len()))?;
        self.write(&mut seq)?;
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::vegref::{link_point_short, link_range_short, RoadKey};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lazy_texts_equal_the_formatters(a in 0.0f64..=1.0, b in 0.0f64..=1.0, link in 1u64..u64::MAX / 2,
                                           m0 in 0u32..500_000, m1 in 0u32..500_000, secs in 0i64..4_000_000_000, t in any::<bool>()) {
            let (from, to) = (a.min(b), a.max(b));
            let expect = if from == to { link_point_short(from, link) } else { link_range_short(from, to, link) };
            prop_assert_eq!(LinkPosText { from, to, link_id: link }.to_string(), expect);
            let key = RoadKey { county: 50, municipality_part: 1, category: b'K', status: b'V', number: 1234, hp: 2 };
            let (lo, hi) = (m0.min(m1), m0.max(m1));
            let expect = if lo == hi { key.point(lo) } else { key.stretch(lo, hi) };
            prop_assert_eq!(RoadRefText { key, from_m: lo, to_m: hi }.to_string(), expect);
            prop_assert_eq!(DateTimeText(secs, t).to_string(), super::super::dto::date_time(secs, t));
            prop_assert_eq!(DateText((secs / 86_400) as i32).to_string(), super::super::dto::date((secs / 86_400) as i32));
        }
    }
}
