//! The HTML encoding of the OGC API pages: plain pages made from the JSON documents (no
//! scripts, no external resources), every text escaped.

use serde_json::Value;

use super::super::state::AppState;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"no\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}}</style>\
         </head><body><p><a href=\"/ogc?f=html\">vegdb OGC API</a> · \
         <a href=\"/ogc/collections?f=html\">collections</a></p><h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title)
    )
}

fn links(doc: &Value) -> String {
    let mut s = String::from("<ul>");
    for l in doc["links"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "<li><a href=\"{}\">{}</a> ({}, {})</li>",
            esc(&text(&l["href"])),
            esc(&text(&l["title"])),
            esc(&text(&l["rel"])),
            esc(&text(&l["type"]))
        ));
    }
    s.push_str("</ul>");
    s
}

pub fn landing(doc: &Value) -> String {
    let body = format!("<p>{}</p>{}", esc(&text(&doc["description"])), links(doc));
    page(&text(&doc["title"]), &body)
}

pub fn conformance(_s: &AppState, classes: &[&str]) -> String {
    let mut body = String::from("<ul>");
    for c in classes {
        body.push_str(&format!("<li>{}</li>", esc(c)));
    }
    body.push_str("</ul>");
    page("Conformance", &body)
}

pub fn collections(doc: &Value) -> String {
    let mut body = String::from("<table><tr><th>id</th><th>title</th><th>features</th></tr>");
    for c in doc["collections"].as_array().into_iter().flatten() {
        let id = esc(&text(&c["id"]));
        body.push_str(&format!(
            "<tr><td><a href=\"/ogc/collections/{id}?f=html\">{id}</a></td><td>{}</td>\
             <td><a href=\"/ogc/collections/{id}/items?f=html\">items</a></td></tr>",
            esc(&text(&c["title"]))
        ));
    }
    body.push_str("</table>");
    page("Collections", &body)
}

pub fn collection(doc: &Value) -> String {
    let id = esc(&text(&doc["id"]));
    let body = format!(
        "<p>{}</p><p>id <code>{id}</code>; <a href=\"/ogc/collections/{id}/items?f=html\">items</a></p>\
         <p>CRS: {}</p>{}",
        esc(&text(&doc["description"])),
        doc["crs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| esc(&text(c)))
            .collect::<Vec<_>>()
            .join(", "),
        links(doc)
    );
    page(&text(&doc["title"]), &body)
}

fn property_rows(props: &Value) -> String {
    let mut s = String::new();
    for (k, v) in props.as_object().into_iter().flatten() {
        s.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(k),
            esc(&text(v))
        ));
    }
    s
}

pub fn items(
    title: &str,
    id: &str,
    features: &[Value],
    page_links: &[Value],
    matched: u64,
    offset: u64,
) -> String {
    let first = offset + 1;
    let last = offset + features.len() as u64;
    let mut body = format!("<p>{first}–{last} of {matched} features.</p>");
    body.push_str(&links(&serde_json::json!({ "links": page_links })));
    body.push_str("<table><tr><th>id</th><th>geometry</th><th>properties</th></tr>");
    for f in features {
        let fid = esc(&text(&f["id"]));
        body.push_str(&format!(
            "<tr><td><a href=\"/ogc/collections/{}/items/{fid}?f=html\">{fid}</a></td><td>{}</td>\
             <td><table>{}</table></td></tr>",
            esc(id),
            esc(&text(&f["geometry"]["type"])),
            property_rows(&f["properties"])
        ));
    }
    body.push_str("</table>");
    page(title, &body)
}

pub fn item(title: &str, id: &str, feature: &Value) -> String {
    let body = format!(
        "<p>Feature <code>{}</code> of <a href=\"/ogc/collections/{}?f=html\">{}</a></p>\
         <table>{}</table><h2>Geometry</h2><pre>{}</pre>{}",
        esc(&text(&feature["id"])),
        esc(id),
        esc(title),
        property_rows(&feature["properties"]),
        esc(&feature["geometry"].to_string()),
        links(feature)
    );
    page(title, &body)
}
