//! Landmarks for the routing graph's A* estimate (ALT: A*, landmarks, triangle inequality).
//! For a few vertices L far out on the network, the network distance from L to every vertex;
//! then for any vertices v and t, `|d(L, v) - d(L, t)| <= d(v, t)` (the triangle inequality),
//! a lower bound that, unlike the straight distance, knows where the roads go.
//!
//! The distances are over every row of the network (each an undirected edge of its length), so
//! they bound any route's length whatever rows its filter leaves out (a route over fewer rows
//! is never shorter). Landmarks: the vertices of the largest connected part farthest out in
//! eight compass directions, their searches run in parallel.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use crate::snapshot::columns::RoadNetwork;

/// The graph the landmarks are over: the routing graph's arrays (`index::graph`).
pub struct Adjacency<'a> {
    /// Plane coordinates of each vertex.
    pub xy: &'a [[f64; 2]],
    /// Adjacency of vertex v: `adjacent[offsets[v]..offsets[v + 1]]`, (neighbour, row) pairs.
    pub offsets: &'a [u32],
    pub adjacent: &'a [(u32, u32)],
}

impl Adjacency<'_> {
    fn vertex_count(&self) -> usize {
        self.xy.len()
    }

    fn edges(&self, v: u32) -> &[(u32, u32)] {
        &self.adjacent[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }
}

/// Landmarks per graph.
pub const LANDMARKS: usize = 8;

/// Network distances from each landmark to each vertex, vertex-major (`v * count + i`);
/// infinite where a vertex cannot be reached from that landmark.
#[derive(Debug, Default)]
pub struct Landmarks {
    pub count: usize,
    pub distances: Vec<f64>,
}

impl Landmarks {
    pub fn build(g: &Adjacency, n: &RoadNetwork) -> Landmarks {
        let picks = pick(g);
        let columns: Vec<Vec<f64>> = picks.par_iter().map(|&l| dijkstra(g, n, l)).collect();
        let count = columns.len();
        let mut distances = vec![f64::INFINITY; g.vertex_count() * count];
        for (i, col) in columns.iter().enumerate() {
            for (v, &d) in col.iter().enumerate() {
                distances[v * count + i] = d;
            }
        }
        Landmarks { count, distances }
    }

    /// The distances of vertex `v` from each landmark.
    #[inline]
    pub fn of(&self, v: u32) -> &[f64] {
        &self.distances[v as usize * self.count..(v as usize + 1) * self.count]
    }

    /// A lower bound of the network distance between vertices with landmark distances `a` and
    /// `b` (0 when no landmark reaches both).
    #[inline]
    pub fn bound(a: &[f64], b: &[f64]) -> f64 {
        let mut best = 0.0f64;
        for (x, y) in a.iter().zip(b) {
            if x.is_finite() && y.is_finite() {
                best = best.max((x - y).abs());
            }
        }
        // the sums along two searches round differently: stay below the exact bound
        (best - 1e-3).max(0.0)
    }

    pub fn heap_bytes(&self) -> usize {
        self.distances.len() * 8
    }
}

/// The vertices of the largest connected part farthest out in eight compass directions
/// (duplicates dropped).
fn pick(g: &Adjacency) -> Vec<u32> {
    let vertices = g.vertex_count();
    if vertices == 0 {
        return Vec::new();
    }
    // connected parts by union-find over the edges
    let mut parent: Vec<u32> = (0..vertices as u32).collect();
    fn root(parent: &mut [u32], mut v: u32) -> u32 {
        while parent[v as usize] != v {
            parent[v as usize] = parent[parent[v as usize] as usize];
            v = parent[v as usize];
        }
        v
    }
    for v in 0..vertices as u32 {
        for &(w, _) in g.edges(v) {
            let (a, b) = (root(&mut parent, v), root(&mut parent, w));
            if a != b {
                parent[a.max(b) as usize] = a.min(b);
            }
        }
    }
    let part: Vec<u32> = (0..vertices as u32).map(|v| root(&mut parent, v)).collect();
    let mut size = vec![0u32; vertices];
    for &r in &part {
        size[r as usize] += 1;
    }
    let largest = (0..vertices).max_by_key(|&r| size[r]).unwrap_or(0) as u32;
    let mut picks: Vec<u32> = Vec::with_capacity(LANDMARKS);
    for i in 0..LANDMARKS {
        let a = i as f64 / LANDMARKS as f64 * std::f64::consts::TAU;
        let (c, s) = (a.cos(), a.sin());
        let far = (0..vertices as u32)
            .filter(|&v| part[v as usize] == largest)
            .max_by(|&x, &y| {
                let px = g.xy[x as usize][0] * c + g.xy[x as usize][1] * s;
                let py = g.xy[y as usize][0] * c + g.xy[y as usize][1] * s;
                px.total_cmp(&py)
            });
        if let Some(v) = far {
            if !picks.contains(&v) {
                picks.push(v);
            }
        }
    }
    picks
}

/// Network distances from vertex `from` over every row.
fn dijkstra(g: &Adjacency, n: &RoadNetwork, from: u32) -> Vec<f64> {
    let mut dist = vec![f64::INFINITY; g.vertex_count()];
    let mut heap = BinaryHeap::new();
    dist[from as usize] = 0.0;
    // non-negative f64 order as their bits
    heap.push(Reverse((0u64, from)));
    while let Some(Reverse((bits, v))) = heap.pop() {
        let d = f64::from_bits(bits);
        if d > dist[v as usize] {
            continue;
        }
        for &(w, row) in g.edges(v) {
            let nd = d + n.length_m[row as usize];
            if nd < dist[w as usize] {
                dist[w as usize] = nd;
                heap.push(Reverse((nd.to_bits(), w)));
            }
        }
    }
    dist
}
