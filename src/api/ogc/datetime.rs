//! The items' `datetime` parameter (OGC API Features Part 1, 7.15.4) over the versions of the
//! generation (`Generation::at`, `Generation::history`).
//!
//! - An instant, `2019-06-01` or an RFC 3339 date-time (`2019-06-01T12:00:00Z`: its date as
//!   written), answers the features valid on that day: the items of the generation as it was
//!   then (`Generation::at`; a day at or after today: the current generation, byte for byte).
//!   Bounding boxes and property filters apply as without `datetime`, on that day's indexes.
//! - An interval, `a/b` (both days included), `../b` or `a/..` (open; an empty end is open
//!   too), answers every version whose validity [startdato, sluttdato) meets it: current rows
//!   and closed ones (history), in (nvdbId, versjon) order, so an object may be there more than
//!   once (each feature carries its `versjon`). A closed version is written on the current
//!   generation (its placements on today's network; on a link that no longer exists it has no
//!   geometry), as `alle_versjoner` on the v2 API does. Intervals are served on the object
//!   collections, without `bbox` or property filters (today's indexes know only the current
//!   versions): those, and an interval on `vegnett`, are 400. `..` alone is read as `../..`.
//! - Anything else (a bad date, an end before its start, more than one `/`) is 400.

use std::sync::Arc;

use super::error::{OgcError, OgcResult};
use crate::api::geojson::{self, Crs, Features};
use crate::generation::feature::FeatureOptions;
use crate::generation::rows::ObjectRow;
use crate::generation::{Generation, TypeData};
use crate::snapshot::columns::{Days, ObjectTable, OPEN_END};

/// The parameter's name.
pub(super) const DATETIME: &str = "datetime";

/// A parsed `datetime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    /// One day.
    Instant(Days),
    /// From day to day, both included; None: open.
    Interval(Option<Days>, Option<Days>),
}

fn bad(text: &str, why: &str) -> OgcError {
    OgcError::bad(format!(
        "datetime '{}': {why}",
        crate::api::error::echoed(text)
    ))
}

/// The day of an instant: `YYYY-MM-DD`, or an RFC 3339 date-time (its date as written).
fn day_of(text: &str, whole: &str) -> OgcResult<Days> {
    let date = if text.len() == 10 {
        text
    } else {
        chrono::DateTime::parse_from_rfc3339(text).map_err(|_| {
            bad(
                whole,
                "not a date (YYYY-MM-DD), an RFC 3339 date-time or an interval of them",
            )
        })?;
        text.get(..10).unwrap_or(text)
    };
    super::super::dated::parse_day(date).map_err(|_| {
        bad(
            whole,
            "not a date (YYYY-MM-DD), an RFC 3339 date-time or an interval of them",
        )
    })
}

impl When {
    pub(super) fn parse(text: &str) -> OgcResult<When> {
        let t = text.trim();
        if t == ".." {
            return Ok(When::Interval(None, None));
        }
        let Some((a, b)) = t.split_once('/') else {
            return Ok(When::Instant(day_of(t, text)?));
        };
        if b.contains('/') {
            return Err(bad(text, "an interval has one '/'"));
        }
        let end = |s: &str| -> OgcResult<Option<Days>> {
            match s {
                ".." | "" => Ok(None),
                s => day_of(s, text).map(Some),
            }
        };
        let (a, b) = (end(a)?, end(b)?);
        if let (Some(a), Some(b)) = (a, b) {
            if b < a {
                return Err(bad(text, "the interval ends before it starts"));
            }
        }
        Ok(When::Interval(a, b))
    }
}

/// Whether validity [start, end) (end OPEN_END: open) meets the days `from..=to`.
pub(super) fn overlaps(start: Days, end: Days, from: Option<Days>, to: Option<Days>) -> bool {
    to.is_none_or(|to| start <= to) && (end == OPEN_END || from.is_none_or(|from| end > from))
}

/// A version: its table (0 current, 1 history) and row.
type Version = (u8, u32);

