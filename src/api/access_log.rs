//! The access log: one line per request with method, path, status, bytes, latency
//! and request id, in the process's log format (text or `--log-json`) under the target
//! `vegdb::access`.
//!
//! The lines do not go through `tracing`'s event machinery: a `tracing::info!` with seven
//! fields cost about 19,000 instructions per request (field visitors, `fmt::Write` through
//! `core::fmt`, a timestamp formatted each time, a lock and a `write` system call to stderr per
//! line), more than the whole `/posisjon` handler. Here a line is formatted by hand straight into
//! a buffer (numbers with `itoa`, the timestamp's date and time part formatted once per second
//! per thread), and the buffer goes to its output in batches: when it holds [`FLUSH_BYTES`],
//! every [`FLUSH_EVERY`] from a background thread, and when the server stops. A process killed
//! outright loses at most the last [`FLUSH_EVERY`] of lines.
//!
//! Each thread has a buffer of its own ([`crate::util::striped`]): one buffer that both worker
//! threads appended to was a lock and a run of cache lines taken from the other core on every
//! request. So lines are in order within a thread's batch, and batches of different
//! threads follow each other: two lines of different threads may be out of order by up to
//! [`FLUSH_EVERY`] (their timestamps say when each was answered).
//!
//! The log filter (`--log`) still decides: the stack asks once at start-up whether
//! `vegdb::access` is enabled at info level, so `--log warn` or `--log info,vegdb::access=off`
//! switch the lines off as they did when they were `tracing` events.
//!
//! The server makes one log on standard error in its log format (`--log-json`) and gives it to
//! its applications (`OpsOptions::access_log_to`); a stack given none makes its own, as text.

use std::cell::RefCell;
use std::io::Write;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;

use crate::util::striped::Striped;

/// Target of the access-log lines (what `--log` filters on).
pub const TARGET: &str = "vegdb::access";
/// A buffer this full is written out by the request that filled it.
pub const FLUSH_BYTES: usize = 16 * 1024;
/// The background thread writes the buffer out this often.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// How a line is written: as `tracing_subscriber`'s text or JSON formatter writes an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineFormat {
    /// `2026-11-24T04:09:02.123456Z  INFO vegdb::access: request method=GET path=/x status=200 ...`
    Text,
    /// `{"timestamp":"...","level":"INFO","fields":{"message":"request",...},"target":"vegdb::access"}`
    Json,
}

/// Where the lines of one server go, with the buffer they wait in.
pub struct AccessLog {
    format: LineFormat,
    /// Lines waiting to be written, one buffer per thread.
    pending: Striped<Mutex<Vec<u8>>>,
    out: Mutex<Box<dyn Write + Send>>,
}

/// The fields of one line.
pub struct AccessLine {
    pub method: Method,
    pub uri: Uri,
    pub status: StatusCode,
    pub latency: Duration,
    pub id: HeaderValue,
}

impl AccessLog {
    /// A log writing to `out` (flushed in the background while the log lives).
    pub fn new(format: LineFormat, out: Box<dyn Write + Send>) -> Arc<AccessLog> {
        let log = Arc::new(AccessLog {
            format,
            pending: Striped::default(),
            out: Mutex::new(out),
        });
        flusher(Arc::downgrade(&log));
        log
    }

    /// A log on standard error.
    pub fn stderr(format: LineFormat) -> Arc<AccessLog> {
        AccessLog::new(format, Box::new(std::io::stderr()))
    }

    /// Write out what the buffers hold.
    pub fn flush(&self) {
        for pending in self.pending.each() {
            self.write_out(pending);
        }
    }

    /// Write out what one buffer holds. The batch is taken while the output is held, so two
    /// batches of one buffer (a writer's and the flusher's) reach it in the order they were
    /// taken.
    fn write_out(&self, pending: &Mutex<Vec<u8>>) {
        if lock(pending).is_empty() {
            return;
        }
        let mut out = lock(&self.out);
        let batch = std::mem::replace(&mut *lock(pending), new_buffer());
        if batch.is_empty() {
            return;
        }
        // a log that cannot be written (a closed stderr) must not stop the server
        let _ = out.write_all(&batch);
        let _ = out.flush();
    }

