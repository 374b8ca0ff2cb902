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

/// Most violations reported for meta-tool arguments (operation inputs use
/// `limits.max_violations`); the rest are counted.
pub(crate) const MAX_VIOLATIONS: usize = 20;
/// Most violations counted beyond the reported ones: past it validation stops,
/// so a huge input with errors everywhere costs a bounded amount of work.
const MAX_COUNTED: usize = 10_000;
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

/// Violations beyond the reported ones: how many were counted, and whether
/// counting stopped at its bound (there may be more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Unlisted {
    pub count: usize,
    pub stopped: bool,
}

/// The violations of `instance` against `validator` (compiled from `schema`): the
/// first `max` described, sorted by path, and the rest counted (up to a bound).
pub(crate) fn violations(
    validator: &Validator,
    schema: &Value,
    instance: &Value,
    max: usize,
) -> (Vec<Violation>, Unlisted) {
    let mut out = Vec::new();
    let mut unlisted = Unlisted::default();
    // Nearly every instance is valid: `is_valid` stops at the first failure and
    // builds no errors, several times cheaper than walking them.
    if validator.is_valid(instance) {
        return (out, unlisted);
    }
    for error in validator.iter_errors(instance) {
        if out.len() < max {
            describe(&error, schema, &mut out);
            continue;
        }
        unlisted.count += match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => unexpected.len(),
            _ => 1,
        };
        if unlisted.count >= MAX_COUNTED {
            unlisted.stopped = true;
            break;
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup();
    // One error may describe several violations (unexpected properties).
    unlisted.count += out.len().saturating_sub(max);
    out.truncate(max);
    (out, unlisted)
}

/// One line summing violations up: `"/a: expected …; /b: …; and 3 more"`.
pub(crate) fn summary(violations: &[Violation], unlisted: Unlisted) -> String {
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
    match unlisted {
        Unlisted { count: 0, .. } => {}
        Unlisted {
            count,
            stopped: false,
        } => parts.push(format!("and {count} more")),
        Unlisted { count, stopped: true } => {
            parts.push(format!("and at least {count} more (validation stopped counting)"))
        }
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

/// Compact JSON, cut at [`MAX_VALUE_CHARS`] characters. Serialization stops at
/// the cut: a violation on a huge value costs no more than one on a small one.
fn render(value: &Value) -> String {
    let mut head = Head(Vec::new());
    // The only error is `Head` refusing more bytes, which is the cut.
    let whole = serde_json::to_writer(&mut head, value).is_ok();
    let text = String::from_utf8_lossy(&head.0);
    if whole && text.chars().count() <= MAX_VALUE_CHARS {
        return text.into_owned();
    }
    let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
    format!("{cut}…")
}

/// A writer keeping the first bytes of what it is given, failing once it has
/// enough (4 bytes per character covers any UTF-8).
struct Head(Vec<u8>);

impl std::io::Write for Head {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = (MAX_VALUE_CHARS * 4 + 4).saturating_sub(self.0.len());
        if room == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let n = buf.len().min(room);
        self.0.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
        violations(&validator, &schema, &instance, MAX_VIOLATIONS).0
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
        let two = Unlisted {
            count: 2,
            stopped: false,
        };
        assert_eq!(summary(&v, two), "expected object, got array [1]; and 2 more");
    }

    #[test]
    fn many_violations_are_capped_and_counted() {
        let schema = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            "additionalProperties": false});
        let extra: serde_json::Map<String, Value> = (0..30).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let mut input = json!({"items": vec!["x"; 50]});
        input.as_object_mut().unwrap().extend(extra);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let (listed, unlisted) = violations(&validator, &schema, &input, 5);
        assert_eq!(listed.len(), 5);
        assert_eq!(
            unlisted,
            Unlisted {
                count: 75,
                stopped: false
            }
        );
        assert!(summary(&listed, unlisted).ends_with("; and 75 more"));
        // Counting stops at its bound on a huge input.
        let huge = json!({"items": vec!["x"; MAX_COUNTED + 100]});
        let (_, unlisted) = violations(&validator, &schema, &huge, 5);
        assert!(unlisted.stopped && unlisted.count == MAX_COUNTED, "{unlisted:?}");
        assert!(summary(&listed, unlisted).contains("and at least 10000 more"));
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
