//! The road objects that represent the areas (`vegobjekt` of `/omrader/*`): one object per
//! region (534), county (945), road department (537), municipality (946), contract area (580)
//! and national route (704), in every dataset, with the fixed ids of `AreaKind::object_id`.
//!
//! Geometry as the catalogue allows: the area's polygons as the own geometry ("Geometri,
//! flate") for every type that has that property; the national routes, which have none, are
//! placed along the links of their roads. County and municipality objects (stedfesting PUNKT)
//! are placed at the network position nearest to the area's centre point, when the dataset
//! has a road there; the other kinds (stedfesting LINJE) carry no road placement, since a
//! placement on every link of a region would copy the network into one object.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, StringArray};
use geo::MultiPolygon;

use super::network::GeneratedNetwork;
use crate::area::{AreaKind, Areas};
use crate::catalog::Catalog;
use crate::geo::linref::project;
use crate::geo::surface;
use crate::snapshot::columns::{
    Days, ObjectTable, PropertyColumn, RoadNetwork, Seconds, DIRECTION_WITH, OPEN_END,
};

/// One area object before it becomes a table row.
struct AreaObject {
    id: u64,
    shape: Option<MultiPolygon<f64>>,
    placements: Vec<(u64, f64, f64)>,
    values: Vec<(u32, Cell)>,
}

enum Cell {
    Int(i64),
    Text(String),
}

/// Rows of the road network (level 0, no connection links) grouped by a key.
fn rows_by<K: std::hash::Hash + Eq>(
    n: &RoadNetwork,
    key: impl Fn(usize) -> K,
) -> HashMap<K, Vec<usize>> {
    let mut out: HashMap<K, Vec<usize>> = HashMap::new();
    for r in 0..n.len() {
        if n.topology_level[r] == 0 && !n.is_connection[r] {
            out.entry(key(r)).or_default().push(r);
        }
    }
    out
}

/// The network position nearest to (x, y) among `rows`: (link id, position).
fn nearest_position(n: &RoadNetwork, rows: &[usize], x: f64, y: f64) -> Option<(u64, f64)> {
    let mut best: Option<(f64, u64, f64)> = None;
    for &r in rows {
        let (f, d) = project(n.geometry(r), x, y);
        if best.is_none_or(|(bd, _, _)| d < bd) {
            let pos = n.from_pos[r] + (n.to_pos[r] - n.from_pos[r]) * f;
            best = Some((d, n.link_id[r], (pos * 1e8).round() / 1e8));
        }
    }
    best.map(|(_, link, pos)| (link, pos))
}

/// Placements along `rows` (sorted by link id, position), contiguous rows of a link merged.
fn line_placements(n: &RoadNetwork, rows: &[usize]) -> Vec<(u64, f64, f64)> {
    let mut out: Vec<(u64, f64, f64)> = Vec::new();
    for &r in rows {
        let (link, from, to) = (n.link_id[r], n.from_pos[r], n.to_pos[r]);
        match out.last_mut() {
            Some(last) if last.0 == link && (last.2 - from).abs() < 1e-9 => last.2 = to,
            _ => out.push((link, from, to)),
        }
    }
    out
}

fn enum_id(catalog: &Catalog, type_id: u32, property: u32, name_prefix: &str) -> Option<Cell> {
    catalog
        .object_type(type_id)?
        .property(property)?
        .allowed_values
        .as_ref()?
        .iter()
        .find(|v| v.name.starts_with(name_prefix))
        .map(|v| Cell::Int(v.id as i64))
}

