//! XML output for any `serde::Serialize` value, by one rule derived from the JSON shape (the
//! style of the write API's XSDs). The v2 documentation promises XML on every endpoint but keeps
//! no example of the read API's XML, so this is the rule (ARCHITECTURE.md repeats it):
//!
//! 1. An object field becomes a child element named as the JSON key, in the JSON's order.
//! 2. A list becomes an element holding one child per item, each named by the singular of the
//!    list's name (`<egenskaper><egenskap>…</egenskap></egenskaper>`); the singular comes from
//!    [`singular`]'s table, and a name the table does not know is repeated
//!    (`<felt><felt>1</felt></felt>`, as the write API's `<feil><feil>`).
//! 3. A scalar becomes the element's text, written exactly as JSON writes it, without the quotes
//!    of strings (`80`, `80.5`, `true`, `LINESTRING Z (…)`); text is escaped (`&lt;` etc.).
//! 4. `null` and absent fields are left out (no element).
//! 5. The document's root element is named by the resource (given by the caller): a top-level
//!    list is `<vegobjekttyper><vegobjekttype>…`, a top-level object is the root's fields.
//! 6. A key that is not an XML name (e.g. `/veg/batch`'s `0.5@123`, or a name beginning with
//!    `xml`) becomes `<oppføring nøkkel="0.5@123">` (attribute = the key as sent).
//! 7. `pretty` indents by two spaces per level; otherwise no whitespace is added.
//!
//! For documents with an XSD (the write API) an [`XmlStyle`] adds a namespace on the root and
//! names fields written as attributes of their element (`<ressurs rel="self" src="…"/>`).
//! An attribute field may come after the element's child elements (the changeset model writes
//! `operasjon` last): it is then inserted into the element's start tag, which is still in the
//! buffer. The style can also leave out optional list wrappers when empty (`omit_empty`), write
//! named lists as repeated elements without a wrapper (`bare_lists`, the XSDs' unbounded
//! elements such as `<verdi>` and `<punkt>`) and write a fragment without the XML declaration
//! (to embed a document in another).
//!
//! The serializer writes while serde drives it: a streamed page (e.g. `StreamedObjects`) is
//! rendered object by object, never as a tree.

use std::borrow::Cow;
use std::fmt;

use serde::ser::{self, Serialize};

/// Element used for keys that are not XML names (rule 6), and its attribute.
pub const ENTRY: &str = "oppføring";
pub const ENTRY_KEY: &str = "nøkkel";
/// serde container name of a paginated list envelope: its root is the resource's list name.
pub const LIST_ENVELOPE: &str = "$liste";

/// The singular of a list element's name (rule 2): a table of the API's list names; unknown
/// names are repeated.
pub fn singular(plural: &str) -> &str {
    match plural {
        "vegobjekttyper" => "vegobjekttype",
        "egenskapstyper" => "egenskapstype",
        "egenskaper" => "egenskap",
        "tillatte_verdier" => "tillatt_verdi",
        "kategorier" => "kategori",
        "enheter" => "enhet",
        "datatyper" => "datatype",
        "foreldre" => "forelder",
        "barn" => "barn",
        "objekter" => "objekt",
        "vegobjekter" => "vegobjekt",
        "stedfestinger" => "stedfesting",
        "vegsegmenter" => "vegsegment",
        "omrader" => "omrade",
        "regioner" => "region",
        "fylker" => "fylke",
        "vegavdelinger" => "vegavdeling",
        "kommuner" => "kommune",
        "kontraktsomrader" => "kontraktsomrade",
        "kontraktsområder" => "kontraktsområde",
        "riksvegruter" => "riksvegrute",
        "lenker" => "lenke",
        "veglenker" => "veglenke",
        "noder" => "node",
        "porter" => "port",
        "endringer" => "endring",
        "versjoner" => "versjon",
        "posisjoner" => "posisjon",
        "vegreferanser" => "vegreferanse",
        "vegsystemreferanser" => "vegsystemreferanse",
        "geometrier" => "geometri",
        "verdier" => "verdi",
        "ressurser" => "ressurs",
        "vegObjekter" => "vegObjekt",
        "assosiasjoner" => "assosiasjon",
        "endringssettliste" => "endringssett",
        "statuser" => "status",
        other => other,
    }
}

