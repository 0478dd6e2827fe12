//! The write interface (NVDB API SKRIV v2) under `/nvdb/apiskriv/rest/v2`, also answering on
//! `/nvdb/apiskriv/v2` (older clients) and `/registry/apiskriv/rest/v2` (the path in the
//! service description). JSON and XML in and out; errors are fault entities (`{"message": ...}`
//! or `<fault xmlns=".../fault/v1"><message>..</message></fault>`) with the HTTP status.
//!
//! Every request must carry `X-Client` (400 without) and credentials: `Authorization: Bearer
//! <token>` or the `iPlanetDirectoryProOAM` cookie real v2 clients send (401 without, 403 for a
//! user without the right).

pub mod binaer;
pub mod documents;
pub mod endringssett;
pub mod konverter;
pub mod login;
pub mod xml;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::state::AppState;
use crate::auth::users::User;
use crate::changeset::writer::{StateError, Writer};
use xml::FAULT_NS;

/// The canonical write base and its aliases.
pub use super::route::{WRITE_ALIASES, WRITE_BASE};

pub use crate::auth::token::{presented_token, SSO_COOKIES};

/// The write routes (relative to each write base), registered through utoipa-axum with the
/// handlers' `#[utoipa::path]`. `documentation` gets the document of exactly these routes and
/// returns the routes that serve it (`/openapi.json`, `/docs`, assembled by `api::docs` above
/// this module); they are merged in so they share the write API's 405 fault.
pub fn routes(
    documentation: impl FnOnce(utoipa::openapi::OpenApi) -> Router<AppState>,
) -> Router<AppState> {
    let (router, doc) = utoipa_axum::router::OpenApiRouter::new()
        .merge(endringssett::routes())
        .merge(binaer::routes())
        .merge(konverter::routes())
        .split_for_parts();
    router
        .merge(documentation(doc))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(negotiate_faults))
}

async fn method_not_allowed(method: axum::http::Method) -> Fault {
    Fault::status(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("Metoden {method} støttes ikke for denne ressursen"),
    )
}

/// Response format of the write API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Xml,
}

/// Format of the request body from Content-Type (None = neither JSON nor XML).
pub fn body_format(headers: &HeaderMap) -> Option<Format> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_ascii_lowercase();
    if ct.contains("json") {
        Some(Format::Json)
    } else if ct.contains("xml") {
        Some(Format::Xml)
    } else {
        None
    }
}

/// Response format: what Accept asks for; without a preference, the request body's format.
pub fn response_format(headers: &HeaderMap) -> Format {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let xml = accept.contains("xml");
    let json = accept.contains("json");
    match (json, xml) {
        (true, false) => Format::Json,
        (false, true) => Format::Xml,
        (true, true) => {
            if accept.find("xml") < accept.find("json") {
                Format::Xml
            } else {
                Format::Json
            }
        }
        (false, false) => body_format(headers).unwrap_or(Format::Json),
    }
}

/// A write-API error: status + fault entity. Handlers build it without a format: the
/// `negotiate_faults` layer on every write route renders it in the format the request
/// negotiated (`response_format`), decided once per request. `Fault::new` with an explicit
/// format is for answers outside those routes (the request guard).
#[derive(Debug)]
pub struct Fault {
    pub status: StatusCode,
    pub message: String,
    /// None: the negotiated format (JSON where no layer decides it).
    pub format: Option<Format>,
}

