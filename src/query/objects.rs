//! Road object queries: which rows of a type a set of filters selects, and each object's
//! placement parts (clipped to the area filter when segmenting), from which location, geometry
//! and lengths are derived.

use std::borrow::Cow;
use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::Array;
use roaring::RoaringBitmap;

use super::attributes::NetworkAttributeFilter;
use super::egenskap::{self, Cell, Expr, Rows};
use super::network::{select_rows, NetworkAreaFilter};
use super::on_route::RouteIntervals;
use super::vegref::{LinkRef, RoadRefFilter};
use crate::area::AreaKind;
use crate::catalog::ValueKind;
use crate::generation::feature::{Geometry, Piece};
use crate::generation::{Generation, TypeData};
use crate::geo::area_polygon::AreaPolygon;
use crate::geo::map_extent::MapExtent;
use crate::ids::{ObjectId, TypeId};
use crate::index::bitmaps::part_length;
use crate::index::network::row_key;
use crate::snapshot::columns::ObjectTable;

/// Filters of a road-object query (already parsed and resolved).
#[derive(Debug, Clone, Default)]
pub struct ObjectFilter {
    /// region / fylke / vegavdeling / kommune: OR-ed with each other.
    pub any_of: Vec<(AreaKind, u32)>,
    /// Contract areas (indexes into Areas::contracts), OR-ed, AND-ed onto the rest.
    pub contracts: Vec<u32>,
    /// National routes (indexes into Areas::routes), OR-ed, AND-ed onto the rest.
    pub routes: Vec<u32>,
    pub roads: Vec<RoadRefFilter>,
    /// Map extent: objects whose geometry (own, else located) intersects it.
    pub bbox: Option<MapExtent>,
    /// veglenke: stands alone.
    pub links: Vec<LinkRef>,
    pub egenskap: Option<Expr>,
    /// overlapp: (type, optional filter), AND-ed.
    pub overlaps: Vec<(u32, Option<Expr>)>,
    /// Network attributes (typeveg, detaljniva, trafikantgruppe, adskiltelop, sideanlegg,
    /// konnekteringslenker): an object qualifies by a placement on a passing row; stretch
    /// objects are cut to those rows when segmenting, as by the area filters.
    pub network: NetworkAttributeFilter,
    /// polygon: objects whose geometry (own, else located) intersects it; stretch objects are
    /// cut to it when segmenting.
    pub polygon: Option<std::sync::Arc<AreaPolygon>>,
    /// ider: the objects with these ids (None: no such filter).
    pub ids: Option<Vec<u64>>,
    /// endret_etter: objects last modified after this time (seconds).
    pub modified_after: Option<i64>,
    /// rute: the objects on these link intervals (a route's segments); stretch objects are
    /// cut to them when segmenting (`on_route`).
    pub route: Option<RouteIntervals>,
}

impl ObjectFilter {
    /// Filters that cut stretch objects when segmenting (v2: region, road department, county,
    /// municipality, road category/status/hp, contract area, national route; and the network
    /// attributes).
    pub fn segments(&self) -> bool {
        !self.any_of.is_empty()
            || !self.contracts.is_empty()
            || !self.routes.is_empty()
            || !self.roads.is_empty()
            || !self.network.is_empty()
            || self.polygon.is_some()
            || self.route.is_some()
    }

    /// The one area the filter selects by, when nothing else narrows or cuts (what statistics
    /// answer from the index: that area's rows and summed length).
    pub fn only_area(&self) -> Option<(AreaKind, u32)> {
        match self.any_of.as_slice() {
            [k] if self.nothing_but_areas() => Some(*k),
            _ => None,
        }
    }

    /// Nothing but `any_of` (municipality, county, region, road department) in the filter.
    fn nothing_but_areas(&self) -> bool {
        self.polygon.is_none() && self.nothing_but_areas_and_polygon()
    }

    /// Nothing but `any_of` and the polygon in the filter.
    fn nothing_but_areas_and_polygon(&self) -> bool {
        self.contracts.is_empty()
            && self.routes.is_empty()
            && self.roads.is_empty()
            && self.links.is_empty()
            && self.egenskap.is_none()
            && self.overlaps.is_empty()
            && self.bbox.is_none()
            && self.route.is_none()
            && !self.by_ids_or_time()
            && self.network.is_empty()
    }

    /// Does the filter select by object ids or last modification?
    fn by_ids_or_time(&self) -> bool {
        self.ids.is_some() || self.modified_after.is_some()
    }

