//! cql2-json: `{"op": ..., "args": [...]}` trees, operands `{"property": name}`, numbers,
//! texts, booleans, `{"date": ..}`, `{"timestamp": ..}`, `{"interval": [a, b]}` and GeoJSON
//! geometries or `{"bbox": [...]}`.

use serde_json::Value;

use super::{bad, day, Binder, CmpOp, Expr, Operand, SpatialOp, TemporalOp};
use super::{MAX_COORDS, MAX_DEPTH, MAX_PREDICATES};
use crate::api::ogc::error::OgcResult;

struct Parser<'a> {
    b: &'a Binder<'a>,
    predicates: usize,
    coords: usize,
}

pub(super) fn parse(text: &str, b: &Binder) -> OgcResult<Expr> {
    let v: Value = serde_json::from_str(text).or_else(|e| bad(format!("not JSON: {e}")))?;
    let mut p = Parser {
        b,
        predicates: 0,
        coords: 0,
    };
    p.expr(&v, 0)
}

fn args(v: &Value) -> OgcResult<&[Value]> {
    match v.get("args") {
        Some(Value::Array(a)) => Ok(a),
        _ => bad("an operation takes \"args\": [...]"),
    }
}

fn two<'a>(a: &'a [Value], op: &str) -> OgcResult<(&'a Value, &'a Value)> {
    match a {
        [x, y] => Ok((x, y)),
        _ => bad(format!("'{op}' takes two arguments")),
    }
}

