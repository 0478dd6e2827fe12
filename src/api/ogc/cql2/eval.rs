//! Evaluation of a CQL2 filter on a type's rows, in three-valued logic: each node answers
//! the rows where it is true and, when a `NOT` above needs them, the rows where it is false
//! (the rest are unknown). Comparisons of an enumerated property with literals go through
//! the type's value bitmaps, `S_INTERSECTS` with a literal through its R-tree, the rest
//! row by row.

use std::borrow::Cow;
use std::cmp::Ordering;

use geo::{BoundingRect, Intersects, Relate};
use roaring::RoaringBitmap;

use super::{CmpOp, Expr, Operand, Prop, SpatialOp, TemporalOp};
use crate::catalog::{datatype, ObjectType, ValueKind};
use crate::generation::feature::Geometry;
use crate::generation::{Generation, TypeData};
use crate::query::egenskap::{Cell, Rows};
use crate::query::objects::TableRows;
use crate::snapshot::columns::OPEN_END;

/// A value of an operand on one row.
#[derive(Debug, Clone, PartialEq)]
enum Val<'a> {
    Null,
    Num(f64),
    Text(Cow<'a, str>),
    Bool(bool),
    /// Days, both ends included; an instant is (d, d), open ends are the extremes.
    Span(i64, i64),
    Geom(Cow<'a, geo::Geometry<f64>>),
}

struct Ctx<'a> {
    g: &'a Generation,
    data: &'a TypeData,
    t: &'a ObjectType,
    rows: TableRows<'a>,
}

/// The rows of `within` (rows of `data`, a type of `g`) where `e` is true.
pub(in crate::api::ogc) fn select(
    g: &Generation,
    data: &TypeData,
    t: &ObjectType,
    e: &Expr,
    within: &RoaringBitmap,
) -> RoaringBitmap {
    let c = Ctx {
        g,
        data,
        t,
        rows: TableRows { g, data },
    };
    c.eval(e, within, false).0
}