    /// Can a list page be decided lazily ([`super::page::select_page`]): a polygon, and
    /// nothing applied after it that costs per candidate (a route, overlaps)?
    pub fn pages_lazily(&self) -> bool {
        self.polygon.is_some() && self.route.is_none() && self.overlaps.is_empty()
    }

    /// Does network row `r` pass the segmenting filters?
    pub fn row_passes(&self, g: &Generation, r: usize) -> bool {
        let n = &g.network;
        let any_ok = self.any_of.is_empty()
            || self.any_of.iter().any(|&(k, v)| match k {
                AreaKind::Municipality => n.municipality[r] as u32 == v,
                AreaKind::County => n.county[r] as u32 == v,
                AreaKind::Region => n.region[r] as u32 == v,
                AreaKind::RoadDepartment => n.road_department[r] as u32 == v,
                _ => false,
            });
        let contract_ok = self.contracts.is_empty()
            || g.areas
                .contracts_of(n.municipality[r])
                .iter()
                .any(|c| self.contracts.contains(c));
        let route_ok = self.routes.is_empty()
            || g.areas
                .routes_of(n.road_category[r], n.road_number[r], n.county[r])
                .any(|i| self.routes.contains(&i));
        let road_ok = self.roads.is_empty() || {
            let key = row_key(n, r);
            self.roads
                .iter()
                .any(|f| f.matches(&key, n.from_m[r], n.to_m[r]))
        };
        any_ok && contract_ok && route_ok && road_ok && self.network.passes(n, r)
    }
}

/// The values of one type's table, for the egenskap evaluator.
pub struct TableRows<'a> {
    pub g: &'a Generation,
    pub data: &'a TypeData,
}

impl Rows for TableRows<'_> {
    fn len(&self) -> u32 {
        self.data.table.len() as u32
    }
    fn cell(&self, property: u32, row: u32) -> Cell<'_> {
        let Some(col) = self.data.table.property(property) else {
            return Cell::Null;
        };
        let (a, r) = (&col.values, row as usize);
        if a.is_null(r) {
            return Cell::Null;
        }
        if let Some(v) = a.as_primitive_opt::<Int64Type>() {
            return Cell::Number(v.value(r) as f64);
        }
        if let Some(v) = a.as_primitive_opt::<Float64Type>() {
            return Cell::Number(v.value(r));
        }
        match a.as_string_opt::<i32>() {
            Some(v) => Cell::Text(v.value(r)),
            None => Cell::Null,
        }
    }
    fn enum_rows(&self, property: u32, value: u32) -> Option<Cow<'_, RoaringBitmap>> {
        let t = self.g.catalog.object_type(self.data.table.type_id)?;
        if t.property(property)?.storage() != ValueKind::Enum {
            return None;
        }
        Some(match self.data.index().enums.get(&(property, value)) {
            Some(b) => Cow::Borrowed(b),
            None => Cow::Owned(RoaringBitmap::new()),
        })
    }
    fn rows_with_child(&self, child_type: u32, expr: &Expr) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        let Some(child) = self.g.objects.get(&child_type) else {
            return out;
        };
        let hits = egenskap::evaluate(
            expr,
            &TableRows {
                g: self.g,
                data: child,
            },
        );
        let table = &self.data.table;
        for c in hits.iter() {
            if let Some(&(pt, pid)) = self.g.parents.get(&child.table.id[c as usize]) {
                if pt == table.type_id {
                    if let Some(r) = table.row_of(pid) {
                        out.insert(r as u32);
                    }
                }
            }
        }
        out
    }
}

/// Objects whose placements overlap any of the given network rows.
fn overlapping_rows(
    g: &Generation,
    table: &ObjectTable,
    candidates: &RoaringBitmap,
    rows: &RoaringBitmap,
) -> RoaringBitmap {
    let n = &g.network;
    candidates
        .iter()
        .filter(|&o| {
            table.placements(o as usize).any(|p| {
                n.rows_overlapping(table.loc_link[p], table.loc_from[p], table.loc_to[p])
                    .any(|r| rows.contains(r as u32))
            })
        })
        .collect()
}

