//! The operator's approval API: `GET /api/approvals` lists the calls waiting for a
//! decision (an operator's list has every caller's; anyone else sees only its own
//! calls), `POST /api/approvals/{id}` with `{"approved": bool, "reason"?: string}`
//! decides one. Only operators (the local operator, tokens with `operator = true`)
//! decide; the waiting call runs, or fails with `approval_denied`.

use super::App;
use super::respond::{self, BodyError, Resp};
use crate::hub::{ApprovalError, Caller};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::json;

/// `GET /api/approvals`: an operator sees every waiting call, anyone else only
/// its own.
pub(crate) fn list(app: &App, caller: &Caller) -> Resp {
    respond::json(
        StatusCode::OK,
        &json!({ "approvals": app.hub.pending_approvals(caller) }),
    )
}

/// The body of `POST /api/approvals/{id}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    approved: bool,
    #[serde(default)]
    reason: Option<String>,
}

/// Longest reason kept, in bytes (it reaches the model and the audit log).
const MAX_REASON_BYTES: usize = 1024;

/// `POST /api/approvals/{id}`.
pub(crate) async fn decide(app: &App, req: Request<Incoming>, caller: &Caller, id: &str) -> Resp {
    let body = match respond::read_body(req.into_body(), 16 * 1024).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let decision: DecisionBody = match serde_json::from_slice(&body) {
        Ok(d) => d,
        Err(e) => return BodyError::Json(e).into_response(),
    };
    if decision
        .reason
        .as_ref()
        .is_some_and(|r| r.len() > MAX_REASON_BYTES)
    {
        let message = format!("the reason is longer than {MAX_REASON_BYTES} bytes; shorten it");
        return respond::error(StatusCode::BAD_REQUEST, "invalid_input", message);
    }
    match app
        .hub
        .decide_approval(id, decision.approved, decision.reason, caller)
    {
        Ok(decided) => respond::json(
            StatusCode::OK,
            &json!({ "approval": decided, "approved": decision.approved, "by": caller.name() }),
        ),
        Err(e) => refused(&e),
    }
}

fn refused(e: &ApprovalError) -> Resp {
    match e {
        ApprovalError::NotOperator(_) => respond::error(StatusCode::FORBIDDEN, "forbidden", e.to_string()),
        ApprovalError::Unknown(_) => respond::error(StatusCode::NOT_FOUND, "not_found", e.to_string()),
    }
}
