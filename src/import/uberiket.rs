//! Serde types of the NVDB API Les Uberiket v1 response shapes that `import` reads
//! (`Veglenkesekvens`, `Veglenke`, `Vegobjekt`, their pages). Field names are the upstream's;
//! unknown fields are ignored, unknown tagged variants land in `Other` and are counted.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct Validity {
    pub startdato: String,
    #[serde(default)]
    pub sluttdato: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Port {
    pub nummer: u32,
    pub node_id: u64,
    pub posisjon: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Quality {
    #[serde(default)]
    pub malemetode: Option<i64>,
    #[serde(default)]
    pub noyaktighet: Option<i64>,
    #[serde(default)]
    pub noyaktighet_hoyde: Option<i64>,
    #[serde(default)]
    pub synbarhet: Option<i64>,
    #[serde(default)]
    pub maksimalt_avvik: Option<i64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Geometry {
    pub wkt: String,
    pub srid: u32,
    #[serde(default)]
    pub datafangstdato: Option<String>,
    #[serde(default)]
    pub temakode: Option<u16>,
    #[serde(default)]
    pub kvalitet: Option<Quality>,
    /// The SOSI medium as a number (0-based in the SOSI order T B L U S O V D I W J X; see
    /// `network::medium_letter`).
    #[serde(default)]
    pub medium: Option<i64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub nummer: u32,
    pub gyldighetsperiode: Validity,
    pub konnektering: bool,
    pub topologiniva: String,
    pub detaljniva: String,
    pub type_veg: String,
    pub startport: u32,
    pub sluttport: u32,
    pub kommune: u32,
    pub geometri: Geometry,
    pub lengde: f64,
    #[serde(default)]
    pub feltoversikt: Vec<String>,
    #[serde(default)]
    pub superstedfesting: Option<LinePlacement>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Sequence {
    pub id: u64,
    pub porter: Vec<Port>,
    pub veglenker: Vec<Link>,
    /// Length of the whole sequence in metres.
    #[serde(default)]
    pub lengde: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LinePlacement {
    pub id: u64,
    pub startposisjon: f64,
    pub sluttposisjon: f64,
    #[serde(default)]
    pub retning: Option<String>,
    /// Lanes the placement is on (kept as the placement's lanes, v2's `felt`).
    #[serde(default)]
    pub kjorefelt: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PointPlacement {
    pub id: u64,
    pub posisjon: f64,
    #[serde(default)]
    pub retning: Option<String>,
    /// Lanes the placement is on (kept as the placement's lanes, v2's `felt`).
    #[serde(default)]
    pub kjorefelt: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum Placement {
    StedfestingLinjer {
        linjer: Vec<LinePlacement>,
    },
    StedfestingPunkter {
        punkter: Vec<PointPlacement>,
    },
    StedfestingSving {
        startpunkt: PointPlacement,
        sluttpunkt: PointPlacement,
    },
    StedfestingMangler,
    #[serde(other)]
    Other,
}

/// One property value. Types the import cannot store (`BinaerEgenskap`, `ListeEgenskap`,
/// `StrukturEgenskap`, ...) land in `Other` and are counted as skipped; a `GeometriEgenskap`
/// is the object's own geometry.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum Value {
    EnumEgenskap {
        verdi: i64,
    },
    HeltallEgenskap {
        verdi: i64,
    },
    FlyttallEgenskap {
        verdi: f64,
    },
    TekstEgenskap {
        verdi: String,
    },
    DatoEgenskap {
        verdi: String,
    },
    KortDatoEgenskap {
        verdi: String,
    },
    TidEgenskap {
        verdi: String,
    },
    BoolskEgenskap {
        verdi: bool,
    },
    GeometriEgenskap {
        verdi: Geometry,
    },
    #[serde(other)]
    Other,
}

/// A child reference: the OpenAPI says `{"value": id}`, plain ids are accepted too.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IdRef {
    Plain(u64),
    Wrapped { value: u64 },
}

impl IdRef {
    pub fn id(&self) -> u64 {
        match self {
            IdRef::Plain(id) | IdRef::Wrapped { value: id } => *id,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoadObject {
    pub id: u64,
    pub versjon: u32,
    pub type_id: u32,
    #[serde(default)]
    pub gyldighetsperiode: Option<Validity>,
    #[serde(default)]
    pub egenskaper: BTreeMap<String, Value>,
    #[serde(default)]
    pub barn: BTreeMap<String, Vec<IdRef>>,
    #[serde(default)]
    pub stedfesting: Option<Placement>,
    pub sist_endret: String,
}

/// A saved page: `{"veglenkesekvenser": [...]}` or `{"vegobjekter"|"objekter": [...]}`, with
/// `metadata` (ignored: pages are read in file-name order).
#[derive(Debug, Deserialize)]
pub struct SequencePage {
    pub veglenkesekvenser: Vec<Sequence>,
}

#[derive(Debug, Deserialize)]
pub struct ObjectPage {
    #[serde(alias = "objekter")]
    pub vegobjekter: Vec<RoadObject>,
}
