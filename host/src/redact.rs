//! Redaction of sensitive fields in JSON: every object field named in the
//! operator's list (`[audit] redact_fields`, compared case-insensitively) becomes
//! `"[redacted]"`, at any depth. The one rule for what the audit log keeps of a
//! call's input (`hub::audit`) and for content captured on trace spans
//! (`telemetry::content_json`: tool call arguments and results, model messages).

use serde_json::Value;

const REDACTED: &str = "[redacted]";

/// `value` with every object field whose name is in `fields` (lowercase,
/// compared case-insensitively) replaced by `"[redacted]"`, at any depth.
pub(crate) fn redact(value: &Value, fields: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let sensitive = fields.iter().any(|f| f.eq_ignore_ascii_case(k));
                    (
                        k.clone(),
                        if sensitive {
                            Value::String(REDACTED.into())
                        } else {
                            redact(v, fields)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact(v, fields)).collect()),
        other => other.clone(),
    }
}

/// The bearer tokens in the strings of `value` (`Bearer <token>`, any case)
/// replaced by `[redacted]`, at any depth: an `Authorization` header a user pasted
/// into a message does not reach a span.
pub(crate) fn bearer_tokens(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Some(clean) = without_bearer_tokens(text) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bearer_tokens),
        Value::Object(map) => map.values_mut().for_each(bearer_tokens),
        _ => {}
    }
}

/// `text` with the token after each `bearer ` (any case) redacted; `None` when it
/// holds none.
fn without_bearer_tokens(text: &str) -> Option<String> {
    const WORD: &str = "bearer ";
    let lower = text.to_ascii_lowercase();
    if !lower.contains(WORD) {
        return None;
    }
    let token_char = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    for (at, _) in lower.match_indices(WORD) {
        if at < rest {
            continue;
        }
        let start = at + WORD.len();
        let len = text[start..]
            .find(|c| !token_char(c))
            .unwrap_or(text.len() - start);
        if len == 0 {
            continue;
        }
        out.push_str(&text[rest..start]);
        out.push_str(REDACTED);
        rest = start + len;
    }
    out.push_str(&text[rest..]);
    Some(out)
}

/// What ends a string cut to fit a bound, naming the bound.
pub(crate) fn cut_marker(limit: &str) -> String {
    format!("…[cut: {limit}]")
}

/// `value` as JSON text of at most `max` bytes where possible, still JSON: its
/// longest string is halved (ending with `cut_marker(limit)`) until it fits. When
/// the strings are all too short to cut further, the text is cut at `max` bytes
/// (then not JSON), ending with the marker.
pub(crate) fn fit_json(mut value: Value, max: usize, limit: &str) -> String {
    let marker = cut_marker(limit);
    loop {
        let text = value.to_string();
        if text.len() <= max {
            return text;
        }
        match longest_string(&mut value) {
            Some(s) if s.len() > 2 * marker.len() => {
                let mut cut = s.len() / 2;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
                s.push_str(&marker);
            }
            _ => {
                let mut cut = max;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                return format!("{}{marker}", &text[..cut]);
            }
        }
    }
}

fn longest_string(value: &mut Value) -> Option<&mut String> {
    match value {
        Value::String(s) => Some(s),
        Value::Array(items) => items
            .iter_mut()
            .filter_map(longest_string)
            .max_by_key(|s| s.len()),
        Value::Object(map) => map
            .values_mut()
            .filter_map(longest_string)
            .max_by_key(|s| s.len()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bearer_tokens_are_redacted_at_any_depth() {
        let mut v = json!({"a": ["use Authorization: Bearer abc.DEF-123 please", "BEARER x/y=, ok"], "n": 1,
            "b": "no token here", "c": "bearer "});
        bearer_tokens(&mut v);
        assert_eq!(
            v,
            json!({"a": ["use Authorization: Bearer [redacted] please", "BEARER [redacted], ok"], "n": 1,
                "b": "no token here", "c": "bearer "})
        );
    }

    #[test]
    fn json_is_fitted_by_cutting_its_longest_strings() {
        let v = json!([{"role": "user", "parts": [{"type": "text", "content": "x".repeat(500)}]},
            {"role": "assistant", "parts": [{"type": "text", "content": "short"}]}]);
        let text = fit_json(v.clone(), 200, "telemetry.max_content_bytes");
        assert!(text.len() <= 200, "{text}");
        let back: Value = serde_json::from_str(&text).unwrap();
        let cut = back[0]["parts"][0]["content"].as_str().unwrap();
        assert!(cut.ends_with("…[cut: telemetry.max_content_bytes]"), "{cut}");
        assert_eq!(back[1]["parts"][0]["content"], "short");
        assert_eq!(fit_json(v.clone(), 10_000, "x"), v.to_string());
        // Nothing left to cut: the text itself is cut, naming the limit.
        let tiny = fit_json(json!({"a": 1, "b": 2}), 6, "telemetry.max_content_bytes");
        assert_eq!(tiny, "{\"a\":1…[cut: telemetry.max_content_bytes]");
    }
}
