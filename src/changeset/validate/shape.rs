//! What makes a changeset request itself malformed (HTTP 400 at registration): `check_shape`
//! (dates, counts, ids, partial operations) and `check_numbers` (non-finite numbers).

use std::collections::HashSet;

use super::parse_date;
use crate::catalog::{Catalog, ValueKind};
use crate::changeset::model::{has_non_finite, Changeset, Operation, RoadObject};

/// Most objects one changeset may hold.
pub const MAX_OBJECTS: usize = 100_000;

/// Why a changeset is malformed; `Display` is the fault entity's message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    #[error("Ugyldig effektDato '{0}': bruk ÅÅÅÅ-MM-DD")]
    EffectDate(String),
    #[error("Mangler datakatalogversjon")]
    NoCatalogueVersion,
    #[error("Endringssettet inneholder ingen vegobjekter")]
    NoObjects,
    #[error("Endringssettet har {0} vegobjekter; største tillatte antall er {MAX_OBJECTS}")]
    TooManyObjects(usize),
    #[error("Må være unik: tempId")]
    DuplicateTempId,
    #[error("{op}: vegObjekt av type {type_id} mangler nvdbId eller versjon")]
    MissingIdOrVersion { op: &'static str, type_id: u32 },
    #[error("slett: vegObjekt {0} mangler kaskadeSletting (ja eller nei)")]
    MissingCascade(u64),
    #[error("{0}: hver egenskap, assosiasjon og lokasjon må ha operasjon (oppdater eller slett)")]
    MissingPartialOp(&'static str),
    #[error("Ugyldig sluttDato '{0}': bruk ÅÅÅÅ-MM-DD")]
    EndDate(String),
    #[error("{op}: {name} ({id}) har verdien '{value}', som ikke er et endelig tall")]
    NonFinite {
        op: &'static str,
        name: String,
        id: u32,
        value: String,
    },
}

/// Problems that make the request malformed (HTTP 400 at registration or validation).
pub fn check_shape(c: &Changeset) -> Result<(), ShapeError> {
    if parse_date(&c.effect_date).is_none() {
        return Err(ShapeError::EffectDate(c.effect_date.clone()));
    }
    if c.catalogue_version.trim().is_empty() {
        return Err(ShapeError::NoCatalogueVersion);
    }
    let n = c.object_count();
    if n == 0 {
        return Err(ShapeError::NoObjects);
    }
    if n > MAX_OBJECTS {
        return Err(ShapeError::TooManyObjects(n));
    }
    let mut temp_ids = HashSet::new();
    for (op, o) in c.objects() {
        if let Some(t) = &o.temp_id {
            if !temp_ids.insert(t.as_str()) {
                return Err(ShapeError::DuplicateTempId);
            }
        }
        check_object_shape(op, o)?;
    }
    Ok(())
}

/// One object's ids, cascade flag, partial operations and end date.
fn check_object_shape(op: Operation, o: &RoadObject) -> Result<(), ShapeError> {
    let name = op.api_name();
    if op != Operation::Register && (o.nvdb_id.is_none() || o.version.is_none()) {
        return Err(ShapeError::MissingIdOrVersion {
            op: name,
            type_id: o.type_id,
        });
    }
    if op == Operation::Delete {
        match o.cascade.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("ja") | Some("nei") => {}
            _ => return Err(ShapeError::MissingCascade(o.nvdb_id.unwrap_or_default())),
        }
    }
    if op.is_partial() {
        let missing = o.properties.iter().any(|p| p.op.is_none())
            || o.associations.iter().any(|a| a.op.is_none())
            || o.location.as_ref().is_some_and(|l| l.op.is_none());
        if missing {
            return Err(ShapeError::MissingPartialOp(name));
        }
    }
    if let Some(d) = &o.end_date {
        if parse_date(d).is_none() {
            return Err(ShapeError::EndDate(d.clone()));
        }
    }
    Ok(())
}

