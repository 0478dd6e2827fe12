//! The read API's error shape: a JSON array of `{code, message, help_url}` with the status codes
//! of the v2 service (404/4012 unknown id, 422/40xx bad input, 415/4001 media type, 500/5000).

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{
    EngineError, Expected, FilterCatalog, FilterSyntax, Invalid, LinkRefProblem, RoadRefProblem,
    SystemRefProblem,
};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: u32,
    pub message: String,
}

/// One entry of the error array (also the OpenAPI documents' error schema).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody<'a> {
    /// The v2 error code (4000–4999 the request's, 5000–5999 the service's)
    code: u32,
    message: &'a str,
    help_url: &'a str,
}

pub const HELP_URL: &str = "/nvdb/api/v2/openapi.json";

/// Most characters of a rejected parameter name that an error message repeats (both APIs and
/// the OGC API): a longer name is cut there and ends in `…`.
pub const MAX_ECHO_CHARS: usize = 200;

/// `text` as an error message repeats it: at most [`MAX_ECHO_CHARS`] characters, then `…`.
pub fn echoed(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_ECHO_CHARS) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &text[..cut])),
    }
}

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
        Self::bad(4013, format!("Ukjent parameter: {}", echoed(name)))
    }
}

/// The one mapping of engine errors to the read API: status, v2 code and Norwegian message.
impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(m) => ApiError::not_found(m),
            EngineError::Invalid(invalid) => {
                let (code, message) = invalid_input(&invalid);
                ApiError::bad(code, message)
            }
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

/// Characters of a filter expression echoed in its error message.
const ECHO_CHARS: usize = 200;

/// The v2 code (422) and Norwegian message of the caller's input error.
pub fn invalid_input(e: &Invalid) -> (u32, String) {
    match e {
        Invalid::RoadRef { text, problem } => (
            4005,
            format!("Ugyldig vegreferanse '{text}': {}", road_ref_problem(problem)),
        ),
        Invalid::SystemRef { text, problem } => (
            4005,
            format!(
                "Ugyldig vegsystemreferanse '{}': {}",
                echoed(text),
                system_ref_problem(problem)
            ),
        ),
        Invalid::LinkRef { text, problem } => {
            let why = match problem {
                LinkRefProblem::PositionNotANumber => "posisjonen er ikke et tall",
                LinkRefProblem::PositionOutOfRange => "posisjonen må ligge mellom 0 og 1",
                LinkRefProblem::IdNotAnInteger => "lenke-id er ikke et heltall",
                LinkRefProblem::FromAfterTo => "fra-posisjon er større enn til-posisjon",
            };
            (4005, format!("Ugyldig veglenke '{text}': {why}"))
        }
        Invalid::FilterTooLong { chars, max } => (
            4005,
            format!("Ugyldig egenskapsfilter: uttrykket har {chars} tegn, høyst {max} er tillatt"),
        ),
        Invalid::FilterSyntax {
            pos,
            expression,
            problem,
        } => {
            let echo = match expression.char_indices().nth(ECHO_CHARS) {
                Some((at, _)) => format!("{}…", &expression[..at]),
                None => expression.clone(),
            };
            (
                4005,
                format!(
                    "Ugyldig egenskapsfilter ved posisjon {pos}: {} (i uttrykket: {echo})",
                    filter_syntax(problem)
                ),
            )
        }
        Invalid::FilterCatalog(problem) => (4005, filter_catalog(problem)),
        Invalid::UnknownSrid { text } => (
            4002,
            format!(
                "Ugyldig srid: '{text}'. Gyldige verdier: 32633, 25833, 5973, 6173, 4326, 25832, 25835, utm33, wgs84"
            ),
        ),
        Invalid::CoordinateNotFinite => (4010, "Koordinaten må være et endelig tall".to_string()),
        Invalid::GeographicOutOfRange { lon, lat } => (
            4010,
            format!("Ugyldig geografisk koordinat: lon {lon}, lat {lat}"),
        ),
        Invalid::NotTransformable { reason } => (
            4010,
            format!("Koordinaten kan ikke transformeres: {reason}"),
        ),
        Invalid::Input(message) => (4005, message.clone()),
    }
}

fn road_ref_problem(p: &RoadRefProblem) -> String {
    match p {
        RoadRefProblem::Empty => "tom verdi".into(),
        RoadRefProblem::MissingCategory => "mangler vegkategori (E, R, F, K, P, S eller ?)".into(),
        RoadRefProblem::MissingNumber => "mangler vegnummer".into(),
        RoadRefProblem::ExpectedHp => "forventet hp<nummer>".into(),
        RoadRefProblem::ExpectedHpAfterDash => "forventet hp<nummer> etter '-'".into(),
        RoadRefProblem::ExpectedMeterAfterDash => "forventet meterverdi etter '-'".into(),
        RoadRefProblem::MeterRangeWithoutStart => "meterintervall uten startmeter".into(),
        RoadRefProblem::RangeEndsBeforeStart => "slutten av intervallet ligger før starten".into(),
        RoadRefProblem::UnexpectedText(t) => format!("uventet tekst '{t}'"),
        RoadRefProblem::IncompletePoint => "et punkt må ha områdekode, kategori, status, nummer, hp og meter, f.eks. 1800Ev6hp23m17084".into(),
    }
}

