//! Road system references (vegsystemreferanse) as NVDB's successors (LES v3/v4) write and read
//! them, beside v2's `vegreferanse` (`vegref.rs`).
//!
//! Short form (kortform): category and phase letter and number, then `S<strekning>D<delstrekning>`,
//! then `m<meter>` or `m<from>-<to>`; e.g. `EV6 S1D1 m200-500`. Input is case-insensitive and
//! may omit the spaces. As a filter the reference may stop early and leave out the phase:
//! `EV6`, `E6`, `EV6S1`, `EV6S1-3` (strekning 1 to 3), `EV6S1D1`, `EV6S1D1m200`,
//! `EV6S1D1m0-500`, each with or without a four-digit municipality number in front
//! (`5001 KV1234 S1D1`: only rows in that municipality). Junction and side facility parts
//! (`KD1`, `SD1`) are not stored and refused.

use crate::error::{EngineError, Invalid, Result, SystemRefProblem};
use crate::index::network::{SystemPart, SystemRefIndex};
use crate::snapshot::columns::{RoadNetwork, NO_ROAD_REF, SEPARATE_CARRIAGEWAYS};

/// vegkategori letters.
pub const CATEGORIES: &[u8] = b"ERFKPS";
/// vegfase letters.
pub const PHASES: &[u8] = b"VAPF";

/// A network row's road system reference without its metres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SystemKey {
    pub category: u8,
    pub phase: u8,
    pub number: u32,
    pub section: u16,
    pub subsection: u16,
    pub arm: bool,
    /// Index into `SEPARATE_CARRIAGEWAYS`.
    pub separate: u8,
    /// K or G.
    pub traffic_group: u8,
    /// The link runs against the metering (retning MOT).
    pub against: bool,
    /// The 915 Vegsystem and 916 Strekning the reference comes from: (id, version), (0, 0) =
    /// not stored.
    pub system_object: (u64, u32),
    pub section_object: (u64, u32),
}

impl SystemKey {
    /// Row `r`'s key; None on a row without a road reference.
    pub fn of_row(n: &RoadNetwork, r: usize) -> Option<SystemKey> {
        (n.system_category[r] != NO_ROAD_REF).then(|| SystemKey {
            category: n.system_category[r],
            phase: n.system_phase[r],
            number: n.system_number[r],
            section: n.section[r],
            subsection: n.subsection[r],
            arm: n.arm[r],
            separate: n.separate_carriageways[r],
            traffic_group: n.traffic_group[r],
            against: n.section_against[r],
            system_object: (n.system_id[r], n.system_version[r]),
            section_object: (n.section_id[r], n.section_version[r]),
        })
    }

    /// `Nei`, `Med`, `Mot`.
    pub fn separate_name(&self) -> &'static str {
        SEPARATE_CARRIAGEWAYS
            .get(self.separate as usize)
            .copied()
            .unwrap_or(SEPARATE_CARRIAGEWAYS[0])
    }

    /// `MED` or `MOT`.
    pub fn direction_name(&self) -> &'static str {
        if self.against {
            "MOT"
        } else {
            "MED"
        }
    }

    /// `EV6 S1D1`
    fn push_short(&self, s: &mut String) {
        use crate::util::push_int;
        s.push(self.category as char);
        s.push(self.phase as char);
        push_int(s, self.number.into());
        s.push_str(" S");
        push_int(s, self.section.into());
        s.push('D');
        push_int(s, self.subsection.into());
    }

    /// `EV6 S1D1 m200`
    pub fn point(&self, meter: u32) -> String {
        let mut s = String::with_capacity(24);
        self.push_short(&mut s);
        s.push_str(" m");
        crate::util::push_int(&mut s, meter.into());
        s
    }

    /// `EV6 S1D1 m200-500`, or the point form when both ends are the same metre.
    pub fn stretch(&self, from: u32, to: u32) -> String {
        if from == to {
            return self.point(from);
        }
        let mut s = self.point(from);
        s.push('-');
        crate::util::push_int(&mut s, to.into());
        s
    }
}