/// Non-finite numbers (`NaN`, `inf`, `1e999`) in values of number and geometry properties:
/// malformed (HTTP 400 at registration). Positions are refused already when the body is read.
pub fn check_numbers(c: &Changeset, catalog: &Catalog) -> Result<(), ShapeError> {
    for (op, o) in c.objects() {
        let Some(t) = catalog.object_type(o.type_id) else {
            continue;
        };
        for p in &o.properties {
            let Some(pt) = t.property(p.type_id) else {
                continue;
            };
            let numeric =
                pt.is_geometry() || matches!(pt.storage(), ValueKind::Integer | ValueKind::Float);
            if let Some(v) = p.values.iter().find(|v| numeric && has_non_finite(v)) {
                return Err(ShapeError::NonFinite {
                    op: op.api_name(),
                    name: pt.name.clone(),
                    id: pt.id,
                    value: v.clone(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn changeset(v: serde_json::Value) -> Changeset {
        serde_json::from_value(v).unwrap()
    }

    fn one(o: serde_json::Value, part: &str) -> Changeset {
        changeset(
            json!({"effektDato": "2026-01-01", "datakatalogversjon": "2.38",
            part: {"vegObjekter": [o]}}),
        )
    }

    /// Every malformation is refused with the message the fault entity has always carried.
    #[test]
    fn every_malformation_has_its_message() {
        let cases = [
            (
                changeset(json!({"effektDato": "2026-13-01", "datakatalogversjon": "2.38"})),
                "Ugyldig effektDato '2026-13-01': bruk ÅÅÅÅ-MM-DD",
            ),
            (
                changeset(json!({"effektDato": "2026-01-01", "datakatalogversjon": " "})),
                "Mangler datakatalogversjon",
            ),
            (
                changeset(json!({"effektDato": "2026-01-01", "datakatalogversjon": "2.38"})),
                "Endringssettet inneholder ingen vegobjekter",
            ),
            (
                changeset(json!({"effektDato": "2026-01-01", "datakatalogversjon": "2.38",
                    "registrer": {"vegObjekter": [
                        {"typeId": 95, "tempId": "a"}, {"typeId": 95, "tempId": "a"}]}})),
                "Må være unik: tempId",
            ),
            (
                one(json!({"typeId": 95, "nvdbId": 1}), "oppdater"),
                "oppdater: vegObjekt av type 95 mangler nvdbId eller versjon",
            ),
            (
                one(json!({"typeId": 95, "nvdbId": 7, "versjon": 1}), "slett"),
                "slett: vegObjekt 7 mangler kaskadeSletting (ja eller nei)",
            ),
            (
                one(
                    json!({"typeId": 95, "nvdbId": 7, "versjon": 1,
                        "egenskaper": [{"typeId": 1877, "verdi": ["1"]}]}),
                    "delvisOppdater",
                ),
                "delvisOppdater: hver egenskap, assosiasjon og lokasjon må ha operasjon (oppdater eller slett)",
            ),
            (
                one(json!({"typeId": 95, "sluttDato": "i morgen"}), "registrer"),
                "Ugyldig sluttDato 'i morgen': bruk ÅÅÅÅ-MM-DD",
            ),
        ];
        for (c, message) in cases {
            assert_eq!(check_shape(&c).unwrap_err().to_string(), message);
        }
        let ok = one(
            json!({"typeId": 95, "nvdbId": 7, "versjon": 1, "kaskadeSletting": "JA"}),
            "slett",
        );
        assert_eq!(check_shape(&ok), Ok(()));
    }

    #[test]
    fn too_many_objects_names_the_limit() {
        let e = ShapeError::TooManyObjects(MAX_OBJECTS + 1);
        assert_eq!(
            e.to_string(),
            format!(
                "Endringssettet har {} vegobjekter; største tillatte antall er {MAX_OBJECTS}",
                MAX_OBJECTS + 1
            )
        );
    }

    #[test]
    fn non_finite_numbers_are_malformed_only_in_number_properties() {
        let cat = Catalog::embedded();
        let bad = one(
            json!({"typeId": 95, "egenskaper": [{"typeId": 1877, "verdi": ["NaN"]}]}),
            "registrer",
        );
        let e = check_numbers(&bad, cat).unwrap_err();
        assert!(
            e.to_string().starts_with("registrer: ")
                && e.to_string()
                    .ends_with("(1877) har verdien 'NaN', som ikke er et endelig tall"),
            "{e}"
        );
        let text = one(
            json!({"typeId": 95, "egenskaper": [{"typeId": 10854, "verdi": ["NaN"]}]}),
            "registrer",
        );
        assert_eq!(check_numbers(&text, cat), Ok(()));
    }
}