/// Every version of type `tid` whose validity meets `from..=to`, in (id, version) order.
pub(super) fn versions_meeting(
    g: &Generation,
    tid: u32,
    from: Option<Days>,
    to: Option<Days>,
) -> Vec<Version> {
    let tables = Tables::of(g, tid);
    let mut out: Vec<Version> = Vec::new();
    for k in 0..2u8 {
        let Some(t) = tables.get(k) else { continue };
        out.extend(
            (0..t.len())
                .filter(|&r| overlaps(t.start_date[r], t.end_date[r], from, to))
                .map(|r| (k, r as u32)),
        );
    }
    let key = |&(k, r): &Version| {
        tables
            .get(k)
            .map(|t| (t.id[r as usize], t.version[r as usize]))
            .unwrap_or_default()
    };
    out.sort_by_key(key);
    out
}

/// A type's current table and history table (shared, not copied).
struct Tables {
    current: Option<Arc<TypeData>>,
    history: Option<Arc<ObjectTable>>,
}

impl Tables {
    fn of(g: &Generation, tid: u32) -> Tables {
        Tables {
            current: g.objects.get(&tid).cloned(),
            history: g.history.get(&tid).cloned(),
        }
    }
    fn get(&self, k: u8) -> Option<&ObjectTable> {
        match k {
            0 => self.current.as_deref().map(|d| &*d.table),
            _ => self.history.as_deref(),
        }
    }
}

/// The features of `page` (versions of type `tid`, from [`versions_meeting`]) written on `g`.
pub(super) fn version_features(
    g: Arc<Generation>,
    tid: u32,
    page: Vec<Version>,
    crs: Crs,
) -> Features {
    let tables = Tables::of(&g, tid);
    Features::new(page.len(), move |i, out| {
        let (k, r) = page[i];
        let Some(t) = tables.get(k) else {
            return Ok(());
        };
        let opts = FeatureOptions {
            srid: crs.srid,
            sensitive: false,
            geometry_only: false,
        };
        let f = g.feature(ObjectRow::new(t, r as usize), &opts)?;
        geojson::push_object_feature(out, &g, &f, crs);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_intervals_and_bad_values() {
        let d = |s: &str| super::super::super::dated::parse_day(s).unwrap();
        assert_eq!(
            When::parse("2019-06-01").unwrap(),
            When::Instant(d("2019-06-01"))
        );
        assert_eq!(
            When::parse("2019-06-01T23:30:00+02:00").unwrap(),
            When::Instant(d("2019-06-01"))
        );
        assert_eq!(
            When::parse("2018-01-01/2019-06-01T00:00:00Z").unwrap(),
            When::Interval(Some(d("2018-01-01")), Some(d("2019-06-01")))
        );
        assert_eq!(
            When::parse("../2019-06-01").unwrap(),
            When::Interval(None, Some(d("2019-06-01")))
        );
        assert_eq!(
            When::parse("2019-06-01/").unwrap(),
            When::Interval(Some(d("2019-06-01")), None)
        );
        assert_eq!(When::parse("..").unwrap(), When::Interval(None, None));
        assert_eq!(When::parse("../..").unwrap(), When::Interval(None, None));
        for bad in [
            "",
            "x",
            "2019-02-30",
            "2019-06-01T25:00:00Z",
            "2019-06-01T12:00:00",
            "2019-06-02/2019-06-01",
            "a/b/c",
            "2019-06-01/2019-07-01/..",
        ] {
            let e = When::parse(bad).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{bad}");
        }
    }

    #[test]
    fn overlap_is_half_open_validity_against_closed_days() {
        // valid [10, 20)
        assert!(overlaps(10, 20, Some(19), Some(19)));
        assert!(!overlaps(10, 20, Some(20), Some(30)));
        assert!(overlaps(10, 20, Some(0), Some(10)));
        assert!(!overlaps(10, 20, Some(0), Some(9)));
        assert!(overlaps(10, OPEN_END, Some(1000), None));
        assert!(overlaps(10, 20, None, None));
        assert!(!overlaps(10, 20, None, Some(9)));
    }
}
