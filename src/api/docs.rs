//! The served OpenAPI documents, their human docs pages (Swagger UI, vendored under
//! `assets/swagger-ui/` and embedded in the binary: no network needed, no request leaves the
//! server) and the HTML landing page at `/` for browsers.
//!
//! Each API gets `<base>/openapi.json`, `<base>/docs` and `<base>/docs/<asset>`; the page
//! loads its assets and the document by relative URLs, so it works under every write alias.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::state::AppState;

/// Swagger UI 5.35.0 (npm `swagger-ui-dist`, Apache-2.0; see `assets/swagger-ui/SOURCE.md`).
const SWAGGER_JS: &[u8] = include_bytes!("../../assets/swagger-ui/swagger-ui-bundle.js");
const SWAGGER_CSS: &[u8] = include_bytes!("../../assets/swagger-ui/swagger-ui.css");
const SWAGGER_LICENSE: &[u8] = include_bytes!("../../assets/swagger-ui/LICENSE");
/// The changeset XSD of NVDB API SKRIV v2 (`assets/xsd/SOURCE.md`), named by the write document.
const CHANGESET_XSD: &[u8] = include_bytes!("../../assets/xsd/endringssett.xsd");
/// Starts Swagger UI on `openapi.json` beside the page (relative: works under every base).
const INIT_JS: &str = r##"window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("openapi.json", window.location.href).href,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    displayOperationId: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    tryItOutEnabled: false
  });
});
"##;

/// The pages the landing page links to: (path, title, what it is). Other parts of vegdb add
/// their pages here (e.g. a map at `/kart`, OGC API Features at `/ogc`).
pub const LANDING_LINKS: &[(&str, &str, &str)] = &[
    (
        "/nvdb/api/v2/docs",
        "NVDB API LES v2",
        "Read interface: road objects, road network, positions, catalogue, areas",
    ),
    (
        "/nvdb/apiskriv/rest/v2/docs",
        "NVDB API SKRIV v2",
        "Write interface: changesets, binaries, converters (needs a token)",
    ),
    (
        "/ogc",
        "OGC API Features",
        "The road network and every object type as feature collections (QGIS, GDAL's OAPIF)",
    ),
    (
        "/tiles",
        "Vector tiles",
        "Mapbox Vector Tiles of the network and each object type, with TileJSON",
    ),
    (
        "/kart",
        "Map",
        "The road network and one object type on a map",
    ),
    (
        "/nvdb/api/v2/openapi.json",
        "Read OpenAPI document",
        "For client generators (openapi-python-client, openapi-generator, …)",
    ),
    (
        "/nvdb/apiskriv/rest/v2/openapi.json",
        "Write OpenAPI document",
        "For client generators",
    ),
];

/// `<base>/openapi.json`, `<base>/docs` and its assets, serving `document`.
pub fn routes(base: &str, document: String) -> Router<AppState> {
    let document = Bytes::from(document);
    Router::new()
        .route(
            &format!("{base}/openapi.json"),
            get(move || {
                let body = document.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/json;charset=UTF-8")],
                        body,
                    )
                }
            }),
        )
        .route(&format!("{base}/docs"), get(page))
        .route(&format!("{base}/docs/{{asset}}"), get(asset))
}

fn html(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html;charset=UTF-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    html(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>vegdb API documentation</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
"#
        .to_string(),
    )
}

async fn asset(Path(name): Path<String>) -> Response {
    let (body, content_type): (&'static [u8], &'static str) = match name.as_str() {
        "swagger-ui-bundle.js" => (SWAGGER_JS, "text/javascript;charset=UTF-8"),
        "swagger-ui.css" => (SWAGGER_CSS, "text/css;charset=UTF-8"),
        "init.js" => (INIT_JS.as_bytes(), "text/javascript;charset=UTF-8"),
        "LICENSE" => (SWAGGER_LICENSE, "text/plain;charset=UTF-8"),
        "endringssett.xsd" => (CHANGESET_XSD, "application/xml;charset=UTF-8"),
        _ => return super::error::ApiError::not_found("Ressursen finnes ikke").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        body,
    )
        .into_response()
}

/// A browser: its Accept names `text/html` (a plain client sends none or `*/*`).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/html"))
}

/// `GET /`: OpenAM's login when the request carries `X-OpenAM-Username` (as
/// `apiforbindelse.py` sends it, unchanged), the landing page for a browser, else 404 as before.
pub async fn root(state: State<AppState>, headers: HeaderMap) -> Response {
    if !headers.contains_key("x-openam-username") && wants_html(&headers) {
        return landing();
    }
    super::write::login::root(state, headers).await
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn landing() -> Response {
    let items: String = LANDING_LINKS
        .iter()
        .map(|(href, title, what)| {
            format!(
                "<li><a href=\"{}\">{}</a> — {}</li>\n",
                escape(href),
                escape(title),
                escape(what)
            )
        })
        .collect();
    let mut r = html(format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>vegdb</title>
<style>body{{font-family:sans-serif;max-width:48em;margin:2em auto;line-height:1.5}}</style></head>
<body>
<h1>vegdb</h1>
<p>NVDB API v2 (read and write) served by vegdb {}.</p>
<ul>
{items}</ul>
</body>
</html>
"#,
        env!("CARGO_PKG_VERSION")
    ));
    *r.status_mut() = StatusCode::OK;
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn browsers_are_told_apart_by_accept() {
        let mut h = HeaderMap::new();
        assert!(!wants_html(&h));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(!wants_html(&h));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/html,application/xhtml+xml,*/*;q=0.8"),
        );
        assert!(wants_html(&h));
    }
}
