//! The piece document of `/vegnett/segmentert` (the parent module describes it), serialized
//! straight from the generation without an intermediate tree: JSON and XML pages are streamed
//! with it piece by piece (`api::stream`), CSV and GeoJSON make a `serde_json::Value` of it.
//! Compact JSON pages are written by hand (`json`), byte for byte what serde writes for the
//! documents here (the pages rendered whole go through serde: the tests compare the two).

mod json;

use std::sync::Arc;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::api::dto::{
    date, road_ref_stretch, system_ref_stretch, RoadRefStretch, SystemRefStretch,
};
use crate::api::stream::PageItems;
use crate::catalog::{Catalog, PropertyType};
use crate::generation::feature::{decode, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::{Generation, TypeData};
use crate::geo::srid::Srid;
use crate::geo::wkt;
use crate::query::overlay::{Cover, Piece};
use crate::query::vegref::link_range_short;

/// One type of the overlay as a page shows it.
pub struct PageLayer {
    pub type_id: u32,
    pub data: Option<Arc<TypeData>>,
    /// The values carried, ascending property id: each value property (not sensitive) chosen
    /// by `egenskaper`, with the index of its column in the type's table (None: no column).
    plan: Vec<(&'static PropertyType, Option<usize>)>,
    /// `"vegobjekttype_<id>":` as JSON, and per entry of `plan` `"egenskap_<id>":`.
    key_json: Vec<u8>,
    value_keys_json: Vec<Vec<u8>>,
}

impl PageLayer {
    /// `values`: the value property ids carried (None: all).
    pub fn new(g: &Generation, type_id: u32, values: Option<&[u32]>) -> PageLayer {
        let data = g.objects.get(&type_id).cloned();
        let catalog: &'static Catalog = g.catalog;
        let mut plan: Vec<(&'static PropertyType, Option<usize>)> = catalog
            .object_type(type_id)
            .into_iter()
            .flat_map(|t| t.property_types.iter())
            .filter(|p| !p.is_geometry() && p.sensitivity == 0)
            .filter(|p| values.is_none_or(|v| v.contains(&p.id)))
            .map(|p| {
                let column = data.as_ref().and_then(|d| {
                    d.table
                        .properties
                        .iter()
                        .position(|c| c.property_id == p.id)
                });
                (p, column)
            })
            .collect();
        plan.sort_by_key(|(p, _)| p.id);
        let value_keys_json = plan
            .iter()
            .map(|(p, _)| json::key(&format!("egenskap_{}", p.id)))
            .collect();
        PageLayer {
            type_id,
            data,
            plan,
            key_json: json::key(&format!("vegobjekttype_{type_id}")),
            value_keys_json,
        }
    }
}

/// The road reference (vegreferanse) and road system reference (vegsystemreferanse) of a
/// piece, as its row has them, for the piece's positions (None where the row has none).
pub fn piece_refs(g: &Generation, x: &Piece) -> (Option<RoadRefStretch>, Option<SystemRefStretch>) {
    let r = x.net_row as usize;
    let key = g.segment(r).road_key();
    let road_ref = key.has_road_ref().then(|| {
        let (a, b) = (
            g.meter_at(r, x.from).round() as u32,
            g.meter_at(r, x.to).round() as u32,
        );
        road_ref_stretch(&key, a.min(b), a.max(b))
    });
    let system_ref = g.segment_system_ref(r).map(|(k, _, _)| {
        let (a, b) = g.system_metres(r, x.from, x.to);
        system_ref_stretch(&k, a, b)
    });
    (road_ref, system_ref)
}

/// One piece as the API shows it.
pub struct PieceDoc<'a> {
    pub g: &'a Generation,
    pub layers: &'a [PageLayer],
    pub piece: &'a Piece,
    pub srid: Srid,
    /// WKT with the `Z` tag.
    pub z_tag: bool,
}

impl Serialize for PieceDoc<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (g, x) = (self.g, self.piece);
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry("veglenkesekvensid", &x.link_id)?;
        m.serialize_entry("fra_posisjon", &(x.from + 0.0))?;
        m.serialize_entry("til_posisjon", &(x.to + 0.0))?;
        m.serialize_entry("kortform", &link_range_short(x.from, x.to, x.link_id))?;
        m.serialize_entry("lengde", &((x.length_m * 1000.0).round() / 1000.0))?;
        let (road_ref, system_ref) = piece_refs(g, x);
        if let Some(v) = road_ref {
            m.serialize_entry("vegreferanse", &v)?;
        }
        if let Some(v) = system_ref {
            m.serialize_entry("vegsystemreferanse", &v)?;
        }
        let line = g.segment(x.net_row as usize).sub_line(x.from, x.to);
        let geometri = crate::api::dto::Geometry {
            wkt: wkt::linestring_z(self.srid, &line, self.z_tag)
                .map_err(|e| S::Error::custom(e.to_string()))?,
            srid: self.srid.code(),
        };
        m.serialize_entry("geometri", &geometri)?;
        m.serialize_entry("vegobjekter", &Covering(self.layers, x))?;
        m.end()
    }
}

/// `vegobjekter`: per type null, the covering object, or a list of them.
struct Covering<'a>(&'a [PageLayer], &'a Piece);

