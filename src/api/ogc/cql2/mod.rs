//! OGC API Features Part 3 filters: CQL2 (`filter`, `filter-lang=cql2-text|cql2-json`,
//! `filter-crs`) over an object collection's rows.
//!
//! - Queryables (`queryables`): the type's property types by name (non-geometry, not
//!   sensitive; a name is matched case-insensitively, a property type's id also names it),
//!   `nvdbId`, `versjon`, `startdato` and `sluttdato` (the object's validity, dates; an open
//!   `sluttdato` is null) and `geometry` (the feature's geometry: own, else located).
//!   Enumerated properties take the value the features show: the allowed value's name, or
//!   its number for numeric enumerations.
//! - Predicates: `= <> < > <= >=`, `AND`/`OR`/`NOT`, `[NOT] LIKE` (`%`, `_`, `\` escape,
//!   case-sensitive), `[NOT] IN`, `[NOT] BETWEEN`, `IS [NOT] NULL`, the spatial functions
//!   `S_INTERSECTS S_DISJOINT S_WITHIN S_CONTAINS S_TOUCHES S_CROSSES S_OVERLAPS S_EQUALS`
//!   over WKT (text) or GeoJSON (JSON) geometries and `BBOX(...)`, in CRS84 unless
//!   `filter-crs` names another of the served systems, and the temporal functions
//!   `T_AFTER T_BEFORE T_CONTAINS T_DISJOINT T_DURING T_EQUALS T_FINISHEDBY T_FINISHES
//!   T_INTERSECTS T_MEETS T_METBY T_OVERLAPPEDBY T_OVERLAPS T_STARTEDBY T_STARTS` over
//!   `DATE(...)`, `TIMESTAMP(...)` (its date), `INTERVAL(a, b)` (`'..'` open) and the date
//!   queryables, e.g. `T_INTERSECTS(INTERVAL(startdato, sluttdato), INTERVAL('2019-01-01',
//!   '2019-12-31'))` (an open `sluttdato` is an open end).
//! - Logic: three-valued (Kleene), as CQL2 says: a comparison with a missing value is
//!   unknown, `NOT unknown` is unknown, and only true rows are answered. A spatial
//!   function on a feature without geometry is false.
//! - Evaluation (`eval.rs`): comparisons of an enumerated property with a literal through
//!   the type's value bitmaps, `S_INTERSECTS` with a literal through the type's R-tree, the
//!   rest row by row on the type's table.
//! - Limits: at most 8,192 characters, 32 nesting levels, 256 predicates and 10,000
//!   coordinates; beyond them, or on any syntax or type error: 400 in the OGC exception shape.
//!
//! `text.rs` parses cql2-text, `json.rs` cql2-json, both into [`Expr`] through a [`Binder`]
//! that names the queryables and moves geometries into storage coordinates.

mod eval;
mod json;
mod text;

use super::error::{OgcError, OgcResult};
use crate::api::geojson::Crs;
use crate::catalog::ObjectType;
use crate::snapshot::columns::Days;

pub(super) use eval::{select, sort};

pub(super) const MAX_CHARS: usize = 8_192;
pub(super) const MAX_DEPTH: usize = 32;
pub(super) const MAX_PREDICATES: usize = 256;
pub(super) const MAX_COORDS: usize = 10_000;

/// The queryables that are not property types.
pub(super) const GEOMETRY: &str = "geometry";

