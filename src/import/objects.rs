//! Vegobjekter -> one object table per type: real ids, versions, dates, properties mapped
//! through the catalogue by egenskapstype id (enum values by id), placements on the imported
//! sequences with their lanes (`kjorefelt`, v2's `felt`), children (barn), the own geometry
//! (a `GeometriEgenskap`). Whatever cannot be stored is counted in the summary.
//!
//! Versions: the newest version of an id with a placement on the current network is the
//! current row (as a table of only the newest versions would have it); every other version
//! read goes to the type's history table, placed on the current network and its closed
//! veglenker (an older version open or ending after the next version's start is closed at
//! that start, counted). Versions newer than the current one but placed only on closed
//! veglenker, and a version read twice, are counted and left out.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;

use super::date_days;
use super::summary::Summary;
use super::uberiket::{Geometry, Placement, PointPlacement, RoadObject, Value};
use crate::catalog::{ObjectType, PropertyType, ValueKind};
use crate::changeset::model::Property;
use crate::changeset::validate::{geometry_value, GeometryError};
use crate::geo::extent::position_ok;
use crate::geo::Coord3;
use crate::snapshot::columns::{
    join_lanes, ObjectTable, PropertyColumn, DIRECTION_AGAINST, DIRECTION_WITH, LANE_SEPARATOR,
    OPEN_END,
};

enum Stored {
    Int(i64),
    Float(f64),
    Text(String),
}

/// One placement: link, positions (from ≤ to), direction, stored lanes.
#[derive(Clone)]
struct Loc {
    link: u64,
    from: f64,
    to: f64,
    direction: u8,
    lanes: Box<str>,
}

struct Row {
    id: u64,
    version: u32,
    start: i32,
    end: i32,
    modified: i64,
    /// Placements on the current network (the row can be current when there are any).
    locs: Vec<Loc>,
    /// Placements on the current network or a closed veglenke (a history row's).
    any_locs: Vec<Loc>,
    children: Vec<(u32, u64)>,
    values: Vec<(u32, Stored)>,
    /// Own geometry in storage coordinates (empty = none).
    geometry: Vec<Coord3>,
}

/// The sequences objects can be placed on.
#[derive(Clone, Copy)]
pub struct OnNetwork<'a> {
    /// Sequences of the current network: placements of current rows.
    pub current: &'a HashSet<u64>,
    /// Sequences of the current network or its history: placements of history rows.
    pub any: &'a HashSet<u64>,
}

