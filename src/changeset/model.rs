//! The changeset (endringssett) of NVDB API SKRIV v2: English field names, the v2 JSON names as
//! serde renames (the same names as the elements and attributes of the official XSD). This is
//! also the journal format, so `GET /endringssett/{id}` returns exactly what was registered, and
//! the schema of the write API's request bodies in its OpenAPI document (`utoipa::ToSchema`).
//!
//! Readers are lenient the way real clients need: numbers may arrive as strings (KLIENTEKSP
//! sends `"lenkeId": "123"`), a single value may stand where a list is expected (XML with one
//! element), and empty lists may be sent for absent parts.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// A whole changeset as registered.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Changeset {
    /// Server-assigned id (UUID), filled in at registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `YYYY-MM-DD`: start date of new objects/versions, end date of deleted ones.
    #[serde(rename = "effektDato", deserialize_with = "text")]
    pub effect_date: String,
    #[serde(rename = "datakatalogversjon", deserialize_with = "text")]
    pub catalogue_version: String,
    #[serde(rename = "registrer", default, skip_serializing_if = "Part::is_empty")]
    pub register: Part,
    #[serde(rename = "oppdater", default, skip_serializing_if = "Part::is_empty")]
    pub update: Part,
    #[serde(rename = "korriger", default, skip_serializing_if = "Part::is_empty")]
    pub correct: Part,
    #[serde(rename = "slett", default, skip_serializing_if = "Part::is_empty")]
    pub delete: Part,
    #[serde(
        rename = "delvisOppdater",
        default,
        skip_serializing_if = "Part::is_empty"
    )]
    pub partial_update: Part,
    #[serde(
        rename = "delvisKorriger",
        default,
        skip_serializing_if = "Part::is_empty"
    )]
    pub partial_correct: Part,
    #[serde(
        rename = "ansvarlig",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub responsible: Option<String>,
}

pub use crate::auth::operation::Operation;

impl Changeset {
    pub fn part(&self, op: Operation) -> &Part {
        match op {
            Operation::Register => &self.register,
            Operation::Update => &self.update,
            Operation::Correct => &self.correct,
            Operation::PartialUpdate => &self.partial_update,
            Operation::PartialCorrect => &self.partial_correct,
            Operation::Delete => &self.delete,
        }
    }
    /// Every object with its operation, in application order.
    pub fn objects(&self) -> impl Iterator<Item = (Operation, &RoadObject)> {
        Operation::ALL
            .into_iter()
            .flat_map(move |op| self.part(op).objects.iter().map(move |o| (op, o)))
    }
    pub fn object_count(&self) -> usize {
        Operation::ALL
            .iter()
            .map(|&op| self.part(op).objects.len())
            .sum()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Part {
    #[serde(rename = "vegObjekter", default, deserialize_with = "list")]
    pub objects: Vec<RoadObject>,
}

impl Part {
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// A road object in any part; which fields are required depends on the operation (checked by
/// `validate::check_shape`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct RoadObject {
    #[serde(rename = "typeId", deserialize_with = "number")]
    pub type_id: u32,
    #[serde(
        rename = "tempId",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub temp_id: Option<String>,
    #[serde(
        rename = "nvdbId",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_number"
    )]
    pub nvdb_id: Option<u64>,
    #[serde(
        rename = "versjon",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_number"
    )]
    pub version: Option<u32>,
    #[serde(
        rename = "egenskaper",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub properties: Vec<Property>,
    #[serde(
        rename = "assosiasjoner",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub associations: Vec<Association>,
    #[serde(rename = "lokasjon", default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(
        rename = "sluttDato",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub end_date: Option<String>,
    /// slett: "ja" also deletes the daughters.
    #[serde(
        rename = "kaskadeSletting",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub cascade: Option<String>,
}

