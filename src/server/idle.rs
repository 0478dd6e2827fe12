//! The header-read timeout of a connection, kept by a watchdog instead of a timer per request.
//!
//! hyper's own `header_read_timeout` creates a timer for every request head it waits for (an
//! allocation, and a registration and removal in the runtime's timer wheel): about a twentieth
//! of the instructions a `/posisjon` request costs (issue 11, `tools/callgrind_wire.sh`). Here a
//! connection has one timer for its lifetime. It wakes every eighth of the timeout and closes
//! the connection once it has been *waiting for a request head* longer than the timeout — no
//! request in the handlers and no response byte written since. That is the same rule as
//! hyper's: a client that trickles a head (slowloris) or keeps a connection idle is dropped
//! between one and one and a quarter timeouts after its last answer; a request that takes long
//! in the handlers, or a long answer the client reads steadily, is not.
//!
//! The requests and writes read no clock: they count events, and the watchdog notes the time at
//! the wake-up that first sees the count unchanged (two clock reads less per request).

use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
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
    /// Requests in the handlers now (0 or 1 on HTTP/1.1).
    in_flight: AtomicU32,
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
    }

    /// The handlers answered (the body may still be written).
    pub fn request_answered(&self) {
        self.touch();
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// The event count, or None while a request is in the handlers (not waiting).
    fn waiting_since(&self) -> Option<u64> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        Some(self.events.load(Ordering::Relaxed))
    }
}

/// Completes when the connection has waited for a request head longer than `timeout` (measured
/// from the wake-up that first saw it quiet, so between one and one and a quarter timeouts).
pub async fn watchdog(activity: Arc<Activity>, timeout: Duration) {
    let period = (timeout / 8).max(Duration::from_millis(5));
    let (mut seen, mut quiet_since) = (activity.waiting_since(), Instant::now());
    loop {
        tokio::time::sleep(period).await;
        let now = activity.waiting_since();
        if now.is_none() || now != seen {
            (seen, quiet_since) = (now, Instant::now());
        } else if quiet_since.elapsed() >= timeout {
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
}
