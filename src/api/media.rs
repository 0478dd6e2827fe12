//! Response media types and revisions (v2 `retningslinjer.md`, `responsrevisjoner.md`).
//!
//! Formats: JSON (the default: no Accept, wildcards, `application/json`, `text/json`,
//! `application/vnd.vegvesen.nvdb-v2[-revN]+json`) or XML (`application/xml`, `text/xml`,
//! `application/vnd.vegvesen.nvdb-v2[-revN]+xml`, or the `.xml` path suffix, which wins over
//! Accept). Anything else only is 415/4001. XML is derived from the JSON shape by the rule in
//! [`super::xml`]. Error bodies are always JSON (the API's error shape, one shape for every
//! client).
//!
//! Revisions: `-rev0`, `-rev1`, `-rev2` are served as asked (a higher number gets the newest,
//! 2); `application/json`, `application/xml` and no Accept get the newest. The plain vendor type
//! (`nvdb-v2+json` without a revision) is what LtGlahn's client sends and real 2021 extractions
//! made with it show `LINESTRING Z` and carry `metadata.antall`: it is revision 0 with the `Z`
//! tag and the newer `viktighet_tekst` (see api-facts "CORRECTED"). Each rule is one method of
//! [`Negotiated`]. The `Content-Type` names what was served: the vendor type with the revision
//! (`application/vnd.vegvesen.nvdb-v2-rev2+json;charset=utf-8`) when a vendor type was asked
//! with a revision, the plain vendor type when it was asked without one, else
//! `application/json` / `application/xml`.

use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, ApiResult};
use super::xml::{self, XmlRoot, XmlStyle};

pub const NEWEST_REVISION: u8 = 2;

/// Set by `rewrite_suffix` (never taken from the client): `xml` or `json` from a path suffix.
pub const SUFFIX_FORMAT: HeaderName = HeaderName::from_static("x-vegdb-suffix-format");
/// Set by `rewrite_suffix`: the request path below the read base, for the XML root's name.
pub const RESOURCE_PATH: HeaderName = HeaderName::from_static("x-vegdb-resource-path");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Xml,
}

/// The resource a request names, for the XML root: the last path segment that is not a number
/// (`vegobjekttyper`, `fylker`, `lenker`, `status`), and whether the path ends in an id (then
/// a single value's root is the singular: `/vegobjekter/105/1` → `vegobjekt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    name: [u8; 32],
    len: u8,
    by_id: bool,
}

/// Root name when the request path is unknown or too long.
pub const DEFAULT_ROOT: &str = "respons";

/// The resource of a request whose path is unknown: root [`DEFAULT_ROOT`].
pub const DEFAULT_RESOURCE: Resource = {
    let mut name = [0u8; 32];
    let root = DEFAULT_ROOT.as_bytes();
    let mut i = 0;
    while i < root.len() {
        name[i] = root[i];
        i += 1;
    }
    Resource {
        name,
        len: root.len() as u8,
        by_id: false,
    }
};

impl Resource {
    pub fn from_path(path: &str) -> Resource {
        let numeric = |s: &&str| s.bytes().all(|b| b.is_ascii_digit());
        let mut segments = path.rsplit('/').filter(|s| !s.is_empty());
        let last = segments.next();
        let by_id = last.as_ref().is_some_and(numeric);
        let name = last
            .into_iter()
            .chain(segments)
            .find(|s| !numeric(s))
            .unwrap_or(DEFAULT_ROOT);
        Resource::named(name, by_id)
    }

    fn named(name: &str, by_id: bool) -> Resource {
        let name = if name.len() <= 32 && xml::is_xml_name(name) {
            name
        } else {
            DEFAULT_ROOT
        };
        let mut buf = [0u8; 32];
        buf[..name.len()].copy_from_slice(name.as_bytes());
        Resource {
            name: buf,
            len: name.len() as u8,
            by_id,
        }
    }

    pub fn name(&self) -> &str {
        std::str::from_utf8(&self.name[..self.len as usize]).unwrap_or(DEFAULT_ROOT)
    }

