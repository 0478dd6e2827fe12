//! The API's checks around every request (run by `api::stack`): limits on the request head that the API itself enforces (so
//! they answer in the API's error shape rather than hyper's empty 414/431), and the reshaping
//! of error responses made below the handlers — axum rejections (405, invalid UTF-8 in the path,
//! body-limit 413) and the request timeout's 503 — into the read API's error array or the write
//! API's fault entity. Responses that already carry a JSON or XML body pass untouched; the cost
//! on the hot path is one length check of the URI and the headers and one status check.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::route::{self, RequestClass};
use super::write::{response_format, Fault, Format};

/// Longest request target (path + query) in bytes; longer is 414. Just below hyper's own bound
/// (65,534), so long filters reach the filter limits, which say more; a longer target, or a head
/// hyper cannot parse, is answered in the API's shape before hyper sees it (`server::head`).
pub const MAX_URI_BYTES: usize = 64_000;
/// Largest request head (header names + values) in bytes; larger is 431.
pub const MAX_HEADER_BYTES: usize = 32 << 10;
/// Most request headers; more is 431.
pub const MAX_HEADERS: usize = 90;
/// The HTTP server's own bound on the number of headers (beyond it hyper answers 431 without a
/// body): hyper's default, its inline header storage (`server::serve_on` leaves it unset: a
/// larger bound makes hyper allocate two header arrays of that many entries for every request,
/// ≈ 25 KB per request at 400, the earlier setting).
pub const HYPER_MAX_HEADERS: usize = 100;
// Room for a request a little over the API's limit to reach the API (and get its shape).
const _: () = assert!(MAX_HEADERS + 10 <= HYPER_MAX_HEADERS);
/// How much of a plain-text error body is kept as the message.
const MAX_MESSAGE_BYTES: usize = 1024;

/// Status and message in the shape of the API the path belongs to (`write`: the fault format).
pub fn shaped(write: Option<Format>, status: StatusCode, message: String) -> Response {
    if let Some(format) = write {
        Fault::new(status, message, format).into_response()
    } else {
        // 4000: bad input (the v2 code table); 5000: unexpected / unavailable.
        let code = if status.is_server_error() { 5000 } else { 4000 };
        ApiError::new(status, code, message).into_response()
    }
}

fn default_message(status: StatusCode) -> String {
    match status {
        StatusCode::METHOD_NOT_ALLOWED => "Metoden er ikke tillatt for denne ressursen".into(),
        StatusCode::PAYLOAD_TOO_LARGE => "Forespørselen er for stor".into(),
        StatusCode::SERVICE_UNAVAILABLE => {
            "Tjenesten rakk ikke å svare innen tidsgrensen; prøv igjen".into()
        }
        StatusCode::REQUEST_TIMEOUT => "Forespørselen kom ikke fram i tide".into(),
        s => s
            .canonical_reason()
            .unwrap_or("Ugyldig forespørsel")
            .to_string(),
    }
}

/// Whether a response is already in an API shape (our errors always name JSON or XML).
fn has_api_body(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("json") || ct.contains("xml"))
}

/// The API a request head belongs to, for its error's shape: `Some(format)` for the write API
/// (the fault in the format `headers` ask for), `None` for the read API and everything else.
pub fn api_of(path: &str, headers: &axum::http::HeaderMap) -> Option<Format> {
    format_of(&route::classify(path), headers)
}

/// [`api_of`] a request of this class.
fn format_of(class: &RequestClass, headers: &axum::http::HeaderMap) -> Option<Format> {
    class.is_write().then(|| response_format(headers))
}

/// The 414 message for a request target of `target` bytes (`at_least`: it was not read to its
/// end).
pub fn uri_too_long_message(target: usize, at_least: bool) -> String {
    let at_least = if at_least { "minst " } else { "" };
    format!("Forespørselens adresse er for lang: {at_least}{target} byte (høyst {MAX_URI_BYTES})")
}

/// The checks made before a request (of this class) goes on: its URI and head within the
/// limits. `Ok` carries the write-API format when the path belongs to the write API (for
/// [`reshape`]).
pub fn precheck<B>(
    req: &Request<B>,
    class: &RequestClass,
) -> Result<Option<Format>, Box<Response>> {
    let write = format_of(class, req.headers());
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URI_BYTES {
        return Err(Box::new(shaped(
            write,
            StatusCode::URI_TOO_LONG,
            uri_too_long_message(target, false),
        )));
    }
    let head: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if head > MAX_HEADER_BYTES || req.headers().len() > MAX_HEADERS {
        return Err(Box::new(shaped(
            write,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "For store eller for mange hoder: {head} byte i {} hoder (høyst {MAX_HEADER_BYTES} byte, {MAX_HEADERS} hoder)",
                req.headers().len()
            ),
        )));
    }
    Ok(write)
}

/// Whether a response from below the handlers needs [`reshape`]: an error status without an
/// API body. (Such responses are also kept uncompressed, so their text can be read.)
pub fn needs_reshape(status: StatusCode, headers: &axum::http::HeaderMap) -> bool {
    (status.is_client_error() || status.is_server_error()) && !has_api_body(headers)
}

/// The request timeout's answer, in the API's shape.
pub fn timed_out(write: Option<Format>) -> Response {
    let status = StatusCode::SERVICE_UNAVAILABLE;
    shaped(write, status, default_message(status))
}

/// An error from below the handlers: keep its status and its text, in the API's shape.
pub async fn reshape(write: Option<Format>, response: Response) -> Response {
    let status = response.status();
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_MESSAGE_BYTES)
        .await
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| default_message(status));
    let mut shaped = shaped(write, status, text);
    // Keep what the lower layer said about the response (Allow, Retry-After, request id …).
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            shaped.headers_mut().insert(name.clone(), value.clone());
        }
    }
    shaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_paths_are_recognised_under_every_prefix() {
        let is_write_path = |p: &str| api_of(p, &axum::http::HeaderMap::new()).is_some();
        assert!(is_write_path("/nvdb/apiskriv/rest/v2/endringssett"));
        assert!(is_write_path("/nvdb/apiskriv/v2/endringssett"));
        assert!(is_write_path("/registry/apiskriv/rest/v2/binaer"));
        assert!(!is_write_path("/nvdb/api/v2/status"));
    }
}
