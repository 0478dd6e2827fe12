//! The query parameters of the read handlers as OpenAPI parameters: `query_params!` turns the
//! name list a handler passes to `api::begin` into a `utoipa::IntoParams` type for its
//! `#[utoipa::path]`, and [`query_parameter`] types and describes each name once, as its parser
//! reads it. Below the handlers (they name it); `api::openapi` checks the bounds against them.

use serde_json::{json, Value};

/// `/posisjon`'s bounds (`read::posisjon::MAX_DISTANCE_M`, `MAX_COUNT`; `api::openapi`'s tests
/// check they are equal).
pub const MAX_DISTANCE_M: i64 = 100_000;
pub const MAX_COUNT: i64 = 1000;

/// Declares the query parameters of a handler as a `utoipa::IntoParams` type for its
/// `#[utoipa::path(params(..))]`, from the very name lists the handler passes to `api::begin`
/// (so the document names exactly the parameters the handler accepts, plus `pretty`, accepted
/// everywhere). `inkluder` names the word list the handler checks `inkluder` against.
///
/// ```ignore
/// query_params!(ListQuery = [FILTERS, LIST_ONLY], inkluder = INKLUDER);
/// ```
#[macro_export]
macro_rules! query_params {
    ($(#[$m:meta])* $name:ident = [$($list:expr),* $(,)?] $(, inkluder = $ink:expr)?) => {
        $(#[$m])*
        pub struct $name;
        impl utoipa::IntoParams for $name {
            fn into_params(
                _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
            ) -> Vec<utoipa::openapi::path::Parameter> {
                #[allow(unused_mut, unused_assignments)]
                let mut inkluder: &[&str] = &[];
                $(inkluder = $ink;)?
                $crate::api::query_doc::query_parameters(&[$($list),*], inkluder)
            }
        }
    };
}

/// The parameters of the given name lists (and `pretty`) as OpenAPI parameters, each typed by
/// [`query_parameter`]; a name without a description there is documented as a plain string
/// (a test fails on it).
pub fn query_parameters(
    lists: &[&[&str]],
    inkluder: &[&str],
) -> Vec<utoipa::openapi::path::Parameter> {
    let names = lists
        .iter()
        .flat_map(|l| l.iter())
        .chain(super::params::COMMON);
    names
        .filter_map(|name| {
            let (schema, description, required) = query_parameter(name, inkluder)
                .unwrap_or_else(|| (json!({"type": "string"}), "", false));
            let mut p = json!({"name": name, "in": "query", "required": required,
                "description": description, "schema": schema});
            if schema_is_array(&p["schema"]) {
                p["style"] = json!("form");
                p["explode"] = json!(true);
            }
            serde_json::from_value(p).ok()
        })
        .collect()
}

crate::query_params!(
    /// The query of an operation that takes no parameter of its own (only `pretty`).
    NoQuery = []
);

fn schema_is_array(s: &Value) -> bool {
    s["type"] == "array"
}

/// `srid` values the parser accepts (`geo::srid::Srid::parse`; a test checks each).
pub const SRIDS: &[&str] = &[
    "32633", "25833", "5973", "6173", "4326", "25832", "25835", "utm33", "wgs84",
];

/// Type, description and requiredness of a query parameter's documentation.
type ParameterDoc = (Value, &'static str, bool);

/// Type, description and requiredness of every query parameter a read handler accepts, as its
/// parser reads it. `inkluder`: the words of the handler's `inkluder`.
pub fn query_parameter(name: &str, inkluder: &[&str]) -> Option<ParameterDoc> {
    output_parameter(name, inkluder)
        .or_else(|| filter_parameter(name))
        .or_else(|| paging_parameter(name))
        .or_else(|| position_parameter(name))
}

/// The parameters that shape the answer: format, coordinate system, parts, geometry.
fn output_parameter(name: &str, inkluder: &[&str]) -> Option<ParameterDoc> {
    // an empty item (`inkluder=`) is ignored by the parser, so it is a valid value too
    let words = |w: &[&str]| {
        let mut values: Vec<&str> = w.to_vec();
        values.push("");
        json!({"type": "array", "items": {"type": "string", "enum": values}})
    };
    Some(match name {
        "pretty" => (
            json!({"type": "boolean", "default": false}),
            "Indent the answer (JSON and XML)",
            false,
        ),
        "srid" => (
            json!({"type": "string", "enum": SRIDS, "default": "32633"}),
            "Coordinate system of geometries in the answer and of coordinates in the request: 32633/utm33 (UTM 33N WGS 84, default), 25833, 5973, 6173, 25832, 25835, 4326/wgs84",
            false,
        ),
        "inkluder" => (
            words(inkluder),
            "Parts to include; repeat the parameter or give a comma list",
            false,
        ),
        "inkludergeometri" => (
            words(super::object_json::INKLUDERGEOMETRI),
            "Which geometry an object carries: egenskap (its own), utledet (from its placement), lokasjon, ingen",
            false,
        ),
        "geometritoleranse" => (
            json!({"type": "integer", "minimum": 1, "maximum": 10000}),
            "Simplify geometries to this tolerance in meters (10, 20 or 30 in v2); simplified ones carry forenklet: true",
            false,
        ),
        "segmentering" => (
            json!({"type": "boolean", "default": true}),
            "Cut stretches to the area filters (true) or return whole objects (false)",
            false,
        ),
        "gruppering" => (
            json!({"type": "string", "pattern": "^[a-z]+(\\([0-9]{1,9}\\))?(,[a-z]+(\\([0-9]{1,9}\\))?)*$"}),
            "What to group by, comma list of at most 4 different ones: fylke, kommune, region, vegavdeling, kontraktsomrade, vegkategori, vegfase, typeveg, and on objects egenskap(<egenskapstype id>) of an enumerated property. One row per group with objects (rows), sorted by key",
            true,
        ),
        _ => return None,
    })
}

/// The filters of the object and network lists (areas, roads, extents, properties).
fn filter_parameter(name: &str) -> Option<ParameterDoc> {
    let number_list = json!({"type": "string", "pattern": "^([0-9]{1,9}(,[0-9]{1,9})*)?$"});
    Some(match name {
        "region" | "fylke" | "vegavdeling" | "kommune" => (
            number_list,
            "Area numbers, comma list (or repeated); objects in any of them",
            false,
        ),
        "kategori" => (number_list, "Category ids, comma list", false),
        "kontraktsomrade" => (
            json!({"type": "string"}),
            "Contract area names (or numbers), comma list",
            false,
        ),
        "riksvegrute" => (
            json!({"type": "string"}),
            "National route names, comma list",
            false,
        ),
        "vegreferanse" => (
            json!({"type": "string"}),
            "Road references, comma list, e.g. Ev6 or 5000Ev6hp1m500 (on /veg: one fully qualified point)",
            false,
        ),
        "veglenke" => (
            json!({"type": "string"}),
            "Road link positions: id, pos@id or from-to@id (comma list); not together with the area filters",
            false,
        ),
        "rute" => (
            json!({"type": "string"}),
            "The objects along a route: its segments' link intervals (from-to@id, comma list, e.g. the kortform of each segment of /vegnett/rute), at most 5,000; combines with every other filter, and with segmentering stretch objects are measured on their part inside the intervals (a link passed twice counts once)",
            false,
        ),
        "kartutsnitt" => (
            json!({"type": "string",
                "pattern": "^-?[0-9]{1,6}(\\.[0-9]{1,3})?(,-?[0-9]{1,6}(\\.[0-9]{1,3})?){3}$"}),
            "Map extent xmin,ymin,xmax,ymax in the request's srid",
            false,
        ),
        "polygon" => (
            json!({"type": "string"}),
            "Polygon in the request's srid: WKT POLYGON or MULTIPOLYGON, or a plain coordinate list x1 y1, x2 y2, ... (one ring, closed if not); an object is in when its geometry (own, else located) intersects it, and stretch objects are cut to it with segmentering; at most 2,000 vertices and 3,000 km across; every ring simple (crossing or touching itself nowhere) with three distinct vertices, rings meeting each other at points at most, holes inside their exterior and apart, parts not overlapping, and an area (else 422/4011); the whole address is limited to 64,000 bytes (414)",
            false,
        ),
        "ider" => (
            json!({"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 1000}),
            "Object ids, comma list, at most 1,000 (more is 422/4003)",
            false,
        ),
        "endret_etter" => (
            json!({"type": "string"}),
            "Objects last modified after this time (the forms of /endringer's etter: ISO 8601 with offset, YYYY-MM-DD HH:MM:SS, YYYY-MM-DD HH:MM or YYYY-MM-DD at +02:00)",
            false,
        ),
        "egenskap" => (
            json!({"type": "string"}),
            "Property filter, e.g. 2021=2738, egenskap(2021) in [2738,2741], (2021>=50 AND 2021<=80). On /vegnett/segmentert: typeId(filter), once per type of typer (repeat the parameter for several types): only that type's passing objects cover pieces",
            false,
        ),
        "typer" => (
            json!({"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1, "maxItems": 10}),
            "/vegnett/segmentert: the object types overlaid (1 to 10 type ids, each once, comma list); required",
            true,
        ),
        "egenskaper" => (
            json!({"type": "string"}),
            "/vegnett/segmentert: which values each type's objects carry, typeId(property type ids) comma-separated, e.g. 105(2021),540(4623,4624); typeId() carries none; a type not named carries all its value properties",
            false,
        ),
        "kun_dekket" => (
            json!({"type": "boolean", "default": false}),
            "/vegnett/segmentert: keep only the pieces every type of typer covers",
            false,
        ),
        "overlapp" => (
            json!({"type": "string"}),
            "Objects overlapping objects of another type: typeId or typeId(filter); repeatable, AND-ed",
            false,
        ),
        _ => return network_attribute_parameter(name),
    })
}

/// The network attributes of LES v4 (`query::attributes`, parsed in `read::network_attributes`): on `/vegnett/lenker` they
/// select rows; on the object lists and statistikk an object qualifies by a placement on a
/// passing row and stretches are cut to those rows (with `segmentering`, the default).
fn network_attribute_parameter(name: &str) -> Option<ParameterDoc> {
    use crate::query::attributes::{ROAD_TYPE_NAMES, TRAFFIC_GROUP_NAMES};
    use crate::snapshot::columns::{DETAIL_LEVEL_SHORT, SEPARATE_CARRIAGEWAYS};
    let list =
        |values: Vec<&str>| json!({"type": "array", "items": {"type": "string", "enum": values}});
    Some(match name {
        "typeveg" => (
            list(ROAD_TYPE_NAMES.iter().map(|(n, _)| *n).collect()),
            "Type of road (typeVeg) of the network rows, comma list, any case (LES v4's values; vegdb's data holds enkelBilveg, kanalisertVeg, rampe, rundkjøring, gangOgSykkelveg, bilferje and gatetun, the others match nothing)",
            false,
        ),
        "detaljniva" => (
            list(DETAIL_LEVEL_SHORT.to_vec()),
            "Detail level (detaljnivå) of the network rows, comma list, any case: VT vegtrasé, KB kjørebane, KF kjørefelt, VTKB vegtrasé og kjørebane (KOSTRA-style counts use VT,VTKB)",
            false,
        ),
        "trafikantgruppe" => (
            list(TRAFFIC_GROUP_NAMES.to_vec()),
            "Road user group (trafikantgruppe) of the network rows: K (motor traffic) or G (pedestrians and cyclists); comma list, any case",
            false,
        ),
        "adskiltelop" => (
            list(SEPARATE_CARRIAGEWAYS.to_vec()),
            "Separate carriageways (adskilte løp) of the network rows, comma list, any case: Med, Mot, Nei (med,nei counts a road with separate carriageways once)",
            false,
        ),
        "sideanlegg" => (
            json!({"type": "boolean"}),
            "true: only network rows of side facilities (sideanlegg: rest areas, parking); false: none of them",
            false,
        ),
        "vegsystemreferanse" => (
            json!({"type": "string"}),
            "Road system references (vegsystemreferanse, LES v3's form), comma list, any case, spaces optional: EV6, E6 (any phase), EV6S1, FV911S1-2 (strekning 1 to 2), EV6S1D1, EV6S1D1m200, EV6S1D1m0-500 (rows whose metres overlap), each optionally after a four-digit kommune number (5001 KV1234S1D1); at most 1,000 (422/4006); a malformed one is 422/4005. On /veg: one point (category, number, S, D and m), answered like vegreferanse",
            false,
        ),
        _ => return None,
    })
}

/// Paging, depth, and the ids and times of single-object and change lookups.
fn paging_parameter(name: &str) -> Option<ParameterDoc> {
    Some(match name {
        "antall" => (
            json!({"type": "integer", "minimum": 1, "maximum": 1_000_000_000, "default": 1000}),
            "Page size (larger values are clamped to 10,000)",
            false,
        ),
        "start" => (
            json!({"type": "string", "pattern": "^[0-9a-f]{48}$"}),
            "Cursor: the metadata.neste.start of the previous page",
            false,
        ),
        "dybde" => (
            json!({"type": "string", "pattern": "^([1-9][0-9]{0,2}|full)$"}),
            "Also the object's descendants to this depth (1, 2, …, or full); the answer is then a list",
            false,
        ),
        "id" => (
            json!({"type": "integer", "minimum": 0, "maximum": i64::MAX}),
            "Road object id",
            true,
        ),
        "type" => (
            json!({"type": "string", "enum": ["endret", "slettet"]}),
            "endret: objects changed after `etter`; slettet: ids of objects closed after it",
            true,
        ),
        "tidspunkt" => (
            json!({"type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}),
            "The day to answer as the data was then (YYYY-MM-DD): the versions valid that day (start <= day < end) and the road network of that day; a day before the data answers nothing, today or later answers today's state. 422/4007 for another form. The first request for a day builds that day's view (an index build of what differs from today); the server keeps the views of its last 4 days",
            false,
        ),
        "alle_versjoner" => (
            json!({"type": "boolean", "default": false}),
            "Every version of every object (current and closed, each with its own metadata.versjon, startdato, sluttdato), in (id, versjon) order, paged by version; not together with the filters or tidspunkt (422/4009)",
            false,
        ),
        "etter" => (
            json!({"type": "string", "format": "date"}),
            "Time: ISO 8601 with offset, 'YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DD HH:MM' or 'YYYY-MM-DD' (+02:00)",
            true,
        ),
        _ => return None,
    })
}

/// The positions of `/posisjon` and `/veg`.
fn position_parameter(name: &str) -> Option<ParameterDoc> {
    Some(match name {
        "nord" | "ost" => (
            json!({"type": "number"}),
            "Northing / easting in the request's srid (give both, or lat and lon)",
            false,
        ),
        "lat" | "lon" => (
            json!({"type": "number"}),
            "Latitude / longitude in WGS 84 (give both, or nord and ost)",
            false,
        ),
        "maks_avstand" => (
            json!({"type": "integer", "minimum": 0,
                "maximum": MAX_DISTANCE_M, "default": 30}),
            "Search radius in meters",
            false,
        ),
        "maks_antall" => (
            json!({"type": "integer", "minimum": 1,
                "maximum": MAX_COUNT, "default": 1}),
            "Number of positions, nearest first",
            false,
        ),
        "detaljerte_lenker" => (
            json!({"type": "boolean", "default": false}),
            "Also consider detailed links (on /vegnett/rute: route along the carriageways and lanes instead of the road trace)",
            false,
        ),
        "konnekteringslenker" => (
            json!({"type": "boolean"}),
            "On /posisjon: also consider connection links (default false). On /vegnett/rute: whether the route may use connection links (default true). On /vegnett/lenker, the object lists and statistikk: false leaves connection links (konnekteringslenker) out, objects then qualify only by placements on other rows; true or absent keeps them",
            false,
        ),
        "vegreferanser" => (
            json!({"type": "string"}),
            "Road reference points, comma list (at most 1,000)",
            false,
        ),
        "veglenker" => (
            json!({"type": "string"}),
            "Link positions <posisjon>@<veglenkeid>, comma list (at most 1,000)",
            false,
        ),
        "vegsystemreferanser" => (
            json!({"type": "string"}),
            "Road system reference points (EV6S1D1m200), comma list (at most 1,000)",
            false,
        ),
        _ => return None,
    })
}