    /// Root names for lists and single values.
    pub fn root(&self) -> XmlRoot<'_> {
        let name = self.name();
        XmlRoot {
            list: name,
            single: if self.by_id {
                xml::singular(name)
            } else {
                name
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// Response revision served (0..=2).
    pub revision: u8,
    pub pretty: bool,
    pub format: Format,
    /// A vendor type was asked for.
    pub vendor: bool,
    /// The plain vendor type without a revision (revision 0 with the newer geometry).
    pub plain_vendor: bool,
    pub resource: Resource,
    /// GeoJSON (`application/geo+json` or the `.geojson` suffix) was asked for; only endpoints
    /// that negotiate with [`negotiate_geo`] (through `api::begin_geo`) ever see it set.
    pub geojson: bool,
    /// CSV (`text/csv` or the `.csv` suffix) was asked for; only endpoints that negotiate with
    /// [`negotiate_csv`] ever see it set (`api::csv`).
    pub csv: bool,
}

/// The GeoJSON media type (RFC 7946).
pub const GEOJSON: &str = "application/geo+json";

impl Negotiated {
    /// The newest revision in JSON (no Accept).
    pub fn default_json(pretty: bool) -> Negotiated {
        Negotiated {
            revision: NEWEST_REVISION,
            pretty,
            format: Format::Json,
            vendor: false,
            plain_vendor: false,
            resource: DEFAULT_RESOURCE,
            geojson: false,
            csv: false,
        }
    }

    /// The answer is compact JSON (no pretty printing, not XML or GeoJSON): what handlers that
    /// write their JSON themselves (`dto::PositionJson`) write; other formats go through serde.
    pub fn compact_json(&self) -> bool {
        self.format == Format::Json && !self.pretty && !self.geojson && !self.csv
    }

    /// 3D WKT tagged `Z` (`LINESTRING Z (…)`): from revision 1, and for the plain vendor type.
    pub fn wkt_z_tag(&self) -> bool {
        self.revision >= 1 || self.plain_vendor
    }

    /// Lists carry `metadata.antall` (the total): revision 0 only (incl. the plain vendor type).
    pub fn total_count(&self) -> bool {
        self.revision == 0
    }

    /// Date-times written `yyyy-MM-ddTHH:mm:ss` (revision 2) rather than with a space.
    pub fn datetime_with_t(&self) -> bool {
        self.revision >= 2
    }

    /// `viktighet_tekst` `PÅKREVD` instead of `PÅKREVD_IKKE_ABSOLUTT`: explicit revision 0.
    pub fn old_importance_text(&self) -> bool {
        self.revision == 0 && !self.plain_vendor
    }

    /// The `Content-Type` of a successful response.
    pub fn content_type(&self) -> HeaderValue {
        if self.geojson {
            return const { HeaderValue::from_static(GEOJSON) };
        }
        if self.csv {
            return const { HeaderValue::from_static(super::csv::TEXT_CSV) };
        }
        // the common types without building a string, checked when compiled (`from_static`
        // checks every byte; at run time that was 300 instructions per answer)
        let known = match (self.format, self.vendor, self.plain_vendor, self.revision) {
            (Format::Json, _, true, _) => Some(
                const { HeaderValue::from_static("application/vnd.vegvesen.nvdb-v2+json;charset=utf-8") },
            ),
            (Format::Xml, _, true, _) => Some(
                const { HeaderValue::from_static("application/vnd.vegvesen.nvdb-v2+xml;charset=utf-8") },
            ),
            (Format::Json, false, false, _) => {
                Some(const { HeaderValue::from_static("application/json;charset=utf-8") })
            }
            (Format::Xml, false, false, _) => {
                Some(const { HeaderValue::from_static("application/xml;charset=utf-8") })
            }
            (Format::Json, true, false, 0) => Some(
                const {
                    HeaderValue::from_static(
                        "application/vnd.vegvesen.nvdb-v2-rev0+json;charset=utf-8",
                    )
                },
            ),
            (Format::Json, true, false, 1) => Some(
                const {
                    HeaderValue::from_static(
                        "application/vnd.vegvesen.nvdb-v2-rev1+json;charset=utf-8",
                    )
                },
            ),
            (Format::Json, true, false, 2) => Some(
                const {
                    HeaderValue::from_static(
                        "application/vnd.vegvesen.nvdb-v2-rev2+json;charset=utf-8",
                    )
                },
            ),
            (Format::Xml, true, false, 0) => Some(
                const {
                    HeaderValue::from_static(
                        "application/vnd.vegvesen.nvdb-v2-rev0+xml;charset=utf-8",
                    )
                },
            ),
            (Format::Xml, true, false, 1) => Some(
                const {
                    HeaderValue::from_static(
                        "application/vnd.vegvesen.nvdb-v2-rev1+xml;charset=utf-8",
                    )
                },
            ),
            (Format::Xml, true, false, 2) => Some(
                const {
                    HeaderValue::from_static(
                        "application/vnd.vegvesen.nvdb-v2-rev2+xml;charset=utf-8",
                    )
                },
            ),
            _ => None,
        };
        match known {
            Some(t) => t,
            None => {
                HeaderValue::from_str(&self.content_type_text()).expect("media types are ASCII")
            }
        }
    }

    /// The `Content-Type` of a successful response, built from its parts.
    fn content_type_text(&self) -> String {
        let suffix = match self.format {
            Format::Json => "json",
            Format::Xml => "xml",
        };
        if self.plain_vendor {
            format!("application/vnd.vegvesen.nvdb-v2+{suffix};charset=utf-8")
        } else if self.vendor {
            format!(
                "application/vnd.vegvesen.nvdb-v2-rev{}+{suffix};charset=utf-8",
                self.revision
            )
        } else {
            format!("application/{suffix};charset=utf-8")
        }
    }
}

/// One Accept media range understood.
struct Range {
    format: Format,
    /// `*/*`, `application/*` or empty: JSON unless something specific is also accepted.
    wildcard: bool,
    /// None: plain vendor type; Some(r): with revision; generic types have `vendor` false.
    revision: Option<u8>,
    vendor: bool,
    geojson: bool,
    csv: bool,
}

/// The formats an endpoint answers besides JSON and XML.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Extra {
    geojson: bool,
    csv: bool,
}

fn parse_range(mt: &str, extra: Extra) -> Option<Range> {
    let geojson = extra.geojson;
    let generic = |format, wildcard| {
        Some(Range {
            format,
            wildcard,
            revision: Some(NEWEST_REVISION),
            vendor: false,
            geojson: false,
            csv: false,
        })
    };
    match mt {
        "application/geo+json" | "application/vnd.geo+json" if geojson => Some(Range {
            format: Format::Json,
            wildcard: false,
            revision: Some(NEWEST_REVISION),
            vendor: false,
            geojson: true,
            csv: false,
        }),
        "text/csv" if extra.csv => Some(Range {
            format: Format::Json,
            wildcard: false,
            revision: Some(NEWEST_REVISION),
            vendor: false,
            geojson: false,
            csv: true,
        }),
        "" | "*/*" | "application/*" => generic(Format::Json, true),
        "application/json" | "text/json" => generic(Format::Json, false),
        "application/xml" | "text/xml" => generic(Format::Xml, false),
        _ => {
            let rest = mt.strip_prefix("application/vnd.vegvesen.nvdb-v2")?;
            let (rev, format) = if let Some(r) = rest.strip_suffix("+json") {
                (r, Format::Json)
            } else {
                (rest.strip_suffix("+xml")?, Format::Xml)
            };
            let revision = match rev {
                "" => None,
                r => Some(
                    r.strip_prefix("-rev")?
                        .parse::<u32>()
                        .ok()?
                        .min(NEWEST_REVISION as u32) as u8,
                ),
            };
            Some(Range {
                format,
                wildcard: false,
                revision,
                vendor: true,
                geojson: false,
                csv: false,
            })
        }
    }
}

/// Whether an `Accept` value names an XML type (`…xml…`, any case): only then may the answer
/// be XML, and only then does the request path need recording for the XML root.
pub fn mentions_xml(accept: &[u8]) -> bool {
    accept.windows(3).any(|w| w.eq_ignore_ascii_case(b"xml"))
}

/// One media range of `Accept` without its parameters, lower-cased only when it has upper-case
/// letters (clients send lower case: no copy then).
fn range_of(r: &str, extra: Extra) -> Option<Range> {
    let mt = r.split(';').next().unwrap_or("").trim();
    if mt.bytes().any(|b| b.is_ascii_uppercase()) {
        parse_range(&mt.to_ascii_lowercase(), extra)
    } else {
        parse_range(mt, extra)
    }
}

pub fn negotiate(headers: &HeaderMap, pretty: bool) -> ApiResult<Negotiated> {
    negotiate_with(headers, pretty, Extra::default())
}

/// As [`negotiate`] for endpoints that also answer GeoJSON (`application/geo+json` in Accept,
/// or the `.geojson` suffix, which wins like the other suffixes).
pub fn negotiate_geo(headers: &HeaderMap, pretty: bool) -> ApiResult<Negotiated> {
    negotiate_with(
        headers,
        pretty,
        Extra {
            geojson: true,
            csv: false,
        },
    )
}

/// As [`negotiate`] for the table answers that also come as CSV (`text/csv` in Accept, or the
/// `.csv` suffix, which wins like the other suffixes): the statistics tables.
pub fn negotiate_csv(headers: &HeaderMap, pretty: bool) -> ApiResult<Negotiated> {
    negotiate_with(
        headers,
        pretty,
        Extra {
            geojson: false,
            csv: true,
        },
    )
}

/// As [`negotiate`] with GeoJSON and CSV (the object lists).
pub fn negotiate_geo_csv(headers: &HeaderMap, pretty: bool) -> ApiResult<Negotiated> {
    negotiate_with(
        headers,
        pretty,
        Extra {
            geojson: true,
            csv: true,
        },
    )
}

fn negotiate_with(headers: &HeaderMap, pretty: bool, extra: Extra) -> ApiResult<Negotiated> {
    // No `Accept` and no suffix (most programs' requests): the answer for an empty request,
    // worked out once by the rules below (negotiating it per request was a sixth of a
    // `/posisjon` handler).
    // (a walk over the few headers of such a request, cheaper than two hashed look-ups)
    if !headers
        .keys()
        .any(|name| name == header::ACCEPT || name == SUFFIX_FORMAT)
    {
        // Not mutable state: the fixed answer of the rules to an empty request, worked out once.
        static PLAIN: [std::sync::OnceLock<Option<Negotiated>>; 4] = [
            std::sync::OnceLock::new(),
            std::sync::OnceLock::new(),
            std::sync::OnceLock::new(),
            std::sync::OnceLock::new(),
        ];
        let plain = PLAIN[usize::from(extra.geojson) + 2 * usize::from(extra.csv)]
            .get_or_init(|| negotiate_by_rules(&HeaderMap::new(), false, extra).ok());
        if let Some(n) = plain {
            return Ok(Negotiated { pretty, ..*n });
        }
    }
    negotiate_by_rules(headers, pretty, extra)
}

fn negotiate_by_rules(headers: &HeaderMap, pretty: bool, extra: Extra) -> ApiResult<Negotiated> {
    let geojson = extra.geojson;
    let suffix = match headers.get(&SUFFIX_FORMAT).map(|v| v.as_bytes()) {
        Some(b"xml") => Some((Format::Xml, false)),
        Some(b"json") => Some((Format::Json, false)),
        Some(b"geojson") if geojson => Some((Format::Json, true)),
        Some(b"csv") if extra.csv => return Ok(csv_answer(pretty)),
        Some(b"csv") => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                4001,
                "CSV (.csv) støttes ikke for denne ressursen",
            ))
        }
        Some(b"geojson") => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                4001,
                "GeoJSON (.geojson) støttes ikke for denne ressursen",
            ))
        }
        _ => None,
    };
    // no Accept (or an unreadable one) is JSON
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    // the first understood range decides (clients list what they want first); with a suffix,
    // the first range of that format gives the revision
    let mut ranges = accept.split(',').filter_map(|r| range_of(r, extra));
    let chosen = match suffix {
        Some((f, geo)) => ranges
            .find(|r| r.format == f && !r.wildcard && r.geojson == geo)
            .or(Some(Range {
                format: f,
                wildcard: false,
                revision: Some(NEWEST_REVISION),
                vendor: false,
                geojson: geo,
                csv: false,
            })),
        None => {
            // a wildcard (e.g. a browser's trailing `*/*`) must not hide a specific type
            let first = ranges.next();
            match first {
                Some(ref r) if r.wildcard => ranges.find(|r| !r.wildcard).or(first),
                other => other,
            }
        }
    };
    let Some(r) = chosen else {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            4001,
            format!("Mediatypen støttes ikke: {accept}. Bruk application/json, application/xml eller application/vnd.vegvesen.nvdb-v2[-revN]+json|+xml"),
        ));
    };
    // the XML root's name; JSON has none
    let resource = match r.format {
        Format::Xml => headers
            .get(&RESOURCE_PATH)
            .and_then(|v| v.to_str().ok())
            .map(Resource::from_path)
            .unwrap_or(DEFAULT_RESOURCE),
        Format::Json => DEFAULT_RESOURCE,
    };
    Ok(Negotiated {
        revision: r.revision.unwrap_or(0),
        pretty,
        format: r.format,
        vendor: r.vendor,
        plain_vendor: r.vendor && r.revision.is_none(),
        resource,
        geojson: r.geojson,
        csv: r.csv,
    })
}

