//! The map page at `/kart` (`assets/kart/`: HTML, script, style) with MapLibre GL JS 6.17.0
//! vendored from npm (`assets/vendor/maplibre-gl-6.17.0/`, BSD-3-Clause, see its VENDORED.md),
//! all embedded in the binary; nothing is fetched from elsewhere and there is no external base
//! map (the municipality polygons of type 946 are the background).

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::api::state::AppState;

const VENDOR: &str = "maplibre-gl-6.17.0";

/// (path, content type, bytes)
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/kart",
        "text/html; charset=utf-8",
        include_bytes!("../../../assets/kart/index.html"),
    ),
    (
        "/kart/kart.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../assets/kart/kart.js"),
    ),
    (
        "/kart/kart.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../assets/kart/kart.css"),
    ),
    (
        "/kart/maplibre-gl.mjs",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../assets/vendor/maplibre-gl-6.17.0/maplibre-gl.mjs"),
    ),
    (
        "/kart/maplibre-gl-worker.mjs",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../assets/vendor/maplibre-gl-6.17.0/maplibre-gl-worker.mjs"),
    ),
    (
        "/kart/maplibre-gl.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../assets/vendor/maplibre-gl-6.17.0/maplibre-gl.css"),
    ),
    (
        "/kart/LICENSE-maplibre.txt",
        "text/plain; charset=utf-8",
        include_bytes!("../../../assets/vendor/maplibre-gl-6.17.0/LICENSE.txt"),
    ),
];

fn asset(content_type: &'static str, bytes: &'static [u8], vendored: bool) -> Response {
    let mut r = bytes.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // the vendored library changes only with its version (in the path of its directory)
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if vendored {
            "public, max-age=86400"
        } else {
            "no-cache"
        }),
    );
    r
}

pub fn routes() -> Router<AppState> {
    let mut router = Router::new();
    for &(path, content_type, bytes) in ASSETS {
        let vendored = path.contains("maplibre");
        router = router.route(
            path,
            get(move || async move { asset(content_type, bytes, vendored) }),
        );
    }
    router.route(
        "/kart/",
        get(|| async { axum::response::Redirect::permanent("/kart") }),
    )
}

/// The version of the vendored library (for the README and tests).
pub fn vendored_version() -> &'static str {
    VENDOR
}
