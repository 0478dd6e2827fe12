//! The pieces of a page as compact JSON written by hand, byte for byte what serde_json writes
//! for their [`PieceDoc`](super::PieceDoc)s, straight into the chunk's buffer: numbers by
//! `itoa` and `zmij` (serde_json's own formatters), the keys of the page's types and values
//! made once per page, and a covering object's document (all but `feltspesifikk`, which is the
//! piece's) made once for the consecutive pieces it covers.

use std::ops::Range;

use super::{piece_refs, PageLayer, PiecePage};
use crate::api::dto::{date, RoadRefStretch, RoadSystemDoc, SectionStretchDoc, SystemRefStretch};
use crate::generation::feature::{decode, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::TypeData;
use crate::geo::wkt;
use crate::query::overlay::{Cover, Piece};
use crate::query::vegref::link_range_short;

/// Objects kept rendered per type while a page is written (the most recent ones).
const CACHED: usize = 8;

/// `"name":` as serde_json writes a map key.
pub(super) fn key(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 3);
    push_str(&mut out, name);
    out.push(b':');
    out
}

/// Per layer, the covering objects rendered last (oldest first, at most [`CACHED`]).
pub(super) struct Recent(Vec<Vec<Rendered>>);

impl Recent {
    pub(super) fn new(layers: usize) -> Recent {
        Recent((0..layers).map(|_| Vec::new()).collect())
    }
}

/// Write the pieces in `range` separated by commas; false, with nothing written, when one
/// cannot be (a geometry that does not transform): serde then writes the page and reports it.
/// `recent`: the objects rendered for the page's earlier chunks.
pub(super) fn write_pieces(
    page: &PiecePage,
    recent: &mut Recent,
    out: &mut Vec<u8>,
    range: Range<usize>,
) -> bool {
    let start = out.len();
    let mut w = Writer {
        page,
        cache: &mut recent.0,
        text: String::new(),
    };
    for (i, x) in page.pieces[range].iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if w.piece(out, x).is_none() {
            out.truncate(start);
            return false;
        }
    }
    true
}

/// A rendered covering object: `{"id":…,"feltspesifikk":` before `split`, `,"egenskaper":…}`
/// after.
pub(super) struct Rendered {
    row: u32,
    bytes: Vec<u8>,
    split: usize,
}

struct Writer<'a> {
    page: &'a PiecePage,
    /// Per layer, the objects rendered last (oldest first).
    cache: &'a mut Vec<Vec<Rendered>>,
    /// Scratch for the WKT.
    text: String,
}

impl Writer<'_> {
    fn piece(&mut self, out: &mut Vec<u8>, x: &Piece) -> Option<()> {
        let page = self.page;
        let g = &*page.g;
        out.extend_from_slice(b"{\"veglenkesekvensid\":");
        push_int(out, x.link_id);
        out.extend_from_slice(b",\"fra_posisjon\":");
        push_f64(out, x.from + 0.0);
        out.extend_from_slice(b",\"til_posisjon\":");
        push_f64(out, x.to + 0.0);
        out.extend_from_slice(b",\"kortform\":");
        push_str(out, &link_range_short(x.from, x.to, x.link_id));
        out.extend_from_slice(b",\"lengde\":");
        push_f64(out, (x.length_m * 1000.0).round() / 1000.0);
        let (road_ref, system_ref) = piece_refs(g, x);
        if let Some(v) = road_ref {
            out.extend_from_slice(b",\"vegreferanse\":");
            push_road_ref(out, &v);
        }
        if let Some(v) = system_ref {
            out.extend_from_slice(b",\"vegsystemreferanse\":");
            push_system_ref(out, &v);
        }
        let line = g.segment(x.net_row as usize).sub_line(x.from, x.to);
        self.text.clear();
        wkt::push_linestring_z(&mut self.text, page.srid, &line, page.z_tag).ok()?;
        // WKT is digits, signs, points, letters, spaces, commas and parentheses: nothing a
        // JSON string escapes
        debug_assert!(self
            .text
            .bytes()
            .all(|b| b >= 0x20 && b != b'"' && b != b'\\'));
        out.extend_from_slice(b",\"geometri\":{\"wkt\":\"");
        out.extend_from_slice(self.text.as_bytes());
        out.push(b'"');
        out.extend_from_slice(b",\"srid\":");
        push_int(out, page.srid.code());
        out.extend_from_slice(b"},\"vegobjekter\":{");
        for (k, (layer, covers)) in page.layers.iter().zip(&x.covers).enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&layer.key_json);
            let cache = &mut self.cache[k];
            match (&layer.data, covers.as_slice()) {
                (Some(d), [c]) => object(out, layer, d, c, cache),
                (Some(d), many) if !many.is_empty() => {
                    out.push(b'[');
                    for (j, c) in many.iter().enumerate() {
                        if j > 0 {
                            out.push(b',');
                        }
                        object(out, layer, d, c, cache);
                    }
                    out.push(b']');
                }
                _ => out.extend_from_slice(b"null"),
            }
        }
        out.extend_from_slice(b"}}");
        Some(())
    }
}

