//! The road network as a graph for routing: a compact adjacency (CSR) over vertices, one edge
//! per network row.
//!
//! Vertices are the network's nodes (a row's `start_node` at the start of its veglenke,
//! `end_node` at its end) and the inner boundaries of a veglenke cut into several rows (a road
//! reference changes along it): consecutive rows of one link with the same pair of nodes whose
//! positions meet share an inner vertex there. Each row is one undirected edge between the
//! vertex at its `from_pos` and the vertex at its `to_pos`, weighted by its `length_m`. Every
//! row of the network is an edge; which rows a route may use (detail level, connection links,
//! traffic group) is decided per query by the row's attributes (`query::route`). One-way
//! information is not stored in the network, so edges are traversable both ways, as the
//! network distance NVDB's route service answers.
//!
//! Memory: per vertex two coordinates and an offset (20 bytes) and its distances from the
//! landmarks (`index::landmarks`, 64 bytes), per row two vertex ids and two adjacency entries
//! (24 bytes), plus the node id map, plus the contraction hierarchy of the default rows
//! (`index::contraction`: 16 bytes per upward edge, 4 per vertex).

use std::sync::{Arc, OnceLock};

use super::contraction::Hierarchy;
use crate::snapshot::columns::RoadNetwork;
use crate::util::FastMap;

/// The routing graph of one network (see the module doc).
#[derive(Debug, Default)]
pub struct RouteGraph {
    /// Plane coordinates (storage, UTM 33) of each vertex.
    pub xy: Vec<[f64; 2]>,
    /// Adjacency of vertex v: `adjacent[offsets[v]..offsets[v + 1]]`.
    pub offsets: Vec<u32>,
    /// (neighbour vertex, row) pairs.
    pub adjacent: Vec<(u32, u32)>,
    /// Vertex at each row's `from_pos` and at its `to_pos`.
    pub row_from: Vec<u32>,
    pub row_to: Vec<u32>,
    /// Network node id -> vertex.
    pub node_vertex: FastMap<u64, u32>,
    /// Network node id of each vertex (0 for an inner vertex of a veglenke).
    pub vertex_node: Vec<u64>,
    /// The largest k with `length_m >= k * (straight distance between its vertices)` for
    /// every row (at most 1): `k * straight distance` is a lower bound of any path's length,
    /// the A* estimate.
    pub bound_factor: f64,
    /// Network distances from a few landmarks (`index::landmarks`): the A* estimate's other
    /// lower bound.
    pub landmarks: super::landmarks::Landmarks,
    /// The contraction hierarchy over the rows of topology level 0 (`default_row`), for the
    /// routes of the default filter, once made (`build` makes it, `build_in_background` on
    /// another thread).
    pub hierarchy: Arc<OnceLock<Hierarchy>>,
}

/// Whether row `r` is one a route uses by default (topology level 0: `detaljnivå` VEGTRASE
/// and VEGTRASE_OG_KJOREBANE, connection links included, both traffic groups), the rows of
/// the contraction hierarchy.
#[inline]
pub fn default_row(n: &RoadNetwork, r: usize) -> bool {
    n.topology_level[r] == 0
}

/// Whether rows `a` and `b` (consecutive) are parts of one veglenke meeting at a position.
fn continues(n: &RoadNetwork, a: usize, b: usize) -> bool {
    n.link_id[a] == n.link_id[b]
        && n.start_node[a] == n.start_node[b]
        && n.end_node[a] == n.end_node[b]
        && n.to_pos[a] == n.from_pos[b]
}

