//! The OpenAPI document served at `/nvdb/api/v2/openapi.json`, generated from the handlers'
//! `utoipa::path` annotations. A test checks that every mounted route is documented.

use utoipa::OpenApi;

use super::read;

#[derive(OpenApi)]
#[openapi(
    info(title = "vegdb — NVDB API LES v2", description = "Read interface of the Norwegian road database, API version 2, as served by vegdb."),
    servers((url = "/nvdb/api/v2")),
    paths(
        read::catalog::list_object_types,
        read::catalog::get_object_type,
        read::catalog::get_property_type,
        read::catalog::get_property_type_by_id,
        read::catalog::list_units,
        read::catalog::list_data_types,
        read::catalog::list_categories,
        read::catalog::get_catalog_version,
        read::omrader::list_area_kinds,
        read::omrader::list_regions,
        read::omrader::list_counties,
        read::omrader::list_road_departments,
        read::omrader::list_municipalities,
        read::omrader::list_contract_areas,
        read::omrader::list_national_routes,
        read::status::get_status,
        read::veg::get_position,
        read::veg::get_positions,
        read::posisjon::get_nearest,
        read::vegnett::list_network_resources,
        read::vegnett::list_links,
        read::vegnett::get_link,
        read::vegobjekter::list_object_kinds,
        read::vegobjekter::list_objects,
        read::vegobjekter::get_statistics,
        read::vegobjekter::get_object,
        read::vegobjekter::list_object_properties,
        read::vegobjekter::get_object_property,
        read::vegobjekter::find_object,
        read::endringer::list_changes,
    ),
    components(schemas(read::catalog::ObjectTypeDoc, read::catalog::PropertyTypeDoc, crate::api::catalog_docs::UnitDoc, crate::api::catalog_docs::DataTypeDoc, crate::api::catalog_docs::CategoryDoc))
)]
pub struct ApiDoc;

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The served read document: [`document`] with the parameter value sets and error responses.
pub fn document_json() -> String {
    refined_json(&document(), Api::Read)
}

/// The write interface (NVDB API SKRIV v2), served at `/nvdb/apiskriv/rest/v2/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(title = "vegdb — NVDB API SKRIV v2", description = "Write interface of the Norwegian road database, API version 2, as served by vegdb. Every request needs X-Client and credentials (Authorization: Bearer <token> or the iPlanetDirectoryProOAM cookie)."),
    servers((url = "/nvdb/apiskriv/rest/v2")),
    paths(
        super::write::endringssett::post_validate,
        super::write::endringssett::post_register,
        super::write::endringssett::list_changesets,
        super::write::endringssett::get_content,
        super::write::endringssett::post_start,
        super::write::endringssett::post_cancel,
        super::write::endringssett::post_restart,
        super::write::endringssett::get_progress,
        super::write::endringssett::get_status,
        super::write::binaer::post_binary,
        super::write::binaer::get_binary,
        super::write::konverter::post_sosi_geojson,
        super::write::konverter::post_sosi,
    )
)]
pub struct WriteApiDoc;

pub fn write_document() -> utoipa::openapi::OpenApi {
    WriteApiDoc::openapi()
}

/// The served write document: [`write_document`] with the bodies and error responses.
pub fn write_document_json() -> String {
    refined_json(&write_document(), Api::Write)
}

/// The write API's `/openapi.json` route, mounted by `write::routes` below each write base.
pub fn write_routes() -> axum::Router<super::AppState> {
    axum::Router::new().route("/openapi.json", axum::routing::get(write_openapi_json))
}

async fn write_openapi_json() -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut r = write_document_json().into_response();
    super::write::set_content_type(&mut r, super::write::Format::Json);
    r
}

/// Which interface a document describes: its error body differs.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    Read,
    Write,
}

/// The value sets the parameter parsers accept, stated once here for every operation that takes
/// the parameter (the handlers' annotations name the parameters; this pass gives them their true
/// schema), and the error statuses every operation can answer. Checked against the running server
/// by `tools/schemathesis.sh` (CI).
fn refined_json(doc: &utoipa::openapi::OpenApi, api: Api) -> String {
    let mut v = match serde_json::to_value(doc) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "OpenAPI document does not serialise");
            return String::new();
        }
    };
    refine_value(&mut v, api);
    v.to_string()
}

