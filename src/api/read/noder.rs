//! `GET /vegnett/noder/{id}`: a node of the road network and the link ends that meet there, so
//! a client can walk the topology (`startnode`/`sluttnode` of a link → the node → its links).
//! Read from the routing graph (`index::graph`), made on first use.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;

use crate::api::dto::Geometry as GeometryDoc;
use crate::api::error::{ApiError, ApiResult};
use crate::api::handler::begin;
use crate::api::media::respond;
use crate::api::state::AppState;
use crate::generation::Generation;
use crate::geo::srid::Srid;
use crate::geo::wkt;
use crate::query::vegref::format_position;

const NODE_PARAMS: &[&str] = &["srid"];
crate::query_params!(NodeQuery = [NODE_PARAMS]);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(crate::read_route!(get_node))
}

/// A link end at a node.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NodeLinkDoc {
    pub veglenkeid: u64,
    /// The link position at the node (the start or the end of a veglenke).
    pub posisjon: f64,
    pub kortform: String,
    pub href: String,
    pub konnekteringslenke: bool,
    #[serde(rename = "topologinivå")]
    pub topology_level: u8,
}

/// A node and the link ends meeting there (by link id and position).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NodeDoc {
    pub id: String,
    pub href: String,
    /// The point where the first link end found meets the node.
    pub geometri: GeometryDoc,
    pub antall: usize,
    pub lenker: Vec<NodeLinkDoc>,
}

/// GET /vegnett/noder/{id}
#[utoipa::path(get, path = "/vegnett/noder/{id}", tag = "vegnett",
    params(("id" = u64, Path, description = "node id (a link's startnode or sluttnode)"), NodeQuery),
    responses((status = 200, description = "The node and the link ends meeting there", body = NodeDoc),
               (status = 404, description = "Unknown node (4012)")))]
pub async fn get_node(
    State(s): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let (p, n) = begin(&headers, q.as_deref(), NODE_PARAMS)?;
    let srid = p.srid()?;
    let id: u64 = id.parse().map_err(|_| {
        ApiError::bad(
            4002,
            format!("Ugyldig node-id: '{}'", crate::api::error::echoed(&id)),
        )
    })?;
    let g = s.store.current();
    let z = n.wkt_z_tag();
    let work = tokio::task::spawn_blocking(move || node_doc(&s, &g, id, srid, z));
    let doc = match work.await {
        Ok(d) => d?,
        Err(e) => return Err(crate::error::EngineError::Internal(format!("node: {e}")).into()),
    };
    Ok(respond(n, &doc))
}

fn node_doc(s: &AppState, g: &Generation, id: u64, srid: Srid, z: bool) -> ApiResult<NodeDoc> {
    let graph = &*g.route_graph;
    let net = &g.network;
    let v = *graph
        .node_vertex
        .get(&id)
        .ok_or_else(|| ApiError::not_found(format!("Node {id} finnes ikke")))?;
    let mut ends: Vec<(u64, f64, usize)> = Vec::new();
    for &(_, row) in graph.edges(v) {
        let r = row as usize;
        if graph.row_from[r] == v {
            ends.push((net.link_id[r], net.from_pos[r], r));
        }
        if graph.row_to[r] == v {
            ends.push((net.link_id[r], net.to_pos[r], r));
        }
    }
    ends.sort_by(|a, b| {
        (a.0, a.1)
            .partial_cmp(&(b.0, b.1))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    ends.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    let [x, y] = graph.xy[v as usize];
    let z_value = ends
        .first()
        .map(|&(_, pos, r)| {
            let geometry = net.geometry(r);
            let c = if pos == net.from_pos[r] {
                geometry.first()
            } else {
                geometry.last()
            };
            c.map_or(0.0, |c| c[2])
        })
        .unwrap_or(0.0);
    let lenker = ends
        .iter()
        .map(|&(link, pos, r)| NodeLinkDoc {
            veglenkeid: link,
            posisjon: pos + 0.0,
            kortform: format!("{}@{link}", format_position(pos)),
            href: s.href(&format!("/vegnett/lenker/{link}")),
            konnekteringslenke: net.is_connection[r],
            topology_level: net.topology_level[r],
        })
        .collect::<Vec<_>>();
    Ok(NodeDoc {
        id: id.to_string(),
        href: s.href(&format!("/vegnett/noder/{id}")),
        geometri: GeometryDoc {
            wkt: wkt::point_z(srid, &[x, y, z_value], z)?,
            srid: srid.code(),
        },
        antall: lenker.len(),
        lenker,
    })
}
