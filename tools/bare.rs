//! vegdb-bare: the reference point for the request stack's own cost — a bare axum handler that
//! answers every GET with the same fixed bytes, served by plain `axum::serve` (no middleware, no
//! work). `/posisjon` is measured against it in the same sitting (`tools/bench_wire.sh`): the
//! ratio says how much of the wire's capacity vegdb's request stack leaves to the client.
//!
//! `vegdb-bare --listen 127.0.0.1:18091 --bytes 250` (loopback only). The body is a JSON string
//! of exactly `--bytes` bytes with `Content-Type: application/json;charset=utf-8`, as vegdb's
//! answer has; accepted sockets get TCP_NODELAY, as vegdb's do.

use std::net::SocketAddr;

use axum::http::{header, HeaderValue};
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    /// Address to listen on (loopback only).
    #[arg(long, default_value = "127.0.0.1:18091")]
    listen: SocketAddr,
    /// Size of the body every request gets.
    #[arg(long, default_value_t = 250)]
    bytes: usize,
}

/// A JSON string literal of exactly `n` bytes (at least `""`).
fn body_of(n: usize) -> axum::body::Bytes {
    let mut b = Vec::with_capacity(n.max(2));
    b.push(b'"');
    b.resize(n.max(2) - 1, b'x');
    b.push(b'"');
    axum::body::Bytes::from(b)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.listen.ip().is_loopback(),
        "vegdb-bare listens on loopback addresses only"
    );
    let body = body_of(args.bytes);
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move {
            (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json;charset=utf-8"),
                )],
                body,
            )
                .into_response()
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await?
            .tap_io(|s| {
                let _ = s.set_nodelay(true);
            });
        eprintln!(
            "vegdb-bare listening on {} ({} bytes)",
            args.listen, args.bytes
        );
        axum::serve(listener, app).await?;
        anyhow::Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_the_asked_size_and_is_json() {
        for n in [0, 1, 2, 3, 250, 1000] {
            let b = body_of(n);
            assert_eq!(b.len(), n.max(2));
            assert!(serde_json::from_slice::<String>(&b).is_ok(), "{n}");
        }
    }
}
