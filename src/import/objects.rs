//! Vegobjekter -> one object table per type: real ids, versions, dates, properties mapped
//! through the catalogue by egenskapstype id (enum values by id), placements on the imported
//! sequences, children (barn), the own geometry (a `GeometriEgenskap`). Whatever cannot be
//! stored is counted in the summary.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;

use super::date_days;
use super::summary::Summary;
use super::uberiket::{Geometry, Placement, RoadObject, Value};
use crate::catalog::{ObjectType, PropertyType, ValueKind};
use crate::changeset::model::Property;
use crate::changeset::validate::{geometry_value, GeometryError};
use crate::geo::extent::position_ok;
use crate::geo::Coord3;
use crate::snapshot::columns::{
    ObjectTable, PropertyColumn, DIRECTION_AGAINST, DIRECTION_WITH, OPEN_END,
};

enum Stored {
    Int(i64),
    Float(f64),
    Text(String),
}

struct Row {
    id: u64,
    version: u32,
    start: i32,
    end: i32,
    modified: i64,
    locs: Vec<(u64, f64, f64, u8)>,
    children: Vec<(u32, u64)>,
    values: Vec<(u32, Stored)>,
    /// Own geometry in storage coordinates (empty = none).
    geometry: Vec<Coord3>,
}

/// Objects of one type being collected.
pub struct TypeBuilder {
    ty: &'static ObjectType,
    rows: Vec<Row>,
}

/// A `GeometriEgenskap` of geometry property `p` in storage coordinates (the write path's
/// parser: a POINT for a point property, a LINESTRING for a line property), or why not.
fn own_geometry(p: &PropertyType, g: &Geometry) -> Result<Vec<Coord3>, &'static str> {
    let given = Property {
        type_id: p.id,
        values: vec![format!("srid={};{}", g.srid, g.wkt)],
        ..Default::default()
    };
    geometry_value(p, &given).map_err(|e| match e {
        GeometryError::Coordinates(_) => "srid or coordinates not readable",
        GeometryError::Wkt { .. } => "not valid WKT",
        GeometryError::EmptyPoint { .. } => "an empty POINT",
        GeometryError::WrongKind { .. } => "not the datatype's kind (surfaces are not stored)",
        GeometryError::NonFinite { .. } => "a coordinate that is not a finite number",
        GeometryError::OutsideExtent { .. } => "a coordinate outside the storage extent",
    })
}

fn direction(r: &Option<String>) -> u8 {
    if r.as_deref() == Some("MOT") {
        DIRECTION_AGAINST
    } else {
        DIRECTION_WITH
    }
}

impl TypeBuilder {
    pub fn new(ty: &'static ObjectType) -> Self {
        TypeBuilder {
            ty,
            rows: Vec::new(),
        }
    }

