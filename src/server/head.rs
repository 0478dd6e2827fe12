//! A connection's request heads, read and checked before hyper sees them.
//! hyper answers a head it cannot parse — bytes outside HTTP's grammar (a raw `0xff` in the
//! request line), a request target over its 65,534 bytes, a head over its buffer, a bad
//! `Content-Length` or `Transfer-Encoding` — with a bare status and an empty body. Here the same
//! parser hyper uses (`httparse`, hyper's configuration) and hyper's further rules (method,
//! target, `Content-Length` digits, `Transfer-Encoding` ending in `chunked` and only on
//! HTTP/1.1: [`check`], which also says how the body is framed) look at the head first; a head
//! they refuse is answered in the shape of the API its path belongs to (the read API's error
//! array or the write API's fault, `api::guard::shaped`, [`answer`]) with `Connection: close`,
//! and the connection is closed after the client's remaining bytes are drained for a moment
//! (so that closing does not reset the connection before the client has read the answer).
//!
//! The first head is read here ([`read_first`]); it and every later head of a kept-alive
//! connection then go through `super::framing::Checked`, which follows the requests' bodies
//! to each next head and refuses a bad one after hyper's last answer (the starting server's
//! answers close their connection, so no later head is read there).
//!
//! Limits: a request target of at most [`MAX_URI_BYTES`] bytes (414), a head of at most the
//! connection's buffer (`ConnectionLimits::max_buf_bytes`, 256 KiB; 431) and
//! [`HYPER_MAX_HEADERS`] header lines (431); the API's own, lower head limits are checked by the
//! guard.

use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::api::guard::{self, HYPER_MAX_HEADERS, MAX_HEADERS, MAX_URI_BYTES};

/// Longest request line read while looking for its end (method and version around the target).
const MAX_REQUEST_LINE: usize = MAX_URI_BYTES + 64;
/// How much of what a refused client still sends is read (and dropped) before closing.
pub const DRAIN_BYTES: usize = 1 << 20;
pub const DRAIN_TIME: Duration = Duration::from_secs(1);

/// A head hyper takes: how long it is and what follows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Head {
    /// Its bytes, with the empty lines before it that hyper skips.
    pub len: usize,
    /// How its body is framed (hyper's rules: `Transfer-Encoding: chunked` over
    /// `Content-Length`, none without either).
    pub body: Body,
    /// Whether hyper reads another head after this request (HTTP/1.1 without `Connection:
    /// close`, HTTP/1.0 with `Connection: keep-alive`; never after a head with both framings).
    pub keep_alive: bool,
}

/// How a request body is framed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Body {
    /// This many bytes (0: no body).
    Length(u64),
    Chunked,
}

/// What a request head is.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Complete, and hyper will take it.
    Complete(Head),
    /// Not complete yet.
    Partial,
    /// Refused: the status and the message the client gets, and the target (for the shape).
    Refused(StatusCode, String, String),
}

/// Read the connection's first request head (with whatever follows it in the same reads).
/// `Some(bytes)`: a head hyper will parse, to be given to it first. `None`: the connection is
/// done — closed by the client before a head, or a refused head answered here.
pub async fn read_first<S>(stream: &mut S, max_bytes: usize) -> Option<Vec<u8>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = Vec::with_capacity(4096);
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(buf.len());
        }
        let before = buf.len();
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        match after_read(&buf, before, max_bytes) {
            Verdict::Complete(_) => return Some(buf),
            Verdict::Partial => continue,
            Verdict::Refused(status, message, target) => {
                refuse(stream, &buf, status, message, &target).await;
                return None;
            }
        }
    }
}

/// The verdict on a head being read (`buf`, from its start) after a read that added
/// `buf[before..]`: parsed again only when a line ended or the head outgrew a limit (as hyper
/// parses on every read, but a head trickled a byte at a time is not parsed per byte).
pub fn after_read(buf: &[u8], before: usize, max_bytes: usize) -> Verdict {
    let crossed = before <= MAX_REQUEST_LINE && buf.len() > MAX_REQUEST_LINE;
    if buf[before..].contains(&b'\n') || buf.len() > max_bytes || crossed {
        check(buf, max_bytes)
    } else {
        Verdict::Partial
    }
}

