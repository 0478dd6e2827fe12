//! A contraction hierarchy over the routing graph's rows of topology level 0 (the rows a route
//! may use by default): exact shortest routes searching a few hundred vertices instead of a
//! region of the network.
//!
//! Vertices are contracted one by one, least important first (importance: the shortcuts its
//! contraction adds less its edges, plus its contracted neighbours and its depth). Contracting
//! v joins each pair of its remaining neighbours u, w by a shortcut of length d(u, v) + d(v, w)
//! unless a witness search (a Dijkstra from u around v, bounded in distance and in vertices
//! settled) finds a path no longer; a bounded search only adds shortcuts that were not needed,
//! never misses one, so the hierarchy stays exact. Between one pair of vertices only the
//! shorter edge is kept. What remains of v's edges when it is contracted are its upward edges
//! (to vertices contracted later): a shortest route is a path up from the start and a path up
//! from the end that meet, which a search over upward edges from both ends finds
//! (`query::route`). A shortcut names its middle vertex; the middle vertex's upward edges hold
//! its two halves, so a route unpacks to rows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

/// Marks an upward edge's `via` as a shortcut (the rest is its middle vertex), else a row.
pub const SHORTCUT: u32 = 1 << 31;

/// Vertices a witness search settles at most.
const WITNESS_SETTLED: usize = 120;

/// The upward graph (see the module doc).
#[derive(Debug, Default)]
pub struct Hierarchy {
    /// Upward edges of vertex v: `up_offsets[v]..up_offsets[v + 1]` into the arrays below.
    pub up_offsets: Vec<u32>,
    pub up_to: Vec<u32>,
    pub up_len: Vec<f64>,
    /// The edge's row, or `SHORTCUT | middle vertex`.
    pub up_via: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Arc {
    to: u32,
    len: f64,
    via: u32,
}

/// Adds the edge to `to` to a vertex's list, or shortens the one there.
fn upsert(list: &mut Vec<Arc>, to: u32, len: f64, via: u32) {
    match list.iter_mut().find(|e| e.to == to) {
        Some(e) => {
            if len < e.len {
                e.len = len;
                e.via = via;
            }
        }
        None => list.push(Arc { to, len, via }),
    }
}

/// A bounded Dijkstra's arrays, reused between searches.
struct Witness {
    stamp: u32,
    stamps: Vec<u32>,
    dist: Vec<f64>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Witness {
    fn new(vertices: usize) -> Witness {
        Witness {
            stamp: 0,
            stamps: vec![0; vertices],
            dist: vec![0.0; vertices],
            heap: BinaryHeap::new(),
        }
    }

    fn get(&self, v: u32) -> f64 {
        if self.stamps[v as usize] == self.stamp {
            self.dist[v as usize]
        } else {
            f64::INFINITY
        }
    }

    /// Distances from `from` avoiding `skip`, exact up to `limit` or until `WITNESS_SETTLED`
    /// vertices are settled (then longer than found is possible: `get` may overestimate).
    fn run(&mut self, adj: &[Vec<Arc>], from: u32, skip: u32, limit: f64) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.stamps.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        self.heap.clear();
        self.stamps[from as usize] = self.stamp;
        self.dist[from as usize] = 0.0;
        self.heap.push(Reverse((0, from)));
        let mut settled = 0;
        while let Some(Reverse((bits, v))) = self.heap.pop() {
            let d = f64::from_bits(bits);
            if d > self.get(v) {
                continue;
            }
            settled += 1;
            if d > limit || settled > WITNESS_SETTLED {
                break;
            }
            for e in &adj[v as usize] {
                if e.to == skip {
                    continue;
                }
                let nd = d + e.len;
                if nd < self.get(e.to) {
                    self.stamps[e.to as usize] = self.stamp;
                    self.dist[e.to as usize] = nd;
                    self.heap.push(Reverse((nd.to_bits(), e.to)));
                }
            }
        }
    }
}

/// The shortcuts contracting `v` needs now: (u, w, length).
fn shortcuts(adj: &[Vec<Arc>], v: u32, w: &mut Witness) -> Vec<(u32, u32, f64)> {
    let around = &adj[v as usize];
    let mut out = Vec::new();
    for (i, a) in around.iter().enumerate() {
        let rest = &around[i + 1..];
        let Some(longest) = rest.iter().map(|b| b.len).reduce(f64::max) else {
            continue;
        };
        w.run(adj, a.to, v, a.len + longest);
        for b in rest {
            let through = a.len + b.len;
            if w.get(b.to) > through {
                out.push((a.to, b.to, through));
            }
        }
    }
    out
}

/// Contraction order key of `v` were it to add `added` shortcuts: lower first.
fn priority(adj: &[Vec<Arc>], v: u32, added: usize, deleted: &[u32], depth: &[u32]) -> i64 {
    let v = v as usize;
    2 * (added as i64 - adj[v].len() as i64) + deleted[v] as i64 + depth[v] as i64
}

impl Hierarchy {
    /// The hierarchy of the undirected graph of `vertices` vertices whose edges are the rows
    /// `r` with `usable(r)`, from `row_from[r]` to `row_to[r]`, of `length[r]`.
    pub fn build(
        vertices: usize,
        row_from: &[u32],
        row_to: &[u32],
        length: &[f64],
        usable: impl Fn(usize) -> bool,
    ) -> Hierarchy {
        let mut adj: Vec<Vec<Arc>> = vec![Vec::new(); vertices];
        for r in 0..row_from.len() {
            let (a, b) = (row_from[r], row_to[r]);
            if a != b && usable(r) {
                upsert(&mut adj[a as usize], b, length[r], r as u32);
                upsert(&mut adj[b as usize], a, length[r], r as u32);
            }
        }
        let mut deleted = vec![0u32; vertices];
        let mut depth = vec![0u32; vertices];
        let initial: Vec<i64> = (0..vertices as u32)
            .into_par_iter()
            .map_init(
                || Witness::new(vertices),
                |w, v| priority(&adj, v, shortcuts(&adj, v, w).len(), &deleted, &depth),
            )
            .collect();
        let mut heap: BinaryHeap<Reverse<(i64, u32)>> = initial
            .iter()
            .enumerate()
            .map(|(v, &p)| Reverse((p, v as u32)))
            .collect();
        let mut w = Witness::new(vertices);
        let mut up: Vec<Vec<Arc>> = vec![Vec::new(); vertices];
        let mut done = vec![false; vertices];
        while let Some(Reverse((_, v))) = heap.pop() {
            if done[v as usize] {
                continue;
            }
            let added = shortcuts(&adj, v, &mut w);
            let p = priority(&adj, v, added.len(), &deleted, &depth);
            if let Some(&Reverse((next, _))) = heap.peek() {
                if p > next {
                    heap.push(Reverse((p, v)));
                    continue;
                }
            }
            let edges = std::mem::take(&mut adj[v as usize]);
            for e in &edges {
                let list = &mut adj[e.to as usize];
                list.retain(|x| x.to != v);
                deleted[e.to as usize] += 1;
                depth[e.to as usize] = depth[e.to as usize].max(depth[v as usize] + 1);
            }
            for (a, b, len) in added {
                upsert(&mut adj[a as usize], b, len, SHORTCUT | v);
                upsert(&mut adj[b as usize], a, len, SHORTCUT | v);
            }
            up[v as usize] = edges;
            done[v as usize] = true;
        }
        Hierarchy::flatten(up)
    }