fn table(
    kind: AreaKind,
    mut objects: Vec<AreaObject>,
    start: Days,
    modified: Seconds,
) -> ObjectTable {
    objects.sort_by_key(|o| o.id);
    let mut t = ObjectTable::new(kind.object_type());
    let mut property_ids: Vec<u32> = objects
        .iter()
        .flat_map(|o| o.values.iter().map(|(p, _)| *p))
        .collect();
    property_ids.sort_unstable();
    property_ids.dedup();
    for o in &objects {
        t.id.push(o.id);
        t.version.push(1);
        t.start_date.push(start);
        t.end_date.push(OPEN_END);
        t.last_modified.push(modified);
        for &(link, from, to) in &o.placements {
            t.loc_link.push(link);
            t.loc_from.push(from);
            t.loc_to.push(to);
            t.loc_direction.push(DIRECTION_WITH);
            t.loc_lanes.push(Box::default());
        }
        t.loc_offsets.push(t.loc_link.len() as u32);
        if let Some(shape) = &o.shape {
            // whole meters: the embedded polygons are simplified far beyond that, and whole
            // numbers keep the files small
            t.geom_coords.extend(
                surface::encode(shape)
                    .into_iter()
                    .map(|[x, y, z]| [x.round(), y.round(), z]),
            );
        }
        t.geom_offsets.push(t.geom_coords.len() as u32);
        t.child_offsets.push(0);
    }
    for pid in property_ids {
        fn cell(o: &AreaObject, pid: u32) -> Option<&Cell> {
            o.values.iter().find(|(p, _)| *p == pid).map(|(_, c)| c)
        }
        let is_int = objects
            .iter()
            .filter_map(|o| cell(o, pid))
            .next()
            .is_some_and(|c| matches!(c, Cell::Int(_)));
        let values: ArrayRef = if is_int {
            Arc::new(
                objects
                    .iter()
                    .map(|o| match cell(o, pid) {
                        Some(Cell::Int(v)) => Some(*v),
                        _ => None,
                    })
                    .collect::<Int64Array>(),
            )
        } else {
            Arc::new(
                objects
                    .iter()
                    .map(|o| match cell(o, pid) {
                        Some(Cell::Text(v)) => Some(v.clone()),
                        _ => None,
                    })
                    .collect::<StringArray>(),
            )
        };
        t.properties.push(PropertyColumn {
            property_id: pid,
            values,
        });
    }
    t
}

/// The six area object tables. `start` is the day the objects start (the 2024 division), or
/// the day the newest link they are placed on started.
pub fn generate(
    catalog: &Catalog,
    areas: &Areas,
    net: &GeneratedNetwork,
    start: Days,
) -> Vec<ObjectTable> {
    let n = &net.network;
    let modified = start as i64 * 86_400;
    let mut link_start: HashMap<u64, Days> = HashMap::new();
    for r in 0..n.len() {
        let s = link_start.entry(n.link_id[r]).or_insert(n.start_date[r]);
        *s = (*s).max(n.start_date[r]);
    }
    let objects = AreaObjects {
        catalog,
        areas,
        n,
        by_municipality: rows_by(n, |r| n.municipality[r]),
        by_county: rows_by(n, |r| n.county[r]),
    };
    let tables = vec![
        table(AreaKind::Region, objects.regions(), start, modified),
        table(AreaKind::County, objects.counties(), start, modified),
        table(
            AreaKind::RoadDepartment,
            objects.departments(),
            start,
            modified,
        ),
        table(
            AreaKind::Municipality,
            objects.municipalities(),
            start,
            modified,
        ),
        table(AreaKind::Contract, objects.contracts(), start, modified),
        table(AreaKind::Route, objects.routes(), start, modified),
    ];
    tables
        .into_iter()
        .map(|t| after_links(t, &link_start))
        .collect()
}

/// `t` with every object starting no earlier than the links it is placed on (an area's
/// object got its placements when its newest link opened).
fn after_links(mut t: ObjectTable, link_start: &HashMap<u64, Days>) -> ObjectTable {
    for r in 0..t.len() {
        let newest = t
            .placements(r)
            .filter_map(|p| link_start.get(&t.loc_link[p]).copied())
            .max();
        if let Some(day) = newest.filter(|&d| d > t.start_date[r]) {
            t.start_date[r] = day;
            t.last_modified[r] = t.last_modified[r].max(day as i64 * 86_400);
        }
    }
    t
}

/// What the area objects are made from: the catalogue, the areas and the network (its rows
/// per municipality and per county).
struct AreaObjects<'a> {
    catalog: &'a Catalog,
    areas: &'a Areas,
    n: &'a RoadNetwork,
    by_municipality: HashMap<u16, Vec<usize>>,
    by_county: HashMap<u8, Vec<usize>>,
}

/// The values that are known (a `None` is left out).
fn known(values: Vec<(u32, Option<Cell>)>) -> Vec<(u32, Cell)> {
    values
        .into_iter()
        .filter_map(|(p, c)| c.map(|c| (p, c)))
        .collect()
}

