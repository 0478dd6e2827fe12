//! The accept loop of `serve_starting`, in its two phases (while the state loads, then
//! serving the loaded application), and one connection's serving: the first head checked by
//! [`super::head`], every later one by [`super::framing`], under the watchdog of [`super::idle`].

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::{framing, head, idle};
use crate::api::state::AppState;

/// The accept loop's HTTP settings, connection limit and shutdown signals (both phases).
pub(super) struct Connections {
    /// The defaults until the configured ones are known.
    limits: crate::api::state::ConnectionLimits,
    http: hyper::server::conn::http1::Builder,
    graceful: hyper_util::server::graceful::GracefulShutdown,
    /// Tells connections still reading their first head (`head`) to stop at shutdown.
    stop: tokio::sync::watch::Sender<bool>,
    permits: Arc<tokio::sync::Semaphore>,
}

/// What serving one connection takes from [`Connections`].
struct ConnectionSettings {
    http: hyper::server::conn::http1::Builder,
    watcher: hyper_util::server::graceful::Watcher,
    header_timeout: Duration,
    max_buf: usize,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl Connections {
    pub(super) fn new() -> Connections {
        let limits = crate::api::state::ConnectionLimits::default();
        let mut http = hyper::server::conn::http1::Builder::new();
        // No hyper timer: the header-read timeout is the connection's watchdog (`idle`), one
        // timer per connection instead of one per request.
        http.max_buf_size(limits.max_buf_bytes)
            // No `max_headers`: hyper's default (api::guard::HYPER_MAX_HEADERS) keeps its header
            // arrays inline; any explicit bound, even the same one, fills them per request, and
            // a larger one allocates them per request. The API's own header-count limit is
            // below it, so that limit answers in the API's shape.
            .keep_alive(true);
        Connections {
            permits: Arc::new(tokio::sync::Semaphore::new(limits.max_connections)),
            limits,
            http,
            graceful: hyper_util::server::graceful::GracefulShutdown::new(),
            stop: tokio::sync::watch::channel(false).0,
        }
    }

    /// The configured limits, once the state is loaded.
    fn configure(&mut self, limits: crate::api::state::ConnectionLimits) {
        self.permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
        self.http.max_buf_size(limits.max_buf_bytes);
        self.limits = limits;
    }

    fn settings(&self) -> ConnectionSettings {
        ConnectionSettings {
            http: self.http.clone(),
            watcher: self.graceful.watcher(),
            header_timeout: self.limits.header_read_timeout,
            max_buf: self.limits.max_buf_bytes,
            stop: self.stop.subscribe(),
        }
    }

    /// Stop connections still reading their first head; wait for requests in flight.
    pub(super) async fn shut_down(self) {
        let _ = self.stop.send(true);
        self.graceful.shutdown().await;
    }
}

/// Serve one connection, while the server starts and after: its first head is checked before
/// hyper sees it (`head`), then hyper serves it under the connection's watchdog (`idle`).
async fn serve_connection<S>(
    settings: ConnectionSettings,
    mut stream: tokio::net::TcpStream,
    service: S,
    activity: Arc<idle::Activity>,
) where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let ConnectionSettings {
        http,
        watcher,
        header_timeout,
        max_buf,
        mut stop,
    } = settings;
    let conn = async {
        // the first head is checked before hyper sees it (`head`)
        let first = tokio::select! {
            first = head::read_first(&mut stream, max_buf) => first,
            _ = stop.wait_for(|s| *s) => None,
        };
        let Some(first) = first else {
            return Ok::<(), hyper::Error>(());
        };
        // and every later one (`framing`)
        let checked = framing::Checked::new(stream, activity.clone(), first, max_buf);
        let io = hyper_util::rt::TokioIo::new(idle::Watched::new(checked, activity.clone()));
        watcher.watch(http.serve_connection(io, service)).await
    };
    idle::serve_watched(conn, activity.clone(), header_timeout).await;
}

