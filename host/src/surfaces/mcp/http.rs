//! MCP Streamable HTTP on `/mcp`: both revisions on one endpoint.
//!
//! Order of checks on a POST: authentication (the refusal of
//! [`crate::surfaces::auth`], 401 or 403, with a JSON-RPC error body), `Accept`
//! (406) and `Content-Type` (415), the body limit (413), JSON parsing (400,
//! -32700), then the revision (see [`super::revision`]) and that revision's rules:
//!
//! - **2025-11-25 and older** (`super::handshake`): `initialize` opens a session and answers with
//!   `Mcp-Session-Id`; later requests must carry it (400 without, 404 for an
//!   unknown or expired one) and a matching `MCP-Protocol-Version` when they send
//!   one; notifications and client responses get 202; `notifications/cancelled`
//!   cancels the named request; batches only for the revisions that had them;
//!   `DELETE` ends the session; `GET` is 405 (the tool list never changes, so there
//!   is nothing to push).
//! - **2026-07-28**: one message per POST; the envelope and routing headers are
//!   checked; errors get the revision's HTTP status (404 for -32601, 400 for the
//!   envelope errors); `GET` and `DELETE` are 405.
//!
//! A request is answered with `text/event-stream` when it carries
//! `_meta.progressToken` (progress notifications, then the response) or when the
//! client accepts only SSE; with `application/json` otherwise.

use super::McpState;
use super::exchange::{self, Item, Job, PostScope};
use super::handshake;
use super::headers::{McpHeaders, SESSION_HEADER};
use super::jsonrpc::{self, Message, Payload, Request, RpcError};
use super::replies::{SERVER_ERROR, error, session_not_found, session_store_error};
use super::revision::{self, Revision, RevisionClues, RoutingHeaders};
use crate::hub::{self, Caller, Resource};
use crate::surfaces::auth;
use crate::surfaces::limit::{self, Surface, SurfaceLimits};
use crate::surfaces::parse::BodyParser;
use crate::surfaces::respond::{self, BodyError, Resp};
use http::{HeaderMap, Method, StatusCode, header};
use hyper::body::Incoming;
use serde_json::Value;
use std::net::SocketAddr;

/// Handles one request to `/mcp`.
pub(crate) async fn handle(
    state: &McpState,
    limits: &SurfaceLimits,
    bodies: &BodyParser<'_>,
    req: http::Request<Incoming>,
    peer: SocketAddr,
) -> Resp {
    match *req.method() {
        Method::POST => post(state, limits, bodies, req, peer).await,
        Method::DELETE => delete(state, req.headers(), peer).await,
        // No server-initiated messages exist (tools never change), so no GET stream.
        Method::GET => respond::method_not_allowed("POST, DELETE"),
        _ => respond::method_not_allowed("POST, DELETE"),
    }
}

/// The caller, or the refusal every surface sends with a JSON-RPC error body.
async fn authenticate(state: &McpState, h: &HeaderMap, peer: SocketAddr) -> Result<Caller, Resp> {
    let gate = state.dispatcher.backend().as_ref();
    auth::authenticate(
        gate,
        auth::bearer_token(h),
        peer,
        Resource::Mcp,
        hub::Scope::HubTools,
    )
    .await
    .map_err(|refusal| {
        let e = RpcError::new(SERVER_ERROR, refusal.error.to_string());
        refusal.respond(&jsonrpc::error_response(&Value::Null, &e))
    })
}

async fn delete(state: &McpState, h: &HeaderMap, peer: SocketAddr) -> Resp {
    let Some(sid) = h.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        // The stateless revision has nothing to delete.
        return respond::method_not_allowed("POST");
    };
    let caller = match authenticate(state, h, peer).await {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    match state.sessions.close(sid.trim(), caller.name()).await {
        Ok(true) => respond::no_content(),
        Ok(false) => session_not_found(),
        Err(e) => session_store_error(&e),
    }
}

async fn post(
    state: &McpState,
    limits: &SurfaceLimits,
    bodies: &BodyParser<'_>,
    req: http::Request<Incoming>,
    peer: SocketAddr,
) -> Resp {
    let (parts, body) = req.into_parts();
    let caller = match authenticate(state, &parts.headers, peer).await {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    let headers = McpHeaders::read(&parts.headers);
    if !headers.accepts_json && !headers.accepts_sse {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            &Value::Null,
            RpcError::invalid_request("Accept must allow application/json or text/event-stream"),
        );
    }
    if let Some(ct) = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        && !ct
            .trim()
            .get(.."application/json".len())
            .is_some_and(|t| t.eq_ignore_ascii_case("application/json"))
    {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &Value::Null,
            RpcError::invalid_request(format!("Content-Type must be application/json, not {ct:?}")),
        );
    }
    let body = match bodies.read(body).await {
        Ok(b) => b,
        Err(e) => return body_error(e),
    };
    let payload = match bodies.parse(caller.name(), body, jsonrpc::parse).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return error(StatusCode::BAD_REQUEST, &Value::Null, e),
        Err(e) => return body_error(e),
    };
    // Only requests wait for a turn: a notification (a cancel) or a response to
    // our own question must get through while the surface is busy.
    let permit = match requests_of(&payload).next() {
        None => None,
        Some(first) => match limits.enter(Surface::Mcp).await {
            Ok(permit) => Some(permit),
            Err(refusal) => return busy(&payload, first, refusal),
        },
    };
    let resp = route_post(state, caller, &headers, payload).await;
    match permit {
        Some(permit) => limit::held(resp, permit),
        None => resp,
    }
}

