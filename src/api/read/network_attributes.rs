//! The network attribute parameters of LES v4 (`typeveg`, `detaljniva`, `trafikantgruppe`,
//! `adskiltelop`, `sideanlegg`, `konnekteringslenker`, `vegsystemreferanse`), shared by `/vegnett/lenker`, the object
//! lists and `statistikk`, parsed into a [`NetworkAttributeFilter`]. Values are matched without
//! regard to case; an unknown value is 422 with code 4006 (a bad text list) and the valid
//! values named, a bad boolean 422/4008, as the other filter parameters.

use crate::api::error::{ApiError, ApiResult};
use crate::api::params::Params;
use crate::query::attributes::{NetworkAttributeFilter, ROAD_TYPE_NAMES, TRAFFIC_GROUP_NAMES};
use crate::query::system_ref::SystemRefFilter;
use crate::snapshot::columns::{DETAIL_LEVEL_SHORT, SEPARATE_CARRIAGEWAYS};

/// The parameter names, in the order the documents list them.
pub const NETWORK_ATTRIBUTE_PARAMS: &[&str] = &[
    "typeveg",
    "detaljniva",
    "trafikantgruppe",
    "adskiltelop",
    "sideanlegg",
    "konnekteringslenker",
    "vegsystemreferanse",
];

/// Each item of list parameter `name` looked up in `names` (without regard to case): the
/// values, or 422/4006 naming the valid ones.
fn lookup<T: Copy>(p: &Params, name: &str, names: &[(&str, T)]) -> ApiResult<Vec<T>> {
    let mut out = Vec::new();
    let valid = || {
        names
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<&str>>()
            .join(", ")
    };
    if p.has(name) && p.items(name).next().is_none() {
        return Err(ApiError::bad(
            4006,
            format!("{name} er tom. Gyldige verdier: {}", valid()),
        ));
    }
    for item in p.items(name) {
        let item = item.trim();
        let hit = names
            .iter()
            .find(|(n, _)| n.to_lowercase() == item.to_lowercase())
            .ok_or_else(|| {
                ApiError::bad(
                    4006,
                    format!(
                        "Ugyldig verdi i {name}: '{}'. Gyldige verdier: {}",
                        crate::api::error::echoed(item),
                        valid()
                    ),
                )
            })?;
        out.push(hit.1);
    }
    Ok(out)
}

/// The network attribute filters of a request (empty when none is given).
pub fn parse_network_attributes(p: &Params) -> ApiResult<NetworkAttributeFilter> {
    let details: Vec<(&str, u8)> = DETAIL_LEVEL_SHORT
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u8))
        .collect();
    let separate: Vec<(&str, u8)> = SEPARATE_CARRIAGEWAYS
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u8))
        .collect();
    let groups: Vec<(&str, u8)> = TRAFFIC_GROUP_NAMES
        .iter()
        .map(|g| (*g, g.as_bytes()[0]))
        .collect();
    Ok(NetworkAttributeFilter {
        road_types: lookup(p, "typeveg", &ROAD_TYPE_NAMES)?,
        detail_levels: lookup(p, "detaljniva", &details)?,
        traffic_groups: lookup(p, "trafikantgruppe", &groups)?,
        separate_carriageways: lookup(p, "adskiltelop", &separate)?,
        side_facility: p.bool("sideanlegg")?,
        without_connection_links: p.bool("konnekteringslenker")? == Some(false),
        system_refs: system_refs(p)?,
    })
}

/// `vegsystemreferanse`: at most `MAX_LIST_ITEMS` references (else 422/4006), each parsed
/// (a bad one 422/4005).
fn system_refs(p: &Params) -> ApiResult<Vec<SystemRefFilter>> {
    use crate::query::limits::MAX_LIST_ITEMS;
    let n = p.items("vegsystemreferanse").count();
    if n > MAX_LIST_ITEMS {
        return Err(ApiError::bad(
            4006,
            format!("vegsystemreferanse har {n} verdier; høyst {MAX_LIST_ITEMS} er tillatt"),
        ));
    }
    Ok(p.items("vegsystemreferanse")
        .map(SystemRefFilter::parse)
        .collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::attributes::NO_ROAD_TYPE;
    use crate::snapshot::columns::ROAD_TYPES;

    fn parse(q: &str) -> ApiResult<NetworkAttributeFilter> {
        let p = Params::parse(Some(q), NETWORK_ATTRIBUTE_PARAMS)?;
        parse_network_attributes(&p)
    }

    #[test]
    fn v4_values_parse_without_regard_to_case() {
        let f = parse("detaljniva=VT,vtkb&adskiltelop=med,NEI&trafikantgruppe=k&typeveg=enkelBilveg,rundkjøring,sti&sideanlegg=false&konnekteringslenker=false").unwrap();
        assert_eq!(f.detail_levels, [0, 3]);
        assert_eq!(f.separate_carriageways, [1, 0]);
        assert_eq!(f.traffic_groups, [b'K']);
        assert_eq!(f.road_types, [0, 3, NO_ROAD_TYPE]);
        assert_eq!(f.side_facility, Some(false));
        assert!(f.without_connection_links);
        assert!(parse("konnekteringslenker=true").unwrap().is_empty());
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn bad_values_are_422_naming_the_valid_ones() {
        for (q, code, valid) in [
            ("detaljniva=VTX", 4006, "VT, KB, KF, VTKB"),
            ("adskiltelop=ja", 4006, "Nei, Med, Mot"),
            ("trafikantgruppe=X", 4006, "K, G"),
            ("typeveg=motorveg", 4006, "enkelBilveg"),
            ("sideanlegg=kanskje", 4008, ""),
            ("konnekteringslenker=2", 4008, ""),
        ] {
            let e = parse(q).unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (422, code), "{q}");
            assert!(e.message.contains(valid), "{q}: {}", e.message);
        }
    }

    #[test]
    fn the_stored_road_types_are_named_by_their_v4_value() {
        for (i, name) in ROAD_TYPES.iter().enumerate() {
            let v4 = ROAD_TYPE_NAMES
                .iter()
                .filter(|(_, t)| *t == i as u8)
                .count();
            assert_eq!(v4, 1, "{name}");
        }
    }
}
