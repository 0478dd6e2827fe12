//! A generation written back as Uberiket-shaped files (the layout `source.rs` reads): the
//! round-trip oracle of the import (`tests/import_roundtrip.rs`) and the input of the import
//! benchmark (`tools/import_bench.sh`). Not a faithful NVDB export: it writes exactly what the
//! import mapping reads, and synthesises the road-system objects the v2 network rows imply.
//!
//! - Each network row becomes one veglenke of the sequence = its link (ports at the row's
//!   positions, nodes = the row's start/end node), geometry as WKT in EPSG:5973 (UTM 33 + NN2000,
//!   the storage coordinates as they are), `lengde` = the row's length; the sequence's `lengde`
//!   = the link's length (rows' length over their position span).
//! - Medium: `geometri.medium` as its number in the SOSI order the import reads (T, the
//!   default, is left out).
//! - Road references: one 915 Vegsystem per stored 915 (`system_id`, its id and version) over
//!   the positions of its rows, and one per row with a road reference but no stored 915 (a row
//!   without one gets none), and one 916 Strekning per (kategori, fase, nummer, hp, fylke; kommune for K and
//!   P roads) chain of rows (each starting where the previous one ends, in metre order; a hp
//!   part with parallel carriageways gives several chains) with those rows' placements (the
//!   rows' stored strekning and delstrekning, which the import folds into hp = strekning × 100 +
//!   delstrekning, so a generated hp comes back as that fold, hp 4 = S2D1 as hp 201; a
//!   chain's rows share their trafikantgruppe, adskilte løp and arm, which the 916 carries;
//!   placements are written MED, so a row's retning MOT does not travel), with the rows' stored
//!   916 id and version (`section_id`; a chain of rows without one, or a further chain of the
//!   same one, gets a fresh id). Fresh ids follow the generation's largest object id and every
//!   stored 915/916 id. `detaljniva` of each veglenke is the row's detail level;
//!   one 920 Sideanleggsdel per row of a side facility (with its trafikantgruppe).
//! - Objects: id, versjon, gyldighetsperiode, sistEndret, egenskaper by the catalogue's storage
//!   (enum → EnumEgenskap, integer → HeltallEgenskap, float → FlyttallEgenskap, text →
//!   TekstEgenskap, dates → DatoEgenskap), barn, and placements (StedfestingPunkter when every
//!   placement is a point, else StedfestingLinjer; MOT for placements against the link;
//!   `kjorefelt` = the placement's lane codes when it has lanes).
//!   Own geometry (a point or a line) as a GeometriEgenskap of the type's first geometry
//!   property of that kind, WKT in EPSG:5973; a surface is not written.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{json, Map, Value};

use super::roadref::{SIDEANLEGGSDEL, STREKNING, VEGSYSTEM};
use super::{OBJECTS_DIR, SEQUENCES_DIR};
use crate::catalog::{datatype, Catalog, ValueKind};
use crate::changeset::working::value_at;
use crate::error::{EngineError, Result};
use crate::generation::Generation;
use crate::snapshot::columns::{
    lane_codes, Days, ObjectTable, RoadNetwork, DETAIL_LEVELS, DIRECTION_AGAINST, OPEN_END,
    TOPOLOGY_LEVELS,
};
use crate::value::Value as Stored;

/// Records per file.
const PER_FILE: usize = 100_000;

/// Upstream `typeVeg` names by the network's road type index.
const ROAD_TYPE_NAMES: [&str; 7] = [
    "ENKEL_BILVEG",
    "KANALISERT_VEG",
    "RAMPE",
    "RUNDKJORING",
    "GANG_OG_SYKKELVEG",
    "BILFERJE",
    "GATETUN",
];

/// What was written.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ExportSummary {
    pub sequences: usize,
    pub objects: BTreeMap<u32, usize>,
}

fn date(d: Days) -> String {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    (epoch + chrono::Duration::days(i64::from(d)))
        .format("%Y-%m-%d")
        .to_string()
}

