//! The demo snapshot embedded in the binary (`build.rs` includes `snapshots/demo` as it was at
//! build time), so a copied binary runs `vegdb serve` anywhere without the checkout.
//!
//! It is materialised as files, never loaded from memory: a writing server copies it into its
//! empty data directory as the first generation (as with `--demo DIR`); `serve --read-only`
//! without a generation serves a copy in a per-user cache directory below the system's temporary
//! directory (`vegdb-demo-<uid>-<content hash>`, made once, checked against the embedded bytes
//! before each use).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

include!(concat!(env!("OUT_DIR"), "/demo_files.rs"));

/// Whether this build carries the demo snapshot.
pub fn is_embedded() -> bool {
    DEMO_FILES.iter().any(|(p, _)| *p == "CURRENT")
}

/// A hash of the embedded files (names and contents), hex.
fn content_hash() -> String {
    let mut h = Sha256::new();
    for (path, bytes) in DEMO_FILES {
        h.update(path.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Write the embedded snapshot into `dir` (created; must not hold other files of the same names).
pub fn write_into(dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_embedded(),
        "this vegdb binary was built without the demo snapshot (snapshots/demo): give a data directory with --data or a snapshot with --demo"
    );
    for (rel, bytes) in DEMO_FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Whether `dir` holds exactly the embedded bytes under the embedded names.
fn matches_embedded(dir: &Path) -> bool {
    DEMO_FILES
        .iter()
        .all(|(rel, bytes)| fs::read(dir.join(rel)).is_ok_and(|b| b == *bytes))
}

/// A read-only copy of the embedded demo in the cache directory (made when missing or not
/// equal to the embedded bytes); its path, a data directory with CURRENT.
pub fn cached_copy() -> anyhow::Result<PathBuf> {
    #[cfg(unix)]
    let user = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata("/proc/self")
            .map(|m| m.uid().to_string())
            .unwrap_or_else(|_| "user".into())
    };
    #[cfg(not(unix))]
    let user = String::from("user");
    let dir = std::env::temp_dir().join(format!("vegdb-demo-{user}-{}", content_hash()));
    if matches_embedded(&dir) {
        return Ok(dir);
    }
    // build beside it and rename into place (another process may do the same meanwhile)
    let build = std::env::temp_dir().join(format!(
        ".vegdb-demo-{user}-{}-{}",
        content_hash(),
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&build);
    write_into(&build)?;
    let _ = fs::remove_dir_all(&dir);
    if let Err(e) = fs::rename(&build, &dir) {
        let _ = fs::remove_dir_all(&build);
        if !matches_embedded(&dir) {
            return Err(e)
                .with_context(|| format!("placing the demo snapshot at {}", dir.display()));
        }
    }
    anyhow::ensure!(
        matches_embedded(&dir),
        "the demo snapshot copy at {} does not match the embedded one",
        dir.display()
    );
    Ok(dir)
}