/// Whether `s` can be used as an element name as it is (an XML 1.0 Name without `:`, not
/// starting with the reserved `xml`).
pub fn is_xml_name(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !(first.is_alphabetic() || first == '_') || s.to_ascii_lowercase().starts_with("xml") {
        return false;
    }
    chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '\u{B7}'))
}

/// Options of one XML document beyond the rule: a namespace on the root and attribute fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct XmlStyle<'a> {
    /// `xmlns` of the root element.
    pub namespace: Option<&'a str>,
    /// (element, field) pairs written as attributes of that element.
    pub attributes: &'a [(&'a str, &'a str)],
    /// List elements left out when empty (the XSD's optional wrappers, e.g. `feil`).
    pub omit_empty: &'a [&'a str],
    /// Lists written as one element per item, each named as the list, without a wrapper
    /// (`"verdi": ["1", "2"]` → `<verdi>1</verdi><verdi>2</verdi>`).
    pub bare_lists: &'a [&'a str],
    /// No XML declaration: a fragment to embed in a larger document.
    pub fragment: bool,
}

/// The root element's name: `list` for a top-level list (or list envelope), `single` for
/// anything else (e.g. `vegobjekter` / `vegobjekt` for `/vegobjekter/105/1`).
#[derive(Debug, Clone, Copy)]
pub struct XmlRoot<'a> {
    pub list: &'a str,
    pub single: &'a str,
}

impl<'a> XmlRoot<'a> {
    /// The same name for lists and single values.
    pub fn named(name: &'a str) -> XmlRoot<'a> {
        XmlRoot {
            list: name,
            single: name,
        }
    }
}

#[derive(Debug)]
pub struct XmlError(String);

impl fmt::Display for XmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for XmlError {}
impl ser::Error for XmlError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        XmlError(msg.to_string())
    }
}

/// Render `value` as an XML document.
pub fn to_xml<T: Serialize + ?Sized>(
    root: XmlRoot<'_>,
    value: &T,
    pretty: bool,
    style: XmlStyle<'_>,
) -> Result<Vec<u8>, XmlError> {
    let mut w = Writer {
        out: Vec::with_capacity(4096),
        pretty,
        depth: 0,
        tag_open: false,
        style,
        root: Some(root),
    };
    if !style.fragment {
        w.out
            .extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    }
    value.serialize(ElementSer {
        w: &mut w,
        name: Cow::Owned(root.single.to_string()),
        parent: "",
        parent_start: 0,
    })?;
    if pretty && !style.fragment {
        w.out.push(b'\n');
    }
    Ok(w.out)
}

struct Writer<'s> {
    out: Vec<u8>,
    pretty: bool,
    depth: usize,
    /// The last start tag is still open (`<name a="1"` without `>`): attributes may follow.
    tag_open: bool,
    style: XmlStyle<'s>,
    /// Set until the root element is started.
    root: Option<XmlRoot<'s>>,
}

fn escape_into(out: &mut Vec<u8>, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' if attribute => out.extend_from_slice(b"&quot;"),
            '\r' => out.extend_from_slice(b"&#13;"),
            '\t' | '\n' if attribute => {
                out.extend_from_slice(format!("&#{};", c as u32).as_bytes())
            }
            // characters XML 1.0 cannot carry at all: written as U+FFFD
            c if (c < ' ' && !matches!(c, '\t' | '\n')) || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.extend_from_slice("\u{FFFD}".as_bytes())
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
}

fn attribute_into(out: &mut Vec<u8>, key: &str, value: &str) {
    out.push(b' ');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"=\"");
    escape_into(out, value, true);
    out.push(b'"');
}

