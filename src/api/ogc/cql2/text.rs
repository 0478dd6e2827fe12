//! cql2-text: a lexer and a recursive-descent parser (nesting checked before each descent).
//!
//! ```text
//! or      := and ("OR" and)*
//! and     := not ("AND" not)*
//! not     := "NOT" not | primary
//! primary := "(" or ")" | TRUE | FALSE | S_fn "(" scalar "," scalar ")"
//!          | T_fn "(" scalar "," scalar ")" | scalar tail
//! tail    := cmp scalar | [NOT] LIKE scalar | [NOT] BETWEEN scalar AND scalar
//!          | [NOT] IN "(" scalar ("," scalar)* ")" | IS [NOT] NULL
//! scalar  := number | 'text' | TRUE | FALSE | DATE('..') | TIMESTAMP('..')
//!          | INTERVAL(scalar, scalar) | property | "property" | WKT | BBOX(n, n, n, n)
//! ```

use super::{bad, day, Binder, CmpOp, Expr, Operand, SpatialOp, TemporalOp};
use super::{MAX_COORDS, MAX_DEPTH, MAX_PREDICATES};
use crate::api::ogc::error::OgcResult;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Quoted(String),
    Str(String),
    Num(f64),
    Sym(&'static str),
}

fn lex(text: &str) -> OgcResult<Vec<Tok>> {
    let cs: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' || c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                match cs.get(i) {
                    None => return bad(format!("unterminated {c}")),
                    Some(&q) if q == c && cs.get(i + 1) == Some(&c) => {
                        s.push(c);
                        i += 2;
                    }
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some(&q) => {
                        s.push(q);
                        i += 1;
                    }
                }
            }
            out.push(if c == '\'' {
                Tok::Str(s)
            } else {
                Tok::Quoted(s)
            });
        } else if c.is_ascii_digit()
            || ((c == '-' || c == '+' || c == '.')
                && cs
                    .get(i + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.'))
        {
            let start = i;
            i += 1;
            while i < cs.len()
                && (cs[i].is_ascii_digit()
                    || cs[i] == '.'
                    || cs[i] == 'e'
                    || cs[i] == 'E'
                    || ((cs[i] == '-' || cs[i] == '+') && matches!(cs[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let s: String = cs[start..i].iter().collect();
            match s.parse::<f64>() {
                Ok(n) if n.is_finite() => out.push(Tok::Num(n)),
                _ => return bad(format!("'{s}' is not a number")),
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || matches!(cs[i], '_' | ':' | '.')) {
                i += 1;
            }
            out.push(Tok::Ident(cs[start..i].iter().collect()));
        } else {
            let two: String = cs[i..(i + 2).min(cs.len())].iter().collect();
            let (sym, len) = match two.as_str() {
                "<>" | "!=" => ("<>", 2),
                "<=" => ("<=", 2),
                ">=" => (">=", 2),
                _ => match c {
                    '(' | '[' => ("(", 1),
                    ')' | ']' => (")", 1),
                    ',' => (",", 1),
                    '=' => ("=", 1),
                    '<' => ("<", 1),
                    '>' => (">", 1),
                    _ => return bad(format!("unexpected '{c}'")),
                },
            };
            i += len;
            out.push(Tok::Sym(sym));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    at: usize,
    depth: usize,
    predicates: usize,
    coords: usize,
    b: &'a Binder<'a>,
}

pub(super) fn parse(text: &str, b: &Binder) -> OgcResult<Expr> {
    let mut p = Parser {
        toks: lex(text)?,
        at: 0,
        depth: 0,
        predicates: 0,
        coords: 0,
        b,
    };
    if p.toks.is_empty() {
        return bad("empty");
    }
    let e = p.or()?;
    match p.peek() {
        None => Ok(e),
        Some(t) => bad(format!("unexpected {} after the expression", show(t))),
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => s.clone(),
        Tok::Quoted(s) => format!("\"{s}\""),
        Tok::Str(s) => format!("'{s}'"),
        Tok::Num(n) => n.to_string(),
        Tok::Sym(s) => (*s).to_string(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn next(&mut self) -> OgcResult<Tok> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t.map_or_else(|| bad("unexpected end"), Ok)
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s.eq_ignore_ascii_case(kw))
    }
    fn eat_kw(&mut self, kw: &str) -> bool {
        let y = self.is_kw(kw);
        if y {
            self.at += 1;
        }
        y
    }
    fn expect(&mut self, sym: &'static str) -> OgcResult<()> {
        match self.next()? {
            Tok::Sym(s) if s == sym => Ok(()),
            t => bad(format!("expected '{sym}', found {}", show(&t))),
        }
    }
    fn descend(&mut self) -> OgcResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return bad(format!("nested more than {MAX_DEPTH} levels"));
        }
        Ok(())
    }
    fn predicate(&mut self, e: Expr) -> OgcResult<Expr> {
        self.predicates += 1;
        if self.predicates > MAX_PREDICATES {
            return bad(format!("more than {MAX_PREDICATES} predicates"));
        }
        Ok(e)
    }

    fn or(&mut self) -> OgcResult<Expr> {
        let mut v = vec![self.and()?];
        while self.eat_kw("OR") {
            v.push(self.and()?);
        }
        Ok(if v.len() == 1 {
            v.swap_remove(0)
        } else {
            Expr::Or(v)
        })
    }
    fn and(&mut self) -> OgcResult<Expr> {
        let mut v = vec![self.not()?];
        while self.eat_kw("AND") {
            v.push(self.not()?);
        }
        Ok(if v.len() == 1 {
            v.swap_remove(0)
        } else {
            Expr::And(v)
        })
    }
    fn not(&mut self) -> OgcResult<Expr> {
        if self.eat_kw("NOT") {
            self.descend()?;
            let e = self.not()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(e)));
        }
        self.primary()
    }

    fn primary(&mut self) -> OgcResult<Expr> {
        if self.peek() == Some(&Tok::Sym("(")) {
            self.at += 1;
            self.descend()?;
            let e = self.or()?;
            self.depth -= 1;
            self.expect(")")?;
            return Ok(e);
        }
        if let Some(Tok::Ident(name)) = self.peek().cloned() {
            let call = self.toks.get(self.at + 1) == Some(&Tok::Sym("("));
            if let (Some(op), true) = (SpatialOp::from_name(&name), call) {
                self.at += 2;
                let (a, b) = self.pair()?;
                return self.predicate(Expr::Spatial(op, a, b));
            }
            if let (Some(op), true) = (TemporalOp::from_name(&name), call) {
                self.at += 2;
                let (a, b) = self.pair()?;
                return self.predicate(Expr::Temporal(op, a, b));
            }
            let is_bool = name.eq_ignore_ascii_case("TRUE") || name.eq_ignore_ascii_case("FALSE");
            let next_ends = matches!(self.toks.get(self.at + 1), None | Some(Tok::Sym(")")))
                || matches!(self.toks.get(self.at + 1), Some(Tok::Ident(k)) if k.eq_ignore_ascii_case("AND") || k.eq_ignore_ascii_case("OR"));
            if is_bool && next_ends {
                self.at += 1;
                return Ok(Expr::Bool(name.eq_ignore_ascii_case("TRUE")));
            }
        }
        let a = self.scalar()?;
        let e = self.tail(a)?;
        self.predicate(e)
    }

    /// `a, b)` of a two-argument function.
    fn pair(&mut self) -> OgcResult<(Operand, Operand)> {
        let a = self.scalar()?;
        self.expect(",")?;
        let b = self.scalar()?;
        self.expect(")")?;
        Ok((a, b))
    }

    fn tail(&mut self, a: Operand) -> OgcResult<Expr> {
        if let Some(Tok::Sym(s)) = self.peek().cloned() {
            let op = match s {
                "=" => CmpOp::Eq,
                "<>" => CmpOp::Ne,
                "<" => CmpOp::Lt,
                ">" => CmpOp::Gt,
                "<=" => CmpOp::Le,
                ">=" => CmpOp::Ge,
                _ => return bad(format!("unexpected '{s}'")),
            };
            self.at += 1;
            return Ok(Expr::Cmp(op, a, self.scalar()?));
        }
        if self.eat_kw("IS") {
            let negated = self.eat_kw("NOT");
            if !self.eat_kw("NULL") {
                return bad("expected NULL after IS");
            }
            let e = Expr::IsNull(a);
            return Ok(if negated { Expr::Not(Box::new(e)) } else { e });
        }
        let negated = self.eat_kw("NOT");
        let e = if self.eat_kw("LIKE") {
            Expr::Like(a, self.scalar()?)
        } else if self.eat_kw("BETWEEN") {
            let lo = self.scalar()?;
            if !self.eat_kw("AND") {
                return bad("expected AND in BETWEEN");
            }
            Expr::Between(a, lo, self.scalar()?)
        } else if self.eat_kw("IN") {
            self.expect("(")?;
            let mut v = vec![self.scalar()?];
            while self.peek() == Some(&Tok::Sym(",")) {
                self.at += 1;
                v.push(self.scalar()?);
                if v.len() > MAX_PREDICATES {
                    return bad(format!("an IN list of more than {MAX_PREDICATES} values"));
                }
            }
            self.expect(")")?;
            Expr::In(a, v)
        } else {
            return match self.peek() {
                Some(t) => bad(format!("expected a comparison, found {}", show(t))),
                None => bad("expected a comparison, found the end"),
            };
        };
        Ok(if negated { Expr::Not(Box::new(e)) } else { e })
    }

    fn scalar(&mut self) -> OgcResult<Operand> {
        match self.next()? {
            Tok::Num(n) => Ok(Operand::Number(n)),
            Tok::Str(s) if s == ".." => Ok(Operand::Open),
            Tok::Str(s) => Ok(Operand::Text(s)),
            Tok::Quoted(s) => Ok(Operand::Prop(self.b.prop(&s)?)),
            Tok::Sym(s) => bad(format!("expected a value, found '{s}'")),
            Tok::Ident(name) => {
                let call = self.peek() == Some(&Tok::Sym("("));
                let up = name.to_ascii_uppercase();
                match (up.as_str(), call) {
                    ("TRUE", false) => Ok(Operand::Bool(true)),
                    ("FALSE", false) => Ok(Operand::Bool(false)),
                    ("DATE" | "TIMESTAMP", true) => {
                        self.at += 1;
                        let s = match self.next()? {
                            Tok::Str(s) => s,
                            t => return bad(format!("{up} takes a quoted text, not {}", show(&t))),
                        };
                        self.expect(")")?;
                        Ok(Operand::Day(day(&s)?))
                    }
                    ("INTERVAL", true) => {
                        self.at += 1;
                        let (a, b) = self.pair()?;
                        // the ends are instants: a date or timestamp text, '..' or a queryable
                        let end = |o: Operand| match o {
                            Operand::Text(s) => day(&s).map(Operand::Day),
                            o => Ok(o),
                        };
                        Ok(Operand::Interval(Box::new(end(a)?), Box::new(end(b)?)))
                    }
                    (_, true) => self.geometry(&up).map(Operand::Geometry),
                    _ if is_reserved(&up) => bad(format!("expected a value, found {name}")),
                    _ => Ok(Operand::Prop(self.b.prop(&name)?)),
                }
            }
        }
    }

    /// A WKT geometry or BBOX whose name was just read; at its `(`.
    fn geometry(&mut self, name: &str) -> OgcResult<geo::Geometry<f64>> {
        use geo::Geometry as G;
        self.descend()?;
        let g = match name {
            "BBOX" => {
                self.expect("(")?;
                let mut v = vec![self.number()?];
                while self.peek() == Some(&Tok::Sym(",")) {
                    self.at += 1;
                    v.push(self.number()?);
                }
                self.expect(")")?;
                self.b.bbox(&v)?
            }
            "POINT" => {
                self.expect("(")?;
                let c = self.coord()?;
                self.expect(")")?;
                G::Point(geo::Point(c))
            }
            "LINESTRING" => G::LineString(self.line()?),
            "POLYGON" => G::Polygon(self.polygon()?),
            "MULTIPOINT" => {
                let pts = self.list(|p| {
                    let paren = p.peek() == Some(&Tok::Sym("("));
                    if paren {
                        p.at += 1;
                    }
                    let c = p.coord()?;
                    if paren {
                        p.expect(")")?;
                    }
                    Ok(geo::Point(c))
                })?;
                G::MultiPoint(geo::MultiPoint(pts))
            }
            "MULTILINESTRING" => G::MultiLineString(geo::MultiLineString(self.list(|p| p.line())?)),
            "MULTIPOLYGON" => G::MultiPolygon(geo::MultiPolygon(self.list(|p| p.polygon())?)),
            "GEOMETRYCOLLECTION" => {
                let gs = self.list(|p| match p.next()? {
                    Tok::Ident(n) => p.geometry(&n.to_ascii_uppercase()),
                    t => bad(format!("expected a geometry, found {}", show(&t))),
                })?;
                G::GeometryCollection(geo::GeometryCollection(gs))
            }
            _ => return bad(format!("unknown function or geometry {name}")),
        };
        self.depth -= 1;
        Ok(g)
    }

    fn number(&mut self) -> OgcResult<f64> {
        match self.next()? {
            Tok::Num(n) => Ok(n),
            t => bad(format!("expected a number, found {}", show(&t))),
        }
    }
    /// `x y [z]`, into storage coordinates.
    fn coord(&mut self) -> OgcResult<geo::Coord<f64>> {
        self.coords += 1;
        if self.coords > MAX_COORDS {
            return bad(format!("more than {MAX_COORDS} coordinates"));
        }
        let (a, b) = (self.number()?, self.number()?);
        if let Some(Tok::Num(_)) = self.peek() {
            self.at += 1;
        }
        self.b.coord(a, b)
    }
    /// `( item, item, ... )`.
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> OgcResult<T>) -> OgcResult<Vec<T>> {
        self.expect("(")?;
        let mut v = vec![item(self)?];
        while self.peek() == Some(&Tok::Sym(",")) {
            self.at += 1;
            v.push(item(self)?);
        }
        self.expect(")")?;
        Ok(v)
    }
    fn line(&mut self) -> OgcResult<geo::LineString<f64>> {
        Ok(geo::LineString(self.list(|p| p.coord())?))
    }
    fn polygon(&mut self) -> OgcResult<geo::Polygon<f64>> {
        let rings = self.list(|p| p.line())?;
        super::simple_polygon(rings)
    }
}

fn is_reserved(up: &str) -> bool {
    matches!(
        up,
        "AND" | "OR" | "NOT" | "LIKE" | "BETWEEN" | "IN" | "IS" | "NULL"
    )
}
