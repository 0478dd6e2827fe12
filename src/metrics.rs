//! THE metrics registry of a server (issue 14): every Prometheus metric vegdb exposes, rendered
//! at `GET /metrics` (text exposition format 0.0.4) by `api::stack`.
//!
//! The registry is a `metrics-exporter-prometheus` recorder owned by one [`Metrics`] (one per
//! served application, not the process-global recorder, so that two servers in one process —
//! the tests — count apart). Two kinds of figures:
//! - per request (`vegdb_http_*`): counted on the hot path through handles resolved once per
//!   (route, status) cell and kept in a fixed table, so a request costs a table index, an atomic
//!   add and a histogram sample, no lookup by name and no allocation. `route` is one of the
//!   fixed [`ROUTES`] (never the raw path); `status` is the code for the codes in [`STATUSES`],
//!   else `other`.
//! - state of the rest of the server (generation, writer, journal, hand-offs): read from the
//!   plain getters and counters those parts keep (`GenerationStore::current`,
//!   `generation::LAST_LOAD_MS`, `Writer::stats`, `Journal::count_by_progress`,
//!   `changeset::adopt::handoff_progress`) when `/metrics` is scraped, and set into gauges then.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

use crate::changeset::writer::Writer;
use crate::generation::GenerationStore;

/// Route labels: the first path segment of the read API under `/nvdb/api/v2` (templates with
/// `*` for what follows), the write API, the login, `/metrics`, and `other`.
pub const ROUTES: &[&str] = &[
    "/nvdb/api/v2/vegobjekttyper*",
    "/nvdb/api/v2/omrader*",
    "/nvdb/api/v2/status",
    "/nvdb/api/v2/veg",
    "/nvdb/api/v2/veg/batch",
    "/nvdb/api/v2/posisjon",
    "/nvdb/api/v2/vegnett*",
    "/nvdb/api/v2/vegobjekter*",
    "/nvdb/api/v2/vegobjekt",
    "/nvdb/api/v2/openapi.json",
    "/nvdb/api/v2/*",
    "/nvdb/apiskriv/*",
    "/openam/*",
    "/metrics",
    "other",
];

/// Status codes with a label of their own; every other code counts as `other`.
pub const STATUSES: &[u16] = &[
    200, 201, 204, 206, 301, 302, 303, 304, 400, 401, 403, 404, 405, 406, 409, 410, 412, 413, 414,
    415, 422, 429, 431, 500, 502, 503, 504, 507,
];

/// Latency histogram buckets, seconds.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Publish duration buckets, seconds.
const PUBLISH_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

pub const REQUESTS: &str = "vegdb_http_requests_total";
pub const LATENCY: &str = "vegdb_http_request_duration_seconds";
pub const IN_FLIGHT: &str = "vegdb_http_requests_in_flight";
pub const SHED: &str = "vegdb_http_requests_shed_total";
pub const RATE_LIMITED: &str = "vegdb_http_requests_rate_limited_total";

/// The route label index of a request path (after the format suffix was stripped).
pub fn route_of(path: &str) -> usize {
    const READ: &str = "/nvdb/api/v2";
    if let Some(below) = path.strip_prefix(READ) {
        let segment = below
            .strip_prefix('/')
            .map(|b| b.split('/').next().unwrap_or(""));
        let r = match segment {
            Some("vegobjekttyper") => 0,
            Some("omrader") => 1,
            Some("status") => 2,
            Some("veg") if below.starts_with("/veg/batch") => 4,
            Some("veg") => 3,
            Some("posisjon") => 5,
            Some("vegnett") => 6,
            Some("vegobjekter") => 7,
            Some("vegobjekt") => 8,
            Some("openapi.json") => 9,
            _ => 10,
        };
        return r;
    }
    if path.starts_with("/nvdb/apiskriv/") || path.starts_with("/registry/apiskriv/") {
        return 11;
    }
    if path.starts_with("/openam/") {
        return 12;
    }
    if path == "/metrics" {
        return 13;
    }
    ROUTES.len() - 1
}

fn status_index(status: u16) -> usize {
    STATUSES
        .iter()
        .position(|&s| s == status)
        .unwrap_or(STATUSES.len())
}

/// The handles of one (route, status) cell.
struct Cell {
    requests: Counter,
    latency: Histogram,
}

/// What the registry reads at scrape time.
#[derive(Clone, Default)]
pub struct Sources {
    pub store: Option<Arc<GenerationStore>>,
    pub writer: Option<Arc<Writer>>,
}

pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    /// `ROUTES.len() × (STATUSES.len() + 1)` cells, made on first use.
    cells: Box<[OnceLock<Cell>]>,
    shed: Counter,
    rate_limited: Counter,
    in_flight: Gauge,
    sources: Sources,
}

