//! A changeset's state in the journal: its progress (`fremdrift`), why it waits or was
//! rejected, and its results.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::auth::Rights;
use crate::changeset::validate::Outcome;

/// `fremdrift` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Progress {
    #[serde(rename = "IKKE_STARTET")]
    NotStarted,
    #[serde(rename = "BEHANDLES")]
    Processing,
    #[serde(rename = "VENTER")]
    Waiting,
    #[serde(rename = "KANSELLERT")]
    Cancelled,
    #[serde(rename = "AVVIST")]
    Rejected,
    #[serde(rename = "UTFØRT")]
    Done,
    #[serde(rename = "UTFØRT_OG_ETTERBEHANDLET")]
    DoneAndVisible,
}

impl Progress {
    /// Every state.
    pub const ALL: [Progress; 7] = [
        Progress::NotStarted,
        Progress::Processing,
        Progress::Waiting,
        Progress::Cancelled,
        Progress::Rejected,
        Progress::Done,
        Progress::DoneAndVisible,
    ];
    pub fn api_name(self) -> &'static str {
        match self {
            Progress::NotStarted => "IKKE_STARTET",
            Progress::Processing => "BEHANDLES",
            Progress::Waiting => "VENTER",
            Progress::Cancelled => "KANSELLERT",
            Progress::Rejected => "AVVIST",
            Progress::Done => "UTFØRT",
            Progress::DoneAndVisible => "UTFØRT_OG_ETTERBEHANDLET",
        }
    }
    pub fn parse(text: &str) -> Option<Progress> {
        serde_json::from_value(serde_json::Value::String(text.to_uppercase())).ok()
    }
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Progress::Cancelled | Progress::Rejected | Progress::Done | Progress::DoneAndVisible
        )
    }
}

/// `venteårsak`: why a changeset waits (VENTER).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WaitingReason {
    /// Processing failed for a reason of ours (or the disk was full): `restart` tries again.
    #[serde(rename = "SYSTEMFEIL")]
    SystemError,
}

/// `avvistårsak`: why a changeset was rejected (AVVIST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RejectionReason {
    #[serde(rename = "VALIDERINGSFEIL")]
    ValidationError,
    /// The user lacks a right (type, municipality, role).
    #[serde(rename = "IKKE_AUTORISERT")]
    Unauthorized,
}

impl WaitingReason {
    pub fn api_name(self) -> &'static str {
        match self {
            WaitingReason::SystemError => "SYSTEMFEIL",
        }
    }
}

impl RejectionReason {
    /// Why an outcome with errors is rejected: a missing right, or else validation.
    pub fn of(outcome: &Outcome) -> RejectionReason {
        if outcome.unauthorized {
            RejectionReason::Unauthorized
        } else {
            RejectionReason::ValidationError
        }
    }
    pub fn api_name(self) -> &'static str {
        match self {
            RejectionReason::ValidationError => "VALIDERINGSFEIL",
            RejectionReason::Unauthorized => "IKKE_AUTORISERT",
        }
    }
}

/// The mutable state of a changeset.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    /// RFC 3339 registration time (`mottatt`).
    pub received: String,
    pub received_ms: i64,
    pub progress: Progress,
    /// `venteårsak` (VENTER) and `avvistårsak` (AVVIST).
    #[serde(default)]
    pub waiting_reason: Option<WaitingReason>,
    #[serde(default)]
    pub rejected_reason: Option<RejectionReason>,
    /// `eier`: the registering user; `klient`: its X-Client.
    pub owner: String,
    #[serde(default)]
    pub client: Option<String>,
    /// The owner's rights when registering (processing checks the owner's rights as the users
    /// file says then; these apply only to a writer without a users file).
    #[serde(default)]
    pub rights: Rights,
    #[serde(default)]
    pub dry_run: bool,
    /// Order of `start` calls; the writer applies started changesets in this order.
    #[serde(default)]
    pub start_seq: Option<u64>,
    /// When `start` was called (epoch ms).
    #[serde(default)]
    pub started_ms: Option<i64>,
    /// `X-NVDB-Delay`: processing waits this many seconds after start.
    #[serde(default)]
    pub delay_s: u32,
    /// The generation that made the changes visible.
    #[serde(default)]
    pub generation: Option<u64>,
    /// Shared: a status poll clones the record, not 10,000 results.
    #[serde(default)]
    pub outcome: Arc<Outcome>,
    pub objects: usize,
    /// In memory only: the results of this finished changeset were dropped from memory (they
    /// are in its state file; `Journal::get_full` reads them back).
    #[serde(skip)]
    pub outcome_elided: bool,
}

/// Finished changesets with more object results than this keep them on disk only.
pub const RESULTS_KEPT_IN_MEMORY: usize = 100;

/// The in-memory form of a record: large results of finished changesets stay on disk.
pub(super) fn slim(mut r: Record) -> Record {
    if r.progress.is_final() && r.outcome.objects.len() > RESULTS_KEPT_IN_MEMORY {
        r.outcome = Arc::default();
        r.outcome_elided = true;
    }
    r
}

impl Record {
    /// A new, not yet started changeset of `objects` objects, received now.
    pub fn new(id: String, owner: String, client: Option<String>, objects: usize) -> Record {
        let received = chrono::Utc::now();
        Record {
            id,
            received: received.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            received_ms: received.timestamp_millis(),
            progress: Progress::NotStarted,
            waiting_reason: None,
            rejected_reason: None,
            owner,
            client,
            rights: Rights::default(),
            dry_run: false,
            start_seq: None,
            started_ms: None,
            delay_s: 0,
            generation: None,
            outcome: Arc::default(),
            objects,
            outcome_elided: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `api_name` is what serde writes (the journal and the API agree).
    #[test]
    fn api_names_are_the_serde_names() {
        let json = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
        for p in [
            Progress::NotStarted,
            Progress::Processing,
            Progress::Waiting,
            Progress::Cancelled,
            Progress::Rejected,
            Progress::Done,
            Progress::DoneAndVisible,
        ] {
            assert_eq!(json(serde_json::to_value(p).unwrap()), p.api_name());
            assert_eq!(Progress::parse(&p.api_name().to_lowercase()), Some(p));
        }
        for r in [
            RejectionReason::ValidationError,
            RejectionReason::Unauthorized,
        ] {
            assert_eq!(json(serde_json::to_value(r).unwrap()), r.api_name());
        }
        let w = WaitingReason::SystemError;
        assert_eq!(json(serde_json::to_value(w).unwrap()), w.api_name());
    }
}
