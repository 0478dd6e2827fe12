//! The data dictionary written with each generation (format version 3): `dictionary.json`
//! (machine-readable) and `DICTIONARY.md` (the same for people) describe every column of the
//! files, the codes they hold (road types, topology levels, directions, municipalities,
//! counties) and, for each object type in the generation, its property columns `p<id>` with
//! name, data type, unit and allowed values (enum id → value). The content depends only on
//! the catalogue and the set of types present, so a derived generation shares its parent's
//! files unless a type appeared or disappeared.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::columns::{DETAIL_LEVELS, ROAD_TYPES, SEPARATE_CARRIAGEWAYS, TOPOLOGY_LEVELS};
use super::manifest::{FileEntry, FORMAT_VERSION};
use crate::area::Areas;
use crate::catalog::{Catalog, ValueKind};
use crate::error::Result;
use crate::util::hex;

pub const DICTIONARY_JSON: &str = "dictionary.json";
pub const DICTIONARY_MD: &str = "DICTIONARY.md";

/// (name, type, meaning) of the columns of an object file.
const OBJECT_COLUMNS: &[(&str, &str, &str)] = &[
    ("id", "int64", "object id (nvdbId)"),
    ("version", "int32", "object version"),
    ("start_date", "date32", "valid from (startdato)"),
    ("end_date", "date32, null = open", "valid to (sluttdato)"),
    ("last_modified", "timestamp[s, UTC]", "last modified (sist_modifisert)"),
    ("placements", "list<struct<link_id int64, from_pos float64, to_pos float64, direction uint8, lanes utf8>>", "placements on road links (stedfestinger): positions 0..1 along the link; direction 0 = with, 1 = against the link's digitising direction; lanes = the lanes the placement is on, lane codes joined by '#' as the API's felt (\"1#2\"), null when it is not on particular lanes (absent from files written before lanes were kept: read as null)"),
    ("children", "list<struct<type_id int32, id int64>>", "child objects (relasjoner.barn)"),
    ("geometry", "WKB (GeoParquet 1.1, EPSG:32633)", "the object's own geometry when it has one, else the geometry located from its placements: for ranges the road network under them, LineString Z (MultiLineString Z when the pieces do not join), for points Point Z (the first placement): the geometry the API returns as geometri"),
    ("geometry_located", "bool", "true when `geometry` was located from the placements (the object has no own geometry)"),
    ("bbox", "struct<xmin, ymin, xmax, ymax float64>", "bounding box of `geometry` (GeoParquet 1.1 covering column), null without a geometry"),
    ("length_m", "float64", "located length in meters: the placed share of each road link segment's length, summed (what /statistikk calls strekningslengde); 0 for points"),
    ("municipalities", "list<struct<municipality int32, length_m float64>>", "every municipality (kommune number) a placement overlaps or touches, with the located meters inside it; an object counts in a municipality's statistics when listed there (also with 0 m)"),
    ("p<property id>", "int64 | float64 | utf8", "one nullable column per property type: enum ids (see the type's values), integers, decimals, or text (dates YYYY-MM-DD)"),
];