fn metadata() -> Metadata<'static> {
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()))
}

/// The buckets every histogram of the registry gets (by name).
fn builder() -> PrometheusBuilder {
    let b = PrometheusBuilder::new();
    let b = match b.set_buckets_for_metric(
        metrics_exporter_prometheus::Matcher::Full(LATENCY.to_string()),
        LATENCY_BUCKETS,
    ) {
        Ok(b) => b,
        Err(_) => PrometheusBuilder::new(),
    };
    match b.set_buckets_for_metric(
        metrics_exporter_prometheus::Matcher::Full("vegdb_publish_duration_seconds".to_string()),
        PUBLISH_BUCKETS,
    ) {
        Ok(b) => b,
        Err(_) => PrometheusBuilder::new(),
    }
}

impl Metrics {
    pub fn new(sources: Sources) -> Metrics {
        let recorder = builder().build_recorder();
        let handle = recorder.handle();
        let describe =
            |name: &'static str, unit: Option<Unit>, help: &'static str| (name, unit, help);
        let counters = [
            describe(
                REQUESTS,
                None,
                "HTTP requests answered, by route and status.",
            ),
            describe(
                SHED,
                None,
                "Requests refused with 503 because --max-in-flight requests were in flight.",
            ),
            describe(
                RATE_LIMITED,
                None,
                "Requests refused with 429 by the per-client rate limit.",
            ),
            describe(
                "vegdb_handoffs_published_total",
                None,
                "Generations handed over by generate/import/refresh and published by this server.",
            ),
        ];
        for (name, unit, help) in counters {
            recorder.describe_counter(name.into(), unit, help.into());
        }
        let gauges = [
            describe(IN_FLIGHT, None, "Requests being answered now."),
            describe("vegdb_generation_id", None, "Id of the generation served."),
            describe(
                "vegdb_generation_age_seconds",
                Some(Unit::Seconds),
                "Seconds since the generation served was created.",
            ),
            describe(
                "vegdb_generation_load_seconds",
                Some(Unit::Seconds),
                "Seconds the last complete load of a generation from disk took.",
            ),
            describe(
                "vegdb_generation_objects",
                None,
                "Road objects in the generation served.",
            ),
            describe(
                "vegdb_generation_links",
                None,
                "Road network link rows in the generation served.",
            ),
            describe(
                "vegdb_writer_queue_length",
                None,
                "Started changesets waiting for the writer thread to take them.",
            ),
            describe(
                "vegdb_journal_files",
                None,
                "Files in the changeset journal (loose records awaiting compaction and segments).",
            ),
            describe(
                "vegdb_changesets",
                None,
                "Changesets in the journal by state (fremdrift).",
            ),
            describe(
                "vegdb_handoff_in_progress",
                None,
                "1 while a handed-over generation (generate/import/refresh) is being built or loaded.",
            ),
        ];
        for (name, unit, help) in gauges {
            recorder.describe_gauge(name.into(), unit, help.into());
        }
        recorder.describe_histogram(
            LATENCY.into(),
            Some(Unit::Seconds),
            "Time from a request's arrival to its response head, by route and status.".into(),
        );
        recorder.describe_histogram(
            "vegdb_publish_duration_seconds".into(),
            Some(Unit::Seconds),
            "Time the writer took to write, publish and index a generation.".into(),
        );
        let m = metadata();
        let shed = recorder.register_counter(&Key::from_static_name(SHED), &m);
        let rate_limited = recorder.register_counter(&Key::from_static_name(RATE_LIMITED), &m);
        let in_flight = recorder.register_gauge(&Key::from_static_name(IN_FLIGHT), &m);
        // present from the start, so that a scrape shows them at 0
        shed.increment(0);
        rate_limited.increment(0);
        let cells = (0..ROUTES.len() * (STATUSES.len() + 1))
            .map(|_| OnceLock::new())
            .collect();
        Metrics {
            recorder,
            handle,
            cells,
            shed,
            rate_limited,
            in_flight,
            sources,
        }
    }

    fn cell(&self, route: usize, status: u16) -> &Cell {
        let s = status_index(status);
        let route = route.min(ROUTES.len() - 1);
        let index = route * (STATUSES.len() + 1) + s;
        self.cells[index].get_or_init(|| {
            let status_label = match STATUSES.get(s) {
                Some(code) => code.to_string(),
                None => "other".to_string(),
            };
            let labels = vec![
                Label::new("route", ROUTES[route]),
                Label::new("status", status_label),
            ];
            let m = metadata();
            Cell {
                requests: self
                    .recorder
                    .register_counter(&Key::from_parts(REQUESTS, labels.clone()), &m),
                latency: self
                    .recorder
                    .register_histogram(&Key::from_parts(LATENCY, labels), &m),
            }
        })
    }

