//! Limits on the road-object filters (README "Limits"). They bound what one anonymous request
//! can make the server parse and evaluate; what remains is bounded by the evaluation budget
//! (`query::budget`, `--query-budget`).

use std::time::Duration;

/// Characters in one `egenskap` expression (also each `overlapp` type's inner expression).
pub const MAX_EXPRESSION_CHARS: usize = 8192;
/// Nesting levels of an expression: parentheses and `relasjon(…)` together.
pub const MAX_DEPTH: usize = 32;
/// Conditions in one expression: each comparison, `in`/`notin` list and `relasjon` counts one.
pub const MAX_CONDITIONS: usize = 256;
/// `overlapp` terms in one request (identical terms are evaluated once).
pub const MAX_OVERLAPS: usize = 32;
/// Items of each list filter (region, fylke, vegavdeling, kommune, kontraktsomrade,
/// riksvegrute, vegreferanse, veglenke).
pub const MAX_LIST_ITEMS: usize = 1000;
/// Link intervals in one `rute` filter (a route's segments; a route of 5,000 segments is
/// longer than any drive across the country, and its text near the 64,000-byte address limit).
pub const MAX_ROUTE_ITEMS: usize = 5000;
/// Default wall-clock budget of a road-object query's selection (`--query-budget`).
pub const DEFAULT_QUERY_BUDGET: Duration = Duration::from_secs(10);
/// Ids in one `ider` filter.
pub const MAX_IDS: usize = 1000;
/// Vertices of a `polygon` filter (every ring's, the closing vertex included).
pub const MAX_POLYGON_VERTICES: usize = 2_000;
/// Width and height of a `polygon` filter's envelope in storage coordinates (meters): mainland
/// Norway spans about 1,750 km.
pub const MAX_POLYGON_SPAN_M: f64 = 3_000_000.0;
