//! Evaluation of an `egenskap` filter: to a row bitmap (intersected with the rows in scope,
//! under the request's budget) and row at a time (the tests' oracle), both through one
//! comparison.

use std::borrow::Cow;

use roaring::RoaringBitmap;

use super::ast::{Expr, Literal, Op, MAX_TREE_DEPTH};
use crate::query::budget::{self, Stop, Ticker};

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
    use super::super::parse::parse;
    use super::super::test_support::on_small_stack;
    use super::*;

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

    #[test]
    fn wildcards() {
        assert!(wildcard("Gudvang*", "Gudvangatunnelen"));
        assert!(wildcard("*tunnel*", "Gudvangatunnelen"));
        assert!(!wildcard("Gudvang*", "Flenja"));
        assert!(wildcard("2015-*", "2015-03-01"));
    }
}