/// (name, type, meaning) of the network file's columns.
const NETWORK_COLUMNS: &[(&str, &str, &str)] = &[
    ("link_id", "int64", "road link (veglenkesekvens) id"),
    (
        "from_pos",
        "float64",
        "start position of this segment on the link (0..1)",
    ),
    (
        "to_pos",
        "float64",
        "end position of this segment on the link (0..1)",
    ),
    ("start_node", "int64", "start node id"),
    ("end_node", "int64", "end node id"),
    ("length_m", "float64", "segment length in meters"),
    (
        "municipality",
        "int32",
        "kommune number (see `municipalities`)",
    ),
    ("county", "int32", "fylke number (see `counties`)"),
    ("region", "int32", "region number"),
    ("road_department", "int32", "vegavdeling number"),
    ("road_category", "utf8", "E, R, F, K, P, S"),
    ("road_status", "utf8", "V (existing), W, T, G, A, P, E, …"),
    ("road_number", "int32", "road number"),
    ("hp", "int32", "hovedparsell"),
    ("from_m", "int32", "metre value at from_pos"),
    ("to_m", "int32", "metre value at to_pos"),
    ("lanes", "utf8", "lanes, e.g. 1#2"),
    (
        "medium",
        "utf8",
        "medium letter (T on the ground, B bridge, U tunnel, …)",
    ),
    ("theme_code", "int32", "temakode"),
    (
        "is_connection",
        "bool",
        "connection link (konnekteringslenke)",
    ),
    (
        "topology_level",
        "int32",
        "index into `codes.topology_level`",
    ),
    ("super_id", "int64, null = none", "the link's superior link"),
    ("road_type", "int32", "index into `codes.road_type`"),
    ("start_date", "date32", "valid from (inclusive)"),
    (
        "end_date",
        "date32, null = open",
        "valid to (exclusive); set only in network_history.parquet",
    ),
    ("q_method", "int32", "geometry quality: målemetode"),
    ("q_accuracy", "int32", "geometry quality: nøyaktighet (cm)"),
    (
        "q_height_accuracy",
        "int32",
        "geometry quality: nøyaktighet høyde (cm)",
    ),
    ("q_tolerance", "int32", "geometry quality: toleranse"),
    ("q_visibility", "int32", "geometry quality: synbarhet"),
    (
        "q_capture_date",
        "date32",
        "geometry quality: datafangstdato",
    ),
    (
        "detail_level",
        "int32",
        "detaljnivå: index into `codes.detail_level` (VEGTRASE, KJOREBANE, KJOREFELT, VEGTRASE_OG_KJOREBANE; API filter detaljniva=VT,KB,KF,VTKB); absent before format 5: derived from topology_level (0 VEGTRASE_OG_KJOREBANE, 1 KJOREBANE, 2 KJOREFELT)",
    ),
    (
        "traffic_group",
        "utf8",
        "trafikantgruppe: K (kjørende) or G (gående og syklende); absent before format 5: G on road_status G or road_type gang- og sykkelveg, else K",
    ),
    (
        "side_facility",
        "bool",
        "sideanlegg: part of a side facility (rest area, parking); absent before format 5: false",
    ),
    (
        "separate_carriageways",
        "int32",
        "adskilte løp: index into `codes.separate_carriageways` (Nei, Med, Mot); absent before format 5: 0 (Nei)",
    ),
    (
        "system_category",
        "utf8",
        "vegsystemreferanse: vegkategori (E, R, F, K, P, S; - = none); absent before format 6: road_category",
    ),
    (
        "system_phase",
        "utf8",
        "vegsystemreferanse: vegfase (V, A, P, F; - = none); absent before format 6: road_status, G (and any other v2 status) as V",
    ),
    (
        "system_number",
        "int32",
        "vegsystemreferanse: vegnummer; absent before format 6: road_number",
    ),
    (
        "section",
        "int32",
        "vegsystemreferanse: strekning; absent before format 6: hp / 100",
    ),
    (
        "subsection",
        "int32",
        "vegsystemreferanse: delstrekning; absent before format 6: hp % 100",
    ),
    (
        "section_from_m",
        "int32",
        "vegsystemreferanse: metre at from_pos (<= section_to_m); absent before format 6: from_m",
    ),
    (
        "section_to_m",
        "int32",
        "vegsystemreferanse: metre at to_pos; absent before format 6: to_m",
    ),
    (
        "section_against",
        "bool",
        "vegsystemreferanse: the link runs against the metering (retning MOT); absent before format 6: false",
    ),
    (
        "arm",
        "bool",
        "vegsystemreferanse: the row is an arm of its strekning; absent before format 6: false",
    ),
    (
        "system_id",
        "int64, null = none",
        "vegsystemreferanse: id of the 915 Vegsystem it comes from (vegsystem.id); absent before format 7: none",
    ),
    (
        "system_version",
        "int32, null = none",
        "vegsystemreferanse: version of that 915 Vegsystem (vegsystem.versjon); absent before format 7: none",
    ),
    (
        "section_id",
        "int64, null = none",
        "vegsystemreferanse: id of the 916 Strekning it comes from (strekning.id), none where no 916 covers the row; absent before format 7: none",
    ),
    (
        "section_version",
        "int32, null = none",
        "vegsystemreferanse: version of that 916 Strekning (strekning.versjon); absent before format 7: none",
    ),
    (
        "geometry",
        "WKB LineString Z (EPSG:32633)",
        "segment geometry",
    ),
    (
        "bbox",
        "struct<xmin, ymin, xmax, ymax float64>",
        "bounding box (GeoParquet 1.1 covering column)",
    ),
];

