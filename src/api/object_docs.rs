//! The serializable shapes of a road object (v2 names), with borrowed fields and texts written
//! lazily through `Display`, so a page streams without intermediate strings or JSON trees.

use serde::Serialize;

use super::catalog_docs::UnitDoc;
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

/// Two decimal digits of `v` (below 100) at `b[at..at + 2]`.
fn put2(b: &mut [u8], at: usize, v: u32) {
    b[at] = b'0' + (v / 10) as u8;
    b[at + 1] = b'0' + (v % 10) as u8;
}

/// `YYYY-MM-DD` of day `days` into `b[..10]`, when its year has four digits (else false: the
/// `Display` form, which pads and signs any year, is written instead).
fn put_date(b: &mut [u8], days: i64) -> bool {
    let (y, m, d) = super::dto::civil(days);
    if !(0..=9999).contains(&y) {
        return false;
    }
    put2(b, 0, y as u32 / 100);
    put2(b, 2, y as u32 % 100);
    b[4] = b'-';
    put2(b, 5, m);
    b[7] = b'-';
    put2(b, 8, d);
    true
}

/// Serialize ASCII bytes made by the writers above as one string.
fn ascii<S: serde::Serializer>(s: S, b: &[u8]) -> Result<S::Ok, S::Error> {
    match std::str::from_utf8(b) {
        Ok(text) => s.serialize_str(text),
        Err(_) => Err(serde::ser::Error::custom("not ASCII")),
    }
}

/// `DateText(days)` as JSON (quoted) appended to `out`, byte for byte what serde_json writes.
pub fn push_date_json(out: &mut Vec<u8>, days: crate::snapshot::columns::Days) {
    let mut b = [0u8; 10];
    if put_date(&mut b, days as i64) {
        out.push(b'"');
        out.extend_from_slice(&b);
        out.push(b'"');
    } else {
        // (writing into a Vec does not fail)
        let _ = serde_json::to_writer(&mut *out, &DateText(days));
    }
}

/// `DateTimeText(secs, t)` as JSON (quoted) appended to `out`, byte for byte what serde_json
/// writes.
pub fn push_date_time_json(out: &mut Vec<u8>, secs: i64, t: bool) {
    let mut b = [0u8; 19];
    if put_date_time(&mut b, secs, t) {
        out.push(b'"');
        out.extend_from_slice(&b);
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, &DateTimeText(secs, t));
    }
}

/// `YYYY-MM-DD[T ]HH:MM:SS` of `secs` into `b[..19]` when its year has four digits.
fn put_date_time(b: &mut [u8], secs: i64, t: bool) -> bool {
    if !put_date(b, secs.div_euclid(86_400)) {
        return false;
    }
    let s = secs.rem_euclid(86_400) as u32;
    b[10] = if t { b'T' } else { b' ' };
    put2(b, 11, s / 3600);
    b[13] = b':';
    put2(b, 14, s % 3600 / 60);
    b[16] = b':';
    put2(b, 17, s % 60);
    true
}

/// `YYYY-MM-DD`
pub struct DateText(pub crate::snapshot::columns::Days);
impl std::fmt::Display for DateText {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (y, m, d) = super::dto::civil(self.0 as i64);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}
/// The same text as `Display`, written into a stack buffer (lists write one per object).
impl Serialize for DateText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut b = [0u8; 10];
        if put_date(&mut b, self.0 as i64) {
            ascii(s, &b)
        } else {
            s.collect_str(self)
        }
    }
}

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
/// The same text as `Display`, written into a stack buffer (lists write one per object).
impl Serialize for DateTimeText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut b = [0u8; 19];
        if put_date_time(&mut b, self.0, self.1) {
            ascii(s, &b)
        } else {
            s.collect_str(self)
        }
    }
}

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
            super::route::READ_BASE,
            self.type_id,
            self.id
        )
    }
}
/// The same text as `Display`, written into a stack buffer when it fits (lists write one per
/// object).
impl Serialize for HrefText<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        const PATH: &[u8] = b"/vegobjekter/";
        let base = self.base.as_bytes();
        let fixed = [base, super::route::READ_BASE.as_bytes(), PATH];
        let mut b = [0u8; 256];
        let mut at = 0;
        let mut put = |piece: &[u8]| {
            let end = at + piece.len();
            let room = b.get_mut(at..end)?;
            room.copy_from_slice(piece);
            at = end;
            Some(())
        };
        let mut ints = (itoa::Buffer::new(), itoa::Buffer::new());
        let written = fixed.iter().try_for_each(|p| put(p)).and_then(|()| {
            put(ints.0.format(self.type_id).as_bytes())?;
            put(b"/")?;
            put(ints.1.format(self.id).as_bytes())
        });
        match (written, std::str::from_utf8(&b[..at])) {
            (Some(()), Ok(text)) => s.serialize_str(text),
            _ => s.collect_str(self),
        }
    }
}

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

