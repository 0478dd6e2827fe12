//! Vector tiles and the map page, outside the v2 prefix:
//! - `GET /tiles`: the layers (road network and every object type the generation has), each
//!   with its TileJSON URL;
//! - `GET /tiles/{layer}.json`: TileJSON 3.0.0 of a layer;
//! - `GET /tiles/{layer}/{z}/{x}/{y}.mvt`: one Mapbox Vector Tile (engine: `crate::tiles`),
//!   `application/vnd.mapbox-vector-tile`, 204 without a body when the tile has no feature,
//!   ETag by generation (`If-None-Match` → 304), gzip by the request stack when asked;
//!   `?tidspunkt=YYYY-MM-DD`: the tile of the road as it was that day (the generation's view
//!   at that day, `Generation::at`, as the read API's `tidspunkt`: `api::dated`; a day at or
//!   after today: today's tile), its ETag naming the day (`"g{generation}-d{day}-…"`);
//! - `/kart`: the map page (`kart.rs`).
//!
//! `layer` is `vegnett`, an object type id (`105`) or a type name (`Fartsgrense`, any case).
//! Bad layers, zooms, columns or rows are 400 in the read API's error shape.

pub mod kart;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;

use crate::api::error::{ApiError, ApiResult};
use crate::api::state::AppState;
use crate::error::EngineError;
use crate::generation::Generation;
use crate::tiles::mercator::{world_to_lon_lat, TileId, MAX_ZOOM};
use crate::tiles::{network, LayerId};

pub const MVT_TYPE: &str = "application/vnd.mapbox-vector-tile";
/// How long clients and caches may keep a tile or TileJSON without asking again.
pub const CACHE_CONTROL: &str = "public, max-age=60";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/tiles", get(list_layers))
        .route("/tiles/{file}", get(tilejson))
        .route("/tiles/{layer}/{z}/{x}/{y}", get(tile))
        .merge(kart::routes())
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, 4005, message)
}

/// Engine input errors are the caller's: 400 here (the tile URLs are paths, not parameters).
fn bad_input(e: EngineError) -> ApiError {
    let mut a = ApiError::from(e);
    if a.status == StatusCode::UNPROCESSABLE_ENTITY {
        a.status = StatusCode::BAD_REQUEST;
    }
    a
}

fn layer_of(text: &str, state: &AppState) -> ApiResult<LayerId> {
    LayerId::parse(text, state.catalog()).map_err(bad_input)
}

fn number<T: std::str::FromStr>(what: &str, text: &str) -> ApiResult<T> {
    text.parse().map_err(|_| {
        bad(format!(
            "Ugyldig {what} '{text}': må være et ikke-negativt heltall"
        ))
    })
}

/// Root of absolute URLs (the read API's base without its path).
fn root(state: &AppState) -> String {
    state.public_url().to_string()
}

#[derive(Serialize)]
struct LayerEntry {
    id: String,
    navn: String,
    /// Number of features (segment rows or objects) in the generation.
    antall: usize,
    tilejson: String,
}

async fn list_layers(State(state): State<AppState>) -> Response {
    let g = state.store.current();
    let base = root(&state);
    let mut lag = vec![LayerEntry {
        id: network::LAYER.to_string(),
        navn: "Vegnett".to_string(),
        antall: g.segment_count(),
        tilejson: format!("{base}/tiles/{}.json", network::LAYER),
    }];
    for (t, d) in &g.objects {
        let navn = g
            .catalog
            .object_type(*t)
            .map(|o| o.name.clone())
            .unwrap_or_default();
        lag.push(LayerEntry {
            id: t.to_string(),
            navn,
            antall: d.table.len(),
            tilejson: format!("{base}/tiles/{t}.json"),
        });
    }
    cached(Json(json!({ "lag": lag })).into_response(), &g)
}

fn cached(mut r: Response, g: &Generation) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("\"g{}\"", g.id)) {
        h.insert(header::ETAG, v);
    }
    r
}

/// Longitude/latitude bounds of a storage box.
fn lon_lat_bounds(b: [f64; 4]) -> Option<[f64; 4]> {
    let mut out = [180.0f64, 90.0f64, -180.0f64, -90.0f64];
    for (x, y) in [(b[0], b[1]), (b[0], b[3]), (b[2], b[1]), (b[2], b[3])] {
        let w = crate::tiles::mercator::storage_to_world(x, y).ok()?;
        let (lon, lat) = world_to_lon_lat(w);
        out = [
            out[0].min(lon),
            out[1].min(lat),
            out[2].max(lon),
            out[3].max(lat),
        ];
    }
    Some(out.map(|v| (v * 1e6).round() / 1e6))
}

