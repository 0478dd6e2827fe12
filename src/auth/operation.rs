//! The six operations of a changeset: what a role may do (`auth`) and the parts the write path
//! applies (`changeset::model` re-exports it). Here, below both, so rights need not name the
//! changeset model.

/// The six operations, in the order the writer applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Register,
    Update,
    Correct,
    PartialUpdate,
    PartialCorrect,
    Delete,
}

impl Operation {
    pub const ALL: [Operation; 6] = [
        Operation::Register,
        Operation::Update,
        Operation::Correct,
        Operation::PartialUpdate,
        Operation::PartialCorrect,
        Operation::Delete,
    ];
    /// The changeset part's name in the API.
    pub fn api_name(self) -> &'static str {
        match self {
            Operation::Register => "registrer",
            Operation::Update => "oppdater",
            Operation::Correct => "korriger",
            Operation::PartialUpdate => "delvisOppdater",
            Operation::PartialCorrect => "delvisKorriger",
            Operation::Delete => "slett",
        }
    }
    /// Corrections rewrite history and need the korriger (or admin) role.
    pub fn is_correction(self) -> bool {
        matches!(self, Operation::Correct | Operation::PartialCorrect)
    }
    pub fn is_partial(self) -> bool {
        matches!(self, Operation::PartialUpdate | Operation::PartialCorrect)
    }
}
