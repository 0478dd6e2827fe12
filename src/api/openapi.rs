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

use super::route::READ_BASE;

pub use super::handler::ALIAS_OF;

/// Routes served beside each API's documented operations that are not operations of the API
/// themselves: the document and its docs page (`api::docs`), relative to the API's base.
pub const META_PATHS: &[&str] = &["/openapi.json", "/docs", "/docs/{asset}"];

#[derive(OpenApi)]
#[openapi(
    info(title = "vegdb — NVDB API LES v2", description = "Read interface of the Norwegian road database, API version 2, as served by vegdb. Every answer is JSON (default) or XML (`Accept: application/xml`, or a `.xml` suffix on the path); `?pretty=true` indents it. The statistics tables, the object lists and the segmented network (`/vegnett/segmentert`) also come as CSV (`Accept: text/csv`, or a `.csv` suffix). Errors are a JSON array of `{code, message, help_url}`."),
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
            let csv = op
                .get("operationId")
                .and_then(Value::as_str)
                .is_some_and(|id| CSV_OPERATIONS.contains(&id));
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
            if let (true, Some(ok)) = (csv, responses.get_mut("200")) {
                ok["content"]["text/csv"] = json!({"schema": {"type": "string",
                    "description": "RFC 4180, a header line then one line per row; nested members as `outer.inner` columns"}});
            }
        }
    }
}

/// The read operations that also answer CSV (`api::csv`).
const CSV_OPERATIONS: &[&str] = &[
    "list_objects",
    "get_grouped_statistics",
    "list_type_statistics",
    "get_network_statistics",
    "get_grouped_network_statistics",
    "list_pieces",
];

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
    let (_, read) = super::read::routes().split_for_parts();
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
        use super::super::query_doc::SRIDS;
        assert_eq!(
            super::super::query_doc::MAX_DISTANCE_M,
            super::super::read::posisjon::MAX_DISTANCE_M
        );
        assert_eq!(
            super::super::query_doc::MAX_COUNT,
            super::super::read::posisjon::MAX_COUNT
        );
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

    #[test]
    fn the_csv_operations_document_text_csv_and_the_others_do_not() {
        let v = served(Api::Read);
        let mut found = Vec::new();
        for (path, item) in v["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let csv = op["responses"]["200"]["content"]["text/csv"].is_object();
                let id = op["operationId"].as_str().unwrap_or_default();
                assert_eq!(csv, CSV_OPERATIONS.contains(&id), "{method} {path} ({id})");
                if csv {
                    found.push(id);
                }
            }
        }
        found.sort();
        let mut want = CSV_OPERATIONS.to_vec();
        want.sort();
        assert_eq!(found, want);
        // the grouped operations take the grouping, required
        for path in [
            "/vegobjekter/{type}/statistikk/gruppert",
            "/vegnett/statistikk/gruppert",
        ] {
            let p = v["paths"][path]["get"]["parameters"].as_array().unwrap();
            let g = p.iter().find(|p| p["name"] == "gruppering").expect(path);
            assert_eq!(g["required"], true, "{path}");
        }
    }
}