/// A type's current table (the newest version of each object on the current network) and
/// its history table (every other version kept, in (id, version) order).
pub struct Tables {
    pub current: ObjectTable,
    pub history: ObjectTable,
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

/// Whether an upstream lane code can be stored (joined by `#` into v2's `felt`): not empty,
/// no `#`, no white space or control character.
fn lane_code_ok(code: &str) -> bool {
    !code.is_empty()
        && !code
            .chars()
            .any(|c| c == LANE_SEPARATOR || c.is_whitespace() || c.is_control())
}

/// A placement's `kjorefelt` as stored lanes; codes that cannot be stored are left out and
/// counted.
fn lanes(t: u32, kjorefelt: &[String], summary: &mut Summary) -> Box<str> {
    let codes: Vec<&String> = kjorefelt.iter().filter(|c| lane_code_ok(c)).collect();
    for _ in codes.len()..kjorefelt.len() {
        summary.skip(format!(
            "type {t}: kjorefelt code not stored (empty, or holds '#', white space or a control character; placement kept)"
        ));
    }
    join_lanes(&codes)
}

/// Validity and last change of an object: (start, end or OPEN_END, seconds), or None (counted)
/// when a date is missing or unreadable.
fn dates(t: u32, o: &RoadObject, summary: &mut Summary) -> Option<(i32, i32, i64)> {
    let Some(validity) = &o.gyldighetsperiode else {
        summary.skip(format!("type {t}: object without gyldighetsperiode"));
        return None;
    };
    let Some(start) = date_days(&validity.startdato) else {
        summary.skip(format!("type {t}: object with a bad startdato"));
        return None;
    };
    let end = match &validity.sluttdato {
        Some(d) => match date_days(d) {
            Some(d) => d,
            None => {
                summary.skip(format!("type {t}: object with a bad sluttdato"));
                return None;
            }
        },
        None => OPEN_END,
    };
    let Ok(modified) = chrono::DateTime::parse_from_rfc3339(&o.sist_endret) else {
        summary.skip(format!("type {t}: object with a bad sistEndret"));
        return None;
    };
    Some((start, end, modified.timestamp()))
}

/// Every placement of the object as upstream gives it (a sving as its start and end points),
/// lanes included.
fn given_placements(t: u32, o: &RoadObject, summary: &mut Summary) -> Vec<Loc> {
    let mut all = Vec::new();
    match &o.stedfesting {
        Some(Placement::StedfestingLinjer { linjer }) => {
            for l in linjer {
                all.push(Loc {
                    link: l.id,
                    from: l.startposisjon.min(l.sluttposisjon),
                    to: l.startposisjon.max(l.sluttposisjon),
                    direction: direction(&l.retning),
                    lanes: lanes(t, &l.kjorefelt, summary),
                });
            }
        }
        Some(Placement::StedfestingPunkter { punkter }) => {
            for p in punkter {
                all.push(point_loc(t, p, summary));
            }
        }
        Some(Placement::StedfestingSving {
            startpunkt,
            sluttpunkt,
        }) => {
            for p in [startpunkt, sluttpunkt] {
                all.push(point_loc(t, p, summary));
            }
        }
        Some(Placement::StedfestingMangler) | None => {}
        Some(Placement::Other) => {
            summary.skip(format!("type {t}: stedfesting of an unknown kind"));
        }
    }
    all
}

fn point_loc(t: u32, p: &PointPlacement, summary: &mut Summary) -> Loc {
    Loc {
        link: p.id,
        from: p.posisjon,
        to: p.posisjon,
        direction: direction(&p.retning),
        lanes: lanes(t, &p.kjorefelt, summary),
    }
}

/// The placements kept: positions within 0..1 (the others counted), as (on the current
/// network, on the current network or a closed veglenke); placements on neither are counted.
/// None when neither has any: counted when the version has no placement at all on the
/// imported network (current or history).
fn placements(
    t: u32,
    o: &RoadObject,
    on: OnNetwork,
    summary: &mut Summary,
) -> Option<(Vec<Loc>, Vec<Loc>)> {
    let mut all = given_placements(t, o, summary);
    all.retain(|l| {
        let ok = position_ok(l.from) && position_ok(l.to);
        if !ok {
            summary.skip(format!("type {t}: placement with a position outside 0..1"));
        }
        ok
    });
    let sane = all.len();
    let any: Vec<Loc> = all
        .into_iter()
        .filter(|l| on.any.contains(&l.link))
        .collect();
    let locs: Vec<Loc> = any
        .iter()
        .filter(|l| on.current.contains(&l.link))
        .map(Loc::clone)
        .collect();
    for _ in locs.len()..sane {
        summary.skip(format!(
            "type {t}: placement on a veglenkesekvens absent from the source (or without a current veglenke)"
        ));
    }
    if any.is_empty() {
        summary.skip(format!(
            "type {t}: object with no placement on the imported network"
        ));
        return None;
    }
    Some((locs, any))
}

/// A non-geometry value as stored by the catalogue's storage kind, or None (counted) when it
/// cannot be.
fn stored_value(
    t: u32,
    key: &str,
    p: &PropertyType,
    v: &Value,
    summary: &mut Summary,
) -> Option<Stored> {
    Some(match (p.storage(), v) {
        (ValueKind::Enum, Value::EnumEgenskap { verdi }) => {
            if u32::try_from(*verdi)
                .ok()
                .and_then(|id| p.allowed_value(id))
                .is_none()
            {
                summary.skip(format!(
                    "type {t}: egenskapstype {key}: enum value not in the catalogue"
                ));
                return None;
            }
            Stored::Int(*verdi)
        }
        (ValueKind::Integer, Value::HeltallEgenskap { verdi }) => Stored::Int(*verdi),
        (ValueKind::Float, Value::FlyttallEgenskap { verdi }) => Stored::Float(*verdi),
        (ValueKind::Float, Value::HeltallEgenskap { verdi }) => Stored::Float(*verdi as f64),
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
            return None;
        }
    })
}

/// The daughters (barn) as (type, id); a non-numeric type key is counted.
fn children(t: u32, o: &RoadObject, summary: &mut Summary) -> Vec<(u32, u64)> {
    let mut children = Vec::new();
    for (child_type, ids) in &o.barn {
        let Ok(ct) = child_type.parse::<u32>() else {
            summary.skip(format!("type {t}: barn under a non-numeric type key"));
            continue;
        };
        children.extend(ids.iter().map(|i| (ct, i.id())));
    }
    children
}

