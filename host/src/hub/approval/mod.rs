//! Human approval of consequential calls. `policy` decides, per caller and
//! operation, allow, ask or deny (naming the key that decided); `pending` holds
//! the calls waiting for an operator. [`check`] is the one place the call protocol
//! asks: every call, nested ones included, after its input is validated and
//! before it takes an instance slot (nobody's slot is held while a person thinks).
//!
//! Who can say yes: a surface whose user already approved the calls of this
//! invocation (`wasmhub call --approve`), or an operator token deciding a pending
//! call within `approvals.wait_secs`. Anything else that needs an approval fails
//! with `approval_required`, naming the policy key that would allow it.

mod pending;
mod policy;

pub(crate) use pending::Verdict;
pub use pending::{DecideError, PendingApproval};

use super::auth::Caller;
use super::cancel::CancelToken;
use super::error::CallError;
use super::registry::OpRef;
use crate::config::{ApprovalAction, Config};
use crate::runtime::{ErrorCode, Hints};
use pending::{PendingApprovals, Waited};
use policy::Policy;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// The approval part of the hub's core: the policy and the waiting calls.
pub(crate) struct Approvals {
    policy: Policy,
    pub(crate) pending: PendingApprovals,
}

impl Approvals {
    /// From `[approvals]` and the tokens' policies.
    pub(crate) fn new(config: &Config) -> Approvals {
        Approvals {
            policy: Policy::new(&config.approvals, &config.tokens),
            pending: PendingApprovals::new(
                Duration::from_secs(config.approvals.wait_secs),
                config.approvals.max_pending,
            ),
        }
    }
}

/// An operation the policy wants a person to approve before it runs, as a surface
/// that can ask its user (the agent loop, an MCP client with elicitation) shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalAsk {
    /// The operation, `plugin.operation`.
    pub tool: String,
    /// What it does (its description).
    pub description: String,
    /// Its hints that hold (`destructive`, `open_world`, ...).
    pub hints: Vec<&'static str>,
    /// The policy key that asks.
    pub policy: Option<String>,
}

impl Approvals {
    /// Whether `caller` calling `op` needs a person's approval first (the policy
    /// says `ask`); `None` when it may run, or when the policy denies it (the call
    /// itself then fails with `approval_required`).
    pub(super) fn ask(&self, caller: &Caller, op: Operation<'_>) -> Option<ApprovalAsk> {
        let decision = self.policy.decide_for(caller, op.tool, &op.hints);
        (decision.action == ApprovalAction::Ask).then(|| ApprovalAsk {
            tool: op.tool.to_string(),
            description: op.description.to_string(),
            hints: hint_names(&op.hints),
            policy: decision.key,
        })
    }
}

/// What the policy looks at of an operation: a plugin's or an MCP server's
/// (from the registry), or an agent's (`agents.NAME`).
#[derive(Clone, Copy)]
pub(super) struct Operation<'a> {
    /// `plugin.operation`.
    pub tool: &'a str,
    pub description: &'a str,
    pub hints: Hints,
}

impl<'a> Operation<'a> {
    /// A registry operation's.
    pub(super) fn of(op: &'a OpRef) -> Operation<'a> {
        let operation = op.operation();
        Operation {
            tool: &op.tool,
            description: &operation.description,
            hints: operation.hints,
        }
    }
}

/// Why an approval request from a surface was refused.
#[derive(Debug)]
pub enum ApprovalError {
    /// The caller (this token name) is not an operator.
    NotOperator(String),
    /// No call waits under that id.
    Unknown(DecideError),
}

impl std::fmt::Display for ApprovalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApprovalError::NotOperator(name) => write!(
                f,
                "token {name:?} may not decide approvals: only the local operator and tokens with \
                 operator = true may"
            ),
            ApprovalError::Unknown(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ApprovalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApprovalError::Unknown(e) => Some(e),
            ApprovalError::NotOperator(_) => None,
        }
    }
}

/// How a call's approval was given, kept in its audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The policy key that asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The pending approval's id, when an operator was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `approved`, `denied` or `timed_out`.
    pub decision: String,
    /// Who decided (a token name), when someone did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Their reason, when they gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was decided, in Unix milliseconds.
    pub decided_ms: u64,
}

/// What the call knows when it asks.
pub(super) struct Request<'a> {
    pub op: Operation<'a>,
    pub call_id: &'a str,
    /// The principal the call runs as (with the agent profiles' policies it is under).
    pub caller: &'a Caller,
    /// Who already approved every call of the invocation (`wasmhub call --approve`).
    pub approved_by: Option<&'a str>,
    /// Cancelling the call stops its wait.
    pub cancel: &'a CancelToken,
    /// The redacted input excerpt the audit log keeps, shown to operators
    /// (copied only when an operator is asked).
    pub excerpt: Option<&'a Value>,
    /// The call's own bound (a nested call's parent deadline): waiting stops there.
    pub until: tokio::time::Instant,
}

