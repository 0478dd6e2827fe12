//! The header-read timeout of a connection, kept by a watchdog instead of a timer per request.
//!
//! hyper's own `header_read_timeout` creates a timer for every request head it waits for (an
//! allocation, and a registration and removal in the runtime's timer wheel): about a twentieth
//! of the instructions a `/posisjon` request costs (issue 11, `tools/callgrind_wire.sh`). Here a
//! connection has one timer for its lifetime. It checks, every quarter of the timeout, whether
//! the connection has been *waiting for a request head* longer than the timeout — no request in
//! the handlers and no response byte written since — and then closes it. That is the same rule
//! as hyper's: a client that trickles a head (slowloris) or keeps a connection idle is dropped
//! between one and one and a quarter timeouts after its last answer; a request that takes long
//! in the handlers, or a long answer the client reads steadily, is not.

use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// What a connection did last: shared by its I/O, its service and its watchdog.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    /// Milliseconds after `started` of the last answer completed or response byte written.
    last_ms: AtomicU64,
    /// Requests in the handlers now (0 or 1 on HTTP/1.1).
    in_flight: AtomicU32,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
        })
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn touch(&self) {
        self.last_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// A request head arrived and goes to the handlers.
    pub fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// The handlers answered (the body may still be written).
    pub fn request_answered(&self) {
        self.touch();
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// How long the connection has waited for a request head (zero while one is handled).
    pub fn waiting(&self) -> Duration {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let last = self.last_ms.load(Ordering::Relaxed);
        Duration::from_millis(self.now_ms().saturating_sub(last))
    }
}

/// Completes when the connection has waited for a request head longer than `timeout`.
pub async fn watchdog(activity: Arc<Activity>, timeout: Duration) {
    let period = (timeout / 4).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(period).await;
        if activity.waiting() > timeout {
            return;
        }
    }
}

/// A connection's stream that notes each response write in its [`Activity`].
pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Watched<S> {
        Watched { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
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
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
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

    #[tokio::test]
    async fn waiting_counts_only_time_without_a_request_in_the_handlers() {
        let a = Activity::new();
        tokio::time::sleep(60 * MS).await;
        assert!(a.waiting() >= 60 * MS);
        a.request_started();
        tokio::time::sleep(60 * MS).await;
        assert_eq!(
            a.waiting(),
            Duration::ZERO,
            "a request in the handlers is not waiting"
        );
        a.request_answered();
        assert!(a.waiting() < 50 * MS);
        tokio::time::sleep(60 * MS).await;
        assert!(a.waiting() >= 60 * MS);
    }

    #[tokio::test]
    async fn the_watchdog_fires_after_the_timeout_and_not_while_a_request_runs() {
        let timeout = 200 * MS;
        let a = Activity::new();
        let started = Instant::now();
        watchdog(a.clone(), timeout).await;
        let after = started.elapsed();
        assert!(after > timeout && after < timeout * 3, "{after:?}");

        let busy = Activity::new();
        busy.request_started();
        let fired = tokio::time::timeout(timeout * 3, watchdog(busy, timeout)).await;
        assert!(
            fired.is_err(),
            "a connection with a request in the handlers is kept"
        );
    }

    #[tokio::test]
    async fn writes_keep_a_connection_from_waiting() {
        let a = Activity::new();
        let (_client, server) = tokio::io::duplex(64);
        let mut w = Watched::new(server, a.clone());
        tokio::time::sleep(60 * MS).await;
        assert!(a.waiting() >= 60 * MS);
        tokio::io::AsyncWriteExt::write_all(&mut w, b"HTTP/1.1 200 OK\r\n")
            .await
            .expect("write");
        assert!(a.waiting() < 50 * MS);
    }
}
