//! An object list as CSV (`Accept: text/csv` or `/vegobjekter/{type}.csv`): one flat row per
//! object of the page — `id`, `versjon`, `startdato`, `sluttdato` (empty while open), then one
//! column per value property of the type in catalogue order, named by the property type's
//! name, holding what the feature view (`generation::feature`) decodes: an enumerated value's
//! name (its number for numeric enumerations), numbers, text and dates as stored; empty without
//! a value. Sensitive properties are columns only for callers who may see them; geometry
//! properties are not columns. Paged as the JSON list (`antall`, `start`); the next page's
//! address is the `Link` header (`rel="next"`).

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::api::dto::date;
use crate::api::media::Negotiated;
use crate::generation::feature::{FeatureOptions, PropertyValue};
use crate::generation::rows::ObjectRow;
use crate::generation::{Generation, TypeData};

/// The CSV answer of a page: `rows` of `data` (None: the type has no objects).
pub(super) fn answer(
    n: Negotiated,
    g: &Generation,
    type_id: u32,
    data: Option<&TypeData>,
    rows: &[u32],
    sensitive: bool,
    next: Option<String>,
) -> Response {
    let mut columns: Vec<String> = ["id", "versjon", "startdato", "sluttdato"]
        .map(String::from)
        .to_vec();
    if let Some(t) = g.catalog.object_type(type_id) {
        columns.extend(
            t.value_properties()
                .filter(|p| sensitive || p.sensitivity != 1)
                .map(|p| p.name.clone()),
        );
    }
    let opts = FeatureOptions {
        sensitive,
        geometry_only: false,
        ..FeatureOptions::default()
    };
    let mut values = Vec::with_capacity(rows.len());
    if let Some(data) = data {
        for &r in rows {
            let object = ObjectRow::new(&data.table, r as usize);
            let mut m = Map::new();
            m.insert("id".into(), Value::from(object.id()));
            m.insert("versjon".into(), Value::from(object.version()));
            m.insert("startdato".into(), Value::from(date(object.start_date())));
            m.insert(
                "sluttdato".into(),
                object
                    .end_date()
                    .map_or(Value::Null, |d| Value::from(date(d))),
            );
            if let Ok(f) = g.feature(object, &opts) {
                for p in &f.properties {
                    m.insert(p.name.to_string(), cell(&p.value));
                }
            }
            values.push(Value::Object(m));
        }
    }
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut r = crate::api::csv::table(&values, &names).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, n.content_type());
    if let Some(next) =
        next.and_then(|h| HeaderValue::from_str(&format!("<{h}>; rel=\"next\"")).ok())
    {
        r.headers_mut().insert(header::LINK, next);
    }
    r
}

fn cell(v: &PropertyValue<'_>) -> Value {
    match *v {
        PropertyValue::Enum {
            number: Some(n), ..
        } => number(n),
        PropertyValue::Enum { name, .. } => Value::from(name),
        PropertyValue::Integer(i) => Value::from(i),
        PropertyValue::Float(f) => number(f),
        PropertyValue::Text(t) => Value::from(t),
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}