impl TypeBuilder {
    pub fn new(ty: &'static ObjectType) -> Self {
        TypeBuilder {
            ty,
            rows: Vec::new(),
        }
    }

    /// Map one version of an object; returns false (and counts why) when it is not kept.
    pub fn add(&mut self, o: RoadObject, on: OnNetwork, summary: &mut Summary) -> bool {
        let t = self.ty.id;
        let Some((start, end, modified)) = dates(t, &o, summary) else {
            return false;
        };
        let Some((locs, any_locs)) = placements(t, &o, on, summary) else {
            return false;
        };
        let (values, geometry) = self.properties(&o, summary);
        let children = children(t, &o, summary);
        self.rows.push(Row {
            id: o.id,
            version: o.versjon,
            start,
            end,
            modified,
            locs,
            any_locs,
            children,
            values,
            geometry,
        });
        true
    }

    /// The object's values by catalogue property, and its own geometry (empty = none); what
    /// cannot be stored is counted.
    fn properties(
        &self,
        o: &RoadObject,
        summary: &mut Summary,
    ) -> (Vec<(u32, Stored)>, Vec<Coord3>) {
        let t = self.ty.id;
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
            if let Some(stored) = stored_value(t, key, p, v, summary) {
                values.push((p.id, stored));
            }
        }
        (values, geometry)
    }

    /// Map a batch of objects in parallel (same result as `add` on each, once `finish` has
    /// sorted the rows).
    pub fn add_batch(&mut self, batch: Vec<RoadObject>, on: OnNetwork, summary: &mut Summary) {
        use rayon::prelude::*;
        let ty = self.ty;
        let parts: Vec<(Vec<Row>, Summary)> = batch
            .into_par_iter()
            .chunks(512)
            .map(|chunk| {
                let mut b = TypeBuilder::new(ty);
                let mut s = Summary::default();
                for o in chunk {
                    b.add(o, on, &mut s);
                }
                (b.rows, s)
            })
            .collect();
        for (rows, s) in parts {
            self.rows.extend(rows);
            summary.absorb(s);
        }
    }

    /// The current and history tables of the versions added (see the module doc).
    pub fn finish(mut self, summary: &mut Summary) -> Tables {
        let t = self.ty.id;
        self.rows
            .sort_by_key(|r| (r.id, std::cmp::Reverse(r.version)));
        let (mut current, mut history) = (Vec::new(), Vec::new());
        let mut rows = std::mem::take(&mut self.rows).into_iter().peekable();
        while let Some(first) = rows.next() {
            let mut group = vec![first];
            while let Some(r) = rows.next_if(|r| r.id == group[0].id) {
                group.push(r);
            }
            let (now, old) = split_versions(t, group, summary);
            current.extend(now);
            history.extend(old);
        }
        *summary.objects_imported.entry(t).or_default() += current.len();
        if !history.is_empty() {
            *summary.versions_in_history.entry(t).or_default() += history.len();
        }
        Tables {
            current: table_of(self.ty, &current),
            history: table_of(self.ty, &history),
        }
    }
}

/// One object's versions (newest first) as its current row (the newest with a placement on
/// the current network) and its history rows (oldest first, each ending at the latest where
/// the next version starts); what is left out is counted.
fn split_versions(t: u32, group: Vec<Row>, summary: &mut Summary) -> (Option<Row>, Vec<Row>) {
    let mut current: Option<Row> = None;
    let mut kept: Vec<Row> = Vec::new();
    let mut newer: Vec<Row> = Vec::new();
    for r in group {
        let seen = current.as_ref().map(|c| c.version) == Some(r.version)
            || kept.last().map(|k| k.version) == Some(r.version)
            || newer.last().map(|k| k.version) == Some(r.version);
        if seen {
            summary.skip(format!(
                "type {t}: version of an object read twice (one kept)"
            ));
        } else if current.is_none() && !r.locs.is_empty() {
            current = Some(r);
        } else if current.is_none() {
            newer.push(r);
        } else {
            kept.push(r);
        }
    }
    if current.is_some() {
        for _ in &newer {
            summary.skip(format!(
                "type {t}: version newer than the current one placed only on closed veglenker (not kept)"
            ));
        }
    } else {
        kept = newer;
    }
    // oldest first; each closed where the next version (kept or current) starts
    kept.reverse();
    let mut next_start = current.as_ref().map(|c| c.start);
    for r in kept.iter_mut().rev() {
        r.locs = std::mem::take(&mut r.any_locs);
        if let Some(next) = next_start {
            if r.end == OPEN_END || r.end > next {
                summary.skip(format!(
                    "type {t}: older version open or ending after the next version's startdato: closed at that startdato [kept]"
                ));
                r.end = next;
            }
        }
        next_start = Some(r.start);
    }
    (current, kept)
}

