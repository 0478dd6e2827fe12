//! The road object as the v2 API shows it, built from the columnar tables.
//!
//! `vegsegmenter` (shape not given by the spec): one element per placement part on a road link
//! segment: `{veglenkeid, fra_posisjon, til_posisjon, kortform, retning, vegreferanse (with
//! fra_meter/til_meter), kommune, fylke, region, vegavdeling, strekningslengde, geometri}`.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::Array;
use serde_json::{json, Map, Value};

use super::dto::{date, road_ref_stretch};
use super::error::ApiResult;
use super::AppState;
use crate::catalog::{datatype, ObjectType, ValueKind};
use crate::geo::linref::{point_at, sub_line};
use crate::geo::srid::Srid;
use crate::geo::{wkt, Coord3};
use crate::query::network::{meter_exact, row_key};
use crate::query::objects::{parts, ObjectFilter, Part};
use crate::query::vegref::{link_point_short, link_range_short};
use crate::snapshot::columns::{ObjectTable, DIRECTION_AGAINST, OPEN_END};
use crate::snapshot::generation::{Generation, TypeData};

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
    /// `minimum` is id, href and metadata. `alle` is everything but vegsegmenter.
    pub fn from_words(words: &[String], geometry_words: &[String], default_all: bool) -> Include {
        let has = |w: &str| words.iter().any(|x| x == w);
        let all = has("alle") || (words.is_empty() && default_all);
        let mut inc = Include {
            metadata: all || has("metadata") || has("minimum"),
            properties: all || has("egenskaper"),
            relations: all || has("relasjoner"),
            location: all || has("lokasjon"),
            segments: has("vegsegmenter"),
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
}

fn simplify(coords: Vec<Coord3>, tolerance: Option<f64>) -> Vec<Coord3> {
    use geo::SimplifyIdx;
    match tolerance {
        Some(t) if coords.len() > 2 => {
            let ls: geo::LineString<f64> = coords
                .iter()
                .map(|c| (c[0], c[1]))
                .collect::<Vec<_>>()
                .into();
            ls.simplify_idx(t).into_iter().map(|i| coords[i]).collect()
        }
        _ => coords,
    }
}

fn last_modified(secs: i64, revision: u8) -> String {
    let t = chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .naive_utc();
    if revision >= 2 {
        t.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

impl Render<'_> {
    pub fn href(&self, type_id: u32, id: u64) -> String {
        self.s.href(&format!("/vegobjekter/{type_id}/{id}"))
    }

    fn geometry(&self, wkt_text: String) -> Value {
        json!({ "wkt": wkt_text, "srid": self.srid.code() })
    }

    /// Located geometry of the parts: a point, or lines (contiguous parts joined).
    fn located_wkt(&self, ps: &[Part]) -> ApiResult<Option<String>> {
        let n = &self.g.network;
        if ps.is_empty() {
            return Ok(None);
        }
        if ps.iter().all(|p| p.from == p.to) {
            let p = ps[0];
            let r = p.net_row as usize;
            let span = (n.to_pos[r] - n.from_pos[r]).max(1e-12);
            let c = point_at(n.geometry(r), (p.from - n.from_pos[r]) / span);
            return Ok(Some(wkt::point_z(self.srid, &c)?));
        }
        let mut lines: Vec<Vec<Coord3>> = Vec::new();
        for p in ps.iter().filter(|p| p.to > p.from) {
            let r = p.net_row as usize;
            let span = (n.to_pos[r] - n.from_pos[r]).max(1e-12);
            let piece = sub_line(
                n.geometry(r),
                (p.from - n.from_pos[r]) / span,
                (p.to - n.from_pos[r]) / span,
            );
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
        let lines: Vec<Vec<Coord3>> = lines
            .into_iter()
            .map(|l| simplify(l, self.tolerance_m))
            .collect();
        Ok(Some(wkt::lines_z(self.srid, &lines)?))
    }

    fn own_wkt(&self, table: &ObjectTable, row: usize) -> ApiResult<Option<String>> {
        Ok(match table.own_geometry(row) {
            [] => None,
            [p] => Some(wkt::point_z(self.srid, p)?),
            line => Some(wkt::linestring_z(
                self.srid,
                &simplify(line.to_vec(), self.tolerance_m),
            )?),
        })
    }

    /// The property values (without sensitive ones), in catalogue order.
    pub fn properties(
        &self,
        t: &ObjectType,
        table: &ObjectTable,
        row: usize,
    ) -> ApiResult<Vec<Value>> {
        let mut out = Vec::new();
        for p in &t.property_types {
            if p.sensitivity > 0 {
                continue;
            }
            let head = |verdi: Value| {
                let mut m = Map::with_capacity(6);
                m.insert("id".into(), json!(p.id));
                m.insert("navn".into(), json!(p.name));
                m.insert("datatype".into(), json!(p.datatype));
                m.insert("datatype_tekst".into(), json!(p.datatype_tekst));
                m.insert("verdi".into(), verdi);
                m
            };
            if p.is_geometry() {
                if !self.include.geom_property {
                    continue;
                }
                let fits = match table.own_geometry(row).len() {
                    0 => false,
                    1 => p.datatype == datatype::GEOM_POINT,
                    _ => p.datatype == datatype::GEOM_LINE,
                };
                if fits && t.geometry_property(p.datatype).map(|g| g.id) == Some(p.id) {
                    out.push(Value::Object(head(json!(self.own_wkt(table, row)?))));
                }
                continue;
            }
            // only properties with a value: look the column up before building anything
            let Some(col) = table.property(p.id) else {
                continue;
            };
            let a = &col.values;
            if a.is_null(row) {
                continue;
            }
            let mut v = match p.storage() {
                ValueKind::Enum => {
                    let id = a.as_primitive::<Int64Type>().value(row) as u32;
                    let Some(av) = p.allowed_value(id) else {
                        continue;
                    };
                    let mut v = head(match av.number {
                        Some(num) if p.datatype == datatype::ENUM_NUMBER => json!(num),
                        _ => json!(av.name),
                    });
                    v.insert("enum_id".into(), json!(id));
                    v
                }
                ValueKind::Integer => head(json!(a.as_primitive::<Int64Type>().value(row))),
                ValueKind::Float => head(json!(a.as_primitive::<Float64Type>().value(row))),
                ValueKind::Text | ValueKind::Geometry => {
                    head(json!(a.as_string::<i32>().value(row)))
                }
            };
            if let Some(u) = &p.unit {
                v.insert(
                    "enhet".into(),
                    json!({ "id": u.id, "navn": u.name, "kortnavn": u.short_name }),
                );
            }
            out.push(Value::Object(v));
        }
        Ok(out)
    }

    fn location(&self, ps: &[Part]) -> ApiResult<Value> {
        let n = &self.g.network;
        let areas = self.g.areas;
        let mut kommuner: Vec<u16> = ps
            .iter()
            .map(|p| n.municipality[p.net_row as usize])
            .collect();
        kommuner.sort_unstable();
        kommuner.dedup();
        let uniq = |f: &dyn Fn(usize) -> u8| {
            let mut v: Vec<u8> = ps.iter().map(|p| f(p.net_row as usize)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut contracts: Vec<u32> = kommuner
            .iter()
            .flat_map(|&m| areas.contracts_of(m).iter().copied())
            .collect();
        contracts.sort_unstable();
        contracts.dedup();
        let mut routes: Vec<u32> = ps
            .iter()
            .flat_map(|p| {
                let r = p.net_row as usize;
                areas
                    .routes_of(n.road_category[r], n.road_number[r], n.county[r])
                    .collect::<Vec<_>>()
            })
            .collect();
        routes.sort_unstable();
        routes.dedup();
        let refs: Vec<Value> = ps
            .iter()
            .map(|p| {
                let r = p.net_row as usize;
                let (a, b) = (
                    meter_exact(n, r, p.from).round() as u32,
                    meter_exact(n, r, p.to).round() as u32,
                );
                road_ref_stretch(&row_key(n, r), a.min(b), a.max(b))
            })
            .collect();
        let mut v = json!({
            "kommuner": kommuner,
            "fylker": uniq(&|r| n.county[r]),
            "regioner": uniq(&|r| n.region[r]),
            "vegavdelinger": uniq(&|r| n.road_department[r]),
            "kontraktsområder": contracts.iter().map(|&c| { let c = &areas.contracts[c as usize]; json!({ "nummer": c.number, "navn": c.name }) }).collect::<Vec<_>>(),
            "riksvegruter": routes.iter().map(|&i| { let r = &areas.routes[i as usize]; json!({ "nummer": r.number, "navn": r.name, "periode": r.period }) }).collect::<Vec<_>>(),
            "vegreferanser": refs,
            "stedfestinger": placements_json(ps),
        });
        if self.include.geometry && self.include.geom_location {
            if let Some(w) = self.located_wkt(ps)? {
                v["geometri"] = self.geometry(w);
            }
        }
        v["strekningslengde"] = json!(round3(ps.iter().map(|p| p.length_m).sum()));
        Ok(v)
    }

    fn segments(&self, ps: &[Part]) -> ApiResult<Vec<Value>> {
        let n = &self.g.network;
        ps.iter()
            .map(|p| {
                let r = p.net_row as usize;
                let (a, b) = (meter_exact(n, r, p.from).round() as u32, meter_exact(n, r, p.to).round() as u32);
                let mut v = json!({
                    "veglenkeid": p.link_id,
                    "fra_posisjon": p.from,
                    "til_posisjon": p.to,
                    "kortform": if p.from == p.to { link_point_short(p.from, p.link_id) } else { link_range_short(p.from, p.to, p.link_id) },
                    "retning": if p.direction == DIRECTION_AGAINST { "MOT" } else { "MED" },
                    "vegreferanse": road_ref_stretch(&row_key(n, r), a.min(b), a.max(b)),
                    "kommune": n.municipality[r],
                    "fylke": n.county[r],
                    "region": n.region[r],
                    "vegavdeling": n.road_department[r],
                    "strekningslengde": round3(p.length_m),
                });
                if let Some(w) = self.located_wkt(std::slice::from_ref(p))? {
                    v["geometri"] = self.geometry(w);
                }
                Ok(v)
            })
            .collect()
    }

    /// The object at `row` of `data`.
    pub fn object(&self, data: &TypeData, row: usize) -> ApiResult<Value> {
        let table = &data.table;
        let t = self
            .g
            .catalog
            .object_type(table.type_id)
            .expect("loaded types are catalogue types");
        let id = table.id[row];
        let mut v = Map::new();
        v.insert("id".into(), json!(id));
        v.insert("href".into(), json!(self.href(t.id, id)));
        let inc = self.include;
        if inc.metadata {
            let mut m = json!({
                "type": { "id": t.id, "navn": t.name },
                "versjon": table.version[row],
                "startdato": date(table.start_date[row]),
                "sist_modifisert": last_modified(table.last_modified[row], self.revision),
            });
            if table.end_date[row] != OPEN_END {
                m["sluttdato"] = json!(date(table.end_date[row]));
            }
            v.insert("metadata".into(), m);
        }
        if inc.properties {
            v.insert(
                "egenskaper".into(),
                Value::Array(self.properties(t, table, row)?),
            );
        }
        let need_parts = inc.location
            || inc.segments
            || (inc.geometry && inc.geom_derived && table.own_geometry(row).is_empty());
        let ps = if need_parts {
            parts(self.g, table, row, self.segment_by)
        } else {
            Vec::new()
        };
        if inc.geometry && inc.geom_derived {
            let own = self.own_wkt(table, row)?;
            let (w, own_flag) = match own {
                Some(w) => (Some(w), true),
                None => (self.located_wkt(&ps)?, false),
            };
            if let Some(w) = w {
                v.insert(
                    "geometri".into(),
                    json!({ "wkt": w, "srid": self.srid.code(), "egengeometri": own_flag }),
                );
            }
        }
        if inc.location {
            v.insert("lokasjon".into(), self.location(&ps)?);
        }
        if inc.relations {
            v.insert("relasjoner".into(), self.relations(table, row));
        }
        if inc.segments {
            v.insert("vegsegmenter".into(), Value::Array(self.segments(&ps)?));
        }
        Ok(Value::Object(v))
    }

    fn relations(&self, table: &ObjectTable, row: usize) -> Value {
        let cat = self.g.catalog;
        let name = |t: u32| {
            cat.object_type(t)
                .map(|t| t.name.clone())
                .unwrap_or_default()
        };
        let mut parents = Vec::new();
        if let Some(&(pt, pid)) = self.g.parents.get(&table.id[row]) {
            parents.push(json!({ "type": { "id": pt, "navn": name(pt) }, "vegobjekter": [pid] }));
        }
        let mut children: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for c in table.children(row) {
            children
                .entry(table.child_type[c])
                .or_default()
                .push(table.child_id[c]);
        }
        let barn: Vec<Value> = children
            .into_iter()
            .map(|(t, ids)| json!({ "type": { "id": t, "navn": name(t) }, "vegobjekter": ids }))
            .collect();
        json!({ "foreldre": parents, "barn": barn })
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// stedfestinger: parts on the same link that touch are merged.
fn placements_json(ps: &[Part]) -> Vec<Value> {
    let mut merged: Vec<Part> = Vec::new();
    for p in ps {
        match merged.last_mut() {
            Some(m) if m.link_id == p.link_id && (m.to - p.from).abs() < 1e-12 && p.to > p.from => {
                m.to = p.to
            }
            _ => merged.push(*p),
        }
    }
    merged
        .iter()
        .map(|p| {
            json!({
                "veglenkeid": p.link_id,
                "fra_posisjon": p.from,
                "til_posisjon": p.to,
                "kortform": if p.from == p.to { link_point_short(p.from, p.link_id) } else { link_range_short(p.from, p.to, p.link_id) },
                "retning": if p.direction == DIRECTION_AGAINST { "MOT" } else { "MED" },
            })
        })
        .collect()
}
