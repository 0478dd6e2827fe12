//! The two OpenAPI documents, read (`/nvdb/api/v2/openapi.json`) and write
//! (`/nvdb/apiskriv/rest/v2/openapi.json`), built from the routes the routers mount:
//! every route is registered through utoipa-axum (`OpenApiRouter::routes(routes!(handler))`,
//! `api::read_route!` for the read API's full paths), so mounting a handler puts its
//! `#[utoipa::path]` into the document of the router that mounts it (`api::routes` builds both
//! documents from `split_for_parts`). What the annotations carry: path parameters, response
//! bodies (the handlers' own serde types, `ToSchema`), request bodies, tags. Query parameters
//! come from the same lists the handlers pass to `api::begin` ([`query_params!`]), typed and
//! described once in [`query_parameter`]. This module adds what applies to every operation:
//! the error statuses with the error body, the XML media type beside JSON, the security schemes.

use serde_json::{json, Value};
use utoipa::OpenApi;

use super::READ_BASE;

/// Extension on a path item mounted as an alias of another path (`api::alias`): such items
/// are left out of the served document.
pub const ALIAS_OF: &str = "x-vegdb-alias-of";

/// Routes served beside each API's documented operations that are not operations of the API
/// themselves: the document and its docs page (`api::docs`), relative to the API's base.
pub const META_PATHS: &[&str] = &["/openapi.json", "/docs", "/docs/{asset}"];

#[derive(OpenApi)]
#[openapi(
    info(title = "vegdb — NVDB API LES v2", description = "Read interface of the Norwegian road database, API version 2, as served by vegdb. Every answer is JSON (default) or XML (`Accept: application/xml`, or a `.xml` suffix on the path); `?pretty=true` indents it. Errors are a JSON array of `{code, message, help_url}`."),
    servers((url = "/nvdb/api/v2")),
    components(schemas(super::error::ErrorBody))
)]
pub struct ReadApiDoc;

/// The write interface (NVDB API SKRIV v2), served at `/nvdb/apiskriv/rest/v2/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(title = "vegdb — NVDB API SKRIV v2", description = "Write interface of the Norwegian road database, API version 2, as served by vegdb. Every request needs X-Client and credentials: `Authorization: Bearer <token>` or the `iPlanetDirectoryProOAM` cookie (a token from `vegdb user add`, or the `tokenId` of a login at `/openam/json/authenticate` on the server root). Bodies and answers are JSON or XML (namespace http://nvdb.vegvesen.no/apiskriv/domain/v2); errors are the fault entity."),
    servers((url = "/nvdb/apiskriv/rest/v2")),
    components(schemas(super::write::FaultDoc))
)]
pub struct WriteApiDoc;

/// The read document of the routes a router mounted (`api::read_routes`): full paths made
/// relative to the `servers` URL, aliases left out, then [`refine`]d.
pub fn served_read_json(routes: utoipa::openapi::OpenApi) -> String {
    let mut doc = ReadApiDoc::openapi();
    doc.merge(routes);
    served_json(doc, Api::Read)
}

/// The write document of the routes `write::routes` mounted.
pub fn served_write_json(routes: utoipa::openapi::OpenApi) -> String {
    let mut doc = WriteApiDoc::openapi();
    doc.merge(routes);
    served_json(doc, Api::Write)
}

/// Which interface a document describes: its error body differs.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Api {
    Read,
    Write,
}

fn served_json(doc: utoipa::openapi::OpenApi, api: Api) -> String {
    match served_value(doc, api) {
        Ok(v) => v.to_string(),
        Err(e) => {
            tracing::error!(error = %e, "OpenAPI document does not serialise");
            String::new()
        }
    }
}

/// The served document as a JSON value.
pub fn served_value(doc: utoipa::openapi::OpenApi, api: Api) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(doc)?;
    if let Some(paths) = v.get_mut("paths").and_then(Value::as_object_mut) {
        let all = std::mem::take(paths);
        for (path, item) in all {
            if item.get(ALIAS_OF).is_some() {
                continue;
            }
            let path = match path.strip_prefix(READ_BASE) {
                Some(rest) if api == Api::Read => rest.to_string(),
                _ => path,
            };
            paths.insert(path, item);
        }
    }
    refine(&mut v, api);
    Ok(v)
}

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
                $crate::api::openapi::query_parameters(&[$($list),*], inkluder)
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
const SRIDS: &[&str] = &[
    "32633", "25833", "5973", "6173", "4326", "25832", "25835", "utm33", "wgs84",
];

