//! THE metrics registry of a server: every Prometheus metric vegdb exposes, rendered
//! at `GET /metrics` (text exposition format 0.0.4) by `api::stack`.
//!
//! The registry is a `metrics-exporter-prometheus` recorder owned by one [`Metrics`] (one per
//! served application, not the process-global recorder, so that two servers in one process —
//! the tests — count apart). Two kinds of figures:
//! - per request (`vegdb_http_requests_total` and the latency histogram): counted on the hot
//!   path in vegdb's own table of (route, status) cells, one copy per thread
//!   ([`crate::util::striped`]): a request adds one to its latency bucket and its latency to the
//!   cell's sum, two atomic adds on lines its thread already holds, with no lookup by name and
//!   no allocation. A scrape sums the copies and writes these two families itself, in the same
//!   exposition format; the request count is the histogram's count, so the two always agree.
//!   Through the recorder's handles a request cost two shared counters and a shared sample
//!   queue, cache lines both worker threads wrote. `route` is one of the fixed
//!   [`RouteLabel`]s (never the raw path); `status` is the code for the codes in [`STATUSES`], else
//!   `other`.
//! - state of the rest of the server (generation, writer, journal, hand-offs): read from the
//!   plain getters and counters those parts keep (`GenerationStore::current` and the served
//!   generation's `last_load_ms`, `Writer::stats`, `Journal::count_by_progress`,
//!   `Writer::handoffs`) when `/metrics` is scraped, and set into gauges then.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

use crate::changeset::writer::Writer;
use crate::generation::GenerationStore;
use crate::util::striped::Striped;

/// Route labels: the first path segment of the read API under `/nvdb/api/v2` (templates with
/// `*` for what follows), the write API, the login, `/metrics`, and `other`. A request's label
/// is decided with the rest of its class from its path (`api::route::classify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteLabel {
    ObjectTypes,
    Areas,
    Status,
    Road,
    RoadBatch,
    Position,
    Network,
    Objects,
    Object,
    OpenApi,
    ReadOther,
    Write,
    Login,
    Metrics,
    Other,
}

impl RouteLabel {
    /// Every label, in the order of their cells in the request table (`ALL[l as usize] == l`).
    pub const ALL: [RouteLabel; 15] = [
        RouteLabel::ObjectTypes,
        RouteLabel::Areas,
        RouteLabel::Status,
        RouteLabel::Road,
        RouteLabel::RoadBatch,
        RouteLabel::Position,
        RouteLabel::Network,
        RouteLabel::Objects,
        RouteLabel::Object,
        RouteLabel::OpenApi,
        RouteLabel::ReadOther,
        RouteLabel::Write,
        RouteLabel::Login,
        RouteLabel::Metrics,
        RouteLabel::Other,
    ];

    /// The `route` label's value.
    pub const fn label(self) -> &'static str {
        match self {
            RouteLabel::ObjectTypes => "/nvdb/api/v2/vegobjekttyper*",
            RouteLabel::Areas => "/nvdb/api/v2/omrader*",
            RouteLabel::Status => "/nvdb/api/v2/status",
            RouteLabel::Road => "/nvdb/api/v2/veg",
            RouteLabel::RoadBatch => "/nvdb/api/v2/veg/batch",
            RouteLabel::Position => "/nvdb/api/v2/posisjon",
            RouteLabel::Network => "/nvdb/api/v2/vegnett*",
            RouteLabel::Objects => "/nvdb/api/v2/vegobjekter*",
            RouteLabel::Object => "/nvdb/api/v2/vegobjekt",
            RouteLabel::OpenApi => "/nvdb/api/v2/openapi.json",
            RouteLabel::ReadOther => "/nvdb/api/v2/*",
            RouteLabel::Write => "/nvdb/apiskriv/*",
            RouteLabel::Login => "/openam/*",
            RouteLabel::Metrics => "/metrics",
            RouteLabel::Other => "other",
        }
    }
}

