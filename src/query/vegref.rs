//! Road references (vegreferanse) as the v2 API writes and reads them.
//!
//! Short form: four-digit area prefix (county, municipality part — `00` for E, R and F roads),
//! category, status and number, `hp<hp>`, then `m<meter>` or `m<from>-<to>`; e.g.
//! `1800 Ev6 hp23 m17084`. Input is case-insensitive and may omit spaces. As a filter the
//! reference may stop early: `E`, `?v`, `Ev`, `E6`, `Ev6`, `Ev6hp1`, `Ev6hp1-hp4`, `Ev6hp1m100`,
//! `Ev6hp1m100-200`, `Ev6hp1m100-hp2m200`, each with or without the prefix.

use crate::error::{EngineError, Invalid, LinkRefProblem, Result, RoadRefProblem};
pub use crate::index::network::RoadKey;

pub const CATEGORIES: &[u8] = b"ERFKPS";
pub const STATUSES: &[u8] = b"VWTSGUBMXAHPEQ";

/// A position on the road (hp, meter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HpMeter {
    pub hp: u16,
    pub meter: Option<u32>,
}

/// A parsed reference or reference filter. `None` fields match anything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoadRefFilter {
    pub county: Option<u8>,
    /// Two-digit municipality part of the prefix (0 for E, R, F roads).
    pub municipality_part: Option<u8>,
    pub category: Option<u8>,
    pub status: Option<u8>,
    pub number: Option<u32>,
    pub from: Option<HpMeter>,
    /// Upper end of a range; `None` with `from` set means a single hp or point.
    pub to: Option<HpMeter>,
}

fn bad(text: &str, problem: RoadRefProblem) -> EngineError {
    Invalid::RoadRef {
        text: text.to_string(),
        problem,
    }
    .into()
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn digits(&mut self, max: usize) -> Option<u32> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() && self.i - start < max {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .parse()
            .ok()
    }
    /// A number of any length (a reference may name a meter or hp no road has: it is valid and
    /// matches nothing); values beyond `max` saturate at `max`, which no road reaches.
    fn number(&mut self, max: u32) -> Option<u32> {
        let start = self.i;
        let mut value: u64 = 0;
        while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            value = (value * 10 + u64::from(d - b'0')).min(u64::from(max));
            self.i += 1;
        }
        (self.i > start).then_some(value as u32)
    }
    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }
}

