//! `tidspunkt=YYYY-MM-DD`: the read API answering as the data was on a past day.
//!
//! A request with `tidspunkt` is answered by the very handler that answers the present, on
//! another generation: the view of the current generation at that day
//! (`Generation::at`, a full generation holding the versions valid then). The request stack
//! resolves the view once per request, before the routes (on the blocking pool when it is not
//! built yet: building it is an index build), and runs the routes inside a task-local scope
//! holding it ([`in_scope`]); a handler takes its generation from [`generation`] (or
//! [`pinned`] on `/posisjon` and `/veg`), which is that view inside the scope and the current
//! generation outside it. A request without `tidspunkt` never enters a scope: the stack looks
//! for the name in the query text only ([`may_have`]), and the direct routes leave such
//! requests to the general path.
//!
//! A day at or after today answers with the current generation itself (byte for byte the
//! answer without `tidspunkt`); a day before the data answers what existed then (nothing).
//! A value that is not a date `YYYY-MM-DD` is 422/4007, as a bad `endret_etter`.

use std::sync::Arc;

use super::error::{ApiError, ApiResult};
use super::params::Params;
use super::state::AppState;
use crate::generation::{Generation, GenerationStore};
use crate::snapshot::columns::Days;

/// The parameter's name.
pub const TIDSPUNKT: &str = "tidspunkt";

// Per-request scope (a task-local set around one request's routes), not shared state.
tokio::task_local! {
    static AT: Arc<Generation>;
}

/// The day `text` names: `YYYY-MM-DD` exactly (a calendar date), as days since 1970-01-01.
pub fn parse_day(text: &str) -> ApiResult<Days> {
    let bad = || {
        ApiError::bad(
            4007,
            format!(
                "Ugyldig tidspunkt '{}': bruk en dato ÅÅÅÅ-MM-DD",
                super::error::echoed(text)
            ),
        )
    };
    let t = text.trim();
    let shaped = t.len() == 10
        && t.bytes()
            .enumerate()
            .all(|(i, b)| matches!(i, 4 | 7) == (b == b'-') && (b == b'-' || b.is_ascii_digit()));
    if !shaped {
        return Err(bad());
    }
    let date = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| bad())?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).ok_or_else(bad)?;
    Days::try_from((date - epoch).num_days()).map_err(|_| bad())
}

/// Whether a raw query may name `tidspunkt`: it holds the name, or an escape that may spell
/// it (then [`day_of_query`] decodes it). A byte scan, nothing else.
pub fn may_have(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.contains(TIDSPUNKT) || q.contains('%'))
}

/// The day of a raw query's `tidspunkt` (None: it has none); given twice is 422/4014.
pub fn day_of_query(query: &str) -> ApiResult<Option<Days>> {
    let mut found = None;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        if k == TIDSPUNKT {
            if found.is_some() {
                return Err(ApiError::bad(
                    4014,
                    format!("Parameteren {TIDSPUNKT} kan bare angis én gang"),
                ));
            }
            found = Some(parse_day(&v)?);
        }
    }
    Ok(found)
}

/// What a request reads of a day's view, made with the view on the blocking pool so the
/// request's handler finds it made (a day's view makes its parts on first use: see
/// `generation::time`): the object type its path names, and the network's indexes for the
/// network's routes. Whatever else a handler reads (another type through `overlapp`, a
/// parent) is made where it is first read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    pub type_id: Option<u32>,
    pub network: bool,
}

impl Needs {
    /// What a read API request (path below the API's base, and query) reads:
    /// `/vegobjekter/{type}...` the type (and the network's indexes when it filters by
    /// `vegreferanse`), `/veg...` and `/vegnett...` the network's indexes. `/posisjon` reads
    /// no index of the view's own: a view answers nearest questions from today's indexes and
    /// the closed rows' (`generation::day_rows`).
    pub fn of_request(path: &str, query: Option<&str>) -> Needs {
        let rest = path.split("/nvdb/api/v2").nth(1).unwrap_or(path);
        let objects = rest.strip_prefix("/vegobjekter/");
        let type_id = objects
            .and_then(|r| r.split(['/', '.']).next())
            .and_then(|t| t.parse().ok());
        let road = rest == "/veg" || rest.starts_with("/veg/") || rest.starts_with("/veg.");
        let by_road_ref = objects.is_some()
            && query.is_some_and(|q| q.contains("vegreferanse") || q.contains('%'));
        let network = road || rest.starts_with("/vegnett") || by_road_ref;
        Needs { type_id, network }
    }

    /// Whether what `self` names is made in `view` already.
    fn made_in(self, view: &Generation) -> bool {
        let type_made = match self.type_id.and_then(|t| view.objects.get(&t)) {
            Some(d) => d.table.is_made() && d.index_is_made(),
            None => true,
        };
        type_made
            && (!self.network || (view.network_index.is_made() && view.network_indexes.is_made()))
    }

    /// Make what `self` names in `view`.
    fn make(self, view: &Generation) {
        if let Some(d) = self.type_id.and_then(|t| view.objects.get(&t)) {
            let _ = d.index();
        }
        if self.network {
            let _ = (&*view.network_index, &*view.network_indexes);
        }
    }
}

