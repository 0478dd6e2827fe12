//! `gruppering` parsed into the engine's dimensions (`query::grouped`), and the rows of a grouped
//! answer: the group's keys by the names of the grouping (NVDB LES v4's `fylke`, `kommune`,
//! `vegkategori`; vegdb's `region`, `vegavdeling`, `kontraktsomrade`, `vegfase`, `typeveg`,
//! `egenskap_<id>`), then `antall` and `strekningslengde` (whole meters, as `statistikk`).

use axum::response::{IntoResponse, Response};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use smallvec::SmallVec;
use std::sync::Arc;

use crate::api::error::{ApiError, ApiResult};
use crate::api::media::Negotiated;
use crate::api::params::Params;
use crate::area::AreaKind;
use crate::catalog::{ObjectType, ValueKind};
use crate::generation::Generation;
use crate::query::grouped::{whole_meters, Dimension, Group, MAX_DIMENSIONS, NONE};
use crate::snapshot::columns::ROAD_TYPES;

/// The parameter's name.
pub const GRUPPERING: &str = "gruppering";
/// The grouping parameter alone (for the parameter lists).
pub const GROUPING: &[&str] = &[GRUPPERING];

/// A bad `gruppering`: 422/4005, as every other bad parameter value of the read API.
fn bad(message: String) -> ApiError {
    ApiError::bad(4005, message)
}

const NAMES: &str =
    "fylke, kommune, region, vegavdeling, kontraktsomrade, vegkategori, vegfase, typeveg";

/// The dimensions `gruppering` names (in its order). `object_type`: the type of an object
/// statistics request (only then is `egenskap(<id>)` allowed); `sensitive`: the caller may see
/// sensitive values (and so group by them).
pub fn parse_grouping(
    p: &Params,
    object_type: Option<&ObjectType>,
    sensitive: bool,
) -> ApiResult<Vec<Dimension>> {
    let mut dims: Vec<Dimension> = Vec::new();
    for item in p.items(GRUPPERING) {
        let d = dimension(item, object_type, sensitive)?;
        if dims.contains(&d) {
            return Err(bad(format!("gruppering nevner '{item}' to ganger")));
        }
        dims.push(d);
    }
    if dims.is_empty() {
        let also = if object_type.is_some() {
            ", egenskap(<egenskapstype-id>)"
        } else {
            ""
        };
        return Err(bad(format!(
            "gruppering mangler: gi en eller flere av {NAMES}{also}"
        )));
    }
    if dims.len() > MAX_DIMENSIONS {
        return Err(bad(format!(
            "gruppering har {} ledd; høyst {MAX_DIMENSIONS} er tillatt",
            dims.len()
        )));
    }
    Ok(dims)
}

fn dimension(
    item: &str,
    object_type: Option<&ObjectType>,
    sensitive: bool,
) -> ApiResult<Dimension> {
    let echo = crate::api::error::echoed(item);
    Ok(match item.to_ascii_lowercase().as_str() {
        "fylke" => Dimension::Area(AreaKind::County),
        "kommune" => Dimension::Area(AreaKind::Municipality),
        "region" => Dimension::Area(AreaKind::Region),
        "vegavdeling" => Dimension::Area(AreaKind::RoadDepartment),
        "kontraktsomrade" => Dimension::Area(AreaKind::Contract),
        "vegkategori" => Dimension::Category,
        "vegfase" => Dimension::Phase,
        "typeveg" => Dimension::RoadType,
        other => {
            let Some(id) = other
                .strip_prefix("egenskap(")
                .and_then(|r| r.strip_suffix(')'))
            else {
                return Err(bad(format!(
                    "Ukjent gruppering '{echo}': bruk {NAMES} eller egenskap(<egenskapstype-id>)"
                )));
            };
            let Some(t) = object_type else {
                return Err(bad(format!(
                    "gruppering '{echo}': vegnettet har ingen egenskaper"
                )));
            };
            let id: u32 = id.trim().parse().map_err(|_| {
                bad(format!(
                    "Ugyldig gruppering '{echo}': forventet egenskap(<egenskapstype-id>)"
                ))
            })?;
            let Some(pt) = t.property(id) else {
                return Err(bad(format!(
                    "gruppering '{echo}': vegobjekttype {} har ingen egenskapstype {id}",
                    t.id
                )));
            };
            if pt.storage() != ValueKind::Enum {
                return Err(bad(format!(
                    "gruppering '{echo}': egenskapstype {id} ({}) har ikke tillatte verdier",
                    pt.name
                )));
            }
            if pt.sensitivity == 1 && !sensitive {
                return Err(bad(format!(
                    "gruppering '{echo}': egenskapstype {id} er skjermet (sensitivitet 1)"
                )));
            }
            Dimension::Enum(id)
        }
    })
}

