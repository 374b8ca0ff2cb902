//! Running the requests of one HTTP POST and answering them, as one JSON body or as
//! a `text/event-stream` of progress notifications followed by the responses.
//!
//! Cancellation: every request runs under its own [`CancelToken`], cancelled as soon
//! as the client is gone. hyper's HTTP/1 server notices a closed connection only
//! when a write fails (not while the service future is pending, nor while the body
//! waits for data), so a JSON answer that takes longer than [`COMMIT_AFTER`]
//! commits `200` and its headers and then writes a space (JSON allows leading
//! whitespace) every [`PROBE_EVERY`] until the answer is ready; an SSE answer writes
//! `: keepalive` comments at the same pace. The write that fails drops the response
//! body, which cancels the call. Quick answers keep their exact status and a
//! `Content-Length`. `notifications/cancelled` reaches the same tokens through the
//! session table.

use super::approval::Elicitor;
use super::backend::{ProgressSink, progress_notifier};
use super::dispatch::{CallCtx, Dispatcher};
use super::jsonrpc::{self, Request};
use super::method::McpMethod;
use super::revision::Revision;
use super::session::{InFlightRequest, SessionTable};
use crate::hub::auth::Caller;
use crate::hub::cancel::CancelToken;
use crate::race::{Race, race};
use crate::surfaces::body::Body;
use crate::surfaces::respond::{self, Resp};
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// Numbers our requests to clients (`wasmhub-approval-N`).
static NEXT_ASK: AtomicU64 = AtomicU64::new(1);

/// Frames buffered between the calls of a streamed answer and the client.
const STREAM_FRAMES: usize = 32;

pub(crate) use crate::surfaces::watched::{COMMIT_AFTER, PROBE_EVERY};
use crate::surfaces::watched::{CancelOnDrop, committed};

/// One entry of a POST body, in order.
pub(crate) enum Item {
    /// Answered without running anything (an invalid message in a batch).
    Ready(Value),
    /// A request to run.
    Run(Job),
}

/// A request to run and what it runs under.
pub(crate) struct Job {
    pub req: Request,
    pub cancel: CancelToken,
    /// Keeps the request findable by `notifications/cancelled` while it runs.
    pub in_flight: Option<InFlightRequest>,
}

impl Job {
    pub(crate) fn new(
        req: Request,
        in_flight: impl FnOnce(&Request, &CancelToken) -> Option<InFlightRequest>,
    ) -> Job {
        let cancel = CancelToken::new();
        let in_flight = in_flight(&req, &cancel);
        Job {
            req,
            cancel,
            in_flight,
        }
    }
}

/// What every request of the POST shares.
#[derive(Clone)]
pub(crate) struct PostScope {
    pub dispatcher: Arc<Dispatcher>,
    pub revision: Revision,
    pub caller: Caller,
    /// The session whose client can be asked to approve calls (2025-11-25, a
    /// client that declared `elicitation`); used by streamed answers only.
    pub ask: Option<AskRoute>,
    /// The MCP session of the POST (handshake era), for the requests' spans.
    pub session: Option<String>,
}

/// How the requests of a POST reach their session's client with a question.
#[derive(Clone)]
pub(crate) struct AskRoute {
    pub sessions: Arc<SessionTable>,
    pub session: String,
    /// Who answers: `MCP client <name> of session <id>`.
    pub by: String,
}

/// An [`Elicitor`] that writes the question on this answer's stream (`tx`) and
/// waits for the response the client POSTs on the session.
fn elicitor(route: &AskRoute, tx: mpsc::Sender<Bytes>) -> Elicitor {
    let by = route.by.clone();
    let route = route.clone();
    Elicitor {
        by,
        send: Arc::new(move |params: Value| {
            let route = route.clone();
            let tx = tx.clone();
            Box::pin(async move {
                let id = format!("wasmhub-approval-{}", NEXT_ASK.fetch_add(1, Ordering::Relaxed));
                let (_waiting, answer) = route
                    .sessions
                    .expect_answer(&route.session, jsonrpc::id_key(&json!(id)));
                let request = json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": McpMethod::ElicitationCreate.as_str(),
                    "params": params,
                });
                tx.send(frame(&request)).await.ok()?;
                answer.await.ok()
            })
        }),
    }
}

/// The HTTP status for a JSON answer carrying `error_code`.
pub(crate) type StatusFor = fn(i64) -> StatusCode;

async fn run(
    scope: PostScope,
    job: Job,
    progress: Option<ProgressSink>,
    elicitor: Option<Elicitor>,
) -> Value {
    let Job {
        req,
        cancel,
        in_flight,
    } = job;
    let mut guard = CancelOnDrop(Some(cancel.clone()));
    let ctx = CallCtx {
        revision: scope.revision,
        caller: scope.caller.clone(),
        cancel,
        progress,
        elicitor,
        session: scope.session.clone(),
        transport: "tcp",
    };
    let answer = scope.dispatcher.respond(req, ctx).await;
    guard.0 = None;
    drop(in_flight);
    answer
}

