//! The header-read timeout of a connection, kept by a watchdog instead of a timer per request.
//!
//! hyper's own `header_read_timeout` creates a timer for every request head it waits for (an
//! allocation, and a registration and removal in the runtime's timer wheel): about a twentieth
//! of the instructions a `/posisjon` request costs (`tools/callgrind_wire.sh`). Here a
//! connection has one timer for its lifetime. It wakes every eighth of the timeout and closes
//! the connection once it has been *waiting for the client* longer than the timeout: for a
//! request head (no request in the handlers, no answer being written), or for the client to
//! read an answer it has stopped reading (the socket's send buffer full, no byte written since).
//! A client that trickles a head (slowloris), keeps a connection idle or never reads its answer
//! is dropped between one and one and a quarter timeouts after its last answer or read; a request
//! whose head is in is never cut while the server works on it: in the handlers, or producing
//! its answer's body however slowly (a heavy page under load: a body counted as done when the
//! handler returned would be cut whenever its next part took longer than the timeout to make). The request timeout and query budget bound the server's side.
//!
//! The watchdog is polled after the connection (`serve_watched`), and a wake-up that comes late
//! (the runtime was busy) does not fire: a head that arrived meanwhile is read first.
//!
//! The requests and writes read no clock: they count events, and the watchdog notes the time at
//! the wake-up that first sees the count unchanged (two clock reads less per request).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// What a connection did: shared by its I/O, its service and its watchdog.
#[derive(Debug, Default)]
pub struct Activity {
    /// Answers completed and response writes, counted (only the connection's task counts).
    events: AtomicU64,
    /// Requests in the handlers or with their answer's body being made (0 or 1 on HTTP/1.1).
    in_flight: AtomicU32,
    /// The last response write found the socket full: the client is not reading.
    blocked: AtomicBool,
    /// Requests handed to the service so far (only the connection's task counts): how the
    /// later-head check (`framing`) knows hyper has taken every head it was given.
    started: AtomicU64,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity::default())
    }

    fn touch(&self) {
        // one writer (the connection's task): a plain store, no locked read-modify-write
        let n = self.events.load(Ordering::Relaxed);
        self.events.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    /// A request head arrived and goes to the handlers.
    pub fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let n = self.started.load(Ordering::Relaxed);
        self.started.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    /// Requests handed to the service so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Whether a request is in the handlers or its answer's body is being made.
    pub fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
    }

    /// The answer is made: the handlers answered with a body in memory, or the body of a
    /// streamed answer ended ([`Answered`]).
    pub fn request_answered(&self) {
        self.touch();
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// The event count while the connection waits for the client, or None while the server
    /// works on a request (in the handlers or making its answer, and not held up by a client
    /// that does not read).
    fn waiting_since(&self) -> Option<u64> {
        if self.in_flight.load(Ordering::Relaxed) > 0 && !self.blocked.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.events.load(Ordering::Relaxed))
    }

    fn wrote(&self, r: &Poll<std::io::Result<usize>>) {
        match r {
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.touch();
                self.blocked.store(false, Ordering::Relaxed);
            }
            Poll::Pending => self.blocked.store(true, Ordering::Relaxed),
            Poll::Ready(_) => {}
        }
    }
}

/// A response body that tells the connection's [`Activity`] when it is done (ended or dropped):
/// until then the request counts as in the server's hands, not as waiting for a head.
pub struct Answered<B> {
    body: B,
    activity: Option<Arc<Activity>>,
}

impl<B> Answered<B> {
    /// A body still to be made: the request is answered when it ends.
    pub fn later(body: B, activity: Arc<Activity>) -> Answered<B> {
        Answered {
            body,
            activity: Some(activity),
        }
    }

    /// A body whose answer was already counted (in memory, written at once).
    pub fn counted(body: B) -> Answered<B> {
        Answered {
            body,
            activity: None,
        }
    }

