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
//!
//! Limits (`query::limits`): at most 8,192 characters, 32 nesting levels (parentheses and
//! `relasjon` together) and 256 conditions per expression, checked while parsing — the depth
//! before each descent, so the recursive-descent parser cannot run out of stack. Every tree
//! `parse` returns is therefore at most 32 levels deep, which bounds every recursive walk of it
//! (catalogue check, evaluation, `Drop`); the evaluators also measure the depth of what they are
//! given without recursion and refuse a deeper tree built by other code. Evaluation checks the
//! request's budget (`query::budget`) every few thousand rows.

use std::borrow::Cow;

use roaring::RoaringBitmap;

use super::budget::{self, Stop, Ticker};
use super::limits::{MAX_CONDITIONS, MAX_DEPTH, MAX_EXPRESSION_CHARS};
use crate::catalog::{Catalog, ObjectType, ValueKind};
use crate::error::{EngineError, Expected, FilterCatalog, FilterSyntax, Invalid, Result};

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

fn err(pos: usize, text: &str, problem: FilterSyntax) -> EngineError {
    Invalid::FilterSyntax {
        pos,
        expression: text.to_string(),
        problem,
    }
    .into()
}

/// Deepest tree `parse` can return: each nesting level adds at most an Or, an And and a
/// Relation node, and the top level an Or, an And and the condition.
pub const MAX_TREE_DEPTH: usize = 3 * (MAX_DEPTH + 1);

impl Expr {
    /// Levels of nodes (a lone condition is 1). Measured with an explicit stack, so a tree of
    /// any depth can be measured.
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((e, d)) = stack.pop() {
            deepest = deepest.max(d);
            match e {
                Expr::And(v) | Expr::Or(v) => stack.extend(v.iter().map(|x| (x, d + 1))),
                Expr::Relation { expr, .. } => stack.push((expr, d + 1)),
                Expr::Cmp { .. } | Expr::In { .. } => {}
            }
        }
        deepest
    }
}

/// Dropping takes the children out first and drops them from an explicit stack, so no tree,
/// however it was built, is dropped by recursion as deep as the tree.
impl Drop for Expr {
    fn drop(&mut self) {
        fn take_children(e: &mut Expr, into: &mut Vec<Expr>) {
            match e {
                Expr::And(v) | Expr::Or(v) => into.append(v),
                Expr::Relation { expr, .. } => {
                    into.push(std::mem::replace(&mut **expr, Expr::And(Vec::new())))
                }
                Expr::Cmp { .. } | Expr::In { .. } => {}
            }
        }
        let mut stack = Vec::new();
        take_children(self, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_children(&mut e, &mut stack);
            // `e` has no children left: its own drop ends at once
        }
    }
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
                    _ => return Err(err(start, text, FilterSyntax::BangWithoutEquals)),
                };
                out.push((start, Tok::Op(op)));
            }
            '\'' | '"' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&d| d == c)
                    .ok_or_else(|| err(start, text, FilterSyntax::UnterminatedText))?;
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
                    .map_err(|_| err(start, text, FilterSyntax::BadNumber(s.clone())))?;
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
            other => return Err(err(start, text, FilterSyntax::UnexpectedChar(other))),
        }
        i += 1;
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<(usize, Tok)>,
    i: usize,
    text: &'a str,
    /// Open parentheses and relations around the current position.
    depth: usize,
    /// Conditions parsed so far.
    conditions: usize,
}

