//! Anthropic's Messages answers read as OpenAI ones: the event stream as chunks
//! ([`Events`]), a whole message as a `chat.completion` ([`completion`]).
//!
//! Shapes from Anthropic's API reference ("Streaming Messages": the basic, tool
//! use and extended thinking examples, error events; "Messages": the response
//! object): `message_start` (id, model, input and cache usage),
//! `content_block_start` / `content_block_delta` (`text_delta`,
//! `thinking_delta`, `input_json_delta`, `signature_delta`) /
//! `content_block_stop` (a finished `thinking` or `redacted_thinking` block is
//! given whole, signed, as the delta's `extra_content.anthropic.thinking_blocks`,
//! see `llm::anthropic_wire`), `message_delta` (stop reason, output
//! tokens), `message_stop`, `ping`, and `error`, also mid-stream. Cached input
//! (`cache_read_input_tokens`, `cache_creation_input_tokens`) counts into
//! `prompt_tokens`, the read part also as `prompt_tokens_details.cached_tokens`.

use super::error_body;
use super::sse_events::Translate;
use crate::llm::anthropic_wire::{
    REDACTED_THINKING, TEXT, THINKING, TOOL_USE, error_status, finish_reason, is_thinking_block,
    openai_usage, thinking_extension,
};
use crate::sse;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Anthropic's stream as OpenAI SSE chunks (read through `sse_events::Sse`).
pub(crate) struct Events {
    id: String,
    model: Value,
    /// Content block index → tool call index, for the tool blocks.
    tools: HashMap<u64, u64>,
    /// Content block index → the thinking block read so far.
    thinking: HashMap<u64, Value>,
    /// `message_start`'s usage, completed by `message_delta`'s.
    usage: Value,
    /// `message_stop` or an `error` was read: what follows is ignored.
    ended: bool,
}

impl Events {
    pub(crate) fn new() -> Events {
        Events {
            id: String::new(),
            model: Value::Null,
            tools: HashMap::new(),
            thinking: HashMap::new(),
            usage: json!({}),
            ended: false,
        }
    }

    fn chunk(&self, out: &mut Vec<u8>, delta: Value, finish: Option<&str>) {
        let chunk = json!({"id": self.id, "object": "chat.completion.chunk", "created": crate::clock::now_ms() / 1000,
                           "model": self.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        sse::write_json(out, &chunk);
    }

    fn read(&mut self, data: &str, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            // Passed on as it is: the hub skips and counts a malformed chunk.
            sse::write_event(out, None, None, data);
            return;
        };
        match event["type"].as_str().unwrap_or("") {
            "message_start" => {
                let message = &event["message"];
                self.id = message["id"].as_str().unwrap_or("").to_string();
                self.model = message["model"].clone();
                merge(&mut self.usage, &message["usage"]);
            }
            "content_block_start" => {
                let block = &event["content_block"];
                if block["type"] == THINKING || block["type"] == REDACTED_THINKING {
                    self.thinking
                        .insert(event["index"].as_u64().unwrap_or(0), block.clone());
                }
                if block["type"] == TOOL_USE {
                    let index = self.tools.len() as u64;
                    self.tools.insert(event["index"].as_u64().unwrap_or(0), index);
                    let call = json!({"index": index, "id": block["id"], "type": "function",
                                      "function": {"name": block["name"], "arguments": ""}});
                    self.chunk(out, json!({ "tool_calls": [call] }), None);
                }
            }
            "content_block_delta" => self.delta(&event, out),
            "content_block_stop" => {
                // A whole thinking block, signed, for the turn that sends it back.
                let block = self.thinking.remove(&event["index"].as_u64().unwrap_or(0));
                if let Some(block) = block.filter(is_thinking_block) {
                    let delta = json!({ "extra_content": thinking_extension(vec![block]) });
                    self.chunk(out, delta, None);
                }
            }
            "message_delta" => {
                merge(&mut self.usage, &event["usage"]);
                let reason = finish_reason(event.pointer("/delta/stop_reason").and_then(Value::as_str));
                self.chunk(out, json!({}), Some(reason));
            }
            "message_stop" => {
                if let Some(usage) = openai_usage(&self.usage) {
                    let chunk = json!({"id": self.id, "object": "chat.completion.chunk", "model": self.model,
                                       "created": crate::clock::now_ms() / 1000, "choices": [], "usage": usage});
                    sse::write_json(out, &chunk);
                }
                out.extend_from_slice(sse::DONE);
                self.ended = true;
            }
            "error" => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the upstream failed");
                sse::write_json(out, &error_frame(message, &event["error"]["type"]));
                self.ended = true;
            }
            _ => {} // `ping` and event types newer than this code.
        }
    }