/// The column (member) name of a dimension.
pub fn column(d: Dimension) -> String {
    match d {
        Dimension::Area(AreaKind::County) => "fylke".into(),
        Dimension::Area(AreaKind::Municipality) => "kommune".into(),
        Dimension::Area(AreaKind::Region) => "region".into(),
        Dimension::Area(AreaKind::RoadDepartment) => "vegavdeling".into(),
        Dimension::Area(AreaKind::Contract) => "kontraktsomrade".into(),
        Dimension::Area(AreaKind::Route) => "riksvegrute".into(),
        Dimension::Category => "vegkategori".into(),
        Dimension::Phase => "vegfase".into(),
        Dimension::RoadType => "typeveg".into(),
        Dimension::Enum(id) => format!("egenskap_{id}"),
    }
}

/// One key of a row.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Number(u32),
    Text(String),
    Null,
    /// An enumerated value: `{enum_id, verdi}` (both null for objects without a value).
    Enum {
        id: Option<u32>,
        value: Value,
    },
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Number(n) => s.serialize_u32(*n),
            Cell::Text(t) => s.serialize_str(t),
            Cell::Null => s.serialize_none(),
            Cell::Enum { id, value } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("enum_id", id)?;
                m.serialize_entry("verdi", value)?;
                m.end()
            }
        }
    }
}

/// One row of a grouped answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The key columns' names (one list shared by every row of a table).
    names: Arc<[String]>,
    keys: SmallVec<[Cell; MAX_DIMENSIONS]>,
    antall: u64,
    strekningslengde: u64,
}

impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.keys.len() + 2))?;
        for (name, cell) in self.names.iter().zip(&self.keys) {
            m.serialize_entry(name, cell)?;
        }
        m.serialize_entry("antall", &self.antall)?;
        m.serialize_entry("strekningslengde", &self.strekningslengde)?;
        m.end()
    }
}

impl Cell {
    /// Appends the cell as compact JSON, byte for byte as its `Serialize` writes it.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        match self {
            Cell::Number(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
            Cell::Text(t) => serde_json::to_writer(&mut *out, t)?,
            Cell::Null => out.extend_from_slice(b"null"),
            Cell::Enum { id, value } => {
                out.extend_from_slice(b"{\"enum_id\":");
                match id {
                    Some(id) => out.extend_from_slice(itoa::Buffer::new().format(*id).as_bytes()),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"verdi\":");
                serde_json::to_writer(&mut *out, value)?;
                out.push(b'}');
            }
        }
        Ok(())
    }
}