fn time(s: i64) -> String {
    chrono::DateTime::from_timestamp(s, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// NDJSON files `part-NNNNNN.ndjson` of at most `PER_FILE` records.
struct Parts {
    dir: std::path::PathBuf,
    file: Option<BufWriter<File>>,
    in_file: usize,
    files: usize,
    pub records: usize,
}

impl Parts {
    fn new(dir: &Path) -> Result<Parts> {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
        Ok(Parts {
            dir: dir.to_path_buf(),
            file: None,
            in_file: 0,
            files: 0,
            records: 0,
        })
    }

    fn write(&mut self, v: &Value) -> Result<()> {
        if self.file.is_none() || self.in_file >= PER_FILE {
            self.finish()?;
            let p = self.dir.join(format!("part-{:06}.ndjson", self.files));
            self.files += 1;
            self.in_file = 0;
            self.file = Some(BufWriter::new(
                File::create(&p).map_err(|e| EngineError::io(&p, e))?,
            ));
        }
        let dir = self.dir.clone();
        let f = self
            .file
            .as_mut()
            .ok_or_else(|| EngineError::Internal("no file".into()))?;
        serde_json::to_writer(&mut *f, v).map_err(|e| EngineError::Internal(e.to_string()))?;
        f.write_all(b"\n").map_err(|e| EngineError::io(&dir, e))?;
        self.in_file += 1;
        self.records += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if let Some(mut f) = self.file.take() {
            f.flush().map_err(|e| EngineError::io(&self.dir, e))?;
        }
        Ok(())
    }
}

fn wkt(coords: &[[f64; 3]]) -> String {
    let pts: Vec<String> = coords
        .iter()
        .map(|c| format!("{} {} {}", c[0], c[1], c[2]))
        .collect();
    format!("LINESTRING Z ({})", pts.join(", "))
}

/// One veglenkesekvens from the rows of one link.
fn sequence(net: &RoadNetwork, rows: std::ops::Range<usize>) -> Value {
    let link = net.link_id[rows.start];
    let (mut m, mut span) = (0.0, 0.0);
    let mut porter = Vec::new();
    let mut veglenker = Vec::new();
    for (i, r) in rows.enumerate() {
        m += net.length_m[r];
        span += net.to_pos[r] - net.from_pos[r];
        let (sp, ep) = (2 * i as u32 + 1, 2 * i as u32 + 2);
        porter
            .push(json!({"nummer": sp, "nodeId": net.start_node[r], "posisjon": net.from_pos[r]}));
        porter.push(json!({"nummer": ep, "nodeId": net.end_node[r], "posisjon": net.to_pos[r]}));
        let lanes: Vec<&str> = net.lanes[r].split('#').filter(|l| !l.is_empty()).collect();
        let mut l = json!({
            "nummer": i + 1,
            "gyldighetsperiode": {"startdato": date(net.start_date[r])},
            "konnektering": net.is_connection[r],
            "topologiniva": TOPOLOGY_LEVELS.get(net.topology_level[r] as usize).copied().unwrap_or("VEGTRASE"),
            "detaljniva": DETAIL_LEVELS.get(net.detail_level[r] as usize).copied().unwrap_or("VEGTRASE_OG_KJOREBANE"),
            "typeVeg": ROAD_TYPE_NAMES.get(net.road_type[r] as usize).copied().unwrap_or("ENKEL_BILVEG"),
            "startport": sp,
            "sluttport": ep,
            "kommune": net.municipality[r],
            "geometri": {
                "wkt": wkt(net.geometry(r)),
                "srid": 5973,
                "datafangstdato": date(net.q_capture_date[r]),
                "temakode": net.theme_code[r],
                "kvalitet": {
                    "malemetode": net.q_method[r],
                    "noyaktighet": net.q_accuracy[r],
                    "noyaktighetHoyde": net.q_height_accuracy[r],
                    "maksimaltAvvik": net.q_tolerance[r],
                    "synbarhet": net.q_visibility[r]
                }
            },
            "lengde": net.length_m[r],
            "feltoversikt": lanes,
        });
        if let Some(code) = b"TBLUSOVDIWJX".iter().position(|&m| m == net.medium[r]) {
            if code > 0 {
                l["geometri"]["medium"] = json!(code);
            }
        }
        if net.super_id[r] != 0 {
            l["superstedfesting"] =
                json!({"id": net.super_id[r], "startposisjon": 0.0, "sluttposisjon": 1.0});
        }
        veglenker.push(l);
    }
    let lengde = if span > 0.0 { m / span } else { 0.0 };
    json!({"id": link, "porter": porter, "veglenker": veglenker, "lengde": lengde})
}

fn enum_value(catalog: &Catalog, property: u32, short: u8) -> Option<u32> {
    let (_, p) = catalog.property(property)?;
    p.allowed_values
        .as_deref()?
        .iter()
        .find(|v| v.short_name.as_bytes().first() == Some(&short))
        .map(|v| v.id)
}

/// One object row in the upstream shape.
pub fn object(catalog: &Catalog, t: &ObjectTable, row: usize) -> Value {
    let ty = catalog.object_type(t.type_id);
    let mut egenskaper = Map::new();
    for col in &t.properties {
        let Some(v) = value_at(&col.values, row) else {
            continue;
        };
        let p = ty.and_then(|ty| ty.property(col.property_id));
        let kind = p.map(|p| p.storage());
        let e = match (v, kind) {
            (Stored::Int(v), Some(ValueKind::Enum)) => json!({"type": "EnumEgenskap", "verdi": v}),
            (Stored::Int(v), _) => json!({"type": "HeltallEgenskap", "verdi": v}),
            (Stored::Float(v), _) => json!({"type": "FlyttallEgenskap", "verdi": v}),
            (Stored::Text(v), _) => {
                let kind = match p.map(|p| p.datatype_tekst.as_str()) {
                    Some("Dato") => "DatoEgenskap",
                    _ => "TekstEgenskap",
                };
                json!({"type": kind, "verdi": v})
            }
        };
        egenskaper.insert(col.property_id.to_string(), e);
    }
    let own = match t.own_geometry(row) {
        [] => None,
        g if crate::geo::surface::is_surface(g) => None,
        [c] => Some((
            datatype::GEOM_POINT,
            format!("POINT Z ({} {} {})", c[0], c[1], c[2]),
        )),
        g => Some((datatype::GEOM_LINE, wkt(g))),
    };
    if let Some((kind, text)) = own {
        if let Some(p) = ty.and_then(|ty| ty.geometry_property(kind)) {
            egenskaper.insert(
                p.id.to_string(),
                json!({"type": "GeometriEgenskap", "verdi": {"wkt": text, "srid": 5973}}),
            );
        }
    }
    let mut barn: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for c in t.children(row) {
        barn.entry(t.child_type[c].to_string())
            .or_default()
            .push(t.child_id[c]);
    }
    let retning = |p: usize| {
        if t.loc_direction[p] == DIRECTION_AGAINST {
            "MOT"
        } else {
            "MED"
        }
    };
    // upstream's `kjorefelt`, only where the placement has lanes
    let with_lanes = |mut v: Value, p: usize| {
        let codes: Vec<&str> = lane_codes(&t.loc_lanes[p]).collect();
        if !codes.is_empty() {
            v["kjorefelt"] = json!(codes);
        }
        v
    };
    let points = t.placements(row).all(|p| t.loc_from[p] == t.loc_to[p]);
    let stedfesting = if t.placements(row).is_empty() {
        json!({"type": "StedfestingMangler"})
    } else if points {
        let punkter: Vec<Value> = t
            .placements(row)
            .map(|p| {
                with_lanes(
                    json!({"id": t.loc_link[p], "posisjon": t.loc_from[p], "retning": retning(p)}),
                    p,
                )
            })
            .collect();
        json!({"type": "StedfestingPunkter", "punkter": punkter})
    } else {
        let linjer: Vec<Value> = t
            .placements(row)
            .map(|p| with_lanes(json!({"id": t.loc_link[p], "startposisjon": t.loc_from[p], "sluttposisjon": t.loc_to[p], "retning": retning(p)}), p))
            .collect();
        json!({"type": "StedfestingLinjer", "linjer": linjer})
    };
    let mut validity = json!({"startdato": date(t.start_date[row])});
    if t.end_date[row] != OPEN_END {
        validity["sluttdato"] = json!(date(t.end_date[row]));
    }
    json!({
        "id": t.id[row],
        "versjon": t.version[row],
        "typeId": t.type_id,
        "gyldighetsperiode": validity,
        "egenskaper": egenskaper,
        "barn": barn,
        "stedfesting": stedfesting,
        "sistEndret": time(t.last_modified[row]),
    })
}

/// Write generation `g` into `dest` as Uberiket-shaped NDJSON files.
pub fn export_generation(g: &Generation, dest: &Path) -> Result<ExportSummary> {
    let catalog = g.catalog;
    let net = &*g.network;
    let mut summary = ExportSummary::default();
    let mut seqs = Parts::new(&dest.join(SEQUENCES_DIR))?;
    let mut row = 0;
    while row < net.len() {
        let link = net.link_id[row];
        let end = row + net.link_id[row..].partition_point(|&l| l == link);
        seqs.write(&sequence(net, row..end))?;
        row = end;
    }
    seqs.finish()?;
    summary.sequences = seqs.records;

    // road system: a 915 per stored 915 (else per row), a 916 per hp part; fresh ids above
    // every stored one
    let stored_max = net.system_id.iter().chain(&net.section_id).max().copied();
    let mut next_id = g.next_object_id.max(stored_max.map_or(0, |m| m + 1));
    let category = catalog.property(11276).map(|_| 11276);
    let mut systems = Parts::new(&dest.join(OBJECTS_DIR).join(VEGSYSTEM.to_string()))?;
    let mut parts: BTreeMap<HpKey, Vec<usize>> = BTreeMap::new();
    // (id, version, first row) -> rows, in the order of their first row
    let mut objects: Vec<((u64, u32), Vec<usize>)> = Vec::new();
    let mut by_id: std::collections::HashMap<u64, usize> = Default::default();
    for r in 0..net.len() {
        let (c, s) = (net.road_category[r], net.road_status[r]);
        // status G (gang-/sykkelveg) is fase V on a veglenke of typeVeg GANG_OG_SYKKELVEG
        let s = if s == b'G' { b'V' } else { s };
        if enum_value(catalog, 11276, c).is_none()
            || enum_value(catalog, 11278, s).is_none()
            || category.is_none()
        {
            continue;
        }
        let id = net.system_id[r];
        match by_id.get(&id).filter(|_| id != 0) {
            Some(&i) => objects[i].1.push(r),
            None => {
                let version = net.system_version[r].max(1);
                let object = if id == 0 {
                    next_id += 1;
                    (next_id - 1, 1)
                } else {
                    (id, version)
                };
                by_id.insert(id, objects.len());
                objects.push((object, vec![r]));
            }
        }
        let per_municipality = matches!(c, b'K' | b'P');
        let key = (
            c,
            s,
            net.road_number[r],
            net.hp[r],
            net.county[r],
            if per_municipality {
                net.municipality[r]
            } else {
                0
            },
        );
        parts.entry(key).or_default().push(r);
    }
    for ((id, version), rows) in &objects {
        systems.write(&vegsystem(catalog, net, *id, *version, rows))?;
    }
    systems.finish()?;
    summary.objects.insert(VEGSYSTEM, systems.records);
    let (records, next_id) = write_sections(net, parts, dest, next_id)?;
    summary.objects.insert(STREKNING, records);
    let (records, _) = write_side_facilities(net, dest, next_id)?;
    if records > 0 {
        summary.objects.insert(SIDEANLEGGSDEL, records);
    }

    for (&t, td) in &g.objects {
        if t == VEGSYSTEM || t == STREKNING || t == SIDEANLEGGSDEL {
            continue;
        }
        let mut out = Parts::new(&dest.join(OBJECTS_DIR).join(t.to_string()))?;
        for row in 0..td.table.len() {
            out.write(&object(catalog, &td.table, row))?;
        }
        out.finish()?;
        summary.objects.insert(t, out.records);
    }
    Ok(summary)
}

/// One 915 Vegsystem over `rows` (which share its kategori, fase and nummer), valid from
/// the earliest of their start dates.
fn vegsystem(catalog: &Catalog, net: &RoadNetwork, id: u64, version: u32, rows: &[usize]) -> Value {
    let r = rows[0];
    let s = match net.road_status[r] {
        b'G' => b'V',
        s => s,
    };
    let linjer: Vec<Value> = rows
        .iter()
        .map(|&r| json!({"id": net.link_id[r], "startposisjon": net.from_pos[r], "sluttposisjon": net.to_pos[r], "retning": "MED"}))
        .collect();
    let start = rows
        .iter()
        .map(|&r| net.start_date[r])
        .min()
        .unwrap_or(net.start_date[r]);
    json!({
        "id": id, "versjon": version, "typeId": VEGSYSTEM,
        "gyldighetsperiode": {"startdato": date(start)},
        "egenskaper": {
            "11276": {"type": "EnumEgenskap", "verdi": enum_value(catalog, 11276, net.road_category[r])},
            "11277": {"type": "HeltallEgenskap", "verdi": net.road_number[r]},
            "11278": {"type": "EnumEgenskap", "verdi": enum_value(catalog, 11278, s)}
        },
        "barn": {},
        "stedfesting": {"type": "StedfestingLinjer", "linjer": linjer},
        "sistEndret": "2020-01-01T00:00:00Z"
    })
}

/// Key of an hp part: (category, status, number, hp, county, municipality for K and P roads).
type HpKey = (u8, u8, u32, u16, u8, u16);

/// One 916 Strekning per chain of rows of an hp part (ids from `next_id`): the records written
/// and the next free id.
fn write_sections(
    net: &RoadNetwork,
    parts: BTreeMap<HpKey, Vec<usize>>,
    dest: &Path,
    mut next_id: u64,
) -> Result<(usize, u64)> {
    let mut sections = Parts::new(&dest.join(OBJECTS_DIR).join(STREKNING.to_string()))?;
    // rows of an hp part in metre order, chained where one ends at the next one's start
    // (parallel carriageways give several chains, each a 916 of its own)
    let mut chains: Vec<(u16, Vec<usize>)> = Vec::new();
    for (key, mut rows) in parts {
        rows.sort_by_key(|&r| (net.from_m[r], net.link_id[r]));
        let first = chains.len();
        for r in rows {
            // one 916 carries one trafikantgruppe, adskilte løp, strekning, delstrekning, arm
            let attrs = |r: usize| {
                (
                    (net.traffic_group[r], net.separate_carriageways[r]),
                    (net.section[r], net.subsection[r], net.arm[r]),
                    (net.section_id[r], net.section_version[r]),
                )
            };
            let open = chains[first..].iter_mut().find(|(_, c)| {
                c.last().is_some_and(|&l| {
                    net.to_m[l].abs_diff(net.from_m[r]) <= 1 && attrs(l) == attrs(r)
                })
            });
            match open {
                Some((_, c)) => c.push(r),
                None => chains.push((key.3, vec![r])),
            }
        }
    }
    let mut used = std::collections::HashSet::new();
    for (_, rows) in chains {
        // the catalogue's value ids: 11289 Trafikantgruppe G 19037, K 19039; 11283 Adskilte
        // løp med 19035, nei 19036, mot 19091
        let group = if net.traffic_group[rows[0]] == b'G' {
            19037
        } else {
            19039
        };
        let separate = [19036, 19035, 19091]
            .get(net.separate_carriageways[rows[0]] as usize)
            .copied()
            .unwrap_or(19036);
        let linjer: Vec<Value> = rows
            .iter()
            .map(|&r| json!({"id": net.link_id[r], "startposisjon": net.from_pos[r], "sluttposisjon": net.to_pos[r], "retning": "MED"}))
            .collect();
        // the stored strekning and delstrekning (hp = strekning × 100 + delstrekning, as the
        // import folds them); 11292 Arm ja 19046 where the rows are an arm
        let mut egenskaper = json!({
            "11281": {"type": "HeltallEgenskap", "verdi": net.section[rows[0]]},
            "11284": {"type": "HeltallEgenskap", "verdi": net.subsection[rows[0]]},
            "11283": {"type": "EnumEgenskap", "verdi": separate},
            "11289": {"type": "EnumEgenskap", "verdi": group}
        });
        if net.arm[rows[0]] {
            egenskaper["11292"] = json!({"type": "EnumEgenskap", "verdi": 19046});
        }
        // the stored 916 (its first chain; a further one, or a row without one: a fresh id)
        let stored = (net.section_id[rows[0]], net.section_version[rows[0]].max(1));
        let (id, version) = if stored.0 != 0 && used.insert(stored.0) {
            stored
        } else {
            next_id += 1;
            (next_id - 1, 1)
        };
        sections.write(&json!({
            "id": id, "versjon": version, "typeId": STREKNING,
            "gyldighetsperiode": {"startdato": "2020-01-01"},
            "egenskaper": egenskaper,
            "barn": {},
            "stedfesting": {"type": "StedfestingLinjer", "linjer": linjer},
            "sistEndret": "2020-01-01T00:00:00Z"
        }))?;
    }
    sections.finish()?;
    Ok((sections.records, next_id))
}

/// One 920 Sideanleggsdel per network row of a side facility (its trafikantgruppe: 11291, G
/// 19043, K 19045), ids from `next_id`: the records written and the next free id.
fn write_side_facilities(net: &RoadNetwork, dest: &Path, mut next_id: u64) -> Result<(usize, u64)> {
    let rows: Vec<usize> = (0..net.len()).filter(|&r| net.side_facility[r]).collect();
    if rows.is_empty() {
        return Ok((0, next_id));
    }
    let mut out = Parts::new(&dest.join(OBJECTS_DIR).join(SIDEANLEGGSDEL.to_string()))?;
    for r in rows {
        let group = if net.traffic_group[r] == b'G' {
            19043
        } else {
            19045
        };
        out.write(&json!({
            "id": next_id, "versjon": 1, "typeId": SIDEANLEGGSDEL,
            "gyldighetsperiode": {"startdato": "2020-01-01"},
            "egenskaper": {"11291": {"type": "EnumEgenskap", "verdi": group}},
            "barn": {},
            "stedfesting": {"type": "StedfestingLinjer", "linjer": [
                {"id": net.link_id[r], "startposisjon": net.from_pos[r], "sluttposisjon": net.to_pos[r], "retning": "MED"}]},
            "sistEndret": "2020-01-01T00:00:00Z"
        }))?;
        next_id += 1;
    }
    out.finish()?;
    Ok((out.records, next_id))
}
