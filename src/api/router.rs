//! The top of the API: the router that mounts every handler (both APIs, their documents and
//! docs pages, OGC API Features, tiles, health, login, the landing page) and the whole
//! application inside the request stack ([`app`]). Only `server` and the tests name it.

use axum::routing::get;
use axum::Router;

use super::error::ApiError;
use super::route::READ_BASE;
use super::state::AppState;
use super::{docs, forward, health, ogc, openapi, read, stack, tiles, write};

async fn not_found() -> ApiError {
    ApiError::not_found("Ressursen finnes ikke")
}

/// The routes with their state and no middleware (the request stack is `stack::App`).
/// Read routes are registered with their full paths (no `nest`); the write routes, under
/// their base and two aliases, are nested. Each API's document is built here from the routes
/// its router mounted, and served beside them with its docs page (`docs`).
pub fn routes(state: AppState) -> Router {
    let router = router();
    // a server without a writer of its own: write requests forwarded, redirected or refused
    let router = match state.config.write_route {
        Some(_) => router.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            forward::route_writes,
        )),
        None => router,
    };
    router.with_state(state)
}

/// [`routes`] before the state is given.
pub fn router() -> Router<AppState> {
    let (read, read_doc) = read::routes().split_for_parts();
    let read = read.merge(docs::routes(READ_BASE, openapi::served_read_json(read_doc)));
    let write = write::routes(|doc| docs::routes("", openapi::served_write_json(doc)))
        .layer(axum::extract::DefaultBodyLimit::disable());
    let mut router = Router::new()
        .merge(read)
        .merge(ogc::routes())
        .merge(write::login::routes())
        .merge(health::routes())
        .merge(tiles::routes())
        .route("/", get(docs::root));
    for base in std::iter::once(write::WRITE_BASE).chain(write::WRITE_ALIASES) {
        router = router.nest(base, write.clone());
    }
    router.fallback(not_found)
}

