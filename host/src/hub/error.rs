//! The hub's errors: [`ToolError`] for a meta-tool that cannot run at all (unknown
//! meta-tool, bad arguments, a batch over the limit), [`CallError`] for one operation
//! call that failed (data inside a `hub_call` result, never a failed request), and
//! [`HubError`] for start-up and storage problems.
//!
//! Codes are the runtime's [`ErrorCode`] (the WIT `call-error-code` enum), so a
//! plugin's nested call, a REST client and an MCP client all see the same strings.

use super::auth::{Caller, TokenError};
use super::validate::Violation;
use crate::runtime::{CallFailure, RuntimeError};
use crate::storage::StorageError;
use serde::Serialize;
use serde_json::{Map, Value, json};

pub use crate::runtime::ErrorCode;

/// One failed operation call, as reported in a `hub_call` result and to a plugin's
/// nested `host.call`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallError {
    /// The machine-readable kind of failure (`not_found`, `timeout`, ...).
    pub code: ErrorCode,
    /// What went wrong and how to fix it, written for a model.
    pub message: String,
    /// Schema violations of the input (`invalid_input` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// Closest existing tool names (`not_found` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
    /// The configured limit the call hit (`call_limit` from the call graph or the
    /// instance pool's shares; `invalid_input` for a sub-agent's sampling value
    /// past the operator's bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
    /// The approval policy key that decided (`approval_required`, `approval_denied`).
    /// (Boxed: the error travels in every call's `Result`; kept small.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Box<str>>,
    /// The runtime's failure this error reports (its text is in `message`).
    #[serde(skip)]
    cause: Option<Box<CallFailure>>,
}

impl CallError {
    /// An error with `code` and `message` and nothing else (no violations,
    /// suggestions, limit or runtime cause).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> CallError {
        CallError {
            code,
            message: message.into(),
            violations: Vec::new(),
            suggestions: Vec::new(),
            limit: None,
            policy: None,
            cause: None,
        }
    }

    /// The same error naming the approval policy key that decided.
    pub fn with_policy(mut self, key: Option<String>) -> CallError {
        self.policy = key.map(String::into_boxed_str);
        self
    }

    /// A `call_limit` error for hitting `limit`; `message` names its config key.
    pub fn limit(limit: Limit, message: impl Into<String>) -> CallError {
        CallError {
            limit: Some(limit),
            ..CallError::new(ErrorCode::CallLimit, message)
        }
    }

    /// This error as the report of the runtime's `failure`.
    pub fn caused_by(mut self, failure: CallFailure) -> CallError {
        self.cause = Some(Box::new(failure));
        self
    }

    /// The `{code, message, ...}` object.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("CallError serializes")
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// A configured bound of the call graph or of the instance pool, serialized as its config key
/// (`"limits.max_fanout"`), so a client can tell which one it hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Limit {
    /// Nesting deeper than `limits.max_call_depth`.
    #[serde(rename = "limits.max_call_depth")]
    CallDepth,
    /// More nested calls from one call than `limits.max_fanout`.
    #[serde(rename = "limits.max_fanout")]
    Fanout,
    /// More calls in one call tree than `limits.max_calls_per_request`.
    #[serde(rename = "limits.max_calls_per_request")]
    CallsPerRequest,
    /// One plugin's calls hold its share of the instance pool.
    #[serde(rename = "limits.plugin_share_percent")]
    PluginShare,
    /// One token's calls hold its share of the instance pool.
    #[serde(rename = "limits.caller_share_percent")]
    CallerShare,
    /// One plugin's calls hold their part of their token's share while the token's
    /// other plugins wait, or all but the token's reserve.
    #[serde(rename = "limits.caller_plugin_share_percent")]
    CallerPluginShare,
    /// Every slot of the instance pool is busy.
    #[serde(rename = "limits.max_instances")]
    Instances,
    /// The instances running at once use the whole `limits.memory_budget_mb`.
    #[serde(rename = "limits.memory_budget_mb")]
    MemoryBudget,
    /// A sub-agent's `temperature` above `agent.temperature_limit` (`invalid_input`).
    #[serde(rename = "agent.temperature_limit")]
    AgentTemperature,
    /// A sub-agent's `max_output_tokens` above `agent.max_output_tokens_limit`
    /// (`invalid_input`).
    #[serde(rename = "agent.max_output_tokens_limit")]
    AgentMaxOutputTokens,
}

