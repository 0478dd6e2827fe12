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
/// A file that cannot be completed (disk full) is removed again, so the failure does not keep
/// the space.
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| EngineError::io(path, e))?;
    let written = f.write_all(bytes).and_then(|_| f.sync_all());
    if let Err(e) = written {
        drop(f);
        let _ = fs::remove_file(path);
        return Err(EngineError::io(path, e));
    }
    Ok(())
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
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        EngineError::io(path, e)
    })
}

/// Replace `path` atomically and durably: `write_renamed`, then fsync the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_renamed(path, bytes)?;
    fsync_dir(&parent_dir(path))
}

/// Whether an error means the file system is out of space or over quota (ENOSPC, EDQUOT):
/// the write path answers 507 and the writer retries by itself once space is back. Errors that
/// lost their `io::Error` on the way (Parquet's) are recognised by the OS message.
pub fn is_storage_full(e: &EngineError) -> bool {
    let io_full = |e: &std::io::Error| {
        matches!(
            e.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ) || matches!(e.raw_os_error(), Some(28) | Some(122))
    };
    let text_full = |t: &str| {
        t.contains("No space left on device")
            || t.contains("Disk quota exceeded")
            || t.contains("os error 28)")
            || t.contains("os error 122)")
    };
    match e {
        EngineError::Io { source, .. } => io_full(source) || text_full(&source.to_string()),
        EngineError::Parquet { reason, .. } => text_full(reason),
        _ => false,
    }
}
