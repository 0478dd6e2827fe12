//! The entity tags of read-API answers: the data changes only with the generation,
//! so an answer's tag is the generation and a hash of what else it depends on (which answers
//! have one: `route::RequestClass::cacheable`); a matching
//! `If-None-Match` is answered with 304 before the routes run.

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method};

use super::super::media;

/// The weak entity tag of a read-API answer: the generation and a hash of everything the
/// answer depends on besides the data (method, target, the media type asked for, the host its
/// links are built from, credentials that show sensitive values). Also whether credentials
/// were sent (the answer is then private). One pass over the headers, no allocation but the
/// header value's.
pub(super) fn entity_tag(generation: u64, req: &Request, with_host: bool) -> (HeaderValue, bool) {
    use std::hash::{BuildHasher, Hasher};
    let mut h = foldhash::fast::FixedState::with_seed(0x7665_6764_6265_7467).build_hasher();
    // HEAD describes the GET answer: the same tag
    let method = if req.method() == Method::HEAD {
        &Method::GET
    } else {
        req.method()
    };
    h.write(method.as_str().as_bytes());
    h.write_u8(0);
    h.write(
        req.uri()
            .path_and_query()
            .map_or("", |pq| pq.as_str())
            .as_bytes(),
    );
    h.write_u8(0);
    let mut private = false;
    for (name, value) in req.headers() {
        let include = if name == header::ACCEPT || name == media::SUFFIX_FORMAT {
            true
        } else if name == header::HOST {
            with_host
        } else if name == header::AUTHORIZATION || name == header::COOKIE {
            private = true;
            true
        } else {
            false
        };
        if include {
            h.write(name.as_str().as_bytes());
            h.write_u8(b':');
            h.write(value.as_bytes());
            h.write_u8(0);
        }
    }
    (tag_value(generation, h.finish()), private)
}

/// `W/"g<generation>-<hash as 16 hex digits>"`.
fn tag_value(generation: u64, hash: u64) -> HeaderValue {
    let mut buf = [0u8; 48];
    buf[..4].copy_from_slice(b"W/\"g");
    let mut n = 4;
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(generation).as_bytes();
    buf[n..n + digits.len()].copy_from_slice(digits);
    n += digits.len();
    buf[n] = b'-';
    n += 1;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..16).rev() {
        buf[n] = HEX[((hash >> (i * 4)) & 0xf) as usize];
        n += 1;
    }
    buf[n] = b'"';
    n += 1;
    HeaderValue::from_bytes(&buf[..n]).unwrap_or_else(|_| HeaderValue::from_static("W/\"-\""))
}

/// Whether `If-None-Match` names `tag` (weak comparison), and whether it is `*`.
pub(super) fn none_match(
    values: axum::http::header::GetAll<'_, HeaderValue>,
    tag: &HeaderValue,
) -> (bool, bool) {
    let opaque = |t: &[u8]| -> usize {
        if t.starts_with(b"W/") {
            2
        } else {
            0
        }
    };
    let ours = &tag.as_bytes()[opaque(tag.as_bytes())..];
    let mut star = false;
    for v in values {
        for item in v.as_bytes().split(|&b| b == b',') {
            let item = item.trim_ascii();
            if item == b"*" {
                star = true;
            } else if &item[opaque(item)..] == ours {
                return (true, star);
            }
        }
    }
    (false, star)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    #[test]
    fn tags_are_written_and_matched_weakly() {
        let tag = tag_value(42, 0x0123_4567_89ab_cdef);
        assert_eq!(tag, "W/\"g42-0123456789abcdef\"");
        assert_eq!(tag_value(0, 0), "W/\"g0-0000000000000000\"");
        let mut h = HeaderMap::new();
        let names = |h: &HeaderMap| none_match(h.get_all(header::IF_NONE_MATCH), &tag);
        assert_eq!(names(&h), (false, false));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"a\", \"g42-0123456789abcdef\""),
        );
        assert_eq!(names(&h), (true, false));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("W/\"g41-0123456789abcdef\""),
        );
        assert_eq!(names(&h), (false, false));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert_eq!(names(&h), (false, true));
    }
}