    /// Map one object; returns false (and counts why) when it is not imported.
    pub fn add(&mut self, o: RoadObject, sequences: &HashSet<u64>, summary: &mut Summary) -> bool {
        let t = self.ty.id;
        let Some(validity) = &o.gyldighetsperiode else {
            summary.skip(format!("type {t}: object without gyldighetsperiode"));
            return false;
        };
        let Some(start) = date_days(&validity.startdato) else {
            summary.skip(format!("type {t}: object with a bad startdato"));
            return false;
        };
        let end = match &validity.sluttdato {
            Some(d) => match date_days(d) {
                Some(d) => d,
                None => {
                    summary.skip(format!("type {t}: object with a bad sluttdato"));
                    return false;
                }
            },
            None => OPEN_END,
        };
        let Ok(modified) = chrono::DateTime::parse_from_rfc3339(&o.sist_endret) else {
            summary.skip(format!("type {t}: object with a bad sistEndret"));
            return false;
        };
        // placements: a sving is kept as its start and end points
        let mut all = Vec::new();
        let mut with_lanes = 0usize;
        match &o.stedfesting {
            Some(Placement::StedfestingLinjer { linjer }) => {
                for l in linjer {
                    with_lanes += usize::from(!l.kjorefelt.is_empty());
                    let (a, b) = (
                        l.startposisjon.min(l.sluttposisjon),
                        l.startposisjon.max(l.sluttposisjon),
                    );
                    all.push((l.id, a, b, direction(&l.retning)));
                }
            }
            Some(Placement::StedfestingPunkter { punkter }) => {
                for p in punkter {
                    with_lanes += usize::from(!p.kjorefelt.is_empty());
                    all.push((p.id, p.posisjon, p.posisjon, direction(&p.retning)));
                }
            }
            Some(Placement::StedfestingSving {
                startpunkt,
                sluttpunkt,
            }) => {
                for p in [startpunkt, sluttpunkt] {
                    all.push((p.id, p.posisjon, p.posisjon, direction(&p.retning)));
                }
            }
            Some(Placement::StedfestingMangler) | None => {}
            Some(Placement::Other) => {
                summary.skip(format!("type {t}: stedfesting of an unknown kind"));
            }
        }
        all.retain(|l| {
            let ok = position_ok(l.1) && position_ok(l.2);
            if !ok {
                summary.skip(format!("type {t}: placement with a position outside 0..1"));
            }
            ok
        });
        let sane = all.len();
        let locs: Vec<_> = all
            .into_iter()
            .filter(|l| sequences.contains(&l.0))
            .collect();
        for _ in locs.len()..sane {
            summary.skip(format!(
                "type {t}: placement on a veglenkesekvens absent from the source (or without a current veglenke)"
            ));
        }
        if locs.is_empty() {
            summary.skip(format!(
                "type {t}: object with no placement on the imported network"
            ));
            return false;
        }
        for _ in 0..with_lanes {
            // the placements table has no lane column (v2's `felt` on a stedfesting)
            summary.skip(format!(
                "type {t}: kjorefelt of a placement not stored (placement kept)"
            ));
        }
        let mut values = Vec::new();
        let mut geometry = Vec::new();
        for (key, v) in &o.egenskaper {
            let Some(p) = key.parse::<u32>().ok().and_then(|id| self.ty.property(id)) else {
                summary.skip(format!(
                    "type {t}: egenskapstype {key} not in the catalogue"
                ));
                continue;
            };
            if p.is_geometry() {
                let reason = match v {
                    Value::GeometriEgenskap { verdi } if geometry.is_empty() => {
                        match own_geometry(p, verdi) {
                            Ok(g) => {
                                geometry = g;
                                continue;
                            }
                            Err(why) => why,
                        }
                    }
                    Value::GeometriEgenskap { .. } => "a second own geometry",
                    _ => "not a GeometriEgenskap",
                };
                summary.skip(format!(
                    "type {t}: egenskapstype {key}: own geometry not stored: {reason}"
                ));
                continue;
            }
            let stored = match (p.storage(), v) {
                (ValueKind::Enum, Value::EnumEgenskap { verdi }) => {
                    if u32::try_from(*verdi)
                        .ok()
                        .and_then(|id| p.allowed_value(id))
                        .is_none()
                    {
                        summary.skip(format!(
                            "type {t}: egenskapstype {key}: enum value not in the catalogue"
                        ));
                        continue;
                    }
                    Stored::Int(*verdi)
                }
                (ValueKind::Integer, Value::HeltallEgenskap { verdi }) => Stored::Int(*verdi),
                (ValueKind::Float, Value::FlyttallEgenskap { verdi }) => Stored::Float(*verdi),
                (ValueKind::Float, Value::HeltallEgenskap { verdi }) => {
                    Stored::Float(*verdi as f64)
                }
                (
                    ValueKind::Text,
                    Value::TekstEgenskap { verdi }
                    | Value::DatoEgenskap { verdi }
                    | Value::KortDatoEgenskap { verdi }
                    | Value::TidEgenskap { verdi },
                ) => Stored::Text(verdi.clone()),
                // the catalogue (compiled with rules where sources are silent) says text where
                // upstream sends a number: kept as its decimal text, and counted
                (ValueKind::Text, Value::HeltallEgenskap { verdi }) => {
                    summary.skip(format!("type {t}: egenskapstype {key}: number stored as text (catalogue datatype {}) [kept]", p.datatype_tekst));
                    Stored::Text(verdi.to_string())
                }
                (ValueKind::Text, Value::FlyttallEgenskap { verdi }) => {
                    summary.skip(format!("type {t}: egenskapstype {key}: number stored as text (catalogue datatype {}) [kept]", p.datatype_tekst));
                    Stored::Text(verdi.to_string())
                }
                _ => {
                    summary.skip(format!(
                        "type {t}: egenskapstype {key}: value kind does not match the catalogue's datatype {}",
                        p.datatype_tekst
                    ));
                    continue;
                }
            };
            values.push((p.id, stored));
        }
        let mut children = Vec::new();
        for (child_type, ids) in &o.barn {
            let Ok(ct) = child_type.parse::<u32>() else {
                summary.skip(format!("type {t}: barn under a non-numeric type key"));
                continue;
            };
            children.extend(ids.iter().map(|i| (ct, i.id())));
        }
        self.rows.push(Row {
            id: o.id,
            version: o.versjon,
            start,
            end,
            modified: modified.timestamp(),
            locs,
            children,
            values,
            geometry,
        });
        true
    }

