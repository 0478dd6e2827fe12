//! The parsed `egenskap` filter: operators, literals and the expression tree, with its depth
//! measured and its drop done without recursion.

use crate::query::limits::MAX_DEPTH;

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
