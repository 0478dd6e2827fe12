//! A producer's side of handing a generation to the owner of the data directory (`generate`,
//! `import`, `refresh` while a server owns it): announce the hand-off and wait for the owner to
//! hold its writer (`begin`), then mark the build ready and wait for the owner to publish it
//! (`publish`). When the owner ends meanwhile, the producer takes the directory over and
//! publishes itself. The inbox protocol itself is `snapshot::handoff`.

use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{complete_build, describe_owner_of, write_manifest, DataDir, Staging};
use crate::error::{EngineError, Result};
use crate::snapshot::handoff::{Answer, Ticket, ACK_TIMEOUT, INCOMING_DIR, POLL};
use crate::snapshot::manifest::Manifest;
use crate::snapshot::owner::try_lock_owner;

pub(super) fn poisoned() -> EngineError {
    EngineError::Internal("a hand-off lock was poisoned".into())
}

/// Withdraw the hand-off under way in `slot`, if any (failures only logged: the owner also
/// notices the producer's lock going).
pub(super) fn withdraw(slot: &Mutex<Option<Ticket>>) {
    let ticket = match slot.lock() {
        Ok(mut held) => held.take(),
        Err(_) => None,
    };
    if let Some(t) = ticket {
        if let Err(e) = t.withdraw() {
            tracing::warn!(error = %e, "withdrawing a hand-off failed");
        }
    }
}

impl DataDir {
    /// For a producer that hands its generations to another process: that owner ("pid …").
    pub fn handed_to(&self) -> Option<String> {
        (self.handoff.is_some() && !self.is_owner()).then(|| describe_owner_of(&self.root))
    }

    /// A producer whose owner ended takes the directory over (then publishes itself).
    pub(super) fn take_over(&self) -> Result<bool> {
        match try_lock_owner(&self.root)? {
            Some(lock) => {
                let _ = self.owner.set(lock);
                tracing::info!(data = %self.root.display(), "the owner of the data directory ended; publishing without it");
                self.remove_leftovers()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Announce a hand-off and wait for the owner's acknowledgement; None when the owner ended
    /// meanwhile and this process took the directory over.
    pub(super) fn begin_handoff(
        &self,
        slot: &Arc<Mutex<Option<Ticket>>>,
    ) -> Result<Option<Staging>> {
        let mut held = slot.lock().map_err(|_| poisoned())?;
        if held.is_some() {
            return Err(EngineError::Internal(
                "one hand-off at a time per data directory handle".into(),
            ));
        }
        let mut ticket = Ticket::announce(&self.root)?;
        let started = std::time::Instant::now();
        loop {
            match ticket.answer()? {
                Some(Answer::Acknowledged(base)) => {
                    ticket.base = base;
                    break;
                }
                Some(Answer::Refused(reason)) => {
                    ticket.withdraw()?;
                    return Err(self.refused(&reason));
                }
                Some(Answer::Published(_)) => {
                    ticket.withdraw()?;
                    return Err(EngineError::Internal(
                        "the owner answered a hand-off before it was built".into(),
                    ));
                }
                None => {}
            }
            if self.take_over()? {
                ticket.withdraw()?;
                return Ok(None);
            }
            if started.elapsed() > ACK_TIMEOUT {
                let owner = describe_owner_of(&self.root);
                ticket.withdraw()?;
                return Err(self.refused(&format!(
                    "the owner ({owner}) did not accept the hand-off within {} s; is it a \
                     vegdb server of this version?",
                    ACK_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(POLL);
        }
        let dir = ticket.build_dir();
        fs::create_dir_all(&dir).map_err(|e| EngineError::io(&dir, e))?;
        let staging = Staging {
            id: ticket.base.unwrap_or(0) + 1,
            dir,
            files: Vec::new(),
            base: ticket.base,
            handoff: Some(slot.clone()),
        };
        *held = Some(ticket);
        Ok(Some(staging))
    }

    fn refused(&self, reason: &str) -> EngineError {
        EngineError::io(
            self.root.join(INCOMING_DIR),
            std::io::Error::other(format!(
                "the owner of {} refused the generation: {reason}",
                self.root.display()
            )),
        )
    }

    /// Hand a complete build to the owner and wait for its answer: the generation directory
    /// it was published as; None when the owner ended and this process took over.
    pub(super) fn publish_handoff(
        &self,
        slot: &Mutex<Option<Ticket>>,
        staging: &Staging,
        manifest: &Manifest,
    ) -> Result<Option<PathBuf>> {
        let mut held = slot.lock().map_err(|_| poisoned())?;
        let ticket = held.as_ref().ok_or_else(|| {
            EngineError::Internal("publishing a hand-off that was never begun".into())
        })?;
        let mut m = manifest.clone();
        m.generation = staging.id;
        m.parent = staging.base;
        complete_build(&staging.dir, &mut m, staging.files.clone())?;
        write_manifest(&staging.dir, &m)?;
        ticket.mark_ready()?;
        loop {
            match ticket.answer()? {
                Some(Answer::Published(id)) => {
                    if let Some(t) = held.take() {
                        t.withdraw()?;
                    }
                    return Ok(Some(self.generation_dir(id)));
                }
                Some(Answer::Refused(reason)) => {
                    if let Some(t) = held.take() {
                        t.withdraw()?;
                    }
                    return Err(self.refused(&reason));
                }
                _ => {}
            }
            if self.take_over()? {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }
}
