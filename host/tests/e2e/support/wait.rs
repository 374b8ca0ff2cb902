//! Waits on events a test can observe (a call in flight, a condition coming true)
//! instead of fixed sleeps that assume work has started: a short pause between
//! checks, and an overall limit generous enough for a loaded 2-core machine.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a wait lasts before the test fails: only reached when the event never comes.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The pause between two checks.
const POLL: Duration = Duration::from_millis(20);

/// Re-checks `check` until it gives a value; panics naming `what` after [`PATIENCE`].
pub async fn until<T, F: Future<Output = Option<T>>>(what: &str, mut check: impl FnMut() -> F) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < PATIENCE, "waited {PATIENCE:?} for {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// Like [`until`], for a condition whose state is worth showing if it never holds:
/// `check` gives `Err(what it saw)` until then, and the failure shows the last of it.
pub async fn until_seen<T, S: std::fmt::Debug, F: Future<Output = Result<T, S>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let start = Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                start.elapsed() < PATIENCE,
                "waited {PATIENCE:?} for {what}; last seen: {seen:?}"
            ),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The `wasmhub_calls_in_flight` gauge in a `/metrics` text.
pub fn calls_in_flight(metrics: &str) -> i64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("wasmhub_calls_in_flight "))
        .and_then(|n| n.trim().parse().ok())
        .expect("the metrics have the in-flight gauge")
}

/// Until the in-process hub runs at least `n` calls (nested ones count).
pub async fn in_flight(hub: &wasmhub::hub::Hub, n: i64) {
    until(&format!("{n} calls in flight"), || async move {
        (calls_in_flight(&hub.metrics_text()) >= n).then_some(())
    })
    .await
}

/// Until the hub serving on `addr` reports at least `n` calls in flight on `GET /metrics`.
pub async fn in_flight_at(addr: SocketAddr, n: i64) {
    until(&format!("{n} calls in flight at {addr}"), || async move {
        let resp = crate::support::client::send(addr, http::Method::GET, "/metrics", None, &[]).await;
        let text = String::from_utf8(resp.bytes().await.to_vec()).expect("UTF-8 metrics");
        (calls_in_flight(&text) >= n).then_some(())
    })
    .await
}
