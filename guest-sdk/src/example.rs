//! Worked examples of an operation (WIT `example`, since 0.2.0): what they are, the rules
//! the host holds them to, and how an actual output is compared with the expected
//! one. The host shows examples to models beside the schema and runs them when it
//! loads the plugin; [`Plugin::check`](crate::Plugin::check) runs them natively first,
//! so `cargo test` reports a wrong example before the host rejects the component.

use std::fmt;

use serde_json::Value;

use crate::Error;
use crate::bindings::wasmhub::plugin::types::Example as WitExample;

/// Longest example input the WIT contract allows, in bytes of JSON text.
pub const MAX_EXAMPLE_INPUT_BYTES: usize = 16 * 1024;

/// One worked example: a sentence saying what it shows, an input, and the output
/// it must produce, or none when the output is not fixed (a clock, the network).
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    description: String,
    input: Value,
    output: Option<Value>,
}

impl Example {
    /// An example whose call must succeed, with any output.
    pub fn new(description: impl Into<String>, input: Value) -> Self {
        Example {
            description: description.into(),
            input,
            output: None,
        }
    }

    /// The same example, whose output must equal `output` (compared as JSON values).
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = Some(output);
        self
    }

    /// What the example shows.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The input.
    pub fn input(&self) -> &Value {
        &self.input
    }

    /// The expected output, when it is fixed.
    pub fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }

    /// What is wrong with the example itself, before anything runs: the host rejects
    /// a plugin listing such an example.
    pub(crate) fn declaration_problem(&self) -> Option<ExampleProblem> {
        if self.description.trim().is_empty() {
            return Some(ExampleProblem::Undescribed);
        }
        if !self.input.is_object() {
            return Some(ExampleProblem::InputNotObject);
        }
        let bytes = self.input.to_string().len();
        if bytes > MAX_EXAMPLE_INPUT_BYTES {
            return Some(ExampleProblem::InputTooLarge { bytes });
        }
        None
    }

    /// Whether `output` (the operation's JSON text) is what the example expects.
    pub(crate) fn judge(&self, output: &str) -> Result<(), ExampleProblem> {
        let actual: Value =
            serde_json::from_str(output).map_err(|e| ExampleProblem::OutputNotJson(e.to_string()))?;
        match &self.output {
            Some(expected) => match first_difference(expected, Some(&actual), String::new()) {
                Some(difference) => Err(ExampleProblem::OutputDiffers(Box::new(difference))),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// The WIT record `operations.list` returns: input and output as JSON text.
    pub(crate) fn to_wit(&self) -> WitExample {
        WitExample {
            description: self.description.clone(),
            input: self.input.to_string(),
            output: self.output.as_ref().map(Value::to_string),
        }
    }
}

/// Why an example does not hold.
#[derive(Debug, Clone, PartialEq)]
pub enum ExampleProblem {
    /// The description is empty.
    Undescribed,
    /// The input is not a JSON object (every operation's input root is one).
    InputNotObject,
    /// The input's JSON text is longer than [`MAX_EXAMPLE_INPUT_BYTES`].
    InputTooLarge {
        /// Its length in bytes.
        bytes: usize,
    },
    /// The input does not decode into the operation's input type.
    InputRejected(Error),
    /// The operation returned an error: an example must succeed.
    CallFailed(Error),
    /// The operation's output is not JSON (an SDK bug, since outputs are encoded by it).
    OutputNotJson(String),
    /// The output is not the expected one (boxed: it holds two JSON values, and a
    /// large `Err` would make every `Result<(), CheckError>` large).
    OutputDiffers(Box<Difference>),
}

impl fmt::Display for ExampleProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExampleProblem::Undescribed => write!(f, "its description is empty"),
            ExampleProblem::InputNotObject => write!(f, "its input is not a JSON object"),
            ExampleProblem::InputTooLarge { bytes } => write!(
                f,
                "its input is {bytes} bytes of JSON, more than the {MAX_EXAMPLE_INPUT_BYTES} allowed"
            ),
            ExampleProblem::InputRejected(e) => write!(f, "its input does not decode: {e}"),
            ExampleProblem::CallFailed(e) => write!(f, "the call failed ({e}), but an example must succeed"),
            ExampleProblem::OutputNotJson(e) => write!(f, "the output is not JSON: {e}"),
            ExampleProblem::OutputDiffers(d) => write!(f, "{d}"),
        }
    }
}

/// The first place where an output differs from the expected one.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// A JSON Pointer to it ("" for the whole output).
    pub at: String,
    /// The expected value there; `None` when the output has a key it should not.
    pub expected: Option<Value>,
    /// The actual value there; `None` when it is missing.
    pub actual: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.at.is_empty() {
            "the output"
        } else {
            &self.at
        };
        write!(
            f,
            "at {at}: expected {}, got {}",
            shown(self.expected.as_ref()),
            shown(self.actual.as_ref())
        )
    }
}

