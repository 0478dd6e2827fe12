//! The catalogue as the read API shows it: borrowed views of the engine's catalogue types
//! (`catalog`, English) with the v2 field names. The handlers build these; the engine's types
//! derive neither `Serialize` nor the OpenAPI schema.

use serde::Serialize;
use utoipa::ToSchema;

use crate::catalog::{
    AllowedValue, CatalogVersion, Category, DataType, Placement, PropertyControl, RelationType,
    RelationTypes, TypeControl, TypeRef, Unit,
};

/// `{id, versjon, dato}` of the catalogue.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CatalogVersion)]
pub struct CatalogVersionDoc<'a> {
    pub id: u32,
    pub versjon: &'a str,
    pub dato: &'a str,
}

impl<'a> From<&'a CatalogVersion> for CatalogVersionDoc<'a> {
    fn from(v: &'a CatalogVersion) -> Self {
        CatalogVersionDoc {
            id: v.id,
            versjon: &v.version,
            dato: &v.date,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DataType)]
pub struct DataTypeDoc<'a> {
    pub id: u16,
    pub navn: &'a str,
    pub kortnavn: &'a str,
    pub beskrivelse: &'a str,
}

impl<'a> From<&'a DataType> for DataTypeDoc<'a> {
    fn from(d: &'a DataType) -> Self {
        DataTypeDoc {
            id: d.id,
            navn: &d.name,
            kortnavn: &d.short_name,
            beskrivelse: &d.description,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Unit)]
pub struct UnitDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub kortnavn: &'a str,
}

impl<'a> From<&'a Unit> for UnitDoc<'a> {
    fn from(u: &'a Unit) -> Self {
        UnitDoc {
            id: u.id,
            navn: &u.name,
            kortnavn: &u.short_name,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Category)]
pub struct CategoryDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kortnavn: Option<&'a str>,
    pub sorteringsnummer: i64,
    pub beskrivelse: &'a str,
    pub startdato: &'a str,
}

impl<'a> From<&'a Category> for CategoryDoc<'a> {
    fn from(c: &'a Category) -> Self {
        CategoryDoc {
            id: c.id,
            navn: &c.name,
            kortnavn: c.short_name.as_deref(),
            sorteringsnummer: c.sort_key,
            beskrivelse: &c.description,
            startdato: &c.start_date,
        }
    }
}

/// One allowed value (tillatt verdi) of an enumerated property type.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AllowedValue)]
pub struct AllowedValueDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
    pub kortnavn: &'a str,
    pub beskrivelse: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objektliste_dato: Option<&'a str>,
    pub sorteringsnummer: i64,
    pub standardverdi: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdi: Option<f64>,
}

impl<'a> From<&'a AllowedValue> for AllowedValueDoc<'a> {
    fn from(v: &'a AllowedValue) -> Self {
        AllowedValueDoc {
            id: v.id,
            navn: &v.name,
            kortnavn: &v.short_name,
            beskrivelse: &v.description,
            objektliste_dato: v.object_list_date.as_deref(),
            sorteringsnummer: v.sort_key,
            standardverdi: v.is_default,
            verdi: v.number,
        }
    }
}

/// `styringsparametere` of a property type.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = PropertyControl)]
pub struct PropertyControlDoc {
    pub avledet: bool,
    pub obligatorisk_verdi: bool,
    pub tillatte_verdier_kortnavn_offisiell: bool,
    pub ajourhold_snu: bool,
    pub fortegnsendring_snu: bool,
    pub lengdeavhengig_snu: bool,
    pub verdi_beregnes_av_geometri: bool,
}

impl From<&PropertyControl> for PropertyControlDoc {
    fn from(c: &PropertyControl) -> Self {
        PropertyControlDoc {
            avledet: c.derived,
            obligatorisk_verdi: c.mandatory_value,
            tillatte_verdier_kortnavn_offisiell: c.short_names_official,
            ajourhold_snu: c.update_on_reverse,
            fortegnsendring_snu: c.sign_change_on_reverse,
            lengdeavhengig_snu: c.length_dependent,
            verdi_beregnes_av_geometri: c.computed_from_geometry,
        }
    }
}