    /// One answered request.
    pub fn request(&self, route: usize, status: u16, latency: Duration) {
        let cell = self.cell(route, status);
        cell.requests.increment(1);
        cell.latency.record(latency.as_secs_f64());
    }

    /// One request refused because too many were in flight.
    pub fn shed(&self) {
        self.shed.increment(1);
    }

    /// One request refused by the rate limit.
    pub fn rate_limited(&self) {
        self.rate_limited.increment(1);
    }

    /// Fold the histogram samples recorded so far into their buckets (bounds the memory the
    /// samples take between scrapes).
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }

    fn gauge(&self, name: &'static str, labels: Vec<Label>) -> Gauge {
        self.recorder
            .register_gauge(&Key::from_parts(name, labels), &metadata())
    }

    /// The exposition text, with every state gauge read now. `in_flight`: requests being
    /// answered (the stack counts them).
    pub fn render(&self, in_flight: usize) -> String {
        self.in_flight.set(in_flight as f64);
        if let Some(store) = &self.sources.store {
            let g = store.current();
            self.gauge("vegdb_generation_id", vec![]).set(g.id as f64);
            let age = chrono::DateTime::parse_from_rfc3339(&g.manifest.created)
                .map(|created| {
                    (chrono::Utc::now().timestamp_millis() - created.timestamp_millis()) as f64
                        / 1000.0
                })
                .unwrap_or(0.0);
            self.gauge("vegdb_generation_age_seconds", vec![])
                .set(age.max(0.0));
            let objects: usize = g.objects.values().map(|t| t.table.len()).sum();
            self.gauge("vegdb_generation_objects", vec![])
                .set(objects as f64);
            self.gauge("vegdb_generation_links", vec![])
                .set(g.network.link_id.len() as f64);
        }
        let load_ms = crate::generation::LAST_LOAD_MS.load(Ordering::Relaxed);
        self.gauge("vegdb_generation_load_seconds", vec![])
            .set(load_ms as f64 / 1000.0);
        if let Some(w) = &self.sources.writer {
            self.gauge("vegdb_writer_queue_length", vec![])
                .set(w.stats.queue_len() as f64);
            self.gauge("vegdb_journal_files", vec![])
                .set(w.journal.file_count() as f64);
            for (state, n) in w.journal.count_by_progress() {
                self.gauge(
                    "vegdb_changesets",
                    vec![Label::new("state", state.api_name())],
                )
                .set(n as f64);
            }
            let publish = self.recorder.register_histogram(
                &Key::from_static_name("vegdb_publish_duration_seconds"),
                &metadata(),
            );
            publish.record_many_each(w.stats.take_publish_seconds());
        }
        let (published, waiting) = crate::changeset::adopt::handoff_progress();
        let handoffs = self.recorder.register_counter(
            &Key::from_static_name("vegdb_handoffs_published_total"),
            &metadata(),
        );
        handoffs.absolute(published);
        self.gauge("vegdb_handoff_in_progress", vec![])
            .set(if waiting { 1.0 } else { 0.0 });
        self.handle.run_upkeep();
        self.handle.render()
    }
}

/// `Histogram::record` for each of `values`.
trait RecordEach {
    fn record_many_each(&self, values: Vec<f64>);
}

impl RecordEach for Histogram {
    fn record_many_each(&self, values: Vec<f64>) {
        for v in values {
            self.record(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_the_fixed_labels() {
        let cases = [
            ("/nvdb/api/v2/posisjon", "/nvdb/api/v2/posisjon"),
            ("/nvdb/api/v2/veg", "/nvdb/api/v2/veg"),
            ("/nvdb/api/v2/veg/batch", "/nvdb/api/v2/veg/batch"),
            ("/nvdb/api/v2/vegobjekter/105/", "/nvdb/api/v2/vegobjekter*"),
            ("/nvdb/api/v2/vegobjekt", "/nvdb/api/v2/vegobjekt"),
            (
                "/nvdb/api/v2/vegobjekttyper/105",
                "/nvdb/api/v2/vegobjekttyper*",
            ),
            ("/nvdb/api/v2/nothing/here", "/nvdb/api/v2/*"),
            ("/nvdb/api/v2", "/nvdb/api/v2/*"),
            ("/nvdb/apiskriv/rest/v2/endringssett", "/nvdb/apiskriv/*"),
            ("/openam/json/authenticate", "/openam/*"),
            ("/metrics", "/metrics"),
            ("/x/y/z", "other"),
        ];
        for (path, label) in cases {
            assert_eq!(ROUTES[route_of(path)], label, "{path}");
        }
    }

    #[test]
    fn unknown_statuses_share_one_label() {
        assert_eq!(status_index(200), 0);
        assert_eq!(status_index(418), STATUSES.len());
        assert_eq!(status_index(599), STATUSES.len());
    }
}
