//! What a request is, from its path alone, decided once per request: the one place where the
//! request path is matched against the service's path strings. [`classify`] gives a
//! [`RequestClass`]: the API it belongs to (read, write, login, monitoring, OGC, tiles, the
//! landing page), its metrics label, its format suffix, whether it may be shed, whether its
//! answer is cacheable for a generation, and its direct route. The request stack
//! (`api::stack`: metrics, shedding, rate limit, entity tags, suffix rewrite, direct routes),
//! the guard (which error shape), the forwarder (which requests belong to the writer) and the
//! server's head checks read the class; none of them compares path strings itself.
//!
//! The cost: byte compares of the path's first segment and its end, no allocation;
//! `router::tests` walks every mounted route through it, so a new route cannot get a wrong
//! label, class or caching silently.

use crate::metrics::RouteLabel;

/// Base path of the read API.
pub const READ_BASE: &str = "/nvdb/api/v2";
/// The canonical write base and its aliases.
pub const WRITE_BASE: &str = "/nvdb/apiskriv/rest/v2";
pub const WRITE_ALIASES: [&str; 2] = ["/nvdb/apiskriv/v2", "/registry/apiskriv/rest/v2"];
/// The OpenAM login and logout (the write API's sessions).
pub const LOGIN_BASE: &str = "/openam";
/// Where the metrics are served (outside both APIs).
pub const METRICS_PATH: &str = "/metrics";
/// Liveness and readiness.
pub const HEALTH_PATH: &str = "/health";
pub const READY_PATH: &str = "/ready";
/// OGC API Features and the vector tiles (with their map page).
pub const OGC_BASE: &str = "/ogc";
pub const TILES_BASE: &str = "/tiles";
pub const MAP_PATH: &str = "/kart";

/// The part of the service a request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// Under [`READ_BASE`] (a plain prefix, as the suffix rewrite and the labels always took it).
    Read,
    /// Under [`WRITE_BASE`] or one of [`WRITE_ALIASES`] (the base itself or below a `/`).
    Write,
    /// Under [`LOGIN_BASE`].
    Login,
    /// `/metrics`, `/health`, `/ready`: never shed nor rate-limited, so monitoring sees an
    /// overloaded server.
    Monitoring,
    /// Under [`OGC_BASE`].
    Ogc,
    /// Under [`TILES_BASE`] or [`MAP_PATH`].
    Tiles,
    /// `/` (the landing page; with `X-OpenAM-Username`, the nvdbapi-V2 login).
    Landing,
    /// Nothing mounted answers it (404).
    Unknown,
}

/// A read-API format suffix (`/vegobjekttyper.json`): the suffix wins over `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suffix {
    Geojson,
    Json,
    Xml,
    /// CSV, for the tables that have it (`api::csv`).
    Csv,
}

impl Suffix {
    /// The suffix's text without its dot, as the media negotiation reads it.
    pub fn name(self) -> &'static str {
        match self {
            Suffix::Geojson => "geojson",
            Suffix::Json => "json",
            Suffix::Xml => "xml",
            Suffix::Csv => "csv",
        }
    }
}

/// A read route answered without the router (`api::stack::direct`), when the rest of the
/// request allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direct {
    /// `/posisjon`
    Position,
    /// `/veg`
    Road,
    /// `/vegobjekter/{type}/statistikk` with a type of digits only (see [`statistics_type`]).
    Statistics,
}

/// Everything the request stack decides from a request's path (see the module's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestClass {
    pub api: Api,
    /// The metrics label (of the path without its format suffix).
    pub label: RouteLabel,
    /// The read API's format suffix, stripped before routing.
    pub suffix: Option<Suffix>,
    /// Whether a read answer is the same for the whole of a generation (`ETag`,
    /// `Cache-Control`, 304s): the read API but `/status`, which reports more than the data.
    pub cacheable: bool,
    /// The direct route of the exact path (no suffix).
    pub direct: Option<Direct>,
    /// Whether the read route answers at a past day (`tidspunkt`, `api::dated`): the stack
    /// resolves the day's generation before the routes when the query names one.
    pub dated: bool,
}