/// Type, description and requiredness of every query parameter a read handler accepts, as its
/// parser reads it. `inkluder`: the words of the handler's `inkluder`.
pub fn query_parameter(name: &str, inkluder: &[&str]) -> Option<(Value, &'static str, bool)> {
    let number_list = json!({"type": "string", "pattern": "^([0-9]{1,9}(,[0-9]{1,9})*)?$"});
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
        "kartutsnitt" => (
            json!({"type": "string",
                "pattern": "^-?[0-9]{1,6}(\\.[0-9]{1,3})?(,-?[0-9]{1,6}(\\.[0-9]{1,3})?){3}$"}),
            "Map extent xmin,ymin,xmax,ymax in the request's srid",
            false,
        ),
        "egenskap" => (
            json!({"type": "string"}),
            "Property filter, e.g. 2021=2738, egenskap(2021) in [2738,2741], (2021>=50 AND 2021<=80)",
            false,
        ),
        "overlapp" => (
            json!({"type": "string"}),
            "Objects overlapping objects of another type: typeId or typeId(filter); repeatable, AND-ed",
            false,
        ),
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
        "etter" => (
            json!({"type": "string", "format": "date"}),
            "Time: ISO 8601 with offset, 'YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DD HH:MM' or 'YYYY-MM-DD' (+02:00)",
            true,
        ),
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
                "maximum": super::read::posisjon::MAX_DISTANCE_M, "default": 30}),
            "Search radius in meters",
            false,
        ),
        "maks_antall" => (
            json!({"type": "integer", "minimum": 1,
                "maximum": super::read::posisjon::MAX_COUNT, "default": 1}),
            "Number of positions, nearest first",
            false,
        ),
        "konnekteringslenker" | "detaljerte_lenker" => (
            json!({"type": "boolean", "default": false}),
            "Also consider connection links / detailed links",
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
        _ => return None,
    })
}

/// The read API's error list as a named schema (the body `api::error` writes).
fn error_ref(api: Api) -> Value {
    match api {
        Api::Read => json!({"type": "array", "items": {"$ref": "#/components/schemas/ErrorBody"}}),
        Api::Write => json!({"$ref": "#/components/schemas/FaultDoc"}),
    }
}

/// The error statuses every operation can answer (besides those it documents itself).
fn error_statuses(api: Api) -> &'static [(&'static str, &'static str)] {
    match api {
        Api::Read => &[
            (
                "400",
                "The request could not be read (bad URL encoding, headers)",
            ),
            ("404", "Unknown id or path"),
            ("414", "The URL is longer than the limit"),
            ("415", "No supported media type in the Accept header"),
            ("422", "Invalid or unknown parameter"),
            (
                "503",
                "The request took longer than the server's time budget",
            ),
        ],
        Api::Write => &[
            ("400", "Invalid request or document"),
            ("401", "No or unknown credentials"),
            ("403", "The user lacks the right, or X-Client is missing"),
            ("404", "Unknown id"),
            ("413", "The body is larger than the limit"),
            ("415", "Unsupported Content-Type"),
            (
                "503",
                "The request took longer than the server's time budget",
            ),
            ("507", "The data directory's disk is full"),
        ],
    }
}

/// What applies to every operation of a document: the error statuses with the error body
/// (JSON and XML), the XML media type beside every JSON answer, the write API's security
/// schemes and its `X-Client` header.
fn refine(v: &mut Value, api: Api) {
    if api == Api::Write {
        // every write request authenticates by one of these (401 without)
        v["components"]["securitySchemes"] = json!({
            "bearer": {"type": "http", "scheme": "bearer",
                "description": "A user's token (`vegdb user add`) or a login session's tokenId"},
            "sso": {"type": "apiKey", "in": "cookie", "name": "iPlanetDirectoryProOAM",
                "description": "The OpenAM session cookie real v2 clients send"}});
        v["security"] = json!([{"bearer": []}, {"sso": []}]);
        // an empty upload is refused (400): a body has at least one byte
        if let Some(raw) = v["components"]["schemas"].get_mut("RawBytes") {
            raw["minLength"] = json!(1);
        }
    }
    let error = error_ref(api);
    let Some(paths) = v.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (_, item) in paths.iter_mut() {
        let Some(ops) = item.as_object_mut() else {
            continue;
        };
        for (_, op) in ops.iter_mut() {
            let Some(op) = op.as_object_mut() else {
                continue;
            };
            if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
                for p in params.iter_mut() {
                    bound_integer(p, api);
                }
            }
            if api == Api::Write {
                let params = op.entry("parameters").or_insert_with(|| json!([]));
                if let Some(params) = params.as_array_mut() {
                    params.push(json!({"name": "X-Client", "in": "header", "required": true,
                        "description": "Name of the calling application",
                        "schema": {"type": "string", "minLength": 1}}));
                }
            }
            let responses = op.entry("responses").or_insert_with(|| json!({}));
            let Some(responses) = responses.as_object_mut() else {
                continue;
            };
            for (code, description) in error_statuses(api) {
                let r = responses
                    .entry(code.to_string())
                    .or_insert_with(|| json!({"description": description}));
                if r.get("content").is_none() {
                    r["content"] = json!({"application/json": {"schema": error.clone()}});
                }
            }
            for (_, r) in responses.iter_mut() {
                add_xml(r);
            }
        }
    }
}

