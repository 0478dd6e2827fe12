//! A coarse grid over a polygon's bounding rectangle, each cell marked as met by an edge of
//! the polygon, or else wholly inside or wholly outside it: most points and edges of a line are
//! decided by the cells they fall in, and only those in a cell an edge meets take the exact
//! test.
//!
//! A cell is the set of points its index function maps to it (`floor((x - x0) * (1 / w))`,
//! clamped),
//! and an edge marks every cell it passes through (per row of cells, the cells of its stretch
//! in the row, padded against rounding: the function is monotone), so every point of an edge
//! falls in a marked cell, and a run of unmarked cells next to each other in a
//! row is a connected set no edge meets, inside or outside the polygon as a whole (decided by
//! the exact test of one point).

use geo::Coord;

use crate::geo::grid_axes::{cell_index_by, cell_ranges_by, CellRanges};

/// Cells per axis.
const CELLS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Outside,
    Inside,
    /// An edge of the polygon meets it: its points need the exact test.
    Edge,
}

#[derive(Debug, Clone)]
pub struct CellGrid {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
    w: f64,
    h: f64,
    /// Cells per unit on each axis (`1 / w`, `1 / h`): the index function multiplies.
    per: [f64; 2],
    cells: Vec<Cell>,
    /// Sums over the cells below and left of each corner (`(CELLS + 1)²`, row-major): how many
    /// are inside, and how many outside. A rectangle of cells is all inside (outside) when its
    /// count of inside (outside) cells is its area: four reads, whatever its size.
    inside: Vec<u32>,
    outside: Vec<u32>,
}

/// The sums over the cells below and left of each corner of the grid of those inside, and of
/// those outside (one pass: each row's running counts added to the row below's sums).
fn corner_sums(cells: &[Cell]) -> (Vec<u32>, Vec<u32>) {
    const N: usize = CELLS + 1;
    let mut inside = vec![0u32; N * N];
    let mut outside = vec![0u32; N * N];
    for j in 0..CELLS {
        let (mut row_in, mut row_out) = (0u32, 0u32);
        for i in 0..CELLS {
            let c = cells[j * CELLS + i];
            row_in += u32::from(c == Cell::Inside);
            row_out += u32::from(c == Cell::Outside);
            inside[(j + 1) * N + i + 1] = inside[j * N + i + 1] + row_in;
            outside[(j + 1) * N + i + 1] = outside[j * N + i + 1] + row_out;
        }
    }
    (inside, outside)
}

impl CellGrid {
    /// The grid over `bounds` (xmin, ymin, xmax, ymax: the polygon's rectangle) for the edges
    /// `edges`, a run of cells no edge meets decided at the first cell's centre: inside when,
    /// for one of the polygons, the edges `crossing(y)` gives along the row's middle line
    /// (each edge's polygon and its `x` there, as the polygon's ray test computes it) cross
    /// its ray to +x an odd number of times. (No edge passes through the centre of a cell no
    /// edge meets, so the boundary's own points need no test.)
    pub fn build(
        bounds: [f64; 4],
        edges: impl Iterator<Item = ([f64; 2], [f64; 2])>,
        crossing: impl Fn(f64) -> Vec<(usize, f64)>,
    ) -> CellGrid {
        let [x0, y0, x1, y1] = bounds;
        let step = |span: f64| {
            if span > 0.0 {
                span / CELLS as f64
            } else {
                1.0
            }
        };
        let mut g = CellGrid {
            x0,
            y0,
            x1,
            y1,
            w: step(x1 - x0),
            h: step(y1 - y0),
            per: [1.0 / step(x1 - x0), 1.0 / step(y1 - y0)],
            cells: vec![Cell::Outside; CELLS * CELLS],
            inside: Vec::new(),
            outside: Vec::new(),
        };
        for (a, b) in edges {
            g.mark_edge(a, b);
        }
        for j in 0..CELLS {
            let crossings = crossing(y0 + (j as f64 + 0.5) * g.h);
            let polygons = crossings.iter().map(|c| c.0 + 1).max().unwrap_or(0);
            let holds = |x: f64| {
                let mut odd = vec![false; polygons];
                for &(p, at) in &crossings {
                    if at > x {
                        odd[p] = !odd[p];
                    }
                }
                odd.contains(&true)
            };
            let mut state = None;
            for i in 0..CELLS {
                let at = j * CELLS + i;
                if g.cells[at] == Cell::Edge {
                    state = None;
                    continue;
                }
                let inside = *state.get_or_insert_with(|| holds(x0 + (i as f64 + 0.5) * g.w));
                g.cells[at] = if inside { Cell::Inside } else { Cell::Outside };
            }
        }
        (g.inside, g.outside) = corner_sums(&g.cells);
        g
    }

