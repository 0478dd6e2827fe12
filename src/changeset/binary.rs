//! The binary store (`/binaer`): content-addressed files. The ressursId is the SHA-256 of the
//! bytes, so uploading the same bytes twice gives the same id and stores them once.
//!
//! ```text
//! <data>/binaer/<sha256>          the bytes
//! <data>/binaer/<sha256>.type     their content type
//! <data>/binaer/<sha256>.readers  users who may read them, one name a line
//! ```
//!
//! Who may read a binary: every user who uploaded those bytes, every user who registered a
//! changeset referring to it (by `ressursId`), and admins. Binaries stored before the readers
//! file existed are readable by admins only.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;

use sha2::Digest;

use crate::durable::write_atomically;
use crate::error::{EngineError, Result};
use crate::util::hex;

pub struct BinaryStore {
    dir: PathBuf,
    /// Serialises read-modify-write of the readers files.
    readers_lock: Mutex<()>,
}

/// A ressursId is 64 lower-case hex digits.
pub fn is_resource_id(id: &str) -> bool {
    id.len() == 64
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl BinaryStore {
    pub fn open(dir: impl Into<PathBuf>) -> Result<BinaryStore> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        Ok(BinaryStore {
            dir,
            readers_lock: Mutex::new(()),
        })
    }

    /// Store bytes durably for `uploader` (who may read them from then on); returns the
    /// ressursId.
    pub fn put(&self, bytes: &[u8], content_type: &str, uploader: &str) -> Result<String> {
        let id = hex(&sha2::Sha256::digest(bytes));
        let path = self.dir.join(&id);
        if !path.exists() {
            write_atomically(
                &self.dir.join(format!("{id}.type")),
                content_type.as_bytes(),
            )?;
            write_atomically(&path, bytes)?;
        }
        self.grant(&id, uploader)?;
        Ok(id)
    }

    fn readers(&self, id: &str) -> BTreeSet<String> {
        fs::read_to_string(self.dir.join(format!("{id}.readers")))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Let `user` read binary `id` (nothing happens for an unknown id).
    pub fn grant(&self, id: &str, user: &str) -> Result<()> {
        if !self.exists(id) || user.contains('\n') {
            return Ok(());
        }
        let _guard = self.readers_lock.lock().expect("readers lock");
        let mut readers = self.readers(id);
        if readers.insert(user.to_string()) {
            let text: String = readers.iter().map(|r| format!("{r}\n")).collect();
            write_atomically(&self.dir.join(format!("{id}.readers")), text.as_bytes())?;
        }
        Ok(())
    }

    /// May `user` (not an admin: admins read everything) read binary `id`?
    pub fn may_read(&self, id: &str, user: &str) -> bool {
        is_resource_id(id) && self.readers(id).contains(user)
    }

    pub fn exists(&self, id: &str) -> bool {
        is_resource_id(id) && self.dir.join(id).exists()
    }

    /// The bytes and content type, None when unknown.
    pub fn get(&self, id: &str) -> Result<Option<(Vec<u8>, String)>> {
        if !is_resource_id(id) {
            return Ok(None);
        }
        let path = self.dir.join(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(EngineError::io(&path, e)),
        };
        let content_type = fs::read_to_string(self.dir.join(format!("{id}.type")))
            .unwrap_or_else(|_| "application/octet-stream".into());
        Ok(Some((bytes, content_type)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_same_id_and_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let s = BinaryStore::open(tmp.path()).unwrap();
        let a = s.put(b"hello", "text/plain", "kari").unwrap();
        let b = s.put(b"hello", "text/plain", "ola").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let (bytes, ct) = s.get(&a).unwrap().unwrap();
        assert_eq!(
            (bytes.as_slice(), ct.as_str()),
            (&b"hello"[..], "text/plain")
        );
        assert!(s.get("../etc/passwd").unwrap().is_none());
        assert!(!s.exists(&"0".repeat(64)));
        // both uploaders may read it, nobody else until granted
        assert!(s.may_read(&a, "kari") && s.may_read(&a, "ola"));
        assert!(!s.may_read(&a, "per"));
        s.grant(&a, "per").unwrap();
        assert!(s.may_read(&a, "per"));
        // unknown ids grant nothing and leave no file
        s.grant(&"0".repeat(64), "per").unwrap();
        assert!(!s.may_read(&"0".repeat(64), "per"));
        assert!(!tmp
            .path()
            .join(format!("{}.readers", "0".repeat(64)))
            .exists());
    }
}