impl Fault {
    /// A fault with status and message; the layer chooses the format.
    pub fn status(status: StatusCode, message: impl Into<String>) -> Fault {
        Fault {
            status,
            message: message.into(),
            format: None,
        }
    }
    /// A fault in a given format (answers outside the write routes).
    pub fn new(status: StatusCode, message: impl Into<String>, format: Format) -> Fault {
        Fault {
            format: Some(format),
            ..Fault::status(status, message)
        }
    }
    /// 400 with the problem's text (a message, or a typed error of the request's content).
    pub fn bad(problem: impl std::fmt::Display) -> Fault {
        Fault::status(StatusCode::BAD_REQUEST, problem.to_string())
    }
    pub fn internal(e: impl std::fmt::Display) -> Fault {
        tracing::error!(error = %e, "internal error in the write API");
        Fault::status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Uventet feil på tjenesten",
        )
    }
    /// An engine error on the write path: 507 Insufficient Storage when the disk is full or a
    /// quota is reached (nothing was stored; the client may retry), else 500.
    pub fn engine(e: crate::error::EngineError) -> Fault {
        if crate::durable::is_storage_full(&e) {
            tracing::warn!(error = %e, "write refused: no space left");
            Fault::status(StatusCode::INSUFFICIENT_STORAGE, STORAGE_FULL_MESSAGE)
        } else {
            Fault::internal(e)
        }
    }
    /// A changeset state change the writer refused.
    pub fn state(e: StateError, id: &str, action: &str) -> Fault {
        match e {
            StateError::NotFound => Fault::status(
                StatusCode::NOT_FOUND,
                format!("Endringssett {id} finnes ikke"),
            ),
            StateError::Conflict(p) => Fault::status(
                StatusCode::CONFLICT,
                format!(
                    "Endringssett {id} kan ikke {action}: fremdrift er {}",
                    p.api_name()
                ),
            ),
            StateError::Engine(e) => Fault::engine(e),
        }
    }

    /// The response in format `f`.
    fn render(&self, f: Format) -> Response {
        let doc = FaultDoc {
            message: &self.message,
        };
        let body = match f {
            Format::Json => serde_json::to_vec(&doc).map_err(|e| e.to_string()),
            Format::Xml => xml::document("fault", FAULT_NS, &doc).map_err(|e| e.to_string()),
        };
        let mut r = (self.status, body.expect("a text message always serializes")).into_response();
        set_content_type(&mut r, f);
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"vegdb\""),
            );
        }
        r
    }
}

/// 507 message when a registration or state change cannot be stored for lack of space.
pub const STORAGE_FULL_MESSAGE: &str = "Lagringsplassen til tjenesten er full, så forespørselen ble ikke lagret. Prøv igjen senere; endringssett som allerede behandles, fortsetter av seg selv når det er plass igjen";

/// A fault waiting for the negotiated format (response extension).
#[derive(Clone)]
struct PendingFault(std::sync::Arc<Fault>);

impl IntoResponse for Fault {
    fn into_response(self) -> Response {
        match self.format {
            Some(f) => self.render(f),
            None => {
                let mut r = self.render(Format::Json);
                r.extensions_mut()
                    .insert(PendingFault(std::sync::Arc::new(self)));
                r
            }
        }
    }
}

/// The write routes' layer: a fault without a format is rendered in the format the request
/// negotiated (Accept, else the body's Content-Type).
async fn negotiate_faults(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let format = response_format(request.headers());
    let response = next.run(request).await;
    match response.extensions().get::<PendingFault>() {
        Some(PendingFault(fault)) if format != Format::Json => fault.render(format),
        _ => response,
    }
}

pub fn set_content_type(r: &mut Response, f: Format) {
    let ct = match f {
        Format::Json => "application/json;charset=utf-8",
        Format::Xml => "application/xml;charset=utf-8",
    };
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
}

pub fn json_response<T: serde::Serialize + ?Sized>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            let mut r = (status, bytes).into_response();
            set_content_type(&mut r, Format::Json);
            r
        }
        Err(e) => Fault::internal(e).into_response(),
    }
}

/// A typed response document in the caller's format (XML: root `root` in namespace `ns`).
pub fn document_response<T: serde::Serialize + ?Sized>(
    status: StatusCode,
    f: Format,
    root: &str,
    ns: &str,
    value: &T,
) -> Response {
    let body = match f {
        Format::Json => serde_json::to_vec(value).map_err(|e| e.to_string()),
        Format::Xml => xml::document(root, ns, value).map_err(|e| e.to_string()),
    };
    match body {
        Ok(bytes) => {
            let mut r = (status, bytes).into_response();
            set_content_type(&mut r, f);
            r
        }
        Err(e) => Fault::internal(e).into_response(),
    }
}

/// The fault entity `{"message"}` / `<fault xmlns=".../fault/v1"><message>`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct FaultDoc<'a> {
    message: &'a str,
}

/// The authenticated caller of a write request.
pub struct Caller {
    pub user: User,
    pub client: String,
    pub format: Format,
}

