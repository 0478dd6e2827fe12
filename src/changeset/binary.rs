//! The binary store (`/binaer`): content-addressed files. The ressursId is the SHA-256 of the
//! bytes, so uploading the same bytes twice gives the same id and stores them once.
//!
//! ```text
//! <data>/binaer/<sha256>        the bytes
//! <data>/binaer/<sha256>.type   their content type
//! ```

use std::fs;
use std::path::PathBuf;

use sha2::Digest;

use crate::durable::write_atomically;
use crate::error::{EngineError, Result};
use crate::snapshot::parquet_write::hex;

pub struct BinaryStore {
    dir: PathBuf,
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
        Ok(BinaryStore { dir })
    }

    /// Store bytes durably; returns the ressursId.
    pub fn put(&self, bytes: &[u8], content_type: &str) -> Result<String> {
        let id = hex(&sha2::Sha256::digest(bytes));
        let path = self.dir.join(&id);
        if !path.exists() {
            write_atomically(
                &self.dir.join(format!("{id}.type")),
                content_type.as_bytes(),
            )?;
            write_atomically(&path, bytes)?;
        }
        Ok(id)
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
        let a = s.put(b"hello", "text/plain").unwrap();
        let b = s.put(b"hello", "text/plain").unwrap();
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
    }
}