/// The rows of `rows` in `sortby` order: by each key in turn (missing values last, or first
/// when descending), then by row (the collection's order).
pub(in crate::api::ogc) fn sort(
    g: &Generation,
    data: &TypeData,
    t: &ObjectType,
    keys: &[(Prop, bool)],
    rows: &RoaringBitmap,
) -> Vec<u32> {
    let c = Ctx {
        g,
        data,
        t,
        rows: TableRows { g, data },
    };
    let ops: Vec<Operand> = keys.iter().map(|(p, _)| Operand::Prop(*p)).collect();
    let mut keyed: Vec<(Vec<Val>, u32)> = rows
        .iter()
        .map(|r| (ops.iter().map(|o| c.value(o, r)).collect(), r))
        .collect();
    keyed.sort_by(|(a, ra), (b, rb)| {
        for (i, (_, descending)) in keys.iter().enumerate() {
            let o = order(&a[i], &b[i]);
            let o = if *descending { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        ra.cmp(rb)
    });
    keyed.into_iter().map(|(_, r)| r).collect()
}

/// The sort order of two values of one queryable: missing ones after the rest.
fn order(a: &Val, b: &Val) -> Ordering {
    match (a, b) {
        (Val::Null, Val::Null) => Ordering::Equal,
        (Val::Null, _) => Ordering::Greater,
        (_, Val::Null) => Ordering::Less,
        (Val::Num(x), Val::Num(y)) => x.total_cmp(y),
        (Val::Text(x), Val::Text(y)) => x.cmp(y),
        (Val::Span(x, _), Val::Span(y, _)) => x.cmp(y),
        (Val::Num(_), _) => Ordering::Less,
        (_, Val::Num(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

type Tri = (RoaringBitmap, Option<RoaringBitmap>);

impl Ctx<'_> {
    fn eval(&self, e: &Expr, within: &RoaringBitmap, need_false: bool) -> Tri {
        match e {
            Expr::And(v) if !need_false => {
                let mut acc = within.clone();
                for x in v {
                    if acc.is_empty() {
                        break;
                    }
                    acc = self.eval(x, &acc, false).0;
                }
                (acc, None)
            }
            Expr::And(v) => {
                let (mut t, mut f) = (within.clone(), RoaringBitmap::new());
                for x in v {
                    let scope = within - &f;
                    let (tx, fx) = self.eval(x, &scope, true);
                    t &= tx;
                    f |= fx.unwrap_or_default();
                }
                (t, Some(f))
            }
            Expr::Or(v) => {
                let (mut t, mut f) = (RoaringBitmap::new(), within.clone());
                for x in v {
                    let scope = within - &t;
                    let (tx, fx) = self.eval(x, &scope, need_false);
                    t |= tx;
                    if let Some(fx) = fx {
                        f &= fx;
                    }
                }
                (t, need_false.then_some(f))
            }
            Expr::Not(x) => {
                let (t, f) = self.eval(x, within, true);
                (f.unwrap_or_default(), need_false.then_some(t))
            }
            Expr::Bool(true) => (within.clone(), Some(RoaringBitmap::new())),
            Expr::Bool(false) => (RoaringBitmap::new(), Some(within.clone())),
            // a leaf's false rows are made only when asked for
            leaf => {
                if let Some(r) = self.by_enum(leaf, within, need_false) {
                    return r;
                }
                if let Some(r) = self.by_rtree(leaf, within, need_false) {
                    return r;
                }
                let (mut t, mut f) = (RoaringBitmap::new(), RoaringBitmap::new());
                for row in within {
                    match self.row(leaf, row) {
                        Some(true) => t.insert(row),
                        Some(false) if need_false => f.insert(row),
                        _ => false,
                    };
                }
                (t, need_false.then_some(f))
            }
        }
    }

    /// A comparison, `IN` or `BETWEEN` of an enumerated property with literals: the allowed
    /// values it holds for, through the value bitmaps.
    fn by_enum(&self, e: &Expr, within: &RoaringBitmap, need_false: bool) -> Option<Tri> {
        let prop = match e {
            Expr::Cmp(_, Operand::Prop(Prop::Value(p)), b) if is_literal(b) => *p,
            Expr::Cmp(_, a, Operand::Prop(Prop::Value(p))) if is_literal(a) => *p,
            Expr::In(Operand::Prop(Prop::Value(p)), v) if v.iter().all(is_literal) => *p,
            Expr::Between(Operand::Prop(Prop::Value(p)), lo, hi)
                if is_literal(lo) && is_literal(hi) =>
            {
                *p
            }
            _ => return None,
        };
        let p = self.t.property(prop)?;
        if p.storage() != ValueKind::Enum {
            return None;
        }
        let index = self.data.index();
        let (mut t, mut f) = (RoaringBitmap::new(), RoaringBitmap::new());
        for av in p.allowed_values.iter().flatten() {
            let Some(rows) = index.enums.get(&(prop, av.id)) else {
                continue;
            };
            let v = enum_value(p.datatype, av);
            match self.leaf(e, &|o| match o {
                Operand::Prop(Prop::Value(q)) if *q == prop => v.clone(),
                other => literal(other),
            }) {
                Some(true) => t |= rows,
                Some(false) if need_false => f |= rows,
                _ => {}
            }
        }
        Some((t & within, need_false.then(|| f & within)))
    }

    /// `S_INTERSECTS` of the geometry with a literal: the rows the R-tree finds near it,
    /// then the exact test.
    fn by_rtree(&self, e: &Expr, within: &RoaringBitmap, need_false: bool) -> Option<Tri> {
        let lit = match e {
            Expr::Spatial(
                SpatialOp::Intersects,
                Operand::Prop(Prop::Geometry),
                Operand::Geometry(l),
            )
            | Expr::Spatial(
                SpatialOp::Intersects,
                Operand::Geometry(l),
                Operand::Prop(Prop::Geometry),
            ) => l,
            _ => return None,
        };
        let Some(r) = lit.bounding_rect() else {
            return Some((RoaringBitmap::new(), need_false.then(|| within.clone())));
        };
        let near: RoaringBitmap = self
            .data
            .object_index(self.g)
            .rows_meeting([r.min().x, r.min().y, r.max().x, r.max().y])
            .into_iter()
            .collect();
        let t: RoaringBitmap = (&near & within)
            .iter()
            .filter(|&row| self.geometry(row).is_some_and(|g| g.intersects(lit)))
            .collect();
        let f = need_false.then(|| within - &t);
        Some((t, f))
    }

    /// A leaf on one row.
    fn row(&self, e: &Expr, row: u32) -> Option<bool> {
        self.leaf(e, &|o| self.value(o, row))
    }

    /// A leaf with its operands' values from `val`.
    fn leaf<'v>(&'v self, e: &'v Expr, val: &dyn Fn(&'v Operand) -> Val<'v>) -> Option<bool> {
        match e {
            Expr::Cmp(op, a, b) => compare(&val(a), *op, &val(b)),
            Expr::Like(a, p) => match (val(a), val(p)) {
                (Val::Text(a), Val::Text(p)) => Some(like(&p, &a)),
                _ => None,
            },
            Expr::Between(a, lo, hi) => {
                let a = val(a);
                and3(
                    compare(&a, CmpOp::Ge, &val(lo)),
                    compare(&a, CmpOp::Le, &val(hi)),
                )
            }
            Expr::In(a, list) => {
                let a = val(a);
                let mut out = Some(false);
                for x in list {
                    match compare(&a, CmpOp::Eq, &val(x)) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => out = None,
                    }
                }
                out
            }
            Expr::IsNull(a) => Some(val(a) == Val::Null),
            Expr::Spatial(op, a, b) => match (val(a), val(b)) {
                (Val::Geom(a), Val::Geom(b)) => Some(spatial(*op, &a, &b)),
                _ => Some(false),
            },
            Expr::Temporal(op, a, b) => match (val(a), val(b)) {
                (Val::Span(a0, a1), Val::Span(b0, b1)) => Some(temporal(*op, (a0, a1), (b0, b1))),
                _ => None,
            },
            Expr::Bool(b) => Some(*b),
            Expr::And(_) | Expr::Or(_) | Expr::Not(_) => None,
        }
    }

    fn value<'v>(&'v self, o: &'v Operand, row: u32) -> Val<'v> {
        let table = &self.data.table;
        let r = row as usize;
        match o {
            Operand::Prop(Prop::Value(id)) => {
                let Some(p) = self.t.property(*id) else {
                    return Val::Null;
                };
                match (self.rows.cell(*id, row), p.storage()) {
                    (Cell::Null, _) => Val::Null,
                    (Cell::Number(v), ValueKind::Enum) => p
                        .allowed_value(v as u32)
                        .map_or(Val::Null, |av| enum_value(p.datatype, av)),
                    (Cell::Number(v), _) => Val::Num(v),
                    (Cell::Text(s), _) => Val::Text(Cow::Borrowed(s)),
                }
            }
            Operand::Prop(Prop::NvdbId) => Val::Num(table.id[r] as f64),
            Operand::Prop(Prop::Version) => Val::Num(table.version[r] as f64),
            Operand::Prop(Prop::Start) => {
                let d = table.start_date[r] as i64;
                Val::Span(d, d)
            }
            Operand::Prop(Prop::End) => match table.end_date[r] {
                OPEN_END => Val::Null,
                d => Val::Span(d as i64, d as i64),
            },
            Operand::Prop(Prop::Geometry) => self
                .geometry(row)
                .map_or(Val::Null, |g| Val::Geom(Cow::Owned(g))),
            Operand::Interval(a, b) => {
                let begin = match self.value(a, row) {
                    Val::Span(s, _) => s,
                    _ => i64::MIN,
                };
                let end = match self.value(b, row) {
                    Val::Span(_, e) => e,
                    _ => i64::MAX,
                };
                Val::Span(begin, end)
            }
            other => literal(other),
        }
    }

    /// The feature's geometry (own, else located) in storage coordinates.
    fn geometry(&self, row: u32) -> Option<geo::Geometry<f64>> {
        let (table, o) = (&self.data.table, row as usize);
        let geom = Geometry::from_own(table.own_geometry(o)).or_else(|| {
            self.g
                .located_geometry(&self.g.placement_pieces(table, o, |_| true))
        })?;
        Some(to_geo(&geom))
    }
}

fn is_literal(o: &Operand) -> bool {
    matches!(
        o,
        Operand::Number(_) | Operand::Text(_) | Operand::Bool(_) | Operand::Day(_)
    )
}

/// The value of an operand that does not depend on the row.
fn literal(o: &Operand) -> Val<'_> {
    match o {
        Operand::Number(n) => Val::Num(*n),
        Operand::Text(s) => Val::Text(Cow::Borrowed(s)),
        Operand::Bool(b) => Val::Bool(*b),
        Operand::Day(d) => Val::Span(*d as i64, *d as i64),
        Operand::Geometry(g) => Val::Geom(Cow::Borrowed(g)),
        Operand::Interval(a, b) => {
            let begin = match literal(a) {
                Val::Span(s, _) => s,
                _ => i64::MIN,
            };
            let end = match literal(b) {
                Val::Span(_, e) => e,
                _ => i64::MAX,
            };
            Val::Span(begin, end)
        }
        Operand::Open | Operand::Prop(_) => Val::Null,
    }
}

/// What a feature shows of an allowed value: its number for numeric enumerations, else its
/// name.
fn enum_value(dt: u16, av: &crate::catalog::AllowedValue) -> Val<'_> {
    match av.number.filter(|_| dt == datatype::ENUM_NUMBER) {
        Some(n) => Val::Num(n),
        None => Val::Text(Cow::Borrowed(&av.name)),
    }
}

