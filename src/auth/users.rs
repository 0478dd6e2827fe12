//! Users of the write interface and their rights, from a JSON configuration file (by default
//! `<data>/users.json`). Tokens are 256-bit random values; the file holds only their SHA-256
//! (a fast hash is enough for secrets of that entropy), so a leaked file grants nothing.
//!
//! Roles: `skriv` (registrer, oppdater, delvisOppdater, slett), `korriger` (also korriger and
//! delvisKorriger), `admin` (everything, every changeset, sensitive values), `sensitiv` (read
//! sensitivitet-1 values). Rights can be limited to object types and municipalities.
//! The file is re-read when it changes, so `vegdb user add` takes effect without a restart.
//!
//! A user may also have a password (`vegdb user add --password-stdin`), stored as an argon2id
//! PHC string (salted, deliberately slow). Logging in with it (`POST /openam/json/authenticate`,
//! as OpenAM clients do) gives a session token that works like the user's own token; see
//! [`Users::login`] for lifetime, rate limiting and the equal work for unknown users.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::operation::Operation;
use crate::auth::Rights;
use crate::durable::write_atomically;
use crate::error::{EngineError, Result};
use crate::util::hex;

pub const USERS_FILE: &str = "users.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// `skriv`: registrer, oppdater, delvisOppdater, slett.
    #[serde(rename = "skriv")]
    Write,
    /// `korriger`: also korriger and delvisKorriger.
    #[serde(rename = "korriger")]
    Correct,
    #[serde(rename = "admin")]
    Admin,
    /// `sensitiv`: reads sensitivitet-1 values.
    #[serde(rename = "sensitiv")]
    Sensitive,
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
    /// argon2id PHC string of the user's password (None: token only, no login).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_argon2: Option<String>,
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
            self.has(Role::Correct)
        } else {
            self.has(Role::Write) || self.has(Role::Correct)
        }
    }
    pub fn may_write(&self) -> bool {
        self.is_admin() || self.has(Role::Write) || self.has(Role::Correct)
    }
    pub fn sees_sensitive(&self) -> bool {
        self.is_admin() || self.has(Role::Sensitive)
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
    /// Sessions from password logins and failed-login counts (in memory only).
    logins: Logins,
    /// Password verifications running at once (each takes a core for a while).
    verifications: Arc<tokio::sync::Semaphore>,
}

/// Password verifications of one users file that run at once.
pub const MAX_VERIFICATIONS: usize = 2;

impl Users {
    pub fn open(path: impl Into<PathBuf>) -> Result<Users> {
        let u = Users {
            path: path.into(),
            cache: Mutex::new(UserCache::empty()),
            logins: Logins::default(),
            verifications: Arc::new(tokio::sync::Semaphore::new(MAX_VERIFICATIONS)),
        };
        u.current()?;
        Ok(u)
    }

    /// No users at all (read-only tests).
    pub fn none() -> Users {
        Users {
            path: PathBuf::new(),
            cache: Mutex::new(UserCache::empty()),
            logins: Logins::default(),
            verifications: Arc::new(tokio::sync::Semaphore::new(MAX_VERIFICATIONS)),
        }
    }

    /// A slot to verify a password in (at most [`MAX_VERIFICATIONS`] at once); None once the
    /// slots are closed.
    pub async fn verification_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.verifications.clone().acquire_owned().await.ok()
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
    pub fn rights_source(self: &Arc<Self>) -> super::RightsSource {
        let users = self.clone();
        Arc::new(move |name: &str| users.by_name(name).map(|u| u.rights()))
    }

    /// The user a token belongs to (the user's own token, or a session from a login).
    pub fn authenticate(&self, token: &str) -> Option<User> {
        match self.current() {
            Ok(users) => {
                let hash = token_hash(token);
                match users.get(&hash) {
                    Some(u) => Some(u.clone()),
                    None => self.logins.session_user(&hash, &users),
                }
            }
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
        password_argon2: None,
    });
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    }
    let text =
        serde_json::to_vec_pretty(&file).map_err(|e| EngineError::Internal(e.to_string()))?;
    write_atomically(path, &text)?;
    Ok(token)
}

// ---- passwords and sessions -------------------------------------------------------------------