    /// Map a batch of objects in parallel (same result as `add` on each, once `finish` has
    /// sorted the rows).
    pub fn add_batch(
        &mut self,
        batch: Vec<RoadObject>,
        sequences: &HashSet<u64>,
        summary: &mut Summary,
    ) {
        use rayon::prelude::*;
        let ty = self.ty;
        let parts: Vec<(Vec<Row>, Summary)> = batch
            .into_par_iter()
            .chunks(512)
            .map(|chunk| {
                let mut b = TypeBuilder::new(ty);
                let mut s = Summary::default();
                for o in chunk {
                    b.add(o, sequences, &mut s);
                }
                (b.rows, s)
            })
            .collect();
        for (rows, s) in parts {
            self.rows.extend(rows);
            summary.absorb(s);
        }
    }

    pub fn finish(mut self, summary: &mut Summary) -> ObjectTable {
        let t = self.ty.id;
        self.rows
            .sort_by_key(|r| (r.id, std::cmp::Reverse(r.version)));
        let before = self.rows.len();
        self.rows.dedup_by_key(|r| r.id);
        for _ in self.rows.len()..before {
            summary.skip(format!(
                "type {t}: older version of an object read twice (newest kept)"
            ));
        }
        *summary.objects_imported.entry(t).or_default() += self.rows.len();
        let mut table = ObjectTable::new(t);
        // columns in catalogue order, only for properties some object has
        let used: HashSet<u32> = self
            .rows
            .iter()
            .flat_map(|r| r.values.iter().map(|v| v.0))
            .collect();
        let mut columns: BTreeMap<u32, Vec<Option<&Stored>>> = BTreeMap::new();
        for r in &self.rows {
            table.id.push(r.id);
            table.version.push(r.version);
            table.start_date.push(r.start);
            table.end_date.push(r.end);
            table.last_modified.push(r.modified);
            for l in &r.locs {
                table.loc_link.push(l.0);
                table.loc_from.push(l.1);
                table.loc_to.push(l.2);
                table.loc_direction.push(l.3);
            }
            table.loc_offsets.push(table.loc_link.len() as u32);
            table.geom_coords.extend_from_slice(&r.geometry);
            table.geom_offsets.push(table.geom_coords.len() as u32);
            for c in &r.children {
                table.child_type.push(c.0);
                table.child_id.push(c.1);
            }
            table.child_offsets.push(table.child_id.len() as u32);
        }
        for p in self.ty.value_properties().filter(|p| used.contains(&p.id)) {
            let col: Vec<Option<&Stored>> = self
                .rows
                .iter()
                .map(|r| r.values.iter().find(|v| v.0 == p.id).map(|v| &v.1))
                .collect();
            columns.insert(p.id, col);
        }
        for p in self.ty.value_properties() {
            let Some(col) = columns.remove(&p.id) else {
                continue;
            };
            let values: ArrayRef = match p.storage() {
                ValueKind::Float => {
                    let mut b = Float64Builder::new();
                    for v in col {
                        b.append_option(match v {
                            Some(Stored::Float(f)) => Some(*f),
                            _ => None,
                        });
                    }
                    Arc::new(b.finish())
                }
                ValueKind::Enum | ValueKind::Integer => {
                    let mut b = Int64Builder::new();
                    for v in col {
                        b.append_option(match v {
                            Some(Stored::Int(i)) => Some(*i),
                            _ => None,
                        });
                    }
                    Arc::new(b.finish())
                }
                _ => {
                    let mut b = StringBuilder::new();
                    for v in col {
                        b.append_option(match v {
                            Some(Stored::Text(s)) => Some(s.as_str()),
                            _ => None,
                        });
                    }
                    Arc::new(b.finish())
                }
            };
            table.properties.push(PropertyColumn {
                property_id: p.id,
                values,
            });
        }
        table
    }
}