/// The metre (unrounded) of link position `position` within row `r` by its vegsystemreferanse:
/// from `section_from_m` at `from_pos` to `section_to_m` at `to_pos`, or the other way round
/// when the link runs against the metering.
pub fn system_meter_exact(n: &RoadNetwork, r: usize, position: f64) -> f64 {
    let span = n.to_pos[r] - n.from_pos[r];
    let f = if span > 0.0 {
        ((position - n.from_pos[r]) / span).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (a, b) = (n.section_from_m[r] as f64, n.section_to_m[r] as f64);
    if n.section_against[r] {
        b - f * (b - a)
    } else {
        a + f * (b - a)
    }
}

/// The link position of metre `m` within row `r` (the inverse of [`system_meter_exact`]).
fn position_of_meter(n: &RoadNetwork, r: usize, m: f64) -> f64 {
    let (a, b) = (n.section_from_m[r] as f64, n.section_to_m[r] as f64);
    let f = if b > a { (m - a) / (b - a) } else { 0.0 };
    let f = if n.section_against[r] { 1.0 - f } else { f };
    n.from_pos[r] + f.clamp(0.0, 1.0) * (n.to_pos[r] - n.from_pos[r])
}

/// A point's road system reference: the row's key and the metre (rounded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SystemPoint {
    pub key: SystemKey,
    pub meter: u32,
}

/// The road system reference at link position `position` of row `r`; None on a row without
/// a road reference.
pub fn point_in_row(n: &RoadNetwork, r: usize, position: f64) -> Option<SystemPoint> {
    Some(SystemPoint {
        key: SystemKey::of_row(n, r)?,
        meter: system_meter_exact(n, r, position).round() as u32,
    })
}

/// A parsed road system reference or reference filter; `None` fields match anything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemRefFilter {
    /// Kommunenummer in front (four digits).
    pub municipality: Option<u16>,
    pub category: u8,
    pub phase: Option<u8>,
    pub number: Option<u32>,
    /// Strekning range (inclusive; one strekning: both ends the same).
    pub sections: Option<(u32, u32)>,
    pub subsection: Option<u32>,
    /// Metre range (inclusive; a point: both ends the same).
    pub metres: Option<(u32, u32)>,
}

fn bad(text: &str, problem: SystemRefProblem) -> EngineError {
    Invalid::SystemRef {
        text: text.chars().take(200).collect(),
        problem,
    }
    .into()
}

/// The bytes of `text` without whitespace, upper case.
fn cleaned(text: &str) -> Vec<u8> {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_uppercase()
        .into_bytes()
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }
    /// A number of any length; values beyond `u32::MAX` saturate (no road has them: valid,
    /// matching nothing).
    fn number(&mut self) -> Option<u32> {
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            v = (v * 10 + u64::from(d - b'0')).min(u64::from(u32::MAX));
            self.i += 1;
        }
        (self.i > start).then_some(v as u32)
    }
    /// `<n>` or `<n>-<m>` (m >= n).
    fn range(&mut self, text: &str, what: SystemRefProblem) -> Result<(u32, u32)> {
        let a = self.number().ok_or_else(|| bad(text, what.clone()))?;
        if !self.eat(b'-') {
            return Ok((a, a));
        }
        let b = self.number().ok_or_else(|| bad(text, what))?;
        if b < a {
            return Err(bad(text, SystemRefProblem::RangeEndsBeforeStart));
        }
        Ok((a, b))
    }
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }
}

impl SystemRefFilter {
    /// Parse the filter (or point) form.
    pub fn parse(text: &str) -> Result<SystemRefFilter> {
        let s = cleaned(text);
        if s.is_empty() {
            return Err(bad(text, SystemRefProblem::Empty));
        }
        let mut c = Cursor { s: &s, i: 0 };
        let mut f = SystemRefFilter::default();
        if s.len() > 4 && s[..4].iter().all(u8::is_ascii_digit) {
            f.municipality = Some(c.number_of(4));
        }
        match c.peek() {
            Some(k) if CATEGORIES.contains(&k) => {
                f.category = k;
                c.i += 1;
            }
            _ => return Err(bad(text, SystemRefProblem::MissingCategory)),
        }
        if let Some(p) = c.peek().filter(|p| PHASES.contains(p)) {
            f.phase = Some(p);
            c.i += 1;
        }
        if c.done() {
            return Ok(f);
        }
        f.number = Some(
            c.number()
                .ok_or_else(|| bad(text, SystemRefProblem::MissingNumber))?,
        );
        if c.eat(b'S') {
            let sections = c.range(text, SystemRefProblem::ExpectedSection)?;
            f.sections = Some(sections);
            if sections.0 == sections.1 && c.eat(b'D') {
                f.subsection = Some(
                    c.number()
                        .ok_or_else(|| bad(text, SystemRefProblem::ExpectedSubsection))?,
                );
                if c.eat(b'M') {
                    f.metres = Some(c.range(text, SystemRefProblem::ExpectedMeter)?);
                }
            }
        }
        if !c.done() {
            let rest = String::from_utf8_lossy(&c.s[c.i..])
                .chars()
                .take(50)
                .collect();
            return Err(bad(text, SystemRefProblem::UnexpectedText(rest)));
        }
        Ok(f)
    }