    /// Add one line (`bytes`: the body's length as sent) to the calling thread's buffer.
    pub fn write(&self, line: &AccessLine, bytes: u64) {
        let pending = self.pending.mine(|| Mutex::new(new_buffer()));
        let full = {
            let mut pending = lock(pending);
            match self.format {
                LineFormat::Text => text_line(&mut pending, line, bytes),
                LineFormat::Json => json_line(&mut pending, line, bytes),
            }
            pending.len() >= FLUSH_BYTES
        };
        if full {
            self.write_out(pending);
        }
    }
}

fn new_buffer() -> Vec<u8> {
    Vec::with_capacity(FLUSH_BYTES + 512)
}

impl AccessLog {
    /// Log `response` with `line`: at once when its body's size is known, else (streamed or
    /// compressed) when the body ends, its bytes counted as they go.
    pub fn log_response(self: &Arc<Self>, line: AccessLine, response: Response) -> Response {
        match response.body().size_hint().exact() {
            Some(bytes) => {
                self.write(&line, bytes);
                response
            }
            None => {
                let log = self.clone();
                response.map(|b| {
                    Body::new(Logged {
                        inner: b,
                        bytes: 0,
                        line: Some((log, line)),
                    })
                })
            }
        }
    }
}

/// A response body that counts its bytes and writes the access-log line when it ends (or is
/// dropped: the client went away).
struct Logged {
    inner: Body,
    bytes: u64,
    line: Option<(Arc<AccessLog>, AccessLine)>,
}

impl Drop for Logged {
    fn drop(&mut self) {
        if let Some((log, line)) = self.line.take() {
            log.write(&line, self.bytes);
        }
    }
}

