//! The call-facing types of the runtime: what a caller passes in ([`Invocation`],
//! [`NestedCalls`]), what it gets back ([`CallOutput`], [`CallFailure`],
//! [`ErrorCode`]), and an operation's declared [`Hints`] (which the bindings read
//! from every WIT version). They are the runtime's half of the call protocol; the hub owns
//! the other half (graph, allowlist, depth, cancellation).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The stable error codes every surface reports; the WIT `call-error-code` enum
/// has each but the approval codes, which a nested call sees as `forbidden`.
/// Serialized as the `snake_case` wire strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// `"invalid_input"`: the input is malformed, too large or fails the schema.
    InvalidInput,
    /// `"not_found"`: no such tool, plugin or operation.
    NotFound,
    /// `"forbidden"`: a policy refused it (allowlist, network grant, nested calls off).
    Forbidden,
    /// `"timeout"`: the call ran past its deadline.
    Timeout,
    /// `"memory_limit"`: the plugin hit its linear-memory limit.
    MemoryLimit,
    /// `"output_limit"`: the plugin's output or logs exceeded their limit.
    OutputLimit,
    /// `"trap"`: the plugin crashed (panic, out-of-bounds access, stack overflow).
    Trap,
    /// `"plugin_error"`: the plugin reported a failure of its own.
    PluginError,
    /// `"cancelled"`: the caller or the hub cancelled the call.
    Cancelled,
    /// `"call_limit"`: a hub limit refused the call (call depth, fan-out, calls per
    /// request, batch size, instance slots, memory budget).
    CallLimit,
    /// `"approval_required"`: the approval policy denies it, or asks a person and
    /// nobody approved it: nobody can be asked here, nobody decided within
    /// `approvals.wait_secs`, or `approvals.max_pending` calls already wait (the
    /// error names the key).
    ApprovalRequired,
    /// `"approval_denied"`: a person was asked and said no.
    ApprovalDenied,
    /// `"missing_secret"`: a secret the call needs (`plugin/NAME`) has no value
    /// (or its value cannot be read); the operator sets it with `wasmhub secret set`.
    MissingSecret,
    /// `"invalid_output"`: an agent's JSON answer broke its schema even after a
    /// correction round (`violations` say how).
    InvalidOutput,
}

impl ErrorCode {
    /// The wire string: `"invalid_input"`, `"not_found"`, ..., `"call_limit"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::Timeout => "timeout",
            ErrorCode::MemoryLimit => "memory_limit",
            ErrorCode::OutputLimit => "output_limit",
            ErrorCode::Trap => "trap",
            ErrorCode::PluginError => "plugin_error",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::CallLimit => "call_limit",
            ErrorCode::ApprovalRequired => "approval_required",
            ErrorCode::ApprovalDenied => "approval_denied",
            ErrorCode::MissingSecret => "missing_secret",
            ErrorCode::InvalidOutput => "invalid_output",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed nested call (`host.call` from inside a plugin), as the hub reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NestedCallError {
    /// The wire code the nested call failed with.
    pub code: ErrorCode,
    /// Human-readable cause, passed to the calling plugin as is.
    pub message: String,
}

/// The hub's side of `host.call`: it runs `tool` through the call protocol as a child
/// of the current call. The runtime only forwards.
pub trait NestedCalls: Send + Sync {
    /// Runs `tool` (`namespace.operation`) with `input_json`; resolves to the
    /// tool's output JSON or the reason it failed.
    fn call(
        &self,
        tool: String,
        input_json: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, NestedCallError>> + Send>>;
}

/// What one call runs under.
#[derive(Clone)]
pub struct Invocation {
    /// Tags `host.log` lines and network decisions in the hub log.
    pub call_id: String,
    /// Whose call it is (the token name): CPU turns are shared per tenant.
    pub tenant: Arc<str>,
    /// When the call is stopped, host calls included.
    pub deadline: Deadline,
    /// The call's span: outbound HTTP requests are its children and carry it.
    pub trace: Option<crate::telemetry::SpanContext>,
    /// Where `host.call` goes.
    pub nested: Arc<dyn NestedCalls>,
}

/// When a call is stopped: the plugin's own time limit counted from the call's
/// start, or the caller's bound if that comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Only the caller's bound (`Instant::into`): the runtime applies the plugin's
    /// time limit when the call starts.
    Bound(tokio::time::Instant),
    /// Already both (made by [`Deadline::new`]; the hub makes it once per call and
    /// bounds the call's nested calls by it): the call stops `at`, and a timeout
    /// reports `limit_ms`.
    Limit {
        /// When the call is stopped.
        at: tokio::time::Instant,
        /// The limit, in ms from the call's start, a timeout reports.
        limit_ms: u64,
    },
}

impl Deadline {
    /// The earlier of `bound` and the plugin's `timeout_ms` counted from `start`.
    pub fn new(
        start: tokio::time::Instant,
        timeout_ms: u64,
        bound: Option<tokio::time::Instant>,
    ) -> Deadline {
        let own = start + std::time::Duration::from_millis(timeout_ms);
        match bound {
            Some(at) if at < own => Deadline::Limit {
                at,
                limit_ms: at.saturating_duration_since(start).as_millis() as u64,
            },
            _ => Deadline::Limit {
                at: own,
                limit_ms: timeout_ms,
            },
        }
    }

