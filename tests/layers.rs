//! The crate's layers point down only. Every `crate::…` / `super::…` path in `src/**/*.rs`
//! (outside `#[cfg(test)]` modules and comments) is an edge of a module graph whose nodes are
//! the top-level modules and `api`'s submodules; each edge must go from a higher layer to a
//! strictly lower one (the order below, documented in ARCHITECTURE.md "Layers"), and the graph
//! must have no cycle. Inside every top-level module, the graph of its direct submodules must
//! have no cycle either. A failure prints the offending edges with a file that makes them, and
//! the cycles.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers from the top down; modules on one line are one layer and must not name each other.
/// (A layer without a module is harmless.)
const LAYERS: &[&[&str]] = &[
    &["config_file"],
    &["cli"],
    // `vegdb export` writes the API's GeoJSON features (api::geojson)
    &["export"],
    &["server"],
    &["config"],
    // the router that mounts every handler, and the application inside the request stack
    &["api::router"],
    &["api::stack"],
    &["api::openapi", "api::guard", "api::health", "api::docs"],
    &["api::ogc"],
    &["api::forward"],
    &["api::read", "api::write", "api::tiles"],
    // the common start of a read handler (`begin`) and its registration (`read_route!`)
    &["api::handler"],
    // the generation of a request at a past day (`tidspunkt`): the stack resolves it, handlers take it
    &["api::dated"],
    &["api::geojson"],
    &["api::query_doc"],
    &["api::object_json"],
    &["api::stream"],
    &["api::object_docs"],
    &["api::paging", "api::media", "api::catalog_docs"],
    // the response types (with `PositionJson`, the compact JSON writer of /posisjon and /veg)
    &["api::dto"],
    // `AppState` and the API's settings, below every handler
    &["api::state"],
    &[
        "api::params",
        "api::cursor",
        "api::request_base",
        "api::xml",
        // CSV of the table answers (media's content type, the statistics tables' rows)
        "api::csv",
    ],
    &["api::error"],
    // what a request is, from its path: the one place path strings are matched
    &["api::route"],
    // the access log's writer: its options are part of `api::state::OpsOptions`; it names
    // nothing above
    &["api::access_log"],
    // heavy bodies produced off the async workers (the stack, stream and geojson mark and wrap)
    &["api::heavy"],
    // the metrics registry: read by the request stack, reads the writer and the generation store
    &["metrics"],
    &["replica"],
    // import and refresh build generations with the writer's working state (`changeset`)
    &["import"],
    &["changeset"],
    // generations on object storage (the writer's publisher uses it; it uses the data directory)
    &["remote"],
    // users, roles and rights, used by both APIs and by the write path's checks
    &["auth"],
    &["generate", "tiles"],
    &["query"],
    &["generation"],
    &["index"],
    &["snapshot"],
    &["area", "durable", "failpoints", "demo"],
    &["geo", "catalog"],
    &["error", "util", "value", "ids"],
];

type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The path of modules a source file is (`src/api/read/mod.rs` → `api::read`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// Source text without comments and without the `#[cfg(test)] mod …` blocks at the end.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            let next = lines.peek().map(|l| l.trim_start()).unwrap_or("");
            if next.starts_with("mod ") || next.starts_with("pub mod ") {
                break;
            }
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path a file names that starts with `crate::` or `super::`, as absolute module paths
/// (groups `crate::{a, b::c}` expand to one path each).
fn named_paths(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let at_word = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != ':';
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let (base, skip) = if at_word && rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if at_word && rest.starts_with("super::") {
            let mut base = here.to_vec();
            let mut j = i;
            loop {
                let r: String = bytes[j..bytes.len().min(j + 7)].iter().collect();
                if r == "super::" {
                    base.pop();
                    j += 7;
                } else {
                    break;
                }
            }
            (base, j - i)
        } else {
            i += 1;
            continue;
        };
        let (paths, end) = parse_tree(&bytes, i + skip);
        for p in paths {
            let mut full = base.clone();
            full.extend(p);
            found.push(full);
        }
        i = end.max(i + 1);
    }
    found
}

