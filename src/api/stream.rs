//! Large list pages streamed with backpressure, so a client that does not read holds a
//! bounded amount of the server's memory.
//!
//! A page is a [`PageBody`]: an HTTP body that renders the next ~[`CHUNK_BYTES`] of the page
//! (or the items' own [`PageItems::chunk_bytes`]) only when hyper asks for the next frame, which it does after it has written the previous
//! one to the socket. A client that does not read therefore holds one rendered chunk (plus
//! what the body owns to render the rest: the generation `Arc`, the row list, the filter), not
//! the page.
//!
//! The bytes are those of the whole-page rendering ([`super::media::render_bytes`]) in every
//! format (JSON, XML, `pretty`): each chunk is rendered by the same serializer as the whole
//! envelope, with the chunk's items between two marker strings, and the known head (everything
//! up to the item list) and tail (the end of the list and `metadata`) are cut off. The head
//! and tail come from rendering the envelope with the two markers only, and every chunk is
//! checked against them (a mismatch ends the body with an error instead of sending wrong
//! bytes). The chunk size adapts to the measured bytes per item (at most
//! [`MAX_ITEMS_PER_CHUNK`] items), so each chunk is a bounded, short piece of work. A page of
//! more than [`HEAVY_ITEMS`] items is marked [`Heavy`]: the request stack then renders (and
//! compresses) its chunks off the async workers, a bounded number at a time (`super::heavy`),
//! unless it is also [`Light`] (at most [`LIGHT_ITEMS`] light items) and not compressed.

use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::body::Bytes;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use hyper::body::Frame;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use super::error::ApiError;
use super::heavy::{Heavy, Light};
use super::media::{render_bytes, Format, Negotiated};
use super::paging::{Envelope, PageMetadata};
use super::xml;

/// Target size of one rendered chunk.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Items rendered in one chunk at most (small items).
pub const MAX_ITEMS_PER_CHUNK: usize = 4096;
/// Items in the first chunk, before the size of an item is known.
const FIRST_CHUNK_ITEMS: usize = 8;
/// A streamed page of more items than this (more than its first chunk) is [`Heavy`].
pub const HEAVY_ITEMS: usize = FIRST_CHUNK_ITEMS;
/// A page of [`PageItems::light`] items is [`Light`] up to this many: a few hundred bytes
/// each, a whole page's rendering is work of the order of a query's quick slice.
pub const LIGHT_ITEMS: usize = 1000;
/// Written where the items go when finding the head and tail (spaces: never in an `href`,
/// which is form-encoded, and the markers come before `metadata` in every format).
const MARKER: &str = "vegdb stream marker 5e1f";

/// The items of a page, rendered on demand.
pub trait PageItems: Send + 'static {
    fn count(&self) -> usize;
    /// Are the items light: short texts and numbers only, a few hundred bytes each (an
    /// object's id, href and metadata), so that rendering a page of [`LIGHT_ITEMS`] of them
    /// is cheap work?
    fn light(&self) -> bool {
        false
    }
    /// Write the items in `range` as compact JSON, separated by commas, byte for byte what
    /// [`Self::write`] gives `serde_json`; false, with nothing written, when the items have no
    /// such writer (then they are serialized).
    fn write_json(&self, _out: &mut Vec<u8>, _range: Range<usize>) -> bool {
        false
    }
    /// Target size of one rendered chunk of these items ([`CHUNK_BYTES`] unless said).
    fn chunk_bytes(&self) -> usize {
        CHUNK_BYTES
    }
    /// Serialize the items in `range` as elements of `seq`.
    fn write<S: SerializeSeq>(&self, seq: &mut S, range: Range<usize>) -> Result<(), S::Error>;
}

/// The list of a chunk: marker, items, marker.
struct ChunkList<'a, P> {
    items: &'a P,
    range: Range<usize>,
}