/// A number written as the v2 service wrote numbers: an integral value as an integer token
/// (`80`, `33`), any other finite value as a decimal, and never a negative zero. The v2
/// documentation's examples write integral values of decimal property types as integers too
/// (`"Lengde"` of tunnelløp, 2 decimals: `"verdi": 33`; `endepunkt/vegobjekter.md`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num(pub f64);

/// Integral values with a magnitude below 2^53 are exact as i64.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() && v.fract() == 0.0 && v.abs() < EXACT_INT {
            s.serialize_i64(v as i64)
        } else {
            // + 0.0 turns -0.0 into 0.0 and leaves every other value unchanged
            s.serialize_f64(v + 0.0)
        }
    }
}

/// A relative link position (0..1), always written as a decimal (`0.0`, `0.25899`), never `-0.0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pos(pub f64);

impl Serialize for Pos {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0 + 0.0)
    }
}

/// A length in whole meters, as `strekningslengde` is written in the v2 documentation
/// (`lokasjon`: `33`; `/statistikk`: `1247690`) and read by the Java V2 client
/// (`RoadObjectParser.parseSegment`: `parseIntMember(obj, "strekningslengde")`;
/// `parseStatistics`: `parseLongMember`).
pub fn whole_meters(m: f64) -> u64 {
    if m.is_finite() && m > 0.0 {
        m.round() as u64
    } else {
        0
    }
}

/// `{wkt, srid, egengeometri?, forenklet?}`. `forenklet: true` marks a geometry that
/// `geometritoleranse` simplified (vertices were removed); the Java V2 client reads it as
/// `GeometryParser.parse`: `parseBooleanMember(obj, "forenklet")`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct GeometryDoc {
    pub wkt: String,
    pub srid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egengeometri: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forenklet: Option<bool>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ObjectTypeRefDoc)]
pub struct TypeRefDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct MetadataDoc<'a> {
    #[serde(rename = "type")]
    pub kind: TypeRefDoc<'a>,
    pub versjon: u32,
    #[schema(value_type = String, format = Date)]
    pub startdato: DateText,
    #[schema(value_type = String)]
    pub sist_modifisert: DateTimeText,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Date)]
    pub sluttdato: Option<DateText>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum VerdiDoc<'a> {
    Int(i64),
    /// Decimal property values and numeric enumeration values (datatype 31).
    Number(Num),
    Text(&'a str),
    Owned(String),
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct PropertyDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub datatype: u16,
    pub datatype_tekst: &'a str,
    #[schema(value_type = Value)]
    pub verdi: VerdiDoc<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enhet: Option<UnitDoc<'a>>,
}

/// A road reference: `meter` on a point object, `fra_meter`/`til_meter` on a stretch
/// (SPEC "Road reference": `meter` present on a point, `fra_meter, til_meter` instead when the
/// reference covers a stretch).
#[derive(Serialize, utoipa::ToSchema)]
pub struct RoadRefDoc {
    pub fylke: u8,
    pub kommune: u8,
    pub kategori: &'static str,
    pub status: &'static str,
    pub nummer: u32,
    pub hp: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meter: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fra_meter: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub til_meter: Option<u32>,
    #[schema(value_type = String)]
    pub kortform: RoadRefText,
}

impl RoadRefDoc {
    /// `point`: the reference of a point object (`meter`, and `from_m == to_m`).
    pub(crate) fn new(k: &RoadKey, from_m: u32, to_m: u32, point: bool) -> Self {
        let to_m = if point { from_m } else { to_m };
        RoadRefDoc {
            fylke: k.county,
            kommune: k.municipality_part,
            kategori: letter(k.category),
            status: letter(k.status),
            nummer: k.number,
            hp: k.hp,
            meter: point.then_some(from_m),
            fra_meter: (!point).then_some(from_m),
            til_meter: (!point).then_some(to_m),
            kortform: RoadRefText {
                key: *k,
                from_m,
                to_m,
            },
        }
    }
}

