//! The map page (placeholder until the assets are vendored).
use crate::api::AppState;
use axum::Router;
pub fn routes() -> Router<AppState> {
    Router::new()
}
