//! Checks of a generation: `verify` (used by `snapshot verify`) checks the files against the
//! manifest one by one (size, SHA-256, rows per file from the Parquet footer, each chunk's ids
//! within its range) and then the loaded generation's references (`consistency`). It reads
//! only, and it reports every problem it finds, not the first.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::EngineError;
use crate::generation::{Generation, LoadStats};
use crate::snapshot::builder::RESULTS_FILE;
use crate::snapshot::manifest::{Manifest, MANIFEST_FILE};

/// What `verify` found.
#[derive(Debug)]
pub struct Report {
    pub generation: Option<u64>,
    /// The loaded generation's statistics (None when it could not be loaded).
    pub stats: Option<LoadStats>,
    pub files: usize,
    pub problems: Vec<String>,
}

/// Rows of a Parquet file, from its footer.
fn parquet_rows(path: &Path) -> crate::error::Result<u64> {
    let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| EngineError::parquet(path, e))?;
    Ok(b.metadata().file_metadata().num_rows().max(0) as u64)
}

/// What went wrong reading `path`, without the path (the problem line names the file).
fn reason(e: &EngineError) -> String {
    match e {
        EngineError::Io { source, .. } => source.to_string(),
        EngineError::Parquet { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

fn sha256_of(path: &Path) -> std::io::Result<(String, u64)> {
    use sha2::{Digest, Sha256};
    let mut file = File::open(path)?;
    let mut h = Sha256::new();
    let n = std::io::copy(&mut file, &mut h)?;
    Ok((crate::util::hex(&h.finalize()), n))
}

/// Every file below `dir` (relative paths with `/`).
fn files_below(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

/// Verify the generation in `dir` against its manifest; `progress` is called once per file.
pub fn verify(dir: &Path, progress: &(dyn Fn(&str) + Sync)) -> Report {
    let mut problems = Vec::new();
    let m = match Manifest::read(dir) {
        Ok(m) => m,
        Err(e) => {
            return Report {
                generation: None,
                stats: None,
                files: 0,
                problems: vec![format!("{MANIFEST_FILE}: {e}")],
            }
        }
    };
    // 1. every file on its own: present, size, checksum, rows
    let footer_rows = check_files(dir, &m, progress, &mut problems);
    let chunks = check_chunk_ids(&m, &mut problems);
    // 2. the generation as the server loads it
    let (g, stats) = match Generation::load(dir, &|_| {}) {
        Ok(x) => x,
        Err(e) => {
            problems.push(format!("the generation does not load: {e}"));
            return Report {
                generation: Some(m.generation),
                stats: None,
                files: m.files.len(),
                problems,
            };
        }
    };
    check_loaded_rows(&g, &m, &mut problems);
    check_chunk_rows(&g, &chunks, &footer_rows, &mut problems);
    check_results(dir, &m, &mut problems);
    // 3. references
    problems.extend(consistency(&g));
    Report {
        generation: Some(g.id),
        stats: Some(stats),
        files: m.files.len(),
        problems,
    }
}

/// Object files of a manifest per type, sorted by first id.
type Chunks<'m> = BTreeMap<u32, Vec<&'m crate::snapshot::manifest::FileEntry>>;

/// Step 1: every file of `m` on its own (listed once, present, size, checksum, Parquet rows),
/// and no file in `dir` the manifest does not list. Returns the rows of each Parquet footer.
fn check_files<'m>(
    dir: &Path,
    m: &'m Manifest,
    progress: &(dyn Fn(&str) + Sync),
    problems: &mut Vec<String>,
) -> BTreeMap<&'m str, u64> {
    let mut footer_rows: BTreeMap<&str, u64> = BTreeMap::new();
    let mut seen_paths = BTreeSet::new();
    for f in &m.files {
        progress(&f.path);
        if !seen_paths.insert(f.path.as_str()) {
            problems.push(format!("{}: listed twice in the manifest", f.path));
        }
        let p: PathBuf = dir.join(&f.path);
        match sha256_of(&p) {
            Err(e) => {
                problems.push(format!("{}: cannot be read: {e}", f.path));
                continue;
            }
            Ok((sum, n)) => {
                if n != f.bytes {
                    problems.push(format!(
                        "{}: {n} bytes, the manifest says {}",
                        f.path, f.bytes
                    ));
                } else if sum != f.sha256 {
                    problems.push(format!(
                        "{}: SHA-256 {sum} differs from the manifest's {}",
                        f.path, f.sha256
                    ));
                }
            }
        }
        if f.path.ends_with(".parquet") {
            match parquet_rows(&p) {
                Ok(rows) => {
                    footer_rows.insert(f.path.as_str(), rows);
                    if rows != f.rows {
                        problems.push(format!(
                            "{}: {rows} rows in the file, the manifest says {}",
                            f.path, f.rows
                        ));
                    }
                }
                Err(e) => problems.push(format!(
                    "{}: not a readable Parquet file: {}",
                    f.path,
                    reason(&e)
                )),
            }
        }
    }
    for extra in files_below(dir) {
        if extra != MANIFEST_FILE && !seen_paths.contains(extra.as_str()) {
            problems.push(format!("{extra}: a file the manifest does not list"));
        }
    }
    footer_rows
}

/// The chunks of each type: distinct first ids, at most one unchunked file.
fn check_chunk_ids<'m>(m: &'m Manifest, problems: &mut Vec<String>) -> Chunks<'m> {
    let mut chunks: Chunks = BTreeMap::new();
    for f in &m.files {
        if let Some(t) = f.type_id {
            chunks.entry(t).or_default().push(f);
        }
    }
    for (t, parts) in chunks.iter_mut() {
        parts.sort_by_key(|f| f.first_id.unwrap_or(0));
        if parts.len() > 1 && parts.iter().any(|f| f.first_id.is_none()) {
            problems.push(format!(
                "type {t}: a single-file partition beside chunk files"
            ));
        }
        for w in parts.windows(2) {
            if w[0].first_id == w[1].first_id {
                problems.push(format!(
                    "type {t}: chunks {} and {} start at the same id",
                    w[0].path, w[1].path
                ));
            }
        }
    }
    chunks
}