/// How long a login session lasts (fixed from the login; a new login gives a new token).
pub const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// Failed logins per user name within [`FAILED_LOGIN_WINDOW`] before logins are refused.
pub const MAX_FAILED_LOGINS: u32 = 5;
/// The window failed logins are counted in; a locked name is free again when it ends.
pub const FAILED_LOGIN_WINDOW: Duration = Duration::from_secs(15 * 60);
/// Most sessions and failure counters kept (the oldest go first beyond that).
const MAX_TRACKED: usize = 100_000;
/// Longest user name (bytes) a login may give: a longer one is refused at once
/// ([`LoginError::NameTooLong`], no verification, nothing kept), so the failure counters hold at
/// most [`MAX_TRACKED`] names of at most this length. `vegdb user add` refuses longer names.
pub const MAX_NAME_BYTES: usize = 256;

/// argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: OWASP's minimum).
fn argon2() -> argon2::Argon2<'static> {
    argon2::Argon2::default()
}

/// The PHC string of a password with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String> {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| EngineError::Internal(e.to_string()))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| EngineError::Internal(e.to_string()))
}

/// Does `password` match the PHC string? (A malformed string matches nothing.)
pub fn verify_password(phc: &str, password: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(phc)
        .map(|h| argon2().verify_password(password.as_bytes(), &h).is_ok())
        .unwrap_or(false)
}

/// A hash of a random password nobody knows: verified against for unknown users and users
/// without a password, so a failed login costs the same work whatever was wrong.
fn decoy_hash() -> &'static str {
    // Not a setting or counter: one immutable hash, made lazily once; any server may use any.
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        hash_password(&hex(&secret)).unwrap_or_default()
    })
}

/// Set (or replace) a user's password in the users file.
pub fn set_password(path: &Path, name: &str, password: &str) -> Result<()> {
    if password.is_empty() {
        return Err(EngineError::input("the password must not be empty"));
    }
    let phc = hash_password(password)?;
    let mut file = read_file(path)?;
    let user = file
        .users
        .iter_mut()
        .find(|u| u.name == name)
        .ok_or_else(|| EngineError::input(format!("no user named {name}")))?;
    user.password_argon2 = Some(phc);
    let text =
        serde_json::to_vec_pretty(&file).map_err(|e| EngineError::Internal(e.to_string()))?;
    write_atomically(path, &text)
}

/// Why a login failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginError {
    /// Unknown user, no password set, or a wrong password (never told apart).
    Invalid,
    /// Too many failed logins for this name: try again after this long.
    Locked(Duration),
    /// A name longer than [`MAX_NAME_BYTES`] (its length): no user has it.
    NameTooLong(usize),
}

struct Session {
    user: String,
    /// The password hash the session was opened with: a changed password (or a replaced or
    /// removed user) ends the session.
    password: String,
    expires: Instant,
}

struct Failures {
    count: u32,
    first: Instant,
}

struct Logins {
    /// By SHA-256 of the session token.
    sessions: Mutex<HashMap<String, Session>>,
    /// By user name as sent (known or not, so locking reveals nothing).
    failures: Mutex<HashMap<String, Failures>>,
    /// Most entries in each map ([`MAX_TRACKED`]; smaller in tests).
    capacity: usize,
}

impl Default for Logins {
    fn default() -> Logins {
        Logins::with_capacity(MAX_TRACKED)
    }
}

/// Keep a map under `capacity` entries: drop what `expired` says, then the oldest by `age`.
fn bound<V>(
    map: &mut HashMap<String, V>,
    capacity: usize,
    expired: impl Fn(&V) -> bool,
    age: impl Fn(&V) -> Instant,
) {
    if map.len() < capacity {
        return;
    }
    map.retain(|_, v| !expired(v));
    while map.len() >= capacity.max(1) {
        let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| age(v))
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&oldest);
    }
}

impl Logins {
    fn with_capacity(capacity: usize) -> Logins {
        Logins {
            sessions: Mutex::default(),
            failures: Mutex::default(),
            capacity,
        }
    }