/// `operasjon` of the partial operations.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartialOp {
    Oppdater,
    Slett,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Property {
    #[serde(rename = "typeId", deserialize_with = "number")]
    pub type_id: u32,
    #[serde(
        rename = "verdi",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "text_list"
    )]
    pub values: Vec<String>,
    #[serde(
        rename = "enum",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "number_list"
    )]
    pub enum_ids: Vec<u32>,
    #[serde(
        rename = "struktur",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub structs: Vec<Struct>,
    #[serde(
        rename = "binaer",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub binaries: Vec<Binary>,
    #[serde(rename = "operasjon", default, skip_serializing_if = "Option::is_none")]
    pub op: Option<PartialOp>,
}

impl Property {
    /// How many values the property carries (of any kind).
    pub fn value_count(&self) -> usize {
        self.values.len() + self.enum_ids.len() + self.structs.len() + self.binaries.len()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Struct {
    #[serde(
        rename = "medlem",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub members: Vec<StructMember>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct StructMember {
    #[serde(
        rename = "typeId",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_number"
    )]
    pub type_id: Option<u32>,
    #[serde(
        rename = "verdi",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub value: Option<String>,
    #[serde(
        rename = "enum",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_number"
    )]
    pub enum_id: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Binary {
    #[serde(
        rename = "ressursId",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub resource_id: Option<String>,
    #[serde(
        rename = "nvdbId",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_number"
    )]
    pub nvdb_id: Option<u64>,
    #[serde(
        rename = "format",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub format: Option<String>,
}

/// A mother's daughters of one relation type (`typeId` is the relation type id, or the
/// daughter type id, which vegdb also accepts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Association {
    #[serde(rename = "typeId", deserialize_with = "number")]
    pub type_id: u32,
    #[serde(
        rename = "nvdbId",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "number_list"
    )]
    pub nvdb_ids: Vec<u64>,
    #[serde(
        rename = "tempId",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "text_list"
    )]
    pub temp_ids: Vec<String>,
    #[serde(rename = "operasjon", default, skip_serializing_if = "Option::is_none")]
    pub op: Option<PartialOp>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub enum Direction {
    #[serde(rename = "MED")]
    With,
    #[serde(rename = "MOT")]
    Against,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct Location {
    #[serde(
        rename = "punkt",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub points: Vec<PointPlacement>,
    #[serde(
        rename = "linje",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub lines: Vec<LinePlacement>,
    #[serde(
        rename = "sving",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub turns: Vec<TurnPlacement>,
    #[serde(rename = "operasjon", default, skip_serializing_if = "Option::is_none")]
    pub op: Option<PartialOp>,
}

impl Location {
    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.lines.is_empty() && self.turns.is_empty()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct PointPlacement {
    #[serde(rename = "lenkeId", deserialize_with = "number")]
    pub link_id: u64,
    #[serde(rename = "posisjon", deserialize_with = "finite")]
    pub position: f64,
    #[serde(rename = "retning", default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    #[serde(
        rename = "sidePosisjon",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "side_position"
    )]
    pub side: Option<String>,
    #[serde(
        rename = "felt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub lanes: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LinePlacement {
    #[serde(rename = "lenkeId", deserialize_with = "number")]
    pub link_id: u64,
    #[serde(rename = "fra", deserialize_with = "finite")]
    pub from: f64,
    #[serde(rename = "til", deserialize_with = "finite")]
    pub to: f64,
    #[serde(rename = "retning", default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    #[serde(
        rename = "sidePosisjon",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "side_position"
    )]
    pub side: Option<String>,
    #[serde(
        rename = "felt",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub lanes: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct TurnPlacement {
    #[serde(rename = "nodeId", deserialize_with = "number")]
    pub node_id: u64,
    #[serde(rename = "fra")]
    pub from: PointPlacement,
    #[serde(rename = "til")]
    pub to: PointPlacement,
}

/// The `sidePosisjon` values of the XSD.
pub const SIDE_POSITIONS: [&str; 11] = ["MH", "MV", "VT", "M", "H", "HT", "VH", "K", "V", "L", "R"];

// ---- lenient readers -------------------------------------------------------------------------

