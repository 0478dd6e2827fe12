//! Every later request head of a kept-alive connection, checked before hyper sees it, so that
//! a head hyper cannot parse gets the API's error shape instead of hyper's bare status (the
//! first head is `head::read_first`'s).
//!
//! [`Checked`] sits between the socket and hyper and follows the requests' framing on the read
//! side ([`Framing`]): after each head it knows how the body is framed — `Content-Length`
//! (counted down, the bytes are not looked at) or chunked (the chunk-size lines and trailers are
//! followed byte by byte as hyper's decoder does, the chunks' data counted down) — and so where
//! the next head starts, and checks that head with `head::check` (hyper's parser and rules)
//! before hyper is given it. Bytes are read straight into hyper's buffer and scanned there; only
//! a head split across reads is held back (copied) until it is complete, so hyper never sees
//! part of a head. After a request hyper will not keep alive (`Connection: close`, HTTP/1.0
//! without keep-alive, both framings) or a chunked body hyper will refuse, the rest passes
//! unchecked: hyper reads no further head there.
//!
//! A refused head is not given to hyper: hyper gets the bytes before it and, once it has
//! answered every request it was given (pipelined ones included) and is waiting for the next
//! head, the end of the stream, so that it closes the connection as after a client's last
//! request. Its shutdown of the write side then writes the refusal — the API's error array or
//! fault with `Connection: close` (`head::answer`) — after hyper's last answer, and drains the
//! client's remaining bytes for a moment as the first-head path does. "Waiting for the next
//! head" is what hyper's end-of-stream handling needs: while an answer is owed, hyper takes
//! the end of the stream for a client gone away and drops the answer. So the end is given only
//! when every head given to hyper has reached the service ([`super::idle::Activity`] counts
//! them), none is in the handlers or making its answer, hyper wrote after the last of them
//! and its last write-side call was a completed flush. A refusal hyper never gets to (it
//! closes for a reason of its own: `Connection: close` on its answer, an error) is not written.
//!
//! vegdb serves no protocol upgrade (hyper's connections are built without them), so a
//! `CONNECT` or `Upgrade` request is answered as any other and the head after it is checked as
//! usual. `Expect: 100-continue` changes no framing: the body follows hyper's interim answer.
//!
//! Cost on the usual path: per read, one parse of each head that arrived (`httparse` with
//! uninitialised header slots, the target checked against a byte table instead of parsed) and
//! a count-down for `Content-Length` bodies; per write, a counter read; no copy, no allocation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::head::{self, Body, Verdict};
use super::idle::Activity;

/// hyper's bounds on a chunked body (`proto::h1::decode`): extension bytes, trailer bytes and
/// trailer lines; beyond them it refuses the body (and reads no further head).
const CHUNK_EXTENSIONS: u64 = 16 << 10;
const TRAILER_BYTES: usize = 16 << 10;
const TRAILER_LINES: usize = 100;

/// Where in a chunked body the reader is: hyper's `ChunkedState`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Start,
    Size,
    SizeLws,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    Trailer,
    TrailerLf,
    EndCr,
    EndLf,
}

/// A chunked body being read.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Chunked {
    step: Step,
    /// The chunk's size while its line is read, then its data still to come.
    size: u64,
    extensions: u64,
    /// Trailer bytes and lines (None: no trailer yet).
    trailer_bytes: Option<usize>,
    trailer_lines: usize,
}

/// The end of a chunked body, or a body hyper refuses.
#[derive(Debug, PartialEq)]
enum ChunkEnd {
    Done,
    Refused,
}

impl Chunked {
    fn new() -> Chunked {
        Chunked {
            step: Step::Start,
            size: 0,
            extensions: 0,
            trailer_bytes: None,
            trailer_lines: 0,
        }
    }

    /// Follow `data`: the bytes taken, and whether the body ended (or is refused) there.
    fn advance(&mut self, data: &[u8]) -> (usize, Option<ChunkEnd>) {
        let mut i = 0;
        while i < data.len() {
            if self.step == Step::Data {
                let take = self.size.min((data.len() - i) as u64);
                self.size -= take;
                i += take as usize;
                if self.size == 0 {
                    self.step = Step::DataCr;
                }
                continue;
            }
            let b = data[i];
            i += 1;
            match self.byte(b) {
                Ok(Some(end)) => return (i, Some(end)),
                Ok(None) => {}
                Err(()) => return (i, Some(ChunkEnd::Refused)),
            }
        }
        (i, None)
    }

