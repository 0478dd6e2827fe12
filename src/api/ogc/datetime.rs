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
//!   once (each feature carries its `versjon`). They are chosen from every version at once
//!   (`Generation::every_version`: each type's versions on the network of every day, closed
//!   links included, so a version on a link that no longer exists has its geometry there) by
//!   the code an instant uses, `bbox` and property filters included. Intervals are served on
//!   the object collections; on `vegnett` one is 400. `..` alone is read as `../..`.
//! - Anything else (a bad date, an end before its start, more than one `/`) is 400.

use super::error::{OgcError, OgcResult};
use crate::snapshot::columns::{Days, OPEN_END};

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
