//! The serializable shapes of a road object (v2 names), with borrowed fields and texts written
//! lazily through `Display`, so a page streams without intermediate strings or JSON trees.

use serde::Serialize;

use crate::catalog::Unit;
use crate::query::objects::Part;
use crate::query::vegref::RoadKey;
use crate::snapshot::columns::DIRECTION_AGAINST;

/// Text written straight into the output by `Display` (no intermediate String).
macro_rules! serialize_as_display {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

/// `YYYY-MM-DD`
pub struct DateText(pub crate::snapshot::columns::Days);
impl std::fmt::Display for DateText {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (y, m, d) = super::dto::civil(self.0 as i64);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}
serialize_as_display!(DateText);

/// `YYYY-MM-DDTHH:MM:SS` (revision 2) or with a space (revisions 0 and 1).
pub struct DateTimeText(pub i64, pub bool);
impl std::fmt::Display for DateTimeText {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (y, m, d) = super::dto::civil(self.0.div_euclid(86_400));
        let t = self.0.rem_euclid(86_400);
        let sep = if self.1 { 'T' } else { ' ' };
        write!(
            f,
            "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}",
            t / 3600,
            t % 3600 / 60,
            t % 60
        )
    }
}
serialize_as_display!(DateTimeText);

/// An object's href.
pub struct HrefText<'a> {
    pub base: &'a str,
    pub type_id: u32,
    pub id: u64,
}
impl std::fmt::Display for HrefText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "{}{}/vegobjekter/{}/{}",
            self.base,
            super::READ_BASE,
            self.type_id,
            self.id
        )
    }
}
serialize_as_display!(HrefText<'_>);

/// A road reference's kortform: `1800 Ev6 hp23 m17084` or `... m17084-17117`.
pub struct RoadRefText {
    pub key: RoadKey,
    pub from_m: u32,
    pub to_m: u32,
}
impl std::fmt::Display for RoadRefText {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let k = &self.key;
        write!(
            f,
            "{:02}{:02} {}{}{} hp{} m{}",
            k.county,
            k.municipality_part,
            k.category as char,
            (k.status as char).to_ascii_lowercase(),
            k.number,
            k.hp,
            self.from_m
        )?;
        if self.to_m != self.from_m {
            write!(f, "-{}", self.to_m)?;
        }
        Ok(())
    }
}
serialize_as_display!(RoadRefText);

/// A link position or range: `0.3@1125766`, `0.1-0.5@7` (positions with 1–8 decimals).
pub struct LinkPosText {
    pub from: f64,
    pub to: f64,
    pub link_id: u64,
}
fn write_position(f: &mut std::fmt::Formatter, p: f64) -> std::fmt::Result {
    let mut buf = [0u8; 32];
    let mut cur = std::io::Cursor::new(&mut buf[..]);
    use std::io::Write as _;
    let _ = write!(cur, "{:.8}", (p * 1e8).round() / 1e8);
    let n = cur.position() as usize;
    let text = std::str::from_utf8(&buf[..n]).map_err(|_| std::fmt::Error)?;
    let mut t = text.trim_end_matches('0');
    if t.ends_with('.') {
        t = &text[..t.len() + 1];
    }
    f.write_str(t)
}
impl std::fmt::Display for LinkPosText {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write_position(f, self.from)?;
        if self.to != self.from {
            f.write_str("-")?;
            write_position(f, self.to)?;
        }
        write!(f, "@{}", self.link_id)
    }
}
serialize_as_display!(LinkPosText);

/// Static one-letter strings for road category and status letters.
fn letter(b: u8) -> &'static str {
    const L: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ?";
    let i = if b.is_ascii_uppercase() {
        (b - b'A') as usize
    } else {
        26
    };
    &L[i..i + 1]
}

#[derive(Serialize)]
pub struct GeometryDoc {
    pub wkt: String,
    pub srid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egengeometri: Option<bool>,
}

#[derive(Serialize)]
pub struct TypeRefDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
}

#[derive(Serialize)]
pub struct MetadataDoc<'a> {
    #[serde(rename = "type")]
    pub kind: TypeRefDoc<'a>,
    pub versjon: u32,
    pub startdato: DateText,
    pub sist_modifisert: DateTimeText,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sluttdato: Option<DateText>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum VerdiDoc<'a> {
    Int(i64),
    Float(f64),
    Text(&'a str),
    Owned(String),
}