    /// When the call stops.
    pub fn at(self) -> tokio::time::Instant {
        match self {
            Deadline::Bound(at) | Deadline::Limit { at, .. } => at,
        }
    }

    /// When the call stops and the limit a timeout reports, applying the plugin's
    /// `timeout_ms` from `start` if that was not done yet.
    pub fn resolve(self, start: tokio::time::Instant, timeout_ms: u64) -> (tokio::time::Instant, u64) {
        match self {
            Deadline::Limit { at, limit_ms } => (at, limit_ms),
            Deadline::Bound(bound) => {
                Deadline::new(start, timeout_ms, Some(bound)).resolve(start, timeout_ms)
            }
        }
    }
}

impl From<tokio::time::Instant> for Deadline {
    fn from(bound: tokio::time::Instant) -> Deadline {
        Deadline::Bound(bound)
    }
}

/// A [`NestedCalls`] that refuses every call: for `wasmhub call`, `plugin check`,
/// benchmarks, and loading (where `list` must not call anything).
pub struct NoNestedCalls;

impl NestedCalls for NoNestedCalls {
    fn call(
        &self,
        tool: String,
        _input_json: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, NestedCallError>> + Send>> {
        Box::pin(async move {
            Err(NestedCallError {
                code: ErrorCode::Forbidden,
                message: format!("nested calls are not available here (called {tool})"),
            })
        })
    }
}

/// A successful call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOutput {
    /// The operation's output, JSON text exactly as the plugin returned it (within the
    /// output limit; not yet checked against the output schema).
    pub json: String,
    /// What the plugin wrote to stdout and stderr (interleaved, bounded by `log_kb`).
    pub logs: String,
    /// Where the call's time went in the runtime (zero for operations that are not
    /// a plugin's).
    pub times: CallTimes,
}

/// A plugin call's instantiation and guest time, in microseconds (the guest's
/// includes its nested calls); on the call's trace span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTimes {
    /// A fresh instance in a fresh store.
    pub instantiate_us: u64,
    /// The guest's operation.
    pub guest_us: u64,
}

/// What kind of trap stopped a plugin, classified from wasmtime's trap code so
/// callers match a variant instead of the wording of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrapKind {
    /// The wasm call stack was exhausted (deep or unbounded recursion).
    StackOverflow,
    /// A load or store outside linear memory; also how a guest's own shadow stack
    /// overflowing shows up.
    MemoryOutOfBounds,
    /// A table access out of bounds, a call through a null or mistyped table entry.
    BadIndirectCall,
    /// An `unreachable` instruction: how Rust guests abort after a panic.
    Unreachable,
    /// Integer overflow, division by zero or a failed float-to-int conversion.
    Arithmetic,
    /// Any other wasmtime trap, or an error raised by the host while the guest ran.
    Other,
}

/// Why a call failed. Each variant maps to one [`ErrorCode`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallFailure {
    /// The call ran past its deadline (the plugin's time limit or the caller's).
    Timeout {
        /// The deadline that was passed, in ms from the call's start.
        limit_ms: u64,
    },
    /// The plugin tried to grow its linear memory past its limit.
    MemoryLimit {
        /// The plugin's memory limit, in MiB.
        limit_mb: u64,
    },
    /// The plugin returned more JSON than allowed, or wrote more to stdout/stderr
    /// than its log limit.
    OutputLimit {
        /// The limit that was exceeded, in bytes.
        limit_bytes: u64,
    },
    /// The input JSON is larger than the input limit; the plugin did not run.
    InputTooLarge {
        /// The input limit, in bytes.
        limit_bytes: u64,
    },
    /// The plugin trapped: a panic, an out-of-bounds access, a stack overflow...
    /// `message` is wasmtime's cause plus the guest's panic message, if any.
    Trap {
        /// What kind of trap, for matching without parsing `message`.
        kind: TrapKind,
        /// wasmtime's cause, plus the guest's panic message if any.
        message: String,
    },
    /// The plugin returned one of its own errors.
    Plugin {
        /// The code the plugin chose.
        code: ErrorCode,
        /// The plugin's own message, shown to the client as is.
        message: String,
    },
    /// The plugin has no operation of that name.
    UnknownOperation(String),
    /// Every instance slot of the engine is in use (`limits.max_instances`); the call
    /// did not start and may be retried.
    Busy {
        /// The configured number of instance slots (`limits.max_instances`).
        max_instances: u32,
    },
    /// The instances running at once use the whole `limits.memory_budget_mb`: this
    /// call's instance could not be created or grown. It may be retried.
    MemoryBudget {
        /// The configured budget (`limits.memory_budget_mb`), in MiB.
        budget_mb: u64,
    },
    /// An operation source outside the sandbox (an MCP server) failed the call: the
    /// tool's own error, or one of the server's bounds or its connection, each
    /// message naming its configuration key.
    Source {
        /// The code the failure is reported as.
        code: ErrorCode,
        /// What happened, for the caller (never a secret).
        message: String,
    },
    /// A secret the call needed has no value, or its value cannot be read.
    MissingSecret {
        /// `plugin/NAME`.
        secret: String,
        /// Why (never the value): unset, or what failed reading it.
        reason: String,
    },
}

