//! The v2 `egenskap` filter language (api-facts §3) and its evaluation.
//!
//! ```text
//! expr    := and ("OR" and)*
//! and     := unary ("AND" unary)*
//! unary   := "(" expr ")" | relasjon | cond
//! relasjon:= "relasjon" "(" typeId "," expr ")"        (children of that type match expr)
//! cond    := prop op value | prop ("in" | "notin") "[" value ("," value)* "]"
//! prop    := id | "egenskap" "(" id ")"
//! op      := = | != | < | > | <= | >=
//! value   := number | null | '…' | "…"                 (text and dates quoted, * wildcard)
//! ```
//! The whole expression may be wrapped in one pair of double quotes. Enum properties compare
//! with allowed-value ids and only with =, !=, in, notin. `!=` matches objects that have a
//! different value (objects without a value do not match); `=null` / `!=null` test presence.

use std::borrow::Cow;

use roaring::RoaringBitmap;

use crate::catalog::{Catalog, ObjectType, ValueKind};
use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Number(f64),
    Text(String),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Cmp {
        property: u32,
        op: Op,
        value: Literal,
    },
    In {
        property: u32,
        values: Vec<Literal>,
        negated: bool,
    },
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Relation {
        child_type: u32,
        expr: Box<Expr>,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Op(Op),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
}

fn err(pos: usize, text: &str, msg: impl std::fmt::Display) -> EngineError {
    EngineError::invalid(
        4005,
        format!("Ugyldig egenskapsfilter ved posisjon {pos}: {msg} (i uttrykket: {text})"),
    )
}

