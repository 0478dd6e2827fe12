//! Prepared polygons (`polygon=`), kept per generation: a client paging through the objects
//! in a polygon sends the same polygon with every page, and preparing it (parsing, checking,
//! the R-tree of its edges, the grid of cells and the edges per row of cells) is most of what
//! a page costs beyond the `kommune=` page. The last [`PolygonCache::CAPACITY`] polygons asked
//! for are kept, keyed by (srid, the parameter's text); a polygon is at most
//! `MAX_POLYGON_VERTICES` vertices and its grid ~40 kB, so the cache holds at most a few MB.
//! Reads take no lock (an `ArcSwap` of the list); a new polygon replaces the list.

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::geo::area_polygon::AreaPolygon;
use crate::geo::srid::Srid;

struct Entry {
    srid: Srid,
    text: Box<str>,
    polygon: Arc<AreaPolygon>,
}

impl Entry {
    /// Is this the polygon of `text` in `srid`?
    fn is(&self, srid: Srid, text: &str) -> bool {
        self.srid == srid && &*self.text == text
    }
}

/// The last polygons asked for, newest first.
#[derive(Default)]
pub struct PolygonCache {
    entries: ArcSwap<Vec<Arc<Entry>>>,
}

impl std::fmt::Debug for PolygonCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PolygonCache({} polygons)", self.entries.load().len())
    }
}

impl PolygonCache {
    /// Polygons kept.
    pub const CAPACITY: usize = 16;

    /// The polygon of `text` in `srid`: the one kept, else `make`'s (kept when it is made;
    /// an error is not).
    pub fn get_or_try<E>(
        &self,
        srid: Srid,
        text: &str,
        make: impl FnOnce() -> Result<AreaPolygon, E>,
    ) -> Result<Arc<AreaPolygon>, E> {
        if let Some(e) = self.entries.load().iter().find(|e| e.is(srid, text)) {
            return Ok(e.polygon.clone());
        }
        let polygon = Arc::new(make()?);
        let entry = Arc::new(Entry {
            srid,
            text: text.into(),
            polygon: polygon.clone(),
        });
        self.entries.rcu(|old| {
            let mut v = Vec::with_capacity(Self::CAPACITY);
            v.push(entry.clone());
            v.extend(
                old.iter()
                    .filter(|e| !e.is(srid, text))
                    .take(Self::CAPACITY - 1)
                    .cloned(),
            );
            v
        });
        Ok(polygon)
    }

    /// Polygons kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.load().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geo::{polygon, MultiPolygon};

    fn square(side: f64) -> AreaPolygon {
        let p =
            polygon![(x: 0.0, y: 0.0), (x: side, y: 0.0), (x: side, y: side), (x: 0.0, y: side)];
        AreaPolygon::new(Srid::Utm33Etrs89, MultiPolygon(vec![p])).unwrap()
    }

    #[test]
    fn keeps_the_last_polygons_by_srid_and_text() {
        let c = PolygonCache::default();
        let made = std::cell::Cell::new(0);
        let get = |srid, text: &str, side| {
            c.get_or_try(srid, text, || {
                made.set(made.get() + 1);
                Ok::<_, ()>(square(side))
            })
            .unwrap()
        };
        let a = get(Srid::Utm33Etrs89, "a", 1.0);
        let again = get(Srid::Utm33Etrs89, "a", 2.0);
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(made.get(), 1);
        // another srid is another polygon
        get(Srid::Wgs84, "a", 1.0);
        assert_eq!(made.get(), 2);
        // an error is not kept
        assert!(c.get_or_try(Srid::Utm33Etrs89, "bad", || Err(())).is_err());
        assert_eq!(c.len(), 2);
        // the oldest goes when more than CAPACITY are asked for
        for i in 0..PolygonCache::CAPACITY {
            get(Srid::Utm33Etrs89, &format!("p{i}"), 1.0);
        }
        assert_eq!(c.len(), PolygonCache::CAPACITY);
        let before = made.get();
        get(Srid::Utm33Etrs89, "a", 1.0);
        assert_eq!(made.get(), before + 1, "the first polygon was dropped");
        get(
            Srid::Utm33Etrs89,
            &format!("p{}", PolygonCache::CAPACITY - 1),
            1.0,
        );
        assert_eq!(made.get(), before + 1, "the newest are kept");
    }
}