/// A parameter's type without `null`. Integers the handlers parse into 32- or 64-bit types get that bound (a larger number is a
/// 4xx, not a valid request); the write API's query numbers are unsigned 32-bit.
fn bound_integer(p: &mut Value, api: Api) {
    // `Option<T>` is `[T, "null"]`; a parameter is absent rather than null
    if let Some(types) = p["schema"]["type"].as_array() {
        let types: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if let [one] = types.as_slice() {
            p["schema"]["type"] = one.clone();
        }
    }
    let query = p["in"] == "query";
    let s = &mut p["schema"];
    if s["type"] != "integer" || !s["maximum"].is_null() {
        return;
    }
    if api == Api::Write && query {
        s["minimum"] = json!(0);
        s["maximum"] = json!(u32::MAX);
    } else if s["format"] == "int32" {
        s["maximum"] = json!(i32::MAX);
    } else {
        s["maximum"] = json!(i64::MAX);
    }
}

/// Beside a JSON answer, the same document in XML (the read API's one rule, `api::xml`; the
/// write API's documents with their XSD namespace).
fn add_xml(response: &mut Value) {
    let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(json) = content.get("application/json").cloned() else {
        return;
    };
    if content.contains_key("application/xml") {
        return;
    }
    // the same document; its XML form follows the API's one rule (read: `api::xml`; write:
    // the XSDs' namespaces, see the document's description)
    content.insert("application/xml".into(), json);
}

/// The unserved documents of the routers (full read paths, aliases marked), for the tests
/// that compare them with the routers.
pub fn router_documents() -> (utoipa::openapi::OpenApi, utoipa::openapi::OpenApi) {
    let (_, read) = super::read_routes().split_for_parts();
    let mut write = None;
    let _ = super::write::routes(|doc| {
        write = Some(doc);
        axum::Router::new()
    });
    (read, write.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(api: Api) -> Value {
        let (read, write) = router_documents();
        match api {
            Api::Read => served_value(read, api).unwrap(),
            Api::Write => served_value(write, api).unwrap(),
        }
    }

    #[test]
    fn every_operation_documents_its_error_statuses() {
        for (api, codes) in [
            (Api::Read, ["400", "422", "503"]),
            (Api::Write, ["400", "401", "403"]),
        ] {
            let v = served(api);
            for (path, item) in v["paths"].as_object().unwrap() {
                for (method, op) in item.as_object().unwrap() {
                    for code in codes {
                        let r = &op["responses"][code];
                        assert!(r.is_object(), "{method} {path} lacks {code}");
                        assert!(
                            r["content"]["application/json"]["schema"].is_object(),
                            "{method} {path} {code} without the error body"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_query_parameter_is_typed_and_described() {
        for api in [Api::Read, Api::Write] {
            let v = served(api);
            for (path, item) in v["paths"].as_object().unwrap() {
                for (method, op) in item.as_object().unwrap() {
                    for p in op["parameters"].as_array().into_iter().flatten() {
                        let d = p["description"].as_str().unwrap_or_default();
                        assert!(!d.is_empty(), "{method} {path}: {p} has no description");
                        assert!(p["schema"]["type"].is_string(), "{method} {path}: {p}");
                    }
                }
            }
        }
    }

    #[test]
    fn value_sets_are_the_parsers() {
        for value in SRIDS {
            assert!(crate::geo::srid::Srid::parse(value).is_ok(), "{value}");
        }
        let v = served(Api::Read);
        let p = v["paths"]["/omrader/fylker"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let inkluder = p.iter().find(|p| p["name"] == "inkluder").unwrap();
        let words = inkluder["schema"]["items"]["enum"].as_array().unwrap();
        assert_eq!(words.len(), super::super::read::omrader::INKLUDER.len() + 1);
        for w in words {
            let q = format!("inkluder={}", w.as_str().unwrap());
            let p = super::super::params::Params::parse(Some(&q), &["inkluder"]).unwrap();
            assert!(p
                .words("inkluder", super::super::read::omrader::INKLUDER)
                .is_ok());
        }
    }

    #[test]
    fn statistikk_documents_every_filter_the_handler_accepts() {
        let v = served(Api::Read);
        let p = v["paths"]["/vegobjekter/{type}/statistikk"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let names: Vec<&str> = p.iter().filter_map(|p| p["name"].as_str()).collect();
        for filter in super::super::read::vegobjekter::FILTERS {
            assert!(names.contains(filter), "{filter} missing: {names:?}");
        }
        assert!(names.len() >= 13 + 2, "{names:?}");
    }
}
