//! Anthropic stream events folded into the one `Message` a request that did not
//! ask to stream gets: the same fold the SDKs apply to a stream (blocks appended in
//! order, text and thinking deltas appended, tool input JSON parsed when its block
//! stops, the stop reason and usage of `message_delta`); an `error` event makes the
//! answer an error.

use super::events::AnthropicEvent;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Folds the events of one answer into the `Message` a non-streamed request gets.
#[derive(Default)]
pub(crate) struct Collector {
    message: Value,
    /// Tool input text per block index, parsed when the block stops.
    json: HashMap<usize, String>,
    error: Option<AnswerFailed>,
}

/// An answer that ended in an `error` event: its message (the upstream's failure,
/// as the client would have read it from the stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AnswerFailed(pub String);

impl std::fmt::Display for AnswerFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AnswerFailed {}

impl Collector {
    /// Applies one event.
    pub(crate) fn apply(&mut self, event: &AnthropicEvent) {
        let d = &event.data;
        let index = d.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match event.name {
            "message_start" => self.message = d["message"].clone(),
            "content_block_start" => {
                if let Some(content) = self.message["content"].as_array_mut() {
                    content.push(d["content_block"].clone());
                }
            }
            "content_block_delta" => self.delta(index, &d["delta"]),
            "content_block_stop" => {
                if let Some(text) = self.json.remove(&index) {
                    self.message["content"][index]["input"] =
                        serde_json::from_str(&text).unwrap_or(json!({}));
                }
            }
            "message_delta" => {
                if let Some(Value::Object(delta)) = d.get("delta") {
                    for (k, v) in delta {
                        self.message[k] = v.clone();
                    }
                }
                if let Some(usage) = d.get("usage") {
                    self.message["usage"] = usage.clone();
                }
            }
            "error" => {
                self.error = d
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(|m| AnswerFailed(m.to_string()))
            }
            _ => {}
        }
    }

    fn delta(&mut self, index: usize, delta: &Value) {
        let block = &mut self.message["content"][index];
        let append = |block: &mut Value, key: &str, text: &Value| {
            let mut s = block[key].as_str().unwrap_or("").to_string();
            s.push_str(text.as_str().unwrap_or(""));
            block[key] = Value::String(s);
        };
        match delta["type"].as_str() {
            Some("text_delta") => append(block, "text", &delta["text"]),
            Some("thinking_delta") => append(block, "thinking", &delta["thinking"]),
            Some("signature_delta") => append(block, "signature", &delta["signature"]),
            Some("input_json_delta") => self
                .json
                .entry(index)
                .or_default()
                .push_str(delta["partial_json"].as_str().unwrap_or("")),
            _ => {}
        }
    }

    /// The message, or the error that ended the answer.
    pub(crate) fn finish(self) -> Result<Value, AnswerFailed> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.message),
        }
    }
}
