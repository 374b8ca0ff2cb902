//! The chat surface: the AI SDK `useChat` endpoint, stream resumption, stored
//! sessions, and the hub's own chat page.
//!
//! | route                         | answer |
//! |-------------------------------|--------|
//! | `POST /api/chat`              | runs a turn of the agent loop; UI message stream |
//! | `GET /api/chat/{id}/stream`   | joins the running turn (chunks so far, then live); 204 when none |
//! | `POST /api/chat/{id}/stop`    | stops the running turn (its owner or an operator); always 204 |
//! | `GET /api/sessions`           | `{sessions: [SessionInfo + active, usage]}`, most recent first, every replica's |
//! | `GET /api/sessions/{id}`      | `{id, title, principal, ..., usage, messages: [UIMessage]}`; 404 when unknown |
//! | `DELETE /api/sessions/{id}`   | 204; 404 when unknown; 409 while a turn runs |
//! | `POST /api/sessions/{id}/handover` | operators: `{"principal": P}` gives the session to `P` |
//! | `GET /`                       | the chat page |
//!
//! Every session belongs to the principal whose turn created it. A caller sees
//! and continues only its own; operators see, watch and delete every one (and
//! list one principal's with `?principal=`). Another principal's session answers
//! exactly like an unknown id: the same 404 body, and 204 from `stream`.
//!
//! Errors before the stream starts are the hub's JSON error shape with a status
//! (the AI SDK client shows the body as the error message): 400 for a bad body or a
//! request that does not fit the session (`invalid_approval` for an approval answer
//! the hub did not ask for, or for another call or input), 401/403 from authentication, 403
//! `quota_exceeded` when the caller is at `max_sessions` or `max_stored_mb`, 403
//! `not_owner` when an operator posts into another principal's session, 404 for an
//! unknown model or another principal's session, 409 when the session already has a
//! turn running and `agent.queued_turns` requests already wait for it
//! (`turn_queue_full`; fewer wait their turn), 503 when no provider is usable.

pub(crate) mod page;
pub(crate) mod request;
pub(crate) mod stream;

use super::App;
use super::limit::Surface;
use super::respond::{self, Resp};
use crate::agent::AgentError;
use crate::config::LOCAL_PRINCIPAL;
use crate::hub::{Caller, SessionUsage};
use crate::ids::is_valid_client_id;
use crate::llm::RouteError;
use crate::surfaces::chat_metrics::ChatStream;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::time::Duration;

/// Interval of `: keepalive` comments on a quiet chat stream. Besides keeping
/// proxies from closing the stream, each one is a write that notices a client
/// that went away while a long tool call runs.
pub(crate) const KEEPALIVE: Duration = Duration::from_secs(2);

/// The HTTP status and error code of an agent error, for every surface that
/// starts turns.
pub(crate) fn agent_status(e: &AgentError) -> (StatusCode, &'static str) {
    match e {
        AgentError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
        AgentError::Busy(_) => (StatusCode::CONFLICT, "turn_in_progress"),
        AgentError::NoModel => (StatusCode::BAD_REQUEST, "no_model"),
        AgentError::Route(RouteError::NoProviders) => (StatusCode::SERVICE_UNAVAILABLE, "no_providers"),
        AgentError::Route(RouteError::UnknownModel { .. }) => (StatusCode::NOT_FOUND, "model_not_found"),
        AgentError::ProviderKey(_) => (StatusCode::SERVICE_UNAVAILABLE, "provider_not_configured"),
        AgentError::Storage(_) => (StatusCode::INTERNAL_SERVER_ERROR, "storage_error"),
        AgentError::Approval(_) => (StatusCode::BAD_REQUEST, "invalid_approval"),
        AgentError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        AgentError::NotOwner { .. } => (StatusCode::FORBIDDEN, "not_owner"),
        AgentError::Quota(_) => (StatusCode::FORBIDDEN, "quota_exceeded"),
        AgentError::NotOperator(_) => (StatusCode::FORBIDDEN, "forbidden"),
        AgentError::QueueFull(_) => (StatusCode::CONFLICT, "turn_queue_full"),
        AgentError::UnknownAgent(_) => (StatusCode::NOT_FOUND, "agent_not_found"),
        AgentError::Sampling(_) => (StatusCode::BAD_REQUEST, "sampling_out_of_range"),
    }
}