fn system_ref_problem(p: &SystemRefProblem) -> String {
    match p {
        SystemRefProblem::Empty => "tom verdi".into(),
        SystemRefProblem::MissingCategory => "mangler vegkategori (E, R, F, K, P eller S)".into(),
        SystemRefProblem::MissingNumber => "mangler vegnummer".into(),
        SystemRefProblem::ExpectedSection => "forventet S<strekning> eller S<fra>-<til>".into(),
        SystemRefProblem::ExpectedSubsection => "forventet D<delstrekning>".into(),
        SystemRefProblem::ExpectedMeter => "forventet m<meter> eller m<fra>-<til>".into(),
        SystemRefProblem::RangeEndsBeforeStart => {
            "slutten av intervallet ligger før starten".into()
        }
        SystemRefProblem::UnexpectedText(t) => format!("uventet tekst '{t}'"),
        SystemRefProblem::IncompletePoint => {
            "et punkt må ha kategori, nummer, strekning, delstrekning og meter, f.eks. EV6S1D1m200"
                .into()
        }
    }
}

fn expected(e: Expected) -> &'static str {
    match e {
        Expected::CloseParen => "')'",
        Expected::OpenParenAfterRelation => "'(' etter relasjon",
        Expected::TypeId => "vegobjekttype-id",
        Expected::CommaAfterTypeId => "',' etter vegobjekttype-id",
        Expected::CloseParenAfterRelation => "')' etter relasjon",
        Expected::OpenParenAfterProperty => "'(' etter egenskap",
        Expected::PropertyId => "egenskapstype-id",
        Expected::Condition => "en betingelse",
        Expected::Value => "en verdi",
        Expected::Operator => "en operator (=, !=, <, >, <=, >=, in, notin)",
        Expected::OpenBracket => "'['",
        Expected::CloseBracket => "']'",
    }
}

fn filter_syntax(p: &FilterSyntax) -> String {
    match p {
        FilterSyntax::BangWithoutEquals => "'!' må følges av '='".into(),
        FilterSyntax::UnterminatedText => "tekst uten avsluttende anførselstegn".into(),
        FilterSyntax::BadNumber(s) => format!("ugyldig tall '{s}'"),
        FilterSyntax::UnexpectedChar(c) => format!("uventet tegn '{c}'"),
        FilterSyntax::Expected {
            what,
            found: Some(found),
        } => format!("forventet {}, fant {found}", expected(*what)),
        FilterSyntax::Expected { what, found: None } => {
            format!("forventet {}, men uttrykket sluttet", expected(*what))
        }
        FilterSyntax::TooDeep { max } => {
            format!("uttrykket er nestet dypere enn {max} nivåer (parenteser og relasjon)")
        }
        FilterSyntax::TooManyConditions { max } => {
            format!("uttrykket har flere enn {max} betingelser")
        }
        FilterSyntax::Empty => "tomt uttrykk".into(),
        FilterSyntax::Trailing(t) => format!("uventet {t}"),
    }
}

fn filter_catalog(p: &FilterCatalog) -> String {
    match p {
        FilterCatalog::NotAChild {
            type_id,
            child_type,
        } => format!("Vegobjekttype {type_id} har ikke barn av type {child_type}"),
        FilterCatalog::UnknownType(t) => format!("Ukjent vegobjekttype {t}"),
        FilterCatalog::NotOnType { property, type_id } => {
            format!("Egenskapstype {property} finnes ikke på vegobjekttype {type_id}")
        }
        FilterCatalog::EnumNeedsEquality(property) => format!(
            "Egenskapstype {property} har tillatte verdier; bruk =, !=, in eller notin med verdi-id"
        ),
        FilterCatalog::EnumComparedWithText { property, text } => format!(
            "Egenskapstype {property} sammenlignes med id-en til en tillatt verdi, ikke '{text}'"
        ),
        FilterCatalog::Geometry(property) => {
            format!("Egenskapstype {property} er en geometri og kan ikke filtreres")
        }
        FilterCatalog::NullInList => "null kan ikke stå i en in-liste".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages the v2 clients see, character for character (the goldens and API tests pin
    /// the rest).
    #[test]
    fn engine_errors_map_to_v2_codes_and_norwegian_messages() {
        let long = "x".repeat(250);
        let cases: Vec<(Invalid, u32, String)> = vec![
            (
                Invalid::RoadRef {
                    text: "Xv6".into(),
                    problem: RoadRefProblem::MissingCategory,
                },
                4005,
                "Ugyldig vegreferanse 'Xv6': mangler vegkategori (E, R, F, K, P, S eller ?)".into(),
            ),
            (
                Invalid::FilterSyntax {
                    pos: 3,
                    expression: long.clone(),
                    problem: FilterSyntax::Expected {
                        what: Expected::Value,
                        found: None,
                    },
                },
                4005,
                format!(
                    "Ugyldig egenskapsfilter ved posisjon 3: forventet en verdi, men uttrykket sluttet (i uttrykket: {}…)",
                    &long[..200]
                ),
            ),
            (
                Invalid::UnknownSrid { text: "1".into() },
                4002,
                "Ugyldig srid: '1'. Gyldige verdier: 32633, 25833, 5973, 6173, 4326, 25832, 25835, utm33, wgs84".into(),
            ),
            (
                Invalid::GeographicOutOfRange {
                    lon: 200.0,
                    lat: 1.5,
                },
                4010,
                "Ugyldig geografisk koordinat: lon 200, lat 1.5".into(),
            ),
        ];
        for (e, code, message) in cases {
            assert_eq!(invalid_input(&e), (code, message));
            let api = ApiError::from(EngineError::from(e));
            assert_eq!(api.status, StatusCode::UNPROCESSABLE_ENTITY);
        }
    }

    #[test]
    fn echoed_text_is_cut_at_max_echo_chars_characters() {
        assert_eq!(echoed("kort"), "kort");
        let exact = "ø".repeat(MAX_ECHO_CHARS);
        assert_eq!(echoed(&exact), exact.as_str());
        let long = "ø".repeat(20_000);
        let e = echoed(&long);
        assert_eq!(e.chars().count(), MAX_ECHO_CHARS + 1);
        assert!(e.ends_with("ø…"), "{e}");
    }
}