    fn done(&mut self) {
        if let Some(a) = self.activity.take() {
            a.request_answered();
        }
    }
}

impl<B> Drop for Answered<B> {
    fn drop(&mut self) {
        self.done();
    }
}

impl<B: http_body::Body + Unpin> http_body::Body for Answered<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        let r = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(r, Poll::Ready(None | Some(Err(_)))) {
            self.done();
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Completes when the connection has waited for the client longer than `timeout` (measured
/// from the wake-up that first saw it quiet, so between one and one and a quarter timeouts).
/// A wake-up later than a period past its time (a busy runtime) never fires: the connection,
/// polled first, reads a head that came meanwhile before the next one looks.
pub async fn watchdog(activity: Arc<Activity>, timeout: Duration) {
    let period = (timeout / 8).max(Duration::from_millis(5));
    let (mut seen, mut quiet_since) = (activity.waiting_since(), Instant::now());
    let mut due = Instant::now() + period;
    loop {
        tokio::time::sleep_until(due).await;
        let woke = Instant::now();
        let late = woke.saturating_duration_since(due) > period;
        due = woke + period;
        let now = activity.waiting_since();
        if now.is_none() || now != seen {
            (seen, quiet_since) = (now, woke);
        } else if !late && quiet_since.elapsed() >= timeout {
            return;
        }
    }
}

/// Serve `conn` (hyper's connection over a [`Watched`] stream) until it ends or the
/// [`watchdog`] fires; the connection is polled first, so a head already in is read before
/// the watchdog looks. True when the watchdog closed it.
pub async fn serve_watched<C, E>(conn: C, activity: Arc<Activity>, timeout: Duration) -> bool
where
    C: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    tokio::select! {
        biased;
        r = conn => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            false
        }
        () = watchdog(activity, timeout) => {
            tracing::debug!("connection closed: waited for the client longer than the header timeout");
            true
        }
    }
}