impl Approvals {
    /// Decides whether the call may run, waiting for an operator when the policy
    /// asks and one may decide; `record` is filled whenever a person was involved.
    pub(super) async fn check(
        &self,
        req: Request<'_>,
        record: &mut Option<ApprovalRecord>,
    ) -> Result<(), CallError> {
        let tool = req.op.tool;
        let hints = req.op.hints;
        let decision = self.policy.decide_for(req.caller, tool, &hints);
        let key = decision.key.clone();
        match decision.action {
            ApprovalAction::Allow => Ok(()),
            ApprovalAction::Deny => Err(denied_by_policy(tool, key)),
            ApprovalAction::Ask => {
                if let Some(by) = req.approved_by {
                    *record = Some(approved(key, None, by.to_string(), None));
                    return Ok(());
                }
                if self.pending.wait().is_zero() {
                    return Err(nobody_can_approve(tool, key));
                }
                let id = crate::ids::new_id("apr");
                let now = crate::clock::now_ms();
                let info = PendingApproval {
                    id: id.clone(),
                    call_id: req.call_id.to_string(),
                    tool: tool.to_string(),
                    caller: req.caller.name().to_string(),
                    input: req.excerpt.cloned(),
                    hints: hint_names(&hints),
                    policy: key.clone(),
                    requested_ms: now,
                    expires_ms: now + self.pending.wait().as_millis() as u64,
                };
                let waited = self.pending.request(info, req.until, req.cancel).await;
                decided(tool, key, id, waited, record)
            }
        }
    }
}

/// The call's fate once the wait for an operator ended.
fn decided(
    tool: &str,
    key: Option<String>,
    id: String,
    waited: Waited,
    record: &mut Option<ApprovalRecord>,
) -> Result<(), CallError> {
    match waited {
        Waited::Decided(v) if v.approved => {
            *record = Some(approved(key, Some(id), v.by, v.reason));
            Ok(())
        }
        Waited::Decided(v) => {
            let why = v.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            let message = format!(
                "{tool} was not approved: {} denied it{why}; do not retry it as it is",
                v.by
            );
            *record = Some(ApprovalRecord {
                decision: "denied".into(),
                ..approved(key.clone(), Some(id), v.by, v.reason)
            });
            Err(CallError::new(ErrorCode::ApprovalDenied, message).with_policy(key))
        }
        Waited::TimedOut => {
            *record = Some(ApprovalRecord {
                policy: key.clone(),
                id: Some(id),
                decision: "timed_out".into(),
                by: None,
                reason: None,
                decided_ms: crate::clock::now_ms(),
            });
            let message = format!(
                "{tool} needs an approval ({}) and no operator decided within approvals.wait_secs",
                key.as_deref().unwrap_or("approvals")
            );
            Err(CallError::new(ErrorCode::ApprovalRequired, message).with_policy(key))
        }
        Waited::Cancelled => Err(CallError::new(
            ErrorCode::Cancelled,
            "the call was cancelled while it waited for an approval",
        )),
        Waited::Full => Err(CallError::new(
            ErrorCode::ApprovalRequired,
            format!(
                "{tool} needs an approval, and approvals.max_pending calls already wait for one; retry later"
            ),
        )
        .with_policy(key)),
    }
}

fn approved(
    policy: Option<String>,
    id: Option<String>,
    by: String,
    reason: Option<String>,
) -> ApprovalRecord {
    ApprovalRecord {
        policy,
        id,
        decision: "approved".into(),
        by: Some(by),
        reason,
        decided_ms: crate::clock::now_ms(),
    }
}

fn denied_by_policy(tool: &str, key: Option<String>) -> CallError {
    let at = key.as_deref().unwrap_or("approvals").to_string();
    let message =
        format!("{tool} is denied by the approval policy ({at} = \"deny\"); an operator must allow it there");
    CallError::new(ErrorCode::ApprovalRequired, message).with_policy(key)
}

fn nobody_can_approve(tool: &str, key: Option<String>) -> CallError {
    let at = key.as_deref().unwrap_or("approvals").to_string();
    let message = format!(
        "{tool} needs a person's approval ({at} = \"ask\") and nobody can approve it here: an operator must \
         allow it ({at} = \"allow\", for all callers or one token), or set approvals.wait_secs so an operator \
         can approve waiting calls"
    );
    CallError::new(ErrorCode::ApprovalRequired, message).with_policy(key)
}

fn hint_names(h: &crate::runtime::Hints) -> Vec<&'static str> {
    [
        (h.read_only, "read_only"),
        (h.destructive, "destructive"),
        (h.idempotent, "idempotent"),
        (h.open_world, "open_world"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}
