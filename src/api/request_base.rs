//! The base URL of `href`s when `--public-url` is not set: the scheme and `Host` of the request,
//! so a client that connects as `localhost:8080` pages on `localhost:8080` (not on the listen
//! address `127.0.0.1:8080`), and one that connects by a LAN name gets that name back.
//!
//! How handlers see it without taking an extra argument: the request stack (`api::stack`) runs
//! the rest of the request ([`in_scope`]) inside a `tokio::task_local!` holding the request's base, and [`RequestBase`]
//! (a field of `AppState`) resolves that value when the state is *cloned*. axum clones the state
//! for every handler call inside the middleware's scope, so each handler's `State(s)` carries
//! its own request's base: `s.href(..)` and `s.public_url()` need no request at hand, and the
//! base travels with any clone the handler moves into a blocking task or a streamed body (a
//! clone made outside a request scope keeps the value it was cloned from).
//!
//! `X-Forwarded-Proto` / `X-Forwarded-Host` are not honoured: vegdb serves plain HTTP itself,
//! and behind a reverse proxy `--public-url` names the public address once, instead of trusting
//! headers any client can send. A `Host` that is not a plain `host[:port]` authority is ignored
//! (the configured fallback is used).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, uri::Authority};

// Per-request scope (a task-local set around one request's handler), not shared state.
tokio::task_local! {
    static CURRENT: Arc<str>;
}

/// The request base captured by a clone of the application state.
#[derive(Debug, Default)]
pub struct RequestBase(Option<Arc<str>>);

impl RequestBase {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
    /// A fixed base (tests, and work that starts outside a request).
    pub fn fixed(base: &str) -> RequestBase {
        RequestBase(Some(Arc::from(base)))
    }
}

impl Clone for RequestBase {
    /// Inside a request: that request's base. Elsewhere: the value cloned from.
    fn clone(&self) -> Self {
        CURRENT
            .try_with(|b| RequestBase(Some(b.clone())))
            .unwrap_or_else(|_| RequestBase(self.0.clone()))
    }
}

/// The authority text and whether the scheme is https, if the request names a plain authority
/// (its absolute-form URI's, else its `Host`).
fn authority_of<B>(req: &Request<B>) -> Option<(Authority, bool)> {
    let authority = match req.uri().authority() {
        Some(a) => a.clone(),
        None => {
            let host = req.headers().get(header::HOST)?.to_str().ok()?;
            host.parse::<Authority>().ok()?
        }
    };
    let text = authority.as_str();
    if text.is_empty() || text.contains('@') {
        return None;
    }
    Some((authority, req.uri().scheme_str() == Some("https")))
}

fn base_text(authority: &Authority, https: bool) -> String {
    let scheme = if https { "https" } else { "http" };
    format!("{scheme}://{}", authority.as_str())
}

/// `http://<host>` of a request, if its `Host` (or absolute-form URI) names a plain authority.
pub fn base_of<B>(req: &Request<B>) -> Option<String> {
    authority_of(req).map(|(a, https)| base_text(&a, https))
}

// Per-thread scratch: a memo of a pure function of the `Host` bytes, right for any server.
thread_local! {
    /// The last `Host` value seen on this thread and its base: clients of one server mostly
    /// send one `Host`, and comparing its bytes is all such a request costs.
    static LAST: std::cell::RefCell<Option<(axum::http::HeaderValue, Option<Arc<str>>)>> =
        const { std::cell::RefCell::new(None) };
}

/// [`base_of`] as a shared string, reused while the requests on a thread name the same host.
pub fn base_arc_of<B>(req: &Request<B>) -> Option<Arc<str>> {
    if req.uri().authority().is_some() {
        // absolute-form request target (proxies): rare, not cached
        return base_of(req).map(Arc::from);
    }
    let host = req.headers().get(header::HOST)?;
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((h, base)) = last.as_ref() {
            if h == host {
                return base.clone();
            }
        }
        let base = base_of(req).map(Arc::from);
        *last = Some((host.clone(), base.clone()));
        base
    })
}

/// Run `fut` (the rest of a request) with `base` as its request base.
pub fn in_scope<F: std::future::Future>(
    base: Arc<str>,
    fut: F,
) -> tokio::task::futures::TaskLocalFuture<Arc<str>, F> {
    CURRENT.scope(base, fut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(uri: &str, host: Option<&str>) -> Request {
        let mut b = Request::builder().uri(uri);
        if let Some(h) = host {
            b = b.header(header::HOST, h);
        }
        b.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn the_cached_base_is_the_base_of_each_request() {
        let hosts = [
            Some("localhost:8080"),
            Some("localhost:8080"),
            Some("a b"),
            Some("a b"),
            Some("localhost:8080"),
            Some("[::1]:9"),
            None,
            Some("localhost:8081"),
        ];
        for (i, host) in hosts.iter().enumerate() {
            let uri = if i == 6 {
                "https://vegdb.example.no/x"
            } else {
                "/x"
            };
            let r = req(uri, *host);
            assert_eq!(
                base_arc_of(&r).as_deref(),
                base_of(&r).as_deref(),
                "{host:?}"
            );
        }
    }

    #[test]
    fn the_base_comes_from_host_or_the_absolute_uri() {
        assert_eq!(
            base_of(&req("/nvdb/api/v2/status", Some("localhost:8080"))).as_deref(),
            Some("http://localhost:8080")
        );
        assert_eq!(
            base_of(&req("/x", Some("[::1]:9"))).as_deref(),
            Some("http://[::1]:9")
        );
        assert_eq!(
            base_of(&req("https://vegdb.example.no/x", Some("other"))).as_deref(),
            Some("https://vegdb.example.no")
        );
        for bad in ["", "a b", "evil.no/path", "user@evil.no", "x\"y"] {
            assert_eq!(base_of(&req("/x", Some(bad))), None, "{bad:?}");
        }
        assert_eq!(base_of(&req("/x", None)), None);
    }

    #[tokio::test]
    async fn clones_inside_a_scope_take_its_base_and_keep_it_outside() {
        let outside = RequestBase::default();
        assert_eq!(outside.clone().get(), None);
        let inside = CURRENT
            .scope(Arc::from("http://localhost:1"), async { outside.clone() })
            .await;
        assert_eq!(inside.get(), Some("http://localhost:1"));
        let moved = tokio::task::spawn_blocking(move || inside.clone())
            .await
            .unwrap();
        assert_eq!(moved.get(), Some("http://localhost:1"));
    }
}
