//! Embeds the demo snapshot (`snapshots/demo`: CURRENT and its generation) in the binary, so a
//! copied binary serves it anywhere (`src/demo.rs`). Writes `$OUT_DIR/demo_files.rs`: a list of
//! (relative path, `include_bytes!` of the file). Without the directory the list is empty.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files_below(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "LOCK" {
            continue; // not part of the snapshot
        }
        if path.is_dir() {
            files_below(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.to_path_buf());
        }
    }
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let demo = manifest_dir.join("snapshots").join("demo");
    println!("cargo:rerun-if-changed=snapshots/demo");
    println!("cargo:rerun-if-changed=build.rs");
    let mut files = Vec::new();
    files_below(&demo, &demo, &mut files);
    files.sort();
    let mut code = String::from(
        "/// The demo snapshot's files: (path relative to the snapshot, contents).\npub static DEMO_FILES: &[(&str, &[u8])] = &[\n",
    );
    for rel in &files {
        let rel_text = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        // relative to the crate being compiled, not this run's absolute path: a build
        // directory shared between checkouts must not embed another checkout's files
        let _ = writeln!(
            code,
            "    ({rel_text:?}, include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {:?}))),",
            format!("/snapshots/demo/{rel_text}")
        );
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("demo_files.rs");
    // a new file renamed over the old one, never the old one rewritten in place: a build
    // directory copied with hard links must not see another copy's list
    let tmp = out.with_extension("rs.tmp");
    std::fs::write(&tmp, code).expect("writing demo_files.rs");
    std::fs::rename(&tmp, &out).expect("renaming demo_files.rs");
}