impl Parser<'_> {
    fn pos(&self) -> usize {
        self.toks
            .get(self.i)
            .map(|t| t.0)
            .unwrap_or_else(|| self.text.chars().count())
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.1)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.i).map(|t| t.1.clone());
        self.i += 1;
        t
    }
    fn expect(&mut self, want: Tok, what: Expected) -> Result<()> {
        let pos = self.pos();
        match self.next() {
            Some(t) if t == want => Ok(()),
            found => Err(self.expected(pos, what, found.map(|t| format!("{t:?}")))),
        }
    }
    /// `found`: the token's debug form, None when the expression ended.
    fn expected(&self, pos: usize, what: Expected, found: Option<String>) -> EngineError {
        err(pos, self.text, FilterSyntax::Expected { what, found })
    }
    /// Enter one nesting level (before descending into it).
    fn enter(&mut self, pos: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(err(
                pos,
                self.text,
                FilterSyntax::TooDeep { max: MAX_DEPTH },
            ));
        }
        Ok(())
    }
    /// Count one condition.
    fn count(&mut self, pos: usize) -> Result<()> {
        self.conditions += 1;
        if self.conditions > MAX_CONDITIONS {
            return Err(err(
                pos,
                self.text,
                FilterSyntax::TooManyConditions {
                    max: MAX_CONDITIONS,
                },
            ));
        }
        Ok(())
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
    fn integer(&mut self, what: Expected) -> Result<u32> {
        let pos = self.pos();
        match self.next() {
            Some(Tok::Num(v)) if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 => {
                Ok(v as u32)
            }
            other => Err(self.expected(pos, what, Some(format!("{other:?}")))),
        }
    }
    fn unary(&mut self) -> Result<Expr> {
        let pos = self.pos();
        match self.peek() {
            Some(Tok::LParen) => {
                self.enter(pos)?;
                self.i += 1;
                let e = self.expr()?;
                self.expect(Tok::RParen, Expected::CloseParen)?;
                self.depth -= 1;
                Ok(e)
            }
            Some(Tok::Ident(w)) if w == "relasjon" => {
                self.enter(pos)?;
                self.count(pos)?;
                self.i += 1;
                self.expect(Tok::LParen, Expected::OpenParenAfterRelation)?;
                let child_type = self.integer(Expected::TypeId)?;
                self.expect(Tok::Comma, Expected::CommaAfterTypeId)?;
                let e = self.expr()?;
                self.expect(Tok::RParen, Expected::CloseParenAfterRelation)?;
                self.depth -= 1;
                Ok(Expr::Relation {
                    child_type,
                    expr: Box::new(e),
                })
            }
            Some(Tok::Ident(w)) if w == "egenskap" => {
                self.i += 1;
                self.expect(Tok::LParen, Expected::OpenParenAfterProperty)?;
                let p = self.integer(Expected::PropertyId)?;
                self.expect(Tok::RParen, Expected::CloseParen)?;
                self.condition(p)
            }
            Some(Tok::Num(_)) => {
                let p = self.integer(Expected::PropertyId)?;
                self.condition(p)
            }
            found => Err(self.expected(pos, Expected::Condition, found.map(|t| format!("{t:?}")))),
        }
    }
    fn literal(&mut self) -> Result<Literal> {
        let pos = self.pos();
        match self.next() {
            Some(Tok::Num(v)) => Ok(Literal::Number(v)),
            Some(Tok::Str(s)) => Ok(Literal::Text(s)),
            Some(Tok::Ident(w)) if w == "null" => Ok(Literal::Null),
            other => Err(self.expected(pos, Expected::Value, Some(format!("{other:?}")))),
        }
    }
    fn condition(&mut self, property: u32) -> Result<Expr> {
        let pos = self.pos();
        self.count(pos)?;
        match self.next() {
            Some(Tok::Op(op)) => Ok(Expr::Cmp {
                property,
                op,
                value: self.literal()?,
            }),
            Some(Tok::Ident(w)) if w == "in" || w == "notin" => {
                self.expect(Tok::LBracket, Expected::OpenBracket)?;
                let mut values = vec![self.literal()?];
                while self.peek() == Some(&Tok::Comma) {
                    self.i += 1;
                    values.push(self.literal()?);
                }
                self.expect(Tok::RBracket, Expected::CloseBracket)?;
                Ok(Expr::In {
                    property,
                    values,
                    negated: w == "notin",
                })
            }
            other => Err(self.expected(pos, Expected::Operator, Some(format!("{other:?}")))),
        }
    }
}

