//! The collections: `vegnett` (the road network) and one per road object type with objects in
//! the generation; `/ogc/collections` and `/ogc/collections/{id}`.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};

use super::crs::{crs_list, CRS84, EPSG};
use super::error::{OgcError, OgcResult};
use super::{document, html, link, ogc_url, NETWORK};
use crate::api::media::GEOJSON;
use crate::api::state::AppState;
use crate::generation::Generation;
use crate::geo::srid::Srid;

/// The extent of the data: the bounding box of the municipalities (lon/lat), computed once.
fn extent(s: &AppState) -> [f64; 4] {
    // Not mutable state: derived once from the embedded areas (`AppState::areas` is
    // `Areas::embedded`), the same for every server.
    static EXTENT: std::sync::OnceLock<[f64; 4]> = std::sync::OnceLock::new();
    *EXTENT.get_or_init(|| {
        use geo::BoundingRect;
        let mut b = [
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        for m in &s.areas().municipalities {
            if let Some(r) = m.shape.bounding_rect() {
                for (x, y) in [
                    (r.min().x, r.min().y),
                    (r.max().x, r.max().y),
                    (r.min().x, r.max().y),
                    (r.max().x, r.min().y),
                ] {
                    if let Ok((lon, lat)) = crate::geo::srid::from_storage(Srid::Wgs84, x, y) {
                        b = [b[0].min(lon), b[1].min(lat), b[2].max(lon), b[3].max(lat)];
                    }
                }
            }
        }
        b
    })
}

/// The collections of the generation: (id, title, description), the network first.
pub(super) fn collection_list(g: &Generation) -> Vec<(String, String, String)> {
    let mut out = vec![(
        NETWORK.to_string(),
        "Vegnett".to_string(),
        "The road network: one feature per road link segment (a link, or the part of a link with one road reference).".to_string(),
    )];
    for (&t, d) in &g.objects {
        if d.table.is_empty() {
            continue;
        }
        if let Some(ot) = g.catalog.object_type(t) {
            out.push((t.to_string(), ot.name.clone(), ot.description.clone()));
        }
    }
    out
}

fn collection_doc(s: &AppState, (id, title, description): &(String, String, String)) -> Value {
    let e = extent(s);
    let base = format!("/collections/{id}");
    json!({
        "id": id,
        "title": title,
        "description": description,
        "itemType": "feature",
        "extent": {"spatial": {"bbox": [e], "crs": CRS84}},
        "crs": crs_list(),
        "storageCrs": format!("{EPSG}25833"),
        "links": [
            link(ogc_url(s, &base), "self", "application/json", title),
            link(ogc_url(s, &format!("{base}?f=html")), "alternate", "text/html", title),
            link(ogc_url(s, &format!("{base}/items")), "items", GEOJSON, "Features as GeoJSON"),
            link(ogc_url(s, &format!("{base}/items?f=html")), "items", "text/html", "Features as HTML"),
            link(ogc_url(s, &format!("{base}/queryables")), "http://www.opengis.net/def/rel/ogc/1.0/queryables", "application/schema+json", "Queryables"),
            // the draft's relation, which GDAL before 3.7 follows
            link(ogc_url(s, &format!("{base}/queryables")), "queryables", "application/schema+json", "Queryables"),
        ]
    })
}

pub(super) async fn collections(
    State(s): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    document(
        q.as_deref(),
        &headers,
        |_| {
            let g = s.store.current();
            let list: Vec<Value> = collection_list(&g)
                .iter()
                .map(|c| collection_doc(&s, c))
                .collect();
            Ok(json!({
                "links": [
                    link(ogc_url(&s, "/collections"), "self", "application/json", "Collections"),
                    link(ogc_url(&s, "/collections?f=html"), "alternate", "text/html", "Collections as HTML"),
                ],
                "crs": crs_list(),
                "collections": list,
            }))
        },
        html::collections,
    )
}

pub(super) fn find_collection(g: &Generation, cid: &str) -> OgcResult<(String, String, String)> {
    collection_list(g)
        .into_iter()
        .find(|c| c.0 == cid)
        .ok_or_else(|| OgcError::not_found(format!("no collection '{cid}'")))
}

pub(super) async fn collection(
    State(s): State<AppState>,
    Path(cid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    document(
        q.as_deref(),
        &headers,
        |_| {
            let g = s.store.current();
            Ok(collection_doc(&s, &find_collection(&g, &cid)?))
        },
        html::collection,
    )
}