    /// Appends `text` to `key` of the thinking block `event` is about.
    fn append(&mut self, event: &Value, key: &str, text: &str) {
        if let Some(block) = self.thinking.get_mut(&event["index"].as_u64().unwrap_or(0)) {
            let mut joined = block[key].as_str().unwrap_or("").to_string();
            joined.push_str(text);
            block[key] = json!(joined);
        }
    }

    fn delta(&mut self, event: &Value, out: &mut Vec<u8>) {
        let delta = &event["delta"];
        let text = |key: &str| delta[key].as_str().unwrap_or("").to_string();
        match delta["type"].as_str().unwrap_or("") {
            "text_delta" => self.chunk(out, json!({ "content": text("text") }), None),
            "thinking_delta" => {
                self.append(event, "thinking", &text("thinking"));
                self.chunk(out, json!({ "reasoning_content": text("thinking") }), None)
            }
            "signature_delta" => self.append(event, "signature", &text("signature")),
            "input_json_delta" => {
                let block = event["index"].as_u64().unwrap_or(0);
                if let Some(index) = self.tools.get(&block) {
                    let call = json!({"index": index, "function": {"arguments": text("partial_json")}});
                    self.chunk(out, json!({ "tool_calls": [call] }), None);
                }
            }
            _ => {}
        }
    }
}

impl Translate for Events {
    fn event(&mut self, data: &str, out: &mut Vec<u8>) {
        self.read(data, out);
    }
}

/// A whole Messages response as a `chat.completion` (an error body as an
/// OpenAI error body).
pub(crate) fn completion(message: Value) -> Value {
    if message["type"] == "error" {
        let text = message
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("the upstream failed");
        return error_frame(text, &message["error"]["type"]);
    }
    let (mut text, mut thinking, mut calls) = (String::new(), String::new(), Vec::new());
    let mut signed = Vec::new();
    for block in message["content"].as_array().into_iter().flatten() {
        if is_thinking_block(block) {
            signed.push(block.clone());
        }
        match block["type"].as_str().unwrap_or("") {
            TEXT => text.push_str(block["text"].as_str().unwrap_or("")),
            THINKING => thinking.push_str(block["thinking"].as_str().unwrap_or("")),
            TOOL_USE => calls.push(json!({"id": block["id"], "type": "function",
                "function": {"name": block["name"], "arguments": block["input"].to_string()}})),
            _ => {}
        }
    }
    let mut out = json!({"role": "assistant", "content": text});
    if !thinking.is_empty() {
        out["reasoning_content"] = json!(thinking);
    }
    if !calls.is_empty() {
        out["tool_calls"] = Value::Array(calls);
    }
    if !signed.is_empty() {
        out["extra_content"] = thinking_extension(signed);
    }
    let mut completion = json!({
        "id": message["id"], "object": "chat.completion", "created": crate::clock::now_ms() / 1000, "model": message["model"],
        "choices": [{"index": 0, "message": out, "finish_reason": finish_reason(message["stop_reason"].as_str())}],
    });
    if let Some(usage) = openai_usage(&message["usage"]) {
        completion["usage"] = usage;
    }
    completion
}

/// Adds `from`'s counts to `into` (a `message_delta`'s usage is cumulative, so
/// a key it has replaces the start's).
fn merge(into: &mut Value, from: &Value) {
    if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
        for (k, v) in from {
            if !v.is_null() {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// An OpenAI error body for Anthropic's error of type `kind`: the type kept,
/// the HTTP status the API gives that type as the `code`.
fn error_frame(message: &str, kind: &Value) -> Value {
    let mut frame = error_body(message);
    if let Some(kind) = kind.as_str() {
        frame["error"]["type"] = json!(kind);
        frame["error"]["code"] = json!(error_status(kind));
    }
    frame
}
