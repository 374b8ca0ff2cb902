//! The handshake era (2025-11-25 and older) over Streamable HTTP: `initialize`
//! opens a session and answers with `Mcp-Session-Id`; later requests must carry it
//! (400 without, 404 for an unknown or expired one) and a matching
//! `MCP-Protocol-Version` when they send one; notifications and client responses
//! get 202; `notifications/cancelled` cancels the named request; batches only for
//! the revisions that had them. Method errors travel in a 200 response.

use super::McpState;
use super::approval::McpClient;
use super::exchange::{self, AskRoute, Item, Job, PostScope};
use super::headers::{McpHeaders, SESSION_HEADER};
use super::jsonrpc::{self, Message, Payload, Request, RpcError};
use super::method::McpMethod;
use super::replies::{error, session_not_found, session_store_error};
use super::revision::{self, Revision};
use crate::hub::Caller;
use crate::surfaces::respond::{self, Resp};
use http::{HeaderValue, StatusCode};
use serde_json::Value;

/// Handshake-era method errors travel in a 200 response, as JSON-RPC intends.
fn handshake_status(_code: i64) -> StatusCode {
    StatusCode::OK
}

/// A handshake-era error: 400 with the JSON-RPC error.
fn handshake_error(id: &Value, e: RpcError) -> Resp {
    error(StatusCode::BAD_REQUEST, id, e)
}

/// Answers a POST of the handshake era for an authenticated `caller`.
pub(super) async fn post(state: &McpState, caller: Caller, h: &McpHeaders<'_>, payload: Payload) -> Resp {
    let session = match named_session(state, &caller, h).await {
        Ok(session) => session,
        Err(resp) => return resp,
    };
    let batch = matches!(payload, Payload::Batch(_));
    let messages = match payload {
        Payload::Single(Message::Request(r)) if r.known_method() == Some(McpMethod::Initialize) => {
            if session.is_some() {
                return handshake_error(
                    &r.id,
                    RpcError::invalid_request(
                        "this session is already initialized; send initialize without Mcp-Session-Id to open a new one",
                    ),
                );
            }
            return initialize(state, &caller, h, r).await;
        }
        Payload::Single(m) => vec![m],
        Payload::Batch(items) => {
            let version = session
                .as_ref()
                .map_or(revision::LATEST_HANDSHAKE_VERSION, |s| s.version);
            if !revision::batches_allowed(version) {
                return handshake_error(
                    &Value::Null,
                    RpcError::invalid_request(format!(
                        "JSON-RPC batches are not part of protocol revision {version}"
                    )),
                );
            }
            items
        }
    };
    match handshake_items(state, session.as_ref(), messages, batch) {
        Ok(items) => answer_handshake(state, caller, h, session.as_ref(), items, batch).await,
        Err(resp) => resp,
    }
}

/// The live session a handshake-era request names.
struct NamedSession<'h> {
    id: &'h str,
    /// The version negotiated by its `initialize`.
    version: &'static str,
    /// What its client declared at `initialize`.
    client: McpClient,
}

/// The session `Mcp-Session-Id` names (404 when unknown, expired or another
/// caller's), after checking that `MCP-Protocol-Version`, when sent, is one we
/// serve and the one negotiated for that session (400 otherwise).
async fn named_session<'h>(
    state: &McpState,
    caller: &Caller,
    h: &McpHeaders<'h>,
) -> Result<Option<NamedSession<'h>>, Resp> {
    let session = match h.session_id {
        None => None,
        Some(id) => match state.sessions.touch(id, caller.name()).await {
            Ok(Some(live)) => Some(NamedSession {
                id,
                version: live.version,
                client: live.client,
            }),
            Ok(None) => return Err(session_not_found()),
            Err(e) => return Err(session_store_error(&e)),
        },
    };
    let Some(v) = h.version else {
        return Ok(session);
    };
    let problem = match (revision::handshake_version(v), &session) {
        (None, _) => format!("unsupported MCP-Protocol-Version {v:?}"),
        (Some(v), Some(s)) if v != s.version => format!(
            "MCP-Protocol-Version {v} does not match the version negotiated for this session ({})",
            s.version
        ),
        _ => return Ok(session),
    };
    Err(handshake_error(&Value::Null, RpcError::invalid_request(problem)))
}

