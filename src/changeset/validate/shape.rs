//! What makes a changeset request itself malformed (HTTP 400 at registration): `check_shape`
//! (text fields, dates, counts, ids, partial operations) and `check_numbers` (non-finite
//! numbers).

use std::collections::HashSet;

use super::parse_date;
use crate::catalog::{Catalog, ValueKind};
use crate::changeset::model::{has_non_finite, Changeset, Operation, RoadObject};

/// Most objects one changeset may hold.
pub const MAX_OBJECTS: usize = 100_000;

/// Longest identifier-like text of a changeset (`tempId`, `ressursId`, `format`, `felt`,
/// `ansvarlig`, `datakatalogversjon`, dates, `kaskadeSletting`), in characters. Property values
/// have no own limit: the body limit and, at validation, the property's `feltlengde` bound them.
pub const MAX_ID_CHARS: usize = 255;

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
    /// A control character in a text field (`position` counts characters from 1).
    #[error("{field} inneholder kontrolltegnet U+{code:04X} (tegn {position}); {allowed}")]
    ControlCharacter {
        field: String,
        code: u32,
        position: usize,
        allowed: &'static str,
    },
    #[error("{field} er {chars} tegn lang; største tillatte lengde er {MAX_ID_CHARS} tegn")]
    TooLong { field: String, chars: usize },
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
    // first, so the messages below never echo a control character or a huge text
    check_texts(c)?;
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

/// How a text field is checked: an identifier-like field refuses every control character
/// and is at most `MAX_ID_CHARS` long; a free-text property value may hold tab, line feed and
/// carriage return (multi-line text properties) but no other control character.
#[derive(Clone, Copy, PartialEq)]
enum TextKind {
    Id,
    Value,
}

fn check_text(
    field: impl FnOnce() -> String,
    text: &str,
    kind: TextKind,
) -> Result<(), ShapeError> {
    let bad = text.chars().enumerate().find(|(_, ch)| {
        ch.is_control() && !(kind == TextKind::Value && matches!(ch, '\t' | '\n' | '\r'))
    });
    if let Some((i, ch)) = bad {
        return Err(ShapeError::ControlCharacter {
            field: field(),
            code: ch as u32,
            position: i + 1,
            allowed: match kind {
                TextKind::Id => "kontrolltegn er ikke tillatt her",
                TextKind::Value => "av kontrolltegn tillates bare tabulator og linjeskift",
            },
        });
    }
    if kind == TextKind::Id && text.len() > MAX_ID_CHARS {
        let chars = text.chars().count();
        if chars > MAX_ID_CHARS {
            return Err(ShapeError::TooLong {
                field: field(),
                chars,
            });
        }
    }
    Ok(())
}

/// Every text of the changeset: no control characters (but tab and line breaks in property
/// values), identifiers at most `MAX_ID_CHARS` long. The fault names the field by its path,
/// e.g. `registrer/vegObjekt[0]/tempId`, and never echoes the text.
fn check_texts(c: &Changeset) -> Result<(), ShapeError> {
    use TextKind::{Id, Value};
    let top = [
        ("id", c.id.as_deref()),
        ("effektDato", Some(c.effect_date.as_str())),
        ("datakatalogversjon", Some(c.catalogue_version.as_str())),
        ("ansvarlig", c.responsible.as_deref()),
    ];
    for (name, text) in top {
        if let Some(t) = text {
            check_text(|| name.to_string(), t, Id)?;
        }
    }
    for op in Operation::ALL {
        for (i, o) in c.part(op).objects.iter().enumerate() {
            let at = || format!("{}/vegObjekt[{i}]", op.api_name());
            let own = [
                ("tempId", o.temp_id.as_deref()),
                ("sluttDato", o.end_date.as_deref()),
                ("kaskadeSletting", o.cascade.as_deref()),
            ];
            for (name, text) in own {
                if let Some(t) = text {
                    check_text(|| format!("{}/{name}", at()), t, Id)?;
                }
            }
            for p in &o.properties {
                let at = || format!("{}/egenskap[typeId={}]", at(), p.type_id);
                for v in &p.values {
                    check_text(|| format!("{}/verdi", at()), v, Value)?;
                }
                for m in p.structs.iter().flat_map(|s| &s.members) {
                    if let Some(v) = &m.value {
                        check_text(|| format!("{}/struktur/medlem/verdi", at()), v, Value)?;
                    }
                }
                for b in &p.binaries {
                    for (name, text) in [("ressursId", &b.resource_id), ("format", &b.format)] {
                        if let Some(t) = text {
                            check_text(|| format!("{}/binaer/{name}", at()), t, Id)?;
                        }
                    }
                }
            }
            for a in &o.associations {
                for t in &a.temp_ids {
                    let field = || format!("{}/assosiasjon[typeId={}]/tempId", at(), a.type_id);
                    check_text(field, t, Id)?;
                }
            }
            if let Some(l) = &o.location {
                let points = l.points.iter().map(|p| ("punkt", p.lanes.as_deref()));
                let lines = l.lines.iter().map(|p| ("linje", p.lanes.as_deref()));
                let turns = l.turns.iter().flat_map(|t| {
                    [
                        ("sving/fra", t.from.lanes.as_deref()),
                        ("sving/til", t.to.lanes.as_deref()),
                    ]
                });
                for (name, lanes) in points.chain(lines).chain(turns) {
                    if let Some(t) = lanes {
                        check_text(|| format!("{}/lokasjon/{name}/felt", at()), t, Id)?;
                    }
                }
            }
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
    fn control_characters_and_long_ids_name_the_field() {
        let text = |t: &str| {
            one(
                json!({"typeId": 95, "tempId": "a",
                    "egenskaper": [{"typeId": 10854, "verdi": [t]}]}),
                "registrer",
            )
        };
        // free text keeps tab and line breaks; every other control character is refused
        assert_eq!(check_shape(&text("a\tb\r\nc")), Ok(()));
        for ch in ['\0', '\u{1}', '\u{b}', '\u{1f}', '\u{7f}', '\u{9f}'] {
            let e = check_shape(&text(&format!("ab{ch}")))
                .unwrap_err()
                .to_string();
            let want = format!(
                "registrer/vegObjekt[0]/egenskap[typeId=10854]/verdi inneholder kontrolltegnet U+{:04X} (tegn 3)",
                ch as u32
            );
            assert!(e.starts_with(&want), "{e}");
        }
        // ids refuse them all, tab too
        let id = |t: &str| one(json!({"typeId": 95, "tempId": t}), "delvisKorriger");
        let e = check_shape(&id("a\tb")).unwrap_err().to_string();
        assert!(
            e.starts_with("delvisKorriger/vegObjekt[0]/tempId inneholder kontrolltegnet U+0009"),
            "{e}"
        );
        // the length counts characters, not bytes
        let ok = one(
            json!({"typeId": 95, "tempId": "ø".repeat(MAX_ID_CHARS)}),
            "registrer",
        );
        assert_eq!(check_shape(&ok), Ok(()));
        let long = one(
            json!({"typeId": 95, "tempId": "ø".repeat(MAX_ID_CHARS + 1)}),
            "registrer",
        );
        assert_eq!(
            check_shape(&long).unwrap_err().to_string(),
            format!("registrer/vegObjekt[0]/tempId er 256 tegn lang; største tillatte lengde er {MAX_ID_CHARS} tegn")
        );
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
