//! Running a plugin's operation examples (WIT 0.2.0) through the real sandbox: at
//! load, where a failure rejects the plugin (`verification failed: …`), and for
//! `wasmhub plugin test`, which reports every example. An example passes when its
//! input matches the input schema, the call succeeds, and the output matches the
//! output schema (when declared) and equals the expected output (when given),
//! compared as JSON values. Examples run without nested calls (`host.call` is
//! refused), like `operations.list` at load.

use super::plugin::{Example, Operation, Plugin};
use super::types::{CallFailure, Deadline, Invocation, NoNestedCalls};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Which examples run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExampleScope {
    /// Those that are safe to run when a plugin loads: not of an operation hinted
    /// `destructive` or `open-world` (it must not act on the world, or depend on
    /// it, just because a file was dropped into a folder).
    AtLoad,
    /// Every example (`wasmhub plugin test`: the author asked for it).
    All,
}

impl ExampleScope {
    fn includes(self, op: &Operation) -> bool {
        self == ExampleScope::All || !(op.hints.destructive || op.hints.open_world)
    }
}

/// Why one example failed.
#[derive(Debug)]
pub enum ExampleFailure {
    /// The example's input does not match the operation's input schema.
    InputInvalid {
        /// Each violation, `at <pointer>: <message>`.
        violations: Vec<String>,
    },
    /// The call failed.
    Call(CallFailure),
    /// The output is not JSON.
    OutputNotJson(serde_json::Error),
    /// The output does not match the operation's output schema.
    OutputInvalid {
        /// Each violation, `at <pointer>: <message>`.
        violations: Vec<String>,
    },
    /// The output differs from the expected one at `at` (a JSON pointer).
    OutputDiffers {
        /// Where the first difference is ("" for the root).
        at: String,
        /// The expected value there, as compact JSON (cut when long).
        expected: String,
        /// The actual value there (`(absent)` when missing), cut when long.
        actual: String,
    },
}

impl fmt::Display for ExampleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExampleFailure::InputInvalid { violations } => {
                write!(
                    f,
                    "its input does not match the input schema: {}",
                    violations.join("; ")
                )
            }
            ExampleFailure::Call(e) => write!(f, "the call failed: {e}"),
            ExampleFailure::OutputNotJson(e) => write!(f, "the output is not JSON: {e}"),
            ExampleFailure::OutputInvalid { violations } => {
                write!(
                    f,
                    "the output does not match the output schema: {}",
                    violations.join("; ")
                )
            }
            ExampleFailure::OutputDiffers { at, expected, actual } => {
                let at = if at.is_empty() { "the output" } else { at.as_str() };
                write!(f, "at {at}: expected {expected}, got {actual}")
            }
        }
    }
}

impl std::error::Error for ExampleFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExampleFailure::Call(e) => Some(e),
            ExampleFailure::OutputNotJson(e) => Some(e),
            _ => None,
        }
    }
}

/// One example that did not pass, named for the author.
#[derive(Debug)]
pub struct ExampleError {
    /// The operation (without the namespace).
    pub op: String,
    /// 1-based position among the operation's examples.
    pub index: usize,
    /// The example's own description.
    pub description: String,
    /// What went wrong.
    pub failure: ExampleFailure,
}

impl fmt::Display for ExampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "example {} of {} ({:?}): {}",
            self.index, self.op, self.description, self.failure
        )
    }
}

impl std::error::Error for ExampleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.failure)
    }
}

/// What happened to one example.
#[derive(Debug)]
pub enum ExampleOutcome {
    /// It passed.
    Passed,
    /// Out of scope (an operation hinted `destructive` or `open-world`, at load).
    Skipped,
    /// It failed.
    Failed(ExampleError),
}

/// One example's report: which operation, which example, and what happened.
#[derive(Debug)]
pub struct ExampleReport {
    /// The operation (without the namespace).
    pub op: String,
    /// 1-based position among the operation's examples.
    pub index: usize,
    /// The example's own description.
    pub description: String,
    /// What happened.
    pub outcome: ExampleOutcome,
}

/// Every example's report, in the order the plugin listed them.
#[derive(Debug, Default)]
pub struct ExampleReports(pub Vec<ExampleReport>);

impl ExampleReports {
    /// The failures only.
    pub fn failures(self) -> Vec<ExampleError> {
        self.0
            .into_iter()
            .filter_map(|r| match r.outcome {
                ExampleOutcome::Failed(e) => Some(e),
                _ => None,
            })
            .collect()
    }
}