    /// One byte outside the chunks' data, as hyper's decoder takes it.
    fn byte(&mut self, b: u8) -> Result<Option<ChunkEnd>, ()> {
        let hex = |b: u8| (b as char).to_digit(16).map(u64::from);
        self.step = match (self.step, b) {
            (Step::Start | Step::Size, _) if hex(b).is_some() => {
                let digit = hex(b).ok_or(())?;
                self.size = self.size.checked_mul(16).ok_or(())?;
                self.size = self.size.checked_add(digit).ok_or(())?;
                Step::Size
            }
            (Step::Size | Step::SizeLws, b'\t' | b' ') => Step::SizeLws,
            (Step::Size | Step::SizeLws, b';') => Step::Extension,
            (Step::Size | Step::SizeLws | Step::Extension, b'\r') => Step::SizeLf,
            (Step::Extension, b'\n') => return Err(()),
            (Step::Extension, _) => {
                self.extensions += 1;
                if self.extensions >= CHUNK_EXTENSIONS {
                    return Err(());
                }
                Step::Extension
            }
            (Step::SizeLf, b'\n') if self.size == 0 => Step::EndCr,
            (Step::SizeLf, b'\n') => Step::Data,
            (Step::DataCr, b'\r') => Step::DataLf,
            (Step::DataLf, b'\n') => Step::Start,
            (Step::Trailer, _) => {
                self.trailer_byte()?;
                if b == b'\r' {
                    Step::TrailerLf
                } else {
                    Step::Trailer
                }
            }
            (Step::TrailerLf, b'\n') => {
                if self.trailer_lines >= TRAILER_LINES {
                    return Err(());
                }
                self.trailer_lines += 1;
                self.trailer_byte()?;
                Step::EndCr
            }
            (Step::EndCr, b'\r') => {
                if self.trailer_bytes.is_some() {
                    self.trailer_byte()?;
                }
                Step::EndLf
            }
            (Step::EndCr, _) => {
                match self.trailer_bytes {
                    None => self.trailer_bytes = Some(1),
                    Some(_) => self.trailer_byte()?,
                }
                Step::Trailer
            }
            (Step::EndLf, b'\n') => {
                if self.trailer_bytes.is_some() {
                    self.trailer_byte()?;
                }
                return Ok(Some(ChunkEnd::Done));
            }
            _ => return Err(()),
        };
        Ok(None)
    }

    fn trailer_byte(&mut self) -> Result<(), ()> {
        let n = self.trailer_bytes.unwrap_or(0) + 1;
        self.trailer_bytes = Some(n);
        if n >= TRAILER_BYTES {
            return Err(());
        }
        Ok(())
    }
}

/// What the reader expects next.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// A request head.
    Head,
    /// This many bytes of a `Content-Length` body.
    Length(u64),
    Chunked(Chunked),
    /// Nothing hyper reads as a head: it keeps the connection no longer, or refuses the body.
    Unchecked,
}

/// A head refused: the answer's status, message and target.
#[derive(Debug, PartialEq)]
pub struct Refused {
    pub status: StatusCode,
    pub message: String,
    pub target: String,
}

/// What may go to hyper of bytes scanned.
#[derive(Debug, PartialEq)]
pub enum Scan {
    /// All of them.
    All,
    /// The bytes before this offset; from it on, a head not complete yet.
    Partial(usize),
    /// The bytes before this offset; the head there is refused.
    Refused(usize, Refused),
}

/// The request framing of a connection's read side, followed over the bytes hyper is given.
#[derive(Debug)]
pub struct Framing {
    state: State,
    /// Whether hyper reads another head after the current request.
    keep_alive: bool,
    /// Heads passed so far.
    heads: u64,
    max_bytes: usize,
}

impl Framing {
    pub fn new(max_bytes: usize) -> Framing {
        Framing {
            state: State::Head,
            keep_alive: true,
            heads: 0,
            max_bytes,
        }
    }

    fn after_body(&self) -> State {
        if self.keep_alive {
            State::Head
        } else {
            State::Unchecked
        }
    }

