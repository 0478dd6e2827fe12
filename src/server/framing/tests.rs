use super::*;
use futures_util::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MAX: usize = 256 << 10;

/// A stream that gives `data` `size` bytes per read and keeps what is written.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    size: usize,
    written: Vec<u8>,
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self
            .size
            .min(self.data.len() - self.at)
            .min(buf.remaining());
        let at = self.at;
        buf.put_slice(&self.data[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Pieces {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.written.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What hyper would read through a [`Checked`] over `data` given `size` bytes per read,
/// `first` of them read before (as `head::read_first` does): the bytes up to the end or
/// to the first refused head (where the read waits).
fn through(data: &[u8], first: usize, size: usize) -> (Vec<u8>, Checked<Pieces>) {
    let pieces = Pieces {
        data: data.to_vec(),
        at: first,
        size,
        written: Vec::new(),
    };
    let mut checked = Checked::new(pieces, Activity::new(), data[..first].to_vec(), MAX);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        match checked.read(&mut buf).now_or_never() {
            Some(Ok(0)) | None => break,
            Some(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Some(Err(e)) => panic!("{e}"),
        }
    }
    (out, checked)
}

/// Good requests of every framing, pipelined; bodies hold bytes refused as heads.
fn good() -> Vec<u8> {
    let body = b"GET /\xff HTTP/1.1\r\n\r\n";
    [
        &b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        format!("POST /b HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
        body,
        b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"7;e=1\r\nGET /\xff \r\n",
        format!("{:X}\r\n", body.len()).as_bytes(),
        body,
        b"\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n",
        b"\r\nPOST /d HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
        b"GET /e HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ]
    .concat()
}

#[test]
fn bodies_are_followed_to_the_next_head_in_any_pieces() {
    let good = good();
    let mut framing = Framing::new(MAX);
    assert_eq!(framing.scan(&good), Scan::All);
    assert_eq!(framing.heads, 5);
    assert_eq!(framing.state, State::Head);
    let bad = b"GET /f\xff HTTP/1.1\r\n\r\n";
    let both = [&good[..], bad].concat();
    for size in (1..40).chain([good.len(), both.len()]) {
        for first in [1usize, 30] {
            let (out, checked) = through(&good, first, size);
            assert_eq!(out, good, "size {size}");
            assert!(checked.refusal.is_none());
            let (out, checked) = through(&both, first, size);
            assert_eq!(out, good, "size {size}: up to the refused head");
            assert!(checked.refusal.is_some(), "size {size}");
            assert_eq!(checked.framing.heads, 5);
        }
    }
}

#[test]
fn after_a_request_hyper_does_not_keep_alive_the_rest_is_not_checked() {
    for head in [
        &b"GET /a HTTP/1.1\r\nConnection: close\r\n\r\n"[..],
        b"GET /a HTTP/1.0\r\n\r\n",
        b"POST /a HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        // a chunk size hyper refuses, a chunk extension with a bare LF
        b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a\nb\r\n",
    ] {
        let data = [head, b"GET /\xff HTTP/1.1\r\n\r\n"].concat();
        let mut framing = Framing::new(MAX);
        assert_eq!(
            framing.scan(&data),
            Scan::All,
            "{}",
            String::from_utf8_lossy(head)
        );
    }
    // an overflowing chunk size, too many trailer lines
    let mut chunked = Chunked::new();
    assert_eq!(
        chunked.advance(b"10000000000000000\r\n").1,
        Some(ChunkEnd::Refused)
    );
    let trailers: String = (0..=TRAILER_LINES)
        .map(|i| format!("T{i}: x\r\n"))
        .collect();
    let mut chunked = Chunked::new();
    let body = format!("0\r\n{trailers}\r\n");
    assert_eq!(chunked.advance(body.as_bytes()).1, Some(ChunkEnd::Refused));
}

/// The refusal waits for hyper's last answer, then ends the stream, and hyper's shutdown
/// writes it.
#[tokio::test]
async fn the_refusal_is_written_when_hyper_has_answered_everything() {
    let data =
        b"GET /nvdb/api/v2/status HTTP/1.1\r\n\r\nGET /nvdb/api/v2/status\xff HTTP/1.1\r\n\r\n";
    let (out, mut checked) = through(data, 10, 100);
    assert_eq!(out, &data[..36]);
    // hyper has not answered: its read waits
    let mut buf = [0u8; 64];
    assert!(checked.read(&mut buf).now_or_never().is_none());
    let activity = checked.activity.clone();
    activity.request_started();
    assert!(checked.read(&mut buf).now_or_never().is_none());
    activity.request_answered();
    assert!(
        checked.read(&mut buf).now_or_never().is_none(),
        "nothing written yet"
    );
    checked
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        .await
        .unwrap();
    assert!(
        checked.read(&mut buf).now_or_never().is_none(),
        "not flushed yet"
    );
    checked.flush().await.unwrap();
    assert_eq!(
        checked.read(&mut buf).now_or_never().unwrap().unwrap(),
        0,
        "the end"
    );
    checked.shutdown().await.unwrap();
    let written = String::from_utf8_lossy(&checked.inner.written).into_owned();
    let (first, refusal) = written.split_at(written.find("HTTP/1.1 400").expect(&written));
    assert_eq!(first, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    assert!(refusal.contains("connection: close\r\n"), "{refusal}");
    assert!(refusal.contains("\"code\":4000"), "{refusal}");
}