    fn flatten(up: Vec<Vec<Arc>>) -> Hierarchy {
        let total: usize = up.iter().map(Vec::len).sum();
        let mut h = Hierarchy {
            up_offsets: Vec::with_capacity(up.len() + 1),
            up_to: Vec::with_capacity(total),
            up_len: Vec::with_capacity(total),
            up_via: Vec::with_capacity(total),
        };
        for list in up {
            h.up_offsets.push(h.up_to.len() as u32);
            for e in list {
                h.up_to.push(e.to);
                h.up_len.push(e.len);
                h.up_via.push(e.via);
            }
        }
        h.up_offsets.push(h.up_to.len() as u32);
        h
    }

    /// The upward edges of `v`: indexes into `up_to`, `up_len`, `up_via`.
    #[inline]
    pub fn up(&self, v: u32) -> std::ops::Range<usize> {
        self.up_offsets[v as usize] as usize..self.up_offsets[v as usize + 1] as usize
    }

    /// The rows of the upward edge `e` walked from its lower vertex `from` (`true`) or towards
    /// it, in travel order, each with the vertex it is entered at, appended to `out`.
    pub fn unpack(&self, from: u32, e: usize, upward: bool, out: &mut Vec<(u32, u32)>) {
        // (lower vertex, edge, walked upward) still to unpack, the next on top
        let mut stack = vec![(from, e, upward)];
        while let Some((low, e, upward)) = stack.pop() {
            let (high, via) = (self.up_to[e], self.up_via[e]);
            if via & SHORTCUT == 0 {
                out.push((via, if upward { low } else { high }));
                continue;
            }
            let mid = via & !SHORTCUT;
            let half = |end: u32| self.up(mid).find(|&i| self.up_to[i] == end);
            let (Some(to_low), Some(to_high)) = (half(low), half(high)) else {
                continue;
            };
            // low - mid - high: mid's edges to low and to high, walked down then up or back
            if upward {
                stack.push((mid, to_high, true));
                stack.push((mid, to_low, false));
            } else {
                stack.push((mid, to_low, true));
                stack.push((mid, to_high, false));
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.up_offsets.len() * 4 + self.up_to.len() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path 0-1-2-3 and a long edge 0-3: contracting the middle adds shortcuts whose
    /// unpacking gives the rows back in order.
    #[test]
    fn shortcuts_unpack_to_their_rows() {
        let from = [0, 1, 2, 0];
        let to = [1, 2, 3, 3];
        let len = [1.0, 1.0, 1.0, 10.0];
        let h = Hierarchy::build(4, &from, &to, &len, |_| true);
        // the shortest 0 -> 3 by upward edges from both ends
        let mut best = (f64::INFINITY, Vec::new());
        for e0 in h.up(0) {
            for e3 in h.up(3) {
                if h.up_to[e0] == h.up_to[e3] && h.up_len[e0] + h.up_len[e3] < best.0 {
                    let mut rows = Vec::new();
                    h.unpack(0, e0, true, &mut rows);
                    h.unpack(3, e3, false, &mut rows);
                    best = (h.up_len[e0] + h.up_len[e3], rows);
                }
            }
            if h.up_to[e0] == 3 && h.up_len[e0] < best.0 {
                let mut rows = Vec::new();
                h.unpack(0, e0, true, &mut rows);
                best = (h.up_len[e0], rows);
            }
        }
        assert_eq!(best.0, 3.0);
        let rows: Vec<u32> = best.1.iter().map(|r| r.0).collect();
        assert_eq!(rows, vec![0, 1, 2]);
        assert_eq!(best.1[0].1, 0);
        assert_eq!(best.1[2].1, 2);
    }
}