/// Step 2: the loaded network, its closed rows, the types' closed versions and the deleted
/// objects have the rows the manifest lists.
fn check_loaded_rows(g: &Generation, m: &Manifest, problems: &mut Vec<String>) {
    use crate::snapshot::parquet_write::{history_type_of, NETWORK_FILE, NETWORK_HISTORY_FILE};
    let rows_of = |path: &str| {
        m.files
            .iter()
            .find(|f| f.path == path)
            .map_or(0, |f| f.rows)
    };
    for (what, loaded, path) in [
        ("network", g.network.len(), NETWORK_FILE),
        (
            "closed network rows",
            g.network_history.len(),
            NETWORK_HISTORY_FILE,
        ),
    ] {
        if loaded as u64 != rows_of(path) {
            problems.push(format!(
                "{what}: {loaded} rows loaded, the manifest says {}",
                rows_of(path)
            ));
        }
    }
    for f in &m.files {
        let Some(t) = history_type_of(&f.path) else {
            continue;
        };
        let loaded = g.history.get(&t).map_or(0, |h| h.len());
        if loaded as u64 != f.rows {
            problems.push(format!(
                "type {t}: {loaded} closed versions loaded, {} lists {}",
                f.path, f.rows
            ));
        }
    }
    let deleted_listed = m
        .files
        .iter()
        .find(|f| f.path == crate::snapshot::parquet_write::DELETED_FILE)
        .map_or(0, |f| f.rows);
    if g.deleted.id.len() as u64 != deleted_listed {
        problems.push(format!(
            "deleted objects: {} rows loaded, the manifest says {deleted_listed}",
            g.deleted.id.len()
        ));
    }
}

