//! The HTTP listener: accepts connections, serves HTTP/1.1 with hyper, and shuts
//! down gracefully.
//!
//! Every accepted socket gets `TCP_NODELAY`: replies leave in one or two writes and
//! must not wait for the client's delayed ACK (a sequential client otherwise waits
//! ~40 ms per call for Linux's delayed ACK; `bench/mcp.sh` at 1 connection
//! shows the sequential latency). When the shutdown future resolves (`wasmhub serve`: SIGINT or
//! SIGTERM) the listener stops accepting and in-flight requests get
//! `shutdown_grace_secs` to finish. Streams still relaying a provider's answer
//! when the grace runs out are ended as errors in their own protocol (an OpenAI
//! error frame, an AI SDK `error` chunk, an Anthropic `error` event): the upstream
//! client ends their reads (`Llm::shut_down`, see `llm::client`) and their
//! connections get `FLUSH` more to send that last frame. Nothing a client reads
//! ends as if it were finished.

use super::App;
use super::router;
use crate::http_client::TokioIo;
use crate::race::{Race, race};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long the connections still open when the grace ran out get to send the
/// error that ends their streams.
const FLUSH: Duration = Duration::from_secs(2);

/// Serves `app` on `listener` until `shutdown` resolves, then drains connections
/// for at most `grace`, then ends the upstream streams still relayed and waits at
/// most `FLUSH` for their last frames.
pub async fn serve(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    while let Race::First(accepted) = race(listener.accept(), &mut shutdown).await {
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                crate::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut stop_rx = stop_rx.clone();
        let done_tx = done_tx.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let app = app.clone();
                async move { Ok::<_, std::convert::Infallible>(router::route(app, req, peer).await) }
            });
            let conn = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            if let Race::Second(_) = race(conn.as_mut(), stop_rx.changed()).await {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
            drop(done_tx);
        });
    }
    crate::info!(
        "shutting down: waiting up to {}s for in-flight requests",
        grace.as_secs()
    );
    let _ = stop_tx.send(true);
    drop(done_tx);
    // recv() returns None once every connection task has dropped its sender.
    if tokio::time::timeout(grace, done_rx.recv()).await.is_err() {
        crate::info!(
            "shutting down: the grace is over; ending the upstream streams still relayed with an error"
        );
        app.llm.shut_down();
        let _ = tokio::time::timeout(FLUSH, done_rx.recv()).await;
    }
    Ok(())
}

/// Binds `addr` and says where the hub listens.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}
