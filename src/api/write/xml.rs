//! XML of the write API (namespace `http://nvdb.vegvesen.no/apiskriv/domain/v2`, faults in
//! `http://nvdb.vegvesen.no/apiskriv/fault/v1`).
//!
//! Reading: an XML document becomes the JSON value the JSON reader would see (attributes and
//! child elements are fields, repeated elements lists, the XSD's wrapper elements `vegObjekter`,
//! `egenskaper`, `assosiasjoner` lists of their children), so both formats share one model and
//! one validation. Namespace prefixes are ignored.
//!
//! Writing: the response documents (resource links, fremdrift, status, the overview, faults)
//! are typed structs rendered to JSON by serde_json and to XML by the read API's serializer
//! (`api::xml`) with this module's [`write_style`]: the namespace on the root, the XSDs'
//! attributes (`<ressurs rel src/>`, `<feil kode>`, `<vegObjekt tempId nvdbId>`) and the
//! optional `feil`/`advarsel` lists left out when empty. The changeset document itself
//! (`GET /endringssett/{id}` with its status, the converters' output) is the typed model
//! (`changeset::model`, wrapped in `endringssett::ChangesetDoc`) rendered the same way with
//! [`changeset_document`]'s style, which mirrors the reader: scalars are attributes except the
//! XSD's element scalars, `vegObjekter`/`egenskaper`/`assosiasjoner` wrap their items, and the
//! other lists repeat their element (`<verdi>1</verdi><verdi>2</verdi>`). Attributes that the
//! model serialises after child elements (`operasjon`, `kaskadeSletting`) are inserted into
//! the start tag by `api::xml`.

use quick_xml::events::Event;
use quick_xml::Reader;
use serde_json::{Map, Value};

/// Why an XML request body cannot be read: the fault message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct XmlError(String);

impl From<String> for XmlError {
    fn from(message: String) -> Self {
        XmlError(message)
    }
}

impl From<&str> for XmlError {
    fn from(message: &str) -> Self {
        XmlError(message.to_string())
    }
}

pub const DOMAIN_NS: &str = "http://nvdb.vegvesen.no/apiskriv/domain/v2";
pub const FAULT_NS: &str = "http://nvdb.vegvesen.no/apiskriv/fault/v1";
/// Deepest element nesting accepted (a changeset needs 8).
const MAX_DEPTH: usize = 32;

const WRAPPERS: [&str; 3] = ["vegObjekter", "egenskaper", "assosiasjoner"];

struct Element {
    name: String,
    fields: Map<String, Value>,
    text: String,
    has_children: bool,
}

fn local(s: &str) -> String {
    match s.rsplit_once(':') {
        Some((_, l)) => l.to_string(),
        None => s.to_string(),
    }
}

fn open(e: &quick_xml::events::BytesStart) -> Result<Element, XmlError> {
    let mut fields = Map::new();
    for a in e.attributes() {
        let a = a.map_err(|e| format!("ugyldig XML-attributt: {e}"))?;
        let key = local(a.key.as_ref());
        if a.key.as_ref().starts_with("xmlns") {
            continue;
        }
        let v = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| format!("ugyldig XML-attributt: {e}"))?;
        fields.insert(key, Value::String(v.into_owned()));
    }
    Ok(Element {
        name: local(e.name().as_ref()),
        fields,
        text: String::new(),
        has_children: false,
    })
}

fn close(e: Element) -> Value {
    if WRAPPERS.contains(&e.name.as_str()) {
        // <vegObjekter><vegObjekt/>...</vegObjekter> -> [ ... ]
        let items = e
            .fields
            .into_iter()
            .flat_map(|(_, v)| match v {
                Value::Array(a) => a,
                v => vec![v],
            })
            .collect();
        return Value::Array(items);
    }
    if e.fields.is_empty() && !e.has_children {
        return Value::String(e.text.trim().to_string());
    }
    Value::Object(e.fields)
}

fn add_child(parent: &mut Element, name: String, value: Value) {
    parent.has_children = true;
    match parent.fields.get_mut(&name) {
        None => {
            parent.fields.insert(name, value);
        }
        Some(Value::Array(list)) if !WRAPPERS.contains(&name.as_str()) => list.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
    }
}