/// A request target that `http::Uri` takes without a doubt: origin-form, bytes valid both in
/// its path and its query (`http`'s `PATH_MAP` and `QUERY_MAP`), `?` — checked without the
/// copy `Uri::try_from` makes. Other targets are parsed as hyper does.
fn plain_target(target: &[u8]) -> bool {
    const fn table() -> [bool; 256] {
        let mut t = [false; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = matches!(i as u8, 0x21 | 0x24..=0x3B | 0x3D | 0x3F..=0x5F | 0x61..=0x7A
                | 0x7C | 0x7E | b'{' | b'}');
            i += 1;
        }
        t
    }
    const PLAIN: [bool; 256] = table();
    target.first() == Some(&b'/') && target.iter().all(|&b| PLAIN[b as usize])
}

/// hyper's `Content-Length`: ASCII digits only, no overflow.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// A header value as `HeaderValue::to_str` gives it (visible ASCII and tabs), split on commas
/// and trimmed.
fn tokens(value: &[u8]) -> impl DoubleEndedIterator<Item = &str> {
    let text = value
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
        .then(|| std::str::from_utf8(value).ok())
        .flatten();
    text.into_iter().flat_map(|t| t.split(',').map(str::trim))
}

/// The verdict on the bytes read so far (a head from its start), by hyper's rules
/// (`proto::h1::role::Server::parse`): what it refuses is refused here.
pub fn check(buf: &[u8], max_bytes: usize) -> Verdict {
    let mut headers = [std::mem::MaybeUninit::uninit(); HYPER_MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let parsed = req.parse_with_uninit_headers(buf, &mut headers);
    let target = || req.path.map_or_else(|| target_of(buf), |p| p.to_string());
    let bad = |message: &str, target: String| {
        Verdict::Refused(
            StatusCode::BAD_REQUEST,
            format!("Ugyldig forespørsel: {message}"),
            target,
        )
    };
    let too_large = |target: String| {
        Verdict::Refused(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("Forespørselens hode er for stort: over {max_bytes} byte"),
            target,
        )
    };
    let path_len = req.path.map_or_else(|| target_of(buf).len(), str::len);
    if path_len > MAX_URI_BYTES {
        let target = target();
        return Verdict::Refused(
            StatusCode::URI_TOO_LONG,
            guard::uri_too_long_message(target.len(), req.path.is_none()),
            target,
        );
    }
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > max_bytes => return too_large(target()),
        Ok(httparse::Status::Partial) => {
            // a request line longer than any target allowed, not ended yet
            if buf.len() > MAX_REQUEST_LINE && !buf.contains(&b'\n') {
                let target = target_of(buf);
                return Verdict::Refused(
                    StatusCode::URI_TOO_LONG,
                    guard::uri_too_long_message(target.len(), true),
                    target,
                );
            }
            return Verdict::Partial;
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Verdict::Refused(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("For mange hoder (høyst {MAX_HEADERS})"),
                target(),
            )
        }
        Err(httparse::Error::HeaderName) => return bad("ugyldig tegn i et hodenavn", target()),
        Err(httparse::Error::HeaderValue) => return bad("ugyldig tegn i en hodeverdi", target()),
        Err(httparse::Error::Version) => return bad("ugyldig HTTP-versjon", target()),
        Err(_) => return bad("ugyldig tegn i forespørselslinjen", target()),
    };
    if req
        .method
        .is_some_and(|m| Method::from_bytes(m.as_bytes()).is_err())
    {
        return bad("ugyldig metode", target());
    }
    if req
        .path
        .is_some_and(|p| !plain_target(p.as_bytes()) && Uri::try_from(p).is_err())
    {
        return bad("ugyldig adresse", target());
    }
    if req.headers.iter().any(|h| h.name.len() >= 1 << 16) {
        return too_large(target());
    }
    match framing(req.headers, req.version == Some(1)) {
        Ok((body, keep_alive)) => Verdict::Complete(Head {
            len,
            body,
            keep_alive,
        }),
        Err(message) => bad(message, target()),
    }
}

