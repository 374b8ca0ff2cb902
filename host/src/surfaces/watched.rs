//! JSON answers that notice a client leaving while the work runs.
//!
//! hyper's HTTP/1 server notices a closed connection only when a write fails, not
//! while the service future is pending. So an answer that takes longer than
//! [`COMMIT_AFTER`] commits `200` and its headers, then writes a space (JSON allows
//! leading whitespace) every [`PROBE_EVERY`] until the answer is ready; the write
//! that fails cancels the work's token. Quick answers keep their exact status.

use super::body::Body;
use super::respond::{self, Resp};
use crate::hub::CancelToken;
use crate::race::{Race, race};
use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// How long an answer may take before its headers are committed.
pub(crate) const COMMIT_AFTER: Duration = Duration::from_millis(50);
/// How often a committed answer probes the connection while the work is silent.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(250);

/// Answers with `work`'s status and JSON; `cancel` is cancelled when the client
/// goes away first (or when this future is dropped before committing).
pub(crate) async fn json<F>(work: F, cancel: CancelToken) -> Resp
where
    F: Future<Output = (StatusCode, Value)> + Send + 'static,
{
    let mut work = Box::pin(work);
    let mut guard = CancelOnDrop(Some(cancel.clone()));
    match tokio::time::timeout(COMMIT_AFTER, &mut work).await {
        Ok((status, value)) => {
            guard.0 = None;
            respond::json(status, &value)
        }
        Err(_) => {
            guard.0 = None;
            committed(Box::pin(async move { work.await.1 }), cancel)
        }
    }
}

/// `200` now, the JSON body when `work` ends, `cancel` cancelled if the client
/// closes the connection first. MCP's slow JSON answers use it too.
pub(crate) fn committed<F>(mut work: std::pin::Pin<Box<F>>, cancel: CancelToken) -> Resp
where
    F: Future<Output = Value> + Send + 'static,
{
    let (tx, body) = Body::channel(1);
    tokio::spawn(async move {
        loop {
            match race(tokio::time::timeout(PROBE_EVERY, &mut work), tx.closed()).await {
                Race::First(Ok(value)) => {
                    let _ = tx.send(Bytes::from(respond::encode(&value))).await;
                    return;
                }
                Race::First(Err(_quiet)) => {
                    if tx.send(Bytes::from_static(b" ")).await.is_err() {
                        break;
                    }
                }
                Race::Second(()) => break,
            }
        }
        // The client is gone: cancel, and let the work wind down (calls record how
        // they ended).
        cancel.cancel();
        let _ = work.await;
    });
    respond::json_body(StatusCode::OK, body)
}

/// Cancels the token when dropped unless disarmed.
pub(crate) struct CancelOnDrop(pub Option<CancelToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}