fn agent_error(e: AgentError) -> Resp {
    let (status, code) = agent_status(&e);
    respond::error(status, code, e.to_string())
}

/// The answer for a session id the caller cannot see: the same bytes whether it
/// does not exist or is another principal's.
fn no_session(id: &str) -> Resp {
    agent_error(AgentError::NotFound(id.to_string()))
}

fn storage_error(e: crate::storage::StorageError) -> Resp {
    respond::error(StatusCode::INTERNAL_SERVER_ERROR, "storage_error", e.to_string())
}

fn check_id(id: &str) -> Result<(), Resp> {
    if is_valid_client_id(id) {
        Ok(())
    } else {
        Err(respond::error(
            StatusCode::BAD_REQUEST,
            "invalid_id",
            format!("{id:?} is not a valid id (1-128 characters of A-Z a-z 0-9 _ -)"),
        ))
    }
}

/// `POST /api/chat`.
pub(crate) async fn post_chat(app: &App, req: Request<Incoming>, caller: Caller) -> Resp {
    let started = std::time::Instant::now();
    let bodies = app.body_parser();
    let body = match bodies.read(req.into_body()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let chat = match bodies.parse(caller.name(), body, request::parse).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return respond::error(StatusCode::BAD_REQUEST, "invalid_request", e.to_string()),
        Err(e) => return e.into_response(),
    };
    // The turn, not the response, holds the place: it may outlive its first
    // client (another one resumes it) and ends on its own.
    let permit = match app.limits.enter(Surface::Chat).await {
        Ok(permit) => permit,
        Err(refusal) => return refusal.into_response(),
    };
    match app.agent.start(chat, caller).await {
        Ok(sub) => {
            let turn = sub.turn().clone();
            tokio::spawn(async move {
                turn.ended().await;
                drop(permit);
            });
            stream::respond(sub.into(), KEEPALIVE, ChatStream::new("chat", started))
        }
        Err(e) => agent_error(e),
    }
}

/// `GET /api/chat/{id}/stream`: the turn may run on another replica. Another
/// principal's turn is no turn: 204, as for a session with none.
pub(crate) async fn resume(app: &App, caller: &Caller, id: &str) -> Resp {
    if let Err(resp) = check_id(id) {
        return resp;
    }
    match app.agent.join(caller, id).await {
        Ok(Some(watch)) => {
            let stream = ChatStream::new("chat_resume", std::time::Instant::now()).resuming(id, &watch);
            stream::respond(watch, KEEPALIVE, stream)
        }
        Ok(None) => respond::no_content(),
        Err(e) => storage_error(e),
    }
}

/// `POST /api/chat/{id}/stop`: stops the session's live turn, wherever it runs,
/// if the caller owns it or is an operator. Always 204: whether a turn was live,
/// or someone else's, is not told.
pub(crate) async fn stop(app: &App, caller: &Caller, id: &str) -> Resp {
    if let Err(resp) = check_id(id) {
        return resp;
    }
    match app.agent.stop(caller, id).await {
        Ok(()) => respond::no_content(),
        Err(e) => storage_error(e),
    }
}