/// The objects of `candidates` whose geometry — their own, else the located geometry of the
/// feature view ([`Generation::feature`]) — intersects map extent `e`. The type's spatial index
/// holds each object under its geometry's box: an object whose box meets the extent's outer
/// envelope is a candidate, one whose box lies wholly inside the extent's inner rectangle is in
/// without more work (every vertex of its geometry is), and only the rest are tested exactly
/// ([`meets_exactly`]).
fn in_extent(
    g: &Generation,
    data: &TypeData,
    candidates: &RoaringBitmap,
    e: &MapExtent,
) -> RoaringBitmap {
    let Some(envelope) = e.storage_envelope() else {
        return RoaringBitmap::new();
    };
    let index = data.object_index(g);
    let (mut inside, mut edge) = (Vec::new(), Vec::new());
    for (row, b) in index.boxes_meeting(envelope) {
        if !candidates.contains(row) {
            continue;
        }
        if e.surely_holds_box(b) {
            inside.push(row);
        } else {
            edge.push(row);
        }
    }
    inside.sort_unstable();
    edge.sort_unstable();
    let mut ticker = super::budget::Ticker::new();
    let mut out: RoaringBitmap = edge
        .into_iter()
        .take_while(|_| !ticker.exhausted())
        .filter(|&o| meets_exactly(g, &data.table, o as usize, e))
        .collect();
    out |= RoaringBitmap::from_sorted_iter(inside).expect("sorted, no duplicates");
    out
}

/// Does the geometry of object `o` — its own, else its located geometry — intersect map
/// extent `e`? An object with its own geometry is tested on that geometry alone. A located one
/// is in without building its geometry when a drawn piece lies on a network row whose every
/// vertex is surely in the rectangle (the piece's points lie on that row); else its located
/// geometry is built and tested.
fn meets_exactly(g: &Generation, table: &ObjectTable, o: usize, e: &MapExtent) -> bool {
    if let Some(own) = Geometry::from_own(table.own_geometry(o)) {
        return own.meets(e);
    }
    let pieces = g.placement_pieces(table, o, |_| true);
    // the pieces the located geometry is drawn from: the first point when all are points,
    // else the lines
    let points = pieces.iter().all(|p| p.from == p.to);
    let drawn = |i: usize, p: &Piece| if points { i == 0 } else { p.to > p.from };
    let on_inside_row = pieces
        .iter()
        .enumerate()
        .any(|(i, p)| drawn(i, p) && e.surely_holds(g.network.geometry(p.net_row)));
    on_inside_row
        || g.located_geometry(&pieces)
            .is_some_and(|geom| geom.meets(e))
}

/// Intervals per link of a type's selected objects (for overlapp).
fn intervals(table: &ObjectTable, rows: &RoaringBitmap) -> HashMap<u64, Vec<(f64, f64)>> {
    let mut m: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
    for o in rows.iter() {
        for p in table.placements(o as usize) {
            m.entry(table.loc_link[p])
                .or_default()
                .push((table.loc_from[p], table.loc_to[p]));
        }
    }
    m
}

/// All rows of a type.
pub fn all_rows(data: &TypeData) -> RoaringBitmap {
    let mut b = RoaringBitmap::new();
    b.insert_range(0..data.table.len() as u32);
    b
}

/// The rows of `data` (a type of generation `g`) that the filter selects. A filter on one area
/// and nothing else lends that area's bitmap (no copy: statistikk per kommune is the hot case).
pub fn select<'a>(g: &Generation, data: &'a TypeData, f: &ObjectFilter) -> Cow<'a, RoaringBitmap> {
    select_by(g, data, f, f.polygon.as_deref())
}

