//! Durable file writes, shared by everything that must survive a crash: generations
//! (`snapshot::store`), the changeset journal, the binary store and the users file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{EngineError, Result};

/// Make a directory's entries (created, renamed, removed files) durable.
pub fn fsync_dir(path: &Path) -> Result<()> {
    fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| EngineError::io(path, e))
}

/// Create `path` with `bytes` and fsync the file (not its directory).
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| EngineError::io(path, e))?;
    f.write_all(bytes).map_err(|e| EngineError::io(path, e))?;
    f.sync_all().map_err(|e| EngineError::io(path, e))
}

/// The directory a file lives in ("." for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Replace `path` atomically: temp file, fsync, rename. The caller fsyncs the directory (once
/// for several files).
pub fn write_renamed(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = parent_dir(path).join(format!(
        ".{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    write_durably(&tmp, bytes)?;
    fs::rename(&tmp, path).map_err(|e| EngineError::io(path, e))
}

/// Replace `path` atomically and durably: `write_renamed`, then fsync the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_renamed(path, bytes)?;
    fsync_dir(&parent_dir(path))
}
