//! The converters of API SKRIV v2 (DOC-SKRIV2 `konverter.md`): SOSI-GeoJSON and SOSI files to a
//! changeset with `registrer` objects and no `lokasjon` (the client adds placements before
//! registering). Property keys carry the NVDB id as suffix (`Oppsettingsutstyr_1876`); enum
//! properties become `enum: [id]`, others `verdi: [text]` with `.` decimals; the geometry goes
//! into the type's geometry property as EWKT with the quality parameters before the WKT.

use serde_json::Value;

/// Why a SOSI or SOSI-GeoJSON document cannot become a changeset: the fault message, naming
/// the place (feature index or line number) and the problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConversionError(String);

impl From<String> for ConversionError {
    fn from(message: String) -> Self {
        ConversionError(message)
    }
}

impl From<&str> for ConversionError {
    fn from(message: &str) -> Self {
        ConversionError(message.to_string())
    }
}

use super::model::{Changeset, Part, Property, RoadObject};
use crate::catalog::{datatype, Catalog, ObjectType, ValueKind};

/// Most features/groups one conversion takes.
pub const MAX_FEATURES: usize = 100_000;

/// The numeric suffix of `Name_<id>`.
fn suffix_id(key: &str) -> Option<u32> {
    key.rsplit_once('_')?.1.parse().ok()
}

fn object_type<'c>(
    catalog: &'c Catalog,
    name: &str,
    at: &str,
) -> Result<&'c ObjectType, ConversionError> {
    let id = suffix_id(name)
        .ok_or_else(|| format!("{at}: objekttypenavn '{name}' mangler id som suffiks (Navn_id)"))?;
    catalog
        .object_type(id)
        .ok_or_else(|| format!("{at}: vegobjekttype {id} finnes ikke i datakatalogen").into())
}

/// One property `Name_<id> = value` of type `t`.
fn property(t: &ObjectType, key: &str, value: &str, at: &str) -> Result<Property, ConversionError> {
    let id = suffix_id(key)
        .ok_or_else(|| format!("{at}: egenskapen '{key}' mangler id som suffiks (Navn_id)"))?;
    let p = t.property(id).ok_or_else(|| {
        format!(
            "{at}: egenskapstype {id} ('{key}') finnes ikke for {} ({})",
            t.name, t.id
        )
    })?;
    let value = value.trim();
    let mut out = Property {
        type_id: id,
        ..Default::default()
    };
    match p.storage() {
        ValueKind::Enum => {
            let enum_id = value.parse::<u32>().map_err(|_| {
                format!("{at}: {key} er en enum-egenskap; verdien '{value}' er ikke en enum-id")
            })?;
            out.enum_ids.push(enum_id);
        }
        ValueKind::Integer | ValueKind::Float => out.values.push(value.replace(',', ".")),
        _ => out.values.push(value.to_string()),
    }
    Ok(out)
}

/// Quality parameters in the order the converter writes them.
const QUALITY: [&str; 5] = [
    "målemetode",
    "nøyaktighet",
    "synbarhet",
    "målemetodeHøyde",
    "nøyaktighetHøyde",
];

fn geometry_property(
    t: &ObjectType,
    kind: u16,
    ewkt: String,
    at: &str,
) -> Result<Property, ConversionError> {
    let p = t.geometry_property(kind).ok_or_else(|| {
        format!(
            "{at}: {} ({}) har ingen egenskap for {}",
            t.name,
            t.id,
            if kind == datatype::GEOM_POINT {
                "punktgeometri"
            } else {
                "linjegeometri"
            }
        )
    })?;
    Ok(Property {
        type_id: p.id,
        values: vec![ewkt],
        ..Default::default()
    })
}

fn changeset(catalog: &Catalog, objects: Vec<RoadObject>, today: &str) -> Changeset {
    Changeset {
        effect_date: today.to_string(),
        catalogue_version: catalog.version.version.clone(),
        register: Part { objects },
        ..Default::default()
    }
}

fn number_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn coord_text(c: &Value, at: &str) -> Result<String, ConversionError> {
    let a = c
        .as_array()
        .filter(|a| a.len() >= 2 && a.iter().all(Value::is_number))
        .ok_or_else(|| format!("{at}: ugyldig koordinat {c}"))?;
    Ok(a.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(" "))
}