/// The whole application: the routes inside the request stack (request ids, tracing, CORS,
/// the guard's limits and error shapes, timeout, request base, gzip; see `stack`).
pub async fn app(state: AppState) -> stack::App {
    stack::App::new(routes(state.clone()), &state).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::route::{classify, Api, Direct};
    use crate::metrics::RouteLabel;

    /// Every path the assembled router matches, read from its `Debug` form (axum lists its
    /// routes there: `paths: {RouteId(n): "/…"}`), i.e. what is really mounted.
    fn mounted_paths() -> Vec<String> {
        let text = format!("{:?}", router());
        let mut paths: Vec<String> = text
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|s| s.starts_with('/'))
            .map(str::to_string)
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    #[test]
    fn every_mounted_route_of_both_apis_is_documented_and_every_documented_one_mounted() {
        let mounted = mounted_paths();
        assert!(mounted.len() > 40, "{mounted:?}");
        let (read, write) = openapi::router_documents();
        let read_served = openapi::served_value(read.clone(), openapi::Api::Read).unwrap();
        let write_served = openapi::served_value(write, openapi::Api::Write).unwrap();
        let read_paths = read_served["paths"].as_object().unwrap();
        let write_paths = write_served["paths"].as_object().unwrap();
        // aliases: mounted, marked in the router's document, pointing at a documented path
        let aliases: Vec<(String, String)> = read
            .paths
            .paths
            .iter()
            .filter_map(|(path, item)| {
                let target = item.extensions.as_ref()?.get(openapi::ALIAS_OF)?;
                Some((path.clone(), target.as_str()?.to_string()))
            })
            .collect();
        assert!(aliases.len() >= 5, "{aliases:?}");
        for (alias, target) in &aliases {
            let target = target.strip_prefix(READ_BASE).unwrap_or(target);
            assert!(read_paths.contains_key(target), "{alias} → {target}");
        }
        let write_bases: Vec<&str> = std::iter::once(write::WRITE_BASE)
            .chain(write::WRITE_ALIASES)
            .collect();
        let mut checked = 0;
        for path in &mounted {
            let (below, documented) = if let Some(below) = path.strip_prefix(READ_BASE) {
                (
                    below,
                    read_paths.contains_key(below) || aliases.iter().any(|(a, _)| a == path),
                )
            } else if let Some(below) = write_bases.iter().find_map(|b| path.strip_prefix(b)) {
                (below, write_paths.contains_key(below))
            } else {
                continue; // outside both APIs (login, landing page, other services)
            };
            checked += 1;
            assert!(
                documented || openapi::META_PATHS.contains(&below),
                "{path} is mounted but not in its API's OpenAPI document"
            );
        }
        assert!(checked > 30 + 3 * 12, "{checked}");
        for (docs, bases) in [(read_paths, vec![READ_BASE]), (write_paths, write_bases)] {
            for path in docs.keys() {
                for base in &bases {
                    let full = format!("{base}{path}");
                    assert!(mounted.contains(&full), "{full} documented but not mounted");
                }
            }
        }
    }

    /// A mounted path template with every `{param}` (and `{*rest}`) filled in with `1`.
    fn concrete(template: &str) -> String {
        let mut out = String::new();
        let mut in_param = false;
        for c in template.chars() {
            match c {
                '{' => in_param = true,
                '}' => {
                    in_param = false;
                    out.push('1');
                }
                c if !in_param => out.push(c),
                _ => {}
            }
        }
        out
    }

    /// The read paths that count under the read API's catch-all label `/nvdb/api/v2/*` (the
    /// two small catalog lists and the docs pages): any other read route needs a label of its
    /// own (`metrics::RouteLabel`), or a line here.
    const READ_CATCH_ALL: &[&str] = &[
        "/nvdb/api/v2/datatyper",
        "/nvdb/api/v2/docs",
        "/nvdb/api/v2/docs/{asset}",
        "/nvdb/api/v2/kategorier",
    ];

    /// Every mounted route has a class (an API), a metrics label that is its own, the shedding
    /// and caching of its API, and a direct route only where one is meant: a new route cannot
    /// get a wrong label, shedding class or caching without this test failing.
    #[test]
    fn every_mounted_route_is_classified_with_a_label_and_a_class() {
        let mounted = mounted_paths();
        let mut direct = Vec::new();
        let mut apis = std::collections::BTreeSet::new();
        for template in &mounted {
            let path = concrete(template);
            let c = classify(&path);
            if c.api == Api::Unknown && template.contains("__private__axum_fallback") {
                continue; // the router's 404 for everything else
            }
            let label = c.label.label();
            apis.insert(format!("{:?}", c.api));
            match c.api {
                Api::Read => {
                    assert!(label.starts_with(READ_BASE), "{template}: {label}");
                    assert_eq!(
                        c.label == RouteLabel::ReadOther,
                        READ_CATCH_ALL.contains(&template.as_str()),
                        "{template} has the catch-all label {label}: give it its own"
                    );
                    assert_eq!(c.cacheable, path != "/nvdb/api/v2/status", "{template}");
                    assert!(c.may_be_shed() && !c.is_write(), "{template}");
                    // with a format suffix: the same label and caching
                    if path != "/nvdb/api/v2/openapi.json" {
                        let xml = classify(&format!("{path}.xml"));
                        assert_eq!(
                            (xml.label, xml.cacheable),
                            (c.label, c.cacheable),
                            "{template}"
                        );
                        assert_eq!(xml.direct, None, "{template}");
                    }
                }
                Api::Write => {
                    assert_eq!(c.label, RouteLabel::Write, "{template}");
                    assert!(
                        c.is_write() && c.may_be_shed() && !c.cacheable,
                        "{template}"
                    );
                }
                Api::Login => assert_eq!(c.label, RouteLabel::Login, "{template}"),
                Api::Monitoring => {
                    assert!(!c.may_be_shed() && !c.cacheable, "{template}");
                }
                Api::Ogc | Api::Tiles | Api::Landing => {
                    assert_eq!(c.label, RouteLabel::Other, "{template}");
                    assert!(
                        c.may_be_shed() && !c.cacheable && !c.is_write(),
                        "{template}"
                    );
                }
                Api::Unknown => panic!("{template} is mounted but classified as nothing"),
            }
            if c.api != Api::Read {
                assert_eq!(c.suffix, None, "{template}");
            }
            if let Some(d) = c.direct {
                direct.push((d, template.as_str()));
            }
        }
        direct.sort_by_key(|(_, t)| *t);
        let mut expected = vec![
            (Direct::Position, "/nvdb/api/v2/posisjon"),
            (Direct::Road, "/nvdb/api/v2/veg"),
            (
                Direct::Statistics,
                "/nvdb/api/v2/vegobjekter/{type}/statistikk",
            ),
        ];
        expected.sort_by_key(|(_, t)| *t);
        assert_eq!(direct, expected);
        // every kind of route is mounted (the walk saw them all)
        for api in [
            "Read",
            "Write",
            "Login",
            "Monitoring",
            "Ogc",
            "Tiles",
            "Landing",
        ] {
            assert!(apis.contains(api), "{api} not among {apis:?}");
        }
    }
}
