//! Property values that obey the catalogue: enum ids from the allowed values, numbers within
//! min/maks, decimals and feltlengde, text within feltlengde, dates as `YYYY-MM-DD`.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::catalog::{datatype, PropertyType, ValueKind};

pub use crate::value::Value;

const WORDS: &[&str] = &[
    "Nordre", "Søndre", "Vestre", "Østre", "Gamle", "Nye", "Store", "Lille", "Øvre", "Nedre",
];
const PLACES: &[&str] = &[
    "Bakken", "Haugen", "Moen", "Dalen", "Vika", "Lia", "Berget", "Strand", "Sletta", "Åsen",
    "Tunet", "Brekka", "Holmen", "Eidet", "Skogen", "Næss", "Myra", "Furua",
];
const NOTES: &[&str] = &[
    "Registrert ved befaring",
    "Kontrollert",
    "Oppdatert etter tiltak",
    "Data fra driftskontrakt",
    "Innmålt",
    "Se prosjektarkiv",
];
const OWNERS: &[&str] = &[
    "Ola Nordmann",
    "Kari Hansen",
    "Per Olsen",
    "Anne Berg",
    "Nils Johansen",
    "Ingrid Lie",
];

/// Largest absolute value that fits `field_length` characters with `decimals` decimals
/// (digits + separator, sign excluded).
fn max_by_length(field_length: Option<u32>, decimals: u32) -> f64 {
    match field_length {
        Some(fl) => {
            let int_digits = fl
                .saturating_sub(if decimals > 0 { decimals + 1 } else { 0 })
                .max(1);
            10f64.powi(int_digits as i32) - 10f64.powi(-(decimals as i32))
        }
        None => 1e9,
    }
}

/// Inclusive numeric bounds of a property, honouring min/maks and feltlengde.
pub fn number_bounds(p: &PropertyType) -> (f64, f64) {
    let dec = p.decimals.unwrap_or(0);
    let cap = max_by_length(p.field_length, dec);
    let lo = p.min.unwrap_or(0.0).max(-cap);
    let hi = p.max.unwrap_or(cap).min(cap);
    if hi < lo {
        (lo, lo)
    } else {
        (lo, hi)
    }
}

fn clip(s: String, p: &PropertyType) -> String {
    let max = p.field_length.unwrap_or(50).max(1) as usize;
    s.chars().take(max).collect()
}

pub fn random_date(rng: &mut ChaCha8Rng, from_year: i32, to_year: i32) -> String {
    let y = rng.random_range(from_year..=to_year);
    let m = rng.random_range(1..=12);
    let d = rng.random_range(1..=28);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A valid random value for `p`. `salt` varies text between objects.
pub fn random_value(rng: &mut ChaCha8Rng, p: &PropertyType, salt: u64) -> Option<Value> {
    Some(match p.storage() {
        ValueKind::Enum => {
            let vals = p.allowed_values.as_ref()?;
            if vals.is_empty() {
                return None;
            }
            Value::Int(vals[rng.random_range(0..vals.len())].id as i64)
        }
        ValueKind::Integer => {
            let (lo, hi) = number_bounds(p);
            let (lo, hi) = (lo.ceil() as i64, hi.floor() as i64);
            // prefer small realistic values in wide ranges
            let hi = if hi - lo > 1000 && rng.random_bool(0.8) {
                lo + (hi - lo).min(500)
            } else {
                hi
            };
            Value::Int(rng.random_range(lo..=hi.max(lo)))
        }
        ValueKind::Float => {
            let (lo, hi) = number_bounds(p);
            let hi = if hi - lo > 1000.0 { lo + 100.0 } else { hi };
            let scale = 10f64.powi(p.decimals.unwrap_or(0) as i32);
            let v = (rng.random_range(lo..=hi) * scale).round() / scale;
            Value::Float(v.clamp(lo, hi))
        }
        ValueKind::Text => match p.datatype {
            datatype::DATE => Value::Text(random_date(rng, 1995, 2024)),
            datatype::SHORT_DATE => Value::Text(format!(
                "{:02}-{:02}",
                rng.random_range(1..=12),
                rng.random_range(1..=28)
            )),
            datatype::TIME => Value::Text(format!(
                "{:02}:{:02}",
                rng.random_range(0..24),
                rng.random_range(0..4) * 15
            )),
            datatype::BOOLEAN => Value::Text(
                if rng.random_bool(0.5) {
                    "true"
                } else {
                    "false"
                }
                .into(),
            ),
            _ => {
                let lname = p.sosinavn.to_lowercase();
                let text = if p.sensitivity > 0 || lname.contains("eier_navn") {
                    OWNERS[rng.random_range(0..OWNERS.len())].to_string()
                } else if lname.contains("navn") {
                    format!(
                        "{} {}",
                        WORDS[rng.random_range(0..WORDS.len())],
                        PLACES[rng.random_range(0..PLACES.len())]
                    )
                } else if lname.contains("nummer")
                    || lname.ends_with("_id")
                    || lname.ends_with("id")
                {
                    format!("{}", 1000 + salt % 900_000)
                } else if lname.contains("referanse") || lname.contains("arkiv") {
                    format!("{}/{}", 2010 + salt % 15, 100 + salt % 9000)
                } else {
                    NOTES[rng.random_range(0..NOTES.len())].to_string()
                };
                Value::Text(clip(text, p))
            }
        },
        ValueKind::Geometry => return None,
    })
}

/// Does `value` obey the catalogue rules for `p`? (Used by generator tests and, later, by
/// changeset validation.)
pub fn is_valid(p: &PropertyType, value: &Value) -> bool {
    match (p.storage(), value) {
        (ValueKind::Enum, Value::Int(id)) => p.allowed_value(*id as u32).is_some(),
        (ValueKind::Integer, Value::Int(v)) => {
            let (lo, hi) = number_bounds(p);
            (*v as f64) >= lo && (*v as f64) <= hi
        }
        (ValueKind::Float, Value::Float(v)) => {
            let (lo, hi) = number_bounds(p);
            let scale = 10f64.powi(p.decimals.unwrap_or(0) as i32);
            *v >= lo && *v <= hi && ((v * scale).round() - v * scale).abs() < 1e-6
        }
        (ValueKind::Text, Value::Text(s)) => {
            // feltlengde of dates counts YYYYMMDD; the API writes them YYYY-MM-DD
            match p.datatype {
                datatype::DATE => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
                datatype::TIME => chrono::NaiveTime::parse_from_str(s, "%H:%M").is_ok(),
                _ => s.chars().count() <= p.field_length.unwrap_or(u32::MAX) as usize,
            }
        }
        _ => false,
    }
}