fn lex(text: &str) -> Result<Vec<(usize, Tok)>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                i += 1;
                continue;
            }
            '(' => out.push((start, Tok::LParen)),
            ')' => out.push((start, Tok::RParen)),
            '[' => out.push((start, Tok::LBracket)),
            ']' => out.push((start, Tok::RBracket)),
            ',' => out.push((start, Tok::Comma)),
            '=' => out.push((start, Tok::Op(Op::Eq))),
            '!' | '<' | '>' => {
                let next = chars.get(i + 1).copied();
                let op = match (c, next) {
                    ('!', Some('=')) => {
                        i += 1;
                        Op::Ne
                    }
                    ('<', Some('=')) => {
                        i += 1;
                        Op::Le
                    }
                    ('>', Some('=')) => {
                        i += 1;
                        Op::Ge
                    }
                    ('<', _) => Op::Lt,
                    ('>', _) => Op::Gt,
                    _ => return Err(err(start, text, "'!' må følges av '='")),
                };
                out.push((start, Tok::Op(op)));
            }
            '\'' | '"' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&d| d == c)
                    .ok_or_else(|| err(start, text, "tekst uten avsluttende anførselstegn"))?;
                out.push((
                    start,
                    Tok::Str(chars[i + 1..i + 1 + close].iter().collect()),
                ));
                i += close + 1;
            }
            c if c.is_ascii_digit() || c == '-' || c == '.' => {
                let mut j = i + 1;
                while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                    j += 1;
                }
                let s: String = chars[i..j].iter().collect();
                let v: f64 = s
                    .parse()
                    .map_err(|_| err(start, text, format!("ugyldig tall '{s}'")))?;
                out.push((start, Tok::Num(v)));
                i = j;
                continue;
            }
            c if c.is_alphabetic() => {
                let mut j = i + 1;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                out.push((
                    start,
                    Tok::Ident(chars[i..j].iter().collect::<String>().to_lowercase()),
                ));
                i = j;
                continue;
            }
            other => return Err(err(start, text, format!("uventet tegn '{other}'"))),
        }
        i += 1;
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<(usize, Tok)>,
    i: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn pos(&self) -> usize {
        self.toks
            .get(self.i)
            .map(|t| t.0)
            .unwrap_or(self.text.chars().count())
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.1)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).map(|t| t.1.clone());
        self.i += 1;
        t
    }
    fn expect(&mut self, want: Tok, what: &str) -> Result<()> {
        let pos = self.pos();
        match self.next() {
            Some(t) if t == want => Ok(()),
            Some(t) => Err(err(pos, self.text, format!("forventet {what}, fant {t:?}"))),
            None => Err(err(
                pos,
                self.text,
                format!("forventet {what}, men uttrykket sluttet"),
            )),
        }
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == w)
    }
    fn expr(&mut self) -> Result<Expr> {
        let mut parts = vec![self.and()?];
        while self.is_word("or") {
            self.i += 1;
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().expect("one")
        } else {
            Expr::Or(parts)
        })
    }
    fn and(&mut self) -> Result<Expr> {
        let mut parts = vec![self.unary()?];
        while self.is_word("and") {
            self.i += 1;
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().expect("one")
        } else {
            Expr::And(parts)
        })
    }
    fn integer(&mut self, what: &str) -> Result<u32> {
        let pos = self.pos();
        match self.next() {
            Some(Tok::Num(v)) if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 => {
                Ok(v as u32)
            }
            other => Err(err(
                pos,
                self.text,
                format!("forventet {what}, fant {other:?}"),
            )),
        }
    }
    fn unary(&mut self) -> Result<Expr> {
        let pos = self.pos();
        match self.peek() {
            Some(Tok::LParen) => {
                self.i += 1;
                let e = self.expr()?;
                self.expect(Tok::RParen, "')'")?;
                Ok(e)
            }
            Some(Tok::Ident(w)) if w == "relasjon" => {
                self.i += 1;
                self.expect(Tok::LParen, "'(' etter relasjon")?;
                let child_type = self.integer("vegobjekttype-id")?;
                self.expect(Tok::Comma, "',' etter vegobjekttype-id")?;
                let e = self.expr()?;
                self.expect(Tok::RParen, "')' etter relasjon")?;
                Ok(Expr::Relation {
                    child_type,
                    expr: Box::new(e),
                })
            }
            Some(Tok::Ident(w)) if w == "egenskap" => {
                self.i += 1;
                self.expect(Tok::LParen, "'(' etter egenskap")?;
                let p = self.integer("egenskapstype-id")?;
                self.expect(Tok::RParen, "')'")?;
                self.condition(p)
            }
            Some(Tok::Num(_)) => {
                let p = self.integer("egenskapstype-id")?;
                self.condition(p)
            }
            Some(t) => Err(err(
                pos,
                self.text,
                format!("forventet en betingelse, fant {t:?}"),
            )),
            None => Err(err(
                pos,
                self.text,
                "forventet en betingelse, men uttrykket sluttet",
            )),
        }
    }
    fn literal(&mut self) -> Result<Literal> {
        let pos = self.pos();
        match self.next() {
            Some(Tok::Num(v)) => Ok(Literal::Number(v)),
            Some(Tok::Str(s)) => Ok(Literal::Text(s)),
            Some(Tok::Ident(w)) if w == "null" => Ok(Literal::Null),
            other => Err(err(
                pos,
                self.text,
                format!("forventet en verdi, fant {other:?}"),
            )),
        }
    }
    fn condition(&mut self, property: u32) -> Result<Expr> {
        let pos = self.pos();
        match self.next() {
            Some(Tok::Op(op)) => Ok(Expr::Cmp {
                property,
                op,
                value: self.literal()?,
            }),
            Some(Tok::Ident(w)) if w == "in" || w == "notin" => {
                self.expect(Tok::LBracket, "'['")?;
                let mut values = vec![self.literal()?];
                while self.peek() == Some(&Tok::Comma) {
                    self.i += 1;
                    values.push(self.literal()?);
                }
                self.expect(Tok::RBracket, "']'")?;
                Ok(Expr::In {
                    property,
                    values,
                    negated: w == "notin",
                })
            }
            other => Err(err(
                pos,
                self.text,
                format!("forventet en operator (=, !=, <, >, <=, >=, in, notin), fant {other:?}"),
            )),
        }
    }
}