    /// Follow `data`, the next bytes of the stream.
    pub fn scan(&mut self, data: &[u8]) -> Scan {
        let mut pos = 0;
        while pos < data.len() {
            match &mut self.state {
                State::Head => match head::check(&data[pos..], self.max_bytes) {
                    Verdict::Complete(h) => {
                        self.heads += 1;
                        self.keep_alive = h.keep_alive;
                        pos += h.len;
                        self.state = match h.body {
                            Body::Length(0) => self.after_body(),
                            Body::Length(n) => State::Length(n),
                            Body::Chunked => State::Chunked(Chunked::new()),
                        };
                    }
                    Verdict::Partial => return Scan::Partial(pos),
                    Verdict::Refused(status, message, target) => {
                        return Scan::Refused(
                            pos,
                            Refused {
                                status,
                                message,
                                target,
                            },
                        )
                    }
                },
                State::Length(left) => {
                    let take = (*left).min((data.len() - pos) as u64);
                    *left -= take;
                    pos += take as usize;
                    if *left == 0 {
                        self.state = self.after_body();
                    }
                }
                State::Chunked(chunked) => {
                    let (taken, end) = chunked.advance(&data[pos..]);
                    pos += taken;
                    match end {
                        Some(ChunkEnd::Done) => self.state = self.after_body(),
                        Some(ChunkEnd::Refused) => self.state = State::Unchecked,
                        None => {}
                    }
                }
                State::Unchecked => return Scan::All,
            }
        }
        Scan::All
    }
}

/// A refused head waiting for hyper to finish, then written.
struct Refusal {
    /// The answer (None: none could be made; the connection is just closed).
    answer: Option<Vec<u8>>,
    written: usize,
    phase: Phase,
    /// hyper's read that found it not yet idle, woken once it is.
    reader: Option<Waker>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// hyper still answers what it was given.
    Owed,
    /// hyper was given the end of the stream: its shutdown writes the answer.
    Ended,
    Flushing,
    ShuttingDown,
    Draining,
    Done,
}

/// A connection's stream whose request heads are checked before hyper reads them.
pub struct Checked<S> {
    inner: S,
    activity: Arc<Activity>,
    framing: Framing,
    /// Bytes read and passed, not yet given to hyper (the first head and what came with it,
    /// or a held head once complete).
    out: Vec<u8>,
    given: usize,
    /// A head not complete yet (from its first byte), held back.
    held: Vec<u8>,
    /// The service's request count at hyper's last write.
    wrote_at: u64,
    /// hyper's last write-side call was a flush that completed.
    flushed: bool,
    refusal: Option<Box<Refusal>>,
    drain_deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    drained: usize,
}

impl<S> Checked<S> {
    /// `first`: bytes already read from `inner` (`head::read_first`: a head that passed and
    /// whatever followed it), given to hyper first once checked as the rest is.
    pub fn new(inner: S, activity: Arc<Activity>, first: Vec<u8>, max_bytes: usize) -> Checked<S> {
        let mut checked = Checked {
            inner,
            activity,
            framing: Framing::new(max_bytes),
            out: Vec::new(),
            given: 0,
            held: Vec::new(),
            wrote_at: 0,
            flushed: true,
            refusal: None,
            drain_deadline: None,
            drained: 0,
        };
        checked.take_in(first);
        checked
    }

    /// Scan bytes read into a buffer of ours: what passes is given to hyper next.
    fn take_in(&mut self, mut bytes: Vec<u8>) {
        match self.framing.scan(&bytes) {
            Scan::All => {}
            Scan::Partial(at) => {
                self.held = bytes.split_off(at);
            }
            Scan::Refused(at, refused) => {
                self.refuse(&bytes[at..], refused);
                bytes.truncate(at);
            }
        }
        self.out = bytes;
        self.given = 0;
    }

    fn refuse(&mut self, head: &[u8], r: Refused) {
        self.refusal = Some(Box::new(Refusal {
            answer: head::answer(head, r.status, r.message, &r.target),
            written: 0,
            phase: Phase::Owed,
            reader: None,
        }));
    }

    /// hyper has answered every head it was given and waits for the next: the moment it would
    /// have read the refused one.
    fn hyper_waits(&self) -> bool {
        self.given == self.out.len()
            && self.flushed
            && self.wrote_at == self.framing.heads
            && !self.activity.busy()
    }
}

