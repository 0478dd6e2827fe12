//! One batch on the writer thread: each changeset validated and applied into one working
//! state (a failure of one alone sends it to VENTER), the result materialised, published and
//! swapped in, and every changeset finished.

use std::sync::Arc;
use std::time::Instant;

use super::publish::Batch;
use super::Writer;
use crate::auth::Rights;
use crate::changeset::apply::apply;
use crate::changeset::journal::{Progress, Record, RejectionReason, WaitingReason};
use crate::changeset::validate::{validate, Code, Context, Issue, Outcome};
use crate::changeset::working::Working;
use crate::error::{EngineError, Result};
use crate::failpoints::fail_point;
use crate::generation::Generation;

/// Why a batch could not be processed.
pub(super) enum BatchError {
    /// This changeset failed for a reason of its own; the batch goes on without it.
    One(String, EngineError),
    /// Materialising the batch failed; it cannot be pinned on one changeset yet.
    Materialise(EngineError),
    /// Writing or publishing the batch's generation failed: the whole batch waits.
    All(EngineError),
}

impl Writer {
    /// Process a batch. Each changeset is isolated: when one fails unexpectedly (its content
    /// cannot be read, validating or applying it fails or panics) it alone goes to VENTER
    /// (SYSTEMFEIL) and the batch is processed again without it. Only a failure to write the
    /// batch's generation holds the whole batch back.
    pub(super) fn process(&self, ids: &[String]) -> Result<()> {
        let mut ids = ids.to_vec();
        loop {
            match self.process_batch(&ids) {
                Ok(()) => return Ok(()),
                Err(BatchError::All(e)) => return Err(e),
                Err(BatchError::One(id, e)) => {
                    tracing::error!(changeset = %id, error = %e, "processing one changeset failed; it waits for restart, the rest of its batch goes on");
                    self.wait_for_restart(&id)?;
                    ids.retain(|i| *i != id);
                    if ids.is_empty() {
                        return Ok(());
                    }
                }
                Err(BatchError::Materialise(e)) if ids.len() > 1 => {
                    tracing::warn!(error = %e, "a batch could not be materialised; its changesets go one by one");
                    for id in &ids {
                        self.process(std::slice::from_ref(id))?;
                    }
                    return Ok(());
                }
                Err(BatchError::Materialise(e)) => {
                    tracing::error!(changeset = %ids[0], error = %e, "materialising a changeset failed; it waits for restart");
                    self.wait_for_restart(&ids[0])?;
                    return Ok(());
                }
            }
        }
    }

    /// One changeset failed for a reason of its own: VENTER (SYSTEMFEIL), restartable.
    fn wait_for_restart(&self, id: &str) -> Result<()> {
        let _ = self.journal.transition(
            id,
            |r| r.progress == Progress::Processing,
            |r| {
                r.progress = Progress::Waiting;
                r.waiting_reason = Some(WaitingReason::SystemError);
            },
        )?;
        Ok(())
    }

    /// The owner's rights now (the users file), or those recorded at registration.
    fn rights_of(&self, rec: &Record) -> Rights {
        match &self.owner_rights {
            Some(source) => source(&rec.owner).unwrap_or_else(Rights::none),
            None => rec.rights.clone(),
        }
    }