/// Check `X-Client` and credentials.
pub fn caller(state: &AppState, headers: &HeaderMap) -> Result<Caller, Fault> {
    let format = response_format(headers);
    let client = headers
        .get("x-client")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            Fault::bad("Mangler header X-Client: oppgi navnet på klienten som sender forespørselen")
        })?;
    let token = presented_token(headers).ok_or_else(|| {
        Fault::status(
            StatusCode::UNAUTHORIZED,
            "Mangler innlogging: send Authorization: Bearer <token> eller informasjonskapselen iPlanetDirectoryProOAM")
    })?;
    let user = state
        .users
        .authenticate(&token)
        .ok_or_else(|| Fault::status(StatusCode::UNAUTHORIZED, "Ugyldig eller utløpt token"))?;
    Ok(Caller {
        user,
        client: client.to_string(),
        format,
    })
}

pub fn writer(state: &AppState) -> Result<&std::sync::Arc<Writer>, Fault> {
    state.writer.as_ref().ok_or_else(|| {
        Fault::status(
            StatusCode::SERVICE_UNAVAILABLE,
            "Skrivegrensesnittet er ikke aktivert på denne tjenesten",
        )
    })
}

/// The writer, when it takes changesets now: 503 while it does not hold the writer lease of the
/// store it publishes to (another writer took it over, or the store cannot be reached).
pub fn accepting_writer(state: &AppState) -> Result<&std::sync::Arc<Writer>, Fault> {
    let w = writer(state)?;
    if let Some(why) = w.store_problem() {
        return Err(Fault::status(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Skrivetjenesten tar ikke imot endringssett nå: den har ikke skrivelåsen på \
                 lageret den publiserer til ({why})"
            ),
        ));
    }
    Ok(w)
}

/// Run blocking engine work (disk, fsync) off the async workers; its errors are ours (500, or
/// 507 when the disk is full).
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> crate::error::Result<T> + Send + 'static,
) -> Result<T, Fault> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(Fault::internal)?
        .map_err(Fault::engine)
}

/// Run heavy write-side work (parsing and journalling large changesets) on the writer's
/// low-priority background thread, so it never competes with readers for a core.
pub async fn in_background<T: Send + 'static>(
    writer: &Writer,
    work: impl FnOnce() -> Result<T, Fault> + Send + 'static,
) -> Result<T, Fault> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    writer
        .background(move || {
            let _ = tx.send(work());
        })
        .map_err(Fault::engine)?;
    rx.await.map_err(Fault::internal)?
}

/// Read a request body up to `limit` bytes (413 beyond).
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, Fault> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        // axum wraps http-body-util's LengthLimitError ("length limit exceeded")
        let mut too_large = false;
        let mut source: Option<&dyn std::error::Error> = Some(&e);
        while let Some(s) = source {
            too_large |= s.to_string().contains("length limit");
            source = s.source();
        }
        if too_large {
            Fault::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Forespørselen er større enn grensen på {limit} byte"),
            )
        } else {
            Fault::bad(format!("Kunne ikke lese forespørselen: {e}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    /// A route that fails without naming a format, behind the write routes' layer.
    fn app() -> Router {
        Router::new()
            .route(
                "/x",
                axum::routing::get(|| async { Fault::bad("Ugyldig <x> & y") }),
            )
            .layer(axum::middleware::from_fn(negotiate_faults))
    }

    async fn get(headers: &[(&str, &str)]) -> (StatusCode, String, String) {
        let mut req = Request::get("/x");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = app()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = r.status();
        let ct = r.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_string();
        let body = r.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    /// The layer renders a fault in the negotiated format: Accept, else the body's type, else
    /// JSON; an explicit format is kept.
    #[tokio::test]
    async fn faults_take_the_negotiated_format() {
        let (st, ct, body) = get(&[]).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        assert!(ct.starts_with("application/json"), "{ct}");
        assert_eq!(body, r#"{"message":"Ugyldig <x> & y"}"#);
        for headers in [
            &[("Accept", "application/xml")][..],
            &[("Content-Type", "application/xml")][..],
            &[("Accept", "text/xml, application/json")][..],
        ] {
            let (st, ct, body) = get(headers).await;
            assert_eq!(st, StatusCode::BAD_REQUEST);
            assert!(ct.starts_with("application/xml"), "{headers:?}: {ct}");
            let (root, v) = xml::parse(body.as_bytes()).unwrap();
            assert_eq!(root, "fault");
            assert_eq!(v["message"], "Ugyldig <x> & y");
            assert!(body.contains(FAULT_NS), "{body}");
        }
        let explicit = Fault::new(StatusCode::CONFLICT, "m", Format::Xml).into_response();
        assert_eq!(explicit.status(), StatusCode::CONFLICT);
        assert!(explicit.extensions().get::<PendingFault>().is_none());
    }
}