impl Serialize for Covering<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Covering(layers, x) = *self;
        let mut m = serializer.serialize_map(Some(layers.len()))?;
        for (layer, covers) in layers.iter().zip(&x.covers) {
            let key = format!("vegobjekttype_{}", layer.type_id);
            match (&layer.data, covers.as_slice()) {
                (Some(d), [c]) => m.serialize_entry(&key, &ObjectDoc(layer, d, c))?,
                (Some(d), many) if !many.is_empty() => {
                    m.serialize_entry(&key, &ObjectList(layer, d, many))?
                }
                _ => m.serialize_entry(&key, &())?,
            }
        }
        m.end()
    }
}

struct ObjectList<'a>(&'a PageLayer, &'a TypeData, &'a [Cover]);

impl Serialize for ObjectList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ObjectList(layer, d, covers) = *self;
        let mut seq = serializer.serialize_seq(Some(covers.len()))?;
        for c in covers {
            seq.serialize_element(&ObjectDoc(layer, d, c))?;
        }
        seq.end()
    }
}

/// A covering object: id, version, start date, whether it is lane specific, its chosen values.
struct ObjectDoc<'a>(&'a PageLayer, &'a TypeData, &'a Cover);

impl Serialize for ObjectDoc<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ObjectDoc(layer, d, c) = *self;
        let object = ObjectRow::new(&d.table, c.row as usize);
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry("id", &object.id())?;
        m.serialize_entry("versjon", &object.version())?;
        m.serialize_entry("startdato", &date(object.start_date()))?;
        m.serialize_entry("feltspesifikk", &c.lane_specific)?;
        m.serialize_entry("egenskaper", &Values(layer, d, object))?;
        m.end()
    }
}

/// `egenskaper`: `egenskap_<property type id>` per value the object has, ascending id.
struct Values<'a>(&'a PageLayer, &'a TypeData, ObjectRow<'a>);

impl Serialize for Values<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Values(layer, d, object) = *self;
        let mut m = serializer.serialize_map(None)?;
        for &(p, column) in &layer.plan {
            let value = column
                .and_then(|i| object.value_in(&d.table.properties[i], p.storage()))
                .and_then(|stored| decode(p, stored));
            if let Some(v) = value {
                m.serialize_entry(&format!("egenskap_{}", p.id), &Cell(&v))?;
            }
        }
        m.end()
    }
}

/// A value: an enumerated value's name, or its number for numeric enumerations (integral
/// numbers as integers).
struct Cell<'a>(&'a PropertyValue<'a>);

impl Serialize for Cell<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn number<S: Serializer>(n: f64, serializer: S) -> Result<S::Ok, S::Error> {
            if n.fract() == 0.0 && n.abs() < 1e15 {
                serializer.serialize_i64(n as i64)
            } else {
                serializer.serialize_f64(n)
            }
        }
        match *self.0 {
            PropertyValue::Enum {
                number: Some(n), ..
            } => number(n, serializer),
            PropertyValue::Enum { name, .. } => serializer.serialize_str(name),
            PropertyValue::Integer(i) => serializer.serialize_i64(i),
            PropertyValue::Float(f) => number(f, serializer),
            PropertyValue::Text(t) => serializer.serialize_str(t),
        }
    }
}

/// A streamed page's chunks: ~1.2 KB pieces, 200 or so to a chunk (fewer hand-offs to the
/// heavy-work thread and writes than the default's 50).
const CHUNK_BYTES: usize = 256 * 1024;

/// A page of pieces, rendered piece by piece as the page is written (streamed).
pub struct PiecePage {
    pub g: Arc<Generation>,
    pub layers: Vec<PageLayer>,
    pub pieces: Vec<Piece>,
    pub srid: Srid,
    pub z_tag: bool,
    /// The covering objects written last, kept from chunk to chunk (`json`).
    written: std::sync::Mutex<json::Recent>,
}

impl PiecePage {
    pub fn new(
        g: Arc<Generation>,
        layers: Vec<PageLayer>,
        pieces: Vec<Piece>,
        srid: Srid,
        z_tag: bool,
    ) -> PiecePage {
        let written = std::sync::Mutex::new(json::Recent::new(layers.len()));
        PiecePage {
            g,
            layers,
            pieces,
            srid,
            z_tag,
            written,
        }
    }
}

impl PageItems for PiecePage {
    fn count(&self) -> usize {
        self.pieces.len()
    }

    fn write_json(&self, out: &mut Vec<u8>, range: std::ops::Range<usize>) -> bool {
        let mut recent = match self.written.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        json::write_pieces(self, &mut recent, out, range)
    }

    fn chunk_bytes(&self) -> usize {
        CHUNK_BYTES
    }

    fn write<S: SerializeSeq>(
        &self,
        seq: &mut S,
        range: std::ops::Range<usize>,
    ) -> Result<(), S::Error> {
        for x in &self.pieces[range] {
            seq.serialize_element(&PieceDoc {
                g: &self.g,
                layers: &self.layers,
                piece: x,
                srid: self.srid,
                z_tag: self.z_tag,
            })?;
        }
        Ok(())
    }
}
