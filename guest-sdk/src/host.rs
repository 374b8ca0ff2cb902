//! Typed wrappers around the WIT `host` imports: logging and nested calls.
//!
//! These functions only work inside a component run by the hub; in a native test
//! build the imports are stubs that panic, so keep them out of unit-tested logic.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::bindings::wasmhub::plugin::host as wit;
pub use crate::bindings::wasmhub::plugin::types::{CallErrorCode, LogLevel};

/// Writes a line to the hub's log, tagged by the host with the plugin and call id.
pub fn log(level: LogLevel, message: &str) {
    wit::log(level, message);
}

/// A failed nested call: the hub's stable code and a readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// What kind of failure (`not-found`, `timeout`, `plugin-error`, ...).
    pub code: CallErrorCode,
    /// What went wrong.
    pub message: String,
}

/// The wire spelling of a call-error code, as the hub reports it (`plugin-error`).
pub fn code_name(code: CallErrorCode) -> &'static str {
    match code {
        CallErrorCode::InvalidInput => "invalid-input",
        CallErrorCode::NotFound => "not-found",
        CallErrorCode::Forbidden => "forbidden",
        CallErrorCode::Timeout => "timeout",
        CallErrorCode::MemoryLimit => "memory-limit",
        CallErrorCode::OutputLimit => "output-limit",
        CallErrorCode::Trap => "trap",
        CallErrorCode::PluginError => "plugin-error",
        CallErrorCode::Cancelled => "cancelled",
        CallErrorCode::CallLimit => "call-limit",
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", code_name(self.code), self.message)
    }
}

impl std::error::Error for CallError {}

/// Calls another operation (`plugin.operation`) through the hub's call protocol and
/// returns its output. `input` is serialized to JSON here; a value that cannot be
/// (a map with non-string keys) fails as `invalid-input` without reaching the host.
pub fn call<I: Serialize + ?Sized>(tool: &str, input: &I) -> Result<Value, CallError> {
    let input_json = serde_json::to_string(input).map_err(|e| CallError {
        code: CallErrorCode::InvalidInput,
        message: format!("could not encode the input for `{tool}`: {e}"),
    })?;
    let output = wit::call(tool, &input_json).map_err(|e| CallError {
        code: e.code,
        message: e.message,
    })?;
    parse_output(tool, &output)
}

fn parse_output(tool: &str, output: &str) -> Result<Value, CallError> {
    serde_json::from_str(output).map_err(|e| CallError {
        code: CallErrorCode::PluginError,
        message: format!("`{tool}` returned output that is not JSON: {e}"),
    })
}

/// A nested call's failure becomes this operation's failure: `forbidden` stays
/// `forbidden` (the caller's allowlist said no), everything else is `failed`, with the
/// code kept in the message so the model can tell a timeout from a bad input.
impl From<CallError> for crate::Error {
    fn from(e: CallError) -> Self {
        match e.code {
            CallErrorCode::Forbidden => crate::Error::forbidden(e.message),
            code => crate::Error::failed(format!("nested call failed ({}): {}", code_name(code), e.message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_call_errors_map_onto_operation_errors() {
        let forbidden = CallError {
            code: CallErrorCode::Forbidden,
            message: "not allowed".into(),
        };
        assert_eq!(
            crate::Error::from(forbidden),
            crate::Error::forbidden("not allowed")
        );
        let timeout = CallError {
            code: CallErrorCode::Timeout,
            message: "deadline".into(),
        };
        assert_eq!(
            crate::Error::from(timeout),
            crate::Error::failed("nested call failed (timeout): deadline")
        );
    }

    #[test]
    fn outputs_parse_exactly_or_fail_as_plugin_errors() {
        let v = parse_output("a.b", r#"{"n":18446744073709551615}"#).unwrap();
        assert_eq!(v["n"].as_u64(), Some(u64::MAX));
        let e = parse_output("a.b", "{").unwrap_err();
        assert_eq!(e.code, CallErrorCode::PluginError);
        assert!(e.to_string().starts_with("plugin-error: "));
        assert!(e.message.contains("`a.b`"));
    }
}
