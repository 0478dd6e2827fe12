//! Who may do what: the users file (`users`) and the rights a writing user has (`Rights`),
//! which validation and the writer check; `token` reads the credentials a request presents.

pub mod operation;
pub mod token;
pub mod users;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use operation::Operation;

/// What the writing user may touch (None = no limit). `Rights::default()` is an admin's: no
/// limit at all.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rights {
    pub municipalities: Option<HashSet<u16>>,
    pub types: Option<HashSet<u32>>,
    /// May write at all (role skriv, korriger or admin).
    #[serde(default = "yes")]
    pub write: bool,
    /// May send korriger and delvisKorriger (role korriger or admin).
    #[serde(default = "yes")]
    pub correct: bool,
}

fn yes() -> bool {
    true
}

impl Default for Rights {
    fn default() -> Rights {
        Rights {
            municipalities: None,
            types: None,
            write: true,
            correct: true,
        }
    }
}

impl Rights {
    /// No right at all (a user who no longer exists).
    pub fn none() -> Rights {
        Rights {
            municipalities: Some(HashSet::new()),
            types: Some(HashSet::new()),
            write: false,
            correct: false,
        }
    }
    pub fn may_type(&self, type_id: u32) -> bool {
        self.types.as_ref().is_none_or(|t| t.contains(&type_id))
    }
    pub fn may_op(&self, op: Operation) -> bool {
        self.write && (self.correct || !op.is_correction())
    }
}

/// The rights a user has now, by user name (None: no such user any more). The writer asks it
/// when it processes a changeset, so rights narrowed after registration apply.
pub type RightsSource = std::sync::Arc<dyn Fn(&str) -> Option<Rights> + Send + Sync>;