fn day_text(d: i64) -> String {
    crate::api::dto::date(d as i32)
}

fn compare(a: &Val, op: CmpOp, b: &Val) -> Option<bool> {
    let ord = match (a, b) {
        (Val::Null, _) | (_, Val::Null) => return None,
        (Val::Num(x), Val::Num(y)) => x.partial_cmp(y)?,
        (Val::Text(x), Val::Text(y)) => x.cmp(y),
        (Val::Span(x, _), Val::Span(y, _)) => x.cmp(y),
        (Val::Span(x, _), Val::Text(y)) => day_text(*x).as_str().cmp(y),
        (Val::Text(x), Val::Span(y, _)) => x.as_ref().cmp(day_text(*y).as_str()),
        (Val::Bool(x), Val::Bool(y)) => x.cmp(y),
        _ => return None,
    };
    Some(match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Ne => ord != Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Le => ord != Ordering::Greater,
        CmpOp::Ge => ord != Ordering::Less,
    })
}

fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// CQL2 `LIKE`: `%` any run, `_` one character, `\` escapes; case-sensitive.
pub(super) fn like(pattern: &str, text: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Any,
        One,
        Char(char),
    }
    let mut pat = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        pat.push(match c {
            '%' => P::Any,
            '_' => P::One,
            '\\' => P::Char(it.next().unwrap_or('\\')),
            c => P::Char(c),
        });
    }
    let text: Vec<char> = text.chars().collect();
    // reach[j]: the pattern so far matches text[..j]
    let mut reach = vec![false; text.len() + 1];
    reach[0] = true;
    for p in pat {
        let mut next = vec![false; text.len() + 1];
        for j in 0..=text.len() {
            match p {
                P::Any => next[j] = reach[j] || (j > 0 && next[j - 1]),
                P::One => next[j] = j > 0 && reach[j - 1],
                P::Char(c) => next[j] = j > 0 && reach[j - 1] && text[j - 1] == c,
            }
        }
        reach = next;
    }
    reach[text.len()]
}

