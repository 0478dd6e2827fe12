//! OGC API errors: `{"code": "...", "description": "..."}` with 400 (bad parameter) or 404,
//! and how the engine's and the v2 API's errors become them.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::api::error::ApiError;

/// An OGC API error: `{"code", "description"}` with its status.
#[derive(Debug)]
pub struct OgcError {
    pub status: StatusCode,
    pub code: &'static str,
    pub description: String,
}

impl OgcError {
    pub(super) fn bad(description: impl Into<String>) -> OgcError {
        OgcError {
            status: StatusCode::BAD_REQUEST,
            code: "InvalidParameterValue",
            description: description.into(),
        }
    }
    pub(super) fn not_found(description: impl Into<String>) -> OgcError {
        OgcError {
            status: StatusCode::NOT_FOUND,
            code: "NotFound",
            description: description.into(),
        }
    }
}

impl From<crate::error::EngineError> for OgcError {
    fn from(e: crate::error::EngineError) -> OgcError {
        let e = ApiError::from(e);
        OgcError {
            status: if e.status.is_client_error() {
                StatusCode::BAD_REQUEST
            } else {
                e.status
            },
            code: if e.status.is_client_error() {
                "InvalidParameterValue"
            } else {
                "ServerError"
            },
            description: e.message,
        }
    }
}

impl From<ApiError> for OgcError {
    fn from(e: ApiError) -> OgcError {
        OgcError {
            status: e.status,
            code: if e.status.is_client_error() {
                "InvalidParameterValue"
            } else {
                "ServerError"
            },
            description: e.message,
        }
    }
}

impl IntoResponse for OgcError {
    fn into_response(self) -> Response {
        let body = json!({"code": self.code, "description": self.description});
        let mut r = (self.status, body.to_string()).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    }
}

pub(super) type OgcResult<T> = Result<T, OgcError>;
