//! Property values against the catalogue: data type, allowed values, decimals, min/maks,
//! feltlengde; EWKT geometry into storage coordinates.

use chrono::NaiveDate;

use super::object::ObjectCheck;
use super::Code;
use crate::catalog::{datatype, PropertyType, ValueKind};
use crate::changeset::model::Property;
use crate::error::{EngineError, Invalid};
use crate::geo::extent::{coord_ok, X_RANGE, Y_RANGE, Z_RANGE};
use crate::geo::srid::{to_storage, Srid};
use crate::geo::Coord3;
use crate::value::Value;

fn digits_of(text: &str) -> usize {
    text.chars().filter(|c| c.is_ascii_digit()).count()
}

/// A scalar property value checked against the catalogue.
pub(super) fn property_value(
    check: &mut ObjectCheck,
    p: &PropertyType,
    given: &Property,
) -> Option<Value> {
    let pid = Some(p.id);
    if !given.structs.is_empty() || !given.binaries.is_empty() {
        check.error(
            Code::InvalidValue,
            format!(
                "{} ({}) har datatype {}; struktur og binær er ikke tillatt",
                p.name, p.id, p.datatype_tekst
            ),
            pid,
        );
        return None;
    }
    let kind = p.storage();
    if kind == ValueKind::Enum {
        return enum_value(check, p, given);
    }
    if !given.enum_ids.is_empty() {
        check.error(
            Code::InvalidValue,
            format!("{} ({}) er ikke en enum-egenskap; bruk verdi", p.name, p.id),
            pid,
        );
        return None;
    }
    let raw = given.values.first().map(|s| s.trim()).unwrap_or("");
    match kind {
        ValueKind::Integer | ValueKind::Float => number_value(check, p, raw, kind),
        _ => text_value(check, p, raw),
    }
}

/// An enumerated value: an allowed value's id (given as an id or as text).
fn enum_value(check: &mut ObjectCheck, p: &PropertyType, given: &Property) -> Option<Value> {
    let pid = Some(p.id);
    let id = match (given.enum_ids.first(), given.values.first()) {
        (Some(&id), _) => Some(id),
        (None, Some(text)) => text.trim().parse::<u32>().ok(),
        _ => None,
    };
    match id.and_then(|id| p.allowed_value(id).map(|_| id)) {
        Some(id) => Some(Value::Int(id as i64)),
        None => {
            check.error(
                Code::InvalidEnumValue,
                format!(
                    "{:?} er ikke en tillatt verdi for {} ({})",
                    given
                        .enum_ids
                        .first()
                        .map(|i| i.to_string())
                        .or(given.values.first().cloned()),
                    p.name,
                    p.id
                ),
                pid,
            );
            None
        }
    }
}