/// A use tree at `i`: `a::b`, `a::{b, c::d}`, `{a, b}`; returns its paths and the end.
fn parse_tree(s: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        if i < s.len() && s[i] == '{' {
            let mut out = Vec::new();
            i += 1;
            loop {
                while i < s.len() && (s[i].is_whitespace() || s[i] == ',') {
                    i += 1;
                }
                if i >= s.len() || s[i] == '}' {
                    return (out, i + 1);
                }
                let (sub, end) = parse_tree(s, i);
                for p in sub {
                    let mut full = prefix.clone();
                    full.extend(p);
                    out.push(full);
                }
                // skip `as name` and anything else up to the next item
                i = end;
                while i < s.len() && s[i] != ',' && s[i] != '}' {
                    if s[i] == '{' {
                        break;
                    }
                    i += 1;
                }
            }
        }
        let start = i;
        while i < s.len() && is_ident(s[i]) {
            i += 1;
        }
        let word: String = s[start..i].iter().collect();
        if word.is_empty() || word == "self" || word == "*" {
            return (vec![prefix], i);
        }
        prefix.push(word);
        if i + 1 < s.len() && s[i] == ':' && s[i + 1] == ':' {
            i += 2;
            continue;
        }
        return (vec![prefix], i);
    }
}

/// The graph node of an absolute module path: a top-level module, or `api::<child>` when the
/// child is a module (`crate::api::AppState` would be `api`, which is in no layer).
fn node_of(src: &Path, path: &[String]) -> Option<String> {
    let first = path.first()?;
    if first == "api" {
        if let Some(second) = path.get(1) {
            if src.join("api").join(format!("{second}.rs")).exists()
                || src.join("api").join(second).is_dir()
            {
                return Some(format!("api::{second}"));
            }
        }
        return Some("api".to_string());
    }
    let is_module = src.join(format!("{first}.rs")).exists() || src.join(first).is_dir();
    is_module.then(|| first.clone())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// (graph over top-level modules and api's children, graphs over each module's children)
fn crate_graphs(src: &Path) -> (Graph, BTreeMap<String, Graph>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut top: Graph = BTreeMap::new();
    let mut inner: BTreeMap<String, Graph> = BTreeMap::new();
    for file in files {
        let here = module_path(src, &file);
        let Some(from) = node_of(src, &here) else {
            continue; // lib.rs, main.rs
        };
        let text = std::fs::read_to_string(&file).expect("read source");
        let rel = file
            .strip_prefix(src)
            .expect("under src")
            .display()
            .to_string();
        for path in named_paths(&code_of(&text), &here) {
            let Some(to) = node_of(src, &path) else {
                continue;
            };
            if to != from {
                top.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| rel.clone());
            }
            // inside one top-level module: its direct children
            if here.len() >= 2 && path.len() >= 2 && here[0] == path[0] && here[1] != path[1] {
                let dir = src.join(&here[0]);
                let child = |c: &str| dir.join(format!("{c}.rs")).exists() || dir.join(c).is_dir();
                if child(&path[1]) {
                    inner
                        .entry(here[0].clone())
                        .or_default()
                        .entry(here[1].clone())
                        .or_default()
                        .entry(path[1].clone())
                        .or_insert_with(|| rel.clone());
                }
            }
        }
    }
    (top, inner)
}

/// Strongly connected components with more than one node (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        let g = s.g;
        for w in g.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Edges that do not point strictly down the layer order, and nodes the order does not name.
