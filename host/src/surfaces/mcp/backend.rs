//! What the MCP server needs from the layer below it: the tool definitions, who a
//! request's caller is, and running one tool call.
//!
//! The MCP protocol code is written against this small trait rather than against
//! the hub directly, so its revision, session and transport logic is unit-tested
//! with a scripted backend; `hub_backend` implements it for the real hub.

use super::method::McpMethod;
use crate::hub::Caller;
use crate::hub::cancel::CancelToken;
use crate::surfaces::auth::Gatekeeper;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One tool as `tools/list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ToolSpec {
    /// The wire name (`hub_list`); the dotted spelling (`hub.list`) is accepted too.
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    /// MCP `ToolAnnotations` (`readOnlyHint`, `destructiveHint`, …).
    pub annotations: Value,
}

impl ToolSpec {
    /// Whether `name` names this tool, in its wire or dotted spelling.
    pub(crate) fn answers_to(&self, name: &str) -> bool {
        name == self.name || (name.len() == self.name.len() && name.replacen('.', "_", 1) == self.name)
    }
}

/// A progress report from a running call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a running call reports progress.
pub(crate) type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// A sink that turns each report into a `notifications/progress` message for the
/// client's `token` and hands it to `deliver` (each transport frames and queues it
/// its own way).
pub(crate) fn progress_notifier(
    token: Value,
    deliver: impl Fn(Value) + Send + Sync + 'static,
) -> ProgressSink {
    Arc::new(move |p: Progress| {
        let mut params = json!({ "progressToken": token, "progress": p.progress });
        if let Some(total) = p.total {
            params["total"] = total.into();
        }
        if let Some(message) = p.message {
            params["message"] = message.into();
        }
        deliver(super::jsonrpc::notification(
            McpMethod::NotificationsProgress.as_str(),
            params,
        ));
    })
}

/// One tool call to run.
pub(crate) struct BackendCall {
    /// The tool's wire name, already checked against [`McpBackend::tools`].
    pub tool: String,
    /// The `arguments` object.
    pub arguments: Value,
    pub caller: Caller,
    /// Cancelled when the client cancels or goes away; cancels the whole call graph.
    pub cancel: CancelToken,
    pub progress: Option<ProgressSink>,
    /// What the client's user said about the operations that need an approval
    /// ([`McpBackend::approvals_needed`]); `None` when nobody was asked.
    pub approval: Option<ClientApproval>,
}

/// An operation of a `hub_call` that needs a person's approval before it runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ApprovalNeed {
    /// Its position in the batch.
    pub index: usize,
    /// The operation, `plugin.operation`.
    pub tool: String,
    pub description: String,
    /// The input the client sent for it.
    pub input: Value,
    /// Its hints that hold (`destructive`, ...).
    pub hints: Vec<&'static str>,
    /// The policy key that asks.
    pub policy: Option<String>,
}

/// A person's answer, through their MCP client, about a call's asking operations.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClientApproval {
    /// Yes to all of them, or no to all of them.
    pub approved: bool,
    /// Who answered: `MCP client <name> of session <id>`, ...
    pub by: String,
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ToolOutput {
    /// The tool's output (an object matching its output schema).
    pub value: Value,
    /// The output reports a failure the model should notice (e.g. every operation
    /// of a `hub_call` failed): the result gets `isError: true`.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result of `value`.
    #[cfg(test)]
    pub(crate) fn ok(value: Value) -> ToolOutput {
        ToolOutput {
            value,
            is_error: false,
        }
    }
}

/// Why a call produced no result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum InvokeError {
    /// No such tool: a protocol error (-32602), not a tool result.
    UnknownTool { name: String },
    /// The call was cancelled before it finished.
    Cancelled,
    /// A tool-level failure (invalid arguments, forbidden, failed…): reported to
    /// the model as a result with `isError: true` so it can correct itself. The
    /// value is the hub's error object: `{code, message, violations?, suggestions?}`.
    Failed(Value),
}

impl std::fmt::Display for InvokeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InvokeError::UnknownTool { name } => write!(f, "unknown tool {name:?}"),
            InvokeError::Cancelled => f.write_str("the call was cancelled"),
            InvokeError::Failed(error) => write!(f, "{}: {}", error["code"], error["message"]),
        }
    }
}

impl std::error::Error for InvokeError {}

/// A boxed, sendable future borrowed from the backend.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The hub as the MCP server sees it (authentication included: [`Gatekeeper`]).
pub(crate) trait McpBackend: Gatekeeper + 'static {
    /// The tools, in the order `tools/list` shows them. Never changes while the
    /// process runs (the server advertises `listChanged: false`).
    fn tools(&self) -> Vec<ToolSpec>;

    /// Runs one tool call through the hub's call protocol.
    fn invoke(&self, call: BackendCall) -> BoxFuture<'_, Result<ToolOutput, InvokeError>>;

    /// The operations of a call of `tool` with `arguments` that `caller` needs a
    /// person's approval for, in batch order; empty for calls that need none.
    fn approvals_needed(&self, tool: &str, arguments: &Value, caller: &Caller) -> Vec<ApprovalNeed> {
        let _ = (tool, arguments, caller);
        Vec::new()
    }

    /// What the plugins `caller` may use ask a model to read once (MCP's
    /// `instructions`, after the hub's own); `None` when there is nothing.
    fn instructions(&self, caller: &Caller) -> Option<String> {
        let _ = caller;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_answer_to_wire_and_dotted_names() {
        let t = ToolSpec {
            name: "hub_call".into(),
            title: None,
            description: String::new(),
            input_schema: json!({"type":"object"}),
            output_schema: None,
            annotations: json!({}),
        };
        assert!(t.answers_to("hub_call"));
        assert!(t.answers_to("hub.call"));
        assert!(!t.answers_to("hub_calls"));
        assert!(!t.answers_to("hub.cal"));
        assert!(!t.answers_to("hub/call"));
    }
}