impl<P: PageItems> Serialize for ChunkList<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(MARKER)?;
        if !self.range.is_empty() {
            self.items.write(&mut seq, self.range.clone())?;
        }
        seq.serialize_element(MARKER)?;
        seq.end()
    }
}

/// What surrounds a marker string written as a list item.
fn marker_quotes(format: Format) -> (String, String) {
    match format {
        Format::Json => ("\"".into(), "\"".into()),
        Format::Xml => {
            let item = xml::singular("objekter");
            (format!("<{item}>"), format!("</{item}>"))
        }
    }
}

/// The pieces of a page: `prefix item (sep item)* suffix`, and what to cut from a chunk.
struct Frame0 {
    prefix: Vec<u8>,
    sep: Vec<u8>,
    suffix: Vec<u8>,
    /// A chunk's rendering starts with this and ends with `cut_tail`.
    cut_head: Vec<u8>,
    cut_tail: Vec<u8>,
}

fn pieces(skeleton: &[u8], format: Format) -> Option<Frame0> {
    let m = MARKER.as_bytes();
    let find = |from: usize| {
        skeleton
            .get(from..)?
            .windows(m.len())
            .position(|w| w == m)
            .map(|i| i + from)
    };
    let i1 = find(0)?;
    let i2 = find(i1 + m.len())?;
    let (q1, q2) = marker_quotes(format);
    let (q1, q2) = (q1.as_bytes(), q2.as_bytes());
    let open1 = i1.checked_sub(q1.len())?;
    let open2 = i2.checked_sub(q1.len())?;
    let close1 = i1 + m.len() + q2.len();
    let close2 = i2 + m.len() + q2.len();
    let ok = skeleton.get(open1..i1)? == q1
        && skeleton.get(open2..i2)? == q1
        && skeleton.get(i1 + m.len()..close1)? == q2
        && skeleton.get(i2 + m.len()..close2)? == q2
        && close1 <= open2;
    ok.then(|| Frame0 {
        prefix: skeleton[..open1].to_vec(),
        sep: skeleton[close1..open2].to_vec(),
        suffix: skeleton[close2..].to_vec(),
        cut_head: skeleton[..open2].to_vec(),
        cut_tail: skeleton[close1..].to_vec(),
    })
}

/// A page body rendered chunk by chunk as it is read.
pub struct PageBody<P> {
    items: P,
    n: Negotiated,
    metadata: PageMetadata,
    frame: Frame0,
    next: usize,
    per_chunk: usize,
    done: bool,
}

impl<P: PageItems> PageBody<P> {
    /// The items back when the page cannot be split (no items, or a format that does not
    /// write the markers as expected): render it whole then.
    pub fn new(
        items: P,
        n: Negotiated,
        metadata: PageMetadata,
    ) -> Result<PageBody<P>, (P, PageMetadata)> {
        if items.count() == 0 {
            return Err((items, metadata));
        }
        let skeleton = render_bytes(
            n,
            n.resource.root(),
            &Envelope {
                objekter: ChunkList {
                    items: &items,
                    range: 0..0,
                },
                metadata: metadata.clone(),
            },
        );
        let Some(frame) = skeleton.ok().and_then(|sk| pieces(&sk, n.format)) else {
            return Err((items, metadata));
        };
        Ok(PageBody {
            items,
            n,
            metadata,
            frame,
            next: 0,
            per_chunk: FIRST_CHUNK_ITEMS,
            done: false,
        })
    }