/// Parse a filter. One surrounding pair of double quotes is removed first. Longer, deeper or
/// wider expressions than `query::limits` allows are refused (422/4005).
pub fn parse(text: &str) -> Result<Expr> {
    let chars = text.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(Invalid::FilterTooLong {
            chars,
            max: MAX_EXPRESSION_CHARS,
        }
        .into());
    }
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
        depth: 0,
        conditions: 0,
    };
    if p.toks.is_empty() {
        return Err(err(0, t, FilterSyntax::Empty));
    }
    let e = p.expr()?;
    if p.i < p.toks.len() {
        return Err(err(
            p.pos(),
            t,
            FilterSyntax::Trailing(format!("{:?}", p.toks[p.i].1)),
        ));
    }
    Ok(e)
}

/// Check the filter against the catalogue for `object_type`: properties must belong to the type
/// (or, inside `relasjon`, to the child type, which must be a catalogue child); enum properties
/// take ids and only =, !=, in, notin.
pub fn check(e: &Expr, catalog: &Catalog, t: &ObjectType) -> Result<()> {
    let bad = |problem: FilterCatalog| EngineError::from(Invalid::FilterCatalog(problem));
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().try_for_each(|x| check(x, catalog, t)),
        Expr::Relation { child_type, expr } => {
            if !t
                .relation_types
                .children
                .iter()
                .any(|r| r.target.id == *child_type)
            {
                return Err(bad(FilterCatalog::NotAChild {
                    type_id: t.id,
                    child_type: *child_type,
                }));
            }
            let ct = catalog
                .object_type(*child_type)
                .ok_or_else(|| bad(FilterCatalog::UnknownType(*child_type)))?;
            check(expr, catalog, ct)
        }
        Expr::Cmp {
            property,
            op,
            value,
        } => {
            let p = t.property(*property).ok_or_else(|| {
                bad(FilterCatalog::NotOnType {
                    property: *property,
                    type_id: t.id,
                })
            })?;
            if p.storage() == ValueKind::Enum && !matches!(op, Op::Eq | Op::Ne) {
                return Err(bad(FilterCatalog::EnumNeedsEquality(*property)));
            }
            if p.storage() == ValueKind::Enum {
                if let Literal::Text(s) = value {
                    return Err(bad(FilterCatalog::EnumComparedWithText {
                        property: *property,
                        text: s.clone(),
                    }));
                }
            }
            if p.storage() == ValueKind::Geometry {
                return Err(bad(FilterCatalog::Geometry(*property)));
            }
            Ok(())
        }
        Expr::In {
            property, values, ..
        } => {
            let p = t.property(*property).ok_or_else(|| {
                bad(FilterCatalog::NotOnType {
                    property: *property,
                    type_id: t.id,
                })
            })?;
            if values.contains(&Literal::Null) {
                return Err(bad(FilterCatalog::NullInList));
            }
            if p.storage() == ValueKind::Geometry {
                return Err(bad(FilterCatalog::Geometry(*property)));
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

/// Is `e` too deep to walk recursively? Then the current budget is stopped as
/// [`Stop::TooComplex`] (trees from `parse` never are).
fn refuse_deep(e: &Expr) -> bool {
    if e.depth() <= MAX_TREE_DEPTH {
        return false;
    }
    budget::stop(Stop::TooComplex);
    tracing::error!(
        depth = e.depth(),
        "filter tree deeper than the parser allows"
    );
    true
}

/// Evaluate among the rows of `within` only: bitmaps are intersected with it and scans touch
/// only its rows, so narrow area filters make property filters cheap. Checks the request's
/// budget while scanning; once it is exhausted the result is incomplete (and `budget::run`
/// discards it). A tree deeper than `parse` produces matches nothing and stops the budget.
pub fn evaluate_in(e: &Expr, rows: &dyn Rows, within: &RoaringBitmap) -> RoaringBitmap {
    if refuse_deep(e) {
        return RoaringBitmap::new();
    }
    eval(e, rows, within)
}

fn eval(e: &Expr, rows: &dyn Rows, within: &RoaringBitmap) -> RoaringBitmap {
    if budget::exhausted() {
        return RoaringBitmap::new();
    }
    match e {
        Expr::And(v) => {
            let mut acc = within.clone();
            for x in v {
                if acc.is_empty() {
                    break;
                }
                acc = eval(x, rows, &acc);
            }
            acc
        }
        Expr::Or(v) => v
            .iter()
            .fold(RoaringBitmap::new(), |acc, x| acc | eval(x, rows, within)),
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
            // enum ids through the bitmaps, everything else in one scan
            let mut hit = RoaringBitmap::new();
            let mut scanned: Vec<&Literal> = Vec::new();
            for v in values {
                let bitmap = match v {
                    Literal::Number(x) if x.fract() == 0.0 && *x >= 0.0 => {
                        rows.enum_rows(*property, *x as u32)
                    }
                    _ => None,
                };
                match bitmap {
                    Some(b) => hit |= within & b.as_ref(),
                    None => scanned.push(v),
                }
            }
            if !scanned.is_empty() {
                hit |= scan(
                    rows,
                    within,
                    |c| scanned.iter().any(|v| compare(&c, Op::Eq, v)),
                    *property,
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
    let mut ticker = Ticker::new();
    let mut out = RoaringBitmap::new();
    for r in within.iter() {
        if ticker.exhausted() {
            break;
        }
        if pred(rows.cell(property, r)) {
            out.insert(r);
        }
    }
    out
}

/// Row-at-a-time evaluation (the oracle for tests). A tree deeper than `parse` produces
/// matches nothing and stops the budget.
pub fn matches_row(e: &Expr, rows: &dyn Rows, row: u32) -> bool {
    !refuse_deep(e) && row_matches(e, rows, row)
}

fn row_matches(e: &Expr, rows: &dyn Rows, row: u32) -> bool {
    match e {
        Expr::And(v) => v.iter().all(|x| row_matches(x, rows, row)),
        Expr::Or(v) => v.iter().any(|x| row_matches(x, rows, row)),
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

    /// (position, problem) of a syntax error.
    fn syntax(e: EngineError) -> Option<(usize, FilterSyntax)> {
        match e {
            EngineError::Invalid(Invalid::FilterSyntax { pos, problem, .. }) => {
                Some((pos, problem))
            }
            _ => None,
        }
    }

    #[test]
    fn errors_point_at_the_position() {
        let e = syntax(parse("relasjon(67,egenskap(1317)>2000").unwrap_err());
        assert!(matches!(e, Some((31, _))), "{e:?}");
        let e = syntax(parse("2021 => 5").unwrap_err());
        assert!(matches!(e, Some((6, _))), "{e:?}");
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

    fn nested(depth: usize, inner: &str) -> String {
        format!("{}{inner}{}", "(".repeat(depth), ")".repeat(depth))
    }

    /// Run `f` on a thread with a small stack (512 KiB; a debug-build parser level takes about
    /// 2 KiB): recursion as deep as the input would overflow it.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(f)
            .expect("thread")
            .join()
            .expect("no panic")
    }

    #[test]
    fn nesting_is_limited_to_32_levels_before_descending() {
        assert!(parse(&nested(32, "2021=1")).is_ok());
        let mut relations = "2021=1".to_string();
        for _ in 0..32 {
            relations = format!("relasjon(96,{relations})");
        }
        assert!(parse(&relations).is_ok());
        for deep in [
            nested(33, "2021=1"),
            format!("relasjon(96,{relations})"),
            nested(16, &format!("(((relasjon(5, {})))", nested(14, "1=1"))),
        ] {
            let e = syntax(parse(&deep).unwrap_err());
            assert!(
                matches!(e, Some((_, FilterSyntax::TooDeep { max: 32 }))),
                "{e:?}"
            );
        }
        // 4,000 levels fit in the length limit; refused without deep recursion
        let deepest = nested(4_000, "2021=1");
        assert!(deepest.len() <= MAX_EXPRESSION_CHARS);
        let e = on_small_stack(move || parse(&deepest).map_err(syntax));
        assert_eq!(
            e.unwrap_err(),
            Some((32, FilterSyntax::TooDeep { max: 32 }))
        );
        // unclosed, too: the error comes at level 33, not at the end
        let e = on_small_stack(|| parse(&"(".repeat(8_000)).map_err(syntax));
        assert_eq!(
            e.unwrap_err(),
            Some((32, FilterSyntax::TooDeep { max: 32 }))
        );
    }

    #[test]
    fn length_and_conditions_are_limited() {
        let ors = |n: usize| vec!["2021=1"; n].join(" OR ");
        assert!(parse(&ors(MAX_CONDITIONS)).is_ok());
        let e = syntax(parse(&ors(MAX_CONDITIONS + 1)).unwrap_err());
        assert!(
            matches!(e, Some((_, FilterSyntax::TooManyConditions { max: 256 }))),
            "{e:?}"
        );
        let rels = |n: usize| vec!["relasjon(5, 1=1)"; n].join(" AND ");
        // a relation and its condition count two
        assert!(parse(&rels(MAX_CONDITIONS / 2)).is_ok());
        assert!(parse(&rels(MAX_CONDITIONS / 2 + 1)).is_err());
        let long = format!("2021 in [{}]", vec!["1"; 5000].join(","));
        let chars = long.chars().count();
        assert!(matches!(
            parse(&long).unwrap_err(),
            EngineError::Invalid(Invalid::FilterTooLong { chars: c, max: 8192 }) if c == chars
        ));
        // other errors carry the expression (`api::error` echoes it shortened)
        let text = format!("{} OR 2021 ~ 1", ors(200));
        match parse(&text).unwrap_err() {
            EngineError::Invalid(Invalid::FilterSyntax {
                expression,
                problem: FilterSyntax::UnexpectedChar('~'),
                ..
            }) => assert_eq!(expression, text),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deep_trees_built_by_hand_are_refused_and_dropped_without_recursion() {
        fn cmp() -> Expr {
            Expr::Cmp {
                property: 1,
                op: Op::Eq,
                value: Literal::Number(1.0),
            }
        }
        fn build(depth: usize) -> Expr {
            let mut e = cmp();
            for _ in 1..depth {
                e = Expr::Relation {
                    child_type: 5,
                    expr: Box::new(e),
                };
            }
            e
        }
        assert_eq!(build(MAX_TREE_DEPTH).depth(), MAX_TREE_DEPTH);
        struct NoRows;
        impl Rows for NoRows {
            fn len(&self) -> u32 {
                10
            }
            fn cell(&self, _: u32, _: u32) -> Cell<'_> {
                Cell::Number(1.0)
            }
            fn rows_with_child(&self, _: u32, e: &Expr) -> RoaringBitmap {
                evaluate(e, self)
            }
        }
        let deep = build(MAX_TREE_DEPTH + 1);
        let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let flag = || std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = budget::run(far, flag(), || evaluate(&deep, &NoRows));
        assert_eq!(r, Err(Stop::TooComplex));
        assert!(!matches_row(&deep, &NoRows, 0));
        let ok = build(MAX_TREE_DEPTH);
        assert_eq!(
            budget::run(far, flag(), || evaluate(&ok, &NoRows).len()),
            Ok(10)
        );
        // a million levels measured, and dropped, on a small stack
        assert_eq!(on_small_stack(|| build(1_000_000).depth()), 1_000_000);
        let wide_and_deep = on_small_stack(move || {
            let mut e = cmp();
            for i in 0..200_000 {
                e = if i % 2 == 0 {
                    Expr::Or(vec![cmp(), e])
                } else {
                    Expr::Relation {
                        child_type: 5,
                        expr: Box::new(e),
                    }
                };
            }
            e.depth()
        });
        assert_eq!(wide_and_deep, 200_001);
    }

    #[test]
    fn evaluation_stops_when_the_budget_runs_out() {
        /// 20 million rows: 256 scans of them take minutes.
        struct Big;
        impl Rows for Big {
            fn len(&self) -> u32 {
                20_000_000
            }
            fn cell(&self, _: u32, row: u32) -> Cell<'_> {
                Cell::Number(row as f64)
            }
            fn rows_with_child(&self, _: u32, _: &Expr) -> RoaringBitmap {
                RoaringBitmap::new()
            }
        }
        let e = parse(&vec!["1 > -1"; 256].join(" OR ")).expect("parses");
        let t = std::time::Instant::now();
        let r = budget::run(
            t + std::time::Duration::from_millis(100),
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            || evaluate(&e, &Big),
        );
        assert_eq!(r.map(|b| b.len()), Err(Stop::Deadline));
        assert!(
            t.elapsed() < std::time::Duration::from_secs(3),
            "stopped after {:?}",
            t.elapsed()
        );
    }

    #[test]
    fn in_lists_select_what_their_conditions_do() {
        /// Row r has value r % 7 (as a number), none for r % 5 == 0.
        struct Mod;
        impl Rows for Mod {
            fn len(&self) -> u32 {
                1000
            }
            fn cell(&self, _: u32, row: u32) -> Cell<'_> {
                if row.is_multiple_of(5) {
                    Cell::Null
                } else {
                    Cell::Number((row % 7) as f64)
                }
            }
            fn rows_with_child(&self, _: u32, _: &Expr) -> RoaringBitmap {
                RoaringBitmap::new()
            }
        }
        for (list, ors) in [
            ("1 in [2, 3, '4']", "1=2 OR 1=3 OR 1=4"),
            ("1 notin [2, 3]", "1!=null AND 1!=2 AND 1!=3"),
        ] {
            let (a, b) = (parse(list).unwrap(), parse(ors).unwrap());
            let got = evaluate(&a, &Mod);
            assert_eq!(got, evaluate(&b, &Mod), "{list}");
            for r in 0..1000 {
                assert_eq!(got.contains(r), matches_row(&b, &Mod, r), "{list} row {r}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any text: an answer, never a panic; what parses is within the limits.
        #[test]
        fn parsing_never_panics_on_any_text(text in "\\PC{0,400}") {
            if let Ok(e) = parse(&text) {
                proptest::prop_assert!(e.depth() <= MAX_TREE_DEPTH);
            }
        }

        /// Near-valid token soup (the grammar's own pieces in random order and nesting).
        #[test]
        fn parsing_never_panics_on_token_soup(
            toks in proptest::collection::vec(proptest::sample::select(vec![
                "(", ")", "(", ")", "relasjon(", "relasjon(96,", "egenskap(", "2021", "5",
                "-1.5", ".", "-", "=", "!=", "<", ">=", "!", " in [", " notin [", "]", ",",
                " AND ", " OR ", " and ", "null", "'Gudvang*'", "'", "\"", "\"2015-01-01\"",
                "4294967296", "1e9", "ø", " ",
            ]), 0..300)
        ) {
            let text: String = toks.concat();
            if let Ok(e) = parse(&text) {
                proptest::prop_assert!(e.depth() <= MAX_TREE_DEPTH);
                let mut conditions = 0;
                let mut stack = vec![&e];
                while let Some(x) = stack.pop() {
                    match x {
                        Expr::And(v) | Expr::Or(v) => stack.extend(v.iter()),
                        Expr::Relation { expr, .. } => {
                            conditions += 1;
                            stack.push(expr);
                        }
                        _ => conditions += 1,
                    }
                }
                proptest::prop_assert!(conditions <= MAX_CONDITIONS);
            }
        }

        /// A chain of parentheses and relations parses exactly when it is at most 32 deep.
        #[test]
        fn nesting_parses_exactly_up_to_the_limit(
            kinds in proptest::collection::vec(proptest::bool::ANY, 0..80)
        ) {
            let mut text = "2021!=null".to_string();
            for &relation in &kinds {
                text = if relation {
                    format!("relasjon(96, {text})")
                } else {
                    format!("({text} OR 2021=1)")
                };
            }
            proptest::prop_assert_eq!(parse(&text).is_ok(), kinds.len() <= MAX_DEPTH, "{}", text);
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