/// Number of route labels.
const LABELS: usize = RouteLabel::ALL.len();

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
const REQUESTS_HELP: &str = "HTTP requests answered, by route and status.";
const LATENCY_HELP: &str =
    "Time from a request's arrival to its response head, by route and status.";
pub const IN_FLIGHT: &str = "vegdb_http_requests_in_flight";
pub const SHED: &str = "vegdb_http_requests_shed_total";
pub const RATE_LIMITED: &str = "vegdb_http_requests_rate_limited_total";

/// The request table's cell of a (route, status).
fn cell_index(route: RouteLabel, status: u16) -> usize {
    route as usize * (STATUSES.len() + 1) + status_index(status)
}

fn status_index(status: u16) -> usize {
    STATUSES
        .iter()
        .position(|&s| s == status)
        .unwrap_or(STATUSES.len())
}

/// Slots of a (route, status) cell in the request table: the requests in each latency bucket
/// (one per bound of [`LATENCY_BUCKETS`], then one past the last), then the latency sum in
/// nanoseconds.
const SLOTS: usize = LATENCY_BUCKETS.len() + 2;
/// Cells of the request table: `LABELS × (STATUSES.len() + 1)`.
const CELLS: usize = LABELS * (STATUSES.len() + 1);

/// One thread's copy of the request table: `CELLS × SLOTS` counters.
type RequestTable = Box<[AtomicU64]>;

fn request_table() -> RequestTable {
    (0..CELLS * SLOTS).map(|_| AtomicU64::new(0)).collect()
}

/// The bounds of [`LATENCY_BUCKETS`] in nanoseconds (a latency is whole nanoseconds, so
/// `latency <= bound` is decided exactly).
fn bounds_ns() -> [u64; LATENCY_BUCKETS.len()] {
    std::array::from_fn(|i| (LATENCY_BUCKETS[i] * 1e9).round() as u64)
}

/// The slot of a latency's bucket: the first bound at or above it (Prometheus's `le`), or the
/// one past the last.
fn bucket_of(bounds: &[u64], ns: u64) -> usize {
    bounds.partition_point(|&b| b < ns)
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
    /// The per-request figures, one copy per thread.
    requests: Striped<RequestTable>,
    bounds_ns: [u64; LATENCY_BUCKETS.len()],
    shed: Counter,
    rate_limited: Counter,
    in_flight: Gauge,
    sources: Sources,
}

fn metadata() -> Metadata<'static> {
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()))
}

