//! The data catalogue (datakatalog): road object types, property types, allowed values,
//! relation types, units, data types and categories.
//!
//! The catalogue is compiled from real NVDB reference data by `tools/catalogue/build.py` into
//! `data/datakatalog.json`, which is embedded in the binary. The document has the v2 API's
//! shape, so these structs read it through serde renames (the file's Norwegian names); the
//! Rust names are English. They only deserialize: the read API shows them through its own
//! types (`api::catalog_docs`, `api::read::catalog`). This module never touches HTTP.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// The embedded catalogue document.
const CATALOG_JSON: &str = include_str!("data/datakatalog.json");

/// Datatype ids used by the engine (see `/vegobjekttyper/datatyper`).
pub mod datatype {
    pub const TEXT: u16 = 1;
    pub const NUMBER: u16 = 2;
    pub const DATE: u16 = 8;
    pub const SHORT_DATE: u16 = 9;
    pub const TIME: u16 = 10;
    pub const GEOM_POINT: u16 = 17;
    pub const GEOM_LINE: u16 = 18;
    pub const GEOM_SURFACE: u16 = 19;
    pub const BOOLEAN: u16 = 28;
    pub const ENUM_TEXT: u16 = 30;
    pub const ENUM_NUMBER: u16 = 31;
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct CatalogVersion {
    pub id: u32,
    #[serde(rename = "versjon")]
    pub version: String,
    #[serde(rename = "dato")]
    pub date: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DataType {
    pub id: u16,
    #[serde(rename = "navn")]
    pub name: String,
    #[serde(rename = "kortnavn")]
    pub short_name: String,
    #[serde(rename = "beskrivelse", default)]
    pub description: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Unit {
    pub id: u32,
    #[serde(rename = "navn")]
    pub name: String,
    #[serde(rename = "kortnavn")]
    pub short_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Category {
    pub id: u32,
    #[serde(rename = "navn")]
    pub name: String,
    #[serde(rename = "kortnavn")]
    pub short_name: Option<String>,
    #[serde(rename = "sorteringsnummer")]
    pub sort_key: i64,
    #[serde(rename = "beskrivelse")]
    pub description: String,
    #[serde(rename = "startdato")]
    pub start_date: String,
}

/// One allowed value (tillatt verdi) of an enumerated property type.
#[derive(Debug, Clone, Deserialize)]
pub struct AllowedValue {
    pub id: u32,
    #[serde(rename = "navn")]
    pub name: String,
    #[serde(rename = "kortnavn")]
    pub short_name: String,
    #[serde(rename = "beskrivelse", default)]
    pub description: String,
    #[serde(rename = "objektliste_dato")]
    pub object_list_date: Option<String>,
    #[serde(rename = "sorteringsnummer")]
    pub sort_key: i64,
    #[serde(rename = "standardverdi")]
    pub is_default: bool,
    /// Numeric value of a numeric enumeration (datatype 31).
    #[serde(rename = "verdi")]
    pub number: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PropertyControl {
    #[serde(rename = "avledet")]
    pub derived: bool,
    #[serde(rename = "obligatorisk_verdi")]
    pub mandatory_value: bool,
    #[serde(rename = "tillatte_verdier_kortnavn_offisiell")]
    pub short_names_official: bool,
    #[serde(rename = "ajourhold_snu")]
    pub update_on_reverse: bool,
    #[serde(rename = "fortegnsendring_snu")]
    pub sign_change_on_reverse: bool,
    #[serde(rename = "lengdeavhengig_snu")]
    pub length_dependent: bool,
    #[serde(rename = "verdi_beregnes_av_geometri")]
    pub computed_from_geometry: bool,
}

/// A property type (egenskapstype).
#[derive(Debug, Clone, Deserialize)]
pub struct PropertyType {
    pub id: u32,
    #[serde(rename = "navn")]
    pub name: String,
    #[serde(rename = "beskrivelse")]
    pub description: String,
    #[serde(rename = "veiledning")]
    pub guidance: String,
    pub datatype: u16,
    pub datatype_tekst: String,
    #[serde(rename = "liste")]
    pub is_list: bool,
    #[serde(rename = "sensitivitet")]
    pub sensitivity: u8,
    #[serde(rename = "sorteringsnummer")]
    pub sort_key: i64,
    #[serde(rename = "viktighet")]
    pub importance: u8,
    #[serde(rename = "viktighet_tekst")]
    pub importance_text: String,
    pub sosinavn: String,
    pub sosinvdbnavn: String,
    #[serde(rename = "objektliste_dato")]
    pub object_list_date: Option<String>,
    #[serde(rename = "feltlengde")]
    pub field_length: Option<u32>,
    #[serde(rename = "desimaler")]
    pub decimals: Option<u32>,
    #[serde(rename = "min")]
    pub min: Option<f64>,
    #[serde(rename = "maks")]
    pub max: Option<f64>,
    #[serde(rename = "min_anbefalt")]
    pub min_recommended: Option<f64>,
    #[serde(rename = "maks_anbefalt")]
    pub max_recommended: Option<f64>,
    #[serde(rename = "enhet")]
    pub unit: Option<Unit>,
    #[serde(rename = "tillatte_verdier")]
    pub allowed_values: Option<Vec<AllowedValue>>,
    #[serde(rename = "styringsparametere")]
    pub control: PropertyControl,
}

impl PropertyType {
    pub fn is_enum(&self) -> bool {
        self.allowed_values.is_some()
    }
    pub fn is_geometry(&self) -> bool {
        matches!(
            self.datatype,
            datatype::GEOM_POINT | datatype::GEOM_LINE | datatype::GEOM_SURFACE
        )
    }
    /// How values of this property are stored in a column.
    pub fn storage(&self) -> ValueKind {
        match self.datatype {
            datatype::ENUM_TEXT | datatype::ENUM_NUMBER => ValueKind::Enum,
            datatype::NUMBER if self.decimals.unwrap_or(0) == 0 => ValueKind::Integer,
            datatype::NUMBER => ValueKind::Float,
            datatype::GEOM_POINT | datatype::GEOM_LINE | datatype::GEOM_SURFACE => {
                ValueKind::Geometry
            }
            _ => ValueKind::Text,
        }
    }
    pub fn allowed_value(&self, id: u32) -> Option<&AllowedValue> {
        self.allowed_values.as_ref()?.iter().find(|v| v.id == id)
    }
}

/// Physical kind of a property column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Allowed-value id (i64 column).
    Enum,
    Integer,
    Float,
    /// Text, dates (`YYYY-MM-DD`), times (`HH:MM`), booleans.
    Text,
    /// Own geometry; kept in the object's geometry column, not as a property column.
    Geometry,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TypeRef {
    pub id: u32,
    #[serde(rename = "navn")]
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RelationType {
    pub id: u32,
    pub relasjonstype: String,
    #[serde(rename = "type")]
    pub target: TypeRef,
    #[serde(rename = "beskrivelse")]
    pub description: String,
    #[serde(rename = "veiledning")]
    pub guidance: String,
    pub min: i64,
    #[serde(rename = "maks")]
    pub max: i64,
    #[serde(rename = "objektliste_dato")]
    pub object_list_date: Option<String>,
    pub innenfor_mor: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RelationTypes {
    #[serde(rename = "foreldre")]
    pub parents: Vec<RelationType>,
    #[serde(rename = "barn")]
    pub children: Vec<RelationType>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TypeControl {
    #[serde(rename = "må_ha_mor")]
    pub must_have_parent: bool,
    #[serde(rename = "sideposisjon_relevant")]
    pub side_position_relevant: String,
    #[serde(rename = "kjørefelt_relevant")]
    pub lane_relevant: String,
    #[serde(rename = "tidsrom_relevant")]
    pub period_relevant: bool,
    #[serde(rename = "overlapp")]
    pub overlap: bool,
    #[serde(rename = "avledet")]
    pub derived: bool,
    #[serde(rename = "dekningsgrad")]
    pub coverage: serde_json::Value,
    #[serde(rename = "ajourhold_i")]
    pub survives_i: String,
    #[serde(rename = "ajourhold_splitt")]
    pub split: String,
}

/// How objects of a type are located on the road network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Placement {
    #[serde(rename = "PUNKT")]
    Point,
    #[serde(rename = "LINJE")]
    Line,
    #[serde(rename = "FLEREPUNKT")]
    MultiPoint,
    #[serde(rename = "SVING")]
    Turn,
    /// Not placed on the road network.
    #[serde(rename = "INGEN")]
    Unplaced,
}

impl Placement {
    /// The word the write API's validation messages use for it.
    pub fn message_name(self) -> &'static str {
        match self {
            Placement::Point => "Punkt",
            Placement::Line => "Linje",
            Placement::MultiPoint => "Flerepunkt",
            Placement::Turn => "Sving",
            Placement::Unplaced => "Ingen",
        }
    }
}

/// A road object type (vegobjekttype).
#[derive(Debug, Clone, Deserialize)]
pub struct ObjectType {
    pub id: u32,
    #[serde(rename = "navn")]
    pub name: String,
    #[serde(rename = "beskrivelse")]
    pub description: String,
    #[serde(rename = "veiledning")]
    pub guidance: String,
    #[serde(rename = "stedfesting")]
    pub placement: Placement,
    pub sosinavn: String,
    pub sosinvdbnavn: String,
    #[serde(rename = "objektliste_dato")]
    pub object_list_date: Option<String>,
    #[serde(rename = "sorteringsnummer")]
    pub sort_key: i64,
    #[serde(rename = "kategorier")]
    pub categories: Vec<u32>,
    #[serde(rename = "egenskapstyper")]
    pub property_types: Vec<PropertyType>,
    #[serde(rename = "relasjonstyper")]
    pub relation_types: RelationTypes,
    #[serde(rename = "styringsparametere")]
    pub control: TypeControl,
}

impl ObjectType {
    pub fn property(&self, id: u32) -> Option<&PropertyType> {
        self.property_types.iter().find(|p| p.id == id)
    }
    /// The property types that hold values in columns (everything but geometry).
    pub fn value_properties(&self) -> impl Iterator<Item = &PropertyType> {
        self.property_types.iter().filter(|p| !p.is_geometry())
    }
    /// The first geometry property of the given datatype, if any.
    pub fn geometry_property(&self, datatype: u16) -> Option<&PropertyType> {
        self.property_types.iter().find(|p| p.datatype == datatype)
    }
}

#[derive(Debug, Deserialize)]
struct CatalogDocument {
    datakatalog: CatalogVersion,
    datatyper: Vec<DataType>,
    enheter: Vec<Unit>,
    kategorier: Vec<Category>,
    vegobjekttyper: Vec<ObjectType>,
}

/// The whole catalogue with lookup indexes.
#[derive(Debug)]
pub struct Catalog {
    pub version: CatalogVersion,
    pub data_types: Vec<DataType>,
    pub units: Vec<Unit>,
    pub categories: Vec<Category>,
    /// Sorted by id.
    pub types: Vec<ObjectType>,
    type_index: HashMap<u32, usize>,
    /// property type id -> (type index, property index)
    property_index: HashMap<u32, (usize, usize)>,
}

impl Catalog {
    /// The embedded catalogue, parsed once.
    pub fn embedded() -> &'static Catalog {
        // Not mutable state: the embedded catalogue, built lazily once and never changed.
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| {
            Catalog::from_json(CATALOG_JSON).expect("the embedded catalogue is valid JSON")
        })
    }

    pub fn from_json(text: &str) -> Result<Catalog, serde_json::Error> {
        let doc: CatalogDocument = serde_json::from_str(text)?;
        let mut types = doc.vegobjekttyper;
        types.sort_by_key(|t| t.id);
        let type_index = types.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        let mut property_index = HashMap::new();
        for (ti, t) in types.iter().enumerate() {
            for (pi, p) in t.property_types.iter().enumerate() {
                property_index.insert(p.id, (ti, pi));
            }
        }
        Ok(Catalog {
            version: doc.datakatalog,
            data_types: doc.datatyper,
            units: doc.enheter,
            categories: doc.kategorier,
            types,
            type_index,
            property_index,
        })
    }

    pub fn object_type(&self, id: u32) -> Option<&ObjectType> {
        self.type_index.get(&id).map(|&i| &self.types[i])
    }

    /// A property type by its globally unique id, with its owning object type.
    pub fn property(&self, id: u32) -> Option<(&ObjectType, &PropertyType)> {
        self.property_index.get(&id).map(|&(ti, pi)| {
            let t = &self.types[ti];
            (t, &t.property_types[pi])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalogue_has_every_listed_type() {
        let c = Catalog::embedded();
        // 414 types in the 2024/25 map united with the 382 of the 2015 list.
        assert!(c.types.len() >= 414, "{} types", c.types.len());
        let fart = c.object_type(105).expect("105 Fartsgrense");
        assert_eq!(fart.name, "Fartsgrense");
        assert_eq!(fart.placement, Placement::Line);
        let limit = fart.property(2021).expect("2021");
        assert_eq!(limit.importance, 1);
        assert_eq!(limit.datatype, datatype::ENUM_NUMBER);
        let v80 = limit.allowed_value(2738).expect("80 km/h is 2738");
        assert_eq!(v80.number, Some(80.0));
    }

    #[test]
    fn relations_are_mirrored_between_parent_and_child() {
        let c = Catalog::embedded();
        for t in &c.types {
            for r in &t.relation_types.children {
                let child = c.object_type(r.target.id).expect("child type exists");
                assert!(
                    child
                        .relation_types
                        .parents
                        .iter()
                        .any(|p| p.target.id == t.id && p.id == r.id),
                    "{} -> {} not mirrored",
                    t.id,
                    child.id
                );
            }
        }
        let skiltpunkt = c.object_type(95).unwrap();
        assert!(skiltpunkt
            .relation_types
            .children
            .iter()
            .any(|r| r.target.id == 96));
        let tunnel = c.object_type(581).unwrap();
        assert!(tunnel
            .relation_types
            .children
            .iter()
            .any(|r| r.target.id == 67));
    }

    #[test]
    fn property_ids_are_globally_unique_and_numbers_are_consistent() {
        let c = Catalog::embedded();
        let mut seen = std::collections::HashSet::new();
        for t in &c.types {
            for p in &t.property_types {
                assert!(seen.insert(p.id), "property {} twice", p.id);
                if let (Some(min), Some(max)) = (p.min, p.max) {
                    assert!(min <= max, "property {}: min {min} > max {max}", p.id);
                }
                if p.datatype == datatype::ENUM_NUMBER {
                    for v in p.allowed_values.as_ref().unwrap() {
                        assert!(
                            v.number.is_some(),
                            "numeric enum value {} has no number",
                            v.id
                        );
                    }
                }
            }
        }
    }
}
