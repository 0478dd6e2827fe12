//! Liveness and readiness for load balancers, orchestrators and `HEALTHCHECK`s: `GET /health`
//! answers 200 as soon as the process serves HTTP (the port is bound before the data is loaded);
//! `GET /ready` answers 200 once a generation is loaded and — unless the server is read-only —
//! the writer thread runs (and, publishing to a store, holds the store's writer lease,
//! `remote::lease`), else 503 with `Retry-After`. Both bodies are JSON saying what is (not)
//! ready. A read replica (`--follow`) adds a `replica` check: the generation served, the one the
//! store's CURRENT names and the lag; with `--max-lag` set, a replica behind the store for longer
//! than that is not ready (503), so a load balancer drains it until it has caught up.
//!
//! While the server is starting (`server::serve_starting`), connections are answered by
//! [`starting_router`]: `/health` 200, `/ready` 503, and every other request 503 with
//! `Retry-After` in the shape of the API it belongs to (the request stack's guard reshapes the
//! plain 503 into the read API's error array or the write API's fault). Those responses carry
//! `Connection: close`, so a client's next request opens a connection that the loaded
//! application serves.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use super::state::AppState;

/// Seconds a client is asked to wait (`Retry-After`) while the server is starting.
pub const RETRY_AFTER_S: u64 = 2;

/// The version of this build (Cargo package version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `/health` and `/ready` of the loaded application (full paths, at the server root).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
}

/// `GET /health` body.
#[derive(Debug, Serialize)]
pub struct Health {
    /// Always `ok`: the process serves HTTP.
    pub status: &'static str,
    pub version: &'static str,
    /// `starting` while the data is loaded, then `serving`.
    pub phase: &'static str,
}

/// `GET /ready` body.
#[derive(Debug, Serialize)]
pub struct Ready {
    pub ready: bool,
    pub version: &'static str,
    pub generation: Check,
    pub writer: Check,
    /// A read replica's standing against its store (only with `--follow`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaCheck>,
}

/// `/ready`'s `replica` check: how far behind its store the replica is.
#[derive(Debug, Serialize)]
pub struct ReplicaCheck {
    /// False when behind for longer than `--max-lag`.
    pub ready: bool,
    /// The generation served.
    pub generation: u64,
    /// The generation the store's CURRENT named at the last look.
    pub store_generation: Option<u64>,
    pub generations_behind: u64,
    /// Seconds since CURRENT moved past the served generation (0: up to date).
    pub seconds_behind: f64,
    /// `--max-lag` (0: no bound).
    pub max_lag_seconds: f64,
    /// Seconds since the last successful look at CURRENT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_since_look: Option<f64>,
    /// The last failure to look or catch up, if it has not caught up since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub detail: String,
}

/// The `replica` check of a replica's standing.
pub fn replica_check(lag: crate::replica::Lag) -> ReplicaCheck {
    let ready = !lag.beyond_bound();
    let bound = if lag.max_lag_s > 0.0 {
        format!("--max-lag {} s", lag.max_lag_s)
    } else {
        "no --max-lag".to_string()
    };
    let detail = match lag.store_generation {
        None => format!(
            "serving generation {}; the store's CURRENT not seen yet",
            lag.served_generation
        ),
        Some(s) if lag.seconds_behind == 0.0 => format!(
            "serving generation {}, the one the store's CURRENT names ({s})",
            lag.served_generation
        ),
        Some(s) => format!(
            "serving generation {}; the store's CURRENT moved past it {:.1} s ago (now {s}; {bound}){}",
            lag.served_generation,
            lag.seconds_behind,
            if ready {
                ": catching up"
            } else {
                ": too far behind, not ready until caught up"
            }
        ),
    };
    let seconds_since_look = lag.last_look.map(|t| {
        std::time::SystemTime::now()
            .duration_since(t)
            .unwrap_or_default()
            .as_secs_f64()
    });
    ReplicaCheck {
        ready,
        generation: lag.served_generation,
        store_generation: lag.store_generation,
        generations_behind: lag.generations_behind,
        seconds_behind: round_ms(lag.seconds_behind),
        max_lag_seconds: lag.max_lag_s,
        seconds_since_look: seconds_since_look.map(round_ms),
        last_error: lag.last_error,
        detail,
    }
}

fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

/// One readiness condition.
#[derive(Debug, Serialize)]
pub struct Check {
    pub ready: bool,
    /// The generation served (generation check, once loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    pub detail: String,
}

async fn health() -> Json<Health> {
    Json(Health {
        status: "ok",
        version: VERSION,
        phase: "serving",
    })
}

/// Readiness of a loaded application.
pub fn readiness(s: &AppState) -> Ready {
    let g = s.store.current();
    let generation = Check {
        ready: true,
        id: Some(g.id),
        detail: format!("generation {} loaded", g.id),
    };
    let writer = match &s.writer {
        None => Check {
            ready: true,
            id: None,
            detail: "read-only: no writer needed".into(),
        },
        Some(w) if w.is_running() => match w.store_problem() {
            None => Check {
                ready: true,
                id: None,
                detail: "writer running".into(),
            },
            Some(why) => Check {
                ready: false,
                id: None,
                detail: format!("the writer takes no changesets: {why}"),
            },
        },
        Some(_) => Check {
            ready: false,
            id: None,
            detail: "the writer thread has stopped (see the log); restart the server".into(),
        },
    };
    let replica = s
        .config
        .replica
        .as_deref()
        .map(|r| replica_check(r.lag(g.id)));
    Ready {
        ready: generation.ready && writer.ready && replica.as_ref().is_none_or(|r| r.ready),
        version: VERSION,
        generation,
        writer,
        replica,
    }
}

async fn ready(State(s): State<AppState>) -> Response {
    let r = readiness(&s);
    if r.ready {
        Json(r).into_response()
    } else {
        not_ready(Json(r).into_response())
    }
}

fn not_ready(mut r: Response) -> Response {
    *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
    r
}

/// What the server is doing while it starts (shown by `/ready` and in the 503s, to any client:
/// "loading" and the step, never a path of the server; `server::load_state_with` sets it).
#[derive(Clone, Default)]
pub struct Starting {
    step: Arc<Mutex<String>>,
    /// Where the starting application's access-log lines go (None: as `OpsOptions` says).
    access_log: Option<Arc<super::access_log::AccessLog>>,
}

impl Starting {
    pub fn new(step: impl Into<String>) -> Starting {
        Starting {
            step: Arc::new(Mutex::new(step.into())),
            access_log: None,
        }
    }
    /// The same, its access-log lines going to `log` (the server's, which the loaded
    /// application writes to as well).
    pub fn with_access_log(mut self, log: Option<Arc<super::access_log::AccessLog>>) -> Starting {
        self.access_log = log;
        self
    }
    pub fn access_log(&self) -> Option<Arc<super::access_log::AccessLog>> {
        self.access_log.clone()
    }
    pub fn set(&self, step: impl Into<String>) {
        *self.step.lock().unwrap_or_else(|e| e.into_inner()) = step.into();
    }
    pub fn get(&self) -> String {
        self.step.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The routes that answer while the data is loaded (see the module documentation).
pub fn starting_router(starting: Starting) -> Router {
    Router::new()
        .route("/health", get(starting_health))
        .route("/ready", get(starting_ready))
        .fallback(starting_unavailable)
        .with_state(starting)
}

fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

async fn starting_health() -> Response {
    closing(
        Json(Health {
            status: "ok",
            version: VERSION,
            phase: "starting",
        })
        .into_response(),
    )
}

async fn starting_ready(State(s): State<Starting>) -> Response {
    let step = s.get();
    let body = Ready {
        ready: false,
        version: VERSION,
        generation: Check {
            ready: false,
            id: None,
            detail: step,
        },
        writer: Check {
            ready: false,
            id: None,
            detail: "not started yet".into(),
        },
        replica: None,
    };
    closing(not_ready(Json(body).into_response()))
}

/// Any other request while starting: a plain 503 that the guard puts into the API's shape.
async fn starting_unavailable(State(s): State<Starting>) -> Response {
    let text = format!(
        "Tjenesten starter ({}); prøv igjen om {RETRY_AFTER_S} sekunder",
        s.get()
    );
    closing(not_ready(
        (StatusCode::SERVICE_UNAVAILABLE, text).into_response(),
    ))
}
