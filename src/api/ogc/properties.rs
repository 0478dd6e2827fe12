//! `properties` (OGC API Features Part 6, Property Selection) on `items` and on one feature:
//! a comma-separated list of the property names each feature carries; the others are left
//! out (the geometry and the id stay). The names are a collection's returnables: on an object
//! collection `nvdbId`, `vegobjekttype`, `vegobjekttypenavn`, `versjon`, `egengeometri` and its
//! property types (not geometry, not sensitive) by name, an enumeration's `<name>_id` beside
//! it; on `vegnett` the members of the v2 link document but `geometri`. A name is matched as
//! written, else ignoring case; an unknown name is 400 (Part 6 allows ignoring it, but a typo
//! would then silently empty a column). An empty list leaves every feature without properties.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::error::{OgcError, OgcResult};
use super::{Query, NETWORK};
use crate::api::geojson::Selection;
use crate::api::read::vegnett::LinkDoc;
use crate::catalog::{ObjectType, ValueKind};
use crate::generation::Generation;

pub(super) const PROPERTIES: &str = "properties";

/// The members every road object feature carries before its values.
const OBJECT_MEMBERS: [&str; 5] = [
    "nvdbId",
    "vegobjekttype",
    "vegobjekttypenavn",
    "versjon",
    "egengeometri",
];

/// The property names a feature of type `t` may carry, in the order they are written.
pub(super) fn of_type(t: &ObjectType) -> Vec<String> {
    let mut names: Vec<String> = OBJECT_MEMBERS.iter().map(|n| n.to_string()).collect();
    for p in &t.property_types {
        if p.is_geometry() || p.sensitivity > 0 {
            continue;
        }
        names.push(p.name.clone());
        if p.storage() == ValueKind::Enum {
            names.push(format!("{}_id", p.name));
        }
    }
    names
}

/// The property names of a `vegnett` feature: the link document's members but `geometri`
/// (read from its OpenAPI schema, so the two cannot differ).
pub(super) fn of_network() -> Vec<String> {
    use utoipa::openapi::schema::Schema;
    use utoipa::openapi::RefOr;
    match <LinkDoc as utoipa::PartialSchema>::schema() {
        RefOr::T(Schema::Object(o)) => o
            .properties
            .keys()
            .filter(|k| *k != "geometri")
            .cloned()
            .collect(),
        _ => Vec::new(),
    }
}

/// The returnables of collection `id` of `g` (`None`: not a collection of `g`).
pub(super) fn returnables(g: &Generation, id: &str) -> Option<Vec<String>> {
    if id == NETWORK {
        return Some(of_network());
    }
    let t = g.catalog.object_type(id.parse().ok()?)?;
    Some(of_type(t))
}

/// The request's `properties` against the collection's returnables.
pub(super) fn selection(q: &Query, returnables: &[String]) -> OgcResult<Selection> {
    let Some(list) = q.get(PROPERTIES) else {
        return Ok(None);
    };
    let mut keep = BTreeSet::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let found = returnables
            .iter()
            .find(|r| *r == name)
            .or_else(|| {
                let lower = name.to_lowercase();
                returnables.iter().find(|r| r.to_lowercase() == lower)
            })
            .ok_or_else(|| {
                OgcError::bad(format!(
                    "properties: '{}' is not a property of this collection's features",
                    crate::api::error::echoed(name)
                ))
            })?;
        keep.insert(found.clone());
    }
    Ok(Some(Arc::new(keep)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_names_are_the_link_document_members() {
        let names = of_network();
        for n in [
            "veglenkeid",
            "kortform",
            "kommune",
            "vegsystemreferanse",
            "topologinivå",
        ] {
            assert!(names.iter().any(|m| m == n), "{n} in {names:?}");
        }
        assert!(!names.iter().any(|m| m == "geometri"));
    }

    #[test]
    fn names_match_as_written_then_ignoring_case_and_unknown_ones_are_refused() {
        let r: Vec<String> = ["nvdbId", "Fartsgrense", "Fartsgrense_id"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let q = Query::parse(Some("properties=fartsgrense,%20nvdbId,,"));
        let keep = selection(&q, &r).expect("valid").expect("given");
        assert_eq!(
            keep.iter().map(String::as_str).collect::<Vec<_>>(),
            ["Fartsgrense", "nvdbId"]
        );
        let empty = selection(&Query::parse(Some("properties=")), &r).expect("valid");
        assert_eq!(empty.expect("given").len(), 0);
        assert!(selection(&Query::parse(None), &r).expect("valid").is_none());
        let e = selection(&Query::parse(Some("properties=nvdbId,Fart")), &r).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(e.description.contains("'Fart'"), "{}", e.description);
    }
}
