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
    components(schemas(crate::catalog::ObjectType, crate::catalog::PropertyType, crate::catalog::Unit, crate::catalog::DataType, crate::catalog::Category))
)]
pub struct ApiDoc;

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
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