/// How hyper frames the body of a request with these headers and whether it reads another
/// head after it, in its order (a `Content-Length` after `Transfer-Encoding` is not read);
/// Err: why hyper refuses the head.
fn framing(headers: &[httparse::Header<'_>], http11: bool) -> Result<(Body, bool), &'static str> {
    let mut keep_alive = http11;
    let (mut closed, mut length, mut te, mut cl, mut chunked) = (false, None, false, false, false);
    for h in headers {
        let name = h.name.as_bytes();
        match name.len() {
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                if !http11 {
                    return Err("Transfer-Encoding i HTTP/1.0");
                }
                te = true;
                length = None;
                chunked = tokens(h.value)
                    .next_back()
                    .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                cl = true;
                if te {
                    continue;
                }
                match (digits(h.value), length) {
                    (Some(n), None) if n <= u64::MAX - 2 => length = Some(n),
                    (Some(n), Some(l)) if n == l => {}
                    (Some(_), Some(_)) => return Err("ulike Content-Length"),
                    _ => return Err("ugyldig Content-Length"),
                }
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                if closed || tokens(h.value).any(|t| t.eq_ignore_ascii_case("close")) {
                    closed = true;
                    keep_alive = false;
                } else if !keep_alive {
                    keep_alive = tokens(h.value).any(|t| t.eq_ignore_ascii_case("keep-alive"));
                }
            }
            _ => {}
        }
    }
    if te && !chunked {
        return Err("Transfer-Encoding må ende med chunked");
    }
    let body = if chunked {
        Body::Chunked
    } else {
        Body::Length(length.unwrap_or(0))
    };
    Ok((body, keep_alive && !(te && cl)))
}

/// The request target as far as it was read (lossy), for the answer's shape.
fn target_of(buf: &[u8]) -> String {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
    let target = line.split(|&b| b == b' ').nth(1).unwrap_or(b"");
    String::from_utf8_lossy(&target[..target.len().min(MAX_URI_BYTES + 1)]).into_owned()
}

/// The `Accept` header of a head that did not parse, as far as it can be found (for the write
/// API's format).
fn accept_of(buf: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let accept = buf.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let (name, value) = line.split_at(line.iter().position(|&b| b == b':')?);
        name.eq_ignore_ascii_case(b"accept")
            .then(|| HeaderValue::from_bytes(value[1..].trim_ascii()).ok())
            .flatten()
    });
    if let Some(v) = accept {
        headers.insert(header::ACCEPT, v);
    }
    headers
}