/// What a CSV answer is negotiated as (its content type is `api::csv::TEXT_CSV`).
fn csv_answer(pretty: bool) -> Negotiated {
    Negotiated {
        csv: true,
        ..Negotiated::default_json(pretty)
    }
}

fn with_type(bytes: Vec<u8>, ct: HeaderValue) -> Response {
    let mut r = Response::new(axum::body::Body::from(bytes));
    // room for what the stack adds (Vary, ETag, Cache-Control, request id, Server, CORS) in one
    // allocation: a map grown from its default size is rehashed on the way
    *r.headers_mut() = HeaderMap::with_capacity(RESPONSE_HEADERS);
    r.headers_mut().insert(header::CONTENT_TYPE, ct);
    r
}

/// Header slots a read answer is made with (what the request stack adds fits).
const RESPONSE_HEADERS: usize = 12;

fn internal(e: impl std::fmt::Display) -> Response {
    ApiError::from(crate::error::EngineError::Internal(e.to_string())).into_response()
}

/// The response in the negotiated format; the XML root is named by the request's resource.
pub fn json<T: Serialize + ?Sized>(n: Negotiated, value: &T) -> Response {
    respond_root(n, n.resource.root(), value)
}

/// As [`json`], named for what it is.
pub fn respond<T: Serialize + ?Sized>(n: Negotiated, value: &T) -> Response {
    json(n, value)
}

