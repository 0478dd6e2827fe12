//! One page of an object list: the rows a filter selects from a row on, as many as the page
//! takes. With a polygon the rest of the filter selects first and the polygon is decided only
//! for as many objects as the page takes.

use super::objects::{select, select_by, ObjectFilter};
use super::polygon::in_polygon_from;
use crate::generation::{Generation, TypeData};

/// One page of what `f` selects: at most `limit` rows from row `first` on, in row order — the
/// rows of [`select`] there. With a polygon ([`ObjectFilter::pages_lazily`]) everything else
/// is selected first and the polygon then decides candidates in row order only until the page
/// is full ([`in_polygon_from`]), so a page costs what it shows, not what the whole polygon
/// holds.
pub fn select_page(
    g: &Generation,
    data: &TypeData,
    f: &ObjectFilter,
    first: u32,
    limit: usize,
) -> Vec<u32> {
    match &f.polygon {
        Some(a) if f.pages_lazily() => {
            let rest = select_by(g, data, f, None);
            in_polygon_from(g, data, &rest, a, first, limit)
        }
        // read in order from `first` (a select per row would scan a container each time)
        _ => select(g, data, f).range(first..).take(limit).collect(),
    }
}

impl Generation {
    /// At most `limit` rows of `data` from row `first` on that `f` selects ([`select_page`]).
    pub fn select_objects_page(
        &self,
        data: &TypeData,
        f: &ObjectFilter,
        first: u32,
        limit: usize,
    ) -> Vec<u32> {
        select_page(self, data, f, first, limit)
    }
}