/// A layer's TileJSON 3.0.0 document (the fields in this order on the wire).
#[derive(Debug, Serialize)]
struct TileJson {
    tilejson: &'static str,
    name: String,
    description: String,
    version: &'static str,
    scheme: &'static str,
    tiles: [String; 1],
    minzoom: u8,
    maxzoom: u8,
    vector_layers: [VectorLayer; 1],
    /// West, south, east, north (lon/lat); left out for a layer without data.
    #[serde(skip_serializing_if = "Option::is_none")]
    bounds: Option<[f64; 4]>,
    /// Longitude, latitude and zoom of the bounds' middle.
    #[serde(skip_serializing_if = "Option::is_none")]
    center: Option<(f64, f64, u8)>,
}

/// The one vector layer of a TileJSON document.
#[derive(Debug, Serialize)]
struct VectorLayer {
    id: String,
    description: String,
    minzoom: u8,
    maxzoom: u8,
    /// Attribute name -> what it holds.
    fields: serde_json::Map<String, serde_json::Value>,
}

/// Zoom level of a TileJSON `center`.
const CENTER_ZOOM: u8 = 10;

impl TileJson {
    /// The document of layer `id` titled `title` of generation `generation`, its tiles below
    /// `base`.
    fn new(
        title: String,
        generation: u64,
        base: &str,
        id: String,
        fields: serde_json::Map<String, serde_json::Value>,
        bounds: Option<[f64; 4]>,
    ) -> TileJson {
        TileJson {
            tilejson: "3.0.0",
            description: format!("vegdb: {title} (generation {generation})"),
            version: "1.0.0",
            scheme: "xyz",
            tiles: [format!("{base}/tiles/{id}/{{z}}/{{x}}/{{y}}.mvt")],
            minzoom: 0,
            maxzoom: MAX_ZOOM,
            vector_layers: [VectorLayer {
                id,
                description: title.clone(),
                minzoom: 0,
                maxzoom: MAX_ZOOM,
                fields,
            }],
            name: title,
            center: bounds.map(|b| ((b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0, CENTER_ZOOM)),
            bounds,
        }
    }
}

/// The fields of a layer for TileJSON's `vector_layers`.
fn fields(g: &Generation, layer: LayerId) -> serde_json::Map<String, serde_json::Value> {
    let mut f = serde_json::Map::new();
    let mut put = |k: &str, v: &str| {
        f.insert(k.to_string(), json!(v));
    };
    match layer {
        LayerId::Network => {
            put("veglenke", "Number: veglenke id");
            put("fra", "Number: start position on the link (0..1)");
            put("til", "Number: end position on the link (0..1)");
            put("vegkategori", "String: E, R, F, K or P");
            put("fase", "String: road status letter (V, A, P, F, G ...)");
            put("vegnummer", "Number");
            put("vegreferanse", "String: short road reference with metres");
            put("kommune", "Number: municipality number");
            put("topologinivå", "Number: 0 road, 1 carriageway, 2 lane");
        }
        LayerId::Objects(t) => {
            put("id", "Number: object id");
            put("type", "Number: object type id");
            put("versjon", "Number");
            if let Some(o) = g.catalog.object_type(t) {
                for p in o.value_properties() {
                    if p.sensitivity > 0 || p.is_geometry() {
                        continue;
                    }
                    let kind = match p.storage() {
                        crate::catalog::ValueKind::Integer | crate::catalog::ValueKind::Float => {
                            "Number"
                        }
                        crate::catalog::ValueKind::Enum
                            if p.allowed_values
                                .as_ref()
                                .is_some_and(|v| v.iter().all(|a| a.number.is_some())) =>
                        {
                            "Number"
                        }
                        _ => "String",
                    };
                    put(&p.name, kind);
                }
            }
        }
    }
    f
}

async fn tilejson(State(state): State<AppState>, Path(file): Path<String>) -> ApiResult<Response> {
    let Some(name) = file.strip_suffix(".json") else {
        return Err(bad(format!(
            "Ukjent ressurs /tiles/{file}: TileJSON er /tiles/{{lag}}.json"
        )));
    };
    let layer = layer_of(name, &state)?;
    let g = state.store.current();
    let (title, bbox) = match layer {
        LayerId::Network => {
            let e = g.network_index.tree.root().envelope();
            let (lo, hi) = (e.lower(), e.upper());
            ("Vegnett".to_string(), [lo.x(), lo.y(), hi.x(), hi.y()])
        }
        LayerId::Objects(t) => {
            let gc = g.clone();
            let index = tokio::task::spawn_blocking(move || {
                gc.objects.get(&t).map(|d| d.object_index(&gc))
            })
            .await
            .map_err(|e| ApiError::from(EngineError::Internal(e.to_string())))?;
            // no objects of the type: the empty tree's envelope (no bounds)
            let e = index.map_or_else(
                || {
                    rstar::RTree::<crate::generation::spatial::BoxEntry>::new()
                        .root()
                        .envelope()
                },
                |i| i.tree.root().envelope(),
            );
            let name = g
                .catalog
                .object_type(t)
                .map(|o| o.name.clone())
                .unwrap_or_default();
            (
                name,
                [e.lower()[0], e.lower()[1], e.upper()[0], e.upper()[1]],
            )
        }
    };
    let bounds = lon_lat_bounds(bbox).filter(|b| b[0] <= b[2] && b[1] <= b[3]);
    let doc = TileJson::new(
        title,
        g.id,
        &root(&state),
        layer.name(),
        fields(&g, layer),
        bounds,
    );
    Ok(cached(Json(doc).into_response(), &g))
}

async fn tile(
    State(state): State<AppState>,
    Path((layer, z, x, y)): Path<(String, String, String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let Some(y) = y.strip_suffix(".mvt") else {
        return Err(bad(format!(
            "Ugyldig flis '{y}': adressen er /tiles/{{lag}}/{{z}}/{{x}}/{{y}}.mvt"
        )));
    };
    let layer = layer_of(&layer, &state)?;
    let tile = TileId::new(number("zoomnivå", &z)?, number("x", &x)?, number("y", y)?)
        .map_err(bad_input)?;
    let day = tile_day(q.as_deref())?;
    let current: Arc<Generation> = state.store.current();
    let dated = day.map(|d| format!("-d{d}")).unwrap_or_default();
    let etag = format!(
        "\"g{}{dated}-{}-{}-{}-{}\"",
        current.id,
        layer.name(),
        tile.z,
        tile.x,
        tile.y
    );
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let etag_value = HeaderValue::from_str(&etag).ok();
    if matches {
        let mut r = StatusCode::NOT_MODIFIED.into_response();
        if let Some(v) = etag_value {
            r.headers_mut().insert(header::ETAG, v);
        }
        return Ok(r);
    }
    let g = match day.filter(|&d| !Generation::is_today(d)) {
        // the view, built on the blocking pool when it is not built yet
        Some(d) => tokio::task::spawn_blocking(move || current.at(d))
            .await
            .map_err(|e| ApiError::from(EngineError::Internal(e.to_string())))??,
        None => current,
    };
    let bytes = tokio::task::spawn_blocking(move || crate::tiles::render(&g, layer, tile))
        .await
        .map_err(|e| ApiError::from(EngineError::Internal(e.to_string())))?
        .map_err(bad_input)?;
    let mut r = if bytes.is_empty() {
        StatusCode::NO_CONTENT.into_response()
    } else {
        let mut r = Response::new(Body::from(bytes));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(MVT_TYPE));
        r
    };
    let h = r.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    if let Some(v) = etag_value {
        h.insert(header::ETAG, v);
    }
    Ok(r)
}

/// The day of a tile request's `tidspunkt` (None: today); a bad or repeated one is 400 (the
/// other parameters of a tile URL are ignored, as they always were).
fn tile_day(q: Option<&str>) -> ApiResult<Option<crate::snapshot::columns::Days>> {
    let Some(q) = q else { return Ok(None) };
    super::dated::day_of_query(q).map_err(|mut e| {
        e.status = StatusCode::BAD_REQUEST;
        e
    })
}

#[cfg(test)]
mod tilejson_tests {
    use super::*;