/// While the server starts: accept (one at a time is plenty) and serve with `starting_app`
/// until `loading` gives the state; the state first, so a state that is there already
/// (`serve_on`) serves every connection. The application of the loaded state, or None when
/// `shutdown` came first.
pub(super) async fn accept_while_loading<L, S>(
    connections: &mut Connections,
    listener: &tokio::net::TcpListener,
    loading: &mut std::pin::Pin<&mut L>,
    starting_app: &crate::api::stack::App,
    shutdown: &mut std::pin::Pin<&mut S>,
) -> anyhow::Result<Option<crate::api::stack::App>>
where
    L: std::future::Future<Output = anyhow::Result<AppState>>,
    S: std::future::Future<Output = ()>,
{
    loop {
        tokio::select! {
            biased;
            loaded = &mut *loading => {
                let state = loaded?;
                connections.configure(state.config.connections.clone());
                return Ok(Some(crate::api::router::app(state).await));
            }
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    let svc = starting_app.clone();
                    let activity = idle::Activity::new();
                    let seen = activity.clone();
                    // requests are counted as on the serving path (`framing` reads the count;
                    // the starting router's answers close their connection anyway)
                    let hyper_svc = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            seen.request_started();
                            let (svc, seen) = (svc.clone(), seen.clone());
                            async move {
                                let response = svc.handle(req.map(axum::body::Body::new)).await;
                                Ok::<_, std::convert::Infallible>(
                                    response.map(|body| idle::Answered::later(body, seen)),
                                )
                            }
                        },
                    );
                    let settings = connections.settings();
                    tokio::spawn(serve_connection(settings, stream, hyper_svc, activity));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut *shutdown => return Ok(None),
        }
    }
}

/// Serve `app` until `shutdown`: accept within the connection limit and hand each connection
/// round robin to `workers` (none: the current runtime).
pub(super) async fn accept_serving<S>(
    connections: &Connections,
    listener: &tokio::net::TcpListener,
    app: crate::api::stack::App,
    shutdown: &mut std::pin::Pin<&mut S>,
    workers: &[tokio::runtime::Handle],
) -> anyhow::Result<()>
where
    S: std::future::Future<Output = ()>,
{
    let mut next = 0usize;
    loop {
        let permit = tokio::select! {
            p = connections.permits.clone().acquire_owned() => p.context("connection limiter closed")?,
            () = &mut *shutdown => return Ok(()),
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, peer)) => (stream, peer.ip()),
                Err(e) => {
                    // EMFILE/ENFILE/ECONNABORTED: the listener is fine, back off briefly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut *shutdown => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let svc = app.clone();
        let activity = idle::Activity::new();
        let seen = activity.clone();
        let hyper_svc =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                use futures_util::future::Either;
                seen.request_started();
                let req = req.map(axum::body::Body::new);
                // what the request is, decided once for the direct route and the stack
                let class = crate::api::route::classify(req.uri().path());
                // A direct route answers at once: hyper gets a ready future, not the whole
                // stack's (which it would move into place per request); others are boxed.
                match svc.try_direct_as(req, class) {
                    Ok(response) => {
                        // a body in memory: answered now
                        seen.request_answered();
                        Either::Left(std::future::ready(Ok::<_, std::convert::Infallible>(
                            response.map(idle::Answered::counted),
                        )))
                    }
                    Err(req) => {
                        let svc = svc.clone();
                        let seen = seen.clone();
                        Either::Right(Box::pin(async move {
                            let response = svc.handle_routed_as(req, Some(peer), class).await;
                            // answered when its body is made (a streamed page may take long)
                            Ok(response.map(|body| idle::Answered::later(body, seen)))
                        }))
                    }
                }
            });
        let settings = connections.settings();
        let serve_conn = move |stream: tokio::net::TcpStream| async move {
            serve_connection(settings, stream, hyper_svc, activity).await;
            drop(permit);
        };
        match workers.get(next % workers.len().max(1)) {
            // A tokio stream belongs to the runtime that registered it: the worker takes the
            // std one over (its own I/O driver then wakes it).
            Some(handle) => match stream.into_std() {
                Ok(std_stream) => {
                    handle.spawn(async move {
                        match tokio::net::TcpStream::from_std(std_stream) {
                            Ok(stream) => serve_conn(stream).await,
                            Err(e) => {
                                tracing::warn!(error = %e, "could not take a connection over")
                            }
                        }
                    });
                }
                Err(e) => tracing::warn!(error = %e, "could not hand a connection over"),
            },
            None => {
                tokio::spawn(serve_conn(stream));
            }
        }
        next = next.wrapping_add(1);
    }
}
