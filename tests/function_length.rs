//! No function in `src` is longer than [`MAX_LINES`] lines (from its signature to its closing
//! brace, tests included): a procedure that long is a list of phases, and each phase is a named
//! function. The sources are parsed with `syn`, so strings, comments and macros cannot fool the
//! count. A failure lists every offender with its file, line and length.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::path::{Path, PathBuf};

use syn::visit::Visit;

const MAX_LINES: usize = 120;

/// Functions still over the limit while they are being split (file, function name). Empty when
/// the work is done; an entry that is no longer needed fails the test too, so the list only shrinks.
const NOT_YET: &[(&str, &str)] = &[];

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
        .filter(|(file, name, ..)| !NOT_YET.contains(&(file.as_str(), name.as_str())))
        .map(|(file, name, line, lines)| format!("{file}:{line} fn {name}: {lines} lines"))
        .collect();
    let stale: Vec<String> = NOT_YET
        .iter()
        .filter(|(file, name)| !found.iter().any(|(f, n, ..)| f == file && n == name))
        .map(|(file, name)| format!("{file} fn {name}"))
        .collect();
    assert!(
        over.is_empty() && stale.is_empty(),
        "functions over {MAX_LINES} lines:\n{}\nentries in NOT_YET that are no longer over:\n{}",
        over.join("\n"),
        stale.join("\n")
    );
}
