//! Response media types. JSON is the default and answers `application/json`,
//! `application/vnd.vegvesen.nvdb-v2+json` and its `-revN` forms, wildcards and no Accept at all.
//! Plain `nvdb-v2+json` is response revision 0, which adds `metadata.antall` to lists.
//! Anything only XML or otherwise unknown is 415/4001.

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, ApiResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// Response revision: 0 for plain nvdb-v2+json, else the newest.
    pub revision: u8,
    pub pretty: bool,
    /// Answer with the vendor content type (the client asked for it).
    pub vendor: bool,
}

pub const NEWEST_REVISION: u8 = 2;

pub fn negotiate(headers: &HeaderMap, pretty: bool) -> ApiResult<Negotiated> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(Negotiated {
            revision: NEWEST_REVISION,
            pretty,
            vendor: false,
        });
    };
    let mut json = false;
    let mut vendor = false;
    let mut revision = NEWEST_REVISION;
    for range in accept.split(',') {
        let mt = range
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match mt.as_str() {
            "" | "*/*" | "application/*" | "application/json" => json = true,
            "application/vnd.vegvesen.nvdb-v2+json" => {
                json = true;
                vendor = true;
                revision = 0;
            }
            m if m.starts_with("application/vnd.vegvesen.nvdb-v2-rev") && m.ends_with("+json") => {
                json = true;
                vendor = true;
                let n = m
                    .trim_start_matches("application/vnd.vegvesen.nvdb-v2-rev")
                    .trim_end_matches("+json");
                revision = n.parse().unwrap_or(NEWEST_REVISION);
            }
            _ => {}
        }
    }
    if json {
        Ok(Negotiated {
            revision,
            pretty,
            vendor,
        })
    } else {
        Err(ApiError::new(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            4001,
            format!("Mediatypen støttes ikke: {accept}. Bruk application/json eller application/vnd.vegvesen.nvdb-v2+json"),
        ))
    }
}

/// A JSON response with the API's content type.
pub fn json<T: Serialize>(n: Negotiated, value: &T) -> Response {
    let body = if n.pretty {
        serde_json::to_vec_pretty(value)
    } else {
        serde_json::to_vec(value)
    };
    match body {
        Ok(bytes) => {
            let mut r = bytes.into_response();
            let ct = if n.vendor {
                "application/vnd.vegvesen.nvdb-v2+json;charset=utf-8"
            } else {
                "application/json;charset=utf-8"
            };
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
            r
        }
        Err(e) => {
            ApiError::from(crate::error::EngineError::Internal(e.to_string())).into_response()
        }
    }
}