#[derive(Serialize)]
pub struct PropertyDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub datatype: u16,
    pub datatype_tekst: &'a str,
    pub verdi: VerdiDoc<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enhet: Option<&'a Unit>,
}

#[derive(Serialize)]
pub struct RoadRefDoc {
    pub fylke: u8,
    pub kommune: u8,
    pub kategori: &'static str,
    pub status: &'static str,
    pub nummer: u32,
    pub hp: u16,
    pub fra_meter: u32,
    pub til_meter: u32,
    pub kortform: RoadRefText,
}

impl RoadRefDoc {
    pub(crate) fn new(k: &RoadKey, from_m: u32, to_m: u32) -> Self {
        RoadRefDoc {
            fylke: k.county,
            kommune: k.municipality_part,
            kategori: letter(k.category),
            status: letter(k.status),
            nummer: k.number,
            hp: k.hp,
            fra_meter: from_m,
            til_meter: to_m,
            kortform: RoadRefText {
                key: *k,
                from_m,
                to_m,
            },
        }
    }
}

#[derive(Serialize)]
pub struct PlacementDoc {
    pub veglenkeid: u64,
    pub fra_posisjon: f64,
    pub til_posisjon: f64,
    pub kortform: LinkPosText,
    pub retning: &'static str,
}

impl PlacementDoc {
    pub(crate) fn new(p: &Part) -> Self {
        PlacementDoc {
            veglenkeid: p.link_id,
            fra_posisjon: p.from,
            til_posisjon: p.to,
            kortform: LinkPosText {
                from: p.from,
                to: p.to,
                link_id: p.link_id,
            },
            retning: if p.direction == DIRECTION_AGAINST {
                "MOT"
            } else {
                "MED"
            },
        }
    }
}

#[derive(Serialize)]
pub struct ContractDoc<'a> {
    pub nummer: u32,
    pub navn: &'a str,
}

#[derive(Serialize)]
pub struct RouteDoc<'a> {
    pub nummer: &'a str,
    pub navn: &'a str,
    pub periode: &'a str,
}

#[derive(Serialize)]
pub struct LocationDoc<'a> {
    pub kommuner: Vec<u16>,
    pub fylker: Vec<u8>,
    pub regioner: Vec<u8>,
    pub vegavdelinger: Vec<u8>,
    #[serde(rename = "kontraktsområder")]
    pub kontraktsomrader: Vec<ContractDoc<'a>>,
    pub riksvegruter: Vec<RouteDoc<'a>>,
    pub vegreferanser: Vec<RoadRefDoc>,
    pub stedfestinger: Vec<PlacementDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometri: Option<GeometryDoc>,
    pub strekningslengde: f64,
}

#[derive(Serialize)]
pub struct RelatedDoc<'a> {
    #[serde(rename = "type")]
    pub kind: TypeRefDoc<'a>,
    pub vegobjekter: Vec<u64>,
}

#[derive(Serialize)]
pub struct RelationsDoc<'a> {
    pub foreldre: Vec<RelatedDoc<'a>>,
    pub barn: Vec<RelatedDoc<'a>>,
}

#[derive(Serialize)]
pub struct SegmentDoc {
    pub veglenkeid: u64,
    pub fra_posisjon: f64,
    pub til_posisjon: f64,
    pub kortform: LinkPosText,
    pub retning: &'static str,
    pub vegreferanse: RoadRefDoc,
    pub kommune: u16,
    pub fylke: u8,
    pub region: u8,
    pub vegavdeling: u8,
    pub strekningslengde: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometri: Option<GeometryDoc>,
}

/// A road object, serialized directly (static keys, borrowed names).
#[derive(Serialize)]
pub struct ObjectDoc<'a> {
    pub id: u64,
    pub href: HrefText<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<MetadataDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egenskaper: Option<Vec<PropertyDoc<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometri: Option<GeometryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lokasjon: Option<LocationDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relasjoner: Option<RelationsDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vegsegmenter: Option<Vec<SegmentDoc>>,
}