/// Each chunk against its own manifest entry: the loader concatenates a type's chunks in
/// first-id order, so chunk k holds the rows after the rows of chunks 0..k.
fn check_chunk_rows(
    g: &Generation,
    chunks: &Chunks,
    footer_rows: &BTreeMap<&str, u64>,
    problems: &mut Vec<String>,
) {
    for (t, parts) in chunks {
        let ids: &[u64] = g.objects.get(t).map_or(&[], |d| &d.table.id[..]);
        let listed: u64 = parts.iter().map(|f| f.rows).sum();
        if ids.len() as u64 != listed {
            problems.push(format!(
                "type {t}: {} rows loaded, its {} file(s) list {listed}",
                ids.len(),
                parts.len()
            ));
            continue;
        }
        let mut row = 0usize;
        for (i, f) in parts.iter().enumerate() {
            let n = footer_rows.get(f.path.as_str()).copied().unwrap_or(f.rows) as usize;
            let Some(part) = ids.get(row..row + n) else {
                break;
            };
            let lo = f.first_id.unwrap_or(0);
            let hi = parts
                .get(i + 1)
                .and_then(|next| next.first_id)
                .unwrap_or(u64::MAX);
            if let Some(bad) = part.iter().find(|&&id| id < lo || id >= hi) {
                problems.push(format!(
                    "{}: object {bad} lies outside the chunk's id range {lo}..{hi}",
                    f.path
                ));
            }
            if !part.windows(2).all(|w| w[0] < w[1]) {
                problems.push(format!("{}: ids are not strictly ascending", f.path));
            }
            row += n;
        }
    }
}

/// The changesets the generation applied have their results inside it.
fn check_results(dir: &Path, m: &Manifest, problems: &mut Vec<String>) {
    if m.changesets.is_empty() {
        return;
    }
    let path = dir.join(RESULTS_FILE);
    match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            serde_json::from_slice::<BTreeMap<String, serde_json::Value>>(&b)
                .map_err(|e| e.to_string())
        }) {
        Ok(results) => {
            for id in &m.changesets {
                if !results.contains_key(id) {
                    problems.push(format!("changeset {id}: applied, but it has no result"));
                }
            }
        }
        Err(e) => problems.push(format!("{RESULTS_FILE}: unreadable results: {e}")),
    }
}

pub fn consistency(g: &Generation) -> Vec<String> {
    let mut problems = Vec::new();
    let n = &g.network;
    for r in 0..n.len() {
        if !(0.0..=1.0).contains(&n.from_pos[r])
            || n.from_pos[r] >= n.to_pos[r]
            || n.to_pos[r] > 1.0
        {
            problems.push(format!(
                "network row {r}: bad positions {}..{}",
                n.from_pos[r], n.to_pos[r]
            ));
        }
        if n.geometry(r).len() < 2 {
            problems.push(format!(
                "network row {r}: geometry with fewer than two points"
            ));
        }
        if n.from_m[r] > n.to_m[r] {
            problems.push(format!("network row {r}: meters decrease"));
        }
    }
    if !n.link_id.windows(2).all(|w| w[0] <= w[1]) {
        problems.push("network rows are not sorted by link id".into());
    }
    for (type_id, d) in &g.objects {
        let t = &d.table;
        if g.catalog.object_type(*type_id).is_none() {
            problems.push(format!("type {type_id} is not in the catalogue"));
        }
        for row in 0..t.len() {
            for p in t.placements(row) {
                let (link, from, to) = (t.loc_link[p], t.loc_from[p], t.loc_to[p]);
                if n.rows_of_link(link).is_empty() {
                    problems.push(format!("object {}: unknown link {link}", t.id[row]));
                } else if !(0.0..=1.0).contains(&from) || !(0.0..=1.0).contains(&to) || from > to {
                    problems.push(format!(
                        "object {}: bad range {from}..{to}@{link}",
                        t.id[row]
                    ));
                }
            }
            for c in t.children(row) {
                let ok = g
                    .objects
                    .get(&t.child_type[c])
                    .is_some_and(|d| d.table.row_of(t.child_id[c]).is_some());
                if !ok {
                    problems.push(format!(
                        "object {}: missing child {}",
                        t.id[row], t.child_id[c]
                    ));
                }
            }
        }
    }
    problems
}