impl RoadRefFilter {
    /// Parse the filter (or point) form.
    pub fn parse(text: &str) -> Result<RoadRefFilter> {
        // whitespace dropped and upper case, in one pass over the bytes of the usual ASCII
        // text into a buffer on the stack (a per-char collect, a second copy and a growing
        // vector cost as much as the parse)
        let cleaned: smallvec::SmallVec<[u8; 48]> = if text.is_ascii() {
            text.bytes()
                .filter(|b| !char::from(*b).is_whitespace())
                .map(|b| b.to_ascii_uppercase())
                .collect()
        } else {
            text.chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_uppercase()
                .into_bytes()
                .into()
        };
        if cleaned.is_empty() {
            return Err(bad(text, RoadRefProblem::Empty));
        }
        let mut c = Cursor { s: &cleaned, i: 0 };
        let mut f = RoadRefFilter::default();
        if cleaned.len() >= 4 && cleaned[..4].iter().all(u8::is_ascii_digit) {
            f.county = Some(c.digits(2).expect("two digits") as u8);
            f.municipality_part = Some(c.digits(2).expect("two digits") as u8);
        }
        match c.peek() {
            Some(b'?') => c.i += 1,
            Some(k) if CATEGORIES.contains(&k) => {
                f.category = Some(k);
                c.i += 1;
            }
            _ => return Err(bad(text, RoadRefProblem::MissingCategory)),
        }
        if let Some(s) = c.peek() {
            if STATUSES.contains(&s) && !c.s[c.i..].starts_with(b"HP") {
                f.status = Some(s);
                c.i += 1;
            }
        }
        if c.done() {
            return Ok(f);
        }
        f.number = Some(
            c.number(u32::MAX)
                .ok_or_else(|| bad(text, RoadRefProblem::MissingNumber))?,
        );
        if c.done() {
            return Ok(f);
        }
        let from = parse_hp_meter(&mut c).ok_or_else(|| bad(text, RoadRefProblem::ExpectedHp))?;
        f.from = Some(from);
        if c.eat(b"-") {
            // range: `-hp4`, `-200` (meter in the same hp) or `-hp2m200`
            let to = if c.peek() == Some(b'H') {
                parse_hp_meter(&mut c)
                    .ok_or_else(|| bad(text, RoadRefProblem::ExpectedHpAfterDash))?
            } else {
                let m = c
                    .number(u32::MAX)
                    .ok_or_else(|| bad(text, RoadRefProblem::ExpectedMeterAfterDash))?;
                if from.meter.is_none() {
                    return Err(bad(text, RoadRefProblem::MeterRangeWithoutStart));
                }
                HpMeter {
                    hp: from.hp,
                    meter: Some(m),
                }
            };
            if to < from {
                return Err(bad(text, RoadRefProblem::RangeEndsBeforeStart));
            }
            f.to = Some(to);
        }
        if !c.done() {
            return Err(bad(
                text,
                RoadRefProblem::UnexpectedText(String::from_utf8_lossy(&c.s[c.i..]).into_owned()),
            ));
        }
        Ok(f)
    }

    /// Parse the fully qualified point form `/veg` requires (prefix, category, status, number,
    /// hp and meter).
    pub fn parse_point(text: &str) -> Result<RoadRefFilter> {
        let f = Self::parse(text)?;
        let complete = f.county.is_some()
            && f.category.is_some()
            && f.status.is_some()
            && f.number.is_some()
            && f.to.is_none()
            && f.from.is_some_and(|p| p.meter.is_some());
        if !complete {
            return Err(bad(text, RoadRefProblem::IncompletePoint));
        }
        Ok(f)
    }

    /// Does a road part (its key and meter range) match this filter? `from_m..=to_m` is the
    /// segment's meter range; it matches when it overlaps the filter's range.
    /// A row without a road reference matches no filter.
    pub fn matches(&self, key: &RoadKey, from_m: u32, to_m: u32) -> bool {
        if !key.has_road_ref()
            || self.county.is_some_and(|c| c != key.county)
            || self
                .municipality_part
                .is_some_and(|m| m != key.municipality_part)
            || self.category.is_some_and(|c| c != key.category)
            || self.status.is_some_and(|s| s != key.status)
            || self.number.is_some_and(|n| n != key.number)
        {
            return false;
        }
        let Some(from) = self.from else { return true };
        let to = self.to.unwrap_or(HpMeter {
            hp: from.hp,
            meter: from.meter,
        });
        // compare (hp, meter) pairs; a missing meter spans the whole hp
        let lo = (from.hp, from.meter.unwrap_or(0));
        let hi = (to.hp, to.meter.unwrap_or(u32::MAX));
        (key.hp, to_m) >= lo && (key.hp, from_m) <= hi
    }
}

fn parse_hp_meter(c: &mut Cursor) -> Option<HpMeter> {
    if !c.eat(b"HP") {
        return None;
    }
    let hp = c.number(u32::from(u16::MAX))? as u16;
    let meter = if c.eat(b"M") {
        Some(c.number(u32::MAX)?)
    } else {
        None
    };
    Some(HpMeter { hp, meter })
}

/// A link position `<position>@<id>`, a range `<from>-<to>@<id>`, or a whole link `<id>`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRef {
    pub link_id: u64,
    pub from: f64,
    pub to: f64,
}