fn violations(g: &Graph, layers: &[&[&str]]) -> Vec<String> {
    let rank = |n: &str| layers.iter().position(|l| l.contains(&n));
    let mut out = Vec::new();
    for (from, tos) in g {
        for (to, file) in tos {
            match (rank(from), rank(to)) {
                (Some(a), Some(b)) if a < b => {}
                (Some(_), Some(_)) => out.push(format!("{from} -> {to} points up ({file})")),
                (None, _) => out.push(format!("{from} is in no layer ({file})")),
                (_, None) => out.push(format!("{to} is in no layer ({file})")),
            }
        }
    }
    out
}

fn describe(cs: &[Vec<String>], g: &Graph) -> String {
    let mut s = String::new();
    for c in cs {
        s.push_str(&format!("cycle: {}\n", c.join(" <-> ")));
        for a in c {
            for (b, file) in g.get(a).into_iter().flatten() {
                if c.contains(b) {
                    s.push_str(&format!("  {a} -> {b} ({file})\n"));
                }
            }
        }
    }
    s
}

#[test]
fn modules_only_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (top, inner) = crate_graphs(&src);
    assert!(top.len() > 10, "the parser found the modules: {top:?}");
    let mut problems = violations(&top, LAYERS);
    let cs = cycles(&top);
    let mut report = describe(&cs, &top);
    for (module, g) in &inner {
        let c = cycles(g);
        if !c.is_empty() {
            report.push_str(&format!("inside {module}:\n{}", describe(&c, g)));
            problems.push(format!("cycle inside {module}"));
        }
    }
    assert!(
        problems.is_empty() && cs.is_empty(),
        "{}\n{report}",
        problems.join("\n")
    );
}

/// `api/mod.rs` only names the API's modules: a path the checker cannot see (`use read::…`,
/// `pub use router::…`) or an item there would make `api` a node of its own again.
#[test]
fn the_api_module_only_names_its_rooms() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api/mod.rs");
    let text = std::fs::read_to_string(file).expect("read api/mod.rs");
    let items: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .filter(|l| !(l.starts_with("pub mod ") && l.ends_with(';')))
        .collect();
    assert!(
        items.is_empty(),
        "api/mod.rs has more than modules: {items:?}"
    );
}

#[test]
fn the_checker_finds_cycles_and_upward_edges() {
    let mut g = Graph::new();
    let mut edge = |a: &str, b: &str| {
        g.entry(a.into())
            .or_default()
            .insert(b.into(), format!("{a}.rs"));
    };
    edge("api", "query");
    edge("query", "index");
    edge("index", "query");
    edge("index", "error");
    let cs = cycles(&g);
    assert_eq!(cs, vec![vec!["index".to_string(), "query".to_string()]]);
    assert!(describe(&cs, &g).contains("index -> query (index.rs)"));
    let v = violations(&g, &[&["api"], &["query"], &["index"], &["error"]]);
    assert_eq!(v, vec!["index -> query points up (index.rs)".to_string()]);
    let acyclic: Graph = [(
        "a".to_string(),
        BTreeMap::from([("b".into(), "a.rs".into())]),
    )]
    .into();
    assert!(cycles(&acyclic).is_empty());
    assert!(violations(&acyclic, &[&["a"], &["b"]]).is_empty());
    assert_eq!(
        violations(&acyclic, &[&["a", "b"]]),
        vec!["a -> b points up (a.rs)".to_string()],
        "one layer may not name itself"
    );
}

#[test]
fn the_parser_reads_use_trees_and_super_paths() {
    let here: Vec<String> = vec!["api".into(), "read".into(), "veg".into()];
    let code = code_of(
        "use crate::{error::Result, query::{network::nearest, vegref}};\n\
         // use crate::server::run;\n\
         use super::super::dto::X;\n\
         fn f() { crate::api::write::optional_user(); not_crate::x(); }\n\
         #[cfg(test)]\nmod tests { use crate::cli::Cli; }\n",
    );
    let paths: Vec<String> = named_paths(&code, &here)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "error::Result",
            "query::network::nearest",
            "query::vegref",
            "api::dto::X",
            "api::write::optional_user"
        ]
    );
}
