//! Running a road-object selection within the request's time budget (`--query-budget`), off
//! the async workers (or, for usually quick work, first briefly on them).

use axum::http::StatusCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::api::error::{ApiError, ApiResult};
use crate::api::state::AppState;
use crate::query::budget::{self, Stop};

/// Time a query may first take on the async worker itself before it moves to the blocking pool.
const QUICK_SLICE: Duration = Duration::from_micros(200);

/// As [`off_the_workers`] for work that is usually quick (statistics: microseconds): it first
/// runs on this worker within [`QUICK_SLICE`] (a hand-off to the blocking pool costs more than
/// the work); stopped by that slice, it runs again on the blocking pool within the budget.
pub(crate) async fn quick_or_off_the_workers<T: Send + 'static>(
    s: &AppState,
    work: impl Fn() -> T + Send + Sync + 'static,
) -> ApiResult<T> {
    match quick(s, &work) {
        Some(done) => done,
        None => off_the_workers(s, work).await,
    }
}

/// `work` run on this worker within [`QUICK_SLICE`]; None when the slice ran out (or the
/// budget is no longer than the slice): the work is then for the blocking pool.
pub(crate) fn quick<T>(s: &AppState, work: &impl Fn() -> T) -> Option<ApiResult<T>> {
    if s.config.query_budget <= QUICK_SLICE {
        return None;
    }
    match budget::run(
        Instant::now() + QUICK_SLICE,
        Arc::new(AtomicBool::new(false)),
        work,
    ) {
        Ok(v) => Some(Ok(v)),
        Err(Stop::Deadline) => None,
        Err(Stop::TooComplex) => Some(Err(ApiError::bad(4005, "Filteret er for sammensatt"))),
    }
}

/// Run a road-object query's CPU-bound selection on the blocking pool, so the async workers
/// stay free for other requests, within the request's budget (`--query-budget`): the work
/// checks the deadline as it goes and stops, answering 503/5003. When the request goes away
/// (client gone, request timeout) the work is told to stop too.
pub(crate) async fn off_the_workers<T: Send + 'static>(
    s: &AppState,
    work: impl FnOnce() -> T + Send + 'static,
) -> ApiResult<T> {
    let (deadline, cancel) = budgeted(s);
    let flag = cancel.0.clone();
    let done = tokio::task::spawn_blocking(move || budget::run(deadline, flag, work)).await;
    drop(cancel);
    outcome(s, done.map_err(|e| e.to_string()))
}

/// As [`off_the_workers`], on the compute pool (rayon's) instead of the blocking pool: for
/// work that is itself parallel (a grouped pass), which then runs a share of its tasks on the
/// pool thread it started on, where from a blocking thread it would wait asleep for the pool
/// and be woken again. A panic in the work is caught and answered as on the blocking pool.
pub(crate) async fn on_the_pool<T: Send + 'static>(
    s: &AppState,
    work: impl FnOnce() -> T + Send + 'static,
) -> ApiResult<T> {
    let (deadline, cancel) = budgeted(s);
    let flag = cancel.0.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let run = std::panic::AssertUnwindSafe(move || budget::run(deadline, flag, work));
        let _ = tx.send(std::panic::catch_unwind(run).map_err(|_| "panicked".to_string()));
    });
    let done = rx.await.unwrap_or_else(|_| Err("dropped".to_string()));
    drop(cancel);
    outcome(s, done)
}

/// Sets the work's flag when the request is dropped.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The request's deadline (`--query-budget` from now) and its cancel flag.
fn budgeted(s: &AppState) -> (Instant, CancelOnDrop) {
    let now = Instant::now();
    // (a budget too large to add is as good as none)
    let deadline = now
        .checked_add(s.config.query_budget)
        .unwrap_or(now + Duration::from_secs(365 * 86_400));
    (deadline, CancelOnDrop(Arc::new(AtomicBool::new(false))))
}

/// The answer of budgeted work: its value, 503/5003 when it ran out of budget, 4005 when too
/// complex, 500 when it failed (`failed`: why).
fn outcome<T>(s: &AppState, done: Result<Result<T, Stop>, String>) -> ApiResult<T> {
    match done {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(Stop::Deadline)) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            5003,
            format!(
                "Spørringen brukte opp tidsbudsjettet sitt ({} s); avgrens filteret (område, egenskap, overlapp) eller prøv igjen",
                s.config.query_budget.as_secs_f64()
            ),
        )),
        Ok(Err(Stop::TooComplex)) => Err(ApiError::bad(4005, "Filteret er for sammensatt")),
        Err(failed) => {
            tracing::error!(error = %failed, "road-object selection failed");
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                5000,
                "Uventet feil på tjenesten",
            ))
        }
    }
}