/// The answer to a refused head (`buf`: its bytes as far as read), in the shape of its API,
/// with `Connection: close`; None if the shaped body cannot be had at once (it always can).
pub fn answer(buf: &[u8], status: StatusCode, message: String, target: &str) -> Option<Vec<u8>> {
    use futures_util::FutureExt;
    let path = target.split('?').next().unwrap_or("");
    let response = guard::shaped(guard::api_of(path, &accept_of(buf)), status, message);
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, 1 << 16).now_or_never()?.ok()?;
    let mut out = Vec::with_capacity(256 + body.len());
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {} {}\r\n",
            parts.status.as_u16(),
            parts.status.canonical_reason().unwrap_or("")
        )
        .as_bytes(),
    );
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_LENGTH && name != header::CONNECTION {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(
        format!(
            "server: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            crate::api::stack::SERVER,
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&body);
    tracing::debug!(
        status = status.as_u16(),
        "request head refused before hyper"
    );
    Some(out)
}

/// Answer a refused first head in the shape of its API, then close after draining.
async fn refuse<S>(stream: &mut S, buf: &[u8], status: StatusCode, message: String, target: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(out) = answer(buf, status, message, target) else {
        return;
    };
    if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    // read (and drop) what the client still sends, so that closing does not reset the
    // connection under the answer
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        let mut sink = [0u8; 8192];
        let mut drained = 0;
        while drained < DRAIN_BYTES {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 256 << 10;

    fn status(v: &Verdict) -> Option<u16> {
        match v {
            Verdict::Refused(s, _, _) => Some(s.as_u16()),
            _ => None,
        }
    }

    /// hyper's own answer to `request` (one connection, a service answering 200): the status
    /// of its first answer.
    async fn hyper_status(request: &[u8]) -> u16 {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let svc = hyper::service::service_fn(|_req: hyper::Request<hyper::body::Incoming>| async {
            Ok::<_, std::convert::Infallible>(hyper::Response::new(http_body_util::Full::new(
                bytes::Bytes::from_static(b"ok"),
            )))
        });
        let mut http = hyper::server::conn::http1::Builder::new();
        http.max_buf_size(MAX);
        let conn = http.serve_connection(hyper_util::rt::TokioIo::new(server), svc);
        tokio::spawn(conn);
        client.write_all(request).await.unwrap();
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        while !text.windows(4).any(|w| w == b"\r\n\r\n") {
            match client.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&text);
        text.split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The checker refuses what hyper refuses, with hyper's status, and passes what hyper
    /// takes (hyper itself is the oracle); the framing it reports is hyper's.
    #[tokio::test]
    async fn heads_are_refused_exactly_when_hyper_refuses_them() {
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(66_000));
        let many: String = (0..HYPER_MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: y\r\n"))
            .collect();
        let many = format!("GET /a HTTP/1.1\r\n{many}\r\n");
        let cases: Vec<&[u8]> = vec![
            b"GET /nvdb/api/v2/status?x=%C3%A5 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
            b"\r\nGET /a HTTP/1.1\r\n\r\n",
            b"GET /a?b={\"c\":1}&d=`|^ HTTP/1.1\r\n\r\n",
            b"GET /a?b=\"c HTTP/1.1\r\n\r\n",
            b"GET /%C3%A5/\xc3\xa5 HTTP/1.1\r\n\r\n",
            b"GET http://x/a HTTP/1.1\r\n\r\n",
            b"GET * HTTP/1.1\r\n\r\n",
            b"GET a HTTP/1.1\r\n\r\n",
            b"GET /a\xff HTTP/1.1\r\nHost: x\r\n\r\n",
            b"G\xffT /a HTTP/1.1\r\n\r\n",
            b"GET /a HTTP/9.9\r\n\r\n",
            b"GET /a HTTP/1.1\r\nHo st: x\r\n\r\n",
            b"GET /a HTTP/1.1\r\nX: a\x01b\r\n\r\n",
            b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            b"POST /a HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
            b"POST /a HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabc",
            b"POST /a HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc",
            b"POST /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
            b"POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n0\r\n\r\n",
            b"POST /a HTTP/1.1\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            long.as_bytes(),
            many.as_bytes(),
        ];
        for head in cases {
            let what = String::from_utf8_lossy(&head[..head.len().min(80)]).into_owned();
            let hyper = hyper_status(head).await;
            match check(head, MAX) {
                Verdict::Complete(_) => assert_eq!(hyper, 200, "{what}"),
                Verdict::Refused(status, ..) => assert_eq!(status.as_u16(), hyper, "{what}"),
                Verdict::Partial => panic!("partial: {what}"),
            }
        }
        // a head over the buffer: hyper's 431
        let big = format!("GET /a HTTP/1.1\r\nX: {}\r\n", "b".repeat(MAX));
        assert_eq!(status(&check(big.as_bytes(), MAX)), Some(431));
        assert_eq!(
            status(&check(big.as_bytes(), MAX)),
            Some(hyper_status(big.as_bytes()).await)
        );
        // the framing hyper reads
        let framing = |head: &[u8]| match check(head, MAX) {
            Verdict::Complete(h) => (h.len, h.body, h.keep_alive),
            v => panic!("{v:?}"),
        };
        let post = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(framing(post), (post.len() - 3, Body::Length(3), true));
        let close = b"\r\nGET /a HTTP/1.1\r\nConnection: x, Close\r\n\r\n";
        assert_eq!(framing(close), (close.len(), Body::Length(0), false));
        let old = b"GET /a HTTP/1.0\r\n\r\n";
        assert_eq!(framing(old), (old.len(), Body::Length(0), false));
        let kept = b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
        assert_eq!(framing(kept), (kept.len(), Body::Length(0), true));
        let both = b"POST /a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(framing(both), (both.len(), Body::Chunked, false));
        assert_eq!(
            check(b"GET /a HTTP/1.1\r\nHost: x\r\n", MAX),
            Verdict::Partial
        );
    }

    #[tokio::test]
    async fn a_refused_head_is_answered_in_the_shape_of_its_api() {
        for (head, write, want) in [
            (&b"GET /nvdb/api/v2/status\xff HTTP/1.1\r\n\r\n"[..], false, 400),
            (
                b"GET /nvdb/apiskriv/rest/v2/endringssett\xff HTTP/1.1\r\nAccept: application/xml\r\n\r\n",
                true,
                400,
            ),
        ] {
            let (mut client, mut server) = tokio::io::duplex(1 << 20);
            client.write_all(head).await.unwrap();
            client.shutdown().await.unwrap();
            assert_eq!(read_first(&mut server, MAX).await, None);
            drop(server);
            let mut text = String::new();
            client.read_to_string(&mut text).await.unwrap();
            assert!(text.starts_with(&format!("HTTP/1.1 {want} ")), "{text}");
            assert!(text.contains("connection: close\r\n"), "{text}");
            let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(length, body.len());
            if write {
                assert!(body.contains("<fault"), "{body}");
            } else {
                let v: serde_json::Value = serde_json::from_str(body).unwrap();
                assert_eq!(v[0]["code"], 4000, "{body}");
            }
        }
        // a good head comes back whole, with what followed it
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        let good = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        client.write_all(good).await.unwrap();
        assert_eq!(
            read_first(&mut server, MAX).await.as_deref(),
            Some(&good[..])
        );
    }
}