/// Parse a filter. One surrounding pair of double quotes is removed first.
pub fn parse(text: &str) -> Result<Expr> {
    let t = text.trim();
    let t = if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        &t[1..t.len() - 1]
    } else {
        t
    };
    let mut p = Parser {
        toks: lex(t)?,
        i: 0,
        text: t,
    };
    if p.toks.is_empty() {
        return Err(err(0, t, "tomt uttrykk"));
    }
    let e = p.expr()?;
    if p.i < p.toks.len() {
        return Err(err(p.pos(), t, format!("uventet {:?}", p.toks[p.i].1)));
    }
    Ok(e)
}

/// Check the filter against the catalogue for `object_type`: properties must belong to the type
/// (or, inside `relasjon`, to the child type, which must be a catalogue child); enum properties
/// take ids and only =, !=, in, notin.
pub fn check(e: &Expr, catalog: &Catalog, t: &ObjectType) -> Result<()> {
    let bad = |m: String| EngineError::invalid(4005, m);
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().try_for_each(|x| check(x, catalog, t)),
        Expr::Relation { child_type, expr } => {
            if !t
                .relation_types
                .children
                .iter()
                .any(|r| r.target.id == *child_type)
            {
                return Err(bad(format!(
                    "Vegobjekttype {} har ikke barn av type {child_type}",
                    t.id
                )));
            }
            let ct = catalog
                .object_type(*child_type)
                .ok_or_else(|| bad(format!("Ukjent vegobjekttype {child_type}")))?;
            check(expr, catalog, ct)
        }
        Expr::Cmp {
            property,
            op,
            value,
        } => {
            let p = t.property(*property).ok_or_else(|| {
                bad(format!(
                    "Egenskapstype {property} finnes ikke på vegobjekttype {}",
                    t.id
                ))
            })?;
            if p.storage() == ValueKind::Enum && !matches!(op, Op::Eq | Op::Ne) {
                return Err(bad(format!("Egenskapstype {property} har tillatte verdier; bruk =, !=, in eller notin med verdi-id")));
            }
            if p.storage() == ValueKind::Enum {
                if let Literal::Text(s) = value {
                    return Err(bad(format!("Egenskapstype {property} sammenlignes med id-en til en tillatt verdi, ikke '{s}'")));
                }
            }
            if p.storage() == ValueKind::Geometry {
                return Err(bad(format!(
                    "Egenskapstype {property} er en geometri og kan ikke filtreres"
                )));
            }
            Ok(())
        }
        Expr::In {
            property, values, ..
        } => {
            let p = t.property(*property).ok_or_else(|| {
                bad(format!(
                    "Egenskapstype {property} finnes ikke på vegobjekttype {}",
                    t.id
                ))
            })?;
            if values.contains(&Literal::Null) {
                return Err(bad("null kan ikke stå i en in-liste".into()));
            }
            if p.storage() == ValueKind::Geometry {
                return Err(bad(format!(
                    "Egenskapstype {property} er en geometri og kan ikke filtreres"
                )));
            }
            Ok(())
        }
    }
}

/// The first property with `sensitivitet` > 0 the filter reads, if any (filtering on a value
/// reveals it, so only callers who may see sensitive values may do it).
pub fn sensitive_property(e: &Expr, catalog: &Catalog, t: &ObjectType) -> Option<u32> {
    let sensitive = |t: &ObjectType, id: u32| {
        t.property(id)
            .is_some_and(|p| p.sensitivity > 0)
            .then_some(id)
    };
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().find_map(|x| sensitive_property(x, catalog, t)),
        Expr::Relation { child_type, expr } => {
            sensitive_property(expr, catalog, catalog.object_type(*child_type)?)
        }
        Expr::Cmp { property, .. } | Expr::In { property, .. } => sensitive(t, *property),
    }
}

/// A property value of one object, as the filter sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    Null,
    Number(f64),
    Text(&'a str),
}

