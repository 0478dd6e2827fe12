//! `/binaer`: upload binary data (raw body, or the first file part of multipart/form-data) and
//! fetch it by ressursId. Uploads are limited to `max_binary_bytes` (413 beyond).
//!
//! Reading: the uploader(s), users whose changesets refer to the binary, and admins (see
//! `changeset::binary`); anyone else gets the same 404 as for an unknown id. The stored bytes
//! are the uploader's, so a download is never rendered as a page of this origin:
//! `X-Content-Type-Options: nosniff`, `Content-Security-Policy: default-src 'none'; sandbox`,
//! and `Content-Disposition: attachment` unless the type is on `INLINE_TYPES`.

use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::xml::DOMAIN_NS;
use super::{caller, read_body, writer, Fault};
use crate::api::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(post_binary))
        .routes(routes!(get_binary))
}

/// Raw bytes in a body (the schema only: `string`, `format: binary`).
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct RawBytes(pub Vec<u8>);

/// The answer to an upload: `{"ressursId", "href"}` / `<binaer ressursId="…" href="…"/>`.
#[derive(Serialize, ToSchema)]
pub struct StoredBinary<'a> {
    #[serde(rename = "ressursId")]
    pub resource_id: &'a str,
    pub href: &'a str,
}

fn too_large(limit: usize) -> Fault {
    Fault::status(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Binærdata er større enn grensen på {limit} byte"),
    )
}

#[utoipa::path(post, path = "/binaer", tag = "binaer", request_body(content((RawBytes = "application/octet-stream"), (RawBytes = "image/png"), (RawBytes = "image/jpeg"), (RawBytes = "application/pdf")), description = "the bytes, with their Content-Type (or one file in multipart/form-data)"), responses((status = 201, description = "ressursId (SHA-256 of the bytes) + Location; raw body or multipart/form-data", body = StoredBinary), (status = 413, description = "fault: larger than the limit")))]
pub async fn post_binary(State(state): State<AppState>, req: Request) -> Result<Response, Fault> {
    let headers = req.headers().clone();
    let c = caller(&state, &headers)?;
    let f = c.format;
    if !c.user.may_write() {
        return Err(Fault::status(
            StatusCode::FORBIDDEN,
            format!("Brukeren {} har ikke skriverett", c.user.name),
        ));
    }
    let w = writer(&state)?.clone();
    let limit = state.config.max_binary_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    // multipart adds a little framing around the file
    if declared.is_some_and(|n| n > limit + 64 * 1024) {
        return Err(too_large(limit));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_string();
    let (bytes, stored_type) = if content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        let mut mp = Multipart::from_request(req, &state)
            .await
            .map_err(|e| Fault::bad(format!("Ugyldig multipart/form-data: {e}")))?;
        // the first part with a file name, else the first part
        let mut found: Option<(Vec<u8>, String)> = None;
        while let Some(mut field) = mp
            .next_field()
            .await
            .map_err(|e| Fault::bad(format!("Ugyldig multipart/form-data: {e}")))?
        {
            let is_file = field.file_name().is_some();
            if found.is_some() && !is_file {
                continue;
            }
            let ct = field
                .content_type()
                .unwrap_or("application/octet-stream")
                .to_string();
            let mut data = Vec::new();
            while let Some(chunk) = field
                .chunk()
                .await
                .map_err(|e| Fault::bad(format!("Ugyldig multipart/form-data: {e}")))?
            {
                if data.len() + chunk.len() > limit {
                    return Err(too_large(limit));
                }
                data.extend_from_slice(&chunk);
            }
            found = Some((data, ct));
            if is_file {
                break;
            }
        }
        found.ok_or_else(|| Fault::bad("multipart/form-data uten fil"))?
    } else {
        let body: Body = req.into_body();
        let bytes = read_body(body, limit).await.map_err(|e| {
            if e.status == StatusCode::PAYLOAD_TOO_LARGE {
                too_large(limit)
            } else {
                e
            }
        })?;
        (bytes.to_vec(), content_type)
    };
    if bytes.is_empty() {
        return Err(Fault::bad("Binærdata er tom"));
    }
    let uploader = c.user.name.clone();
    let id = super::blocking(move || w.binaries.put(&bytes, &stored_type, &uploader)).await?;
    let href = format!("{}{}/binaer/{id}", state.public_url(), super::WRITE_BASE);
    let mut r = super::document_response(
        StatusCode::CREATED,
        f,
        "binaer",
        DOMAIN_NS,
        &StoredBinary {
            resource_id: &id,
            href: &href,
        },
    );
    if let Ok(v) = HeaderValue::from_str(&href) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

#[utoipa::path(get, path = "/binaer/{id}", tag = "binaer", params(("id" = String, Path, description = "the ressursId of the upload")), responses((status = 200, description = "the bytes with their content type, X-Content-Type-Options nosniff, a sandboxing Content-Security-Policy, Content-Disposition attachment unless an image, PDF or plain text", content_type = "application/octet-stream", body = RawBytes), (status = 404, description = "fault: unknown, or not readable by the caller (uploader, users whose changesets refer to it, admins)")))]
pub async fn get_binary(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, Fault> {
    let c = caller(&state, &headers)?;
    let w = writer(&state)?.clone();
    let id2 = id.clone();
    let (admin, name) = (c.user.is_admin(), c.user.name.clone());
    let found = super::blocking(move || {
        if admin || w.binaries.may_read(&id2, &name) {
            w.binaries.get(&id2)
        } else {
            Ok(None)
        }
    })
    .await?;
    let Some((bytes, ct)) = found else {
        return Err(Fault::status(
            StatusCode::NOT_FOUND,
            format!("Binærressurs {id} finnes ikke"),
        ));
    };
    let mut r = (StatusCode::OK, bytes).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&ct)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    let disposition = if shown_inline(&ct) {
        "inline".to_string()
    } else {
        format!("attachment; filename=\"{id}\"")
    };
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(r)
}

/// Content types a browser may show inline: they cannot run script. Everything else
/// (text/html, image/svg+xml, application/xml, ...) is served as an attachment.
pub const INLINE_TYPES: [&str; 7] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/bmp",
    "application/pdf",
    "text/plain",
];

/// Is this stored content type (parameters ignored) on `INLINE_TYPES`?
pub fn shown_inline(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    INLINE_TYPES.contains(&essence.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_script_free_types_are_shown_inline() {
        for t in [
            "image/png",
            "IMAGE/JPEG",
            "application/pdf",
            "text/plain; charset=utf-8",
        ] {
            assert!(shown_inline(t), "{t}");
        }
        for t in [
            "text/html",
            "image/svg+xml",
            "application/xhtml+xml",
            "application/xml",
            "text/javascript",
            "",
            "image/png2",
        ] {
            assert!(!shown_inline(t), "{t}");
        }
    }
}
