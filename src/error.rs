//! Domain errors of the engine. No HTTP here: `api::error` maps these to status codes.

use std::path::PathBuf;

/// Every failure the engine reports. The caller's faults are separated from ours.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request names something that does not exist (a generation, an object).
    #[error("{0}")]
    NotFound(String),
    /// The caller's input is malformed or out of range (which input, and why).
    #[error(transparent)]
    Invalid(#[from] Invalid),
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

    /// Input of a command-line caller that is not one of the typed cases of [`Invalid`].
    pub fn input(message: impl Into<String>) -> Self {
        EngineError::Invalid(Invalid::Input(message.into()))
    }

    pub fn parquet(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        EngineError::Parquet {
            path: path.into(),
            reason: reason.to_string(),
        }
    }

    pub fn corrupt(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        EngineError::Corrupt {
            path: path.into(),
            reason: reason.to_string(),
        }
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// The caller's fault: what was wrong with the input. English here; the read API maps each case
/// to its v2 code and Norwegian message in `api::error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Invalid {
    /// A `vegreferanse` that does not parse (`text` as given).
    #[error("invalid road reference '{text}': {problem}")]
    RoadRef {
        text: String,
        problem: RoadRefProblem,
    },
    /// A `vegsystemreferanse` that does not parse (`text` as given, at most 200 characters).
    #[error("invalid road system reference '{text}': {problem}")]
    SystemRef {
        text: String,
        problem: SystemRefProblem,
    },
    /// A `veglenke` reference (`pos@id`, `from-to@id`, `id`) that does not parse.
    #[error("invalid link reference '{text}': {problem}")]
    LinkRef {
        text: String,
        problem: LinkRefProblem,
    },
    /// An `egenskap` filter longer than the limit (in characters).
    #[error("property filter of {chars} characters, at most {max} allowed")]
    FilterTooLong { chars: usize, max: usize },
    /// An `egenskap` filter that does not parse: `pos` is the character position in
    /// `expression` (the trimmed filter without surrounding quotes).
    #[error("invalid property filter at position {pos}: {problem}")]
    FilterSyntax {
        pos: usize,
        expression: String,
        problem: FilterSyntax,
    },
    /// An `egenskap` filter that parses but does not fit the catalogue.
    #[error("property filter does not fit the catalogue: {0}")]
    FilterCatalog(FilterCatalog),
    /// An srid the API does not accept (`text` as given).
    #[error("unknown srid '{text}'")]
    UnknownSrid { text: String },
    /// A coordinate that is NaN or infinite.
    #[error("coordinate is not a finite number")]
    CoordinateNotFinite,
    /// A geographic coordinate outside lon -180..180, lat -90..90.
    #[error("geographic coordinate out of range: lon {lon}, lat {lat}")]
    GeographicOutOfRange { lon: f64, lat: f64 },
    /// A coordinate the projection library cannot transform.
    #[error("coordinate cannot be transformed: {reason}")]
    NotTransformable { reason: String },
    /// Other input of a command-line caller (import, users), already worded for its user.
    #[error("{0}")]
    Input(String),
}

/// Why a road reference does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoadRefProblem {
    #[error("empty value")]
    Empty,
    #[error("no road category (E, R, F, K, P, S or ?)")]
    MissingCategory,
    #[error("no road number")]
    MissingNumber,
    #[error("expected hp<number>")]
    ExpectedHp,
    #[error("expected hp<number> after '-'")]
    ExpectedHpAfterDash,
    #[error("expected a meter value after '-'")]
    ExpectedMeterAfterDash,
    #[error("meter range without a start meter")]
    MeterRangeWithoutStart,
    #[error("the range ends before it starts")]
    RangeEndsBeforeStart,
    #[error("unexpected text '{0}'")]
    UnexpectedText(String),
    /// `/veg` needs the full point form (prefix, category, status, number, hp and meter).
    #[error("a point needs prefix, category, status, number, hp and meter")]
    IncompletePoint,
}

/// Why a road system reference (vegsystemreferanse) does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SystemRefProblem {
    #[error("empty value")]
    Empty,
    #[error("no road category (E, R, F, K, P or S)")]
    MissingCategory,
    #[error("no road number")]
    MissingNumber,
    #[error("expected S<strekning> or S<from>-<to>")]
    ExpectedSection,
    #[error("expected D<delstrekning>")]
    ExpectedSubsection,
    #[error("expected m<meter> or m<from>-<to>")]
    ExpectedMeter,
    #[error("the range ends before it starts")]
    RangeEndsBeforeStart,
    #[error("unexpected text '{0}'")]
    UnexpectedText(String),
    /// `/veg` needs the point form (category, number, strekning, delstrekning and one metre).
    #[error("a point needs category, number, strekning, delstrekning and meter")]
    IncompletePoint,
}

/// Why a link reference does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinkRefProblem {
    #[error("the position is not a number")]
    PositionNotANumber,
    #[error("the position must lie between 0 and 1")]
    PositionOutOfRange,
    #[error("the link id is not an integer")]
    IdNotAnInteger,
    #[error("the from position is greater than the to position")]
    FromAfterTo,
}

/// What the filter parser expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    CloseParen,
    OpenParenAfterRelation,
    TypeId,
    CommaAfterTypeId,
    CloseParenAfterRelation,
    OpenParenAfterProperty,
    PropertyId,
    Condition,
    Value,
    Operator,
    OpenBracket,
    CloseBracket,
}

/// Why a filter does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterSyntax {
    #[error("'!' must be followed by '='")]
    BangWithoutEquals,
    #[error("text without a closing quote")]
    UnterminatedText,
    #[error("invalid number '{0}'")]
    BadNumber(String),
    #[error("unexpected character '{0}'")]
    UnexpectedChar(char),
    /// `found` is the token found (its debug form), or None when the expression ended.
    #[error("expected {what:?}, found {found:?}")]
    Expected {
        what: Expected,
        found: Option<String>,
    },
    #[error("nested deeper than {max} levels")]
    TooDeep { max: usize },
    #[error("more than {max} conditions")]
    TooManyConditions { max: usize },
    #[error("empty expression")]
    Empty,
    /// A token after a complete expression (its debug form).
    #[error("unexpected {0}")]
    Trailing(String),
}

/// Why a parsed filter does not fit the catalogue.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterCatalog {
    #[error("object type {type_id} has no children of type {child_type}")]
    NotAChild { type_id: u32, child_type: u32 },
    #[error("unknown object type {0}")]
    UnknownType(u32),
    #[error("property type {property} is not on object type {type_id}")]
    NotOnType { property: u32, type_id: u32 },
    #[error("property type {0} has allowed values: use =, !=, in or notin with a value id")]
    EnumNeedsEquality(u32),
    #[error("property type {property} is compared with an allowed value's id, not '{text}'")]
    EnumComparedWithText { property: u32, text: String },
    #[error("property type {0} is a geometry and cannot be filtered")]
    Geometry(u32),
    #[error("null cannot be in an in list")]
    NullInList,
}
