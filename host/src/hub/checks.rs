//! The schema checks around one call: its input before the plugin runs, its output
//! after, each on tokio's blocking pool when large. Both report what is wrong as
//! violations a model can act on (`validate`).

use super::error::{CallError, ErrorCode};
use super::registry::OpRef;
use super::validate;
use crate::config::ValidationLimits;
use crate::runtime::{CpuShares, Operation};
use serde_json::Value;
use std::sync::Arc;

/// Whose checks these are: large ones run on the blocking pool one tenant's share
/// at a time (`runtime::CpuShares`), so one client posting huge invalid inputs
/// cannot take every core.
pub(super) struct Checker<'a> {
    pub limits: &'a ValidationLimits,
    pub cpu: &'a CpuShares,
    pub tenant: &'a Arc<str>,
}

/// Checks `input` against the operation's input schema and hands it back. An
/// input of `limits.validate_blocking_kb` or more is checked on the low-priority
/// blocking pool (`runtime::cpu`): validating a large input with many errors takes long enough to hold up
/// every request sharing the async worker.
pub(super) async fn check_input(op: &OpRef, input: Value, who: &Checker<'_>) -> Result<Value, CallError> {
    let max = who.limits.max_violations;
    let large = who.limits.blocking_bytes();
    let (valid, (violations, unlisted)) =
        on_pool_if(approx_len(&input, large) >= large, op, who, move |operation| {
            let found =
                validate::violations(&operation.input_validator, &operation.input_schema, &input, max);
            // A refused input is dropped here: freeing a large one is work too.
            (found.0.is_empty().then_some(input), found)
        })
        .await?;
    if let Some(input) = valid {
        return Ok(input);
    }
    let mut e = CallError::new(
        ErrorCode::InvalidInput,
        format!(
            "input does not match the input schema of {} ({}); fix it and call again (hub_schema shows the schema)",
            op.tool,
            validate::summary(&violations, unlisted)
        ),
    );
    e.violations = violations;
    Err(e)
}

/// Parses the plugin's output and checks it against the declared output schema (on
/// the blocking pool when large, as inputs are); a mismatch is the plugin's bug,
/// not the caller's.
pub(super) async fn check_output(op: &OpRef, json: String, who: &Checker<'_>) -> Result<Value, CallError> {
    let large = json.len() >= who.limits.blocking_bytes();
    let tool = op.tool.clone();
    on_pool_if(large, op, who, move |operation| {
        parse_output(&tool, operation, &json)
    })
    .await?
}

fn parse_output(tool: &str, operation: &Operation, json: &str) -> Result<Value, CallError> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        CallError::new(
            ErrorCode::PluginError,
            format!("{tool} returned invalid JSON ({e}); this is a bug in the plugin"),
        )
    })?;
    if let (Some(validator), Some(schema)) = (&operation.output_validator, &operation.output_schema) {
        let (violations, unlisted) =
            validate::violations(validator, schema, &value, validate::MAX_VIOLATIONS);
        if !violations.is_empty() {
            return Err(CallError::new(
                ErrorCode::PluginError,
                format!(
                    "{tool} returned output that does not match its declared output schema ({}); this is a bug in the plugin, not in your input",
                    validate::summary(&violations, unlisted)
                ),
            ));
        }
    }
    Ok(value)
}

/// Runs `check` on `op`'s operation: on the low-priority blocking pool when `large`, else
/// right here (a task hand-off costs more than checking a small value).
async fn on_pool_if<T: Send + 'static>(
    large: bool,
    op: &OpRef,
    who: &Checker<'_>,
    check: impl FnOnce(&Operation) -> T + Send + 'static,
) -> Result<T, CallError> {
    if !large {
        return Ok(check(op.operation()));
    }
    let (source, index) = (op.source.clone(), op.index());
    who.cpu
        .blocking(who.tenant, move || check(&source.operations()[index]))
        .await
        .map_err(|e| {
            CallError::new(
                ErrorCode::Trap,
                format!(
                    "the hub's schema check of {} failed ({e}); see the hub log",
                    op.tool
                ),
            )
        })
}

/// A lower bound of `value`'s JSON length, stopping early past `cap`.
pub(super) fn approx_len(value: &Value, cap: usize) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => {
            let mut n = 2;
            for v in items {
                n += approx_len(v, cap) + 1;
                if n >= cap {
                    break;
                }
            }
            n
        }
        Value::Object(m) => {
            let mut n = 2;
            for (k, v) in m {
                n += k.len() + 4 + approx_len(v, cap);
                if n >= cap {
                    break;
                }
            }
            n
        }
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approximate_length_stops_early() {
        let big = Value::Array(vec![Value::String("x".repeat(100)); 10_000]);
        assert!(approx_len(&big, 1000) >= 1000);
        assert!(approx_len(&serde_json::json!({"a": "bc"}), 1000) < 20);
    }
}