    fn session_user(&self, hash: &str, users: &HashMap<String, User>) -> Option<User> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let s = sessions.get(hash)?;
        if s.expires <= Instant::now() {
            sessions.remove(hash);
            return None;
        }
        users
            .values()
            .find(|u| u.name == s.user && u.password_argon2.as_deref() == Some(&s.password))
            .cloned()
    }

    fn locked(&self, name: &str) -> Option<Duration> {
        let failures = self.failures.lock().expect("failures lock");
        let f = failures.get(name)?;
        let left = FAILED_LOGIN_WINDOW.checked_sub(f.first.elapsed())?;
        (f.count >= MAX_FAILED_LOGINS && !left.is_zero()).then_some(left)
    }

    fn failed(&self, name: &str) {
        let mut failures = self.failures.lock().expect("failures lock");
        bound(
            &mut failures,
            self.capacity,
            |f| f.first.elapsed() >= FAILED_LOGIN_WINDOW,
            |f| f.first,
        );
        let f = failures.entry(name.to_string()).or_insert(Failures {
            count: 0,
            first: Instant::now(),
        });
        if f.first.elapsed() >= FAILED_LOGIN_WINDOW {
            *f = Failures {
                count: 0,
                first: Instant::now(),
            };
        }
        f.count += 1;
    }

    fn open(&self, user: &str, password: &str) -> String {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let token = hex(&bytes);
        let now = Instant::now();
        let mut sessions = self.sessions.lock().expect("sessions lock");
        bound(
            &mut sessions,
            self.capacity,
            |s| s.expires <= now,
            |s| s.expires,
        );
        sessions.insert(
            token_hash(&token),
            Session {
                user: user.to_string(),
                password: password.to_string(),
                expires: now + SESSION_LIFETIME,
            },
        );
        token
    }
}

impl Users {
    /// End the session a token names (a user's own token is not affected).
    pub fn logout(&self, token: &str) {
        self.logins
            .sessions
            .lock()
            .expect("sessions lock")
            .remove(&token_hash(token));
    }

    /// Log in with a name and password; returns a session token valid for
    /// [`SESSION_LIFETIME`] wherever the user's own token is. Sessions live in memory only (a
    /// restart logs everyone out). Slow on purpose (one argon2 verification, also for unknown
    /// names and users without a password, so the time tells nothing); after
    /// [`MAX_FAILED_LOGINS`] failures for a name within [`FAILED_LOGIN_WINDOW`] every login for
    /// it is refused, without verifying, until the window ends. A name longer than
    /// [`MAX_NAME_BYTES`] is refused at once and not counted.
    pub fn login(&self, name: &str, password: &str) -> std::result::Result<String, LoginError> {
        if name.len() > MAX_NAME_BYTES {
            return Err(LoginError::NameTooLong(name.len()));
        }
        if let Some(left) = self.logins.locked(name) {
            return Err(LoginError::Locked(left));
        }
        let users = self.current().map_err(|e| {
            tracing::error!(error = %e, "reading the users file failed");
            LoginError::Invalid
        })?;
        let phc = users
            .values()
            .find(|u| u.name == name)
            .and_then(|u| u.password_argon2.clone());
        let ok = verify_password(phc.as_deref().unwrap_or(decoy_hash()), password) && phc.is_some();
        match phc {
            Some(phc) if ok => {
                self.logins
                    .failures
                    .lock()
                    .expect("failures lock")
                    .remove(name);
                Ok(self.logins.open(name, &phc))
            }
            _ => {
                self.logins.failed(name);
                Err(LoginError::Invalid)
            }
        }
    }
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
        let token = add_user(&path, "kari", vec![Role::Write], Some(vec![95]), None).unwrap();
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
        let old = add_user(&path, "kari", vec![Role::Write], None, None).unwrap();
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

#[cfg(test)]
mod login_tests {
    use super::*;

    fn users_with_kari() -> (tempfile::TempDir, PathBuf, Users) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(USERS_FILE);
        add_user(&path, "kari", vec![Role::Write], None, None).unwrap();
        set_password(&path, "kari", "hemmelig ø").unwrap();
        add_user(&path, "tokenonly", vec![Role::Write], None, None).unwrap();
        let users = Users::open(&path).unwrap();
        (tmp, path, users)
    }