/// A placement on a road link (`lokasjon.stedfestinger[]`, `vegsegmenter[].stedfesting`), as
/// the v2 documentation shows it (`verdi/veglenke.md`: a point has `posisjon`, a stretch
/// `fra_posisjon`/`til_posisjon`) and the Java V2 client reads it
/// (`RoadObjectParser.parsePlacement`: `veglenkeid` as int, `posisjon` if present else
/// `fra_posisjon`/`til_posisjon` as doubles, `retning` a required string MED/MOT,
/// `sideposisjon` an optional string, `felt` an optional string: `parseStringMember`, which
/// refuses anything but a JSON string). LtGlahn's `bomstasjoner_retninger.py` reads
/// `lokasjon['stedfestinger'][0]['posisjon']` of toll stations (point objects). `felt` is the
/// placement's lanes as the documentation's `verdi/veglenke.md` shows them (`"felt": "1#2"`,
/// after the positions), present only when the placement has lanes; vegdb stores no side
/// position, so `sideposisjon` is left out.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ObjectPlacementDoc)]
pub struct PlacementDoc {
    pub veglenkeid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub posisjon: Option<Pos>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub fra_posisjon: Option<Pos>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<f64>)]
    pub til_posisjon: Option<Pos>,
    /// The lanes the placement is on, lane codes joined by `#` ("1#2"); absent when it is not
    /// on particular lanes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub felt: Option<String>,
    #[schema(value_type = String)]
    pub kortform: LinkPosText,
    pub retning: &'static str,
}