/// A scalar as it may arrive: a number, a string holding one, or a boolean.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    Number(serde_json::Number),
    Text(String),
    Bool(bool),
}

impl Scalar {
    fn into_text(self) -> String {
        match self {
            Scalar::Number(n) => n.to_string(),
            Scalar::Text(s) => s,
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

fn parse_scalar<T: std::str::FromStr, E: de::Error>(s: Scalar) -> Result<T, E> {
    let text = s.into_text();
    let t = text.trim();
    // "0,30" (comma decimals) is how SOSI-style clients write numbers
    t.parse::<T>()
        .or_else(|_| t.replace(',', ".").parse::<T>())
        .map_err(|_| E::custom(format!("'{text}' er ikke et gyldig tall")))
}

fn number<'de, D: Deserializer<'de>, T: std::str::FromStr>(d: D) -> Result<T, D::Error> {
    parse_scalar(Scalar::deserialize(d)?)
}

/// A finite number: `NaN`, `inf` and numbers too large for an f64 are refused (a non-finite
/// position cannot be journalled as JSON and means nothing on a link).
fn finite<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let s = Scalar::deserialize(d)?;
    let text = s.into_text();
    let v: f64 = parse_scalar(Scalar::Text(text.clone()))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(de::Error::custom(format!(
            "'{text}' er ikke et endelig tall"
        )))
    }
}

/// Does a text hold a number that is not finite (`NaN`, `inf`, `1e999`)? Used for property
/// values of number and geometry types, which the model keeps as text.
pub fn has_non_finite(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "(),;=".contains(c))
        .filter(|t| !t.is_empty())
        .any(|t| {
            t.parse::<f64>()
                .or_else(|_| t.replace(',', ".").parse::<f64>())
                .is_ok_and(|v| !v.is_finite())
        })
}

fn opt_number<'de, D: Deserializer<'de>, T: std::str::FromStr>(
    d: D,
) -> Result<Option<T>, D::Error> {
    match Option::<Scalar>::deserialize(d)? {
        None => Ok(None),
        Some(Scalar::Text(s)) if s.trim().is_empty() => Ok(None),
        Some(s) => parse_scalar(s).map(Some),
    }
}

fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Scalar::deserialize(d)?.into_text())
}

fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<Scalar>::deserialize(d)?.map(Scalar::into_text))
}

fn side_position<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = opt_text(d)?;
    match v {
        Some(s) if !SIDE_POSITIONS.contains(&s.as_str()) => Err(de::Error::custom(format!(
            "sidePosisjon '{s}' er ugyldig; tillatt: {}",
            SIDE_POSITIONS.join(", ")
        ))),
        v => Ok(v),
    }
}