/// The rows of `groups` as compact JSON, byte for byte as [`rows`] and their `Serialize`
/// write them, without making the rows: each key name is escaped once per table, and each
/// dimension's key text once per code (an area number is written as it comes).
fn groups_json(
    g: &Generation,
    object_type: Option<&ObjectType>,
    dims: &[Dimension],
    groups: &[Group],
    meters: &[u64],
) -> serde_json::Result<Vec<u8>> {
    let names: Vec<Vec<u8>> = dims
        .iter()
        .map(|&d| serde_json::to_vec(&column(d)))
        .collect::<Result<_, _>>()?;
    let mut texts: Vec<foldhash::HashMap<u32, Vec<u8>>> = vec![Default::default(); dims.len()];
    let mut out = Vec::with_capacity(2 + groups.len() * (40 + 30 * dims.len()));
    out.push(b'[');
    for (i, (group, &m)) in groups.iter().zip(meters).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        for (k, (&d, &code)) in dims.iter().zip(&group.key).enumerate() {
            out.extend_from_slice(&names[k]);
            out.push(b':');
            match d {
                Dimension::Area(kind) if kind != AreaKind::Contract => {
                    out.extend_from_slice(itoa::Buffer::new().format(code).as_bytes())
                }
                _ => {
                    let text = match texts[k].entry(code) {
                        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                        std::collections::hash_map::Entry::Vacant(e) => {
                            let mut text = Vec::new();
                            cell(g, object_type, d, code).write_json(&mut text)?;
                            e.insert(text)
                        }
                    };
                    out.extend_from_slice(text);
                }
            }
            out.push(b',');
        }
        out.extend_from_slice(b"\"antall\":");
        out.extend_from_slice(itoa::Buffer::new().format(group.count).as_bytes());
        out.extend_from_slice(b",\"strekningslengde\":");
        out.extend_from_slice(itoa::Buffer::new().format(m).as_bytes());
        out.push(b'}');
    }
    out.push(b']');
    Ok(out)
}

/// The value of code `code` in dimension `d`.
fn cell(g: &Generation, object_type: Option<&ObjectType>, d: Dimension, code: u32) -> Cell {
    match d {
        Dimension::Area(AreaKind::Contract) => g
            .areas
            .contracts
            .get(code as usize)
            .map_or(Cell::Null, |c| Cell::Text(c.name.clone())),
        Dimension::Area(_) => Cell::Number(code),
        Dimension::Category | Dimension::Phase if code == NONE => Cell::Null,
        Dimension::Category | Dimension::Phase => {
            Cell::Text(char::from_u32(code).unwrap_or('?').to_string())
        }
        Dimension::RoadType => ROAD_TYPES
            .get(code as usize)
            .map_or(Cell::Null, |t| Cell::Text(t.to_string())),
        Dimension::Enum(_) if code == NONE => Cell::Enum {
            id: None,
            value: Value::Null,
        },
        Dimension::Enum(pid) => {
            let allowed = object_type
                .and_then(|t| t.property(pid))
                .and_then(|p| p.allowed_value(code));
            let value = match allowed {
                Some(v) => match v.number {
                    Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => Value::from(n as i64),
                    Some(n) => Value::from(n),
                    None => Value::from(v.name.clone()),
                },
                None => Value::Null,
            };
            Cell::Enum {
                id: Some(code),
                value,
            }
        }
    }
}

/// Whether the groups of these dimensions split the ungrouped length (each piece of length in
/// exactly one group): not with contract areas (a municipality is in several), nor without
/// segmentation when a dimension is on the network (a whole object in each of its groups).
pub fn splits_length(dims: &[Dimension], segment: bool) -> bool {
    !dims.contains(&Dimension::Area(AreaKind::Contract))
        && (segment || dims.iter().all(|d| matches!(d, Dimension::Enum(_))))
}

/// The rows of `groups` (sorted by the engine); lengths in whole meters by
/// [`whole_meters`]: when the groups split the length, they add up to the ungrouped
/// `strekningslengde`.
pub fn rows(
    g: &Generation,
    object_type: Option<&ObjectType>,
    dims: &[Dimension],
    groups: &[Group],
    splits: bool,
) -> Vec<Row> {
    let meters = meters(groups, splits);
    let names: Arc<[String]> = dims.iter().map(|&d| column(d)).collect();
    groups
        .iter()
        .zip(meters)
        .map(|(gr, m)| Row {
            names: names.clone(),
            keys: dims
                .iter()
                .zip(&gr.key)
                .map(|(&d, &code)| cell(g, object_type, d, code))
                .collect(),
            antall: gr.count,
            strekningslengde: m,
        })
        .collect()
}

/// The groups' lengths in whole meters by [`whole_meters`] (adding up to the ungrouped length's
/// when the groups split it).
fn meters(groups: &[Group], splits: bool) -> Vec<u64> {
    let lengths: Vec<f64> = groups.iter().map(|gr| gr.length_m).collect();
    let total = splits.then(|| lengths.iter().sum::<f64>());
    whole_meters(&lengths, total)
}