impl LinkRef {
    pub fn parse(text: &str) -> Result<LinkRef> {
        let t = text.trim();
        let err = |problem: LinkRefProblem| -> EngineError {
            Invalid::LinkRef {
                text: text.to_string(),
                problem,
            }
            .into()
        };
        let pos = |s: &str| -> Result<f64> {
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| err(LinkRefProblem::PositionNotANumber))?;
            if !(0.0..=1.0).contains(&v) {
                return Err(err(LinkRefProblem::PositionOutOfRange));
            }
            Ok(v)
        };
        let (positions, id) = match t.split_once('@') {
            Some((p, id)) => (Some(p), id),
            None => (None, t),
        };
        let link_id: u64 = id
            .trim()
            .parse()
            .map_err(|_| err(LinkRefProblem::IdNotAnInteger))?;
        let (from, to) = match positions {
            None => (0.0, 1.0),
            Some(p) => match p.split_once('-') {
                Some((a, b)) => (pos(a)?, pos(b)?),
                None => {
                    let v = pos(p)?;
                    (v, v)
                }
            },
        };
        if from > to {
            return Err(err(LinkRefProblem::FromAfterTo));
        }
        Ok(LinkRef { link_id, from, to })
    }

    pub fn is_point(&self) -> bool {
        self.from == self.to
    }
}

/// A position rounded to at most 8 decimals, written with at least one decimal.
pub fn format_position(p: f64) -> String {
    let mut s = String::with_capacity(12);
    push_position(&mut s, p);
    s
}

/// A link position as the API writes it: at most 8 decimals, at least one (`0.0`, `0.3`,
/// `0.12345679`).
pub fn push_position(out: &mut String, p: f64) {
    if !crate::util::push_fixed(out, p, 8) {
        out.push_str(".0");
    }
}

/// The link position as a number, rounded as [`format_position`] writes it: the double
/// nearest to that decimal.
pub fn round_position(p: f64) -> f64 {
    let r = (p * 1e8).round() / 1e8;
    if r.is_finite() {
        r
    } else {
        p
    }
}

/// `0.3@1125766`
pub fn link_point_short(position: f64, link_id: u64) -> String {
    let mut s = String::with_capacity(24);
    push_link_point_short(&mut s, position, link_id);
    s
}

/// Append [`link_point_short`]'s text.
pub fn push_link_point_short(s: &mut String, position: f64, link_id: u64) {
    push_position(s, position);
    s.push('@');
    crate::util::push_int(s, link_id);
}

