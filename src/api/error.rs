//! The read API's error shape: a JSON array of `{code, message, help_url}` with the status codes
//! of the v2 service (404/4012 unknown id, 422/40xx bad input, 415/4001 media type, 500/5000).

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::EngineError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: u32,
    pub message: String,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: u32,
    message: &'a str,
    help_url: &'a str,
}

pub const HELP_URL: &str = "/nvdb/api/v2/openapi.json";

impl ApiError {
    pub fn new(status: StatusCode, code: u32, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
    pub fn bad(code: u32, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, 4012, message)
    }
    pub fn unknown_parameter(name: &str) -> Self {
        Self::bad(4013, format!("Ukjent parameter: {name}"))
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(m) => ApiError::not_found(m),
            EngineError::InvalidQuery { code, message } => ApiError::bad(code, message),
            EngineError::Corrupt { .. }
            | EngineError::Io { .. }
            | EngineError::Parquet { .. }
            | EngineError::Internal(_) => {
                tracing::error!(error = %e, "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    5000,
                    "Uventet feil på tjenesten",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&[ErrorBody {
            code: self.code,
            message: &self.message,
            help_url: HELP_URL,
        }])
        .expect("error bodies serialize");
        let mut r = (self.status, body).into_response();
        r.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json;charset=utf-8"),
        );
        r
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
