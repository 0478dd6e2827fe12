//! v2 road references (vegreferanse) from the road-system objects placed on the sequences.
//!
//! 915 Vegsystem gives the category (11276 Vegkategori, short name E/R/F/K/P/S), the phase
//! (11278 Vegfase, short name V/A/P/F) and the number (11277 Vegnummer) of every stretch of a
//! sequence it covers. 916 Strekning gives hp = strekning × 100 + delstrekning (11281, 11284;
//! S1D1 → hp 101) and the metre values: metre 0 at the start of the object's first placement,
//! growing along its placements in their listed order (a `MOT` placement counts from its end).
//! Fallback where no 916 covers a piece: hp 1 (strekning 0, delstrekning 1, as hp 1 unfolds)
//! and metres measured along the sequence from the start of the 915 placement. Pieces of links that no 915 covers have no v2 road reference:
//! they become rows without one (`NO_ROAD_REF`), counted.

use std::collections::HashMap;

use super::summary::Summary;
use super::uberiket::{Placement, RoadObject, Value};
use crate::catalog::Catalog;
use crate::geo::extent::position_ok;

pub const VEGSYSTEM: u32 = 915;
const CATEGORY: u32 = 11276;
const NUMBER: u32 = 11277;
const PHASE: u32 = 11278;
pub const STREKNING: u32 = 916;
const SECTION: u32 = 11281;
const SUBSECTION: u32 = 11284;
/// 916's Arm (ja / nei).
const ARM: u32 = 11292;
/// 916's Adskilte løp (med / nei / mot) and Trafikantgruppe (K / G).
const SEPARATE: u32 = 11283;
const SECTION_TRAFFIC_GROUP: u32 = 11289;
/// 920 Sideanleggsdel: a piece of a side facility (its Trafikantgruppe: K / G).
pub const SIDEANLEGGSDEL: u32 = 920;
const SIDE_TRAFFIC_GROUP: u32 = 11291;

/// The hp of every piece while 916 Strekning is not read.
pub const FALLBACK_HP: u16 = 1;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoadSystem {
    pub from: f64,
    pub to: f64,
    /// The 915 object's id and version.
    pub object: (u64, u32),
    pub category: u8,
    pub status: u8,
    pub number: u32,
}

/// One placement of a 916 Strekning on a sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Section {
    pub from: f64,
    pub to: f64,
    pub hp: u16,
    /// Strekning and delstrekning as the 916 gives them.
    pub section: u16,
    pub subsection: u16,
    /// Arm: ja.
    pub arm: bool,
    pub against: bool,
    /// The 916 object's id and version.
    pub id: (u64, u32),
    /// Index of the 916 object in `RoadRefs::sections`, and of this placement in its list.
    pub object: usize,
    pub placement: usize,
    /// Trafikantgruppe (K, G) when the 916 gives it.
    pub traffic_group: Option<u8>,
    /// Adskilte løp: index into `SEPARATE_CARRIAGEWAYS` (0 = Nei when not given).
    pub separate: u8,
}

/// One placement of a 920 Sideanleggsdel on a sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SideFacility {
    pub from: f64,
    pub to: f64,
    /// Trafikantgruppe (K, G) when the 920 gives it.
    pub traffic_group: Option<u8>,
}

#[derive(Debug, Default)]
pub struct RoadRefs {
    by_sequence: HashMap<u64, Vec<RoadSystem>>,
    sections_by_sequence: HashMap<u64, Vec<Section>>,
    sides_by_sequence: HashMap<u64, Vec<SideFacility>>,
    /// Per 916 object, its placements in listed order: (sequence, from, to).
    pub sections: Vec<Vec<(u64, f64, f64)>>,
}

fn integer(o: &RoadObject, p: u32) -> Option<i64> {
    match o.egenskaper.get(&p.to_string()) {
        Some(Value::HeltallEgenskap { verdi }) => Some(*verdi),
        _ => None,
    }
}

fn short_letter(catalog: &Catalog, property: u32, value: Option<&Value>) -> Option<u8> {
    short_name(catalog, property, value)?.bytes().next()
}

/// The catalogue's short name of an enumerated value (`med`, `K`, …).
fn short_name<'c>(catalog: &'c Catalog, property: u32, value: Option<&Value>) -> Option<&'c str> {
    let Some(Value::EnumEgenskap { verdi }) = value else {
        return None;
    };
    let (_, p) = catalog.property(property)?;
    let v = p.allowed_value(u32::try_from(*verdi).ok()?)?;
    Some(&v.short_name)
}