impl HttpBody for Logged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.bytes += d.len() as u64;
                }
            }
            Poll::Ready(None) => {
                if let Some((log, line)) = this.line.take() {
                    log.write(&line, this.bytes);
                }
            }
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessLog")
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Flush `log` every [`FLUSH_EVERY`] until it is dropped.
fn flusher(log: Weak<AccessLog>) {
    let spawned = std::thread::Builder::new()
        .name("vegdb-access-log".into())
        .spawn(move || loop {
            std::thread::sleep(FLUSH_EVERY);
            match log.upgrade() {
                Some(log) => log.flush(),
                None => return,
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no access-log flusher thread: lines are written when the buffer fills");
    }
}

fn text_line(out: &mut Vec<u8>, line: &AccessLine, bytes: u64) {
    push_timestamp(out);
    out.extend_from_slice(b"  INFO ");
    out.extend_from_slice(TARGET.as_bytes());
    out.extend_from_slice(b": request method=");
    out.extend_from_slice(line.method.as_str().as_bytes());
    out.extend_from_slice(b" path=");
    out.extend_from_slice(target_of(&line.uri).as_bytes());
    out.extend_from_slice(b" status=");
    push_int(out, line.status.as_u16());
    out.extend_from_slice(b" bytes=");
    push_int(out, bytes);
    out.extend_from_slice(b" latency_us=");
    push_int(out, micros(line.latency));
    out.extend_from_slice(b" request_id=");
    out.extend_from_slice(id_of(&line.id));
    out.push(b'\n');
}

fn json_line(out: &mut Vec<u8>, line: &AccessLine, bytes: u64) {
    out.extend_from_slice(b"{\"timestamp\":\"");
    push_timestamp(out);
    out.extend_from_slice(b"\",\"level\":\"INFO\",\"fields\":{\"message\":\"request\",\"method\":");
    push_json_str(out, line.method.as_str().as_bytes());
    out.extend_from_slice(b",\"path\":");
    push_json_str(out, target_of(&line.uri).as_bytes());
    out.extend_from_slice(b",\"status\":");
    push_int(out, line.status.as_u16());
    out.extend_from_slice(b",\"bytes\":");
    push_int(out, bytes);
    out.extend_from_slice(b",\"latency_us\":");
    push_int(out, micros(line.latency));
    out.extend_from_slice(b",\"request_id\":");
    push_json_str(out, id_of(&line.id));
    out.extend_from_slice(b"},\"target\":\"");
    out.extend_from_slice(TARGET.as_bytes());
    out.extend_from_slice(b"\"}\n");
}

/// The path and query as the client sent them (absolute-form requests: with scheme and host,
/// as `Uri`'s `Display` writes them).
fn target_of(uri: &Uri) -> std::borrow::Cow<'_, str> {
    match (uri.scheme(), uri.path_and_query()) {
        (None, Some(pq)) => std::borrow::Cow::Borrowed(pq.as_str()),
        (None, None) => std::borrow::Cow::Borrowed("/"),
        _ => std::borrow::Cow::Owned(uri.to_string()),
    }
}

fn id_of(id: &HeaderValue) -> &[u8] {
    // a header value may hold bytes that are not text; the line stays one line of text
    if id.as_bytes().iter().all(|b| (0x21..0x7f).contains(b)) {
        id.as_bytes()
    } else {
        b"-"
    }
}

fn push_int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A JSON string of `s` (ASCII printable in practice: URIs and request ids; anything else is
/// escaped or, for bytes that are not UTF-8, replaced).
fn push_json_str(out: &mut Vec<u8>, s: &[u8]) {
    if s.iter()
        .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(s);
        out.push(b'"');
    } else {
        let quoted = serde_json::to_string(&String::from_utf8_lossy(s)).unwrap_or_default();
        out.extend_from_slice(quoted.as_bytes());
    }
}

// Per-thread scratch: the date-and-time text of the current second, the same for any server.
thread_local! {
    /// The second last formatted on this thread and its `YYYY-MM-DDTHH:MM:SS.` text.
    static SECOND: RefCell<(u64, [u8; 20])> = const { RefCell::new((u64::MAX, [0; 20])) };
}

/// RFC 3339 UTC with microseconds, as `tracing_subscriber`'s default timer writes it.
fn push_timestamp(out: &mut Vec<u8>) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    SECOND.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.0 != secs {
            let text = chrono::DateTime::from_timestamp(secs as i64, 0)
                .unwrap_or_default()
                .format("%Y-%m-%dT%H:%M:%S.")
                .to_string();
            let mut prefix = [b'0'; 20];
            let n = text.len().min(20);
            prefix[..n].copy_from_slice(&text.as_bytes()[..n]);
            *cell = (secs, prefix);
        }
        out.extend_from_slice(&cell.1);
    });
    let us = now.subsec_micros();
    let start = out.len();
    push_int(out, us + 1_000_000);
    // "1xxxxxx": the leading 1 keeps the zeros; drop it
    out.remove(start);
    out.push(b'Z');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(uri: &str) -> AccessLine {
        AccessLine {
            method: Method::GET,
            uri: uri.parse().unwrap(),
            status: StatusCode::NOT_FOUND,
            latency: Duration::from_micros(1234),
            id: HeaderValue::from_static("abc-1"),
        }
    }

    /// An output the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Lines written by many threads at once (more threads than stripes, so some share a
    /// buffer; more bytes than a buffer holds, so buffers are written out by the writers as
    /// well as by the flusher and the drop): every line arrives once and whole, and each
    /// thread's lines arrive in the order it wrote them.
    #[test]
    fn lines_of_many_threads_arrive_whole_once_and_in_each_threads_order() {
        use crate::util::striped::STRIPES;
        let out = Captured::default();
        let log = AccessLog::new(LineFormat::Text, Box::new(out.clone()));
        let (threads, per_thread) = (STRIPES + 3, 400);
        std::thread::scope(|scope| {
            for t in 0..threads {
                let log = &log;
                scope.spawn(move || {
                    for i in 0..per_thread {
                        let mut l = line(&format!("/t{t}?i={i}"));
                        l.id = HeaderValue::from_str(&format!("t{t}-{i}")).unwrap();
                        log.write(&l, i as u64);
                    }
                });
            }
        });
        drop(log);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut next = vec![0usize; threads];
        for l in text.lines() {
            let id = l.rsplit_once(" request_id=t").expect(l).1;
            let (t, i) = id.split_once('-').expect(l);
            let (t, i): (usize, usize) = (t.parse().unwrap(), i.parse().unwrap());
            assert!(
                l.contains(&format!(" path=/t{t}?i={i} status=404 bytes={i} ")),
                "{l}"
            );
            assert_eq!(i, next[t], "thread {t}'s lines out of order");
            next[t] += 1;
        }
        assert_eq!(next, vec![per_thread; threads]);
        assert!(text.len() > 4 * FLUSH_BYTES, "the buffers filled");
    }

    /// The JSON line is what serde_json reads back, with the fields as given.
    #[test]
    fn json_lines_parse_to_their_fields() {
        for uri in [
            "/a?b=c&d=%22e%22",
            "/\u{e6}".replace('\u{e6}', "%C3%A6").as_str(),
        ] {
            let mut out = Vec::new();
            json_line(&mut out, &line(uri), 77);
            assert_eq!(out.last(), Some(&b'\n'));
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["target"], TARGET);
            assert_eq!(v["level"], "INFO");
            let f = &v["fields"];
            assert_eq!(f["message"], "request");
            assert_eq!(f["method"], "GET");
            assert_eq!(f["path"], uri);
            assert_eq!(f["status"], 404);
            assert_eq!(f["bytes"], 77);
            assert_eq!(f["latency_us"], 1234);
            assert_eq!(f["request_id"], "abc-1");
            let ts = v["timestamp"].as_str().unwrap();
            let parsed = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
            let age = chrono::Utc::now().signed_duration_since(parsed);
            assert!(age.num_seconds().abs() < 5, "{ts}");
            assert_eq!(ts.len(), "2026-11-24T04:09:02.123456Z".len(), "{ts}");
        }
    }

    /// Strings that need escaping come out as serde_json escapes them.
    #[test]
    fn json_strings_escape_as_serde_json_does() {
        for s in [
            "plain",
            "a\"b",
            "ends in a quote\"",
            "back\\slash",
            "tab\there",
            "æøå",
        ] {
            let mut out = Vec::new();
            push_json_str(&mut out, s.as_bytes());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }

    /// Microseconds keep their leading zeros, as the default `tracing_subscriber` timer writes.
    #[test]
    fn timestamps_are_rfc3339_with_six_digits() {
        for _ in 0..1000 {
            let mut out = Vec::new();
            push_timestamp(&mut out);
            let ts = String::from_utf8(out).unwrap();
            let frac = &ts[ts.find('.').unwrap() + 1..ts.len() - 1];
            assert_eq!(frac.len(), 6, "{ts}");
            assert!(chrono::DateTime::parse_from_rfc3339(&ts).is_ok(), "{ts}");
        }
    }

    /// A line written to a log reaches its output by the background flush, without filling
    /// the buffer.
    #[test]
    fn lines_reach_the_output_within_the_flush_interval() {
        let out = Captured::default();
        let log = AccessLog::new(LineFormat::Text, Box::new(out.clone()));
        log.write(&line("/x?y=1"), 5);
        std::thread::sleep(FLUSH_EVERY * 3);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.ends_with(
                " INFO vegdb::access: request method=GET path=/x?y=1 status=404 bytes=5 latency_us=1234 request_id=abc-1\n"
            ),
            "{text}"
        );
    }

    /// The oracle: `tracing_subscriber`'s own text and JSON formatters, given the same fields
    /// as one `tracing` event (what the access log was before), write the same line but for
    /// the timestamp.
    #[test]
    fn lines_are_what_tracing_subscriber_writes() {
        let l = line("/nvdb/api/v2/posisjon?nord=6650000&ost=260000");
        for format in [LineFormat::Text, LineFormat::Json] {
            let captured = Captured::default();
            let w = captured.clone();
            let builder = tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(move || w.clone());
            let emit = || {
                tracing::info!(
                    target: TARGET,
                    method = %l.method,
                    path = %l.uri,
                    status = l.status.as_u16(),
                    bytes = 77u64,
                    latency_us = l.latency.as_micros() as u64,
                    request_id = %l.id.to_str().unwrap(),
                    "request"
                );
            };
            match format {
                LineFormat::Text => tracing::subscriber::with_default(builder.finish(), emit),
                LineFormat::Json => {
                    tracing::subscriber::with_default(builder.json().finish(), emit)
                }
            }
            let theirs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
            let mut ours = Vec::new();
            match format {
                LineFormat::Text => text_line(&mut ours, &l, 77),
                LineFormat::Json => json_line(&mut ours, &l, 77),
            }
            let ours = String::from_utf8(ours).unwrap();
            match format {
                LineFormat::Text => {
                    let cut = |s: &str| s[s.find('Z').unwrap()..].to_string();
                    assert_eq!(cut(&ours), cut(&theirs));
                    assert_eq!(ours.find('Z'), theirs.find('Z'), "{ours}{theirs}");
                }
                LineFormat::Json => {
                    let mut a: serde_json::Value = serde_json::from_str(&ours).unwrap();
                    let mut b: serde_json::Value = serde_json::from_str(&theirs).unwrap();
                    let (ta, tb) = (a["timestamp"].take(), b["timestamp"].take());
                    assert_eq!(a, b);
                    assert_eq!(ta.as_str().unwrap().len(), tb.as_str().unwrap().len());
                    assert!(theirs.ends_with('\n') && ours.ends_with('\n'));
                }
            }
        }
    }
}