/// A queryable of a collection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Prop {
    /// A property type's value, by its id.
    Value(u32),
    NvdbId,
    Version,
    Start,
    End,
    Geometry,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Operand {
    Prop(Prop),
    Number(f64),
    Text(String),
    Bool(bool),
    Day(Days),
    /// `'..'`: an open end of an interval.
    Open,
    Interval(Box<Operand>, Box<Operand>),
    /// In storage coordinates (UTM 33).
    Geometry(geo::Geometry<f64>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpatialOp {
    Intersects,
    Disjoint,
    Within,
    Contains,
    Touches,
    Crosses,
    Overlaps,
    Equals,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TemporalOp {
    After,
    Before,
    Contains,
    Disjoint,
    During,
    Equals,
    FinishedBy,
    Finishes,
    Intersects,
    Meets,
    MetBy,
    OverlappedBy,
    Overlaps,
    StartedBy,
    Starts,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Bool(bool),
    Cmp(CmpOp, Operand, Operand),
    /// Text, pattern.
    Like(Operand, Operand),
    Between(Operand, Operand, Operand),
    In(Operand, Vec<Operand>),
    IsNull(Operand),
    Spatial(SpatialOp, Operand, Operand),
    Temporal(TemporalOp, Operand, Operand),
}

impl SpatialOp {
    pub(super) fn from_name(name: &str) -> Option<SpatialOp> {
        use SpatialOp::*;
        Some(match name.to_ascii_uppercase().as_str() {
            "S_INTERSECTS" => Intersects,
            "S_DISJOINT" => Disjoint,
            "S_WITHIN" => Within,
            "S_CONTAINS" => Contains,
            "S_TOUCHES" => Touches,
            "S_CROSSES" => Crosses,
            "S_OVERLAPS" => Overlaps,
            "S_EQUALS" => Equals,
            _ => return None,
        })
    }
}

impl TemporalOp {
    pub(super) fn from_name(name: &str) -> Option<TemporalOp> {
        use TemporalOp::*;
        Some(match name.to_ascii_uppercase().as_str() {
            "T_AFTER" => After,
            "T_BEFORE" => Before,
            "T_CONTAINS" => Contains,
            "T_DISJOINT" => Disjoint,
            "T_DURING" => During,
            "T_EQUALS" => Equals,
            "T_FINISHEDBY" => FinishedBy,
            "T_FINISHES" => Finishes,
            "T_INTERSECTS" => Intersects,
            "T_MEETS" => Meets,
            "T_METBY" => MetBy,
            "T_OVERLAPPEDBY" => OverlappedBy,
            "T_OVERLAPS" => Overlaps,
            "T_STARTEDBY" => StartedBy,
            "T_STARTS" => Starts,
            _ => return None,
        })
    }
}

/// The filter language of `filter-lang`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
    Text,
    Json,
}

impl Lang {
    pub(super) fn parse(s: Option<&str>) -> OgcResult<Lang> {
        match s.map(str::trim) {
            // `cql-text`: the draft's name, which GDAL before 3.7 sends
            None | Some("cql2-text") | Some("cql-text") => Ok(Lang::Text),
            Some("cql2-json") => Ok(Lang::Json),
            Some(other) => Err(OgcError::bad(format!(
                "filter-lang must be cql2-text or cql2-json, not '{}'",
                crate::api::error::echoed(other)
            ))),
        }
    }
}

/// Names the queryables of a type and moves coordinates in `crs` into storage.
pub(super) struct Binder<'a> {
    pub t: &'a ObjectType,
    pub crs: Crs,
}

impl Binder<'_> {
    pub(super) fn prop(&self, name: &str) -> OgcResult<Prop> {
        if let Some(p) = self.t.property_types.iter().find(|p| {
            !p.is_geometry()
                && p.sensitivity == 0
                && (p.name.eq_ignore_ascii_case(name) || p.id.to_string() == name)
        }) {
            return Ok(Prop::Value(p.id));
        }
        Ok(match name {
            "nvdbId" => Prop::NvdbId,
            "versjon" => Prop::Version,
            "startdato" => Prop::Start,
            "sluttdato" => Prop::End,
            GEOMETRY => Prop::Geometry,
            _ => {
                return Err(OgcError::bad(format!(
                    "filter: '{}' is not a queryable of {} (see its queryables)",
                    crate::api::error::echoed(name),
                    self.t.name
                )))
            }
        })
    }

    /// A coordinate as written (x, y in the filter's CRS; latitude first for EPSG:4326) in
    /// storage coordinates.
    pub(super) fn coord(&self, a: f64, b: f64) -> OgcResult<geo::Coord<f64>> {
        let (x, y) = if self.crs.lat_lon { (b, a) } else { (a, b) };
        let (x, y) = crate::geo::srid::to_storage(self.crs.srid, x, y)
            .map_err(|e| OgcError::bad(format!("filter: coordinate ({a} {b}): {e}")))?;
        Ok(geo::Coord { x, y })
    }

    /// `BBOX(x0, y0, x1, y1)` (or 6 numbers) as a polygon in storage coordinates.
    pub(super) fn bbox(&self, v: &[f64]) -> OgcResult<geo::Geometry<f64>> {
        let (a, b, c, d) = match v {
            [a, b, c, d] | [a, b, _, c, d, _] => (*a, *b, *c, *d),
            _ => return Err(OgcError::bad("filter: BBOX takes 4 or 6 numbers")),
        };
        let ring: Vec<geo::Coord<f64>> = [(a, b), (c, b), (c, d), (a, d), (a, b)]
            .iter()
            .map(|&(x, y)| self.coord(x, y))
            .collect::<OgcResult<_>>()?;
        Ok(geo::Geometry::Polygon(geo::Polygon::new(
            geo::LineString(ring),
            vec![],
        )))
    }
}