    /// Validate (and, when valid, apply) one changeset into `work`; None when it was finished
    /// without changes (rejected, dry run, not ours to process).
    fn process_one(
        &self,
        id: &str,
        base: &Generation,
        work: &mut Working,
        now: i64,
    ) -> std::result::Result<Option<(Outcome, usize)>, BatchError> {
        let one = |e: EngineError| BatchError::One(id.to_string(), e);
        let Some(rec) = self.journal.get(id) else {
            return Ok(None);
        };
        if rec.progress != Progress::Processing {
            return Ok(None); // queued twice (restart) or already finished
        }
        let content = self.journal.content(id).map_err(one)?;
        let rights = self.rights_of(&rec);
        let binaries = self.binaries.clone();
        let exists = move |r: &str| binaries.exists(r);
        let ctx = Context {
            rights: &rights,
            binary_exists: &exists,
            skip_location: false,
            skip_associations: false,
        };
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || -> Result<(Outcome, Option<Vec<u64>>)> {
                if rec.dry_run {
                    // a dry run sees the batch so far but leaves no trace in it
                    let mut scratch = Working::new(base);
                    let (outcome, plan) = validate(&mut scratch, &content, &ctx);
                    let done = plan.is_some();
                    if let Some(plan) = plan {
                        apply(&mut scratch, &plan, now);
                        scratch.materialise()?;
                        scratch.history()?;
                    }
                    return Ok((outcome, done.then(Vec::new)));
                }
                let (outcome, plan) = validate(work, &content, &ctx);
                Ok((outcome, plan.map(|plan| apply(work, &plan, now))))
            },
        ))
        .unwrap_or_else(|_| {
            Err(EngineError::Internal(
                "the writer panicked while validating or applying".into(),
            ))
        });
        let (mut outcome, applied) = checked.map_err(one)?;
        if !rights.write {
            outcome.unauthorized = true;
            outcome.errors.push(Issue::new(
                Code::MissingRight,
                format!("Brukeren {} har ikke (lenger) skriverett", rec.owner),
                "endringssett",
                None,
            ));
        }
        let finished = |outcome, done| -> std::result::Result<_, BatchError> {
            self.finish(id, outcome, done, None)
                .map_err(BatchError::All)?;
            Ok(None)
        };
        match applied {
            _ if rec.dry_run => {
                let done = applied.is_some() && !outcome.has_errors();
                finished(outcome, done.then_some(Progress::Done))
            }
            None => finished(outcome, None),
            Some(nvdb_ids) => {
                for (o, nvdb_id) in outcome.objects.iter_mut().zip(nvdb_ids) {
                    o.nvdb_id = Some(nvdb_id);
                }
                Ok(Some((outcome, rec.objects)))
            }
        }
    }

    fn process_batch(&self, ids: &[String]) -> std::result::Result<(), BatchError> {
        let started = Instant::now();
        let base = self.store.current();
        let mut work = Working::new(&base);
        let mut applied: Vec<(String, Outcome)> = Vec::new();
        let mut objects = 0usize;
        let now = chrono::Utc::now().timestamp();
        for id in ids {
            if let Some((outcome, n)) = self.process_one(id, &base, &mut work, now)? {
                objects += n;
                applied.push((id.clone(), outcome));
            }
        }
        if applied.is_empty() {
            return Ok(());
        }
        let validated_ms = started.elapsed().as_millis() as u64;
        let materialised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let (tables, deleted) = work.materialise()?;
            Ok(Batch {
                parents: work.parents(&tables),
                tables,
                deleted,
                history: work.history()?,
            })
        }))
        .unwrap_or_else(|_| {
            Err(EngineError::Internal(
                "the writer panicked while materialising".into(),
            ))
        });
        let batch = materialised.map_err(BatchError::Materialise)?;
        let materialised_ms = started.elapsed().as_millis() as u64;
        let new = self
            .publish(&base, batch, &applied)
            .map_err(BatchError::All)?;
        let generation = new.id;
        self.store.swap(new);
        let visible_ms = started.elapsed().as_millis() as u64;
        fail_point("after-swap");
        for (id, outcome) in applied {
            self.finish(
                &id,
                outcome,
                Some(Progress::DoneAndVisible),
                Some(generation),
            )
            .map_err(BatchError::All)?;
        }
        tracing::info!(
            generation,
            changesets = ids.len(),
            objects,
            validated_ms,
            materialised_ms,
            visible_ms,
            ms = started.elapsed().as_millis() as u64,
            "changesets applied"
        );
        self.collect_garbage();
        Ok(())
    }

    fn finish(
        &self,
        id: &str,
        outcome: Outcome,
        done: Option<Progress>,
        generation: Option<u64>,
    ) -> Result<()> {
        let allowed = |r: &Record| r.progress == Progress::Processing;
        let change = |r: &mut Record| {
            match done {
                Some(p) => r.progress = p,
                None => {
                    r.progress = Progress::Rejected;
                    r.rejected_reason = Some(RejectionReason::of(&outcome));
                }
            }
            r.generation = generation;
            r.outcome = Arc::new(outcome);
        };
        if generation.is_some() {
            // published: never fail (and so never retry) a visible changeset because its state
            // cannot be stored now; recovery after a restart finishes it from the generation
            self.journal.transition_best_effort(id, allowed, change);
            return Ok(());
        }
        let _ = self.journal.transition(id, allowed, change)?;
        Ok(())
    }
}