    /// Parse the point form `/veg` answers: category, number, strekning, delstrekning and one
    /// metre (phase and municipality optional).
    pub fn parse_point(text: &str) -> Result<SystemRefFilter> {
        let f = Self::parse(text)?;
        if f.number.is_none() || f.subsection.is_none() || f.metres.is_none_or(|(a, b)| a != b) {
            return Err(bad(text, SystemRefProblem::IncompletePoint));
        }
        Ok(f)
    }

    /// Does network row `r` match? A row without a road reference matches no filter; the
    /// metres match when the row's metre range overlaps the filter's (ends included).
    #[inline]
    pub fn matches(&self, n: &RoadNetwork, r: usize) -> bool {
        n.system_category[r] == self.category
            && self.phase.is_none_or(|p| p == n.system_phase[r])
            && self.number.is_none_or(|v| v == n.system_number[r])
            && self.municipality.is_none_or(|m| m == n.municipality[r])
            && self
                .sections
                .is_none_or(|(a, b)| (a..=b).contains(&u32::from(n.section[r])))
            && self
                .subsection
                .is_none_or(|d| d == u32::from(n.subsection[r]))
            && self
                .metres
                .is_none_or(|(a, b)| n.section_from_m[r] <= b && a <= n.section_to_m[r])
    }

    /// The canonical short form: what [`parse`](Self::parse) reads back to this value.
    pub fn short(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        if let Some(m) = self.municipality {
            let _ = write!(s, "{m:04} ");
        }
        s.push(self.category as char);
        if let Some(p) = self.phase {
            s.push(p as char);
        }
        if let Some(n) = self.number {
            let _ = write!(s, "{n}");
        }
        if let Some((a, b)) = self.sections {
            let _ = write!(s, " S{a}");
            if b != a {
                let _ = write!(s, "-{b}");
            }
        }
        if let Some(d) = self.subsection {
            let _ = write!(s, "D{d}");
        }
        if let Some((a, b)) = self.metres {
            let _ = write!(s, " m{a}");
            if b != a {
                let _ = write!(s, "-{b}");
            }
        }
        s
    }
}

impl Cursor<'_> {
    /// Exactly `digits` digits (checked by the caller).
    fn number_of(&mut self, digits: usize) -> u16 {
        let v = self.s[self.i..self.i + digits]
            .iter()
            .fold(0u16, |v, d| v * 10 + u16::from(d - b'0'));
        self.i += digits;
        v
    }
}

/// The row and link position of a point reference (`SystemRefFilter::parse_point`): of the
/// rows whose reference matches and whose metre range holds the metre, the one of the lowest
/// topology level, then the lowest start metre, then the lowest link id (v2's `vegreferanse`
/// rule on level-0 links). The rows come from `idx` (built on `n`): those of the reference's
/// part holding its metre, for each phase when it names none; a filter that is no point
/// reference goes to [`locate_scan`].
pub fn locate(n: &RoadNetwork, idx: &SystemRefIndex, f: &SystemRefFilter) -> Option<(usize, f64)> {
    let (Some((m, m_to)), Some(number), Some((s, s_to)), Some(d)) =
        (f.metres, f.number, f.sections, f.subsection)
    else {
        return locate_scan(n, f);
    };
    if m != m_to || s != s_to {
        return locate_scan(n, f);
    }
    // a strekning or delstrekning beyond the stored range names no row
    let (s, d) = (u16::try_from(s).ok()?, u16::try_from(d).ok()?);
    let phases = match &f.phase {
        Some(p) => std::slice::from_ref(p),
        None => idx.phases(),
    };
    let r = phases
        .iter()
        .flat_map(|&p| idx.holding(n, (f.category, p, number, s, d), m))
        .filter(|&r| f.matches(n, r))
        .min_by_key(|&r| locate_order(n, r))?;
    Some((r, position_of_meter(n, r, f64::from(m))))
}

