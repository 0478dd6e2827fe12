//! The owner lock of a data directory: `<data>/LOCK`, an exclusive OS lock (flock) held by the
//! one process that writes the directory, with the owner's pid, command and start time inside
//! for the messages other processes show.

use std::fs;
use std::path::Path;

use crate::error::{EngineError, Result};

/// The lock file of a data directory.
pub const LOCK_FILE: &str = "LOCK";

/// The exclusive lock of a data directory's owner, held while this value lives (the OS drops
/// it when the process ends, also on SIGKILL).
#[derive(Debug)]
pub struct OwnerLock {
    _file: fs::File,
}

/// Take the owner lock of `root` at once, or fail naming the process that holds it.
pub(super) fn lock_owner(root: &Path) -> Result<OwnerLock> {
    try_lock_owner(root)?.ok_or_else(|| {
        let path = root.join(LOCK_FILE);
        EngineError::io(
            &path,
            std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!(
                    "the data directory {} is owned by another vegdb process ({}); one \
                     process owns a data directory for writing: stop it first, or read \
                     the directory with `serve --read-only` or `snapshot inspect|verify|load`",
                    root.display(),
                    describe_owner(&path)
                ),
            ),
        )
    })
}

/// Take the owner lock of `root` at once; None while another process holds it.
pub(super) fn try_lock_owner(root: &Path) -> Result<Option<OwnerLock>> {
    use std::io::{Seek, Write};
    let path = root.join(LOCK_FILE);
    // no truncation before the lock is ours: the file names the current owner
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| EngineError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Ok(None),
        Err(fs::TryLockError::Error(e)) => return Err(EngineError::io(&path, e)),
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = format!(
        "{}\n{}\n{}\n",
        std::process::id(),
        args.join(" "),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    file.set_len(0)
        .and_then(|_| file.rewind())
        .and_then(|_| file.write_all(text.as_bytes()))
        .map_err(|e| EngineError::io(&path, e))?;
    Ok(Some(OwnerLock { _file: file }))
}

/// "pid 1234: vegdb serve --data data, since …" for the owner of `root`.
pub fn describe_owner_of(root: &Path) -> String {
    describe_owner(&root.join(LOCK_FILE))
}

/// "pid 1234: serve --data data, since …" from a lock file (the owner writes it right after
/// locking; a few short waits cover that moment).
fn describe_owner(path: &Path) -> String {
    for _ in 0..20 {
        let text = fs::read_to_string(path).unwrap_or_default();
        let mut lines = text.lines();
        if let Some(pid) = lines.next().filter(|p| p.parse::<u32>().is_ok()) {
            let command = lines.next().unwrap_or("").trim();
            let since = lines.next().unwrap_or("").trim();
            return format!("pid {pid}: vegdb {command}, since {since}");
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    "pid unknown".into()
}

/// Who owns a data directory according to its lock file (for messages; a stale file of an
/// ended owner still names it).
pub fn owner_pid(root: &Path) -> Option<u32> {
    fs::read_to_string(root.join(LOCK_FILE))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}