/// A number: finite, within the decimals, minimum, maximum and field length the catalogue
/// allows (every broken rule is reported).
fn number_value(
    check: &mut ObjectCheck,
    p: &PropertyType,
    raw: &str,
    kind: ValueKind,
) -> Option<Value> {
    let pid = Some(p.id);
    let text = raw.replace(',', ".");
    let Some(v) = text.parse::<f64>().ok().filter(|v| v.is_finite()) else {
        check.error(
            Code::InvalidValue,
            format!("'{raw}' er ikke et endelig tall ({}, {})", p.name, p.id),
            pid,
        );
        return None;
    };
    // trailing zeros carry no precision: "0,30" has one decimal (the SOSI example)
    let decimals = text
        .split('.')
        .nth(1)
        .map(|d| d.trim_end_matches('0').len())
        .unwrap_or(0);
    let allowed = p.decimals.unwrap_or(0) as usize;
    let mut ok = true;
    if decimals > allowed {
        check.error(
            Code::TooManyDecimals,
            format!(
                "{raw} har {decimals} desimaler; {} ({}) tillater {allowed}",
                p.name, p.id
            ),
            pid,
        );
        ok = false;
    }
    if let Some(max) = p.max {
        if v > max {
            check.error(
                Code::AboveAbsoluteMaximum,
                format!(
                    "{raw} er større enn maksimum {max} for {} ({})",
                    p.name, p.id
                ),
                pid,
            );
            ok = false;
        }
    }
    if let Some(min) = p.min {
        if v < min {
            check.error(
                Code::BelowAbsoluteMinimum,
                format!(
                    "{raw} er mindre enn minimum {min} for {} ({})",
                    p.name, p.id
                ),
                pid,
            );
            ok = false;
        }
    }
    if let Some(fl) = p.field_length {
        if digits_of(&text) > fl as usize {
            check.error(
                Code::ExceedsFieldLength,
                format!("{raw} har flere enn {fl} sifre ({}, {})", p.name, p.id),
                pid,
            );
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    Some(if kind == ValueKind::Integer {
        Value::Int(v as i64)
    } else {
        Value::Float(v)
    })
}

/// A text, date, short date, time or boolean value, normalised, within its field length.
fn text_value(check: &mut ObjectCheck, p: &PropertyType, raw: &str) -> Option<Value> {
    let pid = Some(p.id);
    let normalised = match p.datatype {
        datatype::DATE => {
            let d = NaiveDate::parse_from_str(raw, "%Y-%m-%d")
                .or_else(|_| NaiveDate::parse_from_str(raw, "%Y%m%d"));
            d.ok().map(|d| d.format("%Y-%m-%d").to_string())
        }
        datatype::SHORT_DATE => {
            let ok = raw.len() == 5
                && NaiveDate::parse_from_str(&format!("2000-{raw}"), "%Y-%m-%d").is_ok();
            ok.then(|| raw.to_string())
        }
        datatype::TIME => chrono::NaiveTime::parse_from_str(raw, "%H:%M")
            .ok()
            .map(|t| t.format("%H:%M").to_string()),
        datatype::BOOLEAN => match raw.to_ascii_lowercase().as_str() {
            "true" | "ja" | "1" => Some("true".into()),
            "false" | "nei" | "0" => Some("false".into()),
            _ => None,
        },
        _ => Some(raw.to_string()),
    };
    let Some(text) = normalised else {
        check.error(
            Code::InvalidValue,
            format!(
                "'{raw}' er ikke en gyldig verdi av datatype {} ({}, {})",
                p.datatype_tekst, p.name, p.id
            ),
            pid,
        );
        return None;
    };
    if p.datatype == datatype::TEXT {
        if let Some(fl) = p.field_length {
            if text.chars().count() > fl as usize {
                check.error(
                    Code::ExceedsFieldLength,
                    format!(
                        "Verdien har {} tegn; {} ({}) tillater {fl}",
                        text.chars().count(),
                        p.name,
                        p.id
                    ),
                    pid,
                );
                return None;
            }
        }
    }
    Some(Value::Text(text))
}

/// Why a geometry value was refused; `Display` is the UGYLDIG_GEOMETRI message.
#[derive(Debug, thiserror::Error)]
pub enum GeometryError {
    /// An unknown srid or a coordinate outside it.
    #[error("{0}")]
    Coordinates(String),
    #[error("Ugyldig WKT for {name} ({id}): {reason}")]
    Wkt {
        name: String,
        id: u32,
        reason: String,
    },
    #[error("Tomt punkt for {name} ({id})")]
    EmptyPoint { name: String, id: u32 },
    #[error("{name} ({id}) har datatype {datatype}; geometrien passer ikke (flater støttes ikke)")]
    WrongKind {
        name: String,
        id: u32,
        datatype: String,
    },
    #[error("{name} ({id}) har en koordinat som ikke er et endelig tall")]
    NonFinite { name: String, id: u32 },
    #[error("{name} ({id}) har en koordinat ({x:?} {y:?} {z:?}) utenfor det lagrede koordinatsystemets gyldige område (UTM 33: x {}..{}, y {}..{}, z {}..{})", X_RANGE.0, X_RANGE.1, Y_RANGE.0, Y_RANGE.1, Z_RANGE.0, Z_RANGE.1)]
    OutsideExtent {
        name: String,
        id: u32,
        x: f64,
        y: f64,
        z: f64,
    },
}

impl GeometryError {
    fn coordinates(e: EngineError) -> GeometryError {
        GeometryError::Coordinates(coordinate_message(e))
    }
}

/// An EWKT geometry value (`srid=32633;POINT(x y)`, optionally with quality parameters before
/// the WKT, as the converters write it) in storage coordinates.
pub fn geometry_value(p: &PropertyType, given: &Property) -> Result<Vec<Coord3>, GeometryError> {
    let text = given.values.first().map(String::as_str).unwrap_or("");
    let mut srid = Srid::Utm33Wgs84;
    let mut wkt_text = text.trim();
    for part in text.split(';') {
        let part = part.trim();
        if let Some(code) = part
            .strip_prefix("srid=")
            .or_else(|| part.strip_prefix("SRID="))
        {
            srid = Srid::parse(code).map_err(GeometryError::coordinates)?;
        }
        wkt_text = part;
    }
    let named = || (p.name.clone(), p.id);
    let parsed: wkt::Wkt<f64> = wkt_text.parse().map_err(|e: &str| {
        let (name, id) = named();
        GeometryError::Wkt {
            name,
            id,
            reason: e.to_string(),
        }
    })?;
    let coords: Vec<(f64, f64, f64)> = match (&parsed, p.datatype) {
        (wkt::Wkt::Point(pt), datatype::GEOM_POINT) => {
            let c = pt.coord().ok_or_else(|| {
                let (name, id) = named();
                GeometryError::EmptyPoint { name, id }
            })?;
            vec![(c.x, c.y, c.z.unwrap_or(0.0))]
        }
        (wkt::Wkt::LineString(l), datatype::GEOM_LINE) if l.coords().len() >= 2 => l
            .coords()
            .iter()
            .map(|c| (c.x, c.y, c.z.unwrap_or(0.0)))
            .collect(),
        _ => {
            let (name, id) = named();
            return Err(GeometryError::WrongKind {
                name,
                id,
                datatype: p.datatype_tekst.clone(),
            });
        }
    };
    coords
        .into_iter()
        .map(|(x, y, z)| {
            let (x, y) = to_storage(srid, x, y).map_err(GeometryError::coordinates)?;
            if !(x.is_finite() && y.is_finite() && z.is_finite()) {
                let (name, id) = named();
                return Err(GeometryError::NonFinite { name, id });
            }
            if !coord_ok(&[x, y, z]) {
                let (name, id) = named();
                return Err(GeometryError::OutsideExtent { name, id, x, y, z });
            }
            Ok([x, y, z])
        })
        .collect()
}

/// The validation message of an srid or coordinate error (the read API words the same errors
/// alike in `api::error`).
fn coordinate_message(e: EngineError) -> String {
    match e {
        EngineError::Invalid(Invalid::UnknownSrid { text }) => format!(
            "Ugyldig srid: '{text}'. Gyldige verdier: 32633, 25833, 5973, 6173, 4326, 25832, 25835, utm33, wgs84"
        ),
        EngineError::Invalid(Invalid::CoordinateNotFinite) => {
            "Koordinaten må være et endelig tall".to_string()
        }
        EngineError::Invalid(Invalid::GeographicOutOfRange { lon, lat }) => {
            format!("Ugyldig geografisk koordinat: lon {lon}, lat {lat}")
        }
        EngineError::Invalid(Invalid::NotTransformable { reason }) => {
            format!("Koordinaten kan ikke transformeres: {reason}")
        }
        other => other.to_string(),
    }
}