/// A covering object, from `cache` when rendered lately (else rendered and kept there).
fn object(
    out: &mut Vec<u8>,
    layer: &PageLayer,
    d: &TypeData,
    c: &Cover,
    cache: &mut Vec<Rendered>,
) {
    let at = match cache.iter().position(|r| r.row == c.row) {
        Some(i) => i,
        None => {
            if cache.len() == CACHED {
                cache.remove(0);
            }
            cache.push(render_object(layer, d, c.row));
            cache.len() - 1
        }
    };
    let r = &cache[at];
    out.extend_from_slice(&r.bytes[..r.split]);
    out.extend_from_slice(if c.lane_specific { b"true" } else { b"false" });
    out.extend_from_slice(&r.bytes[r.split..]);
}

/// `{"id":…,"versjon":…,"startdato":…,"feltspesifikk":` and `,"egenskaper":{…}}` of the object
/// in `row`.
fn render_object(layer: &PageLayer, d: &TypeData, row: u32) -> Rendered {
    let object = ObjectRow::new(&d.table, row as usize);
    let mut b = Vec::with_capacity(256);
    b.extend_from_slice(b"{\"id\":");
    push_int(&mut b, object.id());
    b.extend_from_slice(b",\"versjon\":");
    push_int(&mut b, object.version());
    b.extend_from_slice(b",\"startdato\":");
    push_str(&mut b, &date(object.start_date()));
    b.extend_from_slice(b",\"feltspesifikk\":");
    let split = b.len();
    b.extend_from_slice(b",\"egenskaper\":{");
    let mut first = true;
    for (&(p, column), key) in layer.plan.iter().zip(&layer.value_keys_json) {
        let value = column
            .and_then(|i| object.value_in(&d.table.properties[i], p.storage()))
            .and_then(|stored| decode(p, stored));
        let Some(v) = value else { continue };
        if !first {
            b.push(b',');
        }
        first = false;
        b.extend_from_slice(key);
        push_value(&mut b, &v);
    }
    b.extend_from_slice(b"}}");
    Rendered {
        row,
        bytes: b,
        split,
    }
}

/// A value as the piece document's `Cell` serializes it.
fn push_value(out: &mut Vec<u8>, v: &PropertyValue<'_>) {
    match *v {
        PropertyValue::Enum {
            number: Some(n), ..
        } => push_number(out, n),
        PropertyValue::Enum { name, .. } => push_str(out, name),
        PropertyValue::Integer(i) => push_int(out, i),
        PropertyValue::Float(f) => push_number(out, f),
        PropertyValue::Text(t) => push_str(out, t),
    }
}

/// An integral number as an integer, any other as a float.
fn push_number(out: &mut Vec<u8>, n: f64) {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        push_int(out, n as i64);
    } else {
        push_f64(out, n);
    }
}

// The references are destructured whole: a field added to their types stops the build here
// until the writer writes it too.

