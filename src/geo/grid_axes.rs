//! A regular grid of `n` × `n` cells over a rectangle: which cells a box covers. The tiles of
//! object rows (`generation::spatial`) divide by the step (`cell_ranges`); the polygon's cells
//! (`area_polygon::grid`) multiply by its reciprocal (`cell_index_by`). Either is monotone, and
//! a grid uses one throughout, so a box covers every cell a point of it falls in.

use std::ops::RangeInclusive;

/// The index of the cell `v` falls in on an axis from `lo` in steps of `step`
/// (`floor((v - lo) / step)`, clamped to `0..n`: the cast truncates, which is the floor of what
/// is not negative).
pub fn cell_index(v: f64, lo: f64, step: f64, n: usize) -> usize {
    (((v - lo) / step).max(0.0) as usize).min(n - 1)
}

/// The index of the cell `v` falls in on an axis from `lo`, with `per` cells per unit (the
/// step's reciprocal): `floor((v - lo) * per)`, clamped to `0..n`. Monotone in `v` as
/// [`cell_index`] is, without a division; a grid must use one of the two throughout.
pub fn cell_index_by(v: f64, lo: f64, per: f64, n: usize) -> usize {
    (((v - lo) * per).max(0.0) as usize).min(n - 1)
}

/// The column and row index ranges a rectangle covers.
pub type CellRanges = (RangeInclusive<usize>, RangeInclusive<usize>);

/// As [`cell_ranges`], with `per` cells per unit on each axis ([`cell_index_by`]).
pub fn cell_ranges_by(b: [f64; 4], [x0, y0]: [f64; 2], [px, py]: [f64; 2], n: usize) -> CellRanges {
    (
        cell_index_by(b[0], x0, px, n)..=cell_index_by(b[2], x0, px, n),
        cell_index_by(b[1], y0, py, n)..=cell_index_by(b[3], y0, py, n),
    )
}

/// The column and row index ranges of `n` × `n` cells of size `w` × `h` from (`x0`, `y0`) that
/// rectangle `b` (`[xmin, ymin, xmax, ymax]`) covers, clamped to the grid.
pub fn cell_ranges(b: [f64; 4], [x0, y0]: [f64; 2], [w, h]: [f64; 2], n: usize) -> CellRanges {
    (
        cell_index(b[0], x0, w, n)..=cell_index(b[2], x0, w, n),
        cell_index(b[1], y0, h, n)..=cell_index(b[3], y0, h, n),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Multiplying by the reciprocal is monotone, clamped, and off the division's cell by
        /// at most one (only at a cell's bound).
        #[test]
        fn the_reciprocal_index_is_monotone(
            lo in -1e6f64..1e6, step in 0.01f64..5e4, a in -1e6f64..3e6, d in 0.0f64..1e5,
        ) {
            let n = 64;
            let (i, j) = (cell_index_by(a, lo, 1.0 / step, n), cell_index_by(a + d, lo, 1.0 / step, n));
            proptest::prop_assert!(i <= j && j < n);
            proptest::prop_assert!(i.abs_diff(cell_index(a, lo, step, n)) <= 1);
        }
    }

    /// Every index is the floor of the position over the step, clamped: against a walk of the
    /// cells' own bounds.
    #[test]
    fn a_box_covers_the_cells_whose_bounds_it_meets() {
        let (x0, y0, w, h, n) = (10.0, -5.0, 2.5, 4.0, 8);
        for b in [
            [10.0, -5.0, 10.0, -5.0],
            [11.0, -4.0, 17.4, 9.0],
            [-100.0, -100.0, 100.0, 100.0],
            [12.5, 3.0, 12.5, 3.0],
            [29.9, 26.9, 40.0, 40.0],
        ] {
            let covered = |v0: f64, v1: f64, lo: f64, step: f64| -> Vec<usize> {
                (0..n)
                    .filter(|&i| {
                        let (a, z) = (lo + i as f64 * step, lo + (i + 1) as f64 * step);
                        let (a, z) = (
                            if i == 0 { f64::MIN } else { a },
                            if i == n - 1 { f64::MAX } else { z },
                        );
                        v1 >= a && v0 < z
                    })
                    .collect()
            };
            let (cx, cy) = cell_ranges(b, [x0, y0], [w, h], n);
            assert_eq!(cx.collect::<Vec<_>>(), covered(b[0], b[2], x0, w), "{b:?}");
            assert_eq!(cy.collect::<Vec<_>>(), covered(b[1], b[3], y0, h), "{b:?}");
        }
    }
}
