//! Turning JSON Schema validation errors into violations a model can fix in one
//! retry: each names the JSON pointer of the offending value and says what was
//! expected and what was found ("expected integer, got string \"3\"").
//!
//! jsonschema's own messages describe the instance ("\"3\" is not of type
//! \"integer\""); ours lead with the location and the fix, and for unknown properties
//! list the ones that are allowed, which is what a model needs to correct itself.

use jsonschema::Validator;
use jsonschema::error::{ValidationError, ValidationErrorKind};
use serde::Serialize;
use serde_json::Value;

/// Most violations reported for one input; the rest are counted.
pub const MAX_VIOLATIONS: usize = 20;
/// Longest rendering of an offending value in a message.
const MAX_VALUE_CHARS: usize = 60;

/// One way an input breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON pointer into the input (`""` is the input itself, `/items/0/name` a field).
    pub path: String,
    /// What is wrong, with what was expected and what was found.
    pub message: String,
}

/// Every violation of `instance` against `validator` (compiled from `schema`), in
/// document order, at most [`MAX_VIOLATIONS`] plus a count of the rest.
pub fn violations(validator: &Validator, schema: &Value, instance: &Value) -> (Vec<Violation>, usize) {
    let mut out = Vec::new();
    for error in validator.iter_errors(instance) {
        describe(&error, schema, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup();
    let extra = out.len().saturating_sub(MAX_VIOLATIONS);
    out.truncate(MAX_VIOLATIONS);
    (out, extra)
}

/// One line summing violations up: `"/a: expected …; /b: …"`.
pub fn summary(violations: &[Violation], extra: usize) -> String {
    let mut parts: Vec<String> = violations
        .iter()
        .map(|v| {
            if v.path.is_empty() {
                v.message.clone()
            } else {
                format!("{}: {}", v.path, v.message)
            }
        })
        .collect();
    if extra > 0 {
        parts.push(format!("and {extra} more"));
    }
    parts.join("; ")
}

fn describe(error: &ValidationError<'_>, schema: &Value, out: &mut Vec<Violation>) {
    let path = error.instance_path().as_str().to_string();
    let instance: &Value = error.instance();
    // The keyword's value in the schema, e.g. the `type` or `minimum` that failed.
    let keyword_value = schema.pointer(error.schema_path().as_str());
    let got = render(instance);
    let message = match error.kind() {
        ValidationErrorKind::Type { .. } => match keyword_value {
            Some(expected) => format!(
                "expected {}, got {} {got}",
                type_names(expected),
                json_type(instance)
            ),
            None => format!("{error}"),
        },
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(Violation {
                path: format!("{path}/{}", escape(name)),
                message: "missing required property".into(),
            });
            return;
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let allowed = sibling_properties(schema, error.schema_path().as_str());
            for name in unexpected {
                let message = match &allowed {
                    Some(list) if !list.is_empty() => {
                        format!("unexpected property; allowed properties: {}", list.join(", "))
                    }
                    _ => "unexpected property; remove it".to_string(),
                };
                out.push(Violation {
                    path: format!("{path}/{}", escape(name)),
                    message,
                });
            }
            return;
        }
        ValidationErrorKind::Enum { options } => format!("expected one of {}, got {got}", render(options)),
        ValidationErrorKind::Constant { expected_value } => {
            format!("expected {}, got {got}", render(expected_value))
        }
        ValidationErrorKind::Minimum { limit } => format!("expected a number >= {limit}, got {got}"),
        ValidationErrorKind::Maximum { limit } => format!("expected a number <= {limit}, got {got}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("expected a number > {limit}, got {got}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("expected a number < {limit}, got {got}"),
        ValidationErrorKind::MinLength { limit } => {
            format!("expected at least {limit} characters, got {}", char_len(instance))
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("expected at most {limit} characters, got {}", char_len(instance))
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("expected at least {limit} items, got {}", item_len(instance))
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("expected at most {limit} items, got {}", item_len(instance))
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("expected a string matching /{pattern}/, got {got}")
        }
        ValidationErrorKind::Format { format } => format!("expected a {format:?} string, got {got}"),
        ValidationErrorKind::UniqueItems => "expected unique items, got duplicates".to_string(),
        _ => format!("{error}"),
    };
    out.push(Violation { path, message });
}

/// The `properties` names beside the `additionalProperties` keyword that failed.
fn sibling_properties(schema: &Value, keyword_path: &str) -> Option<Vec<String>> {
    let parent = keyword_path.rsplit_once('/').map(|(p, _)| p)?;
    let props = schema.pointer(parent)?.get("properties")?.as_object()?;
    Some(props.keys().cloned().collect())
}

/// `"string"` or `["string","null"]` as "string" / "string or null".
fn type_names(expected: &Value) -> String {
    match expected {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.to_string(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn char_len(value: &Value) -> usize {
    value.as_str().map_or(0, |s| s.chars().count())
}

fn item_len(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

/// Compact JSON, cut at [`MAX_VALUE_CHARS`] characters.
fn render(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_VALUE_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
    format!("{cut}…")
}

/// JSON pointer escaping of one segment.
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, instance: Value) -> Vec<Violation> {
        let validator = jsonschema::validator_for(&schema).unwrap();
        violations(&validator, &schema, &instance).0
    }

    #[test]
    fn every_violation_has_a_path_and_expected_vs_got() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1},
                "count": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["fast", "slow"]},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["text", "mode"],
            "additionalProperties": false
        });
        let v = check(schema, json!({"count": "3", "tags": ["a", 2], "colour": "red"}));
        let find = |p: &str| {
            v.iter()
                .find(|x| x.path == p)
                .unwrap_or_else(|| panic!("no {p} in {v:?}"))
                .message
                .clone()
        };
        assert_eq!(find("/count"), "expected integer, got string \"3\"");
        assert_eq!(find("/tags/1"), "expected string, got integer 2");
        assert_eq!(find("/text"), "missing required property");
        assert_eq!(find("/mode"), "missing required property");
        assert!(
            find("/colour").contains("allowed properties: count, mode, tags, text"),
            "{v:?}"
        );
        assert_eq!(v.len(), 5, "{v:?}");
    }

    #[test]
    fn limits_enums_and_patterns_say_what_is_allowed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "number", "maximum": 10},
                "s": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
                "m": {"enum": ["a", "b"]}
            }
        });
        let v = check(schema, json!({"n": 11, "s": "ABCD", "m": "c"}));
        let messages: Vec<String> = v.iter().map(|x| format!("{}: {}", x.path, x.message)).collect();
        assert!(
            messages.contains(&"/n: expected a number <= 10, got 11".to_string()),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"/s: expected at most 3 characters, got 4".to_string()),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"/s: expected a string matching /^[a-z]+$/, got \"ABCD\"".to_string()),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"/m: expected one of [\"a\",\"b\"], got \"c\"".to_string()),
            "{messages:?}"
        );
    }

    #[test]
    fn the_whole_input_of_the_wrong_type_is_reported_at_the_root() {
        let v = check(json!({"type": "object"}), json!([1]));
        assert_eq!(
            v,
            vec![Violation {
                path: String::new(),
                message: "expected object, got array [1]".into()
            }]
        );
        assert_eq!(summary(&v, 2), "expected object, got array [1]; and 2 more");
    }

    #[test]
    fn long_values_are_cut() {
        let v = check(
            json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            json!({"a": "x".repeat(500)}),
        );
        assert!(v[0].message.len() < 120, "{}", v[0].message);
        assert!(v[0].message.ends_with('…'));
    }
}