fn push_road_ref(out: &mut Vec<u8>, v: &RoadRefStretch) {
    let RoadRefStretch {
        fylke,
        kommune,
        kategori,
        status,
        nummer,
        hp,
        fra_meter,
        til_meter,
        kortform,
    } = v;
    out.extend_from_slice(b"{\"fylke\":");
    push_int(out, *fylke);
    out.extend_from_slice(b",\"kommune\":");
    push_int(out, *kommune);
    out.extend_from_slice(b",\"kategori\":");
    push_char(out, *kategori);
    out.extend_from_slice(b",\"status\":");
    push_char(out, *status);
    out.extend_from_slice(b",\"nummer\":");
    push_int(out, *nummer);
    out.extend_from_slice(b",\"hp\":");
    push_int(out, *hp);
    out.extend_from_slice(b",\"fra_meter\":");
    push_int(out, *fra_meter);
    out.extend_from_slice(b",\"til_meter\":");
    push_int(out, *til_meter);
    out.extend_from_slice(b",\"kortform\":");
    push_str(out, kortform);
    out.push(b'}');
}

/// `"id":…,"versjon":…,` where they are (serde leaves each out when None).
fn push_object_ref(out: &mut Vec<u8>, id: Option<u64>, versjon: Option<u32>) {
    if let Some(id) = id {
        out.extend_from_slice(b"\"id\":");
        push_int(out, id);
        out.push(b',');
    }
    if let Some(v) = versjon {
        out.extend_from_slice(b"\"versjon\":");
        push_int(out, v);
        out.push(b',');
    }
}

fn push_system_ref(out: &mut Vec<u8>, v: &SystemRefStretch) {
    let SystemRefStretch {
        vegsystem,
        strekning,
        kortform,
    } = v;
    let RoadSystemDoc {
        id,
        versjon,
        vegkategori,
        fase,
        nummer,
    } = vegsystem;
    out.extend_from_slice(b"{\"vegsystem\":{");
    push_object_ref(out, *id, *versjon);
    out.extend_from_slice(b"\"vegkategori\":");
    push_char(out, *vegkategori);
    out.extend_from_slice(b",\"fase\":");
    push_char(out, *fase);
    out.extend_from_slice(b",\"nummer\":");
    push_int(out, *nummer);
    let SectionStretchDoc {
        id,
        versjon,
        strekning,
        delstrekning,
        arm,
        adskilte_lop,
        trafikantgruppe,
        fra_meter,
        til_meter,
        retning,
    } = strekning;
    out.extend_from_slice(b"},\"strekning\":{");
    push_object_ref(out, *id, *versjon);
    out.extend_from_slice(b"\"strekning\":");
    push_int(out, *strekning);
    out.extend_from_slice(b",\"delstrekning\":");
    push_int(out, *delstrekning);
    out.extend_from_slice(if *arm {
        b",\"arm\":true"
    } else {
        b",\"arm\":false"
    });
    out.extend_from_slice(",\"adskilte_løp\":".as_bytes());
    push_str(out, adskilte_lop);
    out.extend_from_slice(b",\"trafikantgruppe\":");
    push_char(out, *trafikantgruppe);
    out.extend_from_slice(b",\"fra_meter\":");
    push_int(out, *fra_meter);
    out.extend_from_slice(b",\"til_meter\":");
    push_int(out, *til_meter);
    out.extend_from_slice(b",\"retning\":");
    push_str(out, retning);
    out.extend_from_slice(b"},\"kortform\":");
    push_str(out, kortform);
    out.push(b'}');
}

fn push_int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// A float as serde_json writes it: its shortest round-trip text, `null` when not finite.
fn push_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    push_str(out, c.encode_utf8(&mut [0u8; 4]));
}

/// A JSON string as serde_json writes it: as it is when nothing in it is escaped (quotes,
/// backslashes and control characters are), else by serde_json.
fn push_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // (writing into a Vec does not fail)
        let _ = serde_json::to_writer(&mut *out, s);
    }
}
