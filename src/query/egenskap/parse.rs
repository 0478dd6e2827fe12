//! Lexer and recursive-descent parser of the `egenskap` filter language (grammar in
//! `egenskap/mod.rs`), with positioned errors and the `query::limits` checked while parsing.

use super::ast::{Expr, Literal, Op};
use crate::error::{EngineError, Expected, FilterSyntax, Invalid, Result};
use crate::query::limits::{MAX_CONDITIONS, MAX_DEPTH, MAX_EXPRESSION_CHARS};

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

#[cfg(test)]
mod tests {
    use super::super::ast::MAX_TREE_DEPTH;
    use super::super::test_support::on_small_stack;
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
}