fn spatial(op: SpatialOp, a: &geo::Geometry<f64>, b: &geo::Geometry<f64>) -> bool {
    if op == SpatialOp::Intersects {
        return a.intersects(b);
    }
    let m = a.relate(b);
    match op {
        SpatialOp::Intersects => m.is_intersects(),
        SpatialOp::Disjoint => m.is_disjoint(),
        SpatialOp::Within => m.is_within(),
        SpatialOp::Contains => m.is_contains(),
        SpatialOp::Touches => m.is_touches(),
        SpatialOp::Crosses => m.is_crosses(),
        SpatialOp::Overlaps => m.is_overlaps(),
        SpatialOp::Equals => m.is_equal_topo(),
    }
}

/// The CQL2 temporal relations of spans (begin, end).
fn temporal(op: TemporalOp, (a0, a1): (i64, i64), (b0, b1): (i64, i64)) -> bool {
    use TemporalOp::*;
    match op {
        After => a0 > b1,
        Before => a1 < b0,
        Contains => a0 < b0 && a1 > b1,
        Disjoint => !(a0 <= b1 && a1 >= b0),
        During => a0 > b0 && a1 < b1,
        Equals => a0 == b0 && a1 == b1,
        FinishedBy => a0 < b0 && a1 == b1,
        Finishes => a0 > b0 && a1 == b1,
        Intersects => a0 <= b1 && a1 >= b0,
        Meets => a1 == b0,
        MetBy => a0 == b1,
        OverlappedBy => a0 > b0 && a0 < b1 && a1 > b1,
        Overlaps => a0 < b0 && a1 > b0 && a1 < b1,
        StartedBy => a0 == b0 && a1 > b1,
        Starts => a0 == b0 && a1 < b1,
    }
}