/// What to run and answer for the messages of one handshake-era POST (an
/// `initialize` alone is handled before this). Cancellation notifications act
/// at once; client responses go to the request waiting for them (an approval
/// question), or are dropped.
fn handshake_items(
    state: &McpState,
    session: Option<&NamedSession<'_>>,
    messages: Vec<Message>,
    batch: bool,
) -> Result<Vec<Item>, Resp> {
    let mut items = Vec::new();
    for m in messages {
        match m {
            Message::Request(r) if r.known_method() == Some(McpMethod::Initialize) => {
                items.push(Item::Ready(jsonrpc::error_response(
                    &r.id,
                    &RpcError::invalid_request("initialize must be sent alone, not in a batch"),
                )))
            }
            Message::Request(r) => {
                let Some(session) = session else {
                    return Err(handshake_error(
                        &r.id,
                        RpcError::invalid_request("missing Mcp-Session-Id header: send initialize first"),
                    ));
                };
                let sessions = state.sessions.clone();
                let job = Job::new(r, |req, cancel| {
                    Some(sessions.track(session.id, jsonrpc::id_key(&req.id), cancel.clone()))
                });
                items.push(Item::Run(job));
            }
            Message::Notification(n) => {
                if n.known_method() == Some(McpMethod::NotificationsCancelled)
                    && let Some(session) = session
                    && let Some(id) = n.params.as_ref().and_then(|p| p.get("requestId"))
                {
                    state.sessions.cancel(session.id, &jsonrpc::id_key(id));
                }
            }
            Message::Response { id, outcome } => {
                if let Some(session) = session {
                    state.sessions.answer(session.id, &jsonrpc::id_key(&id), outcome);
                }
            }
            Message::Invalid { id, error } if !batch => return Err(handshake_error(&id, error)),
            Message::Invalid { id, error } => items.push(Item::Ready(jsonrpc::error_response(&id, &error))),
        }
    }
    Ok(items)
}

/// Runs `items` and answers: 202 when there is nothing to answer, SSE when the
/// client wants it or a call needs an approval its client can be asked for (the
/// question travels on the stream), else one JSON answer (an array for a batch).
async fn answer_handshake(
    state: &McpState,
    caller: Caller,
    h: &McpHeaders<'_>,
    session: Option<&NamedSession<'_>>,
    mut items: Vec<Item>,
    batch: bool,
) -> Resp {
    if items.is_empty() {
        return respond::accepted();
    }
    let ask = session
        .filter(|s| s.client.elicitation && h.accepts_sse)
        .map(|s| AskRoute {
            sessions: state.sessions.clone(),
            session: s.id.to_string(),
            by: format!("MCP client {} of session {}", s.client.name, s.id),
        });
    let requests = || {
        items.iter().filter_map(|i| match i {
            Item::Run(job) => Some(&job.req),
            Item::Ready(_) => None,
        })
    };
    let asks = ask.is_some() && requests().any(|r| state.dispatcher.needs_approval(r, &caller));
    let sse = h.wants_sse(requests()) || asks;
    let scope = PostScope {
        dispatcher: state.dispatcher.clone(),
        revision: Revision::Handshake,
        caller,
        ask,
        session: session.map(|s| s.id.to_string()),
    };
    if sse {
        return exchange::sse(scope, items, &[]);
    }
    if batch {
        return exchange::json_batch(&scope, items).await;
    }
    match items.pop() {
        Some(Item::Run(job)) => exchange::json_single(&scope, job, handshake_status).await,
        Some(Item::Ready(answer)) => respond::json(StatusCode::BAD_REQUEST, &answer),
        None => respond::accepted(),
    }
}

async fn initialize(state: &McpState, caller: &Caller, h: &McpHeaders<'_>, r: Request) -> Resp {
    let version = match revision::negotiate_initialize(&r) {
        Ok(version) => version,
        Err(e) => return error(StatusCode::BAD_REQUEST, &r.id, e),
    };
    let params = r.params_object();
    let client = McpClient::read(
        params.and_then(|p| p.get("clientInfo")),
        params.and_then(|p| p.get("capabilities")),
    );
    let sid = match state.sessions.open_for(caller.name(), version, client).await {
        Ok(sid) => sid,
        Err(e) => return session_store_error(&e),
    };
    let answer = jsonrpc::result_response(&r.id, state.dispatcher.initialize_result(version, caller));
    if !h.accepts_json {
        let scope = PostScope {
            dispatcher: state.dispatcher.clone(),
            revision: Revision::Handshake,
            caller: caller.clone(),
            ask: None,
            session: Some(sid.to_string()),
        };
        return exchange::sse(scope, vec![Item::Ready(answer)], &[(SESSION_HEADER, sid)]);
    }
    let mut resp = respond::json(StatusCode::OK, &answer);
    if let Ok(v) = HeaderValue::from_str(&sid) {
        resp.headers_mut().insert(SESSION_HEADER, v);
    }
    resp
}
