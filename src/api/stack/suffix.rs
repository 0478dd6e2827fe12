//! Format suffixes of the read API, taken off the path before routing (`.json`, `.xml`,
//! `.geojson`, `.csv`), and
//! the resource path the XML answer's root is named from.

use axum::extract::Request;
use axum::http::HeaderValue;

use super::super::media;
use super::super::route::{self, Api, RequestClass, READ_BASE};

/// Format suffixes of the read API (v2 `retningslinjer.md`): `/vegobjekttyper.json` is
/// `/vegobjekttyper` in JSON, `/vegobjekttyper.xml` in XML (the suffix wins over Accept). Runs
/// before routing; also records the path for the XML root's name when the answer may be XML.
/// The two internal headers are always removed here first, so a client cannot supply them. A
/// JSON request without a suffix costs no copy of the path.
pub fn rewrite_suffix_in_place(req: &mut Request) {
    let class = route::classify(req.uri().path());
    rewrite_suffix(req, &class);
}

/// [`rewrite_suffix_in_place`] of a request of this class (its path as it arrived).
pub(super) fn rewrite_suffix(req: &mut Request, class: &RequestClass) {
    let headers = req.headers_mut();
    headers.remove(media::SUFFIX_FORMAT);
    headers.remove(media::RESOURCE_PATH);
    if class.api != Api::Read {
        return;
    }
    let Some(below) = req.uri().path().get(READ_BASE.len()..) else {
        return;
    };
    let Some(resource) = route::xml_resource(below, class) else {
        return;
    };
    let format = class.suffix.map(route::Suffix::name);
    // The path names the XML root only: a request that cannot be answered in XML skips it.
    let maybe_xml = format == Some("xml")
        || (format.is_none()
            && req
                .headers()
                .get(axum::http::header::ACCEPT)
                .is_some_and(|a| media::mentions_xml(a.as_bytes())));
    if maybe_xml {
        if let Ok(value) = HeaderValue::from_str(resource) {
            req.headers_mut().insert(media::RESOURCE_PATH, value);
        }
    }
    rewrite_format(req, format);
}

/// Strip a format suffix from the URI and note the format for negotiation.
fn rewrite_format(req: &mut Request, format: Option<&'static str>) {
    let Some(f) = format else {
        return;
    };
    req.headers_mut()
        .insert(media::SUFFIX_FORMAT, HeaderValue::from_static(f));
    let path = req.uri().path();
    let stripped = &path[..path.len() - f.len() - 1];
    let rest = req
        .uri()
        .query()
        .map(|q| format!("{stripped}?{q}"))
        .unwrap_or_else(|| stripped.to_string());
    if let Ok(uri) = rest.parse() {
        *req.uri_mut() = uri;
    }
}
