//! Users of the write interface and their rights, from a JSON configuration file (by default
//! `<data>/users.json`). Tokens are 256-bit random values; the file holds only their SHA-256
//! (a fast hash is enough for secrets of that entropy), so a leaked file grants nothing.
//!
//! Roles: `skriv` (registrer, oppdater, delvisOppdater, slett), `korriger` (also korriger and
//! delvisKorriger), `admin` (everything, every changeset, sensitive values), `sensitiv` (read
//! sensitivitet-1 values). Rights can be limited to object types and municipalities.
//! The file is re-read when it changes, so `vegdb user add` takes effect without a restart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::changeset::model::Operation;
use crate::changeset::validate::Rights;
use crate::durable::write_atomically;
use crate::error::{EngineError, Result};
use crate::snapshot::parquet_write::hex;

pub const USERS_FILE: &str = "users.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Skriv,
    Korriger,
    Admin,
    Sensitiv,
}

impl Role {
    pub fn parse(text: &str) -> Option<Role> {
        serde_json::from_value(serde_json::Value::String(text.trim().to_lowercase())).ok()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct User {
    pub name: String,
    pub roles: Vec<Role>,
    /// Lower-case hex SHA-256 of the token.
    pub token_sha256: String,
    /// Object types the user may write (None = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<u32>>,
    /// Municipalities the user may write in (None = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub municipalities: Option<Vec<u16>>,
}

impl User {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
    pub fn is_admin(&self) -> bool {
        self.has(Role::Admin)
    }
    /// May the user send objects with this operation?
    pub fn may(&self, op: Operation) -> bool {
        if self.is_admin() {
            return true;
        }
        if op.is_correction() {
            self.has(Role::Korriger)
        } else {
            self.has(Role::Skriv) || self.has(Role::Korriger)
        }
    }
    pub fn may_write(&self) -> bool {
        self.is_admin() || self.has(Role::Skriv) || self.has(Role::Korriger)
    }
    pub fn sees_sensitive(&self) -> bool {
        self.is_admin() || self.has(Role::Sensitiv)
    }
    pub fn rights(&self) -> Rights {
        if self.is_admin() {
            return Rights::default();
        }
        Rights {
            municipalities: self
                .municipalities
                .as_ref()
                .map(|m| m.iter().copied().collect()),
            types: self.types.as_ref().map(|t| t.iter().copied().collect()),
            write: self.may_write(),
            correct: self.may(Operation::Correct),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UserFile {
    pub users: Vec<User>,
}

pub fn token_hash(token: &str) -> String {
    hex(&sha2::Sha256::digest(token.trim().as_bytes()))
}

fn read_file(path: &Path) -> Result<UserFile> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| EngineError::corrupt(path, format!("bad users file: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UserFile::default()),
        Err(e) => Err(EngineError::io(path, e)),
    }
}

/// How often the file's content is hashed even when its metadata looks unchanged.
pub const CONTENT_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// What identifies one version of the users file on disk: size, modification and change
/// times, inode (a rename-into-place changes it). An edit that restores the old mtime still
/// changes ctime, which no user can set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
    inode: u64,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let (changed, inode) = {
        use std::os::unix::fs::MetadataExt;
        ((m.ctime(), m.ctime_nsec()), m.ino())
    };
    #[cfg(not(unix))]
    let (changed, inode) = ((0, 0), 0);
    Some(FileStamp {
        len: m.len(),
        modified: m.modified().ok(),
        changed,
        inode,
    })
}

/// The users as last read, with what identified the file then.
struct UserCache {
    stamp: Option<FileStamp>,
    /// SHA-256 of the content read (None: no file).
    content: Option<[u8; 32]>,
    checked: Option<Instant>,
    by_hash: Arc<HashMap<String, User>>,
}

impl UserCache {
    fn empty() -> UserCache {
        UserCache {
            stamp: None,
            content: None,
            checked: None,
            by_hash: Arc::new(HashMap::new()),
        }
    }
}

/// The users, re-read when the file changes: at once when its size, mtime, ctime or inode
/// differ, and in any case within `CONTENT_CHECK_INTERVAL` (the content's SHA-256 is compared).
pub struct Users {
    path: PathBuf,
    cache: Mutex<UserCache>,
}

impl Users {
    pub fn open(path: impl Into<PathBuf>) -> Result<Users> {
        let u = Users {
            path: path.into(),
            cache: Mutex::new(UserCache::empty()),
        };
        u.current()?;
        Ok(u)
    }

    /// No users at all (read-only tests).
    pub fn none() -> Users {
        Users {
            path: PathBuf::new(),
            cache: Mutex::new(UserCache::empty()),
        }
    }

    fn current(&self) -> Result<Arc<HashMap<String, User>>> {
        if self.path.as_os_str().is_empty() {
            return Ok(Arc::new(HashMap::new()));
        }
        let now = stamp(&self.path);
        let mut cache = self.cache.lock().expect("users lock");
        let due = cache
            .checked
            .is_none_or(|t| t.elapsed() >= CONTENT_CHECK_INTERVAL);
        if cache.stamp != now || now.is_none() || due {
            let bytes = match std::fs::read(&self.path) {
                Ok(b) => Some(b),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(EngineError::io(&self.path, e)),
            };
            let content: Option<[u8; 32]> = bytes.as_ref().map(|b| sha2::Sha256::digest(b).into());
            if content != cache.content || cache.checked.is_none() {
                let file = match &bytes {
                    Some(b) => serde_json::from_slice(b).map_err(|e| {
                        EngineError::corrupt(&self.path, format!("bad users file: {e}"))
                    })?,
                    None => UserFile::default(),
                };
                cache.by_hash = Arc::new(
                    file.users
                        .into_iter()
                        .map(|u| (u.token_sha256.clone(), u))
                        .collect(),
                );
                cache.content = content;
            }
            cache.stamp = now;
            cache.checked = Some(Instant::now());
        }
        Ok(cache.by_hash.clone())
    }

    /// The user of this name as the users file says now (None: no such user, or the file
    /// cannot be read). Rights are checked again with this when a changeset starts and while
    /// it is processed.
    pub fn by_name(&self, name: &str) -> Option<User> {
        match self.current() {
            Ok(users) => users.values().find(|u| u.name == name).cloned(),
            Err(e) => {
                tracing::error!(error = %e, "reading the users file failed");
                None
            }
        }
    }

    /// Rights by user name as the file says at each call (for the writer).
    pub fn rights_source(self: &Arc<Self>) -> crate::changeset::writer::RightsSource {
        let users = self.clone();
        Arc::new(move |name: &str| users.by_name(name).map(|u| u.rights()))
    }

    /// The user a token belongs to.
    pub fn authenticate(&self, token: &str) -> Option<User> {
        match self.current() {
            Ok(users) => users.get(&token_hash(token)).cloned(),
            Err(e) => {
                tracing::error!(error = %e, "reading the users file failed");
                None
            }
        }
    }
}

/// Add (or replace) a user in the users file; returns the new token.
pub fn add_user(
    path: &Path,
    name: &str,
    roles: Vec<Role>,
    types: Option<Vec<u32>>,
    municipalities: Option<Vec<u16>>,
) -> Result<String> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex(&bytes);
    let mut file = read_file(path)?;
    file.users.retain(|u| u.name != name);
    file.users.push(User {
        name: name.to_string(),
        roles,
        token_sha256: token_hash(&token),
        types,
        municipalities,
    });
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    }
    let text =
        serde_json::to_vec_pretty(&file).map_err(|e| EngineError::Internal(e.to_string()))?;
    write_atomically(path, &text)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_users_authenticate_by_token_and_the_file_holds_no_token() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(USERS_FILE);
        let users = Users::open(&path).unwrap();
        assert!(users.authenticate("x").is_none());
        let token = add_user(&path, "kari", vec![Role::Skriv], Some(vec![95]), None).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&token));
        let u = users
            .authenticate(&token)
            .expect("the new token works at once");
        assert_eq!(u.name, "kari");
        assert!(u.may(Operation::Register) && !u.may(Operation::Correct));
        assert!(users.authenticate(&token[1..]).is_none());
        // replacing a user revokes the old token
        let token2 = add_user(&path, "kari", vec![Role::Admin], None, None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(users.authenticate(&token2).unwrap().may(Operation::Correct));
    }

    #[test]
    fn an_edit_that_keeps_size_and_mtime_is_noticed_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(USERS_FILE);
        let old = add_user(&path, "kari", vec![Role::Skriv], None, None).unwrap();
        let users = Users::open(&path).unwrap();
        assert!(users.authenticate(&old).is_some());
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        // same length: one token hash replaced by another, written in place, mtime restored
        let new = "ab".repeat(16);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace(&token_hash(&old), &token_hash(&new));
        std::fs::write(&path, &text).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!((m.modified().unwrap(), m.len()), (mtime, len));
        assert!(
            users.authenticate(&old).is_none(),
            "the old token is revoked"
        );
        assert_eq!(users.authenticate(&new).unwrap().name, "kari");
        assert_eq!(
            users.by_name("kari").unwrap().token_sha256,
            token_hash(&new)
        );
    }
}