/// A comma list of the given words, or empty.
fn word_list(words: &[&str]) -> serde_json::Value {
    let alt = words.join("|");
    // empty = absent (the default set)
    serde_json::json!({"type": "string", "pattern": format!("^(({alt})(,({alt}))*)?$")})
}

fn error_schema(api: Api) -> serde_json::Value {
    use serde_json::json;
    match api {
        Api::Read => json!({
            "type": "array",
            "description": "The read API's error list",
            "items": {"type": "object", "required": ["code", "message"], "properties": {
                "code": {"type": "integer"},
                "message": {"type": "string"},
                "help_url": {"type": "string"}}}
        }),
        Api::Write => json!({
            "type": "object",
            "description": "The write API's fault entity (JSON; XML `<fault>` when asked for)",
            "required": ["message"],
            "properties": {"message": {"type": "string"}}
        }),
    }
}

fn refine_value(v: &mut serde_json::Value, api: Api) {
    use serde_json::{json, Value};
    let name = match api {
        Api::Read => "Feil",
        Api::Write => "Fault",
    };
    v["components"]["schemas"][name] = error_schema(api);
    let error_ref = json!({"$ref": format!("#/components/schemas/{name}")});
    if api == Api::Write {
        // every write request authenticates by one of these (401 without)
        v["components"]["securitySchemes"] = json!({
            "bearer": {"type": "http", "scheme": "bearer"},
            "sso": {"type": "apiKey", "in": "cookie", "name": "iPlanetDirectoryProOAM"}});
        v["security"] = json!([{"bearer": []}, {"sso": []}]);
    }
    let srid = json!({"type": "string", "enum": ["32633", "25833", "5973", "6173", "4326", "25832", "25835", "utm33", "wgs84"]});
    let number_list = json!({"type": "string", "pattern": "^([0-9]{1,9}(,[0-9]{1,9})*)?$"});
    let Some(paths) = v.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(ops) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in ops.iter_mut() {
            let Some(op) = op.as_object_mut() else {
                continue;
            };
            if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
                for p in params.iter_mut() {
                    let pname = p["name"].as_str().unwrap_or_default().to_string();
                    let location = p["in"].as_str().unwrap_or_default().to_string();
                    let schema = match (location.as_str(), pname.as_str()) {
                        ("query", "srid") => Some(srid.clone()),
                        ("query", "inkluder") => Some(if path.starts_with("/omrader") {
                            word_list(super::read::omrader::INKLUDER)
                        } else if path.starts_with("/vegobjekttyper") {
                            word_list(super::read::catalog::PARTS)
                        } else if path == "/vegobjekter/{type}/{id}" {
                            // one object: every part but `minimum` (a list-only word)
                            let words: Vec<&str> = super::object_json::INKLUDER
                                .iter()
                                .copied()
                                .filter(|w| *w != "minimum")
                                .collect();
                            word_list(&words)
                        } else {
                            word_list(super::object_json::INKLUDER)
                        }),
                        ("query", "inkludergeometri") => {
                            Some(word_list(super::object_json::INKLUDERGEOMETRI))
                        }
                        ("query", "antall") => {
                            Some(json!({"type": "integer", "minimum": 1, "maximum": 1_000_000_000}))
                        }
                        ("query", "fylke" | "kommune" | "region" | "vegavdeling" | "kategori") => {
                            Some(number_list.clone())
                        }
                        ("query", "etter") => Some(json!({"type": "string", "format": "date"})),
                        ("query", "dybde") => {
                            Some(json!({"type": "string", "pattern": "^([1-9][0-9]{0,2}|full)$"}))
                        }
                        ("query", "kartutsnitt") => Some(json!({"type": "string",
                            "description": "xmin,ymin,xmax,ymax in the request's srid",
                            "pattern": "^-?[0-9]{1,6}(\\.[0-9]{1,3})?(,-?[0-9]{1,6}(\\.[0-9]{1,3})?){3}$"})),
                        ("query", "type") if path.ends_with("/endringer") => {
                            Some(json!({"type": "string", "enum": ["endret", "slettet"]}))
                        }
                        ("query", _) if api == Api::Write && p["schema"]["type"] == "integer" => {
                            Some(json!({"type": "integer", "minimum": 0, "maximum": u32::MAX}))
                        }
                        ("query", "start") => Some(
                            json!({"type": "string", "pattern": "^[0-9a-f]{48}$", "description": "the cursor a page's metadata.neste.start gives"}),
                        ),
                        ("header", "X-NVDB-Delay") => {
                            Some(json!({"type": "integer", "minimum": 0, "maximum": 300}))
                        }
                        // integers are parsed into 32- or 64-bit types
                        _ if p["schema"]["type"] == "integer"
                            && p["schema"]["maximum"].is_null() =>
                        {
                            let mut s = p["schema"].clone();
                            s["maximum"] = if s["format"] == "int32" {
                                json!(i32::MAX)
                            } else {
                                json!(i64::MAX)
                            };
                            Some(s)
                        }
                        _ => None,
                    };
                    if let Some(schema) = schema {
                        p["schema"] = schema;
                    }
                }
            }
            if api == Api::Write && method == "post" && !op.contains_key("requestBody") {
                if let Some(body) = request_body(path) {
                    op.insert("requestBody".into(), body);
                }
            }
            let responses = op.entry("responses").or_insert_with(|| json!({}));
            let Some(responses) = responses.as_object_mut() else {
                continue;
            };
            let statuses: &[(&str, &str)] = match api {
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
            };
            for (code, description) in statuses {
                responses.entry(code.to_string()).or_insert_with(|| {
                    let mut content = json!({"application/json": {"schema": error_ref.clone()}});
                    if api == Api::Write {
                        // the fault follows the request's format (Accept / Content-Type)
                        content["application/xml"] = json!({"schema": {"type": "string"}});
                    }
                    json!({"description": description, "content": content})
                });
            }
        }
    }
}