/// The buckets the recorder's histogram gets (the request latency's are vegdb's own table's).
fn builder() -> PrometheusBuilder {
    let b = PrometheusBuilder::new();
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
        Metrics {
            recorder,
            handle,
            requests: Striped::default(),
            bounds_ns: bounds_ns(),
            shed,
            rate_limited,
            in_flight,
            sources,
        }
    }

    /// One answered request.
    pub fn request(&self, route: RouteLabel, status: u16, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        let base = cell_index(route, status) * SLOTS;
        let table = self.requests.mine(request_table);
        table[base + bucket_of(&self.bounds_ns, ns)].fetch_add(1, Ordering::Relaxed);
        table[base + SLOTS - 1].fetch_add(ns, Ordering::Relaxed);
    }

    /// The request table summed over the threads' copies: per cell, its slots.
    fn request_totals(&self) -> Vec<[u64; SLOTS]> {
        let mut totals = vec![[0u64; SLOTS]; CELLS];
        for table in self.requests.each() {
            for (cell, total) in table.chunks_exact(SLOTS).zip(&mut totals) {
                for (slot, t) in cell.iter().zip(total.iter_mut()) {
                    *t = t.wrapping_add(slot.load(Ordering::Relaxed));
                }
            }
        }
        totals
    }

    /// The request counter and latency histogram in the text exposition format: the cells that
    /// counted a request, with their `HELP` and `TYPE` lines (nothing before the first request).
    fn render_requests(&self, out: &mut String) {
        use std::fmt::Write;
        let totals = self.request_totals();
        let counted: Vec<(usize, &[u64; SLOTS], u64)> = totals
            .iter()
            .enumerate()
            .map(|(i, t)| (i, t, t[..SLOTS - 1].iter().sum::<u64>()))
            .filter(|&(_, _, n)| n > 0)
            .collect();
        if counted.is_empty() {
            return;
        }
        let labels = |cell: usize| {
            let (route, status) = (cell / (STATUSES.len() + 1), cell % (STATUSES.len() + 1));
            let status = STATUSES
                .get(status)
                .map_or("other".to_string(), |c| c.to_string());
            format!(
                "route=\"{}\",status=\"{status}\"",
                RouteLabel::ALL[route].label()
            )
        };
        let _ = writeln!(out, "# HELP {REQUESTS} {REQUESTS_HELP}");
        let _ = writeln!(out, "# TYPE {REQUESTS} counter");
        for &(cell, _, n) in &counted {
            let _ = writeln!(out, "{REQUESTS}{{{}}} {n}", labels(cell));
        }
        out.push('\n');
        let _ = writeln!(out, "# HELP {LATENCY} {LATENCY_HELP}");
        let _ = writeln!(out, "# TYPE {LATENCY} histogram");
        for &(cell, slots, n) in &counted {
            let labels = labels(cell);
            let mut below = 0;
            for (bound, count) in LATENCY_BUCKETS.iter().zip(slots) {
                below += count;
                let _ = writeln!(out, "{LATENCY}_bucket{{{labels},le=\"{bound}\"}} {below}");
            }
            let _ = writeln!(out, "{LATENCY}_bucket{{{labels},le=\"+Inf\"}} {n}");
            let sum = slots[SLOTS - 1] as f64 / 1e9;
            let _ = writeln!(out, "{LATENCY}_sum{{{labels}}} {sum}");
            let _ = writeln!(out, "{LATENCY}_count{{{labels}}} {n}");
        }
        out.push('\n');
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
        let load_ms = self
            .sources
            .store
            .as_ref()
            .map_or(0, |store| store.current().last_load_ms);
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
        let (published, waiting) = self
            .sources
            .writer
            .as_ref()
            .map_or((0, false), |w| w.handoffs.progress());
        let handoffs = self.recorder.register_counter(
            &Key::from_static_name("vegdb_handoffs_published_total"),
            &metadata(),
        );
        handoffs.absolute(published);
        self.gauge("vegdb_handoff_in_progress", vec![])
            .set(if waiting { 1.0 } else { 0.0 });
        self.handle.run_upkeep();
        let mut out = String::new();
        self.render_requests(&mut out);
        out.push_str(&self.handle.render());
        out
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
    fn every_label_has_its_own_cell_in_order() {
        for (i, l) in RouteLabel::ALL.iter().enumerate() {
            assert_eq!(*l as usize, i, "{l:?}");
        }
        let labels: std::collections::BTreeSet<_> =
            RouteLabel::ALL.iter().map(|l| l.label()).collect();
        assert_eq!(labels.len(), LABELS);
    }

    #[test]
    fn unknown_statuses_share_one_label() {
        assert_eq!(status_index(200), 0);
        assert_eq!(status_index(418), STATUSES.len());
        assert_eq!(status_index(599), STATUSES.len());
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// A latency's bucket is the first bound it does not exceed, compared in seconds as
        /// the recorder's histogram compared them (`latency.as_secs_f64() <= bound`).
        #[test]
        fn a_latency_falls_in_the_first_bucket_it_does_not_exceed(
            ns in proptest::prop_oneof![
                0u64..40_000_000_000,
                proptest::sample::select(LATENCY_BUCKETS.to_vec())
                    .prop_flat_map(|b| {
                        let ns = (b * 1e9).round() as u64;
                        (ns - 1)..=(ns + 1)
                    }),
            ]
        ) {
            let secs = Duration::from_nanos(ns).as_secs_f64();
            let expected = LATENCY_BUCKETS
                .iter()
                .position(|&b| secs <= b)
                .unwrap_or(LATENCY_BUCKETS.len());
            proptest::prop_assert_eq!(bucket_of(&bounds_ns(), ns), expected);
        }
    }

    /// Requests counted on many threads (more than the stripes) come out of the exposition
    /// text, as the independent `prometheus-parse` reads it, with the counts, cumulative
    /// buckets and sums of a plain tally of the same requests.
    #[test]
    fn the_exposition_is_the_tally_of_the_requests_counted_on_every_thread() {
        let m = Metrics::new(Sources::default());
        assert!(!m.render(0).contains(REQUESTS), "no requests, no family");
        let threads = crate::util::striped::STRIPES + 3;
        // (route, status, latency) of thread t's i-th request
        let request = |t: usize, i: usize| {
            let route = [5, 3, 7, 14][(t + i) % 4];
            let route = RouteLabel::ALL[route];
            let status = [200, 404, 418][i % 3];
            let ns = ((t * 7919 + i * 104_729) % 60_000) as u64 * 1_000_000 / 1_000 + i as u64;
            (route, status, Duration::from_nanos(ns))
        };
        std::thread::scope(|scope| {
            for t in 0..threads {
                let m = &m;
                scope.spawn(move || {
                    for i in 0..500 {
                        let (route, status, latency) = request(t, i);
                        m.request(route, status, latency);
                    }
                });
            }
        });
        // the tally: per (route label, status label), the latencies
        let mut tally: std::collections::BTreeMap<(String, String), Vec<Duration>> =
            Default::default();
        for t in 0..threads {
            for i in 0..500 {
                let (route, status, latency) = request(t, i);
                let status = if STATUSES.contains(&status) {
                    status.to_string()
                } else {
                    "other".to_string()
                };
                tally
                    .entry((route.label().to_string(), status))
                    .or_default()
                    .push(latency);
            }
        }
        let text = m.render(0);
        let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
            .expect("parses");
        let labels_of = |s: &prometheus_parse::Sample| {
            (
                s.labels.get("route").unwrap().to_string(),
                s.labels.get("status").unwrap().to_string(),
            )
        };
        let mut seen = 0;
        for s in &parsed.samples {
            let want = || &tally[&labels_of(s)];
            match (s.metric.as_str(), &s.value) {
                (REQUESTS, prometheus_parse::Value::Counter(v)) => {
                    assert_eq!(*v, want().len() as f64, "{:?}", labels_of(s));
                    seen += 1;
                }
                (LATENCY, prometheus_parse::Value::Histogram(buckets)) => {
                    for b in buckets {
                        let below = want()
                            .iter()
                            .filter(|l| l.as_secs_f64() <= b.less_than)
                            .count();
                        assert_eq!(b.count, below as f64, "le {}", b.less_than);
                    }
                    assert!(buckets.last().unwrap().less_than.is_infinite());
                }
                (n, _) if n == format!("{LATENCY}_count") => {
                    assert_eq!(
                        s.value,
                        prometheus_parse::Value::Untyped(want().len() as f64)
                    )
                }
                (n, prometheus_parse::Value::Untyped(v)) if n == format!("{LATENCY}_sum") => {
                    let sum: f64 = want().iter().map(Duration::as_secs_f64).sum();
                    assert!((v - sum).abs() < 1e-9 * sum.max(1.0), "{v} {sum}");
                }
                _ => {}
            }
        }
        assert_eq!(seen, tally.len(), "a counter per cell that counted");
        assert!(parsed.docs.contains_key(REQUESTS) && parsed.docs.contains_key(LATENCY));
    }
}