/// Parse an XML document into (root element name, value).
pub fn parse(bytes: &[u8]) -> Result<(String, Value), XmlError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| "XML-dokumentet er ikke UTF-8".to_string())?;
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("ugyldig XML ved posisjon {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH {
                    return Err("XML-dokumentet er for dypt nøstet".into());
                }
                stack.push(open(&e)?);
            }
            Event::Empty(e) => {
                let el = open(&e)?;
                let name = el.name.clone();
                let v = close(el);
                match stack.last_mut() {
                    Some(parent) => add_child(parent, name.clone(), v),
                    None => return Ok((name, v)),
                }
            }
            Event::End(_) => {
                let el = stack.pop().ok_or("uventet slutt-tagg")?;
                let name = el.name.clone();
                let v = close(el);
                match stack.last_mut() {
                    Some(parent) => add_child(parent, name, v),
                    None => return Ok((name, v)),
                }
            }
            Event::Text(t) => {
                if let Some(el) = stack.last_mut() {
                    let raw: &str = &t;
                    let s = quick_xml::escape::unescape(raw)
                        .map_err(|e| format!("ugyldig XML-tekst: {e}"))?;
                    el.text.push_str(&s);
                }
            }
            Event::CData(t) => {
                if let Some(el) = stack.last_mut() {
                    el.text.push_str(&t);
                }
            }
            Event::GeneralRef(r) => {
                if let Some(el) = stack.last_mut() {
                    if let Ok(Some(c)) = r.resolve_char_ref() {
                        el.text.push(c);
                    } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(&r) {
                        el.text.push_str(s);
                    } else {
                        return Err(format!("ukjent XML-entitet &{};", &*r).into());
                    }
                }
            }
            Event::DocType(_) => return Err("DOCTYPE er ikke tillatt".into()),
            Event::Eof => return Err("XML-dokumentet slutter for tidlig".into()),
            _ => {}
        }
    }
}

/// Fields the write API's XSDs declare as attributes, by element.
pub const ATTRIBUTES: &[(&str, &str)] = &[
    ("ressurs", "rel"),
    ("ressurs", "src"),
    ("feil", "kode"),
    ("advarsel", "kode"),
    ("vegObjekt", "tempId"),
    ("vegObjekt", "nvdbId"),
    ("endringssett", "id"),
    ("endringssett", "href"),
    ("binaer", "ressursId"),
    ("binaer", "href"),
];

/// The attributes of the changeset document (`endringssett.xsd`): scalars are attributes
/// except the few the XSD declares as elements (`id`, `ansvarlig`, `sluttDato`, `verdi`,
/// `enum`, the association's `nvdbId`/`tempId`); with the status document's attributes, as
/// `GET /endringssett/{id}` embeds it.
pub const CHANGESET_ATTRIBUTES: &[(&str, &str)] = &[
    ("endringssett", "effektDato"),
    ("endringssett", "datakatalogversjon"),
    ("vegObjekt", "typeId"),
    ("vegObjekt", "tempId"),
    ("vegObjekt", "nvdbId"),
    ("vegObjekt", "versjon"),
    ("vegObjekt", "kaskadeSletting"),
    ("egenskap", "typeId"),
    ("egenskap", "operasjon"),
    ("medlem", "typeId"),
    ("binaer", "ressursId"),
    ("binaer", "nvdbId"),
    ("binaer", "format"),
    ("assosiasjon", "typeId"),
    ("assosiasjon", "operasjon"),
    ("lokasjon", "operasjon"),
    ("punkt", "lenkeId"),
    ("punkt", "posisjon"),
    ("punkt", "retning"),
    ("punkt", "sidePosisjon"),
    ("punkt", "felt"),
    ("linje", "lenkeId"),
    ("linje", "fra"),
    ("linje", "til"),
    ("linje", "retning"),
    ("linje", "sidePosisjon"),
    ("linje", "felt"),
    ("sving", "nodeId"),
    ("fra", "lenkeId"),
    ("fra", "posisjon"),
    ("fra", "retning"),
    ("fra", "sidePosisjon"),
    ("fra", "felt"),
    ("til", "lenkeId"),
    ("til", "posisjon"),
    ("til", "retning"),
    ("til", "sidePosisjon"),
    ("til", "felt"),
    // the embedded status document
    ("ressurs", "rel"),
    ("ressurs", "src"),
    ("feil", "kode"),
    ("advarsel", "kode"),
];