/// The first difference, depth first in the expected value's key order, then keys
/// only the actual value has. Values compare as serde_json does: key order and white
/// space never matter, integers compare exactly, and `1` is not `1.0` (as at the host).
pub fn first_difference(expected: &Value, actual: Option<&Value>, at: String) -> Option<Difference> {
    match (expected, actual) {
        (Value::Object(e), Some(Value::Object(a))) => {
            let in_expected = e.iter().find_map(|(key, value)| {
                first_difference(value, a.get(key), format!("{at}/{}", pointer_token(key)))
            });
            in_expected.or_else(|| {
                let (key, value) = a.iter().find(|(k, _)| !e.contains_key(*k))?;
                Some(Difference {
                    at: format!("{at}/{}", pointer_token(key)),
                    expected: None,
                    actual: Some(value.clone()),
                })
            })
        }
        (Value::Array(e), Some(Value::Array(a))) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (e, a))| first_difference(e, Some(a), format!("{at}/{i}"))),
        (e, Some(a)) if e == a => None,
        (e, a) => Some(Difference {
            at,
            expected: Some(e.clone()),
            actual: a.cloned(),
        }),
    }
}

/// A key escaped as one JSON Pointer reference token (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Longest value shown in a difference, in characters: a failing example over a
/// large document should still give a readable message.
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
    fn equal_values_do_not_differ_whatever_the_key_order() {
        assert_eq!(
            diff(
                json!({"a": 1, "b": [1, {"c": null}]}),
                json!({"b": [1, {"c": null}], "a": 1})
            ),
            None
        );
        assert_eq!(diff(json!(u64::MAX), json!(18446744073709551615u64)), None);
    }

    #[test]
    fn the_first_difference_is_named_by_pointer() {
        assert_eq!(
            diff(json!({"sum": 42}), json!({"sum": 41})).unwrap(),
            "at /sum: expected 42, got 41"
        );
        assert_eq!(
            diff(json!({"a/b": {"c~": [1, 2]}}), json!({"a/b": {"c~": [1, 3]}})).unwrap(),
            "at /a~1b/c~0/1: expected 2, got 3"
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
        assert!(diff(json!(1), json!(1.0)).is_some(), "an integer is not a float");
        assert!(
            diff(json!(i64::MAX), json!(i64::MAX - 1)).is_some(),
            "no rounding through doubles"
        );
    }

    #[test]
    fn long_values_are_cut() {
        let d = diff(json!("x".repeat(1000)), json!("y")).unwrap();
        assert!(d.len() < 300 && d.contains('…'), "{d}");
    }

    #[test]
    fn declarations_are_checked_before_anything_runs() {
        let ok = Example::new("adds", json!({"a": 1}));
        assert_eq!(ok.declaration_problem(), None);
        assert_eq!(
            Example::new(" ", json!({})).declaration_problem(),
            Some(ExampleProblem::Undescribed)
        );
        assert_eq!(
            Example::new("x", json!([1])).declaration_problem(),
            Some(ExampleProblem::InputNotObject)
        );
        let big = Example::new("x", json!({"s": "a".repeat(MAX_EXAMPLE_INPUT_BYTES)}));
        assert!(matches!(
            big.declaration_problem(),
            Some(ExampleProblem::InputTooLarge { .. })
        ));
    }

    #[test]
    fn outputs_are_judged_only_when_fixed() {
        let free = Example::new("any", json!({}));
        assert_eq!(free.judge(r#"{"t": 1}"#), Ok(()));
        assert!(matches!(
            free.judge("not json"),
            Err(ExampleProblem::OutputNotJson(_))
        ));
        let fixed = free.with_output(json!({"t": 1}));
        assert_eq!(fixed.judge(r#"{ "t" : 1 }"#), Ok(()));
        assert_eq!(
            fixed.judge(r#"{"t": 2}"#).unwrap_err().to_string(),
            "at /t: expected 1, got 2"
        );
    }

    #[test]
    fn the_wit_record_carries_json_text() {
        let wit = Example::new("d", json!({"n": u64::MAX}))
            .with_output(json!([1.5]))
            .to_wit();
        assert_eq!(
            (
                wit.description.as_str(),
                wit.input.as_str(),
                wit.output.as_deref()
            ),
            ("d", r#"{"n":18446744073709551615}"#, Some("[1.5]"))
        );
        assert_eq!(Example::new("d", json!({})).to_wit().output, None);
    }
}