/// The bodies the write API's POST operations read. Changeset documents and SOSI files have a
/// grammar JSON Schema does not carry; the handlers validate them (400 with a fault).
fn request_body(path: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    let content = match path {
        "/endringssett" | "/endringssett/validator" => json!({
            "application/json": {"schema": {"type": "object", "description": "a changeset (endringssett) document"}},
            "application/xml": {"schema": {"type": "string", "description": "a changeset document in XML"}}}),
        "/binaer" => json!({
            "application/octet-stream": {"schema": {"type": "string", "format": "binary", "minLength": 1}}}),
        "/konverter/sosi" => json!({
            "text/plain": {"schema": {"type": "string", "description": "a SOSI file"}}}),
        "/konverter/sosiGeoJson" => json!({
            "application/json": {"schema": {"type": "object", "description": "a GeoJSON FeatureCollection"}}}),
        _ => return None,
    };
    Some(json!({"required": true, "content": content}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(api: Api) -> serde_json::Value {
        let text = match api {
            Api::Read => document_json(),
            Api::Write => write_document_json(),
        };
        serde_json::from_str(&text).unwrap()
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
                    }
                }
            }
        }
    }

    #[test]
    fn value_sets_are_the_parsers() {
        let v = served(Api::Read);
        let p = v["paths"]["/omrader/fylker"]["get"]["parameters"]
            .as_array()
            .unwrap();
        let srid = p.iter().find(|p| p["name"] == "srid").unwrap();
        for value in srid["schema"]["enum"].as_array().unwrap() {
            assert!(
                crate::geo::srid::Srid::parse(value.as_str().unwrap()).is_ok(),
                "{value}"
            );
        }
        let inkluder = p.iter().find(|p| p["name"] == "inkluder").unwrap();
        let pattern = inkluder["schema"]["pattern"].as_str().unwrap();
        assert!(
            pattern.contains("kartutsnitt") && pattern.contains("alle"),
            "{pattern}"
        );
    }
}