/// A grouped table's answer in the negotiated format: compact JSON straight from the groups
/// ([`groups_json`]), else the [`rows`] by [`answer`].
pub fn grouped_answer(
    n: Negotiated,
    g: &Generation,
    object_type: Option<&ObjectType>,
    dims: &[Dimension],
    groups: &[Group],
    splits: bool,
) -> Response {
    if !n.compact_json() {
        let table = rows(g, object_type, dims, groups, splits);
        return answer(n, &table, &grouped_columns(dims));
    }
    match groups_json(g, object_type, dims, groups, &meters(groups, splits)) {
        Ok(body) => crate::api::media::json_body(n, body),
        Err(e) => {
            ApiError::from(crate::error::EngineError::Internal(e.to_string())).into_response()
        }
    }
}

/// A table answer in the negotiated format: JSON or XML (a list of rows), or CSV with
/// `columns` first (`api::csv`).
pub fn answer<T: Serialize>(n: Negotiated, rows: &[T], columns: &[String]) -> Response {
    if !n.csv {
        return crate::api::media::json(n, rows);
    }
    let values: Result<Vec<Value>, _> = rows.iter().map(serde_json::to_value).collect();
    match values {
        Ok(values) => {
            let names: Vec<&str> = columns.iter().map(String::as_str).collect();
            let mut r = crate::api::csv::table(&values, &names).into_response();
            r.headers_mut()
                .insert(axum::http::header::CONTENT_TYPE, n.content_type());
            r
        }
        Err(e) => {
            ApiError::from(crate::error::EngineError::Internal(e.to_string())).into_response()
        }
    }
}

/// The header of a grouped table: the dimensions' columns, `antall`, `strekningslengde`.
pub fn grouped_columns(dims: &[Dimension]) -> Vec<String> {
    let mut c: Vec<String> = Vec::new();
    for &d in dims {
        match d {
            Dimension::Enum(_) => {
                let name = column(d);
                c.push(format!("{name}.enum_id"));
                c.push(format!("{name}.verdi"));
            }
            _ => c.push(column(d)),
        }
    }
    c.push("antall".into());
    c.push("strekningslengde".into());
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(names: &Arc<[String]>, keys: Vec<Cell>, antall: u64, meters: u64) -> Row {
        Row {
            names: names.clone(),
            keys: keys.into_iter().collect(),
            antall,
            strekningslengde: meters,
        }
    }

    /// Every kind of cell, names and texts that need escaping: each cell's hand-written JSON
    /// is serde's, byte for byte, and so is a row made of them (the frame `groups_json` writes).
    #[test]
    fn cells_write_what_serde_writes() {
        let names: Arc<[String]> = vec![
            "kommune".to_string(),
            "kontrakts\"omrade\u{1}".to_string(),
            "egenskap_2021".to_string(),
        ]
        .into();
        let rows = [
            row(
                &names,
                vec![
                    Cell::Number(301),
                    Cell::Text("9103 Vest\\fold \"ø\"\n".into()),
                    Cell::Enum {
                        id: Some(2726),
                        value: Value::from(30),
                    },
                ],
                4610,
                620_054,
            ),
            row(
                &names,
                vec![
                    Cell::Null,
                    Cell::Text(String::new()),
                    Cell::Enum {
                        id: None,
                        value: Value::Null,
                    },
                ],
                0,
                u64::MAX,
            ),
            row(
                &names,
                vec![
                    Cell::Number(u32::MAX),
                    Cell::Null,
                    Cell::Enum {
                        id: Some(7),
                        value: Value::from(2.5),
                    },
                ],
                1,
                0,
            ),
            row(
                &names,
                vec![
                    Cell::Number(0),
                    Cell::Text("Asfalt".into()),
                    Cell::Enum {
                        id: Some(u32::MAX),
                        value: Value::from("Ja \u{7f} \u{2028}"),
                    },
                ],
                17,
                3,
            ),
        ];
        for r in &rows {
            for cell in &r.keys {
                let mut got = Vec::new();
                cell.write_json(&mut got).unwrap();
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    serde_json::to_string(cell).unwrap()
                );
            }
        }
    }
}