const DELETED_COLUMNS: &[(&str, &str, &str)] = &[
    ("type_id", "int32", "object type"),
    ("id", "int64", "object id"),
    ("version", "int32", "last version"),
    ("deleted_at", "timestamp[s, UTC]", "when it was closed"),
];

fn columns_json(cols: &[(&str, &str, &str)]) -> Value {
    Value::Array(
        cols.iter()
            .map(|(n, t, d)| json!({"name": n, "type": t, "description": d}))
            .collect(),
    )
}

/// The dictionary of a generation holding `type_ids`, as JSON.
pub fn dictionary(catalog: &Catalog, areas: &Areas, type_ids: &[u32]) -> Value {
    let types: Vec<Value> = type_ids
        .iter()
        .map(|&t| {
            let Some(ot) = catalog.object_type(t) else {
                return json!({"id": t, "path": format!("objects/type={t}/")});
            };
            let properties: Vec<Value> = ot
                .property_types
                .iter()
                .filter(|p| p.storage() != ValueKind::Geometry)
                .map(|p| {
                    let values: Vec<Value> = p
                        .allowed_values
                        .iter()
                        .flatten()
                        .map(|v| json!({"id": v.id, "value": v.name}))
                        .collect();
                    let mut o = json!({
                        "column": format!("p{}", p.id), "id": p.id, "name": p.name,
                        "datatype": p.datatype_tekst,
                    });
                    if let Some(u) = &p.unit {
                        o["unit"] = json!(u.short_name);
                    }
                    if p.storage() == ValueKind::Enum {
                        o["values"] = Value::Array(values);
                    }
                    o
                })
                .collect();
            json!({"id": t, "name": ot.name, "placement": format!("{:?}", ot.placement),
                   "path": format!("objects/type={t}/"), "properties": properties})
        })
        .collect();
    json!({
        "format_version": FORMAT_VERSION,
        "catalogue_version": catalog.version.version,
        "crs": "EPSG:32633",
        "crs_note": "WGS 84 / UTM zone 33N, the label the v2 API gives the same coordinates (srid 32633, its default); the numbers are those NVDB stores in EUREF89 UTM 33 (EPSG:25833), which vegdb does not transform between",
        "files": {
            "network/links.parquet": "road network: one row per road link segment, in link order",
            "objects/type=<type id>/part-<first object id>.parquet": "objects of one type, chunked by id range, rows in spatial (Hilbert) order; read all with objects/type=*/*.parquet and hive partitioning: `type` is the partition column",
            "objects/deleted.parquet": "objects that were closed (for /endringer)",
            "history/type=<type id>/versions.parquet": "every version of the type's objects that is no longer current (older versions, and the last version of closed objects), the columns of the type's chunks, rows in spatial order; a version is valid from start_date (inclusive) to end_date (exclusive); absent when the type has no history",
            "network/history.parquet": "road link segments that are closed (veglenker with a sluttdato): the columns of network/links.parquet, each valid from start_date (inclusive) to end_date (exclusive); absent when no link was closed",
            "MANIFEST.json": "the generation: files with rows, bytes and SHA-256",
        },
        "columns": {
            "objects": columns_json(OBJECT_COLUMNS),
            "network": columns_json(NETWORK_COLUMNS),
            "deleted": columns_json(DELETED_COLUMNS),
        },
        "codes": {
            "road_type": ROAD_TYPES,
            "topology_level": TOPOLOGY_LEVELS,
            "detail_level": DETAIL_LEVELS,
            "separate_carriageways": SEPARATE_CARRIAGEWAYS,
            "direction": ["with the link", "against the link"],
        },
        "municipalities": areas.municipalities.iter()
            .map(|m| json!({"number": m.number, "name": m.name, "county": m.county}))
            .collect::<Vec<_>>(),
        "counties": areas.counties.iter()
            .map(|c| json!({"number": c.number, "name": c.name}))
            .collect::<Vec<_>>(),
        "types": types,
    })
}

