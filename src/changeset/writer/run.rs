//! The writer thread's schedule: batches in start order (held back by `X-NVDB-Delay`, cut at
//! a size), a panic guard, and what happens to a batch that failed (retries with backoff
//! when the disk was full, VENTER otherwise).

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;

use super::{
    Writer, MAX_AUTO_RETRIES, MAX_BATCH_CHANGESETS, MAX_BATCH_OBJECTS, MAX_RETRY_DELAY_S,
    WRITER_THREADS,
};
use crate::changeset::journal::{Progress, WaitingReason};
use crate::changeset::priority::lower_priority;
use crate::changeset::validate::{Code, Issue};
use crate::error::EngineError;
use crate::generation::Generation;

/// A changeset waiting to be tried again by itself (disk full).
#[derive(Debug, Clone, Copy)]
pub(super) struct Retry {
    /// Epoch ms of the next attempt; None while that attempt is under way.
    due_ms: Option<i64>,
    attempt: u32,
}

/// Seconds before automatic attempt `attempt` (1-based).
fn retry_delay_s(attempt: u32) -> u64 {
    (1u64 << attempt.saturating_sub(1).min(16)).min(MAX_RETRY_DELAY_S)
}

impl Writer {
    pub(super) fn run(self: Arc<Self>, rx: Receiver<String>) {
        // The writer's parallel work runs on its own pool of `WRITER_THREADS`, so publishing
        // never takes every core from the readers.
        let priority = self.priority;
        lower_priority(priority);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(WRITER_THREADS)
            .thread_name(|i| format!("vegdb-writer-{i}"))
            .start_handler(move |_| lower_priority(priority))
            .build();
        let pool = match pool {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "the writer pool could not start; writes wait");
                return;
            }
        };
        // Replaced generations are dropped here, once no reader holds them, so freeing a large
        // table never lands on a request's thread.
        let mut retired: Vec<Arc<Generation>> = Vec::new();
        // changesets registered with X-NVDB-Delay, held back until (epoch ms, id)
        let mut delayed: Vec<(i64, String)> = Vec::new();
        // started changesets left over when a batch reached its size, first in line next time
        let mut carry: Vec<String> = Vec::new();
        // changesets that failed for lack of disk space, tried again by themselves
        let mut retries: BTreeMap<String, Retry> = BTreeMap::new();
        // generations handed over by other processes, and CURRENT moved by hand (adopt.rs)
        let mut adopter = crate::changeset::adopt::Adopter::new(
            self.data.clone(),
            self.watch.clone(),
            self.handoffs.clone(),
        );
        loop {
            retired.retain(|g| Arc::strong_count(g) > 1);
            adopter.between_batches(&self.store, &mut retired);
            let now = chrono::Utc::now().timestamp_millis();
            self.resume_due(&mut retries, now);
            let mut ids: Vec<String> = std::mem::take(&mut carry);
            delayed.retain(|(due, id)| {
                let ready = *due <= now;
                if ready {
                    ids.push(id.clone());
                }
                !ready
            });
            if ids.is_empty() {
                match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                    Ok(id) => {
                        self.stats.taken();
                        ids.push(id)
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
            while ids.len() < MAX_BATCH_CHANGESETS {
                match rx.try_recv() {
                    Ok(id) => {
                        self.stats.taken();
                        ids.push(id)
                    }
                    Err(_) => break,
                }
            }
            ids.retain(|id| match self.journal.get(id) {
                Some(r) if r.delay_s > 0 => {
                    let due = r.started_ms.unwrap_or(now) + r.delay_s as i64 * 1000;
                    if due > now {
                        delayed.push((due, id.clone()));
                        return false;
                    }
                    true
                }
                _ => true,
            });
            // a batch is a prefix in start order, up to MAX_BATCH_OBJECTS objects
            let mut batch_objects = 0usize;
            let mut cut = ids.len();
            for (i, id) in ids.iter().enumerate() {
                let n = self.journal.get(id).map_or(0, |r| r.objects);
                if i > 0 && batch_objects + n > MAX_BATCH_OBJECTS {
                    cut = i;
                    break;
                }
                batch_objects += n;
            }
            carry = ids.split_off(cut);
            if ids.is_empty() {
                continue;
            }
            if self.store_problem().is_some() {
                // without the store's writer lease nothing is published (and so reported
                // done): the batch stays BEHANDLES, first in line once the lease is held again
                ids.append(&mut carry);
                carry = ids;
                std::thread::sleep(std::time::Duration::from_millis(100));
                continue;
            }
            retired.push(self.store.current());
            // a bug must not take the writer down with changesets stuck in BEHANDLES
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| self.process(&ids))
            }))
            .unwrap_or_else(|_| {
                Err(EngineError::Internal(
                    "the writer panicked while processing".into(),
                ))
            });
            if let Err(e) = result {
                self.failed(&ids, &e, &mut retries);
            }
        }
    }

    /// A batch could not be processed: its changesets wait (VENTER, SYSTEMFEIL). When the disk
    /// was full they are tried again by themselves with backoff (said in `resultat.advarsel`);
    /// other failures wait for `restart`. The half-built generation is removed at once to give
    /// its space back.
    fn failed(&self, ids: &[String], e: &EngineError, retries: &mut BTreeMap<String, Retry>) {
        let full = crate::durable::is_storage_full(e);
        if let Err(e) = self.data.discard_staging() {
            tracing::warn!(error = %e, "removing the half-built generation failed");
        }
        let now = chrono::Utc::now().timestamp_millis();
        for id in ids {
            let attempt = retries.get(id).map_or(0, |r| r.attempt) + 1;
            let warning = if !full {
                None
            } else if attempt <= MAX_AUTO_RETRIES {
                let delay = retry_delay_s(attempt);
                retries.insert(
                    id.clone(),
                    Retry {
                        due_ms: Some(now + delay as i64 * 1000),
                        attempt,
                    },
                );
                Some(format!(
                    "Lagringsplassen er full: endringssettet prøves igjen automatisk om {delay} s (automatisk forsøk {attempt} av {MAX_AUTO_RETRIES})"
                ))
            } else {
                retries.remove(id);
                Some(format!(
                    "Lagringsplassen er full: ingen flere automatiske forsøk etter {MAX_AUTO_RETRIES}; start det igjen med restart når det er plass"
                ))
            };
            // the wait must show even when the disk is too full to store it (the journal then
            // still says BEHANDLES, which a restart of the service queues again)
            let changed = self.journal.transition_best_effort(
                id,
                |r| r.progress == Progress::Processing,
                |r| {
                    r.progress = Progress::Waiting;
                    r.waiting_reason = Some(WaitingReason::SystemError);
                    if let Some(message) = &warning {
                        let mut outcome = (*r.outcome).clone();
                        outcome.warnings.retain(|w| !w.is(Code::StorageFull));
                        outcome.warnings.push(Issue::new(
                            Code::StorageFull,
                            message.clone(),
                            "",
                            None,
                        ));
                        r.outcome = Arc::new(outcome);
                    }
                },
            );
            if !changed {
                retries.remove(id);
            }
        }
        if full {
            tracing::warn!(error = %e, changesets = ids.len(), "no space left while processing changesets; they are tried again by themselves");
        } else {
            tracing::error!(error = %e, "processing changesets failed; they wait for restart");
        }
    }

    /// Queue again the changesets whose automatic retry is due (VENTER → BEHANDLES).
    fn resume_due(&self, retries: &mut BTreeMap<String, Retry>, now: i64) {
        let due: Vec<String> = retries
            .iter()
            .filter(|(_, r)| r.due_ms.is_some_and(|d| d <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let resumed = self.journal.transition_best_effort(
                &id,
                |r| r.progress == Progress::Waiting,
                |r| {
                    r.progress = Progress::Processing;
                    r.waiting_reason = None;
                },
            );
            if resumed {
                tracing::info!(changeset = %id, "trying a changeset again after a full disk");
                if let Some(r) = retries.get_mut(&id) {
                    r.due_ms = None;
                }
                self.enqueue(&id);
            } else {
                // restarted by hand, cancelled or finished meanwhile
                retries.remove(&id);
            }
        }
        // forget changesets that finished
        retries.retain(|id, _| self.journal.get(id).is_some_and(|r| !r.progress.is_final()));
    }
}