impl Writer<'_> {
    fn close_tag(&mut self) {
        if self.tag_open {
            self.out.push(b'>');
            self.tag_open = false;
        }
    }

    fn newline(&mut self) {
        if self.pretty {
            self.out.push(b'\n');
            for _ in 0..self.depth {
                self.out.extend_from_slice(b"  ");
            }
        }
    }

    /// Write `<name` (left open); a name that is not an XML name becomes the entry element.
    /// Returns where the start tag begins.
    fn start(&mut self, name: &str) -> usize {
        self.close_tag();
        self.newline();
        let at = self.out.len();
        self.out.push(b'<');
        if is_xml_name(name) {
            self.out.extend_from_slice(name.as_bytes());
        } else {
            self.out.extend_from_slice(ENTRY.as_bytes());
            self.attribute(ENTRY_KEY, name);
        }
        if self.root.take().is_some() {
            if let Some(ns) = self.style.namespace {
                self.attribute("xmlns", ns);
            }
        }
        self.tag_open = true;
        at
    }

    fn attribute(&mut self, key: &str, value: &str) {
        let mut a = Vec::with_capacity(key.len() + value.len() + 4);
        attribute_into(&mut a, key, value);
        self.out.extend_from_slice(&a);
    }

    /// An attribute of the element whose start tag begins at `start` and is already closed
    /// (children follow): inserted before that tag's `>`. Attribute values escape `>`, so the
    /// first `>` after `start` ends the tag.
    fn late_attribute(&mut self, start: usize, key: &str, value: &str) -> Result<(), XmlError> {
        let end = self
            .out
            .get(start..)
            .and_then(|tail| tail.iter().position(|&b| b == b'>'))
            .map(|i| start + i)
            .ok_or_else(|| XmlError(format!("no start tag for attribute {key}")))?;
        let mut a = Vec::with_capacity(key.len() + value.len() + 4);
        attribute_into(&mut a, key, value);
        self.out.splice(end..end, a);
        Ok(())
    }

    fn end(&mut self, name: &str, had_children: bool) {
        if self.tag_open {
            self.out.extend_from_slice(b"/>");
            self.tag_open = false;
            return;
        }
        if had_children {
            self.newline();
        }
        self.out.extend_from_slice(b"</");
        if is_xml_name(name) {
            self.out.extend_from_slice(name.as_bytes());
        } else {
            self.out.extend_from_slice(ENTRY.as_bytes());
        }
        self.out.push(b'>');
    }

    fn leaf(&mut self, name: &str, text: &str) {
        let _ = self.start(name);
        self.close_tag();
        escape_into(&mut self.out, text, false);
        self.end(name, false);
    }

    fn is_attribute(&self, element: &str, field: &str) -> bool {
        self.style
            .attributes
            .iter()
            .any(|&(e, f)| e == element && f == field)
    }
}

/// Serializes one value as the element `name` (child of `parent`).
struct ElementSer<'w, 's, 'p> {
    w: &'w mut Writer<'s>,
    name: Cow<'static, str>,
    parent: &'p str,
    /// Where the parent's start tag begins (for attributes after its children).
    parent_start: usize,
}

impl<'w, 's> ElementSer<'w, 's, '_> {
    fn scalar(self, text: &str) -> Result<(), XmlError> {
        if self.w.is_attribute(self.parent, &self.name) {
            if self.w.tag_open {
                self.w.attribute(&self.name, text);
                return Ok(());
            }
            return self.w.late_attribute(self.parent_start, &self.name, text);
        }
        self.w.leaf(&self.name, text);
        Ok(())
    }

    fn json_scalar<T: Serialize>(self, v: T) -> Result<(), XmlError> {
        let text = serde_json::to_string(&v).map_err(|e| XmlError(e.to_string()))?;
        if text == "null" {
            return ser::Serializer::serialize_none(self); // non-finite floats: JSON writes null
        }
        self.scalar(&text)
    }

    /// Open a container element; `list` picks the root's list name at top level.
    fn container(self, list: bool) -> Container<'w, 's> {
        let name: Cow<'static, str> = match self.w.root {
            Some(r) if list => Cow::Owned(r.list.to_string()),
            Some(r) => Cow::Owned(r.single.to_string()),
            None => self.name,
        };
        let start = self.w.start(&name);
        self.w.depth += 1;
        let item = Cow::Owned(singular(&name).to_string());
        Container {
            w: self.w,
            name,
            item,
            start,
            children: false,
            key: None,
            outer: None,
            silent: false,
        }
    }

    /// A list the style leaves out when empty writes nothing; a bare list writes its items
    /// into the parent, each named as the list.
    fn list(self, len: Option<usize>) -> Container<'w, 's> {
        let nested = self.w.root.is_none();
        let omitted = len == Some(0) && nested && self.w.style.omit_empty.contains(&&*self.name);
        if omitted || (nested && self.w.style.bare_lists.contains(&&*self.name)) {
            return Container {
                w: self.w,
                item: self.name.clone(),
                name: self.name,
                start: self.parent_start,
                children: false,
                key: None,
                outer: None,
                silent: true,
            };
        }
        self.container(true)
    }

    /// `{"Variant": …}` as JSON writes an enum variant with data: the element holds an element
    /// named by the variant, which holds the data.
    fn variant_container(self, variant: &'static str) -> Container<'w, 's> {
        let outer = self.container(false);
        let start = outer.w.start(variant);
        outer.w.depth += 1;
        let item = Cow::Owned(singular(variant).to_string());
        Container {
            w: outer.w,
            name: Cow::Borrowed(variant),
            item,
            start,
            children: false,
            key: None,
            outer: Some(outer.name),
            silent: false,
        }
    }
}