/// `{id, navn}` of a related type.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TypeRef)]
pub struct TypeRefDoc<'a> {
    pub id: u32,
    pub navn: &'a str,
}

impl<'a> From<&'a TypeRef> for TypeRefDoc<'a> {
    fn from(t: &'a TypeRef) -> Self {
        TypeRefDoc {
            id: t.id,
            navn: &t.name,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RelationType)]
pub struct RelationTypeDoc<'a> {
    pub id: u32,
    pub relasjonstype: &'a str,
    #[serde(rename = "type")]
    pub target: TypeRefDoc<'a>,
    pub beskrivelse: &'a str,
    pub veiledning: &'a str,
    pub min: i64,
    pub maks: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objektliste_dato: Option<&'a str>,
    pub innenfor_mor: &'a str,
}

impl<'a> From<&'a RelationType> for RelationTypeDoc<'a> {
    fn from(r: &'a RelationType) -> Self {
        RelationTypeDoc {
            id: r.id,
            relasjonstype: &r.relasjonstype,
            target: (&r.target).into(),
            beskrivelse: &r.description,
            veiledning: &r.guidance,
            min: r.min,
            maks: r.max,
            objektliste_dato: r.object_list_date.as_deref(),
            innenfor_mor: &r.innenfor_mor,
        }
    }
}

/// `relasjonstyper`: parents and children.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RelationTypes)]
pub struct RelationTypesDoc<'a> {
    pub foreldre: Vec<RelationTypeDoc<'a>>,
    pub barn: Vec<RelationTypeDoc<'a>>,
}

impl<'a> From<&'a RelationTypes> for RelationTypesDoc<'a> {
    fn from(r: &'a RelationTypes) -> Self {
        RelationTypesDoc {
            foreldre: r.parents.iter().map(Into::into).collect(),
            barn: r.children.iter().map(Into::into).collect(),
        }
    }
}

/// `styringsparametere` of an object type.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TypeControl)]
pub struct TypeControlDoc<'a> {
    pub må_ha_mor: bool,
    pub sideposisjon_relevant: &'a str,
    pub kjørefelt_relevant: &'a str,
    pub tidsrom_relevant: bool,
    pub overlapp: bool,
    pub avledet: bool,
    #[schema(value_type = Value)]
    pub dekningsgrad: &'a serde_json::Value,
    pub ajourhold_i: &'a str,
    pub ajourhold_splitt: &'a str,
}

impl<'a> From<&'a TypeControl> for TypeControlDoc<'a> {
    fn from(c: &'a TypeControl) -> Self {
        TypeControlDoc {
            må_ha_mor: c.must_have_parent,
            sideposisjon_relevant: &c.side_position_relevant,
            kjørefelt_relevant: &c.lane_relevant,
            tidsrom_relevant: c.period_relevant,
            overlapp: c.overlap,
            avledet: c.derived,
            dekningsgrad: &c.coverage,
            ajourhold_i: &c.survives_i,
            ajourhold_splitt: &c.split,
        }
    }
}

/// `stedfesting` of an object type.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = Placement)]
pub enum PlacementDoc {
    #[serde(rename = "PUNKT")]
    Point,
    #[serde(rename = "LINJE")]
    Line,
    #[serde(rename = "FLEREPUNKT")]
    Points,
    #[serde(rename = "SVING")]
    Turn,
    #[serde(rename = "INGEN")]
    None,
}

impl From<Placement> for PlacementDoc {
    fn from(p: Placement) -> Self {
        match p {
            Placement::Point => PlacementDoc::Point,
            Placement::Line => PlacementDoc::Line,
            Placement::MultiPoint => PlacementDoc::Points,
            Placement::Turn => PlacementDoc::Turn,
            Placement::Unplaced => PlacementDoc::None,
        }
    }
}