#[cfg(test)]
mod tests {
    use super::retry_delay_s;

    #[test]
    fn retries_back_off_doubling_up_to_the_cap() {
        let delays: Vec<u64> = (1..=8).map(retry_delay_s).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(retry_delay_s(40), 60);
    }

    /// Two writers in one process keep the journal retention and the store watermark each was
    /// started with (both were process-wide statics where the first call won).
    #[test]
    fn two_writers_keep_their_own_retention_and_store_watermark() {
        use crate::changeset::writer::{Retention, Writer, WriterOptions};
        use crate::generate::{generate_into, Scale};
        use crate::generation::{Generation, GenerationStore};
        use crate::snapshot::store::DataDir;
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;

        let start = |retention: Retention, published: Option<Arc<AtomicU64>>| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = generate_into(Scale::Tiny, 3, tmp.path()).unwrap();
            let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
            let options = WriterOptions {
                retention,
                hold_until_published: published,
                ..WriterOptions::default()
            };
            let data = DataDir::open(tmp.path()).unwrap();
            let store = Arc::new(GenerationStore::new(g));
            (
                tmp,
                Writer::start_with_options(data, store, None, options).unwrap(),
            )
        };
        let short = Retention {
            keep_days: 1,
            keep_entries: 2,
            ..Retention::default()
        };
        let watermark = Arc::new(AtomicU64::new(7));
        let (_a_dir, a) = start(short, Some(watermark.clone()));
        let (_b_dir, b) = start(Retention::default(), None);
        assert_eq!(a.journal.retention(), short);
        assert_eq!(b.journal.retention(), Retention::default());
        assert_eq!(a.journal.published_watermark(), Some(7));
        assert_eq!(
            b.journal.published_watermark(),
            None,
            "B publishes to no store"
        );
        watermark.store(9, Ordering::Relaxed);
        assert_eq!(a.journal.published_watermark(), Some(9));
    }
}