/// The rows matching `f` ([`SystemRefFilter::matches`]), found through `idx` (built on `n`):
/// for each phase the filter allows, the run of parts its number, strekning range and
/// delstrekning name (all of the category's when it stops early), and within one delstrekning
/// only the rows overlapping its metres; each candidate is then checked whole (the
/// municipality too). In no particular order.
pub fn select(n: &RoadNetwork, idx: &SystemRefIndex, f: &SystemRefFilter) -> Vec<u32> {
    let phases = match &f.phase {
        Some(p) => std::slice::from_ref(p),
        None => idx.phases(),
    };
    let mut out = Vec::new();
    let mut keep = |r: usize| {
        if f.matches(n, r) {
            out.push(r as u32);
        }
    };
    for &p in phases {
        let Some((lo, hi)) = part_bounds(f, p) else {
            continue;
        };
        match (f.metres, lo == hi) {
            (Some((a, b)), true) => idx.overlapping(n, lo, a, b).for_each(&mut keep),
            _ => idx
                .rows_at(idx.parts(n, lo, hi))
                .iter()
                .for_each(|&r| keep(r as usize)),
        }
    }
    out
}

/// The first and last road system part (category, phase, number, strekning, delstrekning)
/// filter `f` can match in phase `p`; None when its strekning or delstrekning is beyond the
/// stored range (no row has it).
fn part_bounds(f: &SystemRefFilter, p: u8) -> Option<(SystemPart, SystemPart)> {
    let c = f.category;
    let Some(v) = f.number else {
        return Some(((c, p, 0, 0, 0), (c, p, u32::MAX, u16::MAX, u16::MAX)));
    };
    let Some((s, s_to)) = f.sections else {
        return Some(((c, p, v, 0, 0), (c, p, v, u16::MAX, u16::MAX)));
    };
    let s = u16::try_from(s).ok()?;
    let s_to = u16::try_from(s_to).unwrap_or(u16::MAX);
    match f.subsection {
        Some(d) if s == s_to => {
            let d = u16::try_from(d).ok()?;
            Some(((c, p, v, s, d), (c, p, v, s, d)))
        }
        _ => Some(((c, p, v, s, 0), (c, p, v, s_to, u16::MAX))),
    }
}

/// [`select`] by a scan of every row: its brute-force twin, the test oracle.
pub fn select_scan(n: &RoadNetwork, f: &SystemRefFilter) -> Vec<u32> {
    (0..n.len())
        .filter(|&r| f.matches(n, r))
        .map(|r| r as u32)
        .collect()
}

fn locate_order(n: &RoadNetwork, r: usize) -> (u8, u32, u64, usize) {
    (n.topology_level[r], n.section_from_m[r], n.link_id[r], r)
}

/// [`locate`] by a scan of every row: its brute-force twin, the test oracle.
pub fn locate_scan(n: &RoadNetwork, f: &SystemRefFilter) -> Option<(usize, f64)> {
    let (m, _) = f.metres?;
    let r = (0..n.len())
        .filter(|&r| f.matches(n, r))
        .min_by_key(|&r| locate_order(n, r))?;
    Some((r, position_of_meter(n, r, f64::from(m))))
}

/// The road system reference queries as methods of the generation they run on.
impl crate::generation::Generation {
    /// Segment row `r`'s road system reference and metres (from, to; from <= to); None on a
    /// row without a road reference.
    pub fn segment_system_ref(&self, r: usize) -> Option<(SystemKey, u32, u32)> {
        let n = &self.network;
        Some((
            SystemKey::of_row(n, r)?,
            n.section_from_m[r],
            n.section_to_m[r],
        ))
    }

    /// The metres (rounded; from <= to) of link positions `from..to` of segment row `r` by its
    /// road system reference.
    pub fn system_metres(&self, r: usize, from: f64, to: f64) -> (u32, u32) {
        let a = system_meter_exact(&self.network, r, from).round() as u32;
        let b = system_meter_exact(&self.network, r, to).round() as u32;
        (a.min(b), a.max(b))
    }
}

#[cfg(test)]
mod tests;
