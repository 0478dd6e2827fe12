//! Domain errors of the engine. No HTTP here: `api::error` maps these to status codes.

use std::path::PathBuf;

/// Every failure the engine reports. The caller's faults are separated from ours.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request names something that does not exist (object type, object, property type).
    #[error("{0}")]
    NotFound(String),
    /// A parameter value is malformed or out of range. `code` is the API error code (4000-4014).
    #[error("{message}")]
    InvalidQuery { code: u32, message: String },
    /// A snapshot file is damaged or inconsistent with its manifest.
    #[error("corrupt snapshot at {path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    /// An I/O error, with the path it concerned.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Parquet / Arrow decoding or encoding failed.
    #[error("parquet error on {path}: {reason}")]
    Parquet { path: PathBuf, reason: String },
    /// A bug or an unexpected state on our side.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EngineError::Io {
            path: path.into(),
            source,
        }
    }

    pub fn invalid(code: u32, message: impl Into<String>) -> Self {
        EngineError::InvalidQuery {
            code,
            message: message.into(),
        }
    }

    pub fn parquet(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        EngineError::Parquet {
            path: path.into(),
            reason: reason.to_string(),
        }
    }

    pub fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        EngineError::Corrupt {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
