//! CSV (RFC 4180) of a table answer: the statistics tables and object lists, when asked for
//! with `Accept: text/csv` or the `.csv` suffix (`media::negotiate_csv`).
//!
//! A table is the JSON answer's rows (a JSON array of objects) flattened: one line per row, a
//! column per member, nested objects' members as `outer.inner` columns (an enumerated value
//! `{"enum_id": 2726, "verdi": 50}` under `egenskap_2021` gives `egenskap_2021.enum_id` and
//! `egenskap_2021.verdi`). The header is the union of the members in first-seen order, so
//! rows that lack a member leave its cell empty. Cells: text as is, numbers as JSON writes
//! them (a point for decimals), `true`/`false`, null empty, arrays as their JSON text. Fields
//! with a comma, quote or line break are quoted, quotes doubled; lines end in CRLF. UTF-8
//! without a byte order mark.

use serde_json::{Map, Value};

/// The media type of the answers.
pub const TEXT_CSV: &str = "text/csv;charset=utf-8";

/// The rows flattened into `(column, cell)` pairs in member order.
fn flatten(prefix: &str, object: &Map<String, Value>, out: &mut Vec<(String, String)>) {
    for (name, value) in object {
        let column = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            Value::Object(inner) => flatten(&column, inner, out),
            Value::Null => out.push((column, String::new())),
            Value::String(s) => out.push((column, s.clone())),
            Value::Bool(b) => out.push((column, b.to_string())),
            Value::Number(n) => out.push((column, n.to_string())),
            Value::Array(_) => out.push((column, value.to_string())),
        }
    }
}

/// One field, quoted when it must be.
fn push_field(out: &mut String, field: &str) {
    if field.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

fn push_line<'a>(out: &mut String, fields: impl Iterator<Item = &'a str>) {
    for (i, f) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_field(out, f);
    }
    out.push_str("\r\n");
}

/// The CSV text of `rows` (each a JSON object; anything else is one `value` column), with
/// `columns` first in the header even when no row has them (so an empty table still names its
/// columns).
pub fn table(rows: &[Value], columns: &[&str]) -> String {
    let mut header: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let mut index: std::collections::HashMap<String, usize> = header
        .iter()
        .enumerate()
        .map(|(i, c)| (c.clone(), i))
        .collect();
    let mut flat: Vec<Vec<(usize, String)>> = Vec::with_capacity(rows.len());
    let mut cells = Vec::new();
    for row in rows {
        cells.clear();
        match row {
            Value::Object(o) => flatten("", o, &mut cells),
            other => flatten(
                "",
                &Map::from_iter([("value".to_string(), other.clone())]),
                &mut cells,
            ),
        }
        let line = cells
            .drain(..)
            .map(|(column, cell)| {
                let i = *index.entry(column.clone()).or_insert_with(|| {
                    header.push(column);
                    header.len() - 1
                });
                (i, cell)
            })
            .collect();
        flat.push(line);
    }
    let mut out = String::new();
    push_line(&mut out, header.iter().map(String::as_str));
    let mut line: Vec<&str> = Vec::with_capacity(header.len());
    for row in &flat {
        line.clear();
        line.resize(header.len(), "");
        for (i, cell) in row {
            line[*i] = cell;
        }
        push_line(&mut out, line.iter().copied());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_flatten_into_quoted_fields() {
        let rows = vec![
            json!({"kommune": 5001, "egenskap_2021": {"enum_id": 2726, "verdi": 50}, "antall": 3}),
            json!({"kommune": 5025, "egenskap_2021": null, "navn": "Røros, \"by\"", "antall": 1}),
        ];
        let text = table(&rows, &["kommune"]);
        assert_eq!(
            text,
            "kommune,egenskap_2021.enum_id,egenskap_2021.verdi,antall,egenskap_2021,navn\r\n\
             5001,2726,50,3,,\r\n\
             5025,,,1,,\"Røros, \"\"by\"\"\"\r\n"
        );
        assert_eq!(table(&[], &["a", "b"]), "a,b\r\n");
    }
}
