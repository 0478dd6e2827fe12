//! The README's test command is one command that does its own set-up: a new
//! user on a fresh machine runs it and every test runs, none skipped for a missing part.
//!
//! Checked against the files themselves: the command in README's "Run every test" block is a
//! script of the repository, `.ci/run` runs exactly that script (so CI proves it on a fresh
//! machine), and the script sets up every real part a Rust test asks for (each `VEGDB_SKIP_*`
//! escape hatch the tests know, each external program they start) and skips none of them.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the first fenced `sh` block after `heading` in the README.
fn readme_block_after(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?}"));
    let rest = &readme[start..];
    let open = rest.find("```sh\n").expect("a ```sh block follows") + "```sh\n".len();
    let close = rest[open..].find("```").expect("the block closes");
    rest[open..open + close]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Every file under `dir` (recursively) whose name ends in `ext`.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read tests dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.to_string_lossy().ends_with(ext) {
            out.push(path);
        }
    }
}

#[test]
fn the_readme_test_command_is_one_script_that_ci_runs() {
    let readme = read(&root().join("README.md"));
    let block = readme_block_after(&readme, "Run every test");
    assert_eq!(block.len(), 1, "one command, not {block:?}");
    let command = &block[0];
    let script = root().join(command);
    assert!(
        script.is_file(),
        "the README's test command {command:?} is not a script of the repository"
    );
    let ci = read(&root().join(".ci/run"));
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        ci_commands.contains(&command.as_str()),
        ".ci/run does not run the README's test command {command:?}"
    );
    // CI adds only lints: every test it runs goes through the script.
    for line in &ci_commands {
        assert!(
            !line.starts_with("cargo test") && !line.contains("pytest"),
            ".ci/run runs tests outside the README's command: {line}"
        );
    }
}

#[test]
fn the_test_script_sets_up_every_part_the_tests_need() {
    let readme = read(&root().join("README.md"));
    let command = readme_block_after(&readme, "Run every test").remove(0);
    let script = read(&root().join(&command));
    assert!(
        script.contains("cargo test --locked --features failpoints"),
        "the script runs the whole Rust suite with the fault points"
    );

    let mut sources = Vec::new();
    files(&root().join("tests"), ".rs", &mut sources);
    let tests: String = sources.iter().map(|p| read(p)).collect();

    // Each escape hatch the tests offer names a part; the script must provide that part and
    // must never take the hatch.
    let parts: &[(&str, &str)] = &[
        ("VEGDB_SKIP_S3", "VEGDB_S3_SERVER"),
        ("VEGDB_SKIP_GDAL", "gdal-bin"),
        ("VEGDB_SKIP_CHROMIUM", "chromium"),
    ];
    let mut hatches: Vec<String> = Vec::new();
    let mut rest = tests.as_str();
    while let Some(i) = rest.find("VEGDB_SKIP_") {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if name.len() > "VEGDB_SKIP_".len() && !hatches.contains(&name) {
            hatches.push(name);
        }
        rest = &rest[i + 1..];
    }
    assert!(!hatches.is_empty(), "the tests name their skip switches");
    for hatch in &hatches {
        let part = parts
            .iter()
            .find(|(h, _)| h == hatch)
            .map(|(_, p)| *p)
            .unwrap_or_else(|| panic!("{hatch}: a new skip switch; name the part it skips here"));
        assert!(
            script.contains(part),
            "{command} does not set up {part} (tests skip it with {hatch})"
        );
        assert!(
            !script.contains(&format!("{hatch}=1")),
            "{command} skips {hatch}"
        );
    }
    // External programs the Rust tests start themselves.
    for program in ["ogrinfo", "curl", "moto_server"] {
        if tests.contains(&format!("\"{program}\"")) {
            assert!(
                script.contains(program),
                "the tests run {program}; {command} does not provide it"
            );
        }
    }
}