/// The generation that answers at `day`: None for today or later (the current one answers),
/// else the view, made on the blocking pool with what `needs` names when that is not made yet.
pub async fn resolve(
    store: &GenerationStore,
    day: Days,
    needs: Needs,
) -> ApiResult<Option<Arc<Generation>>> {
    if Generation::is_today(day) {
        return Ok(None);
    }
    let g = store.current();
    if let Some(view) = g.built_at(day) {
        if needs.made_in(&view) {
            return Ok(Some(view));
        }
    }
    let made = tokio::task::spawn_blocking(move || {
        let view = g.at(day)?;
        needs.make(&view);
        Ok::<_, crate::error::EngineError>(view)
    });
    match made.await {
        Ok(view) => Ok(Some(view?)),
        Err(e) => {
            Err(crate::error::EngineError::Internal(format!("view at day {day}: {e}")).into())
        }
    }
}

/// Run `fut` (the rest of a request) with `view` as the generation its handler answers from.
pub fn in_scope<F: std::future::Future>(
    view: Arc<Generation>,
    fut: F,
) -> tokio::task::futures::TaskLocalFuture<Arc<Generation>, F> {
    AT.scope(view, fut)
}

/// The view of the request's scope, if it runs in one.
fn scoped() -> Option<Arc<Generation>> {
    AT.try_with(Arc::clone).ok()
}

/// The generation a handler that takes `tidspunkt` answers from: the request's view, or the
/// current generation. A request whose `tidspunkt` the stack did not resolve (a direct
/// route's request that spells the name with an escape, `%74idspunkt`: the direct routes
/// only look for the plain name) gets its view here, built on this thread.
pub fn generation(s: &AppState, p: &Params) -> ApiResult<Arc<Generation>> {
    if let Some(view) = scoped() {
        return Ok(view);
    }
    let g = s.store.current();
    match p.one(TIDSPUNKT)? {
        None => Ok(g),
        Some(t) => at_here(g, parse_day(t)?),
    }
}

/// The generation of a short synchronous answer (`/posisjon`, `/veg`): the request's view, or
/// the current generation pinned (`GenerationStore::pin`, no shared reference count taken).
pub enum Pinned {
    Current(arc_swap::Guard<Arc<Generation>>),
    View(Arc<Generation>),
}

impl std::ops::Deref for Pinned {
    type Target = Generation;
    fn deref(&self) -> &Generation {
        match self {
            Pinned::Current(g) => g,
            Pinned::View(g) => g,
        }
    }
}

/// [`generation`] for a short synchronous answer (see [`Pinned`]).
pub fn pinned(store: &GenerationStore, p: &Params) -> ApiResult<Pinned> {
    if let Some(view) = scoped() {
        return Ok(Pinned::View(view));
    }
    match p.one(TIDSPUNKT)? {
        None => Ok(Pinned::Current(store.pin())),
        Some(t) => Ok(Pinned::View(at_here(store.current(), parse_day(t)?)?)),
    }
}

fn at_here(g: Arc<Generation>, day: Days) -> ApiResult<Arc<Generation>> {
    if Generation::is_today(day) {
        return Ok(g);
    }
    Ok(g.at(day)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_what_it_reads_of_a_view() {
        let of = |path: &str, q: &str| {
            let n = Needs::of_request(&format!("/nvdb/api/v2{path}"), Some(q));
            (n.type_id, n.network)
        };
        assert_eq!(of("/posisjon", "nord=1&ost=2"), (None, false));
        assert_eq!(of("/veg", "vegreferanse=x"), (None, true));
        assert_eq!(of("/veg/batch", ""), (None, true));
        assert_eq!(of("/veg.json", ""), (None, true));
        assert_eq!(of("/vegnett/lenker", ""), (None, true));
        assert_eq!(
            of("/vegobjekter/105/statistikk", "kommune=301"),
            (Some(105), false)
        );
        assert_eq!(
            of("/vegobjekter/105", "vegreferanse=1200Ev39"),
            (Some(105), true)
        );
        assert_eq!(of("/vegobjekter/105.json", "a=%76"), (Some(105), true));
        assert_eq!(of("/vegobjekter", ""), (None, false));
    }

    #[test]
    fn days_are_calendar_dates_in_one_form() {
        assert_eq!(parse_day("1970-01-01").unwrap(), 0);
        assert_eq!(parse_day("1970-01-02").unwrap(), 1);
        assert_eq!(parse_day("1969-12-31").unwrap(), -1);
        assert_eq!(parse_day("2020-03-01").unwrap(), 18322);
        for bad in [
            "",
            "2020-3-01",
            "2020-02-30",
            "20200301",
            "2020-03-01T00:00",
            "x020-03-01",
            "2020/03/01",
            "+020-03-01",
            "2020-13-01",
        ] {
            let e = parse_day(bad).unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (422, 4007), "{bad}");
        }
    }

    #[test]
    fn the_query_scan_finds_plain_and_escaped_names() {
        assert!(!may_have(None));
        assert!(!may_have(Some("lat=60&lon=10")));
        assert!(may_have(Some("tidspunkt=2020-01-01")));
        assert!(may_have(Some("%74idspunkt=2020-01-01")));
        assert_eq!(day_of_query("%74idspunkt=1970-01-03").unwrap(), Some(2));
        assert_eq!(day_of_query("a=%20").unwrap(), None);
        assert_eq!(
            day_of_query("tidspunkt=1970-01-01&tidspunkt=1970-01-01")
                .unwrap_err()
                .code,
            4014
        );
    }
}