/// Runs the examples of `plugin` in `scope`, one after another, all of them within
/// `within` (each call also within its plugin's own `timeout_ms`).
pub(super) async fn run(plugin: &Plugin, scope: ExampleScope, within: Duration) -> ExampleReports {
    let deadline = tokio::time::Instant::now() + within;
    let mut reports = Vec::new();
    for op in plugin.operations() {
        for (i, example) in op.examples.iter().enumerate() {
            let outcome = if scope.includes(op) {
                match check(plugin, op, example, deadline).await {
                    Ok(()) => ExampleOutcome::Passed,
                    Err(failure) => ExampleOutcome::Failed(ExampleError {
                        op: op.name.clone(),
                        index: i + 1,
                        description: example.description.clone(),
                        failure,
                    }),
                }
            } else {
                ExampleOutcome::Skipped
            };
            reports.push(ExampleReport {
                op: op.name.clone(),
                index: i + 1,
                description: example.description.clone(),
                outcome,
            });
        }
    }
    ExampleReports(reports)
}

async fn check(
    plugin: &Plugin,
    op: &Operation,
    example: &Example,
    deadline: tokio::time::Instant,
) -> Result<(), ExampleFailure> {
    let invalid = violations(&op.input_validator, &example.input);
    if !invalid.is_empty() {
        return Err(ExampleFailure::InputInvalid { violations: invalid });
    }
    let invocation = Invocation {
        call_id: format!("example-{}", op.name),
        tenant: "verify".into(),
        deadline: Deadline::Bound(deadline),
        trace: None,
        nested: Arc::new(NoNestedCalls),
    };
    let output = plugin
        .call(&op.name, &example.input.to_string(), invocation)
        .await
        .map_err(ExampleFailure::Call)?;
    let actual: Value = serde_json::from_str(&output.json).map_err(ExampleFailure::OutputNotJson)?;
    if let Some(validator) = &op.output_validator {
        let violations = violations(validator, &actual);
        if !violations.is_empty() {
            return Err(ExampleFailure::OutputInvalid { violations });
        }
    }
    match &example.output {
        Some(expected) => match first_difference(expected, Some(&actual), String::new()) {
            Some(diff) => Err(diff),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// At most this many schema violations are named per example.
const MAX_VIOLATIONS: usize = 5;

fn violations(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .take(MAX_VIOLATIONS)
        .map(|e| format!("at {:?}: {e}", e.instance_path().to_string()))
        .collect()
}

/// The first place (depth first, in the expected value's key order) where `actual`
/// differs from `expected`.
fn first_difference(expected: &Value, actual: Option<&Value>, at: String) -> Option<ExampleFailure> {
    let differs = |actual: Option<&Value>| ExampleFailure::OutputDiffers {
        at: at.clone(),
        expected: shown(Some(expected)),
        actual: shown(actual),
    };
    match (expected, actual) {
        (Value::Object(e), Some(Value::Object(a))) => {
            for (key, value) in e {
                let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                if let Some(diff) = first_difference(value, a.get(key), path) {
                    return Some(diff);
                }
            }
            let extra = a.keys().find(|k| !e.contains_key(*k))?;
            Some(ExampleFailure::OutputDiffers {
                at: format!("{at}/{extra}"),
                expected: shown(None),
                actual: shown(a.get(extra)),
            })
        }
        (Value::Array(e), Some(Value::Array(a))) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (e, a))| first_difference(e, Some(a), format!("{at}/{i}"))),
        (e, Some(a)) if e == a => None,
        (_, actual) => Some(differs(actual)),
    }
}

/// Longest value shown in a difference, in chars.
const SHOWN_CHARS: usize = 200;

fn shown(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = value.to_string();
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diff(expected: Value, actual: Value) -> Option<String> {
        first_difference(&expected, Some(&actual), String::new()).map(|d| d.to_string())
    }

    #[test]
    fn equal_values_have_no_difference_whatever_the_key_order() {
        assert_eq!(
            diff(json!({"a": 1, "b": [1, 2]}), json!({"b": [1, 2], "a": 1})),
            None
        );
        assert_eq!(
            diff(json!(9223372036854775807i64), json!(9223372036854775807i64)),
            None
        );
    }

    #[test]
    fn the_first_difference_is_named_by_pointer() {
        assert_eq!(
            diff(json!({"sum": 42}), json!({"sum": 41})).unwrap(),
            "at /sum: expected 42, got 41"
        );
        assert_eq!(
            diff(json!({"a": {"b": [1, 2]}}), json!({"a": {"b": [1, 3]}})).unwrap(),
            "at /a/b/1: expected 2, got 3"
        );
        assert_eq!(
            diff(json!({"a": 1}), json!({"a": 1, "z": true})).unwrap(),
            "at /z: expected (absent), got true"
        );
        assert_eq!(
            diff(json!({"a": 1}), json!({})).unwrap(),
            "at /a: expected 1, got (absent)"
        );
        assert_eq!(
            diff(json!([1, 2]), json!([1])).unwrap(),
            "at the output: expected [1,2], got [1]"
        );
        // Integers and floats are different values: 1 is not 1.0.
        assert!(diff(json!(1), json!(1.0)).is_some());
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(1000);
        let d = diff(json!(long), json!("y")).unwrap();
        assert!(d.len() < 300, "{d}");
        assert!(d.contains('…'), "{d}");
    }
}