impl Limit {
    /// The config key, as messages name it.
    pub fn key(self) -> &'static str {
        match self {
            Limit::CallDepth => "limits.max_call_depth",
            Limit::Fanout => "limits.max_fanout",
            Limit::CallsPerRequest => "limits.max_calls_per_request",
            Limit::PluginShare => "limits.plugin_share_percent",
            Limit::CallerShare => "limits.caller_share_percent",
            Limit::CallerPluginShare => "limits.caller_plugin_share_percent",
            Limit::Instances => "limits.max_instances",
            Limit::MemoryBudget => "limits.memory_budget_mb",
            Limit::AgentTemperature => "agent.temperature_limit",
            Limit::AgentMaxOutputTokens => "agent.max_output_tokens_limit",
        }
    }
}

/// A meta-tool that could not run. Surfaces turn it into an error response (REST
/// 400/403/404, an MCP `isError` result, a tool-result message in the agent loop).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolError {
    /// No meta-tool of that name.
    UnknownTool {
        /// The meta-tool name the client sent.
        name: String,
        /// The closest meta-tool names.
        suggestions: Vec<String>,
    },
    /// The arguments do not match the meta-tool's input schema.
    InvalidArguments {
        /// What is wrong, written for a model.
        message: String,
        /// Each place the arguments break the schema.
        violations: Vec<Violation>,
    },
    /// `hub_schema` of an operation that does not exist.
    NotFound {
        /// The operation asked for.
        tool: String,
        /// The closest existing operation names.
        suggestions: Vec<String>,
    },
    /// `hub_schema` of an operation the caller may not call.
    Forbidden {
        /// The operation asked for.
        tool: String,
        /// The token name whose allowlist refuses it.
        caller: String,
    },
    /// More calls in one `hub_call` than `limits.max_batch`.
    BatchTooLarge {
        /// How many calls the batch had.
        count: usize,
        /// The configured `limits.max_batch`.
        limit: usize,
    },
    /// The request was cancelled (the client went away) before it finished.
    Cancelled,
}

impl ToolError {
    /// The error code surfaces report for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::UnknownTool { .. } | ToolError::NotFound { .. } => ErrorCode::NotFound,
            ToolError::InvalidArguments { .. } => ErrorCode::InvalidInput,
            ToolError::Forbidden { .. } => ErrorCode::Forbidden,
            ToolError::BatchTooLarge { .. } => ErrorCode::CallLimit,
            ToolError::Cancelled => ErrorCode::Cancelled,
        }
    }

    /// The `{code, message, violations?, suggestions?}` object every surface shows.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("code".into(), json!(self.code().as_str()));
        out.insert("message".into(), json!(self.to_string()));
        match self {
            ToolError::InvalidArguments { violations, .. } if !violations.is_empty() => {
                out.insert("violations".into(), json!(violations));
            }
            ToolError::UnknownTool { suggestions, .. } | ToolError::NotFound { suggestions, .. }
                if !suggestions.is_empty() =>
            {
                out.insert("suggestions".into(), json!(suggestions));
            }
            _ => {}
        }
        Value::Object(out)
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::UnknownTool { name, suggestions } => {
                write!(
                    f,
                    "no meta-tool named {name:?}; the hub's tools are hub_list, hub_search, hub_schema and hub_call"
                )?;
                if name.contains('.') && !name.starts_with("hub.") {
                    write!(
                        f,
                        " (to run the operation {name:?}, use hub_call with {{\"calls\":[{{\"tool\":{name:?},\"input\":{{...}}}}]}})"
                    )?;
                }
                did_you_mean(f, suggestions)
            }
            ToolError::InvalidArguments { message, .. } => f.write_str(message),
            ToolError::NotFound { tool, suggestions } => {
                write!(f, "no operation named {tool:?}")?;
                did_you_mean(f, suggestions)?;
                if suggestions.is_empty() {
                    f.write_str("; use hub_search to find operations")?;
                }
                Ok(())
            }
            ToolError::Forbidden { tool, caller } => {
                write!(f, "the token {caller:?} is not allowed to call {tool:?}")
            }
            ToolError::BatchTooLarge { count, limit } => write!(
                f,
                "hub_call got {count} calls but at most {limit} are allowed in one batch; split them into several hub_call requests"
            ),
            ToolError::Cancelled => f.write_str("the request was cancelled before it finished"),
        }
    }
}