/// The rows of `data` that `f` selects with `polygon` in place of its own (None: by
/// everything but the polygon).
pub(super) fn select_by<'a>(
    g: &Generation,
    data: &'a TypeData,
    f: &ObjectFilter,
    polygon: Option<&AreaPolygon>,
) -> Cow<'a, RoaringBitmap> {
    let table = &data.table;
    let idx = data.index();
    // the hot cases, lent from the index: every row, or one area's
    if f.any_of.len() <= 1 && polygon.is_none() && f.nothing_but_areas_and_polygon() {
        return match f.any_of.first() {
            None => Cow::Borrowed(&idx.all),
            Some(k) => idx
                .areas
                .get(k)
                .map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed),
        };
    }
    if !f.links.is_empty() {
        let mut ticker = super::budget::Ticker::new();
        let rows = all_rows(data)
            .iter()
            .take_while(|_| !ticker.exhausted())
            .filter(|&o| {
                table.placements(o as usize).any(|p| {
                    f.links.iter().any(|l| {
                        l.link_id == table.loc_link[p]
                            && table.loc_from[p] <= l.to
                            && table.loc_to[p] >= l.from
                    })
                })
            })
            .collect::<RoaringBitmap>()
            & with_properties(g, data, f);
        let rows = on_passing_rows(g, table, rows, f);
        return Cow::Owned(by_object(g, data, rows, f, polygon));
    }
    let mut rows: Cow<'a, RoaringBitmap> = match f.any_of.as_slice() {
        [] => Cow::Owned(all_rows(data)),
        [k] => idx
            .areas
            .get(k)
            .map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed),
        several => {
            let mut u = RoaringBitmap::new();
            for k in several {
                if let Some(b) = idx.areas.get(k) {
                    u |= b;
                }
            }
            Cow::Owned(u)
        }
    };
    if f.by_ids_or_time() {
        rows = Cow::Owned(by_ids_and_time(data, rows.into_owned(), f));
    }
    for (kind, list) in [
        (AreaKind::Contract, &f.contracts),
        (AreaKind::Route, &f.routes),
    ] {
        if !list.is_empty() {
            let mut u = RoaringBitmap::new();
            for &c in list {
                if let Some(b) = idx.areas.get(&(kind, c)) {
                    u |= b;
                }
            }
            rows = Cow::Owned(&*rows & &u);
        }
    }
    if let Some(e) = &f.egenskap {
        if !rows.is_empty() {
            rows = Cow::Owned(egenskap::evaluate_in(e, &TableRows { g, data }, &rows));
        }
    }
    if !rows.is_empty() && !f.roads.is_empty() {
        let net = select_rows(
            &g.network,
            &g.network_indexes,
            &g.network_index,
            &NetworkAreaFilter {
                any_of: vec![],
                roads: f.roads.clone(),
                bbox: None,
                attributes: Default::default(),
                polygon: None,
            },
        );
        rows = Cow::Owned(overlapping_rows(g, table, &rows, &net));
    }
    if !rows.is_empty() && !f.network.is_empty() {
        rows = Cow::Owned(on_passing_rows(g, table, rows.into_owned(), f));
    }
    if let Some(e) = &f.bbox {
        if !rows.is_empty() {
            rows = Cow::Owned(in_extent(g, data, &rows, e));
        }
    }
    if let Some(a) = polygon {
        if !rows.is_empty() {
            rows = Cow::Owned(super::polygon::in_polygon(g, data, &rows, a));
        }
    }
    if let Some(route) = &f.route {
        if !rows.is_empty() {
            rows = Cow::Owned(route.select(table, &rows));
        }
    }
    with_overlaps(g, table, rows, f)
}

/// The objects of `rows` that overlap objects of each `overlapp` type (passing its filter).
fn with_overlaps<'a>(
    g: &Generation,
    table: &ObjectTable,
    mut rows: Cow<'a, RoaringBitmap>,
    f: &ObjectFilter,
) -> Cow<'a, RoaringBitmap> {
    for (other_type, filter) in &f.overlaps {
        if rows.is_empty() || super::budget::exhausted() {
            break;
        }
        let Some(other) = g.objects.get(other_type) else {
            rows = Cow::Owned(RoaringBitmap::new());
            break;
        };
        let other_rows = match filter {
            Some(e) => egenskap::evaluate(e, &TableRows { g, data: other }),
            None => all_rows(other),
        };
        let iv = intervals(&other.table, &other_rows);
        let mut ticker = super::budget::Ticker::new();
        rows = Cow::Owned(
            rows.iter()
                .take_while(|_| !ticker.exhausted())
                .filter(|&o| {
                    table.placements(o as usize).any(|p| {
                        iv.get(&table.loc_link[p]).is_some_and(|v| {
                            v.iter()
                                .any(|&(a, b)| a <= table.loc_to[p] && b >= table.loc_from[p])
                        })
                    })
                })
                .collect(),
        );
    }
    rows
}

/// The objects of `rows` that pass `f`'s ids and time, and `polygon`.
fn by_object(
    g: &Generation,
    data: &TypeData,
    rows: RoaringBitmap,
    f: &ObjectFilter,
    polygon: Option<&AreaPolygon>,
) -> RoaringBitmap {
    let rows = by_ids_and_time(data, rows, f);
    match polygon {
        Some(a) if !rows.is_empty() => super::polygon::in_polygon(g, data, &rows, a),
        _ => rows,
    }
}

