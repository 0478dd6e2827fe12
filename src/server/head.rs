//! The first request head of a connection, read and checked before hyper sees it (issue 26
//! item 7). hyper answers a head it cannot parse — bytes outside HTTP's grammar (a raw `0xff` in
//! the request line), a request target over its 65,534 bytes, a head over its buffer — with a
//! bare status and an empty body. Here the same parser hyper uses (`httparse`, hyper's
//! configuration) and hyper's further checks (method, target, `Content-Length`) look at the head
//! first; a head they refuse is answered in the shape of the API its path belongs to (the read
//! API's error array or the write API's fault, `api::guard::shaped`) with `Connection: close`,
//! and the connection is closed after the client's remaining bytes are drained for a moment
//! (so that closing does not reset the connection before the client has read the answer).
//! A head that passes goes to hyper unchanged ([`super::idle::Watched::with_prefix`]).
//!
//! Limits: a request target of at most [`MAX_URI_BYTES`] bytes (414), a head of at most the
//! connection's buffer (`ConnectionLimits::max_buf_bytes`, 256 KiB; 431) and
//! [`HYPER_MAX_HEADERS`] header lines (431); the API's own, lower head limits are checked by the
//! guard. Later heads on a kept-alive connection are parsed by hyper alone.

use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::api::guard::{self, HYPER_MAX_HEADERS, MAX_HEADERS, MAX_URI_BYTES};

/// Longest request line read while looking for its end (method and version around the target).
const MAX_REQUEST_LINE: usize = MAX_URI_BYTES + 64;
/// How much of what a refused client still sends is read (and dropped) before closing.
const DRAIN_BYTES: usize = 1 << 20;
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// What the first head is.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Complete, and hyper will take it.
    Complete,
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
        // parse again only when a line ended (hyper parses on every read)
        let line_ended = buf[before..].contains(&b'\n');
        let verdict = if line_ended || buf.len() > max_bytes {
            check(&buf, max_bytes)
        } else if buf.len() > MAX_REQUEST_LINE && !buf.contains(&b'\n') {
            let target = target_of(&buf);
            Verdict::Refused(
                StatusCode::URI_TOO_LONG,
                guard::uri_too_long_message(target.len(), true),
                target,
            )
        } else {
            Verdict::Partial
        };
        match verdict {
            Verdict::Complete => return Some(buf),
            Verdict::Partial => continue,
            Verdict::Refused(status, message, target) => {
                refuse(stream, &buf, status, message, &target).await;
                return None;
            }
        }
    }
}

/// The verdict on the bytes read so far.
fn check(buf: &[u8], max_bytes: usize) -> Verdict {
    let mut headers = [httparse::EMPTY_HEADER; HYPER_MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let parsed = req.parse(buf);
    let target = req.path.map_or_else(|| target_of(buf), |p| p.to_string());
    let bad = |message: &str| {
        Verdict::Refused(
            StatusCode::BAD_REQUEST,
            format!("Ugyldig forespørsel: {message}"),
            target.clone(),
        )
    };
    if target.len() > MAX_URI_BYTES {
        let at_least = req.path.is_none();
        return Verdict::Refused(
            StatusCode::URI_TOO_LONG,
            guard::uri_too_long_message(target.len(), at_least),
            target.clone(),
        );
    }
    match parsed {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) if buf.len() > max_bytes => {
            return Verdict::Refused(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("Forespørselens hode er for stort: over {max_bytes} byte"),
                target.clone(),
            )
        }
        Ok(httparse::Status::Partial) => return Verdict::Partial,
        Err(httparse::Error::TooManyHeaders) => {
            return Verdict::Refused(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("For mange hoder (høyst {MAX_HEADERS})"),
                target.clone(),
            )
        }
        Err(httparse::Error::HeaderName) => return bad("ugyldig tegn i et hodenavn"),
        Err(httparse::Error::HeaderValue) => return bad("ugyldig tegn i en hodeverdi"),
        Err(httparse::Error::Version) => return bad("ugyldig HTTP-versjon"),
        Err(_) => return bad("ugyldig tegn i forespørselslinjen"),
    }
    if req
        .method
        .is_some_and(|m| Method::from_bytes(m.as_bytes()).is_err())
    {
        return bad("ugyldig metode");
    }
    if req.path.is_some_and(|p| Uri::try_from(p).is_err()) {
        return bad("ugyldig adresse");
    }
    // hyper refuses Content-Length values that are not one number (repeated ones must agree)
    let mut length = None;
    for h in req.headers.iter() {
        if !h.name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        for part in h.value.split(|&b| b == b',') {
            let n = std::str::from_utf8(part)
                .ok()
                .map(str::trim)
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse::<u64>().ok());
            match (n, length) {
                (None, _) => return bad("ugyldig Content-Length"),
                (Some(n), Some(l)) if n != l => return bad("ulike Content-Length"),
                (Some(n), _) => length = Some(n),
            }
        }
    }
    Verdict::Complete
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

/// Answer a refused head in the shape of its API, then close after draining.
async fn refuse<S>(stream: &mut S, buf: &[u8], status: StatusCode, message: String, target: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let path = target.split('?').next().unwrap_or("");
    let response = guard::shaped(guard::api_of(path, &accept_of(buf)), status, message);
    let (parts, body) = response.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1 << 16).await else {
        return;
    };
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

    #[test]
    fn heads_hyper_takes_pass_and_others_are_refused_with_their_status() {
        let ok = b"GET /nvdb/api/v2/status?x=%C3%A5 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
        assert_eq!(check(ok, MAX), Verdict::Complete);
        assert_eq!(
            check(b"GET /a HTTP/1.1\r\nHost: x\r\n", MAX),
            Verdict::Partial
        );
        assert_eq!(
            check(b"POST /a HTTP/1.0\r\nContent-Length: 3, 3\r\n\r\nabc", MAX),
            Verdict::Complete
        );
        for (head, want) in [
            (&b"GET /a\xff HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400),
            (b"G\xffT /a HTTP/1.1\r\n\r\n", 400),
            (b"GET /a HTTP/9.9\r\n\r\n", 400),
            (b"GET /a HTTP/1.1\r\nHo st: x\r\n\r\n", 400),
            (b"GET /a HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400),
            (b"POST /a HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400),
            (
                b"POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
        ] {
            assert_eq!(
                status(&check(head, MAX)),
                Some(want),
                "{}",
                String::from_utf8_lossy(head)
            );
        }
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(70_000));
        assert_eq!(status(&check(long.as_bytes(), MAX)), Some(414));
        let many: String = (0..HYPER_MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: y\r\n"))
            .collect();
        let many = format!("GET /a HTTP/1.1\r\n{many}\r\n");
        assert_eq!(status(&check(many.as_bytes(), MAX)), Some(431));
        let big = format!("GET /a HTTP/1.1\r\nX: {}\r\n", "b".repeat(MAX));
        assert_eq!(status(&check(big.as_bytes(), MAX)), Some(431));
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
