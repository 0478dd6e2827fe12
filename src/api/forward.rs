//! Write requests on a server without a writer of its own (a read replica): forwarded to the
//! writer, redirected to it, or refused in the write API's fault shape.
//!
//! Which requests: everything under the write API's bases (`/nvdb/apiskriv/rest/v2`, its
//! aliases), the OpenAM login and logout (`/openam/…`: sessions live in the writer's memory,
//! so the writer must issue and end them) and `GET /` with `X-OpenAM-Username` (the
//! nvdbapi-V2 login). Read requests never pass here.
//!
//! - `forward` (default with `--writer-url`): the request goes to the same path and query on
//!   the writer with every end-to-end header (`X-Client`, `Authorization`, `Cookie`,
//!   `Accept`, `Content-Type`, `X-Request-Id`, …; hop-by-hop headers dropped), the body
//!   streamed as it arrives, and the answer streamed back with its status and headers. The
//!   writer sees the `Host` of this server's public URL (`--public-url`, else the client's
//!   `Host`), so the `href`s and `Location`s it builds point at the address the client used
//!   (a load balancer); a `Location` that names the writer's own URL is rewritten to it as
//!   well. Clients need no change: to them it is one service.
//! - `redirect`: `307 Temporary Redirect` to the same path and query on the writer (the
//!   method and body are kept by clients that follow 307, but many clients, Python `requests`
//!   among them, drop `Authorization` when a redirect changes host: use it only where clients
//!   are known to resend their credentials).
//! - no `--writer-url`: `503` with a fault naming the store the replica follows.
//!
//! A writer that cannot be reached is `502` with a fault naming it.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::route::{self, Api};
use super::state::AppState;
use super::write::{response_format, Fault};

pub use super::state::{Forwarding, WriteRoute, WriterUrlError};

/// Whether a request belongs to the writer (see the module documentation); logins only when
/// `logins`.
pub fn is_write_request(path: &str, headers: &HeaderMap, logins: bool) -> bool {
    match route::classify(path).api {
        Api::Write => true,
        Api::Login => logins,
        Api::Landing => logins && headers.contains_key("x-openam-username"),
        _ => false,
    }
}

/// Headers that belong to one connection, not to the request or answer (RFC 9110 7.6.1).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn end_to_end(headers: &HeaderMap) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
    headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
}

fn fault(headers: &HeaderMap, status: StatusCode, message: String) -> Response {
    Fault {
        status,
        message,
        format: Some(response_format(headers)),
    }
    .into_response()
}

/// The layer over all routes of a server with a `WriteRoute` (`api::routes`).
pub async fn route_writes(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(route) = state.config.write_route.as_ref() else {
        return next.run(request).await;
    };
    if !is_write_request(
        request.uri().path(),
        request.headers(),
        route.forwards_logins(),
    ) {
        return next.run(request).await;
    }
    let pq = request
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let target = |writer: &str| format!("{writer}{pq}");
    match route {
        WriteRoute::Refuse { message } => fault(
            request.headers(),
            StatusCode::SERVICE_UNAVAILABLE,
            message.clone(),
        ),
        WriteRoute::Redirect { writer } => {
            let location = target(writer);
            match HeaderValue::from_str(&location) {
                Ok(v) => (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, v)]).into_response(),
                Err(_) => fault(
                    request.headers(),
                    StatusCode::BAD_REQUEST,
                    "Ugyldig adresse".into(),
                ),
            }
        }
        WriteRoute::Forward { writer, client } => {
            let url = target(writer);
            let public = state.public_url().to_string();
            forward(client, writer, &url, &public, request).await
        }
    }
}

async fn forward(
    client: &reqwest::Client,
    writer: &str,
    url: &str,
    public: &str,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let mut out = client.request(parts.method.clone(), url);
    for (name, value) in end_to_end(&parts.headers) {
        if name != header::HOST {
            out = out.header(name, value);
        }
    }
    // the writer builds hrefs from the Host it sees: the public address of this service
    let public_host = reqwest::Url::parse(public).ok().and_then(|u| {
        let host = u.host_str()?.to_string();
        Some(match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host,
        })
    });
    if let Some(host) = public_host {
        out = out.header(header::HOST, host);
    }
    out = out.header(header::VIA, "1.1 vegdb-replica");
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    let answer = match out.body(body).send().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(writer, error = %e, "forwarding a write request failed");
            return fault(
                &parts.headers,
                StatusCode::BAD_GATEWAY,
                format!("Skrivetjenesten {writer} svarte ikke: {e}"),
            );
        }
    };
    let mut response = Response::builder().status(answer.status());
    if let Some(headers) = response.headers_mut() {
        for (name, value) in end_to_end(answer.headers()) {
            let value = match (name == header::LOCATION, value.to_str()) {
                (true, Ok(text)) if text.starts_with(writer) => {
                    HeaderValue::from_str(&format!("{public}{}", &text[writer.len()..]))
                        .unwrap_or_else(|_| value.clone())
                }
                _ => value.clone(),
            };
            headers.append(name.clone(), value);
        }
    }
    response
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap_or_else(|e| {
            fault(
                &parts.headers,
                StatusCode::BAD_GATEWAY,
                format!("Svaret fra skrivetjenesten {writer} kunne ikke videresendes: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_requests_are_told_apart_from_reads() {
        let none = HeaderMap::new();
        let mut login = HeaderMap::new();
        login.insert("x-openam-username", HeaderValue::from_static("kari"));
        for p in [
            "/nvdb/apiskriv/rest/v2",
            "/nvdb/apiskriv/rest/v2/endringssett",
            "/nvdb/apiskriv/v2/binaer/abc",
            "/registry/apiskriv/rest/v2/endringssett/1/status",
            "/openam/json/authenticate",
            "/openam/UI/Logout",
        ] {
            assert!(is_write_request(p, &none, true), "{p}");
        }
        assert!(is_write_request("/", &login, true));
        for p in [
            "/",
            "/nvdb/api/v2/status",
            "/nvdb/apiskriv/rest/v2x",
            "/openamx",
            "/nvdb/api/v2/vegobjekter/95",
        ] {
            assert!(!is_write_request(p, &none, true), "{p}");
        }
        // without a writer, logins stay local; writes do not
        assert!(!is_write_request("/openam/json/authenticate", &none, false));
        assert!(!is_write_request("/", &login, false));
        assert!(is_write_request(
            "/nvdb/apiskriv/rest/v2/endringssett",
            &none,
            false
        ));
    }

    #[test]
    fn only_plain_http_writers() {
        assert!(WriteRoute::to_writer("https://w.example", Forwarding::Forward).is_err());
        assert!(WriteRoute::to_writer("nonsense", Forwarding::Forward).is_err());
        match WriteRoute::to_writer("http://127.0.0.1:9/", Forwarding::Redirect).unwrap() {
            WriteRoute::Redirect { writer } => assert_eq!(writer, "http://127.0.0.1:9"),
            other => panic!("{other:?}"),
        }
    }
}