/// One value or a list of them (XML with one element). A list is read element by element
/// and a single value only when the input is not a list, so a malformed element is an error
/// rather than a silently empty value.
fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    use de::IntoDeserializer;
    struct OneOrMany<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> de::Visitor<'de> for OneOrMany<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a value or a list of values")
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Vec<T>, A::Error> {
            Ok(vec![T::deserialize(
                de::value::MapAccessDeserializer::new(map),
            )?])
        }
        fn visit_unit<E: de::Error>(self) -> Result<Vec<T>, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: de::Error>(self) -> Result<Vec<T>, E> {
            Ok(Vec::new())
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Vec<T>, D2::Error> {
            d.deserialize_any(self)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<T>, E> {
            Ok(vec![T::deserialize(v.to_string().into_deserializer())?])
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Vec<T>, E> {
            Ok(vec![T::deserialize(v.into_deserializer())?])
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<T>, E> {
            Ok(vec![T::deserialize(v.into_deserializer())?])
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<T>, E> {
            Ok(vec![T::deserialize(v.into_deserializer())?])
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Vec<T>, E> {
            Ok(vec![T::deserialize(v.into_deserializer())?])
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Vec<T>, E> {
            Ok(vec![T::deserialize(v.into_deserializer())?])
        }
    }
    d.deserialize_any(OneOrMany(std::marker::PhantomData))
}

fn text_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(list::<D, Scalar>(d)?
        .into_iter()
        .map(Scalar::into_text)
        .collect())
}

fn number_list<'de, D: Deserializer<'de>, T: std::str::FromStr>(d: D) -> Result<Vec<T>, D::Error> {
    list::<D, Scalar>(d)?
        .into_iter()
        .map(parse_scalar)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sent_as_strings_and_single_values_are_accepted() {
        let text = r#"{"effektDato":"2015-02-26","datakatalogversjon":2.01,
          "registrer":{"vegObjekter":[{"typeId":"95","tempId":1,
            "egenskaper":[{"typeId":"1884","verdi":"0,30"},{"typeId":1876,"enum":["2868"]}],
            "lokasjon":{"punkt":{"lenkeId":"1125766","posisjon":"0.3","retning":"MOT"},"linje":[]}}]}}"#;
        let c: Changeset = serde_json::from_str(text).unwrap();
        assert_eq!(c.catalogue_version, "2.01");
        let o = &c.register.objects[0];
        assert_eq!((o.type_id, o.temp_id.as_deref()), (95, Some("1")));
        assert_eq!(o.properties[0].values, vec!["0,30".to_string()]);
        assert_eq!(o.properties[1].enum_ids, vec![2868]);
        let p = &o.location.as_ref().unwrap().points[0];
        assert_eq!(
            (p.link_id, p.position, p.direction),
            (1125766, 0.3, Some(Direction::Against))
        );
        // the journal form reads back to the same changeset
        let again: Changeset = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn non_finite_positions_are_rejected_and_detected_in_text() {
        for bad in ["NaN", "nan", "inf", "-Infinity", "1e999", "+inf"] {
            for field in [
                format!(r#""punkt":{{"lenkeId":1,"posisjon":"{bad}"}}"#),
                format!(r#""linje":{{"lenkeId":1,"fra":0.1,"til":"{bad}"}}"#),
                format!(r#""linje":[{{"lenkeId":1,"fra":"{bad}","til":0.5}}]"#),
            ] {
                let text = format!(
                    r#"{{"effektDato":"2015-02-26","datakatalogversjon":"2.01",
                      "registrer":{{"vegObjekter":[{{"typeId":95,"lokasjon":{{{field}}}}}]}}}}"#
                );
                assert!(serde_json::from_str::<Changeset>(&text).is_err(), "{field}");
            }
            assert!(has_non_finite(bad), "{bad}");
            assert!(has_non_finite(&format!("srid=25833;POINT({bad} 7000000)")));
        }
        for good in [
            "0,30",
            "1.5",
            "-2",
            "srid=25833;POINT(270000 7040000)",
            "tekst",
            "",
        ] {
            assert!(!has_non_finite(good), "{good}");
        }
        // a malformed list element is an error, not an empty value
        let text = r#"{"effektDato":"2015-02-26","datakatalogversjon":"2.01",
          "registrer":{"vegObjekter":[{"typeId":95,"egenskaper":[{"typeId":1,
            "struktur":[{"medlem":[{"typeId":"NaN"}]}]}]}]}}"#;
        assert!(serde_json::from_str::<Changeset>(text).is_err());
    }

    #[test]
    fn malformed_numbers_and_side_positions_are_rejected() {
        let bad = r#"{"effektDato":"2015-02-26","datakatalogversjon":"2.01",
          "registrer":{"vegObjekter":[{"typeId":"nittifem"}]}}"#;
        assert!(serde_json::from_str::<Changeset>(bad).is_err());
        let bad = r#"{"effektDato":"2015-02-26","datakatalogversjon":"2.01",
          "registrer":{"vegObjekter":[{"typeId":95,"lokasjon":{"punkt":[{"lenkeId":1,"posisjon":0.5,"sidePosisjon":"X"}]}}]}}"#;
        assert!(serde_json::from_str::<Changeset>(bad).is_err());
    }
}