impl<S: AsyncRead + Unpin> Checked<S> {
    /// Read into the held head until it is complete (or refused), or the client is gone.
    fn poll_held(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        loop {
            let before = self.held.len();
            self.held.resize(before + 8192, 0);
            let mut read = ReadBuf::new(&mut self.held[before..]);
            let polled = Pin::new(&mut self.inner).poll_read(cx, &mut read);
            let n = read.filled().len();
            self.held.truncate(before + n);
            std::task::ready!(polled)?;
            if n == 0 {
                // the client ended in the middle of a head: hyper sees the end
                self.held = Vec::new();
                return Poll::Ready(Ok(()));
            }
            match head::after_read(&self.held, before, self.framing.max_bytes) {
                Verdict::Partial => continue,
                _ => {
                    let held = std::mem::take(&mut self.held);
                    self.take_in(held);
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }

    /// A read of hyper's once a head is refused: the end of the stream when hyper waits for
    /// the next head, else not yet (it is woken when it does).
    fn poll_refused(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let waits = self.hyper_waits();
        let Some(refusal) = self.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        if waits || refusal.phase != Phase::Owed {
            refusal.phase = refusal.phase.max_ended();
            return Poll::Ready(Ok(()));
        }
        refusal.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Phase {
    fn max_ended(self) -> Phase {
        if self == Phase::Owed {
            Phase::Ended
        } else {
            self
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Checked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.given < this.out.len() {
                let n = (this.out.len() - this.given).min(buf.remaining());
                buf.put_slice(&this.out[this.given..this.given + n]);
                this.given += n;
                if this.given == this.out.len() {
                    (this.out, this.given) = (Vec::new(), 0);
                }
                return Poll::Ready(Ok(()));
            }
            if this.refusal.is_some() {
                return this.poll_refused(cx);
            }
            if !this.held.is_empty() {
                std::task::ready!(this.poll_held(cx))?;
                if this.out.is_empty() && this.refusal.is_none() && this.held.is_empty() {
                    // the client's end
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            // the usual path: straight into hyper's buffer, scanned there
            let start = buf.filled().len();
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let end = buf.filled().len();
            if end == start {
                return Poll::Ready(Ok(()));
            }
            match this.framing.scan(&buf.filled()[start..end]) {
                Scan::All => return Poll::Ready(Ok(())),
                Scan::Partial(at) => {
                    this.held.extend_from_slice(&buf.filled()[start + at..end]);
                    buf.set_filled(start + at);
                }
                Scan::Refused(at, refused) => {
                    let head = buf.filled()[start + at..end].to_vec();
                    this.refuse(&head, refused);
                    buf.set_filled(start + at);
                }
            }
            if buf.filled().len() > start {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Checked<S> {
    /// Write the refusal after hyper's last answer, shut the write side, drain the client.
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Some(refusal) = self.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        loop {
            match refusal.phase {
                Phase::Owed | Phase::Ended => {
                    let answer = refusal.answer.as_deref().unwrap_or(&[]);
                    while refusal.written < answer.len() {
                        match std::task::ready!(
                            Pin::new(&mut self.inner).poll_write(cx, &answer[refusal.written..])
                        ) {
                            Ok(n) if n > 0 => refusal.written += n,
                            _ => {
                                refusal.phase = Phase::Done;
                                break;
                            }
                        }
                    }
                    if refusal.phase != Phase::Done {
                        refusal.phase = Phase::Flushing;
                    }
                }
                Phase::Flushing => {
                    let _ = std::task::ready!(Pin::new(&mut self.inner).poll_flush(cx));
                    refusal.phase = Phase::ShuttingDown;
                }
                Phase::ShuttingDown => {
                    let _ = std::task::ready!(Pin::new(&mut self.inner).poll_shutdown(cx));
                    refusal.phase = Phase::Draining;
                    self.drain_deadline = Some(Box::pin(tokio::time::sleep(head::DRAIN_TIME)));
                }
                Phase::Draining => {
                    // read (and drop) what the client still sends, so that closing does not
                    // reset the connection under the answer
                    if let Some(deadline) = self.drain_deadline.as_mut() {
                        if deadline.as_mut().poll(cx).is_ready() {
                            refusal.phase = Phase::Done;
                            continue;
                        }
                    }
                    let mut sink = [0u8; 8192];
                    let mut read = ReadBuf::new(&mut sink);
                    match std::task::ready!(Pin::new(&mut self.inner).poll_read(cx, &mut read)) {
                        Ok(()) if !read.filled().is_empty() => {
                            self.drained += read.filled().len();
                            if self.drained >= head::DRAIN_BYTES {
                                refusal.phase = Phase::Done;
                            }
                        }
                        _ => refusal.phase = Phase::Done,
                    }
                }
                Phase::Done => return Poll::Ready(Ok(())),
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Checked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.wrote_at = self.activity.started();
        self.flushed = false;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.wrote_at = self.activity.started();
        self.flushed = false;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = std::task::ready!(Pin::new(&mut self.inner).poll_flush(cx));
        if r.is_ok() {
            self.flushed = true;
            if self.refusal.is_some() && self.hyper_waits() {
                if let Some(reader) = self.refusal.as_mut().and_then(|r| r.reader.take()) {
                    reader.wake();
                }
            }
        }
        Poll::Ready(r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let ended = self
            .refusal
            .as_ref()
            .is_some_and(|r| r.phase != Phase::Owed);
        if ended {
            return self.poll_answer(cx);
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