    /// Marks the cells edge `a`–`b` passes through: per row of cells its box spans, the
    /// cells of the edge's stretch inside the row (the row widened by a millionth of a cell,
    /// and that stretch by as much, so that no rounding leaves a point of the edge in an
    /// unmarked cell). An edge within one row or column, or nearly level, marks its box.
    fn mark_edge(&mut self, a: [f64; 2], b: [f64; 2]) {
        let (xmin, xmax) = (a[0].min(b[0]), a[0].max(b[0]));
        let (cx, cy) = self.range([xmin, a[1].min(b[1]), xmax, a[1].max(b[1])]);
        let (lo, hi) = if a[1] <= b[1] { (a, b) } else { (b, a) };
        let rise = hi[1] - lo[1];
        if cx.start() == cx.end() || cy.start() == cy.end() || rise < self.h * 1e-3 {
            for j in cy {
                self.cells[j * CELLS..(j + 1) * CELLS][cx.clone()].fill(Cell::Edge);
            }
            return;
        }
        let run = (hi[0] - lo[0]) / rise;
        let (pad_y, pad_x) = (self.h * 1e-6, self.w * 1e-6);
        let x_at = |y: f64| lo[0] + (y - lo[1]) * run;
        for j in cy {
            let from = (self.y0 + j as f64 * self.h - pad_y).max(lo[1]);
            let to = (self.y0 + (j + 1) as f64 * self.h + pad_y).min(hi[1]);
            let (p, q) = (x_at(from), x_at(to));
            let x_lo = (p.min(q) - pad_x).max(xmin);
            let x_hi = (p.max(q) + pad_x).min(xmax);
            let i0 = cell_index_by(x_lo, self.x0, self.per[0], CELLS);
            let i1 = cell_index_by(x_hi, self.x0, self.per[0], CELLS);
            self.cells[j * CELLS..(j + 1) * CELLS][i0..=i1].fill(Cell::Edge);
        }
    }

    /// How many cells of the index ranges `cx` × `cy` the corner sums `sums` count.
    fn count(
        sums: &[u32],
        cx: &std::ops::RangeInclusive<usize>,
        cy: &std::ops::RangeInclusive<usize>,
    ) -> u32 {
        const N: usize = CELLS + 1;
        let (i0, i1, j0, j1) = (*cx.start(), *cx.end() + 1, *cy.start(), *cy.end() + 1);
        sums[j1 * N + i1] + sums[j0 * N + i0] - sums[j0 * N + i1] - sums[j1 * N + i0]
    }

    /// The cell index ranges a rectangle covers (the rectangle clamped to the grid).
    fn range(&self, b: [f64; 4]) -> CellRanges {
        cell_ranges_by(b, [self.x0, self.y0], self.per, CELLS)
    }

    /// What the cells of a rectangle (in the polygon's system) say of every point in it:
    /// `Inside` or `Outside` when all say so, else `Edge` (the exact test decides). A
    /// rectangle wholly beyond the grid is outside.
    pub fn of_box(&self, b: [f64; 4]) -> Cell {
        if b[2] < self.x0 || b[0] > self.x1 || b[3] < self.y0 || b[1] > self.y1 {
            return Cell::Outside;
        }
        let (cx, cy) = self.range(b);
        let area = (cx.end() + 1 - cx.start()) as u32 * (cy.end() + 1 - cy.start()) as u32;
        // partly beyond the grid: outside there, so at best all outside
        let beyond = b[0] < self.x0 || b[2] > self.x1 || b[1] < self.y0 || b[3] > self.y1;
        if !beyond && Self::count(&self.inside, &cx, &cy) == area {
            return Cell::Inside;
        }
        if Self::count(&self.outside, &cx, &cy) == area {
            return Cell::Outside;
        }
        Cell::Edge
    }