/// `0.0-1.0@1125766`
pub fn link_range_short(from: f64, to: f64, link_id: u64) -> String {
    let mut s = String::with_capacity(32);
    push_position(&mut s, from);
    s.push('-');
    push_position(&mut s, to);
    s.push('@');
    crate::util::push_int(&mut s, link_id);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_documented_forms() {
        let p = RoadRefFilter::parse("1800Ev6hp23m17084").unwrap();
        assert_eq!(
            (
                p.county,
                p.municipality_part,
                p.category,
                p.status,
                p.number
            ),
            (Some(18), Some(0), Some(b'E'), Some(b'V'), Some(6))
        );
        assert_eq!(
            p.from,
            Some(HpMeter {
                hp: 23,
                meter: Some(17084)
            })
        );
        assert_eq!(RoadRefFilter::parse("1800 Ev6 hp23 m17084").unwrap(), p);
        assert_eq!(RoadRefFilter::parse("1800ev6HP23M17084").unwrap(), p);
        let e = RoadRefFilter::parse("E").unwrap();
        assert_eq!((e.category, e.status, e.number), (Some(b'E'), None, None));
        let q = RoadRefFilter::parse("?v").unwrap();
        assert_eq!((q.category, q.status), (None, Some(b'V')));
        assert_eq!(RoadRefFilter::parse("E6").unwrap().status, None);
        assert_eq!(RoadRefFilter::parse("E6").unwrap().number, Some(6));
        let r = RoadRefFilter::parse("Ev6hp1-hp4").unwrap();
        assert_eq!((r.from.unwrap().hp, r.to.unwrap().hp), (1, 4));
        let m = RoadRefFilter::parse("Ev6hp1m100-200").unwrap();
        assert_eq!(
            m.to,
            Some(HpMeter {
                hp: 1,
                meter: Some(200)
            })
        );
        let x = RoadRefFilter::parse("1200Ev39hp1m100-hp2m200").unwrap();
        assert_eq!(
            x.to,
            Some(HpMeter {
                hp: 2,
                meter: Some(200)
            })
        );
        assert_eq!(x.county, Some(12));
        // K roads carry the municipality part
        let k = RoadRefFilter::parse("0906 Kv31007 hp1 m0-79").unwrap();
        assert_eq!(
            (k.county, k.municipality_part, k.category),
            (Some(9), Some(6), Some(b'K'))
        );
    }

    #[test]
    fn rejects_malformed_references() {
        for bad in [
            "",
            "X6",
            "Ev",
            "Ev6hp",
            "Ev6hp1m",
            "Ev6hp2-hp1",
            "Ev6hp1m300-200",
            "Ev6hp1x",
            "1800",
            "Ev6hp1-200",
        ] {
            if bad == "Ev" {
                assert!(RoadRefFilter::parse(bad).is_ok());
                continue;
            }
            assert!(RoadRefFilter::parse(bad).is_err(), "{bad} should fail");
        }
        assert!(
            RoadRefFilter::parse_point("Ev6hp1m100").is_err(),
            "no prefix"
        );
        assert!(
            RoadRefFilter::parse_point("1800Ev6hp1").is_err(),
            "no meter"
        );
        assert!(
            RoadRefFilter::parse_point("1800E6hp1m5").is_err(),
            "no status"
        );
    }

    #[test]
    fn long_numbers_are_valid_references_that_name_no_road() {
        let f = RoadRefFilter::parse_point("5000Ev6hp1m12345678").expect("8-digit meter");
        assert_eq!(f.from.and_then(|p| p.meter), Some(12_345_678));
        let f = RoadRefFilter::parse("5000Ev6hp123456m99999999999").expect("saturates");
        let from = f.from.expect("from");
        assert_eq!((from.hp, from.meter), (u16::MAX, Some(u32::MAX)));
        assert_eq!(
            RoadRefFilter::parse("Ev1234567")
                .expect("long number")
                .number,
            Some(1_234_567)
        );
        let key = RoadKey {
            county: 50,
            municipality_part: 0,
            category: b'E',
            status: b'V',
            number: 6,
            hp: 1,
        };
        let f = RoadRefFilter::parse_point("5000Ev6hp1m12345678").expect("parses");
        assert!(!f.matches(&key, 0, 9_999_999));
        assert!(f.matches(&key, 0, 12_345_678));
    }

    #[test]
    fn filter_matches_overlapping_ranges() {
        let key = RoadKey {
            county: 18,
            municipality_part: 0,
            category: b'E',
            status: b'V',
            number: 6,
            hp: 2,
        };
        let f = RoadRefFilter::parse("Ev6hp1-hp4").unwrap();
        assert!(f.matches(&key, 0, 500));
        let f = RoadRefFilter::parse("Ev6hp2m100-200").unwrap();
        assert!(f.matches(&key, 150, 300));
        assert!(!f.matches(&key, 201, 300));
        assert!(!RoadRefFilter::parse("Ev6hp3").unwrap().matches(&key, 0, 10));
        assert!(!RoadRefFilter::parse("Rv6").unwrap().matches(&key, 0, 10));
        assert!(RoadRefFilter::parse("1800E").unwrap().matches(&key, 0, 10));
    }

    #[test]
    fn link_positions() {
        assert_eq!(
            LinkRef::parse("0.123@1337").unwrap(),
            LinkRef {
                link_id: 1337,
                from: 0.123,
                to: 0.123
            }
        );
        assert_eq!(
            LinkRef::parse("1337").unwrap(),
            LinkRef {
                link_id: 1337,
                from: 0.0,
                to: 1.0
            }
        );
        assert_eq!(
            LinkRef::parse("0.1-0.5@7").unwrap(),
            LinkRef {
                link_id: 7,
                from: 0.1,
                to: 0.5
            }
        );
        for bad in ["1.5@3", "a@3", "0.5@x", "0.6-0.2@3", ""] {
            assert!(LinkRef::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(format_position(0.0), "0.0");
        assert_eq!(format_position(1.0), "1.0");
        assert_eq!(format_position(0.123456789), "0.12345679");
        assert_eq!(link_point_short(0.3, 1125766), "0.3@1125766");
    }

    proptest! {
        #[test]
        fn short_form_parses_back(county in 1u8..60, mp in 0u8..100, cat in 0usize..5, st in 0usize..14, number in 1u32..99999, hp in 1u16..999, m in 0u32..999_999) {
            let key = RoadKey { county, municipality_part: mp, category: CATEGORIES[cat], status: STATUSES[st], number, hp };
            let text = key.point(m);
            let f = RoadRefFilter::parse_point(&text).unwrap();
            prop_assert_eq!(f.county, Some(county));
            prop_assert_eq!(f.municipality_part, Some(mp));
            prop_assert_eq!(f.category, Some(key.category));
            prop_assert_eq!(f.status, Some(key.status));
            prop_assert_eq!(f.number, Some(number));
            prop_assert_eq!(f.from, Some(HpMeter { hp, meter: Some(m) }));
        }

        /// Any text parses as its cleaned form (whitespace dropped, upper case) does when that
        /// form is made the plain way, char by char: the one-pass byte cleaning of ASCII text
        /// drops the same whitespace (vertical tab and form feed included).
        #[test]
        fn text_parses_as_its_plainly_cleaned_form(
            text in prop_oneof![
                "[0-9a-zA-Z?\\- \t\n\r\u{b}\u{c}\u{85}\u{a0}é]{0,24}",
                (
                    "1800 ?[EeRrFfKk][Vv] ?[0-9]{1,4} ?[Hh][Pp][0-9]{1,2} ?[Mm][0-9]{1,5}",
                    proptest::collection::vec(
                        (0usize..40, prop::sample::select(vec![" ", "\t", "\u{b}", "\u{c}", "\u{85}", "\u{a0}", "\u{2003}"])),
                        0..4,
                    ),
                )
                    .prop_map(|(mut text, spaces)| {
                        for (at, space) in spaces {
                            let at = text.char_indices().map(|(i, _)| i).nth(at).unwrap_or(text.len());
                            text.insert_str(at, space);
                        }
                        text
                    }),
            ]
        ) {
            let plain: String = text
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_uppercase();
            match (RoadRefFilter::parse(&text), RoadRefFilter::parse(&plain)) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "{text:?}: {a:?} but {plain:?}: {b:?}"),
            }
        }

        #[test]
        fn positions_round_to_eight_decimals(p in 0.0f64..=1.0) {
            let s = format_position(p);
            let back: f64 = s.parse().unwrap();
            prop_assert!((back - p).abs() <= 0.5e-8 + 1e-15);
            prop_assert!(s.contains('.'));
            prop_assert!(s.split('.').nth(1).unwrap().len() <= 8);
            // the number the answers carry is the text's value
            prop_assert_eq!(round_position(p).to_bits(), back.to_bits());
            // and the text is what formatting with a precision writes, trimmed
            let mut old = format!("{:.8}", (p * 1e8).round() / 1e8);
            while old.ends_with('0') && !old.ends_with(".0") {
                old.pop();
            }
            prop_assert_eq!(s, old);
        }
    }
}