/// Does `text` match `pattern` with `*` wildcards (case-insensitive)?
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.to_lowercase(), text.to_lowercase());
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == t;
    }
    let mut rest = t.as_str();
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            if !rest.starts_with(part) {
                return false;
            }
            rest = &rest[part.len()..];
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else if let Some(at) = rest.find(part) {
            rest = &rest[at + part.len()..];
        } else {
            return false;
        }
    }
    true
}

/// The comparison for one value: the single definition used by both evaluators.
pub fn compare(cell: &Cell, op: Op, value: &Literal) -> bool {
    use std::cmp::Ordering;
    match (value, cell) {
        (Literal::Null, Cell::Null) => op == Op::Eq,
        (Literal::Null, _) => op == Op::Ne,
        (_, Cell::Null) => false,
        (Literal::Number(v), Cell::Number(x)) => match op {
            Op::Eq => x == v,
            Op::Ne => x != v,
            Op::Lt => x < v,
            Op::Gt => x > v,
            Op::Le => x <= v,
            Op::Ge => x >= v,
        },
        (Literal::Text(s), Cell::Text(x)) if s.contains('*') => match op {
            Op::Eq => wildcard(s, x),
            Op::Ne => !wildcard(s, x),
            _ => false,
        },
        (Literal::Text(s), Cell::Text(x)) => {
            let ord = x.cmp(&s.as_str());
            match op {
                Op::Eq => ord == Ordering::Equal,
                Op::Ne => ord != Ordering::Equal,
                Op::Lt => ord == Ordering::Less,
                Op::Gt => ord == Ordering::Greater,
                Op::Le => ord != Ordering::Greater,
                Op::Ge => ord != Ordering::Less,
            }
        }
        // a number compared with text (e.g. 5056=1200 on a time text) compares as text
        (Literal::Number(v), Cell::Text(x)) => {
            compare(cell, op, &Literal::Text(format_number(*v)))
                || (op == Op::Eq && x.parse::<f64>().ok() == Some(*v))
        }
        (Literal::Text(s), Cell::Number(x)) => s
            .replace(',', ".")
            .parse::<f64>()
            .is_ok_and(|v| compare(&Cell::Number(*x), op, &Literal::Number(v))),
    }
}

fn format_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Access to the rows of one object type for evaluation.
pub trait Rows {
    fn len(&self) -> u32;
    fn cell(&self, property: u32, row: u32) -> Cell<'_>;
    /// Rows with this enum value, if the property is an enumeration (fast path, no scan).
    fn enum_rows(&self, _property: u32, _value: u32) -> Option<Cow<'_, RoaringBitmap>> {
        None
    }
    /// Rows that have a child of `child_type` matching `expr`.
    fn rows_with_child(&self, child_type: u32, expr: &Expr) -> RoaringBitmap;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Evaluate to the set of matching rows.
pub fn evaluate(e: &Expr, rows: &dyn Rows) -> RoaringBitmap {
    let mut all = RoaringBitmap::new();
    all.insert_range(0..rows.len());
    evaluate_in(e, rows, &all)
}

/// Evaluate among the rows of `within` only: bitmaps are intersected with it and scans touch
/// only its rows, so narrow area filters make property filters cheap.
pub fn evaluate_in(e: &Expr, rows: &dyn Rows, within: &RoaringBitmap) -> RoaringBitmap {
    match e {
        Expr::And(v) => {
            let mut acc = within.clone();
            for x in v {
                if acc.is_empty() {
                    break;
                }
                acc = evaluate_in(x, rows, &acc);
            }
            acc
        }
        Expr::Or(v) => v.iter().fold(RoaringBitmap::new(), |acc, x| {
            acc | evaluate_in(x, rows, within)
        }),
        Expr::Relation { child_type, expr } => rows.rows_with_child(*child_type, expr) & within,
        Expr::Cmp {
            property,
            op: Op::Eq,
            value: Literal::Number(v),
        } if v.fract() == 0.0 && *v >= 0.0 => match rows.enum_rows(*property, *v as u32) {
            Some(b) => within & b.as_ref(),
            None => scan(
                rows,
                within,
                |c| compare(&c, Op::Eq, &Literal::Number(*v)),
                *property,
            ),
        },
        Expr::Cmp {
            property,
            op,
            value,
        } => scan(rows, within, |c| compare(&c, *op, value), *property),
        Expr::In {
            property,
            values,
            negated,
        } => {
            let mut hit = RoaringBitmap::new();
            for v in values {
                hit |= evaluate_in(
                    &Expr::Cmp {
                        property: *property,
                        op: Op::Eq,
                        value: v.clone(),
                    },
                    rows,
                    within,
                );
            }
            if *negated {
                // notin: has a value, and it is none of the listed ones
                let present = scan(rows, within, |c| c != Cell::Null, *property);
                present - hit
            } else {
                hit
            }
        }
    }
}