/// A filter's polygon from its rings (storage coordinates, the exterior first, at least one),
/// refused when a ring crosses or touches itself (`geo::area_polygon::self_touch`; the
/// coordinates' limit bounds the check).
pub(super) fn simple_polygon(mut rings: Vec<geo::LineString<f64>>) -> OgcResult<geo::Polygon<f64>> {
    for (i, ring) in rings.iter().enumerate() {
        if let Some(t) = crate::geo::area_polygon::self_touch(&ring.0) {
            return Err(OgcError::bad(format!(
                "filter: ring {} of a polygon crosses or touches itself at EPSG:25833 ({:.3} {:.3}); \
                 a polygon must be simple",
                i + 1,
                t.at.x,
                t.at.y
            )));
        }
    }
    let exterior = rings.remove(0);
    let polygon = geo::Polygon::new(exterior, rings);
    if let Some(f) =
        crate::geo::area_polygon::polygon_fault(&geo::MultiPolygon(vec![polygon.clone()]))
    {
        return Err(OgcError::bad(format!(
            "filter: a polygon's rings are not valid together: {}; holes must lie inside the exterior and outside each other, and rings may meet at points only",
            match f {
                crate::geo::area_polygon::Fault::RingsMeet { a, b, at } => format!(
                    "rings {} and {} cross or share a stretch at EPSG:25833 ({:.3} {:.3})",
                    a.1 + 1,
                    b.1 + 1,
                    at.x,
                    at.y
                ),
                crate::geo::area_polygon::Fault::HoleOutside { hole, .. } => {
                    format!("ring {} (a hole) lies outside the exterior", hole + 1)
                }
                crate::geo::area_polygon::Fault::HolesNested { .. } => {
                    "a hole lies inside another hole".to_string()
                }
                crate::geo::area_polygon::Fault::PartsOverlap { .. } => {
                    "parts overlap".to_string()
                }
            }
        )));
    }
    Ok(polygon)
}

/// Parse `filter` in `lang` against the queryables of `b`.
pub(super) fn parse(text: &str, lang: Lang, b: &Binder) -> OgcResult<Expr> {
    if text.chars().count() > MAX_CHARS {
        return Err(OgcError::bad(format!(
            "filter: longer than {MAX_CHARS} characters"
        )));
    }
    match lang {
        Lang::Text => text::parse(text, b),
        Lang::Json => json::parse(text, b),
    }
}

/// `sortby`: comma-separated queryables, each with an optional `+` (ascending, the default; a
/// `+` left unescaped in a URL arrives as a space) or `-` (descending); not `geometry`. A
/// name with a comma is written in double quotes (`-"Dekkebredde, gj.snitt"`).
pub(super) fn sort_keys(text: &str, b: &Binder) -> OgcResult<Vec<(Prop, bool)>> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => parts.push(String::new()),
            c => {
                if let Some(part) = parts.last_mut() {
                    part.push(c)
                }
            }
        }
    }
    let mut out = Vec::new();
    for k in &parts {
        let k = k.trim();
        let (name, descending) = match k.strip_prefix('-') {
            Some(n) => (n, true),
            None => (k.strip_prefix('+').unwrap_or(k), false),
        };
        let p = b
            .prop(name.trim())
            .map_err(|e| OgcError::bad(e.description.replacen("filter:", "sortby:", 1)))?;
        if p == Prop::Geometry {
            return Err(OgcError::bad("sortby: geometry is not sortable"));
        }
        out.push((p, descending));
    }
    if out.len() > 16 {
        return Err(OgcError::bad("sortby: at most 16 keys"));
    }
    Ok(out)
}

/// A date literal: `YYYY-MM-DD` or an RFC 3339 timestamp (its date as written).
pub(super) fn day(text: &str) -> OgcResult<Days> {
    let t = text.trim();
    let date = if t.len() > 10 {
        chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|_| OgcError::bad(format!("filter: '{t}' is not a timestamp")))?;
        t.get(..10).unwrap_or(t)
    } else {
        t
    };
    super::super::dated::parse_day(date)
        .map_err(|_| OgcError::bad(format!("filter: '{t}' is not a date")))
}

