//! A coarse grid over a polygon's bounding rectangle, each cell marked as met by an edge of
//! the polygon, or else wholly inside or wholly outside it: most points and edges of a line are
//! decided by the cells they fall in, and only those in a cell an edge meets take the exact
//! test.
//!
//! A cell is the set of points its index function maps to it (`floor((x - x0) / w)`, clamped),
//! and an edge marks every cell of its bounding rectangle: the function is monotone, so every
//! point of an edge falls in a marked cell, and a run of unmarked cells next to each other in a
//! row is a connected set no edge meets, inside or outside the polygon as a whole (decided by
//! the exact test of one point).

use geo::Coord;

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
    cells: Vec<Cell>,
}

impl CellGrid {
    /// The grid over `bounds` (xmin, ymin, xmax, ymax: the polygon's rectangle) for the edges
    /// `edges`, a run of cells no edge meets decided by `holds` at the first cell's centre.
    pub fn build(
        bounds: [f64; 4],
        edges: impl Iterator<Item = ([f64; 2], [f64; 2])>,
        holds: impl Fn(Coord<f64>) -> bool,
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
            cells: vec![Cell::Outside; CELLS * CELLS],
        };
        for (a, b) in edges {
            let (cx, cy) = g.range([
                a[0].min(b[0]),
                a[1].min(b[1]),
                a[0].max(b[0]),
                a[1].max(b[1]),
            ]);
            for j in cy.clone() {
                for i in cx.clone() {
                    g.cells[j * CELLS + i] = Cell::Edge;
                }
            }
        }
        for j in 0..CELLS {
            let mut state = None;
            for i in 0..CELLS {
                let at = j * CELLS + i;
                if g.cells[at] == Cell::Edge {
                    state = None;
                    continue;
                }
                let inside = *state.get_or_insert_with(|| {
                    holds(Coord {
                        x: x0 + (i as f64 + 0.5) * g.w,
                        y: y0 + (j as f64 + 0.5) * g.h,
                    })
                });
                g.cells[at] = if inside { Cell::Inside } else { Cell::Outside };
            }
        }
        g
    }

    fn index(v: f64, lo: f64, step: f64) -> usize {
        (((v - lo) / step).floor().max(0.0) as usize).min(CELLS - 1)
    }

    /// The cell index ranges a rectangle covers (the rectangle clamped to the grid).
    fn range(
        &self,
        b: [f64; 4],
    ) -> (
        std::ops::RangeInclusive<usize>,
        std::ops::RangeInclusive<usize>,
    ) {
        (
            Self::index(b[0], self.x0, self.w)..=Self::index(b[2], self.x0, self.w),
            Self::index(b[1], self.y0, self.h)..=Self::index(b[3], self.y0, self.h),
        )
    }

    /// What the cells of a rectangle (in the polygon's system) say of every point in it:
    /// `Inside` or `Outside` when all say so, else `Edge` (the exact test decides). A
    /// rectangle wholly beyond the grid is outside.
    pub fn of_box(&self, b: [f64; 4]) -> Cell {
        if b[2] < self.x0 || b[0] > self.x1 || b[3] < self.y0 || b[1] > self.y1 {
            return Cell::Outside;
        }
        if b[0] < self.x0 || b[2] > self.x1 || b[1] < self.y0 || b[3] > self.y1 {
            // partly beyond the grid: outside there, so at best all outside
            let (cx, cy) = self.range(b);
            let all_out = cy
                .flat_map(|j| cx.clone().map(move |i| (i, j)))
                .all(|(i, j)| self.cells[j * CELLS + i] == Cell::Outside);
            return if all_out { Cell::Outside } else { Cell::Edge };
        }
        let (cx, cy) = self.range(b);
        let first = self.cells[*cy.start() * CELLS + *cx.start()];
        if first == Cell::Edge {
            return Cell::Edge;
        }
        let same = cy
            .flat_map(|j| cx.clone().map(move |i| (i, j)))
            .all(|(i, j)| self.cells[j * CELLS + i] == first);
        if same {
            first
        } else {
            Cell::Edge
        }
    }

    /// What the cell of a point says of it.
    pub fn of_point(&self, c: Coord<f64>) -> Cell {
        self.of_box([c.x, c.y, c.x, c.y])
    }
}