/// A trafikantgruppe value as the network stores it: K or G.
fn traffic_group(catalog: &Catalog, o: &RoadObject, property: u32) -> Option<u8> {
    match short_name(catalog, property, o.egenskaper.get(&property.to_string()))? {
        "K" | "kjørende" => Some(b'K'),
        "G" | "gåendeOgSyklende" => Some(b'G'),
        _ => None,
    }
}

/// 916's adskilte løp as an index into `SEPARATE_CARRIAGEWAYS` (absent: Nei).
fn separate(catalog: &Catalog, o: &RoadObject) -> u8 {
    use crate::snapshot::columns::{SEPARATE_AGAINST, SEPARATE_NO, SEPARATE_WITH};
    match short_name(catalog, SEPARATE, o.egenskaper.get(&SEPARATE.to_string())) {
        Some(v) if v.eq_ignore_ascii_case("med") => SEPARATE_WITH,
        Some(v) if v.eq_ignore_ascii_case("mot") => SEPARATE_AGAINST,
        _ => SEPARATE_NO,
    }
}

impl RoadRefs {
    /// Add a 915 Vegsystem object's placements.
    pub fn add(&mut self, catalog: &Catalog, o: &RoadObject, summary: &mut Summary) {
        let get = |p: u32| o.egenskaper.get(&p.to_string());
        let category = short_letter(catalog, CATEGORY, get(CATEGORY));
        let status = short_letter(catalog, PHASE, get(PHASE));
        let number = match get(NUMBER) {
            Some(Value::HeltallEgenskap { verdi }) => u32::try_from(*verdi).ok(),
            _ => None,
        };
        let (Some(category), Some(status), Some(number)) = (category, status, number) else {
            summary.skip("915 Vegsystem without a known vegkategori, vegfase and vegnummer: no road reference from it");
            return;
        };
        let Some(Placement::StedfestingLinjer { linjer }) = &o.stedfesting else {
            summary.skip("915 Vegsystem without line placements: no road reference from it");
            return;
        };
        for l in linjer {
            if !position_ok(l.startposisjon) || !position_ok(l.sluttposisjon) {
                summary.skip("915 Vegsystem placement with a position outside 0..1: no road reference from it");
                continue;
            }
            self.by_sequence.entry(l.id).or_default().push(RoadSystem {
                from: l.startposisjon.min(l.sluttposisjon),
                to: l.startposisjon.max(l.sluttposisjon),
                object: (o.id, o.versjon),
                category,
                status,
                number,
            });
        }
    }

    /// Add a 920 Sideanleggsdel object's placements: the network rows under them are a side
    /// facility.
    pub fn add_side_facility(&mut self, catalog: &Catalog, o: &RoadObject, summary: &mut Summary) {
        let Some(Placement::StedfestingLinjer { linjer }) = &o.stedfesting else {
            summary.skip("920 Sideanleggsdel without line placements: no side facility from it");
            return;
        };
        let group = traffic_group(catalog, o, SIDE_TRAFFIC_GROUP);
        for l in linjer {
            if !position_ok(l.startposisjon) || !position_ok(l.sluttposisjon) {
                summary.skip("920 Sideanleggsdel placement with a position outside 0..1: no side facility from it");
                continue;
            }
            self.sides_by_sequence
                .entry(l.id)
                .or_default()
                .push(SideFacility {
                    from: l.startposisjon.min(l.sluttposisjon),
                    to: l.startposisjon.max(l.sluttposisjon),
                    traffic_group: group,
                });
        }
    }

    /// The 920 Sideanleggsdel placement covering position `at` of `sequence`, if any.
    pub fn side_facility_at(&self, sequence: u64, at: f64) -> Option<SideFacility> {
        self.sides_by_sequence
            .get(&sequence)?
            .iter()
            .find(|s| s.from <= at && at <= s.to)
            .copied()
    }