/// `GET /api/sessions?principal=P`: the caller's sessions (an operator's:
/// everyone's, or `P`'s).
pub(crate) async fn list_sessions(app: &App, caller: &Caller, query: Option<&str>) -> Resp {
    let visible = match super::query::visible(caller, query) {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let list = match app.agent.list_sessions(&visible).await {
        Ok(list) => list,
        Err(e) => return storage_error(e),
    };
    let active = match app.agent.active_sessions().await {
        Ok(active) => active,
        Err(e) => return storage_error(e),
    };
    let usage = match session_usage(app, list.iter().map(|s| s.id.clone()).collect()).await {
        Ok(usage) => usage,
        Err(resp) => return resp,
    };
    let sessions: Vec<_> = list
        .into_iter()
        .zip(usage)
        .map(|(s, usage)| {
            let active = active.contains(&s.id);
            let mut v = serde_json::to_value(&s).expect("session info serializes");
            v["active"] = json!(active);
            v["usage"] = json!(usage);
            v
        })
        .collect();
    respond::json(StatusCode::OK, &json!({ "sessions": sessions }))
}

/// `GET /api/sessions/{id}`.
pub(crate) async fn get_session(app: &App, caller: &Caller, id: &str) -> Resp {
    if let Err(resp) = check_id(id) {
        return resp;
    }
    let found = match app.agent.session(caller, id).await {
        Ok(Some(session)) => app.agent.active_sessions().await.map(|a| (Some(session), a)),
        Ok(None) => Ok((None, Default::default())),
        Err(e) => Err(e),
    };
    match found {
        Ok((Some(session), active)) => {
            let usage = match session_usage(app, vec![id.to_string()]).await {
                Ok(mut usage) => usage.pop(),
                Err(resp) => return resp,
            };
            let mut v = serde_json::to_value(&session).expect("session serializes");
            v["active"] = json!(active.contains(id));
            v["usage"] = json!(usage);
            respond::json(StatusCode::OK, &v)
        }
        Ok((None, _)) => no_session(id),
        Err(e) => storage_error(e),
    }
}

/// The accounting sums of `ids`, read on the blocking pool (the read waits for
/// the accounting writer).
async fn session_usage(app: &App, ids: Vec<String>) -> Result<Vec<SessionUsage>, Resp> {
    let hub = app.hub.clone();
    match tokio::task::spawn_blocking(move || hub.accounting().session_usage(ids.iter().map(String::as_str)))
        .await
    {
        Ok(Ok(usage)) => Ok(usage),
        Ok(Err(e)) => Err(respond::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "storage_error",
            e.to_string(),
        )),
        Err(e) => Err(respond::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            e.to_string(),
        )),
    }
}

/// `DELETE /api/sessions/{id}`.
pub(crate) async fn delete_session(app: &App, caller: &Caller, id: &str) -> Resp {
    if let Err(resp) = check_id(id) {
        return resp;
    }
    match app.agent.delete_session(caller, id).await {
        Ok(true) => respond::no_content(),
        Ok(false) => no_session(id),
        Err(e) => agent_error(e),
    }
}

/// The body of `POST /api/sessions/{id}/handover`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HandOver {
    principal: String,
}

/// `POST /api/sessions/{id}/handover` with `{"principal": P}`: an operator gives
/// the session to `P` (a configured token's name, or `local`).
pub(crate) async fn hand_over(app: &App, req: Request<Incoming>, caller: &Caller, id: &str) -> Resp {
    if let Err(resp) = check_id(id) {
        return resp;
    }
    if !caller.is_operator() {
        return agent_error(AgentError::NotOperator(caller.name().to_string()));
    }
    let body = match respond::read_body(req.into_body(), 4 * 1024).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let to: HandOver = match serde_json::from_slice(&body) {
        Ok(h) => h,
        Err(e) => return respond::BodyError::Json(e).into_response(),
    };
    let known = to.principal == LOCAL_PRINCIPAL || app.config.tokens.iter().any(|t| t.name == to.principal);
    if !known {
        let message = format!(
            "no principal {:?}: name a configured token ([[tokens]] name) or \"{LOCAL_PRINCIPAL}\"",
            to.principal
        );
        return respond::error(StatusCode::BAD_REQUEST, "unknown_principal", message);
    }
    match app.agent.hand_over(caller, id, &to.principal).await {
        Ok(Some(info)) => respond::json(StatusCode::OK, &info),
        Ok(None) => no_session(id),
        Err(e) => agent_error(e),
    }
}