/// SOSI-GeoJSON (a FeatureCollection) to a changeset.
pub fn from_sosi_geojson(
    doc: &Value,
    catalog: &Catalog,
    today: &str,
) -> Result<Changeset, ConversionError> {
    if doc.get("type").and_then(Value::as_str) != Some("FeatureCollection") {
        return Err("Forventet en GeoJSON FeatureCollection".into());
    }
    let srid = match doc.pointer("/crs/properties/name").and_then(Value::as_str) {
        None => 4326,
        Some(name) => name
            .rsplit(':')
            .next()
            .and_then(|c| c.parse::<u32>().ok())
            .filter(|c| [4326, 32633, 25833, 5973, 25832, 25835].contains(c))
            .ok_or_else(|| format!("Ukjent eller ikke støttet crs '{name}'"))?,
    };
    let features = doc
        .get("features")
        .and_then(Value::as_array)
        .ok_or("FeatureCollection mangler features")?;
    if features.len() > MAX_FEATURES {
        return Err(format!(
            "For mange features: {} (grensen er {MAX_FEATURES})",
            features.len()
        )
        .into());
    }
    let mut objects = Vec::with_capacity(features.len());
    for (i, f) in features.iter().enumerate() {
        let at = format!("features[{i}]");
        let props = f
            .get("properties")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{at}: mangler properties"))?;
        let type_name = props
            .get("objekttypenavn")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at}: mangler objekttypenavn"))?;
        let t = object_type(catalog, type_name, &at)?;
        let temp_id = f
            .get("id")
            .and_then(number_text)
            .unwrap_or_else(|| (i + 1).to_string());
        let mut o = RoadObject {
            type_id: t.id,
            temp_id: Some(temp_id),
            ..Default::default()
        };
        let mut quality = vec![format!("srid={srid}")];
        if let Some(d) = props.get("datafangstdato").and_then(number_text) {
            quality.push(format!("datafangstdato={d}"));
        }
        if let Some(k) = props.get("kvalitet").and_then(Value::as_object) {
            for q in QUALITY {
                if let Some(v) = k.get(q).and_then(number_text) {
                    quality.push(format!("{q}={v}"));
                }
            }
        }
        for (key, value) in props {
            if matches!(
                key.as_str(),
                "objekttypenavn" | "PTEMA" | "datafangstdato" | "kvalitet"
            ) {
                continue;
            }
            let text = number_text(value)
                .ok_or_else(|| format!("{at}: verdien av {key} må være tekst eller tall"))?;
            o.properties.push(property(t, key, &text, &at)?);
        }
        if let Some(g) = f.get("geometry").filter(|g| !g.is_null()) {
            let coords = g
                .get("coordinates")
                .ok_or_else(|| format!("{at}: geometrien mangler coordinates"))?;
            let (kind, wkt) = match g.get("type").and_then(Value::as_str) {
                Some("Point") => (
                    datatype::GEOM_POINT,
                    format!("POINT({})", coord_text(coords, &at)?),
                ),
                Some("LineString") => {
                    let pts = coords
                        .as_array()
                        .filter(|a| a.len() >= 2)
                        .ok_or_else(|| format!("{at}: LineString trenger minst to punkter"))?;
                    let parts: Result<Vec<String>, ConversionError> =
                        pts.iter().map(|c| coord_text(c, &at)).collect();
                    (
                        datatype::GEOM_LINE,
                        format!("LINESTRING({})", parts?.join(", ")),
                    )
                }
                other => {
                    return Err(format!(
                        "{at}: geometritypen {other:?} støttes ikke (Point, LineString)"
                    )
                    .into())
                }
            };
            quality.push(wkt);
            o.properties
                .push(geometry_property(t, kind, quality.join(";"), &at)?);
        }
        objects.push(o);
    }
    if objects.is_empty() {
        return Err("FeatureCollection har ingen features".into());
    }
    Ok(changeset(catalog, objects, today))
}