struct Container<'w, 's> {
    w: &'w mut Writer<'s>,
    name: Cow<'static, str>,
    /// Name of list items.
    item: Cow<'static, str>,
    /// Where this element's start tag begins in the output.
    start: usize,
    children: bool,
    /// Pending map key.
    key: Option<String>,
    /// Enclosing element to close too (enum variants with data).
    outer: Option<Cow<'static, str>>,
    /// An omitted empty list or a bare list: nothing was opened.
    silent: bool,
}

impl Container<'_, '_> {
    fn child<T: Serialize + ?Sized>(
        &mut self,
        name: Cow<'static, str>,
        value: &T,
    ) -> Result<(), XmlError> {
        let before = self.w.out.len();
        value.serialize(ElementSer {
            w: &mut *self.w,
            name,
            parent: &self.name,
            parent_start: self.start,
        })?;
        if self.w.out.len() != before && !self.w.tag_open {
            self.children = true;
        }
        Ok(())
    }

    fn finish(self) -> Result<(), XmlError> {
        if self.silent {
            return Ok(());
        }
        self.w.depth -= 1;
        let had = self.children;
        self.w.end(&self.name, had);
        if let Some(outer) = self.outer {
            self.w.depth -= 1;
            self.w.end(&outer, true);
        }
        Ok(())
    }
}

impl<'w, 's> ser::Serializer for ElementSer<'w, 's, '_> {
    type Ok = ();
    type Error = XmlError;
    type SerializeSeq = Container<'w, 's>;
    type SerializeTuple = Container<'w, 's>;
    type SerializeTupleStruct = Container<'w, 's>;
    type SerializeTupleVariant = Container<'w, 's>;
    type SerializeMap = Container<'w, 's>;
    type SerializeStruct = Container<'w, 's>;
    type SerializeStructVariant = Container<'w, 's>;

    fn serialize_bool(self, v: bool) -> Result<(), XmlError> {
        self.scalar(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<(), XmlError> {
        self.scalar(&v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<(), XmlError> {
        self.json_scalar(v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), XmlError> {
        self.json_scalar(v)
    }
    fn serialize_char(self, v: char) -> Result<(), XmlError> {
        self.scalar(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), XmlError> {
        self.scalar(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), XmlError> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), XmlError> {
        if self.w.root.is_some() {
            // a document needs its root: a top-level null is the empty root element
            let _ = self.w.start(&self.name);
            self.w.end(&self.name, false);
        }
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), XmlError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), XmlError> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), XmlError> {
        self.serialize_none()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), XmlError> {
        self.scalar(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), XmlError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), XmlError> {
        let mut c = self.container(false);
        c.child(Cow::Borrowed(variant), value)?;
        c.finish()
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.list(len))
    }
    fn serialize_tuple(self, _: usize) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.container(true))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.container(true))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.variant_container(variant))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.container(false))
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.container(name == LIST_ENVELOPE))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Container<'w, 's>, XmlError> {
        Ok(self.variant_container(variant))
    }
}

impl ser::SerializeSeq for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        let item = self.item.clone();
        self.child(item, value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeTuple for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeMap for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), XmlError> {
        // keys are strings (or numbers, written as JSON writes them as keys)
        let k = serde_json::to_value(key).map_err(|e| XmlError(e.to_string()))?;
        self.key = Some(match k {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        });
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| XmlError("map value without key".into()))?;
        self.child(Cow::Owned(key), value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeStruct for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), XmlError> {
        self.child(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Container<'_, '_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), XmlError> {
        self.child(Cow::Borrowed(key), value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

#[cfg(test)]
pub mod tests;