    /// Add a 916 Strekning object's placements.
    pub fn add_section(&mut self, catalog: &Catalog, o: &RoadObject, summary: &mut Summary) {
        let numbers = integer(o, SECTION)
            .zip(integer(o, SUBSECTION))
            .filter(|(_, d)| (1..100).contains(d))
            .and_then(|(s, d)| {
                let hp = u16::try_from(s * 100 + d).ok()?;
                Some((hp, u16::try_from(s).ok()?, u16::try_from(d).ok()?))
            });
        let Some((hp, section, subsection)) = numbers else {
            summary.skip("916 Strekning without strekning and delstrekning (1-99): fallback hp/metres where it lies");
            return;
        };
        let Some(Placement::StedfestingLinjer { linjer }) = &o.stedfesting else {
            summary.skip("916 Strekning without line placements: fallback hp/metres where it lies");
            return;
        };
        let object = self.sections.len();
        let (group, separate) = (
            traffic_group(catalog, o, SECTION_TRAFFIC_GROUP),
            separate(catalog, o),
        );
        let arm = short_name(catalog, ARM, o.egenskaper.get(&ARM.to_string()))
            .is_some_and(|v| v.eq_ignore_ascii_case("ja"));
        let mut list = Vec::new();
        for l in linjer {
            if !position_ok(l.startposisjon) || !position_ok(l.sluttposisjon) {
                summary.skip("916 Strekning placement with a position outside 0..1: fallback hp/metres where it lies");
                continue;
            }
            let (from, to) = (
                l.startposisjon.min(l.sluttposisjon),
                l.startposisjon.max(l.sluttposisjon),
            );
            let i = list.len();
            list.push((l.id, from, to));
            self.sections_by_sequence
                .entry(l.id)
                .or_default()
                .push(Section {
                    from,
                    to,
                    hp,
                    section,
                    subsection,
                    arm,
                    against: l.retning.as_deref() == Some("MOT"),
                    id: (o.id, o.versjon),
                    object,
                    placement: i,
                    traffic_group: group,
                    separate,
                });
        }
        self.sections.push(list);
    }

    /// Split `a..b` of `sequence` at the 915, 916 and 920 placement ends: pieces in order, each
    /// with the road system (None = no 915 there) and the 916 placement covering it (the 920
    /// covering a piece: `side_facility_at` its middle).
    pub fn pieces(&self, sequence: u64, a: f64, b: f64) -> Vec<Piece> {
        let systems = self
            .by_sequence
            .get(&sequence)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let sections = self
            .sections_by_sequence
            .get(&sequence)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let sides = self
            .sides_by_sequence
            .get(&sequence)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut cuts = vec![a, b];
        let ends = systems
            .iter()
            .flat_map(|s| [s.from, s.to])
            .chain(sections.iter().flat_map(|s| [s.from, s.to]))
            .chain(sides.iter().flat_map(|s| [s.from, s.to]));
        for x in ends {
            if x > a && x < b {
                cuts.push(x);
            }
        }
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        cuts.windows(2)
            .filter(|w| w[1] > w[0])
            .map(|w| {
                let mid = (w[0] + w[1]) / 2.0;
                let s = systems
                    .iter()
                    .find(|s| s.from <= mid && mid <= s.to)
                    .copied();
                let sec = sections
                    .iter()
                    .find(|s| s.from <= mid && mid <= s.to)
                    .copied();
                (w[0], w[1], s, sec)
            })
            .collect()
    }
}

/// A piece of a veglenke: (from, to, road system, 916 placement).
pub type Piece = (f64, f64, Option<RoadSystem>, Option<Section>);

#[cfg(test)]
mod tests {
    use super::*;

    fn sys(from: f64, to: f64, number: u32) -> RoadSystem {
        RoadSystem {
            from,
            to,
            object: (0, 0),
            category: b'K',
            status: b'V',
            number,
        }
    }

    #[test]
    fn pieces_split_at_placement_ends_and_leave_gaps_without_system() {
        let mut r = RoadRefs::default();
        r.by_sequence
            .insert(7, vec![sys(0.2, 0.5, 1), sys(0.5, 0.7, 2)]);
        let p = r.pieces(7, 0.0, 0.6);
        let got: Vec<(f64, f64, Option<u32>)> = p
            .iter()
            .map(|(a, b, s, _)| (*a, *b, s.map(|s| s.number)))
            .collect();
        assert_eq!(
            got,
            vec![(0.0, 0.2, None), (0.2, 0.5, Some(1)), (0.5, 0.6, Some(2))]
        );
        assert_eq!(r.pieces(8, 0.1, 0.3), vec![(0.1, 0.3, None, None)]);
    }
}