impl AreaObjects<'_> {
    fn utm33(&self, type_id: u32, pid: u32) -> Option<Cell> {
        enum_id(self.catalog, type_id, pid, "UTM sone 33 (EUREF89)")
    }

    /// A point placement at the network position nearest the area's interior point.
    fn centre_placement(
        &self,
        shape: &MultiPolygon<f64>,
        rows: Option<&Vec<usize>>,
    ) -> Vec<(u64, f64, f64)> {
        let centre = || {
            let (x, y) = Areas::interior_point(shape)?;
            let (link, pos) = nearest_position(self.n, rows?, x, y)?;
            Some(vec![(link, pos, pos)])
        };
        centre().unwrap_or_default()
    }

    fn regions(&self) -> Vec<AreaObject> {
        let areas = self.areas;
        areas
            .regions
            .iter()
            .map(|r| AreaObject {
                id: AreaKind::Region.object_id(r.number as u32),
                shape: Some(areas.region_shape(r.number)),
                placements: vec![],
                values: known(vec![
                    (4580, Some(Cell::Int(r.number as i64))),
                    (4581, Some(Cell::Text(r.name.clone()))),
                    (8147, self.utm33(534, 8147)),
                ]),
            })
            .collect()
    }

    fn counties(&self) -> Vec<AreaObject> {
        self.areas
            .counties
            .iter()
            .map(|c| AreaObject {
                id: AreaKind::County.object_id(c.number as u32),
                shape: Some(c.shape.clone()),
                placements: self.centre_placement(&c.shape, self.by_county.get(&c.number)),
                values: known(vec![
                    (11764, Some(Cell::Int(c.number as i64))),
                    (11765, Some(Cell::Text(c.name.clone()))),
                    (11768, self.utm33(945, 11768)),
                ]),
            })
            .collect()
    }

    fn departments(&self) -> Vec<AreaObject> {
        let areas = self.areas;
        areas
            .road_departments
            .iter()
            .map(|d| AreaObject {
                id: AreaKind::RoadDepartment.object_id(d.number as u32),
                shape: Some(areas.road_department_shape(d)),
                placements: vec![],
                values: known(vec![
                    (4586, Some(Cell::Int(d.number as i64))),
                    (4587, Some(Cell::Text(d.name.clone()))),
                    (8149, self.utm33(537, 8149)),
                ]),
            })
            .collect()
    }

    fn municipalities(&self) -> Vec<AreaObject> {
        self.areas
            .municipalities
            .iter()
            .map(|m| AreaObject {
                id: AreaKind::Municipality.object_id(m.number as u32),
                shape: Some(m.shape.clone()),
                placements: self.centre_placement(&m.shape, self.by_municipality.get(&m.number)),
                values: known(vec![
                    (11769, Some(Cell::Int(m.number as i64))),
                    (11770, Some(Cell::Text(m.name.clone()))),
                    (11773, self.utm33(946, 11773)),
                ]),
            })
            .collect()
    }

    fn contracts(&self) -> Vec<AreaObject> {
        let areas = self.areas;
        areas
            .contracts
            .iter()
            .map(|c| AreaObject {
                id: AreaKind::Contract.object_id(c.number),
                shape: Some(areas.contract_shape(c)),
                placements: vec![],
                values: known(vec![
                    (5174, Some(Cell::Text(c.name.clone()))),
                    (5175, Some(Cell::Text(c.number.to_string()))),
                    (8832, enum_id(self.catalog, 580, 8832, &c.kind)),
                ]),
            })
            .collect()
    }

    /// Routes: line placements over every row of the roads (category, number, county) they cover.
    fn routes(&self) -> Vec<AreaObject> {
        let n = self.n;
        let route_rows = rows_by(n, |r| (n.road_category[r], n.road_number[r], n.county[r]));
        self.areas
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut rows: Vec<usize> = route_rows
                    .iter()
                    .filter(|((cat, num, county), _)| r.covers(*cat, *num, *county))
                    .flat_map(|(_, rows)| rows.iter().copied())
                    .collect();
                rows.sort_unstable();
                AreaObject {
                    id: AreaKind::Route.object_id(i as u32),
                    shape: None,
                    placements: line_placements(n, &rows),
                    values: known(vec![
                        (6835, enum_id(self.catalog, 704, 6835, &r.period)),
                        (11953, Some(Cell::Text(r.name.clone()))),
                        (6827, r.number.parse::<i64>().ok().map(Cell::Int)),
                        (6822, Some(Cell::Text(r.name.clone()))),
                        (6828, Some(Cell::Text(r.description.clone()))),
                    ]),
                }
            })
            .collect()
    }
}
