//! Rules the sources keep, checked on every file:
//! - No function in `src` is longer than [`MAX_LINES`] lines (from its signature to its closing
//!   brace, tests included): a procedure that long is a list of phases, and each phase is a named
//!   function. The sources are parsed with `syn`, so strings, comments and macros cannot fool
//!   the count. A failure lists every offender with its file, line and length.
//! - No source, test, bench or tool cites an issue number ("issue 11"): a comment says the
//!   reason itself, which stays true after the issue tracker is gone.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::path::{Path, PathBuf};

use syn::visit::Visit;

const MAX_LINES: usize = 120;

struct Lengths<'a> {
    file: &'a str,
    found: Vec<(String, String, usize, usize)>,
}

impl Lengths<'_> {
    fn note(&mut self, sig: &syn::Signature, body: &syn::Block) {
        let name = &sig.ident;
        let (start, end) = (
            sig.fn_token.span.start().line,
            body.brace_token.span.close().end().line,
        );
        let lines = end + 1 - start;
        if lines > MAX_LINES {
            self.found
                .push((self.file.to_string(), name.to_string(), start, lines));
        }
    }
}

impl<'ast> Visit<'ast> for Lengths<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.note(&f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.note(&f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(body) = &f.default {
            self.note(&f.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_function_in_src_is_longer_than_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read source");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let rel = path.strip_prefix(root).expect("under the root");
        let file = rel.to_string_lossy().replace('\\', "/");
        let mut lengths = Lengths {
            file: &file,
            found: Vec::new(),
        };
        lengths.visit_file(&ast);
        found.extend(lengths.found);
    }
    let over: Vec<String> = found
        .iter()
        .map(|(file, name, line, lines)| format!("{file}:{line} fn {name}: {lines} lines"))
        .collect();
    assert!(
        over.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        over.join("\n")
    );
}

/// Text files under `dir` (sources, scripts, Python), leaving out data: fixtures and goldens.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if path.is_dir() {
            if !matches!(
                name.as_deref(),
                Some("fixtures" | "golden" | "__pycache__" | "node_modules" | ".pytest_cache")
            ) {
                text_files(&path, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| ["rs", "py", "sh", "toml"].contains(&e.to_string_lossy().as_ref()))
        {
            out.push(path);
        }
    }
}

#[test]
fn no_source_cites_an_issue_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "tools"] {
        text_files(&root.join(dir), &mut files);
    }
    files.sort();
    let this = Path::new(file!()).file_name().expect("this file's name");
    let mut cites = Vec::new();
    for path in files.iter().filter(|p| p.file_name() != Some(this)) {
        let text = std::fs::read_to_string(path).expect("read source");
        for (i, line) in text.lines().enumerate() {
            if cites_issue(line) {
                let rel = path.strip_prefix(root).expect("under the root");
                cites.push(format!("{}:{}: {}", rel.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        cites.is_empty(),
        "comments that cite an issue number instead of the reason:\n{}",
        cites.join("\n")
    );
}

/// Whether a line names "issue N" / "issues N" / "issue #N" (any case).
fn cites_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("issue") {
        let after = &rest[at + "issue".len()..];
        let after = after.strip_prefix('s').unwrap_or(after);
        let after = after.trim_start_matches([' ', '#']);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return true;
        }
        rest = &rest[at + 1..];
    }
    false
}

#[test]
fn the_issue_check_sees_the_spellings() {
    assert!(cites_issue("// (issue 11)"));
    assert!(cites_issue("//! Issue 26 item 7: heads"));
    assert!(cites_issue("# issues 15/16"));
    assert!(cites_issue("see issue #42"));
    assert!(!cites_issue("// an issue with 3 parts"));
    assert!(!cites_issue("// issued 4 tokens"));
}