/// A connection's stream that notes each response write in its [`Activity`].
pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
    /// Bytes read from `inner` before (the first request head, checked by `head`), given out
    /// first; then empty.
    prefix: Vec<u8>,
    taken: usize,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Watched<S> {
        Watched::with_prefix(inner, activity, Vec::new())
    }

    /// A stream whose first bytes, already read from `inner`, are `prefix`.
    pub fn with_prefix(inner: S, activity: Arc<Activity>, prefix: Vec<u8>) -> Watched<S> {
        Watched {
            inner,
            activity,
            prefix,
            taken: 0,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.taken < self.prefix.len() {
            let n = (self.prefix.len() - self.taken).min(buf.remaining());
            let from = self.taken;
            buf.put_slice(&self.prefix[from..from + n]);
            self.taken += n;
            if self.taken == self.prefix.len() {
                self.prefix = Vec::new();
                self.taken = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.activity.wrote(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.activity.wrote(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real time (tokio's paused clock needs its test-util feature): bounds are generous.
    const MS: Duration = Duration::from_millis(1);

    /// How long `watchdog` took to fire, or None when it had not after `within`.
    async fn fired_after(
        a: &Arc<Activity>,
        timeout: Duration,
        within: Duration,
    ) -> Option<Duration> {
        let started = Instant::now();
        tokio::time::timeout(within, watchdog(a.clone(), timeout))
            .await
            .ok()
            .map(|()| started.elapsed())
    }

    #[tokio::test]
    async fn the_watchdog_fires_after_the_timeout_and_not_while_a_request_runs() {
        let timeout = 200 * MS;
        let a = Activity::new();
        let after = fired_after(&a, timeout, timeout * 4).await.expect("fired");
        assert!(after >= timeout && after < timeout * 2, "{after:?}");

        let busy = Activity::new();
        busy.request_started();
        assert_eq!(
            fired_after(&busy, timeout, timeout * 3).await,
            None,
            "a connection with a request in the handlers is kept"
        );
    }

    #[tokio::test]
    async fn answers_and_writes_keep_a_connection_from_waiting() {
        let timeout = 200 * MS;
        // answers every half timeout for three timeouts, then nothing
        let a = Activity::new();
        let answering = a.clone();
        let started = Instant::now();
        tokio::spawn(async move {
            for _ in 0..6 {
                tokio::time::sleep(timeout / 2).await;
                answering.request_started();
                answering.request_answered();
            }
        });
        let after = fired_after(&a, timeout, timeout * 8).await.expect("fired");
        assert!(
            after >= timeout * 3 + timeout && after < timeout * 6,
            "fired {after:?} after the start, the last answer at {:?}",
            timeout * 3
        );
        assert!(started.elapsed() >= timeout * 4);

        // response writes count as well
        let w = Activity::new();
        let (_client, server) = tokio::io::duplex(4096);
        let mut stream = Watched::new(server, w.clone());
        let watch = tokio::spawn({
            let w = w.clone();
            async move { fired_after(&w, timeout, timeout * 3).await }
        });
        for _ in 0..5 {
            tokio::time::sleep(timeout / 2).await;
            tokio::io::AsyncWriteExt::write_all(&mut stream, b"HTTP/1.1 200 OK\r\n")
                .await
                .expect("write");
        }
        assert_eq!(watch.await.expect("watch"), None, "writes keep it open");
    }

    /// A one-connection server on `listener`: hyper over a [`Watched`] stream under
    /// [`serve_watched`], as `server::serve_on` runs each connection; `answer` makes the
    /// response for a path (the request counts as answered when its body ends, [`Answered`]).
    /// Returns whether the watchdog closed the connection.
    async fn serve_one<B>(
        listener: tokio::net::TcpListener,
        timeout: Duration,
        answer: impl Fn(&str) -> B + Send + Sync + 'static,
    ) -> bool
    where
        B: http_body::Body<Data = bytes::Bytes> + Unpin + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (stream, _) = listener.accept().await.expect("accept");
        serve_stream(stream, timeout, Arc::new(answer)).await
    }

    async fn serve_stream<B>(
        stream: tokio::net::TcpStream,
        timeout: Duration,
        answer: Arc<dyn Fn(&str) -> B + Send + Sync>,
    ) -> bool
    where
        B: http_body::Body<Data = bytes::Bytes> + Unpin + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let activity = Activity::new();
        let seen = activity.clone();
        let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            seen.request_started();
            let body = answer(req.uri().path());
            let seen = seen.clone();
            async move {
                Ok::<_, std::convert::Infallible>(hyper::Response::new(Answered::later(body, seen)))
            }
        });
        let io = hyper_util::rt::TokioIo::new(Watched::new(stream, activity.clone()));
        let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
        serve_watched(conn, activity, timeout).await
    }

    type Parts = http_body_util::StreamBody<
        Pin<
            Box<
                dyn futures_util::Stream<
                        Item = Result<http_body::Frame<bytes::Bytes>, std::convert::Infallible>,
                    > + Send,
            >,
        >,
    >;

    /// A body of `n` parts of `size` bytes, each made after `gap`.
    fn parts(n: usize, size: usize, gap: Duration) -> Parts {
        let parts = futures_util::stream::unfold(0, move |i| async move {
            if i == n {
                return None;
            }
            if !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            let part = bytes::Bytes::from(vec![b'a' + (i % 26) as u8; size]);
            Some((
                Ok::<_, std::convert::Infallible>(http_body::Frame::data(part)),
                i + 1,
            ))
        });
        http_body_util::StreamBody::new(Box::pin(parts))
    }

    /// An answer whose parts take longer than the header timeout to make
    /// (a heavy page under load) is written whole; the timer starts when it is done.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slowly_made_answer_is_not_cut_by_the_header_timer() {
        let timeout = 300 * MS;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(serve_one(listener, timeout, move |_| {
            parts(3, 10, timeout * 3)
        }));
        let client = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("write");
            s.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            let mut text = Vec::new();
            let mut buf = [0u8; 4096];
            while !text.ends_with(b"0\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => text.extend_from_slice(&buf[..n]),
                }
            }
            (String::from_utf8_lossy(&text).into_owned(), s)
        });
        // the client keeps its connection open
        let (text, _kept) = client.await.expect("client");
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        for part in ["aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"] {
            assert!(text.contains(part), "{part} missing: {text}");
        }
        assert!(text.ends_with("0\r\n\r\n"), "the answer ends: {text}");
        // then the connection waits for a head, and the timer closes it
        let closed = tokio::time::timeout(timeout * 4, server).await;
        assert!(matches!(closed, Ok(Ok(true))), "{closed:?}");
    }

    /// A client that stops reading a long answer is still dropped after the timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_does_not_read_its_answer_is_dropped() {
        let timeout = 300 * MS;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        // 256 MiB, far more than the sockets' buffers hold
        let server = tokio::spawn(serve_one(listener, timeout, |_| {
            parts(4096, 64 << 10, Duration::ZERO)
        }));
        let client = std::net::TcpStream::connect(addr).expect("connect");
        std::io::Write::write_all(&mut &client, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        let closed = tokio::time::timeout(timeout * 10, server).await;
        assert!(matches!(closed, Ok(Ok(true))), "{closed:?}");
        drop(client);
    }

    /// A runtime busy for longer than the timeout (here: a handler that blocks its thread) does
    /// not cut the kept-alive connections whose next head came in meanwhile.
    #[tokio::test]
    async fn heads_that_came_while_the_runtime_was_busy_are_served() {
        let timeout = 300 * MS;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let answer: Arc<dyn Fn(&str) -> Parts + Send + Sync> = Arc::new(move |path: &str| {
            if path == "/block" {
                // blocks this (the only) runtime thread
                std::thread::sleep(timeout * 4);
            }
            parts(1, 2, Duration::ZERO)
        });
        const KEPT: usize = 8;
        tokio::spawn(async move {
            for _ in 0..=KEPT {
                let (stream, _) = listener.accept().await.expect("accept");
                tokio::spawn(serve_stream(stream, timeout, answer.clone()));
            }
        });
        let client = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let ask = |s: &mut std::net::TcpStream, path: &str| -> String {
                s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                    .expect("write");
                let mut text = Vec::new();
                let mut buf = [0u8; 1024];
                while !text.ends_with(b"0\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => text.extend_from_slice(&buf[..n]),
                    }
                }
                String::from_utf8_lossy(&text).into_owned()
            };
            let mut kept: Vec<std::net::TcpStream> = (0..KEPT)
                .map(|_| {
                    let mut s = std::net::TcpStream::connect(addr).expect("connect");
                    s.set_read_timeout(Some(Duration::from_secs(20)))
                        .expect("timeout");
                    let first = ask(&mut s, "/ok");
                    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
                    s
                })
                .collect();
            std::thread::sleep(timeout / 2);
            let mut blocking = std::net::TcpStream::connect(addr).expect("connect");
            blocking
                .write_all(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("write");
            std::thread::sleep(100 * MS);
            // heads sent while the server's runtime is blocked
            for s in &mut kept {
                s.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
                    .expect("write");
            }
            kept.iter_mut()
                .map(|s| {
                    let mut text = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !text.ends_with(b"0\r\n\r\n") {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => text.extend_from_slice(&buf[..n]),
                        }
                    }
                    String::from_utf8_lossy(&text).into_owned()
                })
                .collect::<Vec<_>>()
        });
        let answers = tokio::task::spawn_blocking(move || client.join().expect("client"))
            .await
            .expect("join");
        for a in &answers {
            assert!(
                a.starts_with("HTTP/1.1 200") && a.ends_with("0\r\n\r\n"),
                "{answers:?}"
            );
        }
    }
}
