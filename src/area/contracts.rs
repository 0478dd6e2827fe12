//! Contract areas (kontraktsområder), derived deterministically from the real municipalities:
//! per county, operation contracts (Driftskontrakt) over runs of neighbouring municipality
//! numbers (about five each), one electrical contract (Elektrokontrakt) and one tunnel contract
//! (Tunnelkontrakt) over the whole county. Names follow the real pattern
//! `<nummer> <name> <from>-<to>` (e.g. "1538 Indre Romsdal - Tunnelrenhold 2014-2018").

use super::{ContractArea, County, Municipality};

pub(super) fn derive(
    municipalities: &[Municipality],
    all_counties: &[County],
) -> Vec<ContractArea> {
    let mut out = Vec::new();
    let mut counties: Vec<u8> = municipalities.iter().map(|m| m.county).collect();
    counties.dedup();
    for county in counties {
        let ms: Vec<&Municipality> = municipalities
            .iter()
            .filter(|m| m.county == county)
            .collect();
        let base = county as u32 * 100;
        let mut seq = 1u32;
        for (i, chunk) in ms.chunks(5).enumerate() {
            let start = 2019 + (i as u32 % 5);
            let number = base + seq;
            seq += 1;
            out.push(ContractArea {
                number,
                name: format!("{number:04} {} {}-{}", chunk[0].name, start, start + 5),
                kind: "Driftskontrakt".to_string(),
                municipalities: chunk.iter().map(|m| m.number).collect(),
            });
        }
        let all: Vec<u16> = ms.iter().map(|m| m.number).collect();
        // the county-wide contracts are named after the county
        let county_name = all_counties
            .iter()
            .find(|c| c.number == county)
            .map_or(ms[0].name.as_str(), |c| c.name.as_str());
        for (kind, label) in [("Elektrokontrakt", "ELEKTRO"), ("Tunnelkontrakt", "Tunnel")] {
            let number = base + 90 + seq % 10;
            seq += 1;
            out.push(ContractArea {
                number,
                name: format!("{number:04} {label} {county_name} 2020-2025"),
                kind: kind.to_string(),
                municipalities: all.clone(),
            });
        }
    }
    out
}