/// The response with an explicit XML root name (where the path does not name the resource,
/// e.g. `egenskapstype` under `/vegobjekttyper/{id}/{egenskapstype}`).
pub fn respond_named<T: Serialize + ?Sized>(n: Negotiated, root: &str, value: &T) -> Response {
    respond_root(n, XmlRoot::named(root), value)
}

fn respond_root<T: Serialize + ?Sized>(n: Negotiated, root: XmlRoot<'_>, value: &T) -> Response {
    match render_bytes(n, root, value) {
        Ok(bytes) => with_type(bytes, n.content_type()),
        Err(e) => internal(e),
    }
}

/// Why a body could not be rendered (a bug on our side: the values are ours).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Xml(#[from] xml::XmlError),
}

/// A handler's answer, which may still be a body of compact JSON with its content type: the
/// general path makes it a response (`into_response`), while the request stack's direct route
/// sends that body with its prepared header set, so the usual answer builds no header map of
/// its own.
pub enum Answer {
    Json {
        content_type: HeaderValue,
        body: Vec<u8>,
    },
    Response(Response),
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        match self {
            Answer::Json { content_type, body } => with_type(body, content_type),
            Answer::Response(r) => r,
        }
    }
}

impl From<Response> for Answer {
    fn from(r: Response) -> Answer {
        Answer::Response(r)
    }
}

