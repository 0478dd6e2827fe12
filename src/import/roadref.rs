//! v2 road references (vegreferanse) from the road-system objects placed on the sequences.
//!
//! 915 Vegsystem gives the category (11276 Vegkategori, short name E/R/F/K/P/S), the phase
//! (11278 Vegfase, short name V/A/P/F) and the number (11277 Vegnummer) of every stretch of a
//! sequence it covers. 916 Strekning is not read yet; the documented fallback is used for every
//! piece: hp 1 and metre values measured along the sequence from the start of the 915
//! placement (so they grow along one placement and restart at the next). Pieces of links that no
//! 915 covers have no v2 road reference: they are not part of the v2 network and are counted.

use std::collections::HashMap;

use super::summary::Summary;
use super::uberiket::{Placement, RoadObject, Value};
use crate::catalog::Catalog;

pub const VEGSYSTEM: u32 = 915;
const CATEGORY: u32 = 11276;
const NUMBER: u32 = 11277;
const PHASE: u32 = 11278;

/// The hp of every piece while 916 Strekning is not read.
pub const FALLBACK_HP: u16 = 1;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoadSystem {
    pub from: f64,
    pub to: f64,
    pub category: u8,
    pub status: u8,
    pub number: u32,
}

#[derive(Debug, Default)]
pub struct RoadRefs {
    by_sequence: HashMap<u64, Vec<RoadSystem>>,
}

fn short_letter(catalog: &Catalog, property: u32, value: Option<&Value>) -> Option<u8> {
    let Some(Value::EnumEgenskap { verdi }) = value else {
        return None;
    };
    let (_, p) = catalog.property(property)?;
    let v = p.allowed_value(u32::try_from(*verdi).ok()?)?;
    v.short_name.bytes().next()
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
            self.by_sequence.entry(l.id).or_default().push(RoadSystem {
                from: l.startposisjon.min(l.sluttposisjon),
                to: l.startposisjon.max(l.sluttposisjon),
                category,
                status,
                number,
            });
        }
    }

    /// Split `a..b` of `sequence` at the 915 placement ends: pieces in order, each with the
    /// road system covering it (None = no 915 there).
    pub fn pieces(&self, sequence: u64, a: f64, b: f64) -> Vec<(f64, f64, Option<RoadSystem>)> {
        let systems = self
            .by_sequence
            .get(&sequence)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut cuts = vec![a, b];
        for s in systems {
            for x in [s.from, s.to] {
                if x > a && x < b {
                    cuts.push(x);
                }
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
                (w[0], w[1], s)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sys(from: f64, to: f64, number: u32) -> RoadSystem {
        RoadSystem {
            from,
            to,
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
            .map(|(a, b, s)| (*a, *b, s.map(|s| s.number)))
            .collect();
        assert_eq!(
            got,
            vec![(0.0, 0.2, None), (0.2, 0.5, Some(1)), (0.5, 0.6, Some(2))]
        );
        assert_eq!(r.pieces(8, 0.1, 0.3), vec![(0.1, 0.3, None)]);
    }
}