impl RequestClass {
    /// Whether errors are the write API's faults.
    pub fn is_write(&self) -> bool {
        self.api == Api::Write
    }
    /// Whether the request may be shed (in-flight limit) or rate-limited: all but monitoring.
    pub fn may_be_shed(&self) -> bool {
        self.api != Api::Monitoring
    }
    /// Whether the request is the metrics scrape (answered by the stack itself).
    pub fn is_metrics(&self) -> bool {
        self.label == RouteLabel::Metrics
    }
}

/// `path` below `base`: the base itself or under it after a `/`.
fn under(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The class of a request path as it arrived (with its format suffix, if any).
pub fn classify(path: &str) -> RequestClass {
    if let Some(below) = path.strip_prefix(READ_BASE) {
        return classify_read(below);
    }
    let api = if WRITE_BASE_AND_ALIASES.iter().any(|b| under(path, b)) {
        Api::Write
    } else if under(path, LOGIN_BASE) {
        Api::Login
    } else if path == METRICS_PATH || path == HEALTH_PATH || path == READY_PATH {
        Api::Monitoring
    } else if under(path, OGC_BASE) {
        Api::Ogc
    } else if under(path, TILES_BASE) || under(path, MAP_PATH) {
        Api::Tiles
    } else if path == "/" {
        Api::Landing
    } else {
        Api::Unknown
    };
    let label = if path.starts_with("/nvdb/apiskriv/") || path.starts_with("/registry/apiskriv/") {
        RouteLabel::Write
    } else if path.starts_with("/openam/") {
        RouteLabel::Login
    } else if path == METRICS_PATH {
        RouteLabel::Metrics
    } else {
        RouteLabel::Other
    };
    RequestClass {
        api,
        label,
        suffix: None,
        cacheable: false,
        direct: None,
        dated: false,
    }
}

const WRITE_BASE_AND_ALIASES: [&str; 3] = [WRITE_BASE, WRITE_ALIASES[0], WRITE_ALIASES[1]];

/// A read-API path: `below` is what follows [`READ_BASE`].
fn classify_read(below: &str) -> RequestClass {
    let (resource, suffix) = split_suffix(below);
    let direct = match (resource, suffix) {
        (_, Some(_)) => None,
        ("/posisjon", None) => Some(Direct::Position),
        ("/veg", None) => Some(Direct::Road),
        (r, None) if statistics_type(r).is_some() => Some(Direct::Statistics),
        _ => None,
    };
    let label = read_label(resource);
    RequestClass {
        api: Api::Read,
        label,
        suffix,
        cacheable: resource != "/status",
        direct,
        dated: dated(resource, label),
    }
}

/// Whether a read resource (below [`READ_BASE`], without its suffix, of this label) takes
/// `tidspunkt`: the object lists, statistics, single objects and their properties, the
/// network's links, `/veg`, `/veg/batch` and `/posisjon` (not the list of object kinds nor
/// `endringer`, whose handlers refuse the parameter).
fn dated(resource: &str, label: RouteLabel) -> bool {
    match label {
        RouteLabel::Road | RouteLabel::RoadBatch | RouteLabel::Position => true,
        RouteLabel::Network => {
            resource.starts_with("/vegnett/lenker")
                || resource.starts_with("/vegnett/segmentert")
                || resource.starts_with("/vegnett/statistikk")
                || resource == "/vegnett/rute"
        }
        RouteLabel::Objects => {
            // {type}, {type}/statistikk, {type}/{id}, {type}/{id}/egenskaper[/{egenskapstype}],
            // {type}/statistikk/gruppert, and statistikk (every type)
            let rest = resource
                .trim_start_matches("/vegobjekter")
                .trim_matches('/');
            let mut segments = rest.split('/');
            match (segments.next(), segments.next(), segments.next()) {
                (Some(""), _, _) => false,
                (Some(_), Some("endringer"), None) => false,
                (Some(_), _, None) => true,
                (Some(_), Some("statistikk"), Some("gruppert")) => segments.next().is_none(),
                (Some(_), Some(_), Some(third)) => third == "egenskaper",
                _ => false,
            }
        }
        _ => false,
    }
}

/// The resource and format suffix of a read path below [`READ_BASE`] (`/openapi.json` is the
/// document's name, not a suffix).
pub fn split_suffix(below: &str) -> (&str, Option<Suffix>) {
    if below == "/openapi.json" {
        return (below, None);
    }
    if let Some(p) = below.strip_suffix(".geojson") {
        (p, Some(Suffix::Geojson))
    } else if let Some(p) = below.strip_suffix(".json") {
        (p, Some(Suffix::Json))
    } else if let Some(p) = below.strip_suffix(".xml") {
        (p, Some(Suffix::Xml))
    } else if let Some(p) = below.strip_suffix(".csv") {
        (p, Some(Suffix::Csv))
    } else {
        (below, None)
    }
}

/// The resource a read path names (`below` [`READ_BASE`], of this class, without its suffix):
/// the XML root's name. None for the OpenAPI document, which is not a resource.
pub fn xml_resource<'p>(below: &'p str, class: &RequestClass) -> Option<&'p str> {
    if class.suffix.is_none() && below == "/openapi.json" {
        return None;
    }
    let cut = class.suffix.map_or(0, |s| s.name().len() + 1);
    below.get(..below.len().checked_sub(cut)?)
}