impl CallFailure {
    /// The wire [`ErrorCode`] this failure is reported as.
    pub fn code(&self) -> ErrorCode {
        match self {
            CallFailure::Timeout { .. } => ErrorCode::Timeout,
            CallFailure::MemoryLimit { .. } => ErrorCode::MemoryLimit,
            CallFailure::OutputLimit { .. } => ErrorCode::OutputLimit,
            CallFailure::InputTooLarge { .. } => ErrorCode::InvalidInput,
            CallFailure::Trap { .. } => ErrorCode::Trap,
            CallFailure::Plugin { code, .. } | CallFailure::Source { code, .. } => *code,
            CallFailure::UnknownOperation(_) => ErrorCode::NotFound,
            CallFailure::Busy { .. } | CallFailure::MemoryBudget { .. } => ErrorCode::CallLimit,
            CallFailure::MissingSecret { .. } => ErrorCode::MissingSecret,
        }
    }
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallFailure::Timeout { limit_ms } => {
                write!(f, "the call ran past its time limit of {limit_ms} ms")
            }
            CallFailure::MemoryLimit { limit_mb } => {
                write!(
                    f,
                    "the plugin tried to use more than its memory limit of {limit_mb} MiB"
                )
            }
            CallFailure::OutputLimit { limit_bytes } => {
                write!(
                    f,
                    "the plugin wrote more than its output limit of {limit_bytes} bytes"
                )
            }
            CallFailure::InputTooLarge { limit_bytes } => {
                write!(f, "the input is larger than the limit of {limit_bytes} bytes")
            }
            CallFailure::Trap { message, .. } => write!(f, "the plugin crashed: {message}"),
            CallFailure::Plugin { message, .. } | CallFailure::Source { message, .. } => f.write_str(message),
            CallFailure::UnknownOperation(op) => write!(f, "the plugin has no operation {op:?}"),
            CallFailure::Busy { max_instances } => {
                write!(
                    f,
                    "all {max_instances} plugin instance slots are busy; retry shortly"
                )
            }
            CallFailure::MemoryBudget { budget_mb } => write!(
                f,
                "the plugin instances running now use the hub's memory budget of {budget_mb} MiB \
                 (limits.memory_budget_mb); retry shortly"
            ),
            CallFailure::MissingSecret { secret, reason } => write!(
                f,
                "the secret {secret} is missing ({reason}); an operator sets it with `wasmhub secret set {}`",
                secret.replacen('/', " ", 1)
            ),
        }
    }
}

impl std::error::Error for CallFailure {}

/// Behaviour hints (MCP tool annotations); advice, not enforcement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Hints {
    /// The operation changes nothing outside its own result (WIT `read-only`).
    pub read_only: bool,
    /// It may delete or overwrite data outside the hub (WIT `destructive`).
    pub destructive: bool,
    /// Calling it twice with the same input has the same effect as once (WIT `idempotent`).
    pub idempotent: bool,
    /// It reaches outside systems: network, external services (WIT `open-world`).
    pub open_world: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_wire_strings() {
        for code in [
            ErrorCode::InvalidInput,
            ErrorCode::NotFound,
            ErrorCode::Forbidden,
            ErrorCode::Timeout,
            ErrorCode::MemoryLimit,
            ErrorCode::OutputLimit,
            ErrorCode::Trap,
            ErrorCode::PluginError,
            ErrorCode::Cancelled,
            ErrorCode::CallLimit,
            ErrorCode::ApprovalRequired,
            ErrorCode::ApprovalDenied,
            ErrorCode::InvalidOutput,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn failures_map_to_codes() {
        assert_eq!(CallFailure::Timeout { limit_ms: 5 }.code(), ErrorCode::Timeout);
        assert_eq!(
            CallFailure::InputTooLarge { limit_bytes: 1 }.code(),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            CallFailure::UnknownOperation("x".into()).code(),
            ErrorCode::NotFound
        );
        let plugin = CallFailure::Plugin {
            code: ErrorCode::Forbidden,
            message: "no".into(),
        };
        assert_eq!(plugin.code(), ErrorCode::Forbidden);
        assert_eq!(plugin.to_string(), "no");
    }
}