fn scan(
    rows: &dyn Rows,
    within: &RoaringBitmap,
    pred: impl Fn(Cell) -> bool,
    property: u32,
) -> RoaringBitmap {
    within
        .iter()
        .filter(|&r| pred(rows.cell(property, r)))
        .collect()
}

/// Row-at-a-time evaluation (the oracle for tests).
pub fn matches_row(e: &Expr, rows: &dyn Rows, row: u32) -> bool {
    match e {
        Expr::And(v) => v.iter().all(|x| matches_row(x, rows, row)),
        Expr::Or(v) => v.iter().any(|x| matches_row(x, rows, row)),
        Expr::Relation { child_type, expr } => {
            rows.rows_with_child(*child_type, expr).contains(row)
        }
        Expr::Cmp {
            property,
            op,
            value,
        } => compare(&rows.cell(*property, row), *op, value),
        Expr::In {
            property,
            values,
            negated,
        } => {
            let c = rows.cell(*property, row);
            let any = values.iter().any(|v| compare(&c, Op::Eq, v));
            if *negated {
                c != Cell::Null && !any
            } else {
                any
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_documented_examples() {
        for ok in [
            "1820>=20",
            "\"1820=20 OR 1820=50\"",
            "(1820=20 OR 1820=50) AND 7992=10258",
            "5225='Gudvang*'",
            "5055>'2015-01-01'",
            "9518=null",
            "9518!=null",
            "5056=1200",
            "egenskap(10278)>=2000 AND egenskap(1313)<=100",
            "egenskap(2021) in [11576,2728,2726]",
            "egenskap(2021) notin [11576,2728]",
            "relasjon(67, relasjon(591, egenskap(5277)<4))",
            "relasjon(67, egenskap(1317)>2000 AND relasjon(591, egenskap(5277)<4))",
            "(egenskap(5054)=6248 OR egenskap(5054)=6249) AND egenskap(5074)=6429",
            "9246=12886 and 9273=12940",
        ] {
            assert!(parse(ok).is_ok(), "{ok}: {:?}", parse(ok));
        }
        assert_eq!(
            parse("egenskap(2021) in [1,2]").unwrap(),
            Expr::In {
                property: 2021,
                values: vec![Literal::Number(1.0), Literal::Number(2.0)],
                negated: false
            }
        );
    }

    #[test]
    fn errors_point_at_the_position() {
        let e = parse("relasjon(67,egenskap(1317)>2000")
            .unwrap_err()
            .to_string();
        assert!(e.contains("posisjon 31"), "{e}");
        let e = parse("2021 => 5").unwrap_err().to_string();
        assert!(e.contains("posisjon 6"), "{e}");
        for bad in [
            "",
            "2021",
            "2021=",
            "(2021=5",
            "2021=5 AND",
            "2021 in []",
            "2021 ~ 5",
            "2021='abc",
            "egenskap(x)=1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("Gudvang*", "Gudvangatunnelen"));
        assert!(wildcard("*tunnel*", "Gudvangatunnelen"));
        assert!(!wildcard("Gudvang*", "Flenja"));
        assert!(wildcard("2015-*", "2015-03-01"));
    }
}
