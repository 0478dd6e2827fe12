//! A per-request budget for CPU-bound query evaluation.
//!
//! The HTTP timeout can drop a request's future, but not stop work already running on a blocking
//! thread. So the work itself checks: [`run`] installs a deadline (and a cancel flag the caller
//! raises when it stops waiting) for the current thread, and the evaluation loops call
//! [`exhausted`] every few thousand rows and stop early when it says so. A stopped evaluation
//! leaves incomplete results behind, which is why [`run`] never hands them out: it returns
//! `Err(Stop)` whenever the work was stopped or outlived its deadline, whatever it returned.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why work was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The deadline passed (or the caller stopped waiting).
    Deadline,
    /// The work met an input it refuses to walk (e.g. an expression nested deeper than any
    /// parser produces).
    TooComplex,
}

struct Current {
    deadline: Instant,
    cancelled: Arc<AtomicBool>,
    stopped: Option<Stop>,
}

// Per-thread scope: the budget of the query running on this thread (set and restored by
// `run`), never shared between requests or servers.
thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Restores the previous budget of the thread when `run` ends (also on panic).
struct Restore(Option<Current>);

impl Drop for Restore {
    fn drop(&mut self) {
        let prev = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// Run `work` on this thread with `deadline`; `cancelled` stops it as soon as it is set.
/// `Err` when the work was stopped or ended after the deadline: its result is then discarded.
pub fn run<T>(
    deadline: Instant,
    cancelled: Arc<AtomicBool>,
    work: impl FnOnce() -> T,
) -> Result<T, Stop> {
    let prev = CURRENT.with(|c| {
        c.borrow_mut().replace(Current {
            deadline,
            cancelled,
            stopped: None,
        })
    });
    let restore = Restore(prev);
    let out = work();
    let over = exhausted();
    let stopped = CURRENT.with(|c| c.borrow().as_ref().and_then(|b| b.stopped));
    drop(restore);
    match stopped {
        Some(why) => Err(why),
        None if over => Err(Stop::Deadline),
        None => Ok(out),
    }
}

/// Has the current work been stopped or run out of time? Always false outside [`run`]. Costs
/// a clock read: call it every few thousand rows, not for each one.
pub fn exhausted() -> bool {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        let Some(b) = c.as_mut() else {
            return false;
        };
        if b.stopped.is_some() {
            return true;
        }
        if b.cancelled.load(Ordering::Relaxed) || Instant::now() >= b.deadline {
            b.stopped = Some(Stop::Deadline);
            return true;
        }
        false
    })
}

/// Stop the current work for `why` (no effect outside [`run`], where the caller's own check
/// must handle it). Returns true when a budget was there to record it.
pub fn stop(why: Stop) -> bool {
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(b) => {
            b.stopped.get_or_insert(why);
            true
        }
        None => false,
    })
}

/// Counts loop iterations and reads the clock only every `EVERY` of them.
pub struct Ticker(u32);

impl Ticker {
    const EVERY: u32 = 4096;
    pub fn new() -> Ticker {
        Ticker(0)
    }
    /// True when the budget is exhausted (checked every 4,096 calls).
    pub fn exhausted(&mut self) -> bool {
        self.0 = self.0.wrapping_add(1);
        self.0.is_multiple_of(Self::EVERY) && exhausted()
    }
}

impl Default for Ticker {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn never() -> Arc<AtomicBool> {
        Arc::new(AtomicBool::new(false))
    }

    #[test]
    fn work_within_the_deadline_keeps_its_result() {
        let r = run(Instant::now() + Duration::from_secs(60), never(), || {
            assert!(!exhausted());
            7
        });
        assert_eq!(r, Ok(7));
        assert!(!exhausted(), "no budget outside run");
    }

    #[test]
    fn a_passed_deadline_discards_the_result() {
        let r = run(Instant::now(), never(), || 7);
        assert_eq!(r, Err(Stop::Deadline));
    }

    #[test]
    fn cancelling_stops_the_work() {
        let flag = never();
        let f2 = flag.clone();
        let r = run(Instant::now() + Duration::from_secs(60), flag, || {
            let mut t = Ticker::new();
            let mut n = 0u64;
            loop {
                n += 1;
                if n == 10_000 {
                    f2.store(true, Ordering::Relaxed);
                }
                if t.exhausted() {
                    return n;
                }
            }
        });
        assert_eq!(r, Err(Stop::Deadline));
    }

    #[test]
    fn a_refusal_is_reported_as_such_and_nested_runs_restore_the_outer_budget() {
        let outer = run(Instant::now() + Duration::from_secs(60), never(), || {
            let inner = run(Instant::now() + Duration::from_secs(60), never(), || {
                stop(Stop::TooComplex)
            });
            assert_eq!(inner, Err(Stop::TooComplex));
            exhausted()
        });
        assert_eq!(outer, Ok(false));
        assert!(!stop(Stop::TooComplex), "nothing to record outside run");
    }
}
