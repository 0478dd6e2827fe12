//! `/ogc/collections/{id}/queryables` (OGC API Features Part 3): what `filter` can name on a
//! collection, as a JSON Schema: the type's property types (non-geometry, not sensitive) by
//! name with their type and, for enumerations, the values the features show (`enum`), and
//! `geometry`, `nvdbId`, `versjon`, `startdato`, `sluttdato` (`cql2`). `vegnett` has none.
//! Beside the schema, the draft's `queryables` list of `{id, type}` (read by GDAL before 3.7).
//! Served as `application/schema+json`, or as `application/json` to a client whose `Accept`
//! names JSON but not JSON Schema.

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use serde_json::{json, Map, Value};

use super::collections::find_collection;
use super::cql2::GEOMETRY;
use super::error::OgcError;
use super::{json_response, ogc_url, respond, Query, NETWORK};
use crate::api::state::AppState;
use crate::catalog::{datatype, ObjectType, PropertyType, ValueKind};

const SCHEMA_TYPE: &str = "application/schema+json";

pub(super) async fn queryables(
    State(s): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    respond((|| {
        let q = Query::parse(q.as_deref());
        q.only(&["f"])?;
        if let Some(f) = q.get("f").filter(|f| *f != "json") {
            return Err(OgcError::bad(format!(
                "queryables are served as JSON (f=json), not '{}'",
                crate::api::error::echoed(f)
            )));
        }
        let g = s.store.current();
        let (id, title, _) = find_collection(&g, &cid)?;
        let properties = match g.catalog.object_type(id.parse().unwrap_or(0)) {
            Some(t) if id != NETWORK => of_type(t),
            _ => Map::new(),
        };
        // the draft's list (`queryables`: [{id, type}]), which GDAL before 3.7 reads
        let draft: Vec<Value> = properties
            .iter()
            .map(|(k, v)| json!({"id": k, "type": v.get("type").cloned().unwrap_or("geometry".into())}))
            .collect();
        let doc = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": ogc_url(&s, &format!("/collections/{id}/queryables")),
            "type": "object",
            "title": title,
            "properties": properties,
            "additionalProperties": false,
            "queryables": draft,
        });
        // a client that accepts JSON but not JSON Schema (GDAL before 3.7) gets it as JSON
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let plain = accept.contains("application/json") && !accept.contains(SCHEMA_TYPE);
        Ok(json_response(
            &doc,
            if plain {
                "application/json"
            } else {
                SCHEMA_TYPE
            },
        ))
    })())
}

/// The queryables of type `t`, in catalogue order after the common ones.
pub(super) fn of_type(t: &ObjectType) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        GEOMETRY.into(),
        json!({"title": "Geometri", "description": "The feature's geometry: its own, else the road network under its placements.", "format": "geometry-any", "x-ogc-role": "primary-geometry"}),
    );
    m.insert(
        "nvdbId".into(),
        json!({"title": "nvdbId", "type": "integer", "x-ogc-role": "id"}),
    );
    m.insert(
        "versjon".into(),
        json!({"title": "versjon", "type": "integer"}),
    );
    m.insert(
        "startdato".into(),
        json!({"title": "startdato", "description": "First day of the version's validity.", "type": "string", "format": "date"}),
    );
    m.insert(
        "sluttdato".into(),
        json!({"title": "sluttdato", "description": "Day the version stopped being valid (null while valid).", "type": "string", "format": "date"}),
    );
    for p in &t.property_types {
        if p.is_geometry() || p.sensitivity > 0 {
            continue;
        }
        m.insert(p.name.clone(), property(p));
    }
    m
}

fn property(p: &PropertyType) -> Value {
    let mut v = json!({"title": p.name, "description": p.description, "x-nvdb-id": p.id});
    let numeric_enum = p.datatype == datatype::ENUM_NUMBER;
    let (kind, format) = match p.storage() {
        ValueKind::Integer => ("integer", None),
        ValueKind::Float => ("number", None),
        ValueKind::Enum if numeric_enum => ("number", None),
        _ if matches!(p.datatype, datatype::DATE | datatype::SHORT_DATE) => {
            ("string", Some("date"))
        }
        _ => ("string", None),
    };
    v["type"] = kind.into();
    if let Some(f) = format {
        v["format"] = f.into();
    }
    if p.storage() == ValueKind::Enum {
        let values: Vec<Value> = p
            .allowed_values
            .iter()
            .flatten()
            .map(|a| match a.number.filter(|_| numeric_enum) {
                Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => json!(n as i64),
                Some(n) => json!(n),
                None => json!(a.name),
            })
            .collect();
        v["enum"] = values.into();
    }
    if let Some(u) = &p.unit {
        v["unit"] = u.short_name.clone().into();
    }
    v
}