fn distance(a: [f64; 2], b: [f64; 2]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

impl RouteGraph {
    /// The graph, its landmarks and its hierarchy.
    pub fn build(n: &RoadNetwork) -> RouteGraph {
        let g = RouteGraph::build_base(n);
        let _ = g.hierarchy.set(g.make_hierarchy(n));
        g
    }

    /// The graph and its landmarks now, its hierarchy on a thread of its own (routes search
    /// without it until it is there).
    pub fn build_in_background(n: &Arc<RoadNetwork>) -> RouteGraph {
        let g = RouteGraph::build_base(n);
        let (cell, network) = (g.hierarchy.clone(), n.clone());
        let (from, to) = (g.row_from.clone(), g.row_to.clone());
        let vertices = g.vertex_count();
        let spawned = std::thread::Builder::new()
            .name("route-hierarchy".into())
            .spawn(move || {
                let n = &network;
                let h = Hierarchy::build(vertices, &from, &to, &n.length_m, |r| default_row(n, r));
                let _ = cell.set(h);
            });
        if spawned.is_err() {
            let _ = g.hierarchy.set(g.make_hierarchy(n.as_ref()));
        }
        g
    }

    /// The contraction hierarchy of this graph's default rows.
    pub fn make_hierarchy(&self, n: &RoadNetwork) -> Hierarchy {
        Hierarchy::build(
            self.vertex_count(),
            &self.row_from,
            &self.row_to,
            &n.length_m,
            |r| default_row(n, r),
        )
    }

    /// The hierarchy when made.
    #[inline]
    pub fn hierarchy(&self) -> Option<&Hierarchy> {
        self.hierarchy.get()
    }

    /// The hierarchy, waiting for it when it is being made.
    pub fn wait_for_hierarchy(&self) -> &Hierarchy {
        self.hierarchy.wait()
    }

    /// The graph and its landmarks, no hierarchy.
    pub fn build_base(n: &RoadNetwork) -> RouteGraph {
        let mut g = RouteGraph {
            bound_factor: 1.0,
            ..Default::default()
        };
        g.row_from.reserve(n.len());
        g.row_to.reserve(n.len());
        let mut inner: Option<u32> = None;
        for r in 0..n.len() {
            let geometry = n.geometry(r);
            let first = geometry.first().map_or([0.0; 2], |c| [c[0], c[1]]);
            let last = geometry.last().map_or([0.0; 2], |c| [c[0], c[1]]);
            let from = match inner.take() {
                Some(v) if r > 0 && continues(n, r - 1, r) => v,
                _ => g.node(n.start_node[r], first),
            };
            let to = if r + 1 < n.len() && continues(n, r, r + 1) {
                let v = g.vertex(0, last);
                inner = Some(v);
                v
            } else {
                g.node(n.end_node[r], last)
            };
            g.row_from.push(from);
            g.row_to.push(to);
        }
        g.link_up(n);
        let adjacency = super::landmarks::Adjacency {
            xy: &g.xy,
            offsets: &g.offsets,
            adjacent: &g.adjacent,
        };
        g.landmarks = super::landmarks::Landmarks::build(&adjacency, n);
        g
    }

    /// The vertex of node `id`, made at `xy` when new.
    fn node(&mut self, id: u64, xy: [f64; 2]) -> u32 {
        if let Some(&v) = self.node_vertex.get(&id) {
            return v;
        }
        let v = self.vertex(id, xy);
        self.node_vertex.insert(id, v);
        v
    }

    fn vertex(&mut self, node: u64, xy: [f64; 2]) -> u32 {
        self.xy.push(xy);
        self.vertex_node.push(node);
        (self.xy.len() - 1) as u32
    }

    /// The adjacency (counting sort by vertex) and the bound factor.
    fn link_up(&mut self, n: &RoadNetwork) {
        let vertices = self.xy.len();
        let mut degree = vec![0u32; vertices + 1];
        for r in 0..self.row_from.len() {
            degree[self.row_from[r] as usize] += 1;
            degree[self.row_to[r] as usize] += 1;
        }
        self.offsets = Vec::with_capacity(vertices + 1);
        let mut sum = 0u32;
        for d in &degree[..vertices] {
            self.offsets.push(sum);
            sum += d;
        }
        self.offsets.push(sum);
        let mut fill: Vec<u32> = self.offsets[..vertices].to_vec();
        self.adjacent = vec![(0, 0); sum as usize];
        for r in 0..self.row_from.len() {
            let (a, b) = (self.row_from[r], self.row_to[r]);
            self.adjacent[fill[a as usize] as usize] = (b, r as u32);
            fill[a as usize] += 1;
            self.adjacent[fill[b as usize] as usize] = (a, r as u32);
            fill[b as usize] += 1;
            let chord = distance(self.xy[a as usize], self.xy[b as usize]);
            if chord > 0.0 {
                self.bound_factor = self.bound_factor.min(n.length_m[r] / chord);
            }
        }
        self.bound_factor = self.bound_factor.max(0.0);
    }

    pub fn vertex_count(&self) -> usize {
        self.xy.len()
    }

    /// (neighbour, row) pairs of vertex `v`.
    #[inline]
    pub fn edges(&self, v: u32) -> &[(u32, u32)] {
        &self.adjacent[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }

    /// Straight distance between two vertices.
    #[inline]
    pub fn straight(&self, a: u32, b: u32) -> f64 {
        distance(self.xy[a as usize], self.xy[b as usize])
    }

    /// Bytes the graph holds (about).
    pub fn heap_bytes(&self) -> usize {
        self.xy.len() * 16
            + self.offsets.len() * 4
            + self.adjacent.len() * 8
            + self.row_from.len() * 8
            + self.vertex_node.len() * 8
            + self.node_vertex.capacity() * 16
            + self.landmarks.heap_bytes()
            + self.hierarchy().map_or(0, Hierarchy::heap_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        n: &mut RoadNetwork,
        link: u64,
        from: f64,
        to: f64,
        nodes: (u64, u64),
        xy: [[f64; 2]; 2],
    ) {
        n.link_id.push(link);
        n.from_pos.push(from);
        n.to_pos.push(to);
        n.start_node.push(nodes.0);
        n.end_node.push(nodes.1);
        n.topology_level.push(0);
        n.length_m.push(distance(xy[0], xy[1]));
        n.coords.push([xy[0][0], xy[0][1], 0.0]);
        n.coords.push([xy[1][0], xy[1][1], 0.0]);
        n.geom_offsets.push(n.coords.len() as u32);
    }

    #[test]
    fn rows_of_one_veglenke_share_inner_vertices() {
        let mut n = RoadNetwork {
            geom_offsets: vec![0],
            ..Default::default()
        };
        // link 1 in two rows from node 10 to node 11; link 2 from node 11 to node 12
        row(&mut n, 1, 0.0, 0.5, (10, 11), [[0.0, 0.0], [5.0, 0.0]]);
        row(&mut n, 1, 0.5, 1.0, (10, 11), [[5.0, 0.0], [10.0, 0.0]]);
        row(&mut n, 2, 0.0, 1.0, (11, 12), [[10.0, 0.0], [10.0, 10.0]]);
        let g = RouteGraph::build(&n);
        assert_eq!(g.vertex_count(), 4);
        assert_eq!(g.row_to[0], g.row_from[1]);
        assert_eq!(g.row_to[1], g.row_from[2]);
        assert_eq!(g.vertex_node[g.row_to[0] as usize], 0);
        assert_eq!(g.node_vertex[&11], g.row_to[1]);
        assert_eq!(g.edges(g.row_to[1]).len(), 2);
        assert!((g.bound_factor - 1.0).abs() < 1e-12);
    }
}
