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
    struct CancelOnDrop(Arc<AtomicBool>);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let limit = s.config.query_budget;
    let now = Instant::now();
    // (a budget too large to add is as good as none)
    let deadline = now
        .checked_add(limit)
        .unwrap_or(now + Duration::from_secs(365 * 86_400));
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let flag = cancel.0.clone();
    let done = tokio::task::spawn_blocking(move || budget::run(deadline, flag, work)).await;
    drop(cancel);
    match done {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(Stop::Deadline)) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            5003,
            format!(
                "Spørringen brukte opp tidsbudsjettet sitt ({} s); avgrens filteret (område, egenskap, overlapp) eller prøv igjen",
                limit.as_secs_f64()
            ),
        )),
        Ok(Err(Stop::TooComplex)) => Err(ApiError::bad(4005, "Filteret er for sammensatt")),
        Err(e) => {
            tracing::error!(error = %e, "road-object selection failed");
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                5000,
                "Uventet feil på tjenesten",
            ))
        }
    }
}