/// Decode a SOSI file: UTF-8, else ISO-8859-1 (the TEGNSETT real files use).
pub fn decode_sosi(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

struct Group {
    kind: String,
    line: usize,
    type_name: Option<String>,
    props: Vec<(String, String)>,
    date: Option<String>,
    quality: Option<String>,
    coords: Vec<(f64, f64, Option<f64>)>,
}

/// A SOSI file (KOORDSYS 23 = EUREF89 UTM 33, VERT-DATUM NN54) to a changeset.
pub fn from_sosi(text: &str, catalog: &Catalog, today: &str) -> Result<Changeset, ConversionError> {
    let file = SosiFile::read(text)?;
    file.check_head()?;
    let mut objects = Vec::with_capacity(file.groups.len());
    for (i, g) in file.groups.iter().enumerate() {
        objects.push(file.object(g, i, catalog)?);
    }
    if objects.is_empty() {
        return Err("SOSI-filen har ingen objekter".into());
    }
    Ok(changeset(catalog, objects, today))
}

/// A SOSI number (a decimal comma allowed).
fn sosi_number(s: &str, line: usize) -> Result<f64, ConversionError> {
    s.trim()
        .replace(',', ".")
        .parse::<f64>()
        .map_err(|_| format!("linje {line}: '{s}' er ikke et tall").into())
}

/// A SOSI file as read: the head's reference system and units, and the groups.
#[derive(Default)]
struct SosiFile {
    koordsys: Option<String>,
    vert: Option<String>,
    /// ORIGO-NØ (north, east)
    origo: (f64, f64),
    unit: f64,
    groups: Vec<Group>,
}

/// Where the reader is in a SOSI file.
#[derive(Default)]
struct SosiReader {
    in_head: bool,
    reading_coords: bool,
    ended: bool,
}

impl SosiFile {
    /// Read the lines of a SOSI file (`!` starts a comment) up to `.SLUTT`.
    fn read(text: &str) -> Result<SosiFile, ConversionError> {
        let mut file = SosiFile {
            unit: 1.0,
            ..Default::default()
        };
        let mut at = SosiReader::default();
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.split('!').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if at.ended {
                return Err(format!("linje {line_no}: tekst etter .SLUTT").into());
            }
            if let Some(rest) = line.strip_prefix('.').filter(|r| !r.starts_with('.')) {
                file.group_start(&mut at, rest, line_no)?;
            } else if let Some(rest) = line.strip_prefix("..") {
                file.property(&mut at, rest, line_no)?;
            } else if at.reading_coords {
                file.coordinates(line, line_no)?;
            } else {
                return Err(format!("linje {line_no}: uventet innhold '{line}'").into());
            }
        }
        if !at.ended {
            return Err("SOSI-filen mangler .SLUTT".into());
        }
        Ok(file)
    }

    /// A `.WORD` line: the head, a point or curve group, or the end.
    fn group_start(
        &mut self,
        at: &mut SosiReader,
        rest: &str,
        line_no: usize,
    ) -> Result<(), ConversionError> {
        at.reading_coords = false;
        let word = rest.split_whitespace().next().unwrap_or("");
        at.in_head = word == "HODE";
        match word {
            "HODE" => {}
            "SLUTT" => at.ended = true,
            "PUNKT" | "KURVE" => self.groups.push(Group {
                kind: word.to_string(),
                line: line_no,
                type_name: None,
                props: Vec::new(),
                date: None,
                quality: None,
                coords: Vec::new(),
            }),
            "FLATE" => {
                return Err(format!(
                    "linje {line_no}: .FLATE støttes ikke (flategeometri lagres ikke)"
                )
                .into())
            }
            other => return Err(format!("linje {line_no}: ukjent gruppe .{other}").into()),
        }
        Ok(())
    }

    /// A `..KEY value` line: a head setting, or a property of the current group (`..NØ` and
    /// `..NØH` start its coordinates).
    fn property(
        &mut self,
        at: &mut SosiReader,
        rest: &str,
        line_no: usize,
    ) -> Result<(), ConversionError> {
        let rest = rest.trim_start_matches('.');
        let (key, value) = match rest.split_once(char::is_whitespace) {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (rest.trim(), ""),
        };
        let value = value.trim_matches('"');
        at.reading_coords = false;
        if at.in_head {
            match key {
                "KOORDSYS" => self.koordsys = Some(value.to_string()),
                "VERT-DATUM" => self.vert = Some(value.to_string()),
                "ORIGO-NØ" => {
                    let mut it = value.split_whitespace();
                    let n = sosi_number(it.next().unwrap_or(""), line_no)?;
                    let e = sosi_number(it.next().unwrap_or(""), line_no)?;
                    self.origo = (n, e);
                }
                "ENHET" => self.unit = sosi_number(value, line_no)?,
                _ => {}
            }
            return Ok(());
        }
        let g = self
            .groups
            .last_mut()
            .ok_or_else(|| format!("linje {line_no}: egenskap utenfor en gruppe"))?;
        match key {
            "OBJTYPE" => g.type_name = Some(value.to_string()),
            "PTEMA" => {}
            "DATAFANGSTDATO" => g.date = Some(value.to_string()),
            "KVALITET" => g.quality = Some(value.to_string()),
            "NØ" | "NØH" => at.reading_coords = true,
            _ => g.props.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    /// A coordinate line (north east [height]) of the current group.
    fn coordinates(&mut self, line: &str, line_no: usize) -> Result<(), ConversionError> {
        let g = self
            .groups
            .last_mut()
            .expect("coordinates follow ..NØ in a group");
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() < 2 {
            return Err(format!("linje {line_no}: ugyldig koordinatlinje '{line}'").into());
        }
        let n = sosi_number(parts[0], line_no)?;
        let e = sosi_number(parts[1], line_no)?;
        let h = parts.get(2).map(|h| sosi_number(h, line_no)).transpose()?;
        g.coords.push((n, e, h));
        Ok(())
    }

    /// The head names the one reference system taken, and the groups are not too many.
    fn check_head(&self) -> Result<(), ConversionError> {
        match self.koordsys.as_deref() {
            Some("23") => {}
            other => {
                return Err(format!(
                    "KOORDSYS må være 23 (EUREF89 UTM 33), filen har {}",
                    other.unwrap_or("ingen")
                )
                .into())
            }
        }
        match self.vert.as_deref() {
            Some("NN54") => {}
            other => {
                return Err(format!(
                    "VERT-DATUM må være NN54, filen har {}",
                    other.unwrap_or("ingen")
                )
                .into())
            }
        }
        if self.groups.len() > MAX_FEATURES {
            return Err(format!(
                "For mange grupper: {} (grensen er {MAX_FEATURES})",
                self.groups.len()
            )
            .into());
        }
        Ok(())
    }

    /// Group number `i` as a new road object (temporary id `i + 1`).
    fn object(
        &self,
        g: &Group,
        i: usize,
        catalog: &Catalog,
    ) -> Result<RoadObject, ConversionError> {
        let at = format!("linje {}", g.line);
        let name = g
            .type_name
            .as_deref()
            .ok_or_else(|| format!("{at}: gruppen mangler ..OBJTYPE"))?;
        let t = object_type(catalog, name, &at)?;
        let mut o = RoadObject {
            type_id: t.id,
            temp_id: Some((i + 1).to_string()),
            ..Default::default()
        };
        for (k, v) in &g.props {
            o.properties.push(property(t, k, v, &at)?);
        }
        if !g.coords.is_empty() {
            let (kind, ewkt) = self.geometry(g, &at)?;
            o.properties.push(geometry_property(t, kind, ewkt, &at)?);
        }
        Ok(o)
    }

    /// A group's geometry as EWKT with its capture date and quality, and its geometry kind.
    fn geometry(&self, g: &Group, at: &str) -> Result<(u16, String), ConversionError> {
        let mut ewkt = vec!["srid=25833".to_string()];
        if let Some(d) = &g.date {
            let d = chrono::NaiveDate::parse_from_str(d, "%Y%m%d")
                .map_err(|_| format!("{at}: DATAFANGSTDATO '{d}' er ikke ÅÅÅÅMMDD"))?;
            ewkt.push(format!("datafangstdato={}", d.format("%Y-%m-%d")));
        }
        if let Some(q) = &g.quality {
            for (name, v) in QUALITY.iter().zip(q.split_whitespace()) {
                ewkt.push(format!("{name}={v}"));
            }
        }
        let (origo, unit) = (self.origo, self.unit);
        let pts: Vec<String> = g
            .coords
            .iter()
            .map(|&(n, e, h)| {
                // round away the binary noise of ENHET (0.01 is not exact)
                let r = |v: f64| (v * 1e6).round() / 1e6;
                let x = r(origo.1 + e * unit);
                let y = r(origo.0 + n * unit);
                match h {
                    Some(h) => format!("{x} {y} {}", r(h * unit)),
                    None => format!("{x} {y}"),
                }
            })
            .collect();
        let (kind, wkt) = match g.kind.as_str() {
            "PUNKT" if pts.len() == 1 => (datatype::GEOM_POINT, format!("POINT({})", pts[0])),
            "KURVE" if pts.len() >= 2 => (
                datatype::GEOM_LINE,
                format!("LINESTRING({})", pts.join(", ")),
            ),
            _ => return Err(format!("{at}: .{} har {} koordinater", g.kind, pts.len()).into()),
        };
        ewkt.push(wkt);
        Ok((kind, ewkt.join(";")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sosi_geojson_example_of_the_documentation_converts() {
        let doc: Value = serde_json::from_str(
            r#"{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"EPSG:4326"}},
            "features":[{"type":"Feature","id":7,"geometry":{"type":"Point","coordinates":[10.39,63.43]},
            "properties":{"objekttypenavn":"Skiltpunkt_95","Oppsettingsutstyr_1876":"2868",
              "AvstandFraDekkekant_1884":"0,30","PTEMA":"7001","datafangstdato":"2015-01-05",
              "kvalitet":{"målemetode":96,"nøyaktighet":5}}}]}"#,
        )
        .unwrap();
        let c = from_sosi_geojson(&doc, Catalog::embedded(), "2026-11-22").unwrap();
        let o = &c.register.objects[0];
        assert_eq!((o.type_id, o.temp_id.as_deref()), (95, Some("7")));
        assert!(o.location.is_none());
        let by_id = |id| o.properties.iter().find(|p| p.type_id == id).unwrap();
        assert_eq!(by_id(1876).enum_ids, vec![2868]);
        assert_eq!(by_id(1884).values, vec!["0.30"]);
        assert_eq!(
            by_id(4794).values,
            vec!["srid=4326;datafangstdato=2015-01-05;målemetode=96;nøyaktighet=5;POINT(10.39 63.43)"]
        );
        assert_eq!(c.effect_date, "2026-11-22");
    }

    #[test]
    fn sosi_file_converts_with_origo_and_unit() {
        let sosi = ".HODE\n..TEGNSETT ISO8859-1\n..TRANSPAR\n...KOORDSYS 23\n...ORIGO-NØ 7000000 200000\n...ENHET 0.010\n...VERT-DATUM NN54\n.PUNKT 1:\n..OBJTYPE Skiltpunkt_95\n..DATAFANGSTDATO 20150105\n..KVALITET 96 5 0 96 5\n..Oppsettingsutstyr_1876 2868\n..NØH\n4479700 6584700 1000\n.SLUTT\n";
        let c = from_sosi(sosi, Catalog::embedded(), "2026-11-22").unwrap();
        let o = &c.register.objects[0];
        let g = &o
            .properties
            .iter()
            .find(|p| p.type_id == 4794)
            .unwrap()
            .values[0];
        assert_eq!(
            g,
            "srid=25833;datafangstdato=2015-01-05;målemetode=96;nøyaktighet=5;synbarhet=0;målemetodeHøyde=96;nøyaktighetHøyde=5;POINT(265847 7044797 10)"
        );
    }

    #[test]
    fn malformed_input_is_rejected_with_a_reason() {
        let cat = Catalog::embedded();
        let e = from_sosi(
            ".HODE\n..TRANSPAR\n...KOORDSYS 22\n...VERT-DATUM NN54\n.SLUTT\n",
            cat,
            "2026-01-01",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("KOORDSYS"), "{e}");
        assert!(from_sosi(".HODE\n.PUNKT 1:\n..OBJTYPE Skiltpunkt_95\n", cat, "x").is_err());
        let doc: Value = serde_json::json!({"type":"FeatureCollection","features":[{"properties":{"objekttypenavn":"Ukjent_999999"}}]});
        assert!(from_sosi_geojson(&doc, cat, "x")
            .unwrap_err()
            .to_string()
            .contains("999999"));
        let doc: Value = serde_json::json!({"type":"Feature"});
        assert!(from_sosi_geojson(&doc, cat, "x").is_err());
    }
}
