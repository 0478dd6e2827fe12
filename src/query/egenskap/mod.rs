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
//!
//! Split along the pipeline: `ast` (the tree, its depth and iterative drop), `parse` (lexer
//! and recursive-descent parser with the limits), `check` (against the catalogue) and `eval`
//! (bitmap and row-at-a-time evaluation). Each depends only on `ast`.

mod ast;
mod check;
mod eval;
mod parse;

pub use ast::{Expr, Literal, Op, MAX_TREE_DEPTH};
pub use check::{check, sensitive_property};
pub use eval::{compare, evaluate, evaluate_in, matches_row, wildcard, Cell, Rows};
pub use parse::parse;

#[cfg(test)]
mod test_support {
    /// Run `f` on a thread with a small stack (512 KiB; a debug-build parser level takes about
    /// 2 KiB): recursion as deep as the input would overflow it.
    pub fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(f)
            .expect("thread")
            .join()
            .expect("no panic")
    }
}