/// The changeset's unbounded elements: repeated without a wrapper (only `vegObjekter`,
/// `egenskaper` and `assosiasjoner` wrap their items, as [`WRAPPERS`] reads them).
pub const CHANGESET_BARE_LISTS: &[&str] = &[
    "verdi", "enum", "struktur", "binaer", "medlem", "nvdbId", "tempId", "punkt", "linje", "sving",
];

/// Optional lists of the XSDs, left out when empty.
pub const OPTIONAL_LISTS: &[&str] = &["feil", "advarsel"];

/// The XML style of a write-API document in namespace `ns` (None: a fragment to embed).
pub fn write_style(ns: Option<&str>) -> crate::api::xml::XmlStyle<'_> {
    crate::api::xml::XmlStyle {
        namespace: ns,
        attributes: ATTRIBUTES,
        omit_empty: OPTIONAL_LISTS,
        bare_lists: &[],
        fragment: ns.is_none(),
    }
}

/// A changeset document (`endringssett`, possibly with `status` and `etterbehandling`) as XML:
/// the inverse of [`parse`] for the changeset model.
pub fn changeset_document<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<Vec<u8>, crate::api::xml::XmlError> {
    crate::api::xml::to_xml(
        crate::api::xml::XmlRoot::named("endringssett"),
        value,
        false,
        crate::api::xml::XmlStyle {
            namespace: Some(DOMAIN_NS),
            attributes: CHANGESET_ATTRIBUTES,
            omit_empty: OPTIONAL_LISTS,
            bare_lists: CHANGESET_BARE_LISTS,
            fragment: false,
        },
    )
}

/// A write-API document as XML: root `root` in namespace `ns`.
pub fn document<T: serde::Serialize + ?Sized>(
    root: &str,
    ns: &str,
    value: &T,
) -> Result<Vec<u8>, crate::api::xml::XmlError> {
    crate::api::xml::to_xml(
        crate::api::xml::XmlRoot::named(root),
        value,
        false,
        write_style(Some(ns)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_changeset_reads_like_json() {
        let xml = r#"<?xml version="1.0"?>
<endringssett xmlns="http://nvdb.vegvesen.no/apiskriv/domain/v2" effektDato="2015-02-26" datakatalogversjon="2.01">
  <registrer><vegObjekter>
    <vegObjekt typeId="95" tempId="1">
      <egenskaper>
        <egenskap typeId="1884"><verdi>0.30</verdi></egenskap>
        <egenskap typeId="1876"><enum>2868</enum></egenskap>
      </egenskaper>
      <lokasjon><punkt lenkeId="1125766" posisjon="0.3"/></lokasjon>
      <assosiasjoner><assosiasjon typeId="220"><tempId>2</tempId><tempId>3</tempId></assosiasjon></assosiasjoner>
    </vegObjekt>
  </vegObjekter></registrer>
</endringssett>"#;
        let (root, v) = parse(xml.as_bytes()).unwrap();
        assert_eq!(root, "endringssett");
        let c: crate::changeset::model::Changeset = serde_json::from_value(v).unwrap();
        let o = &c.register.objects[0];
        assert_eq!(o.type_id, 95);
        assert_eq!(o.properties.len(), 2);
        assert_eq!(o.properties[1].enum_ids, vec![2868]);
        assert_eq!(o.associations[0].temp_ids, vec!["2", "3"]);
        assert_eq!(o.location.as_ref().unwrap().points[0].link_id, 1125766);
    }

    #[test]
    fn malformed_xml_is_an_error() {
        assert!(parse(b"<endringssett><registrer></endringssett>").is_err());
        assert!(parse(b"<a>").is_err());
        assert!(parse(b"<!DOCTYPE x [<!ENTITY a 'b'>]><a>&a;</a>").is_err());
    }
}