fn to_geo(g: &Geometry) -> geo::Geometry<f64> {
    let c = |p: &crate::geo::Coord3| geo::Coord { x: p[0], y: p[1] };
    let line = |l: &[crate::geo::Coord3]| geo::LineString(l.iter().map(c).collect());
    match g {
        Geometry::Point(p) => geo::Geometry::Point(geo::Point(c(p))),
        Geometry::LineString(l) => geo::Geometry::LineString(line(l)),
        Geometry::MultiLineString(ls) => geo::Geometry::MultiLineString(geo::MultiLineString(
            ls.iter().map(|l| line(l)).collect(),
        )),
        Geometry::MultiPolygon(ps) => geo::Geometry::MultiPolygon(geo::MultiPolygon(
            ps.iter()
                .filter_map(|rings| {
                    let (ext, holes) = rings.split_first()?;
                    Some(geo::Polygon::new(
                        line(ext),
                        holes.iter().map(|h| line(h)).collect(),
                    ))
                })
                .collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        assert!(like("Gud%", "Gudvangatunnelen"));
        assert!(like("%tunnel%", "Gudvangatunnelen"));
        assert!(!like("gud%", "Gudvangatunnelen"));
        assert!(like("_b_", "abc"));
        assert!(!like("_b_", "abcd"));
        assert!(like("100\\%", "100%"));
        assert!(!like("100\\%", "1000"));
        assert!(like("%", ""));
    }

    #[test]
    fn temporal_relations_follow_their_definitions() {
        let a = (10, 20);
        assert!(temporal(TemporalOp::Intersects, a, (20, 30)));
        assert!(!temporal(TemporalOp::Intersects, a, (21, 30)));
        assert!(temporal(TemporalOp::Meets, a, (20, 30)));
        assert!(temporal(TemporalOp::During, a, (0, 30)));
        assert!(temporal(TemporalOp::Contains, (0, 30), a));
        assert!(temporal(TemporalOp::After, a, (0, 9)));
        assert!(temporal(TemporalOp::Before, a, (21, 30)));
        assert!(temporal(TemporalOp::Overlaps, a, (15, 25)));
        assert!(temporal(TemporalOp::OverlappedBy, (15, 25), a));
        assert!(temporal(TemporalOp::Disjoint, a, (21, 30)));
    }
}
