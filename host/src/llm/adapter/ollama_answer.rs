//! Ollama's answers read as OpenAI ones: the NDJSON stream of `/api/chat` as
//! chunks ([`Lines`]), a whole answer as a `chat.completion` ([`completion`]).
//!
//! Shapes from Ollama's API reference (`docs/api.md`, "Generate a chat
//! completion": the streaming, non-streaming, tools and thinking examples): each
//! line is `{"model", "created_at", "message": {"role", "content", "thinking",
//! "tool_calls": [{"function": {"name", "arguments": {...}}}]}, "done": false}`,
//! the last one `"done": true` with `done_reason`, `prompt_eval_count` and
//! `eval_count`; an error is `{"error": "..."}`, also mid-stream. Ollama gives
//! tool calls whole (arguments as an object) and without ids, so each gets an id.

use crate::llm::client::{Recode, ResponseBodyError};
use crate::sse;
use serde_json::{Map, Value, json};

/// The NDJSON stream of `/api/chat` as OpenAI SSE chunks.
pub(crate) struct Lines {
    /// The line read so far.
    line: Vec<u8>,
    /// Longest line accepted (`max_event_kb`).
    max_line: usize,
    /// The chunks' `id`.
    id: String,
    /// Tool calls given so far (the next one's `index`).
    tools: u32,
    /// The `done` line (or an error) was read: what follows is ignored.
    ended: bool,
}

impl Lines {
    pub(crate) fn new(max_line: usize) -> Lines {
        Lines {
            line: Vec::new(),
            max_line,
            id: crate::ids::new_id("chatcmpl"),
            tools: 0,
            ended: false,
        }
    }

    fn chunk(&self, line: &Value, choices: Value) -> Value {
        json!({"id": self.id, "object": "chat.completion.chunk", "created": crate::clock::now_ms() / 1000,
               "model": line["model"], "choices": choices})
    }

    /// One NDJSON line as chunks. A line that is not JSON is passed on as an
    /// event of its own, which the hub skips and counts as any malformed chunk.
    fn line(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        let raw = raw.trim_ascii();
        if raw.is_empty() || self.ended {
            return;
        }
        let Ok(line) = serde_json::from_slice::<Value>(raw) else {
            sse::write_event(out, None, None, &String::from_utf8_lossy(raw));
            return;
        };
        if let Some(error) = line.get("error") {
            sse::write_json(out, &json!({ "error": error_object(error) }));
            self.ended = true;
            return;
        }
        let delta = delta(&line["message"], &mut self.tools);
        if !delta.is_empty() {
            let choices = json!([{"index": 0, "delta": delta, "finish_reason": null}]);
            sse::write_json(out, &self.chunk(&line, choices));
        }
        if line["done"] == json!(true) {
            let reason = finish_reason(&line, self.tools > 0);
            let choices = json!([{"index": 0, "delta": {}, "finish_reason": reason}]);
            sse::write_json(out, &self.chunk(&line, choices));
            if let Some(usage) = usage(&line) {
                let mut last = self.chunk(&line, json!([]));
                last["usage"] = usage;
                sse::write_json(out, &last);
            }
            out.extend_from_slice(sse::DONE);
            self.ended = true;
        }
    }
}

impl Recode for Lines {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            self.line.extend_from_slice(piece);
            if self.line.len() > self.max_line {
                return Err(ResponseBodyError::LineTooLong(self.max_line));
            }
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                self.line(&line, out);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), ResponseBodyError> {
        let line = std::mem::take(&mut self.line);
        self.line(&line, out);
        Ok(())
    }
}

/// A whole `/api/chat` answer as a `chat.completion` (an error answer as an
/// OpenAI error body).
pub(crate) fn completion(answer: Value) -> Value {
    if let Some(error) = answer.get("error") {
        return json!({ "error": error_object(error) });
    }
    let mut tools = 0;
    let mut message = delta(&answer["message"], &mut tools);
    message.insert("role".into(), json!("assistant"));
    if !message.contains_key("content") {
        message.insert("content".into(), json!(""));
    }
    if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
        for call in calls {
            call.as_object_mut().map(|c| c.remove("index"));
        }
    }
    let mut completion = json!({
        "id": crate::ids::new_id("chatcmpl"), "object": "chat.completion", "created": crate::clock::now_ms() / 1000,
        "model": answer["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(&answer, tools > 0)}],
    });
    if let Some(usage) = usage(&answer) {
        completion["usage"] = usage;
    }
    completion
}

/// An Ollama `message` as an OpenAI delta (no `role`): `thinking` as
/// `reasoning_content`, tool calls numbered from `*tools` on.
fn delta(message: &Value, tools: &mut u32) -> Map<String, Value> {
    let mut delta = Map::new();
    let text = |key: &str| message.get(key).and_then(Value::as_str).filter(|t| !t.is_empty());
    if let Some(thinking) = text("thinking") {
        delta.insert("reasoning_content".into(), json!(thinking));
    }
    if let Some(content) = text("content") {
        delta.insert("content".into(), json!(content));
    }
    let calls = message.get("tool_calls").and_then(Value::as_array);
    if let Some(calls) = calls.filter(|c| !c.is_empty()) {
        let calls = calls.iter().map(|call| {
            let function = &call["function"];
            let arguments = match &function["arguments"] {
                Value::String(text) => text.clone(),
                Value::Null => "{}".into(),
                other => other.to_string(),
            };
            let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
            let index = *tools;
            *tools += 1;
            json!({"index": index, "id": id.unwrap_or_else(|| crate::ids::new_id("call")), "type": "function",
                   "function": {"name": function["name"], "arguments": arguments}})
        });
        delta.insert("tool_calls".into(), Value::Array(calls.collect()));
    }
    delta
}

/// OpenAI's finish reason for a `done` line: `length` when Ollama says so,
/// `tool_calls` when the answer called tools, else `stop`.
fn finish_reason(line: &Value, called_tools: bool) -> &'static str {
    match line.get("done_reason").and_then(Value::as_str) {
        Some("length") => "length",
        _ if called_tools => "tool_calls",
        _ => "stop",
    }
}

/// `prompt_eval_count` and `eval_count` as OpenAI usage.
fn usage(line: &Value) -> Option<Value> {
    let prompt = line.get("prompt_eval_count").and_then(Value::as_u64);
    let completion = line.get("eval_count").and_then(Value::as_u64);
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let (prompt, completion) = (prompt.unwrap_or(0), completion.unwrap_or(0));
    Some(
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}),
    )
}

/// Ollama's `error` (a string) as the object of an OpenAI error.
fn error_object(error: &Value) -> Value {
    match error {
        Value::Object(_) => error.clone(),
        Value::String(message) => {
            json!({"message": message, "type": "upstream_error", "param": null, "code": null})
        }
        other => json!({"message": other.to_string(), "type": "upstream_error", "param": null, "code": null}),
    }
}