    /// The number of rows of cells.
    pub const ROWS: usize = CELLS;

    /// The row of cells `y` falls in (clamped to the grid).
    pub fn row_of(&self, y: f64) -> usize {
        cell_index_by(y, self.y0, self.per[1], CELLS)
    }

    /// What the cell of a point says of it (as [`Self::of_box`] says of the point's box, read
    /// from the one cell).
    pub fn of_point(&self, c: Coord<f64>) -> Cell {
        if c.x < self.x0 || c.x > self.x1 || c.y < self.y0 || c.y > self.y1 {
            return Cell::Outside;
        }
        let i = cell_index_by(c.x, self.x0, self.per[0], CELLS);
        let j = cell_index_by(c.y, self.y0, self.per[1], CELLS);
        self.cells[j * CELLS + i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the cells of a rectangle say, read cell by cell.
    fn of_box_by_cells(g: &CellGrid, b: [f64; 4]) -> Cell {
        if b[2] < g.x0 || b[0] > g.x1 || b[3] < g.y0 || b[1] > g.y1 {
            return Cell::Outside;
        }
        let (cx, cy) = g.range(b);
        let seen: Vec<Cell> = cy
            .flat_map(|j| cx.clone().map(move |i| g.cells[j * CELLS + i]))
            .collect();
        let beyond = b[0] < g.x0 || b[2] > g.x1 || b[1] < g.y0 || b[3] > g.y1;
        if seen.iter().all(|&c| c == Cell::Outside) {
            Cell::Outside
        } else if !beyond && seen.iter().all(|&c| c == Cell::Inside) {
            Cell::Inside
        } else {
            Cell::Edge
        }
    }

    proptest::proptest! {
        /// The corner sums answer for every rectangle what its cells say one by one (a disc
        /// of edges around the middle, rectangles in, across and beyond the grid).
        #[test]
        fn sums_answer_as_the_cells(
            r in 50.0f64..480.0,
            boxes in proptest::collection::vec((-200.0f64..1200.0, -200.0f64..1200.0, 0.0f64..600.0, 0.0f64..600.0), 1..60),
        ) {
            let n = 40;
            let ring: Vec<[f64; 2]> = (0..=n)
                .map(|k| {
                    let a = k as f64 / n as f64 * std::f64::consts::TAU;
                    [500.0 + r * a.cos(), 500.0 + r * a.sin()]
                })
                .collect();
            let g = CellGrid::build(
                [0.0, 0.0, 1000.0, 1000.0],
                ring.windows(2).map(|w| (w[0], w[1])),
                |y| {
                    let d = (r * r - (y - 500.0) * (y - 500.0)).max(0.0).sqrt();
                    if d > 0.0 { vec![(0, 500.0 - d), (0, 500.0 + d)] } else { vec![] }
                },
            );
            proptest::prop_assert!(g.cells.contains(&Cell::Edge));
            // every point of an edge lies in a cell marked as met by an edge
            for w in ring.windows(2) {
                for k in 0..=64 {
                    let t = k as f64 / 64.0;
                    let c = Coord {
                        x: w[0][0] + (w[1][0] - w[0][0]) * t,
                        y: w[0][1] + (w[1][1] - w[0][1]) * t,
                    };
                    proptest::prop_assert_eq!(g.of_point(c), Cell::Edge, "{:?} on {:?}", c, w);
                }
            }
            for (x, y, w, h) in boxes {
                let b = [x, y, x + w, y + h];
                proptest::prop_assert_eq!(g.of_box(b), of_box_by_cells(&g, b), "{:?}", b);
                let c = Coord { x, y };
                proptest::prop_assert_eq!(g.of_point(c), of_box_by_cells(&g, [x, y, x, y]), "{:?}", c);
            }
        }
    }
}