/// Compact JSON the handler wrote itself, as a response (see [`Negotiated::compact_json`]).
pub fn json_body(n: Negotiated, body: Vec<u8>) -> Response {
    with_type(body, n.content_type())
}

/// Compact JSON the handler wrote itself (see [`Negotiated::compact_json`]).
pub fn json_text(n: Negotiated, text: String) -> Answer {
    Answer::Json {
        content_type: n.content_type(),
        body: text.into_bytes(),
    }
}

/// As [`respond`], kept as an [`Answer`]: compact JSON stays a body with its type.
pub fn answer<T: Serialize + ?Sized>(n: Negotiated, value: &T) -> Answer {
    if !n.compact_json() {
        return Answer::Response(respond(n, value));
    }
    match render_bytes(n, n.resource.root(), value) {
        Ok(body) => Answer::Json {
            content_type: n.content_type(),
            body,
        },
        Err(e) => Answer::Response(internal(e)),
    }
}

/// The bytes of a response body in the negotiated format (also each chunk of a streamed page,
/// the page streaming of `api::stream`).
pub fn render_bytes<T: Serialize + ?Sized>(
    n: Negotiated,
    root: XmlRoot<'_>,
    value: &T,
) -> Result<Vec<u8>, RenderError> {
    match n.format {
        Format::Json if n.pretty => Ok(serde_json::to_vec_pretty(value)?),
        Format::Json => {
            // one allocation for a typical small answer (a position is ~300 bytes)
            let mut out = Vec::with_capacity(512);
            serde_json::to_writer(&mut out, value)?;
            Ok(out)
        }
        Format::Xml => Ok(xml::to_xml(root, value, n.pretty, XmlStyle::default())?),
    }
}

#[cfg(test)]
mod tests;