impl PlacementDoc {
    /// `point`: the placement of a point object (`posisjon`); `lanes`: the placement's stored
    /// lanes ("" = none).
    pub(crate) fn new(p: &Part, point: bool, lanes: &str) -> Self {
        PlacementDoc {
            veglenkeid: p.link_id,
            posisjon: point.then_some(Pos(p.from)),
            fra_posisjon: (!point).then_some(Pos(p.from)),
            til_posisjon: (!point).then_some(Pos(p.to)),
            felt: (!lanes.is_empty()).then(|| lanes.to_string()),
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

#[derive(Serialize, utoipa::ToSchema)]
pub struct ContractDoc<'a> {
    pub nummer: u32,
    pub navn: &'a str,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct RouteDoc<'a> {
    pub nummer: &'a str,
    pub navn: &'a str,
    pub periode: &'a str,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LocationDoc<'a> {
    pub kommuner: Vec<u16>,
    pub fylker: Vec<u8>,
    pub regioner: Vec<u8>,
    pub vegavdelinger: Vec<u8>,
    #[serde(rename = "kontraktsområder")]
    pub kontraktsomrader: Vec<ContractDoc<'a>>,
    pub riksvegruter: Vec<RouteDoc<'a>>,
    pub vegreferanser: Vec<RoadRefDoc>,
    /// The road system references of the parts (LES v3's shape); absent when no part has one.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub vegsystemreferanser: Vec<crate::api::dto::SystemRefAny>,
    pub stedfestinger: Vec<PlacementDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometri: Option<GeometryDoc>,
    /// Whole meters (the documentation's tunnelløp example: `"strekningslengde": 33`).
    pub strekningslengde: u64,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct RelatedDoc<'a> {
    #[serde(rename = "type")]
    pub kind: TypeRefDoc<'a>,
    pub vegobjekter: Vec<u64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct RelationsDoc<'a> {
    pub foreldre: Vec<RelatedDoc<'a>>,
    pub barn: Vec<RelatedDoc<'a>>,
}

/// One element of `vegsegmenter`: an object's placement part on one road link segment, with
/// the road reference and areas of that segment. The shape is the one the v2 clients read:
/// - Java V2 client (nvdb-vegdata/nvdb-api-client, branch V2,
///   `src/main/java/no/vegvesen/nvdbapi/client/gson/RoadObjectParser.java`): `parseSegment`
///   (lines ~166-184) reads `stedfesting` (object, through `parsePlacement`, lines ~186-206),
///   `geometri` (object, required: `GeometryParser.parse` dereferences it), `kommune`, `fylke`,
///   `region`, `vegavdeling` (ints), `vegreferanse` (presence) and `strekningslengde`
///   (`parseIntMember`: an integer).
/// - LtGlahn/nvdbapi-V2 `nvdb2geojson.py` (`__addfag2geojson`): `seg['geometri']['wkt']`,
///   `seg.pop('vegreferanse')` merged into the feature properties (a dict), then the rest of
///   the segment's keys.
/// - pnvdb 0.4.0 `Objekt.vegsegmenter` (`pnvdb/models/objekt.py`): `data['vegsegmenter']` as a
///   list, from `Nvdb.hent` (`inkluder=alle`, `pnvdb/les.py`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct SegmentDoc {
    pub stedfesting: PlacementDoc,
    pub geometri: GeometryDoc,
    pub vegreferanse: RoadRefDoc,
    pub kommune: u16,
    pub fylke: u8,
    pub region: u8,
    pub vegavdeling: u8,
    /// Whole meters (Java V2 `parseSegment`: `Integer length = parseIntMember(...)`).
    pub strekningslengde: u64,
}

/// A road object, serialized directly (static keys, borrowed names).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ObjectDoc<'a> {
    pub id: u64,
    #[schema(value_type = String)]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: T) -> String {
        serde_json::to_string(&v).expect("serializes")
    }

    proptest::proptest! {
        /// The texts written into stack buffers are their `Display` forms (escaped as JSON),
        /// for any day, time and base, years beyond four digits and bases too long for the
        /// buffer included.
        #[test]
        fn buffered_texts_serialize_as_their_display(days in -1_000_000i32..4_000_000, secs in -400_000_000_000i64..400_000_000_000,
                                                     t in proptest::bool::ANY, base in "[a-zA-Z0-9:/.\"\\\\é-]{0,300}",
                                                     type_id in proptest::num::u32::ANY, id in proptest::num::u64::ANY) {
            let quoted = |text: String| serde_json::to_string(&text).expect("serializes");
            proptest::prop_assert_eq!(json(DateText(days)), quoted(DateText(days).to_string()));
            proptest::prop_assert_eq!(json(DateTimeText(secs, t)), quoted(DateTimeText(secs, t).to_string()));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            push_date_json(&mut a, days);
            push_date_time_json(&mut b, secs, t);
            proptest::prop_assert_eq!(String::from_utf8(a).unwrap(), json(DateText(days)));
            proptest::prop_assert_eq!(String::from_utf8(b).unwrap(), json(DateTimeText(secs, t)));
            let href = HrefText { base: &base, type_id, id };
            proptest::prop_assert_eq!(json(&href), quoted(href.to_string()));
        }
    }

    #[test]
    fn numbers_in_the_services_form() {
        assert_eq!(json(Num(80.0)), "80");
        assert_eq!(json(Num(-51.1)), "-51.1");
        assert_eq!(json(Num(-0.0)), "0");
        assert_eq!(json(Num(0.25)), "0.25");
        assert_eq!(json(Num(-3.0)), "-3");
        assert_eq!(json(Num(1e300)), "1e+300");
        assert_eq!(json(Pos(-0.0)), "0.0");
        assert_eq!(json(Pos(1.0)), "1.0");
        assert_eq!(json(VerdiDoc::Number(Num(-0.0))), "0");
        assert_eq!(whole_meters(32.5), 33);
        assert_eq!(whole_meters(-0.0), 0);
        assert_eq!(whole_meters(f64::NAN), 0);
    }

    #[test]
    fn placements_and_references_of_points_and_stretches() {
        let part = |from: f64, to: f64| Part {
            net_row: 0,
            link_id: 7,
            from,
            to,
            direction: DIRECTION_AGAINST,
            placement: 0,
            length_m: 0.0,
        };
        assert_eq!(
            json(PlacementDoc::new(&part(0.25, 0.25), true, "")),
            r#"{"veglenkeid":7,"posisjon":0.25,"kortform":"0.25@7","retning":"MOT"}"#
        );
        assert_eq!(
            json(PlacementDoc::new(&part(0.0, 0.5), false, "")),
            r#"{"veglenkeid":7,"fra_posisjon":0.0,"til_posisjon":0.5,"kortform":"0.0-0.5@7","retning":"MOT"}"#
        );
        // lanes as the documentation's stretch example shows them (`verdi/veglenke.md`)
        assert_eq!(
            json(PlacementDoc::new(&part(0.0, 0.5), false, "1#2")),
            r#"{"veglenkeid":7,"fra_posisjon":0.0,"til_posisjon":0.5,"felt":"1#2","kortform":"0.0-0.5@7","retning":"MOT"}"#
        );
        let key = RoadKey {
            county: 50,
            municipality_part: 0,
            category: b'E',
            status: b'V',
            number: 6,
            hp: 1,
        };
        assert_eq!(
            json(RoadRefDoc::new(&key, 7517, 7517, true)),
            r#"{"fylke":50,"kommune":0,"kategori":"E","status":"V","nummer":6,"hp":1,"meter":7517,"kortform":"5000 Ev6 hp1 m7517"}"#
        );
        assert_eq!(
            json(RoadRefDoc::new(&key, 100, 200, false)),
            r#"{"fylke":50,"kommune":0,"kategori":"E","status":"V","nummer":6,"hp":1,"fra_meter":100,"til_meter":200,"kortform":"5000 Ev6 hp1 m100-200"}"#
        );
    }
}