impl Parser<'_> {
    fn expr(&mut self, v: &Value, depth: usize) -> OgcResult<Expr> {
        if depth > MAX_DEPTH {
            return bad(format!("nested more than {MAX_DEPTH} levels"));
        }
        if let Value::Bool(b) = v {
            return Ok(Expr::Bool(*b));
        }
        let Some(op) = v.get("op").and_then(Value::as_str) else {
            return bad("expected a boolean or {\"op\": ..., \"args\": [...]}");
        };
        let a = args(v)?;
        let lower = op.to_ascii_lowercase();
        match lower.as_str() {
            "and" | "or" => {
                if a.len() < 2 {
                    return bad(format!("'{op}' takes at least two arguments"));
                }
                let v = a
                    .iter()
                    .map(|x| self.expr(x, depth + 1))
                    .collect::<OgcResult<Vec<_>>>()?;
                return Ok(if lower == "and" {
                    Expr::And(v)
                } else {
                    Expr::Or(v)
                });
            }
            "not" => {
                return match a {
                    [x] => Ok(Expr::Not(Box::new(self.expr(x, depth + 1)?))),
                    _ => bad("'not' takes one argument"),
                }
            }
            _ => {}
        }
        self.predicates += 1;
        if self.predicates > MAX_PREDICATES {
            return bad(format!("more than {MAX_PREDICATES} predicates"));
        }
        let cmp = match op {
            "=" => Some(CmpOp::Eq),
            "<>" => Some(CmpOp::Ne),
            "<" => Some(CmpOp::Lt),
            ">" => Some(CmpOp::Gt),
            "<=" => Some(CmpOp::Le),
            ">=" => Some(CmpOp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            let (x, y) = two(a, op)?;
            return Ok(Expr::Cmp(c, self.operand(x)?, self.operand(y)?));
        }
        if let Some(s) = SpatialOp::from_name(op) {
            let (x, y) = two(a, op)?;
            return Ok(Expr::Spatial(s, self.operand(x)?, self.operand(y)?));
        }
        if let Some(t) = TemporalOp::from_name(op) {
            let (x, y) = two(a, op)?;
            return Ok(Expr::Temporal(t, self.operand(x)?, self.operand(y)?));
        }
        match (lower.as_str(), a) {
            ("like", [x, y]) => Ok(Expr::Like(self.operand(x)?, self.operand(y)?)),
            ("between", [x, lo, hi]) => Ok(Expr::Between(
                self.operand(x)?,
                self.operand(lo)?,
                self.operand(hi)?,
            )),
            // the draft's form, which pygeofilter writes: [x, [lo, hi]]
            ("between", [x, Value::Array(range)]) if range.len() == 2 => Ok(Expr::Between(
                self.operand(x)?,
                self.operand(&range[0])?,
                self.operand(&range[1])?,
            )),
            ("in", [x, Value::Array(list)]) if list.len() <= MAX_PREDICATES => {
                let list = list
                    .iter()
                    .map(|y| self.operand(y))
                    .collect::<OgcResult<Vec<_>>>()?;
                Ok(Expr::In(self.operand(x)?, list))
            }
            ("isnull", [x]) => Ok(Expr::IsNull(self.operand(x)?)),
            ("like" | "between" | "in" | "isnull", _) => bad(format!("wrong arguments of '{op}'")),
            _ => bad(format!(
                "unknown operation '{}'",
                crate::api::error::echoed(op)
            )),
        }
    }

    fn operand(&mut self, v: &Value) -> OgcResult<Operand> {
        match v {
            Value::Number(n) => n
                .as_f64()
                .filter(|n| n.is_finite())
                .map(Operand::Number)
                .map_or_else(|| bad("a number out of range"), Ok),
            Value::String(s) if s == ".." => Ok(Operand::Open),
            Value::String(s) => Ok(Operand::Text(s.clone())),
            Value::Bool(b) => Ok(Operand::Bool(*b)),
            Value::Object(m) => {
                if let Some(p) = m.get("property").and_then(Value::as_str) {
                    return Ok(Operand::Prop(self.b.prop(p)?));
                }
                if let Some(d) = m.get("date").or(m.get("timestamp")).and_then(Value::as_str) {
                    return Ok(Operand::Day(day(d)?));
                }
                if let Some(Value::Array(iv)) = m.get("interval") {
                    let [x, y] = iv.as_slice() else {
                        return bad("an interval has two ends");
                    };
                    let end = |p: &mut Self, e: &Value| match e {
                        Value::String(s) if s == ".." => Ok(Operand::Open),
                        Value::String(s) => Ok(Operand::Day(day(s)?)),
                        other => p.operand(other),
                    };
                    let (x, y) = (end(self, x)?, end(self, y)?);
                    return Ok(Operand::Interval(Box::new(x), Box::new(y)));
                }
                if let Some(Value::Array(b)) = m.get("bbox") {
                    let nums: Vec<f64> = b.iter().filter_map(Value::as_f64).collect();
                    if nums.len() != b.len() {
                        return bad("bbox takes numbers");
                    }
                    return Ok(Operand::Geometry(self.b.bbox(&nums)?));
                }
                if m.contains_key("type") {
                    return Ok(Operand::Geometry(self.geometry(v, 0)?));
                }
                if m.contains_key("op") {
                    return bad("functions and nested predicates are not values here");
                }
                bad("unknown operand")
            }
            Value::Array(_) => bad("a list is not a value here"),
            Value::Null => bad("null is not a value (use isNull)"),
        }
    }

    fn coord(&mut self, v: &Value) -> OgcResult<geo::Coord<f64>> {
        self.coords += 1;
        if self.coords > MAX_COORDS {
            return bad(format!("more than {MAX_COORDS} coordinates"));
        }
        match v.as_array().map(Vec::as_slice) {
            Some([x, y, ..]) => match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => self.b.coord(x, y),
                _ => bad("a position takes numbers"),
            },
            _ => bad("a position is [x, y]"),
        }
    }
    fn coords(&mut self, v: &Value) -> OgcResult<Vec<geo::Coord<f64>>> {
        match v.as_array() {
            Some(a) => a.iter().map(|c| self.coord(c)).collect(),
            None => bad("expected a list of positions"),
        }
    }
    fn polygon(&mut self, v: &Value) -> OgcResult<geo::Polygon<f64>> {
        let rings = match v.as_array() {
            Some(a) if !a.is_empty() => a
                .iter()
                .map(|r| self.coords(r).map(geo::LineString))
                .collect::<OgcResult<Vec<_>>>()?,
            _ => return bad("a polygon is a list of rings"),
        };
        super::simple_polygon(rings)
    }
    fn list<T>(
        &mut self,
        v: &Value,
        mut f: impl FnMut(&mut Self, &Value) -> OgcResult<T>,
    ) -> OgcResult<Vec<T>> {
        match v.as_array() {
            Some(a) => a.iter().map(|x| f(self, x)).collect(),
            None => bad("expected a list"),
        }
    }

    fn geometry(&mut self, v: &Value, depth: usize) -> OgcResult<geo::Geometry<f64>> {
        use geo::Geometry as G;
        if depth > MAX_DEPTH {
            return bad(format!("nested more than {MAX_DEPTH} levels"));
        }
        let c = &v["coordinates"];
        Ok(match v["type"].as_str().unwrap_or("") {
            "Point" => G::Point(geo::Point(self.coord(c)?)),
            "LineString" => G::LineString(geo::LineString(self.coords(c)?)),
            "Polygon" => G::Polygon(self.polygon(c)?),
            "MultiPoint" => G::MultiPoint(geo::MultiPoint(
                self.coords(c)?.into_iter().map(geo::Point).collect(),
            )),
            "MultiLineString" => G::MultiLineString(geo::MultiLineString(
                self.list(c, |p, l| p.coords(l).map(geo::LineString))?,
            )),
            "MultiPolygon" => {
                G::MultiPolygon(geo::MultiPolygon(self.list(c, |p, x| p.polygon(x))?))
            }
            "GeometryCollection" => G::GeometryCollection(geo::GeometryCollection(
                self.list(&v["geometries"], |p, x| p.geometry(x, depth + 1))?,
            )),
            other => {
                return bad(format!(
                    "unknown geometry type '{}'",
                    crate::api::error::echoed(other)
                ))
            }
        })
    }
}