/// Answers one request as `application/json`; the status comes from `status_for`
/// when the answer is an error and arrives within [`COMMIT_AFTER`].
pub(crate) async fn json_single(scope: &PostScope, job: Job, status_for: StatusFor) -> Resp {
    let cancel = job.cancel.clone();
    let mut call = Box::pin(run(scope.clone(), job, None, None));
    let answer = match tokio::time::timeout(COMMIT_AFTER, &mut call).await {
        Ok(answer) => answer,
        Err(_) => return committed(call, cancel),
    };
    let status = answer["error"]["code"]
        .as_i64()
        .map(status_for)
        .unwrap_or(StatusCode::OK);
    respond::json(status, &answer)
}

/// Answers a batch as one `application/json` array, in order; the requests run
/// concurrently. A batch of only notifications gets 202.
pub(crate) async fn json_batch(scope: &PostScope, items: Vec<Item>) -> Resp {
    let mut pending = Vec::with_capacity(items.len());
    for item in items {
        pending.push(match item {
            Item::Ready(v) => Err(v),
            Item::Run(job) => {
                let scope = scope.clone();
                let guard = CancelOnDrop(Some(job.cancel.clone()));
                Ok((
                    tokio::spawn(crate::telemetry::carry(run(scope, job, None, None))),
                    guard,
                ))
            }
        });
    }
    let mut answers = Vec::with_capacity(pending.len());
    for p in pending {
        answers.push(match p {
            Err(ready) => ready,
            Ok((handle, mut guard)) => {
                let answer = handle.await.unwrap_or_else(|e| {
                    jsonrpc::error_response(
                        &Value::Null,
                        &jsonrpc::RpcError::internal(format!("call task failed: {e}")),
                    )
                });
                guard.0 = None;
                answer
            }
        });
    }
    if answers.is_empty() {
        return respond::accepted();
    }
    respond::json(StatusCode::OK, &Value::Array(answers))
}

/// Answers as `text/event-stream`: progress notifications while the requests run,
/// then each response as it completes. The stream ends after the last response.
pub(crate) fn sse(scope: PostScope, items: Vec<Item>, extra: &[(&'static str, String)]) -> Resp {
    let (body_tx, body) = Body::channel(STREAM_FRAMES);
    let (frame_tx, mut frame_rx) = mpsc::channel::<Bytes>(STREAM_FRAMES);
    let mut tokens = Vec::new();
    let mut ready = Vec::new();
    for item in items {
        match item {
            Item::Ready(v) => ready.push(frame(&v)),
            Item::Run(job) => {
                tokens.push(job.cancel.clone());
                let progress = job.req.progress_token().cloned().map(|t| {
                    let tx = frame_tx.clone();
                    // A full buffer drops the report: progress is advisory, the
                    // final response is never dropped.
                    progress_notifier(t, move |n| drop(tx.try_send(frame(&n))))
                });
                let elicitor = scope.ask.as_ref().map(|route| elicitor(route, frame_tx.clone()));
                let scope = scope.clone();
                let tx = frame_tx.clone();
                tokio::spawn(crate::telemetry::carry(async move {
                    let answer = run(scope, job, progress, elicitor).await;
                    let _ = tx.send(frame(&answer)).await;
                }));
            }
        }
    }
    drop(frame_tx);
    tokio::spawn(async move {
        for bytes in ready {
            if body_tx.send(bytes).await.is_err() {
                break;
            }
        }
        loop {
            // A keepalive after every PROBE_EVERY without a frame.
            let next = match race(
                tokio::time::timeout(PROBE_EVERY, frame_rx.recv()),
                body_tx.closed(),
            )
            .await
            {
                Race::First(Ok(Some(bytes))) => bytes,
                Race::First(Ok(None)) => return,
                Race::First(Err(_quiet)) => Bytes::from_static(crate::sse::KEEPALIVE),
                Race::Second(()) => break,
            };
            if body_tx.send(next).await.is_err() {
                break;
            }
        }
        // The client closed the stream: stop everything still running for it.
        for token in tokens {
            token.cancel();
        }
    });
    let mut resp = respond::sse(body, false);
    let h = resp.headers_mut();
    for (name, value) in extra {
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(*name, v);
        }
    }
    resp
}

fn frame(message: &Value) -> Bytes {
    let mut buf = Vec::with_capacity(128);
    crate::sse::write_json(&mut buf, message);
    Bytes::from(buf)
}