impl std::error::Error for ToolError {}

/// `"; did you mean a, b?"` when there are suggestions.
pub(crate) fn did_you_mean(f: &mut impl std::fmt::Write, suggestions: &[String]) -> std::fmt::Result {
    if suggestions.is_empty() {
        return Ok(());
    }
    write!(f, "; did you mean {}?", suggestions.join(", "))
}

/// Why the hub could not start or read its records.
#[derive(Debug)]
pub enum HubError {
    /// A configured token's secret could not be read.
    Token(TokenError),
    /// A table of the hub (the audit log, accounting) could not be opened or read.
    Storage(StorageError),
    /// The audit log's writer thread could not be started.
    AuditWriter(std::io::Error),
    /// The plugin runtime or the plugins folder could not start.
    Runtime(RuntimeError),
    /// Accounting could not start (its JSONL file, its writer).
    Accounting(super::accounting::AccountingError),
    /// The writer thread of this log (the audit log, accounting) stopped, or did
    /// not answer a read in time.
    WriterGone(&'static str),
}

impl std::fmt::Display for HubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HubError::Token(e) => write!(f, "{e}"),
            HubError::Storage(e) => write!(f, "{e}"),
            HubError::AuditWriter(e) => write!(f, "audit log: cannot start the audit writer: {e}"),
            HubError::Runtime(e) => write!(f, "{e}"),
            HubError::Accounting(e) => write!(f, "{e}"),
            HubError::WriterGone(log) => write!(f, "{log}: the writer stopped or did not answer in time"),
        }
    }
}

impl std::error::Error for HubError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Shown as they are (see Display): their causes are this error's.
            HubError::Token(e) => std::error::Error::source(e),
            HubError::Runtime(e) => std::error::Error::source(e),
            HubError::Storage(e) => Some(e),
            HubError::AuditWriter(e) => Some(e),
            HubError::Accounting(e) => std::error::Error::source(e),
            HubError::WriterGone(_) => None,
        }
    }
}

impl From<TokenError> for HubError {
    fn from(e: TokenError) -> Self {
        HubError::Token(e)
    }
}

impl From<RuntimeError> for HubError {
    fn from(e: RuntimeError) -> Self {
        HubError::Runtime(e)
    }
}

impl From<StorageError> for HubError {
    fn from(e: StorageError) -> Self {
        HubError::Storage(e)
    }
}

/// Refuses a call the caller's allowlist does not cover.
pub(super) fn check_allowed(caller: &Caller, tool: &str) -> Result<(), CallError> {
    if caller.may_call(tool) {
        return Ok(());
    }
    Err(CallError::new(
        ErrorCode::Forbidden,
        format!("the token {:?} is not allowed to call {tool}", caller.name()),
    ))
}

/// The error of a call that was cancelled.
pub(super) fn cancelled() -> CallError {
    CallError::new(
        ErrorCode::Cancelled,
        "the call was cancelled (its parent call or the client's request ended)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_errors_carry_codes_and_actionable_messages() {
        let e = ToolError::UnknownTool {
            name: "text.slugify".into(),
            suggestions: vec![],
        };
        assert_eq!(e.code().as_str(), "not_found");
        assert!(e.to_string().contains("use hub_call"), "{e}");
        let e = ToolError::NotFound {
            tool: "text.slugfy".into(),
            suggestions: vec!["text.slugify".into()],
        };
        assert_eq!(e.to_json()["suggestions"][0], "text.slugify");
        assert!(e.to_string().ends_with("did you mean text.slugify?"), "{e}");
        let e = ToolError::BatchTooLarge { count: 40, limit: 32 };
        assert!(e.to_string().contains("at most 32"), "{e}");
        assert_eq!(e.to_json()["code"], "call_limit");
    }

    #[test]
    fn call_errors_serialize_only_what_they_have() {
        let e = CallError::new(ErrorCode::Timeout, "too slow");
        assert_eq!(e.to_json(), json!({"code": "timeout", "message": "too slow"}));
    }
}