    #[test]
    fn passwords_are_salted_argon2_and_verify() {
        let a = hash_password("pw").unwrap();
        let b = hash_password("pw").unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "salted");
        assert!(verify_password(&a, "pw") && verify_password(&b, "pw"));
        assert!(!verify_password(&a, "pw ") && !verify_password("garbage", "pw"));
    }

    #[test]
    fn a_login_gives_a_token_that_authenticates_until_the_password_changes() {
        let (_tmp, path, users) = users_with_kari();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("hemmelig"), "no clear text password on disk");
        let token = users.login("kari", "hemmelig ø").expect("login");
        assert_eq!(
            users.authenticate(&token).map(|u| u.name),
            Some("kari".into())
        );
        let second = users.login("kari", "hemmelig ø").expect("again");
        assert_ne!(token, second);
        assert_eq!(users.login("kari", "hemmelig"), Err(LoginError::Invalid));
        assert_eq!(users.login("ola", "hemmelig ø"), Err(LoginError::Invalid));
        assert_eq!(users.login("tokenonly", ""), Err(LoginError::Invalid));
        assert!(users.authenticate("not a session").is_none());
        // a new password ends the sessions opened with the old one
        std::thread::sleep(Duration::from_millis(20));
        set_password(&path, "kari", "nytt").unwrap();
        assert!(users.authenticate(&token).is_none());
        assert!(users.login("kari", "nytt").is_ok());
    }

    #[test]
    fn failed_logins_lock_the_name_known_or_not() {
        let (_tmp, _path, users) = users_with_kari();
        for name in ["kari", "finnesikke"] {
            for _ in 0..MAX_FAILED_LOGINS {
                assert_eq!(users.login(name, "feil"), Err(LoginError::Invalid));
            }
            match users.login(name, "hemmelig ø") {
                Err(LoginError::Locked(left)) => {
                    assert!(left > FAILED_LOGIN_WINDOW - Duration::from_secs(60))
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        // other names are not affected
        assert_eq!(users.login("tokenonly", "x"), Err(LoginError::Invalid));
    }

    #[test]
    fn unknown_names_cost_the_same_work_as_wrong_passwords() {
        let (_tmp, _path, users) = users_with_kari();
        let time = |name: &str| {
            let t = Instant::now();
            let _ = users.login(name, "feil");
            t.elapsed()
        };
        let _ = decoy_hash();
        // noise only slows a run down, so the fastest of each is its real cost
        let wrong = (0..2).map(|_| time("kari")).min().unwrap();
        let unknown = (0..2).map(|_| time("ukjent")).min().unwrap();
        let no_password = (0..2).map(|_| time("tokenonly")).min().unwrap();
        for (what, d) in [("unknown", unknown), ("no password", no_password)] {
            assert!(
                d * 10 >= wrong * 3,
                "{what} {d:?} vs wrong password {wrong:?}"
            );
        }
    }

    #[test]
    fn over_long_names_are_refused_at_once_and_never_kept() {
        let (_tmp, _path, users) = users_with_kari();
        let long = "x".repeat(30_000);
        let started = Instant::now();
        for _ in 0..200 {
            assert_eq!(
                users.login(&long, "feil"),
                Err(LoginError::NameTooLong(30_000))
            );
        }
        // no argon2 verification for them (one takes tens of milliseconds)
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        let failures = users.logins.failures.lock().unwrap();
        assert!(failures.is_empty(), "{} names kept", failures.len());
        drop(failures);
        // the longest allowed name is a login like any other: counted when it fails
        let longest = "y".repeat(MAX_NAME_BYTES);
        assert_eq!(users.login(&longest, "feil"), Err(LoginError::Invalid));
        assert_eq!(users.logins.failures.lock().unwrap().len(), 1);
    }

    #[test]
    fn the_failure_table_stays_within_its_capacity_dropping_the_oldest() {
        let capacity = 1_000;
        let logins = Logins::with_capacity(capacity);
        let name = |i: usize| format!("{i:0>width$}", width = MAX_NAME_BYTES);
        let mut most = 0;
        for i in 0..5 * capacity {
            logins.failed(&name(i));
            most = most.max(logins.failures.lock().unwrap().len());
        }
        let failures = logins.failures.lock().unwrap();
        assert!(most <= capacity, "{most} entries");
        let bytes: usize = failures.keys().map(String::len).sum();
        assert!(bytes <= capacity * MAX_NAME_BYTES, "{bytes} bytes of names");
        // the newest are kept, the oldest went first
        assert!(failures.contains_key(&name(5 * capacity - 1)));
        assert!(!failures.contains_key(&name(0)));
        let kept_newest = (4 * capacity..5 * capacity)
            .filter(|&i| failures.contains_key(&name(i)))
            .count();
        assert!(
            kept_newest >= capacity - 1,
            "{kept_newest} of the newest kept"
        );
    }
}