/// 413 for a body over `server.max_body_kb`, 400 for one that could not be read.
fn body_error(e: BodyError) -> Resp {
    error(e.status(), &Value::Null, RpcError::invalid_request(e.to_string()))
}

/// The requests of a POST body (not its notifications or responses).
fn requests_of(payload: &Payload) -> impl Iterator<Item = &Request> {
    let messages = match payload {
        Payload::Single(m) => std::slice::from_ref(m),
        Payload::Batch(ms) => ms.as_slice(),
    };
    messages.iter().filter_map(|m| match m {
        Message::Request(r) => Some(r),
        _ => None,
    })
}

/// 429 with `Retry-After` and a JSON-RPC error naming the limit, for the single
/// request (or the first of a batch) that was refused.
fn busy(payload: &Payload, first: &Request, refusal: limit::LimitRefusal) -> Resp {
    let id = match payload {
        Payload::Single(_) => first.id.clone(),
        Payload::Batch(_) => Value::Null,
    };
    let data = serde_json::json!({ "limit": refusal.key(), "surface": refusal.surface.name() });
    let e = RpcError::new(jsonrpc::SERVER_BUSY, refusal.to_string()).with_data(data);
    refusal.with_retry_after(error(StatusCode::TOO_MANY_REQUESTS, &id, e))
}

/// A parsed POST, by the revision it speaks.
async fn route_post(state: &McpState, caller: Caller, headers: &McpHeaders<'_>, payload: Payload) -> Resp {
    let stateless_body = match &payload {
        Payload::Single(Message::Request(r)) => {
            revision::body_is_stateless(r.known_method(), r.params.as_ref())
        }
        Payload::Single(Message::Notification(n)) => {
            revision::body_is_stateless(n.known_method(), n.params.as_ref())
        }
        _ => false,
    };
    let clues = RevisionClues {
        has_session_id: headers.session_id.is_some(),
        version_header: headers.version,
        stateless_body,
    };
    match revision::detect(clues) {
        Revision::Stateless => stateless(state, caller, headers, payload).await,
        Revision::Handshake => handshake::post(state, caller, headers, payload).await,
    }
}

/// The HTTP status of a 2026-07-28 JSON answer carrying `code`.
pub(crate) fn stateless_status(code: i64) -> StatusCode {
    match code {
        jsonrpc::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        jsonrpc::PARSE_ERROR
        | jsonrpc::INVALID_REQUEST
        | jsonrpc::INVALID_PARAMS
        | jsonrpc::HEADER_MISMATCH
        | jsonrpc::MISSING_CLIENT_CAPABILITY
        | jsonrpc::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

async fn stateless(state: &McpState, caller: Caller, h: &McpHeaders<'_>, payload: Payload) -> Resp {
    let bad = |id: &Value, e: RpcError| error(stateless_status(e.code), id, e);
    let msg = match payload {
        Payload::Single(m) => m,
        Payload::Batch(_) => {
            return bad(
                &Value::Null,
                RpcError::invalid_request(
                    "a 2026-07-28 request body is exactly one JSON-RPC message, not a batch",
                ),
            );
        }
    };
    let req = match msg {
        Message::Request(r) => r,
        Message::Notification(_) => {
            // Nothing to act on (cancelling is closing the response stream), but a
            // version we do not serve is still reported.
            return match h.version {
                Some(v) if v != revision::STATELESS_VERSION => {
                    bad(&Value::Null, revision::unsupported_version(v))
                }
                _ => respond::accepted(),
            };
        }
        Message::Response { .. } => {
            return bad(
                &Value::Null,
                RpcError::invalid_request(
                    "this server sends no requests in 2026-07-28, so there is nothing to answer",
                ),
            );
        }
        Message::Invalid { id, error } => return bad(&id, error),
    };
    if let Some(name) = h.duplicated {
        return bad(
            &req.id,
            RpcError::new(
                jsonrpc::HEADER_MISMATCH,
                format!("the {name} header appears more than once"),
            ),
        );
    }
    let routing = RoutingHeaders {
        protocol_version: h.version,
        method: h.method,
        name: h.name,
    };
    if let Err(e) = revision::check_envelope(&req, Some(routing)) {
        return bad(&req.id, e);
    }
    if let Err(e) = state.dispatcher.preflight(Revision::Stateless, &req) {
        return bad(&req.id, e);
    }
    let scope = PostScope {
        dispatcher: state.dispatcher.clone(),
        revision: Revision::Stateless,
        caller,
        ask: None,
        session: None,
    };
    let sse = h.wants_sse(std::iter::once(&req));
    let job = Job::new(req, |_, _| None);
    if sse {
        exchange::sse(scope, vec![Item::Run(job)], &[])
    } else {
        exchange::json_single(&scope, job, stateless_status).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stateless_statuses_follow_the_revision_table() {
        assert_eq!(stateless_status(jsonrpc::METHOD_NOT_FOUND), StatusCode::NOT_FOUND);
        for code in [
            jsonrpc::INVALID_PARAMS,
            jsonrpc::HEADER_MISMATCH,
            jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
        ] {
            assert_eq!(stateless_status(code), StatusCode::BAD_REQUEST);
        }
        assert_eq!(stateless_status(jsonrpc::INTERNAL_ERROR), StatusCode::OK);
    }
}
