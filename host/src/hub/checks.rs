//! The schema checks around one call: its input before the plugin runs (on the
//! blocking pool when the input is large), its output after. Both report what is
//! wrong as violations a model can act on (`validate`).

use super::error::{CallError, ErrorCode};
use super::registry::OpRef;
use super::validate;
use crate::config::Limits;
use serde_json::Value;

/// Checks `input` against the operation's input schema and hands it back. An
/// input of `limits.validate_blocking_kb` or more is checked on tokio's blocking
/// pool: validating a large input with many errors takes long enough to hold up
/// every request sharing the async worker.
pub(super) async fn check_input(op: &OpRef, input: Value, limits: &Limits) -> Result<Value, CallError> {
    let max = limits.max_violations;
    let large = (limits.validate_blocking_kb as usize).saturating_mul(1024);
    let (input, (violations, unlisted)) = if approx_len(&input, large) >= large {
        let plugin = op.plugin.clone();
        let index = op.index();
        tokio::task::spawn_blocking(move || {
            let operation = &plugin.operations()[index];
            let found =
                validate::violations(&operation.input_validator, &operation.input_schema, &input, max);
            (input, found)
        })
        .await
        .map_err(|e| {
            CallError::new(
                ErrorCode::Trap,
                format!(
                    "the hub's input validation of {} failed ({e}); see the hub log",
                    op.tool
                ),
            )
        })?
    } else {
        let operation = op.operation();
        let found = validate::violations(&operation.input_validator, &operation.input_schema, &input, max);
        (input, found)
    };
    if violations.is_empty() {
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

/// Parses the plugin's output and checks it against the declared output schema; a
/// mismatch is the plugin's bug, not the caller's.
pub(super) fn check_output(op: &OpRef, json: &str) -> Result<Value, CallError> {
    let value: Value = serde_json::from_str(json).map_err(|e| {
        CallError::new(
            ErrorCode::PluginError,
            format!(
                "{} returned invalid JSON ({e}); this is a bug in the plugin",
                op.tool
            ),
        )
    })?;
    let operation = op.operation();
    if let (Some(validator), Some(schema)) = (&operation.output_validator, &operation.output_schema) {
        let (violations, unlisted) =
            validate::violations(validator, schema, &value, validate::MAX_VIOLATIONS);
        if !violations.is_empty() {
            return Err(CallError::new(
                ErrorCode::PluginError,
                format!(
                    "{} returned output that does not match its declared output schema ({}); this is a bug in the plugin, not in your input",
                    op.tool,
                    validate::summary(&violations, unlisted)
                ),
            ));
        }
    }
    Ok(value)
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