    /// The document as it was built by hand before the typed model (the oracle: the same
    /// bytes, keys in the same order).
    fn by_hand(
        title: &str,
        generation: u64,
        base: &str,
        id: &str,
        fields: serde_json::Map<String, serde_json::Value>,
        bounds: Option<[f64; 4]>,
    ) -> serde_json::Value {
        let mut doc = json!({
            "tilejson": "3.0.0",
            "name": title,
            "description": format!("vegdb: {title} (generation {generation})"),
            "version": "1.0.0",
            "scheme": "xyz",
            "tiles": [format!("{base}/tiles/{id}/{{z}}/{{x}}/{{y}}.mvt")],
            "minzoom": 0,
            "maxzoom": MAX_ZOOM,
            "vector_layers": [{
                "id": id,
                "description": title,
                "minzoom": 0,
                "maxzoom": MAX_ZOOM,
                "fields": fields,
            }],
        });
        if let Some(b) = bounds {
            doc["bounds"] = json!(b);
            doc["center"] = json!([(b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0, 10]);
        }
        doc
    }

    #[test]
    fn the_typed_tilejson_is_the_hand_built_one_byte_for_byte() {
        let mut fields = serde_json::Map::new();
        fields.insert("veglenke".into(), json!("Number: veglenke id"));
        fields.insert(
            "fra".into(),
            json!("Number: start position on the link (0..1)"),
        );
        for bounds in [
            None,
            Some([4.5, 57.9, 31.2, 71.25]),
            Some([10.0, 60.0, 10.0, 60.0]),
        ] {
            let typed = TileJson::new(
                "Vegnett".into(),
                42,
                "http://h:1",
                "vegnett".into(),
                fields.clone(),
                bounds,
            );
            let hand = by_hand(
                "Vegnett",
                42,
                "http://h:1",
                "vegnett",
                fields.clone(),
                bounds,
            );
            assert_eq!(
                serde_json::to_string(&typed).unwrap(),
                serde_json::to_string(&hand).unwrap()
            );
        }
    }
}