/// The objects of `rows` that pass `f`'s ids and time.
fn by_ids_and_time(data: &TypeData, mut rows: RoaringBitmap, f: &ObjectFilter) -> RoaringBitmap {
    if let Some(ids) = &f.ids {
        rows &= super::polygon::with_ids(data, ids);
    }
    if let Some(t) = f.modified_after {
        rows = super::polygon::modified_after(data, &rows, t);
    }
    rows
}

/// The objects of `rows` placed on a network row that passes `f`'s network attributes.
fn on_passing_rows(
    g: &Generation,
    table: &ObjectTable,
    rows: RoaringBitmap,
    f: &ObjectFilter,
) -> RoaringBitmap {
    if f.network.is_empty() || rows.is_empty() {
        return rows;
    }
    overlapping_rows(
        g,
        table,
        &rows,
        &f.network.rows(&g.network, &g.network_indexes),
    )
}

fn with_properties(g: &Generation, data: &TypeData, f: &ObjectFilter) -> RoaringBitmap {
    match &f.egenskap {
        Some(e) => egenskap::evaluate(e, &TableRows { g, data }),
        None => all_rows(data),
    }
}

/// A placement part on one network row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Part {
    pub net_row: u32,
    pub link_id: u64,
    pub from: f64,
    pub to: f64,
    pub direction: u8,
    /// The placement's index in the table's placement columns (`loc_*`).
    pub placement: u32,
    pub length_m: f64,
}

/// The parts of object `row`, clipped to the rows passing `f` when `segment` is set.
pub fn parts(
    g: &Generation,
    table: &ObjectTable,
    row: usize,
    f: Option<&ObjectFilter>,
) -> Vec<Part> {
    let n = &g.network;
    let parts = g
        .placement_pieces(table, row, |r| f.is_none_or(|f| f.row_passes(g, r)))
        .into_iter()
        .map(|p| Part {
            net_row: p.net_row as u32,
            link_id: p.link_id,
            from: p.from,
            to: p.to,
            direction: p.direction,
            placement: p.placement as u32,
            length_m: part_length(n, p.net_row, p.from, p.to),
        });
    let parts: Vec<Part> = match f.and_then(|f| f.polygon.as_ref()) {
        Some(a) => cut_parts(g, parts, |p| {
            super::polygon::cut(g, p.net_row as usize, p.from, p.to, a)
        }),
        None => parts.collect(),
    };
    match f.and_then(|f| f.route.as_ref()) {
        Some(route) => cut_parts(g, parts, |p| route.clip(p.link_id, p.from, p.to)),
        None => parts,
    }
}

/// Each of `parts` cut to the position ranges `keep` gives for it (none: the part is dropped),
/// each piece measured on its network row.
fn cut_parts<I: IntoIterator<Item = (f64, f64)>>(
    g: &Generation,
    parts: impl IntoIterator<Item = Part>,
    keep: impl Fn(&Part) -> I,
) -> Vec<Part> {
    let n = &g.network;
    parts
        .into_iter()
        .flat_map(|p| {
            keep(&p).into_iter().map(move |(from, to)| Part {
                from,
                to,
                length_m: part_length(n, p.net_row as usize, from, to),
                ..p
            })
        })
        .collect()
}

/// `statistikk` of a type: how many objects the filter selects, and their length (cut by the
/// segmenting filters when `segment`). Every row or one area alone is read off the type index.
pub fn statistics(g: &Generation, data: &TypeData, f: &ObjectFilter, segment: bool) -> (u64, f64) {
    if f.any_of.len() <= 1 && f.nothing_but_areas() {
        let idx = data.index();
        match f.any_of.first() {
            None => return (data.table.len() as u64, idx.total_length_m),
            Some(k) if segment => {
                let count = idx.areas.get(k).map_or(0, |b| b.len());
                return (count, idx.area_length_m.get(k).copied().unwrap_or(0.0));
            }
            Some(_) => {}
        }
    }
    let rows = select(g, data, f);
    (rows.len(), total_length(g, data, &rows, f, segment))
}

