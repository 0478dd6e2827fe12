//! Reading a directory of saved Uberiket responses, one record at a time.
//!
//! Layout (see README "Importing real NVDB data"):
//! - `SOURCE/veglenkesekvenser/*.json|*.ndjson`
//! - `SOURCE/vegobjekter/<typeId>/*.json|*.ndjson`
//!
//! A `.json` file is a saved page (`{"veglenkesekvenser": [...]}` or
//! `{"vegobjekter"|"objekter": [...], "metadata": ...}`, an event page `{"hendelser": [...]}`)
//! or a single record; a `.ndjson` file is
//! a saved `/stream` response, one record per line, read line by line so that memory does not
//! grow with the file. Files are read in file-name order.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::de::DeserializeOwned;

use crate::error::{EngineError, Result};

/// The page keys a `.json` file may hold its records under.
const PAGE_KEYS: [&str; 4] = ["veglenkesekvenser", "vegobjekter", "objekter", "hendelser"];

/// Data files of `dir` (`.json`, `.ndjson`) in name order; a missing dir has none.
pub fn files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| EngineError::io(dir, e))? {
        let p = e.map_err(|e| EngineError::io(dir, e))?.path();
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if p.is_file() && (ext == "json" || ext == "ndjson") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Call `f` with every record of every file of `dir`.
pub fn for_each_record<T: DeserializeOwned>(
    dir: &Path,
    mut f: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    for path in files_in(dir)? {
        read_file(&path, &mut f)?;
    }
    Ok(())
}

fn bad(path: &Path, what: impl std::fmt::Display) -> EngineError {
    EngineError::corrupt(path, format!("not an Uberiket response: {what}"))
}

fn read_file<T: DeserializeOwned>(path: &Path, f: &mut impl FnMut(T) -> Result<()>) -> Result<()> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    let reader = BufReader::new(file);
    if path.extension().and_then(|e| e.to_str()) == Some("ndjson") {
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|e| EngineError::io(path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let rec = serde_json::from_str(&line)
                .map_err(|e| bad(path, format!("line {}: {e}", i + 1)))?;
            f(rec)?;
        }
        return Ok(());
    }
    // a page is bounded by the upstream page size, so it is parsed whole
    let mut value: serde_json::Value = serde_json::from_reader(reader).map_err(|e| bad(path, e))?;
    let page = PAGE_KEYS
        .iter()
        .find_map(|k| value.get_mut(*k).map(serde_json::Value::take));
    match page {
        Some(serde_json::Value::Array(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                let rec = serde_json::from_value(item)
                    .map_err(|e| bad(path, format!("record {}: {e}", i + 1)))?;
                f(rec)?;
            }
            Ok(())
        }
        Some(_) => Err(bad(path, "the page's list is not an array")),
        None => f(serde_json::from_value(value).map_err(|e| bad(path, e))?),
    }
}

/// Records per batch of `for_each_batch`.
pub const BATCH: usize = 16_384;

/// Call `f` with the records of every file of `dir` in batches of at most `BATCH`, in file and
/// line order; the lines of a batch are parsed in parallel. Memory stays at one batch.
pub fn for_each_batch<T: DeserializeOwned + Send>(
    dir: &Path,
    mut f: impl FnMut(Vec<T>) -> Result<()>,
) -> Result<()> {
    for path in files_in(dir)? {
        if path.extension().and_then(|e| e.to_str()) != Some("ndjson") {
            let mut page = Vec::new();
            read_file(&path, &mut |r: T| {
                page.push(r);
                Ok(())
            })?;
            f(page)?;
            continue;
        }
        let file = File::open(&path).map_err(|e| EngineError::io(&path, e))?;
        let mut lines = BufReader::with_capacity(1 << 20, file).lines().enumerate();
        loop {
            let mut batch: Vec<(usize, String)> = Vec::with_capacity(BATCH);
            for (i, line) in lines.by_ref() {
                let line = line.map_err(|e| EngineError::io(&path, e))?;
                if !line.trim().is_empty() {
                    batch.push((i, line));
                    if batch.len() == BATCH {
                        break;
                    }
                }
            }
            if batch.is_empty() {
                break;
            }
            let parsed: Vec<T> = batch
                .par_iter()
                .map(|(i, line)| {
                    serde_json::from_str(line)
                        .map_err(|e| bad(&path, format!("line {}: {e}", i + 1)))
                })
                .collect::<Result<_>>()?;
            f(parsed)?;
        }
    }
    Ok(())
}