fn bad<T>(msg: impl Into<String>) -> OgcResult<T> {
    Err(OgcError::bad(format!("filter: {}", msg.into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::srid::Srid;

    fn binder() -> Binder<'static> {
        Binder {
            t: crate::catalog::Catalog::embedded()
                .object_type(105)
                .expect("105"),
            crs: Crs::new(Srid::Utm33Etrs89),
        }
    }

    #[test]
    fn text_and_json_parse_to_the_same_tree() {
        let b = binder();
        for (text, json) in [
            (
                "Fartsgrense = 80 AND NOT nvdbId < 5",
                r#"{"op":"and","args":[{"op":"=","args":[{"property":"Fartsgrense"},80]},{"op":"not","args":[{"op":"<","args":[{"property":"nvdbId"},5]}]}]}"#,
            ),
            (
                "fartsgrense IN (60, 70) OR \"Vedtaksnummer\" LIKE 'A%'",
                r#"{"op":"or","args":[{"op":"in","args":[{"property":"Fartsgrense"},[60,70]]},{"op":"like","args":[{"property":"Vedtaksnummer"},"A%"]}]}"#,
            ),
            (
                "S_INTERSECTS(geometry, POLYGON((0 0, 10 0, 10 10, 0 0)))",
                r#"{"op":"s_intersects","args":[{"property":"geometry"},{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,0]]]}]}"#,
            ),
            (
                "T_INTERSECTS(INTERVAL(startdato, sluttdato), INTERVAL('2019-01-01', '..'))",
                r#"{"op":"t_intersects","args":[{"interval":[{"property":"startdato"},{"property":"sluttdato"}]},{"interval":["2019-01-01",".."]}]}"#,
            ),
            (
                "Fartsgrense BETWEEN 50 AND 70 AND Vedtaksnummer IS NULL",
                r#"{"op":"and","args":[{"op":"between","args":[{"property":"Fartsgrense"},50,70]},{"op":"isNull","args":[{"property":"Vedtaksnummer"}]}]}"#,
            ),
        ] {
            let a = parse(text, Lang::Text, &b).expect(text);
            let j = parse(json, Lang::Json, &b).expect(json);
            assert_eq!(a, j, "{text}");
        }
    }

    #[test]
    fn limits_and_mistakes_are_400() {
        let b = binder();
        let deep = format!("{}nvdbId = 1{}", "(".repeat(40), ")".repeat(40));
        let many = vec!["nvdbId = 1"; 300].join(" OR ");
        let nots = format!("{}nvdbId = 1", "NOT ".repeat(40));
        for bad in [
            deep.as_str(),
            many.as_str(),
            nots.as_str(),
            "",
            "nvdbId =",
            "nvdbId = 1 nvdbId",
            "nosuch = 1",
            "'unterminated",
            "S_INTERSECTS(geometry, POLYGON((0 0, 1)))",
            "T_AFTER(startdato, DATE('2019-02-30'))",
            "nvdbId = 1 AND",
        ] {
            let e = parse(bad, Lang::Text, &b).expect_err(bad);
            assert_eq!(e.status.as_u16(), 400, "{bad}");
        }
        for bad in [
            "[",
            "{}",
            r#"{"op":"=","args":[1]}"#,
            r#"{"op":"x","args":[]}"#,
            "null",
        ] {
            let e = parse(bad, Lang::Json, &b).expect_err(bad);
            assert_eq!(e.status.as_u16(), 400, "{bad}");
        }
        assert!(Lang::parse(Some("sql")).is_err());
    }

    #[test]
    fn a_polygon_that_crosses_itself_is_400() {
        let b = binder();
        for (text, lang) in [
            (
                "S_INTERSECTS(geometry, POLYGON((0 0, 10 10, 10 0, 0 10, 0 0)))",
                Lang::Text,
            ),
            (
                r#"{"op":"s_intersects","args":[{"property":"geometry"},{"type":"Polygon","coordinates":[[[0,0],[10,10],[10,0],[0,10],[0,0]]]}]}"#,
                Lang::Json,
            ),
            (
                "S_WITHIN(geometry, MULTIPOLYGON(((20 0, 30 0, 30 9, 20 9)), ((0 0, 10 10, 10 0, 0 10))))",
                Lang::Text,
            ),
        ] {
            let e = parse(text, lang, &b).expect_err(text);
            assert_eq!(e.status.as_u16(), 400, "{text}");
            assert!(
                e.description.contains("crosses or touches itself at EPSG:25833 (5.000 5.000)"),
                "{text}: {}",
                e.description
            );
        }
        // the same ring in order is a polygon
        let ok = "S_INTERSECTS(geometry, POLYGON((0 0, 10 0, 10 10, 0 10, 0 0)))";
        assert!(parse(ok, Lang::Text, &b).is_ok());
    }
}
