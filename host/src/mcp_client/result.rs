//! A `tools/call` result as the hub's call output: `isError` is the tool's own
//! error (its text as the message); otherwise `structuredContent` when the server
//! gave it, else `{"text": …}` with the text items joined, plus `"content"` with
//! the other items (images, audio, resources) as the server sent them. The output
//! is bounded by `max_result_kb`.

use crate::runtime::{CallFailure, CallOutput, ErrorCode, bounded_text};
use serde_json::{Map, Value, json};

/// Longest error text of a tool kept, in bytes.
const MAX_ERROR_TEXT: usize = 4 * 1024;

/// The output of `result`, or why there is none.
pub(super) fn output(server: &str, result: Value, max_result_kb: u64) -> Result<CallOutput, CallFailure> {
    let Value::Object(mut result) = result else {
        return Err(failure(
            ErrorCode::PluginError,
            format!("mcp server {server} answered tools/call with something that is not an object"),
        ));
    };
    let content = match result.remove("content") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = texts(&content);
        let message = if text.is_empty() {
            "the tool reported an error without text".to_string()
        } else {
            bounded_text(text, MAX_ERROR_TEXT)
        };
        return Err(failure(ErrorCode::PluginError, message));
    }
    let output = match result.remove("structuredContent") {
        Some(structured) => structured,
        None => unstructured(content),
    };
    let json = output.to_string();
    let limit = (max_result_kb * 1024) as usize;
    if json.len() > limit {
        return Err(failure(
            ErrorCode::OutputLimit,
            format!(
                "mcp server {server} returned {} bytes, more than max_result_kb ({max_result_kb} KiB, mcp_servers.{server}.max_result_kb)",
                json.len()
            ),
        ));
    }
    Ok(CallOutput {
        json,
        logs: String::new(),
        times: crate::runtime::CallTimes::default(),
    })
}

/// `{"text": …}`, plus `"content"` for the items that are not text.
fn unstructured(content: Vec<Value>) -> Value {
    let text = texts(&content);
    let others: Vec<Value> = content
        .into_iter()
        .filter(|item| item.get("type").and_then(Value::as_str) != Some("text"))
        .collect();
    let mut out = Map::new();
    out.insert("text".into(), json!(text));
    if !others.is_empty() {
        out.insert("content".into(), Value::Array(others));
    }
    Value::Object(out)
}

/// The text items' texts, one per line.
fn texts(content: &[Value]) -> String {
    content
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A failure of an MCP server's call.
pub(super) fn failure(code: ErrorCode, message: String) -> CallFailure {
    CallFailure::Source { code, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_first_then_text_and_other_content() {
        let out = output(
            "s",
            json!({"content": [{"type": "text", "text": "7"}], "structuredContent": {"sum": 7}}),
            64,
        )
        .unwrap();
        assert_eq!(out.json, r#"{"sum":7}"#);
        let out = output(
            "s",
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}, {"type": "text", "text": "b"}]}),
            64,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&out.json).unwrap();
        assert_eq!(
            v,
            json!({"text": "a\nb", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]})
        );
        let e = output(
            "s",
            json!({"isError": true, "content": [{"type": "text", "text": "no such file"}]}),
            64,
        )
        .unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            (ErrorCode::PluginError, "no such file".to_string())
        );
        let e = output(
            "s",
            json!({"content": [{"type": "text", "text": "x".repeat(2000)}]}),
            1,
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::OutputLimit);
        assert!(e.to_string().contains("mcp_servers.s.max_result_kb"), "{e}");
    }
}
