//! Read interface handlers, one file per URL area.

pub mod catalog;
pub mod endringer;
pub mod network_attributes;
pub mod noder;
pub mod omrader;
pub mod polygon;
pub mod posisjon;
pub mod rute;
pub mod segmentert;
pub mod statistikk;
pub mod status;
pub mod veg;
pub mod vegnett;
pub mod vegobjekter;

use utoipa_axum::router::OpenApiRouter;

use super::state::AppState;

/// The read API: every route with its full path, each registered through utoipa-axum with the
/// handler's `#[utoipa::path]`, so the returned router's document lists exactly what is mounted
/// (aliases marked, see `api::handler::alias`).
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(catalog::routes())
        .merge(omrader::routes())
        .merge(status::routes())
        .merge(veg::routes())
        .merge(posisjon::routes())
        .merge(vegnett::routes())
        .merge(segmentert::routes())
        .merge(rute::routes())
        .merge(noder::routes())
        .merge(vegobjekter::routes())
        .merge(statistikk::routes())
        .merge(endringer::routes())
}