    /// The next chunk of the body, `None` at the end.
    pub fn next_chunk(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.done {
            return None;
        }
        let total = self.items.count();
        let range = self.next..(self.next + self.per_chunk).min(total);
        let (first, last) = (range.start == 0, range.end == total);
        // compact JSON: the items written straight after the page's prefix, when they can be
        if self.n.format == Format::Json && !self.n.pretty {
            let f = &self.frame;
            let mut out = Vec::with_capacity(self.per_chunk * 256 + f.suffix.len());
            out.extend_from_slice(if first { &f.prefix } else { &f.sep });
            let at = out.len();
            if self.items.write_json(&mut out, range.clone()) {
                let written = out.len() - at;
                if last {
                    out.extend_from_slice(&f.suffix);
                }
                return Some(Ok(self.advance(range, written, Bytes::from(out))));
            }
        }
        let rendered = render_bytes(
            self.n,
            self.n.resource.root(),
            &Envelope {
                objekter: ChunkList {
                    items: &self.items,
                    range: range.clone(),
                },
                metadata: self.metadata.clone(),
            },
        );
        let f = &self.frame;
        let middle = match &rendered {
            Ok(r)
                if r.len() >= f.cut_head.len() + f.cut_tail.len()
                    && r.starts_with(&f.cut_head)
                    && r.ends_with(&f.cut_tail) =>
            {
                &r[f.cut_head.len()..r.len() - f.cut_tail.len()]
            }
            other => {
                self.done = true;
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "chunk does not fit the page's frame".to_string(),
                };
                tracing::error!(error = %why, "streamed page ended early");
                return Some(Err(std::io::Error::other(why)));
            }
        };
        let mut out = Vec::with_capacity(middle.len() + f.prefix.len() + f.suffix.len());
        out.extend_from_slice(if first { &f.prefix } else { &f.sep });
        out.extend_from_slice(middle);
        if last {
            out.extend_from_slice(&f.suffix);
        }
        let written = middle.len();
        Some(Ok(self.advance(range, written, Bytes::from(out))))
    }

    /// After a chunk of the items in `range` (`written` bytes of them): the next chunk's size
    /// from the bytes per item, and whether the page is done.
    fn advance(&mut self, range: Range<usize>, written: usize, chunk: Bytes) -> Bytes {
        let per_item = (written / range.len().max(1)).max(1);
        self.per_chunk = (self.items.chunk_bytes() / per_item).clamp(1, MAX_ITEMS_PER_CHUNK);
        self.next = range.end;
        self.done = range.end == self.items.count();
        chunk
    }
}

impl<P: PageItems + Unpin> hyper::body::Body for PageBody<P> {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.get_mut().next_chunk().map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// The whole list in one rendering (the path before streaming, and the fallback).
struct WholeList<'a, P>(&'a P);

impl<P: PageItems> Serialize for WholeList<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let count = self.0.count();
        let mut seq = serializer.serialize_seq(Some(count))?;
        self.0.write(&mut seq, 0..count)?;
        seq.end()
    }
}

fn whole(n: Negotiated, items: &impl PageItems, metadata: PageMetadata) -> Response {
    let env = Envelope {
        objekter: WholeList(items),
        metadata,
    };
    match render_bytes(n, n.resource.root(), &env) {
        Ok(bytes) => with_type(Body::from(bytes), n),
        Err(e) => {
            ApiError::from(crate::error::EngineError::Internal(e.to_string())).into_response()
        }
    }
}

fn with_type(body: Body, n: Negotiated) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, n.content_type());
    r
}

/// The page as a response: streamed when `stream` and it can be split, else rendered whole
/// (`ApiConfig::stream_pages` off renders every page whole: tests compare the two).
pub fn respond_page<P: PageItems + Unpin>(
    n: Negotiated,
    items: P,
    metadata: PageMetadata,
    stream: bool,
) -> Response {
    if !stream {
        return whole(n, &items, metadata);
    }
    let heavy = items.count() > HEAVY_ITEMS;
    let light = items.light() && items.count() <= LIGHT_ITEMS;
    match PageBody::new(items, n, metadata) {
        Ok(body) => {
            let mut r = with_type(Body::new(body), n);
            if heavy {
                r.extensions_mut().insert(Heavy);
            }
            if light {
                r.extensions_mut().insert(Light);
            }
            r
        }
        Err((items, metadata)) => whole(n, &items, metadata),
    }
}