/// The same for people.
pub fn markdown(d: &Value) -> String {
    let mut s = String::new();
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string())
    };
    let _ = writeln!(
        s,
        "# Data dictionary (format version {})\n",
        d["format_version"]
    );
    let _ = writeln!(
        s,
        "Coordinates: {} — {}.\n",
        text(&d["crs"]),
        text(&d["crs_note"])
    );
    let _ = writeln!(s, "## Files\n");
    for (k, v) in d["files"].as_object().into_iter().flatten() {
        let _ = writeln!(s, "- `{k}`: {}", text(v));
    }
    for (table, cols) in d["columns"].as_object().into_iter().flatten() {
        let _ = writeln!(
            s,
            "\n## Columns: {table}\n\n| column | type | meaning |\n|---|---|---|"
        );
        for c in cols.as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} |",
                text(&c["name"]),
                text(&c["type"]),
                text(&c["description"])
            );
        }
    }
    let _ = writeln!(s, "\n## Codes\n");
    for (k, v) in d["codes"].as_object().into_iter().flatten() {
        let list: Vec<String> = v
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, x)| format!("{i} = {}", text(x)))
            .collect();
        let _ = writeln!(s, "- `{k}`: {}", list.join(", "));
    }
    let _ = writeln!(
        s,
        "\nMunicipality and county numbers and names are in `dictionary.json`.\n\n## Object types"
    );
    for t in d["types"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "\n### {} {} (`{}`, placement {})\n\n| column | property | datatype | values |\n|---|---|---|---|",
            t["id"],
            text(&t["name"]),
            text(&t["path"]),
            text(&t["placement"])
        );
        for p in t["properties"].as_array().into_iter().flatten() {
            let values: Vec<String> = p["values"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| format!("{} = {}", v["id"], text(&v["value"])))
                .collect();
            let unit = p
                .get("unit")
                .map(|u| format!(" ({})", text(u)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "| `{}` | {}{unit} | {} | {} |",
                text(&p["column"]),
                text(&p["name"]).replace('|', "/"),
                text(&p["datatype"]),
                values.join("; ").replace('|', "/")
            );
        }
    }
    s
}

/// The two files' bytes for a generation holding `type_ids`.
pub fn files(catalog: &Catalog, areas: &Areas, type_ids: &[u32]) -> [(&'static str, Vec<u8>); 2] {
    let d = dictionary(catalog, areas, type_ids);
    let mut json = serde_json::to_vec_pretty(&d).unwrap_or_default();
    json.push(b'\n');
    [
        (DICTIONARY_JSON, json),
        (DICTIONARY_MD, markdown(&d).into_bytes()),
    ]
}

/// Write the dictionary of a generation holding `type_ids` into `dir`, except the files
/// `parent` already has with the same content (those are shared with it: returned in the
/// second list, by path). Returns the new entries and the shared paths.
pub fn write(
    dir: &Path,
    catalog: &Catalog,
    areas: &Areas,
    type_ids: &[u32],
    parent: &[FileEntry],
) -> Result<(Vec<FileEntry>, Vec<&'static str>)> {
    let mut written = Vec::new();
    let mut shared = Vec::new();
    for (name, bytes) in files(catalog, areas, type_ids) {
        let sha = hex(&Sha256::digest(&bytes));
        if parent.iter().any(|f| f.path == name && f.sha256 == sha) {
            shared.push(name);
            continue;
        }
        let path = dir.join(name);
        crate::durable::write_durably(&path, &bytes)?;
        written.push(FileEntry {
            path: name.to_string(),
            rows: 0,
            bytes: bytes.len() as u64,
            sha256: sha,
            type_id: None,
            first_id: None,
        });
    }
    Ok((written, shared))
}

/// The types of a generation derived from one holding `parent` files: the parent's types,
/// and each touched type `(t, has objects)` added or removed.
pub fn types_after(
    parent: &[FileEntry],
    touched: impl IntoIterator<Item = (u32, bool)>,
) -> Vec<u32> {
    let mut types: std::collections::BTreeSet<u32> =
        parent.iter().filter_map(|f| f.type_id).collect();
    for (t, has_objects) in touched {
        if has_objects {
            types.insert(t);
        } else {
            types.remove(&t);
        }
    }
    types.into_iter().collect()
}