/// The metrics label of a read resource (below [`READ_BASE`], without its suffix): its first
/// segment.
fn read_label(below: &str) -> RouteLabel {
    let Some(rest) = below.strip_prefix('/') else {
        return RouteLabel::ReadOther;
    };
    let segment = rest.split('/').next().unwrap_or("");
    match segment {
        "vegobjekttyper" => RouteLabel::ObjectTypes,
        "omrader" => RouteLabel::Areas,
        "status" => RouteLabel::Status,
        "veg" if below.starts_with("/veg/batch") => RouteLabel::RoadBatch,
        "veg" => RouteLabel::Road,
        "posisjon" => RouteLabel::Position,
        "vegnett" => RouteLabel::Network,
        "vegobjekter" => RouteLabel::Objects,
        "vegobjekt" => RouteLabel::Object,
        "openapi.json" => RouteLabel::OpenApi,
        _ => RouteLabel::ReadOther,
    }
}

/// The type id of `/vegobjekter/{type}/statistikk` (below [`READ_BASE`]) when it is digits
/// only (the router's path parameter would be percent-decoded: such paths go the general way).
pub fn statistics_type(below: &str) -> Option<&str> {
    let tid = below
        .strip_prefix("/vegobjekter/")?
        .strip_suffix("/statistikk")?;
    (!tid.is_empty() && tid.bytes().all(|b| b.is_ascii_digit())).then_some(tid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_the_fixed_labels() {
        let cases = [
            ("/nvdb/api/v2/posisjon", "/nvdb/api/v2/posisjon"),
            ("/nvdb/api/v2/veg", "/nvdb/api/v2/veg"),
            ("/nvdb/api/v2/veg/batch", "/nvdb/api/v2/veg/batch"),
            ("/nvdb/api/v2/vegobjekter/105/", "/nvdb/api/v2/vegobjekter*"),
            ("/nvdb/api/v2/vegobjekt", "/nvdb/api/v2/vegobjekt"),
            (
                "/nvdb/api/v2/vegobjekttyper/105",
                "/nvdb/api/v2/vegobjekttyper*",
            ),
            ("/nvdb/api/v2/nothing/here", "/nvdb/api/v2/*"),
            ("/nvdb/api/v2", "/nvdb/api/v2/*"),
            ("/nvdb/apiskriv/rest/v2/endringssett", "/nvdb/apiskriv/*"),
            ("/openam/json/authenticate", "/openam/*"),
            ("/metrics", "/metrics"),
            ("/x/y/z", "other"),
            // the label is the resource's, without its format suffix
            ("/nvdb/api/v2/status.json", "/nvdb/api/v2/status"),
            (
                "/nvdb/api/v2/vegobjekttyper.xml",
                "/nvdb/api/v2/vegobjekttyper*",
            ),
            ("/nvdb/api/v2/openapi.json", "/nvdb/api/v2/openapi.json"),
        ];
        for (path, label) in cases {
            assert_eq!(classify(path).label.label(), label, "{path}");
        }
    }

    #[test]
    fn write_paths_are_the_bases_and_below() {
        for p in [
            "/nvdb/apiskriv/rest/v2",
            "/nvdb/apiskriv/rest/v2/endringssett",
            "/nvdb/apiskriv/v2/endringssett",
            "/registry/apiskriv/rest/v2/binaer",
        ] {
            assert!(classify(p).is_write(), "{p}");
        }
        for p in [
            "/nvdb/api/v2/status",
            "/nvdb/apiskriv/rest/v2x",
            "/openam/x",
        ] {
            assert!(!classify(p).is_write(), "{p}");
        }
    }

    #[test]
    fn suffixes_direct_routes_caching_and_shedding() {
        let c = classify("/nvdb/api/v2/vegobjekttyper.xml");
        assert_eq!((c.suffix, c.direct), (Some(Suffix::Xml), None));
        assert_eq!(
            classify("/nvdb/api/v2/x.geojson").suffix,
            Some(Suffix::Geojson)
        );
        assert_eq!(classify("/nvdb/api/v2/openapi.json").suffix, None);
        assert_eq!(
            classify("/nvdb/api/v2/vegnett/statistikk.csv").suffix,
            Some(Suffix::Csv)
        );
        assert_eq!(
            classify("/nvdb/api/v2/posisjon").direct,
            Some(Direct::Position)
        );
        assert_eq!(classify("/nvdb/api/v2/posisjon.json").direct, None);
        assert_eq!(classify("/nvdb/api/v2/veg").direct, Some(Direct::Road));
        assert_eq!(classify("/nvdb/api/v2/veg/").direct, None);
        let stats = "/nvdb/api/v2/vegobjekter/105/statistikk";
        assert_eq!(classify(stats).direct, Some(Direct::Statistics));
        assert_eq!(
            classify("/nvdb/api/v2/vegobjekter/1%30/statistikk").direct,
            None
        );
        assert!(classify("/nvdb/api/v2/vegobjekter/105").cacheable);
        for (path, dated) in [
            ("/vegobjekter/105", true),
            ("/vegobjekter/105/", true),
            ("/vegobjekter/105.geojson", true),
            ("/vegobjekter/105/statistikk", true),
            ("/vegobjekter/105/1", true),
            ("/vegobjekter/105/1/egenskaper", true),
            ("/vegobjekter/105/1/egenskaper/2021.xml", true),
            ("/vegobjekter/105/1/versjoner", false),
            ("/vegobjekter/105/1/2", false),
            ("/vegobjekter/105/endringer", false),
            ("/vegobjekter/105/statistikk/gruppert", true),
            ("/vegobjekter/105/statistikk/gruppert.csv", true),
            ("/vegobjekter/statistikk", true),
            ("/vegnett/statistikk", true),
            ("/vegnett/statistikk/gruppert.xml", true),
            ("/vegobjekter", false),
            ("/vegobjekter/", false),
            ("/posisjon", true),
            ("/veg", true),
            ("/veg/batch", true),
            ("/vegnett/lenker", true),
            ("/vegnett/lenker/1", true),
            ("/vegnett/segmentert", true),
            ("/vegnett/segmentert.csv", true),
            ("/vegnett/segmentert/statistikk", true),
            ("/vegnett/segmentert/statistikk.xml", true),
            ("/vegnett", false),
            ("/status", false),
            ("/vegobjekttyper/105", false),
        ] {
            assert_eq!(
                classify(&format!("{READ_BASE}{path}")).dated,
                dated,
                "{path}"
            );
        }
        assert!(!classify("/nvdb/api/v2/status").cacheable);
        assert!(!classify("/nvdb/api/v2/status.xml").cacheable);
        assert!(!classify("/health").cacheable);
        for p in ["/metrics", "/health", "/ready"] {
            assert!(!classify(p).may_be_shed(), "{p}");
        }
        assert!(classify("/metrics").is_metrics());
        assert!(classify("/nvdb/api/v2/status").may_be_shed());
        assert_eq!(classify("/openam").api, Api::Login);
        assert_eq!(classify("/openamx").api, Api::Unknown);
        assert_eq!(classify("/").api, Api::Landing);
    }
}