/// The object table of `rows` (in table order): columns in catalogue order, only for
/// properties some row has.
fn table_of(ty: &ObjectType, rows: &[Row]) -> ObjectTable {
    let t = ty.id;
    let mut table = ObjectTable::new(t);
    let used: HashSet<u32> = rows
        .iter()
        .flat_map(|r| r.values.iter().map(|v| v.0))
        .collect();
    let mut columns: BTreeMap<u32, Vec<Option<&Stored>>> = BTreeMap::new();
    for r in rows {
        table.id.push(r.id);
        table.version.push(r.version);
        table.start_date.push(r.start);
        table.end_date.push(r.end);
        table.last_modified.push(r.modified);
        for l in &r.locs {
            table.loc_link.push(l.link);
            table.loc_from.push(l.from);
            table.loc_to.push(l.to);
            table.loc_direction.push(l.direction);
            table.loc_lanes.push(l.lanes.clone());
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
    for p in ty.value_properties().filter(|p| used.contains(&p.id)) {
        let col: Vec<Option<&Stored>> = rows
            .iter()
            .map(|r| r.values.iter().find(|v| v.0 == p.id).map(|v| &v.1))
            .collect();
        columns.insert(p.id, col);
    }
    for p in ty.value_properties() {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A version of object 1 from `start` to `end`, on the current network when `current`.
    fn version(version: u32, start: i32, end: i32, current: bool) -> Row {
        let loc = || Loc {
            link: 7,
            from: 0.0,
            to: 1.0,
            direction: DIRECTION_WITH,
            lanes: "".into(),
        };
        Row {
            id: 1,
            version,
            start,
            end,
            modified: 0,
            locs: if current { vec![loc()] } else { Vec::new() },
            any_locs: vec![loc()],
            children: Vec::new(),
            values: Vec::new(),
            geometry: Vec::new(),
        }
    }

    #[test]
    fn versions_split_into_the_current_row_and_closed_history_rows() {
        let mut s = Summary::default();
        // newest first, as `finish` sorts them: v5 only on closed veglenker, v4 current,
        // v3 twice, v2 open, v1 ending after v2's start
        let group = vec![
            version(5, 400, OPEN_END, false),
            version(4, 300, OPEN_END, true),
            version(3, 200, 300, true),
            version(3, 200, 300, true),
            version(2, 100, OPEN_END, true),
            version(1, 0, 150, true),
        ];
        let (current, history) = split_versions(105, group, &mut s);
        assert_eq!(current.as_ref().map(|r| r.version), Some(4));
        let got: Vec<(u32, i32, i32)> = history
            .iter()
            .map(|r| (r.version, r.start, r.end))
            .collect();
        assert_eq!(got, vec![(1, 0, 100), (2, 100, 200), (3, 200, 300)]);
        assert!(history.iter().all(|r| r.locs.len() == 1));
        assert_eq!(s.skipped.values().sum::<usize>(), 4, "{:?}", s.skipped);
        // without a version on the current network every version is history, the newest
        // as it is
        let group = vec![version(2, 100, 500, false), version(1, 0, OPEN_END, false)];
        let (current, history) = split_versions(105, group, &mut Summary::default());
        assert!(current.is_none());
        let got: Vec<(u32, i32, i32)> = history
            .iter()
            .map(|r| (r.version, r.start, r.end))
            .collect();
        assert_eq!(got, vec![(1, 0, 100), (2, 100, 500)]);
    }

    #[test]
    fn lane_codes_are_joined_and_unstorable_ones_counted() {
        let mut s = Summary::default();
        let given: Vec<String> = ["1", "", "2#3", "1R1", "a b", "4\u{7}"]
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(&*lanes(591, &given, &mut s), "1#1R1");
        assert_eq!(s.skipped.len(), 1, "{:?}", s.skipped);
        assert_eq!(s.skipped.values().sum::<usize>(), 4);
        assert_eq!(&*lanes(591, &[], &mut s), "");
        assert_eq!(s.skipped.values().sum::<usize>(), 4);
    }
}
