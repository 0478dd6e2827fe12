//! `vegdb snapshot upgrade`: rewrite a generation of an older format in the current one
//! (`generation::upgrade`), either as the next generation of the same data directory (as its
//! owner, so never under a running server) or as a new data directory (`--out`, reading the
//! source only). The result is verified and compared with the source before the command
//! succeeds.

use std::path::Path;

use anyhow::Context;

use crate::generation::upgrade::{is_current_format, upgrade, Content};
use crate::generation::Generation;
use crate::snapshot::manifest::{Manifest, FORMAT_VERSION};
use crate::snapshot::store::DataDir;

/// `vegdb snapshot upgrade [--data DIR] [--generation N] [--out DIR]`.
pub fn run_upgrade(data: &Path, generation: Option<u64>, out: Option<&Path>) -> anyhow::Result<()> {
    super::existing_data_dir(data)?;
    match out {
        Some(out) => upgrade_into(data, generation, out),
        None => upgrade_in_place(data, generation),
    }
}

/// The next generation of `data`, made CURRENT; the old one stays until the owner's retention
/// removes it (so `snapshot rollback` can go back).
fn upgrade_in_place(data: &Path, generation: Option<u64>) -> anyhow::Result<()> {
    let dir = DataDir::open(data).with_context(|| {
        format!(
            "vegdb snapshot upgrade publishes a generation in {} and needs to own it (stop the server, or write a copy with --out)",
            data.display()
        )
    })?;
    let current = dir
        .current()?
        .with_context(|| format!("{} has no CURRENT generation", data.display()))?;
    let id = generation.unwrap_or(current);
    anyhow::ensure!(
        id == current,
        "generation {id} is not CURRENT (generation {current} is): its upgrade would replace CURRENT; write it elsewhere with --out, or roll back to it first"
    );
    let source_dir = dir.generation_dir(id);
    let m = Manifest::read(&source_dir)?;
    if is_current_format(&m, &source_dir)? {
        println!("generation {id} is format {FORMAT_VERSION} already; nothing changed");
        return Ok(());
    }
    let (g, _) = load(&source_dir)?;
    let before = Content::of(&g);
    let staging = dir.begin(dir.next_id()?)?;
    let published = upgrade(&g, staging, Some(id), &dir)?;
    drop(g);
    if let Err(e) = check(&published, &before) {
        dir.make_current(id)?;
        return Err(e.context(format!("CURRENT is generation {id} again")));
    }
    let new_id = crate::snapshot::store::generation_id(&published).unwrap_or(0);
    println!(
        "generation {new_id} (format {FORMAT_VERSION}) is the upgrade of generation {id} (format {}) and CURRENT of {}; {} stays until the next retention pass",
        m.format_version,
        dir.root.display(),
        id
    );
    Ok(())
}

/// A new data directory `out` holding the upgrade of generation `generation` (default CURRENT)
/// of `data` under the same id, CURRENT there; `data` is only read (pinned, no lock).
fn upgrade_into(data: &Path, generation: Option<u64>, out: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", out.display())),
        Ok(mut entries) => anyhow::ensure!(
            entries.next().is_none(),
            "{} is not empty: --out writes a new data directory",
            out.display()
        ),
    }
    let source = DataDir::read_only(data);
    let pinned = source.pin_current_or(generation)?;
    let m = Manifest::read(&pinned.dir)?;
    if is_current_format(&m, &pinned.dir)? {
        println!(
            "generation {} is format {FORMAT_VERSION} already; nothing written",
            m.generation
        );
        return Ok(());
    }
    let (g, _) = load(&pinned.dir)?;
    let before = Content::of(&g);
    let target = DataDir::open(out)?;
    let staging = target.begin(m.generation)?;
    let published = upgrade(&g, staging, m.parent, &target)?;
    drop(g);
    drop(pinned);
    check(&published, &before)
        .with_context(|| format!("the upgraded copy in {} is not usable", out.display()))?;
    println!(
        "{} holds generation {} in format {FORMAT_VERSION} (from format {} in {})",
        out.display(),
        m.generation,
        m.format_version,
        data.display()
    );
    Ok(())
}

fn load(dir: &Path) -> anyhow::Result<(Generation, crate::generation::LoadStats)> {
    Generation::load(dir, &|_| {}).with_context(|| format!("loading {}", dir.display()))
}

/// The published upgrade passes `verify` and holds the same content as the source.
fn check(dir: &Path, before: &Content) -> anyhow::Result<()> {
    let report = crate::generation::check::verify(dir, &|_| {});
    let mut problems = report.problems;
    if problems.is_empty() {
        let (g, _) = load(dir)?;
        problems = before.differences(&Content::of(&g));
    }
    if problems.is_empty() {
        return Ok(());
    }
    for p in &problems {
        println!("PROBLEM: {p}");
    }
    anyhow::bail!(
        "{}: the upgraded generation has {} problem(s)",
        dir.display(),
        problems.len()
    )
}