/// Located length of the selected objects (statistikk.strekningslengde).
pub fn total_length(
    g: &Generation,
    data: &TypeData,
    rows: &RoaringBitmap,
    f: &ObjectFilter,
    segment: bool,
) -> f64 {
    let idx = data.index();
    let segmenting = segment && f.segments();
    // every object, uncut (a segmenting filter may select every object and still cut them:
    // a network attribute or a polygon passing a part of each)
    if rows.len() == data.table.len() as u64 && !segmenting {
        return idx.total_length_m;
    }
    if idx.total_length_m == 0.0 {
        // point objects: no length anywhere
        return 0.0;
    }
    if segmenting {
        // one area and nothing else narrowing: precomputed
        if let Some(k) = f.only_area() {
            return idx.area_length_m.get(&k).copied().unwrap_or(0.0);
        }
        rows.iter()
            .map(|o| {
                parts(g, &data.table, o as usize, Some(f))
                    .iter()
                    .map(|p| p.length_m)
                    .sum::<f64>()
            })
            .sum()
    } else {
        rows.iter().map(|o| idx.length_m[o as usize]).sum()
    }
}

/// The road-object queries as methods of the generation they run on.
impl Generation {
    /// The rows of `data` (a type of this generation) that `f` selects.
    pub fn select_objects(&self, data: &TypeData, f: &ObjectFilter) -> RoaringBitmap {
        select(self, data, f).into_owned()
    }

    /// As [`Self::select_objects`], lending an index's bitmap where the filter is one area.
    pub fn selected_rows<'a>(
        &self,
        data: &'a TypeData,
        f: &ObjectFilter,
    ) -> Cow<'a, RoaringBitmap> {
        select(self, data, f)
    }

    /// The placement parts of object `row` of `table`, clipped to `f` when given.
    pub fn object_parts(
        &self,
        table: &ObjectTable,
        row: usize,
        f: Option<&ObjectFilter>,
    ) -> Vec<Part> {
        parts(self, table, row, f)
    }

    /// `statistikk` of a type: count and length of what `f` selects.
    pub fn object_statistics(
        &self,
        data: &TypeData,
        f: &ObjectFilter,
        segment: bool,
    ) -> (u64, f64) {
        statistics(self, data, f, segment)
    }

    /// Located length of the selected objects (statistikk.strekningslengde).
    pub fn objects_length(
        &self,
        data: &TypeData,
        rows: &RoaringBitmap,
        f: &ObjectFilter,
        segment: bool,
    ) -> f64 {
        total_length(self, data, rows, f, segment)
    }
}

impl Generation {
    /// The row of object `id` of type `type_id`, if this generation has it.
    pub fn object_row(&self, type_id: TypeId, id: ObjectId) -> Option<(&TypeData, usize)> {
        let data = self.objects.get(&type_id.0)?;
        let row = data.table.row_of(id.0)?;
        Some((data, row))
    }

    /// The descendants of object `row` of `data`, breadth first, down to `depth` levels
    /// below it (1 = none): each object once, children in stored order.
    pub fn descendants(
        &self,
        data: &TypeData,
        row: usize,
        depth: usize,
    ) -> Vec<(&TypeData, usize)> {
        let mut out = Vec::new();
        let mut level: Vec<(u32, u64)> = vec![(data.table.type_id, data.table.id[row])];
        let mut seen = std::collections::HashSet::new();
        for _ in 1..depth {
            let mut next = Vec::new();
            for &(t, oid) in &level {
                let Some((d, r)) = self.object_row(TypeId(t), ObjectId(oid)) else {
                    continue;
                };
                for c in d.table.children(r) {
                    let (ct, cid) = (d.table.child_type[c], d.table.child_id[c]);
                    if seen.insert(cid) {
                        if let Some(found) = self.object_row(TypeId(ct), ObjectId(cid)) {
                            out.push(found);
                            next.push((ct, cid));
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        out
    }
}

impl TypeData {
    /// The first row whose object id is greater than `id` (rows are in id order).
    pub fn first_row_after_id(&self, id: ObjectId) -> usize {
        self.table.id.partition_point(|&i| i <= id.0)
    }

    /// The object id at `row`.
    pub fn id_at(&self, row: usize) -> ObjectId {
        ObjectId(self.table.id[row])
    }

    /// Number of objects last modified after `after` (seconds).
    pub fn count_modified_after(&self, after: i64) -> u64 {
        self.table
            .last_modified
            .iter()
            .filter(|&&m| m > after)
            .count() as u64
    }

    /// Up to `limit` rows from `first` on whose object was last modified after `after`.
    pub fn rows_modified_after(&self, first: usize, after: i64, limit: usize) -> Vec<u32> {
        (first..self.table.len())
            .filter(|&r| self.table.last_modified[r] > after)
            .take(limit)
            .map(|r| r as u32)
            .collect()
    }
}
