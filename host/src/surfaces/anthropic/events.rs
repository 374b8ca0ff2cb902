//! UI chunks → Anthropic Messages stream events (folded into one message by
//! [`super::collect`] for a request that did not ask to stream).
//!
//! The hub has one streamed representation of a model step and of an agent turn:
//! the UI chunks `llm::transform` makes from OpenAI chunks (and the agent loop
//! adds tool results to). [`Encoder`] is a pure state machine from those chunks to
//! Anthropic's sequence: `message_start`, a `ping`, per content block
//! `content_block_start` / `content_block_delta`* / `content_block_stop`, then
//! `message_delta` (stop reason, usage) and `message_stop`; a failure is one
//! `error` event, after which nothing follows (as Anthropic ends such a stream).
//!
//! Anthropic clients expect blocks strictly one after another (the SDKs apply a
//! delta to the last block), while OpenAI providers may interleave parallel tool
//! calls and text. So blocks are kept in the order they began and only the oldest
//! unfinished one is on the wire; later blocks wait with their deltas and follow
//! when it stops.
//!
//! Tool calls: with the client's own tools a call is a `tool_use` block whose input
//! streams as `input_json_delta`. In hub-tools mode the hub runs the call, so it is
//! an `mcp_tool_use` block (server `wasmhub`, input complete in the block's start)
//! followed by an `mcp_tool_result` block, the shapes Anthropic's MCP connector
//! uses for tools a server ran on the client's behalf.

use crate::llm::anthropic_wire::{self, anthropic_usage};
use crate::llm::{FinishReason, UiChunk, Usage};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The `server_name` of the hub's tool blocks in hub-tools mode.
pub(crate) const HUB_SERVER: &str = "wasmhub";

/// One stream event: its `event:` name and its data (which repeats the name as
/// `type`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AnthropicEvent {
    /// The SSE event name.
    pub name: &'static str,
    /// The JSON data.
    pub data: Value,
}

impl AnthropicEvent {
    fn new(name: &'static str, mut data: Value) -> AnthropicEvent {
        if let Value::Object(obj) = &mut data {
            obj.insert("type".into(), Value::String(name.into()));
        }
        AnthropicEvent { name, data }
    }
}

/// Who runs the tool calls of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolMode {
    /// The client: calls are `tool_use` blocks and the answer stops for them.
    Client,
    /// The hub (the agent loop's meta-tools): calls and their results are shown as
    /// `mcp_tool_use` / `mcp_tool_result` blocks.
    Hub,
}

/// One content block of the answer.
#[derive(Debug)]
struct Block {
    /// The block as `content_block_start` shows it.
    start: Value,
    /// False while its start is not known yet (a hub tool call's input).
    ready: bool,
    /// Deltas not yet sent.
    deltas: Vec<Value>,
    /// Whether any delta was made for it (a tool call whose input never streamed
    /// gets its whole input as one delta).
    had_deltas: bool,
    opened: bool,
    ended: bool,
}

/// The state machine; see the module docs.
pub(crate) struct Encoder {
    mode: ToolMode,
    message_id: String,
    model: String,
    begun: bool,
    ended: bool,
    blocks: Vec<Block>,
    /// The oldest block not yet stopped on the wire.
    wire: usize,
    /// Text and reasoning part ids → block.
    parts: HashMap<String, usize>,
    /// Tool call ids → the block of the call.
    tools: HashMap<String, usize>,
}

impl Encoder {
    /// An encoder of one answer for `model` (the name the client sent).
    pub(crate) fn new(mode: ToolMode, model: &str) -> Encoder {
        Encoder {
            mode,
            message_id: crate::ids::new_id("msg"),
            model: model.to_string(),
            begun: false,
            ended: false,
            blocks: Vec::new(),
            wire: 0,
            parts: HashMap::new(),
            tools: HashMap::new(),
        }
    }

    /// `message_start` and a `ping`, once.
    pub(crate) fn begin(&mut self, out: &mut Vec<AnthropicEvent>) {
        if std::mem::replace(&mut self.begun, true) {
            return;
        }
        out.push(AnthropicEvent::new(
            "message_start",
            json!({ "message": {
                "id": self.message_id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": { "input_tokens": 0, "output_tokens": 0 },
            }}),
        ));
        out.push(AnthropicEvent::new("ping", json!({})));
    }

    /// Whether the answer is complete (`message_stop` or `error` was made).
    pub(crate) fn is_ended(&self) -> bool {
        self.ended
    }

    /// The events for `chunk`. Chunks after the end are ignored.
    pub(crate) fn push(&mut self, chunk: &UiChunk, out: &mut Vec<AnthropicEvent>) {
        self.begin(out);
        if self.ended {
            return;
        }
        match chunk {
            UiChunk::TextStart { id } => self.open_part(id, json!({ "type": "text", "text": "" }), out),
            UiChunk::ReasoningStart {
                id,
                provider_metadata,
            } => {
                let redacted = anthropic_metadata(provider_metadata, "redactedData");
                let block = match redacted {
                    // Withheld reasoning goes back to the client whole, as it came.
                    Some(data) => json!({ "type": "redacted_thinking", "data": data }),
                    None => json!({ "type": "thinking", "thinking": "", "signature": "" }),
                };
                self.open_part(id, block, out)
            }
            UiChunk::TextDelta { id, delta } => {
                self.part_delta(id, json!({ "type": "text_delta", "text": delta }), out)
            }
            UiChunk::ReasoningDelta { id, delta } => {
                self.part_delta(id, json!({ "type": "thinking_delta", "thinking": delta }), out)
            }
            UiChunk::ReasoningEnd {
                id,
                provider_metadata,
            } => {
                // Signed: the client sends the block back in a tool-use loop.
                let signature = anthropic_metadata(provider_metadata, "signature");
                if let Some(signature) = signature {
                    let delta = json!({ "type": "signature_delta", "signature": signature });
                    self.part_delta(id, delta, out);
                }
                if let Some(&b) = self.parts.get(id.as_str()) {
                    self.end(b, out);
                }
            }
            UiChunk::TextEnd { id } => {
                if let Some(&b) = self.parts.get(id.as_str()) {
                    self.end(b, out);
                }
            }
            UiChunk::Error { error_text } => {
                out.push(AnthropicEvent::new(
                    "error",
                    json!({ "error": { "type": "api_error", "message": error_text } }),
                ));
                self.ended = true;
            }
            UiChunk::Finish {
                finish_reason,
                message_metadata,
            } => self.finish(*finish_reason, message_metadata.as_ref(), out),
            _ => self.push_tool(chunk, out),
        }
    }

    fn push_tool(&mut self, chunk: &UiChunk, out: &mut Vec<AnthropicEvent>) {
        match (self.mode, chunk) {
            (
                _,
                UiChunk::ToolInputStart {
                    tool_call_id,
                    tool_name,
                    ..
                },
            ) => {
                let (start, ready) = match self.mode {
                    ToolMode::Client => (tool_use(tool_call_id, tool_name), true),
                    ToolMode::Hub => (hub_tool_use(tool_call_id, tool_name, json!({})), false),
                };
                let b = self.add(start, ready, false, out);
                self.tools.insert(tool_call_id.to_string(), b);
            }
            (
                ToolMode::Client,
                UiChunk::ToolInputDelta {
                    tool_call_id,
                    input_text_delta,
                },
            ) => {
                if let Some(&b) = self.tools.get(tool_call_id.as_str()) {
                    let delta = json!({ "type": "input_json_delta", "partial_json": input_text_delta });
                    self.delta(b, delta, out);
                }
            }
            (
                ToolMode::Client,
                UiChunk::ToolInputAvailable {
                    tool_call_id,
                    tool_name,
                    input,
                    ..
                },
            ) => {
                let b = self.tool_block(tool_call_id, tool_name, out);
                let empty = input.as_object().is_some_and(Map::is_empty);
                if !self.blocks[b].had_deltas && !empty {
                    let delta = json!({ "type": "input_json_delta", "partial_json": input.to_string() });
                    self.delta(b, delta, out);
                }
                self.end(b, out);
            }
            (
                ToolMode::Client,
                UiChunk::ToolInputError {
                    tool_call_id,
                    tool_name,
                    ..
                },
            ) => {
                let b = self.tool_block(tool_call_id, tool_name, out);
                self.end(b, out);
            }
            (
                ToolMode::Hub,
                UiChunk::ToolInputAvailable {
                    tool_call_id,
                    tool_name,
                    input,
                    ..
                },
            ) => {
                self.hub_call(tool_call_id, tool_name, input.clone(), out);
            }
            (
                ToolMode::Hub,
                UiChunk::ToolInputError {
                    tool_call_id,
                    tool_name,
                    error_text,
                    ..
                },
            ) => {
                self.hub_call(tool_call_id, tool_name, json!({}), out);
                self.hub_result(tool_call_id, Err(error_text), out);
            }
            (
                ToolMode::Hub,
                UiChunk::ToolOutputAvailable {
                    tool_call_id, output, ..
                },
            ) => {
                let text = match output {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                };
                self.hub_result(tool_call_id, Ok(&text), out);
            }
            (
                ToolMode::Hub,
                UiChunk::ToolOutputError {
                    tool_call_id,
                    error_text,
                },
            ) => {
                self.hub_result(tool_call_id, Err(error_text), out);
            }
            (ToolMode::Hub, UiChunk::ToolApprovalRequest { tool_call_id, .. }) => {
                let why = "the call did not run: the hub's approval policy asks a user to approve it, \
                           which the Anthropic surface cannot ask for; use the hub's chat or MCP surface";
                self.hub_result(tool_call_id, Err(why), out);
            }
            (ToolMode::Hub, UiChunk::ToolOutputDenied { tool_call_id }) => {
                self.hub_result(
                    tool_call_id,
                    Err("the user denied this call; it did not run"),
                    out,
                );
            }
            // Steps, metadata, sources, files, data parts and aborts have no
            // counterpart in a Messages answer.
            _ => {}
        }
    }

    /// The block of a client tool call, added if its start never came.
    fn tool_block(&mut self, id: &str, name: &str, out: &mut Vec<AnthropicEvent>) -> usize {
        if let Some(&b) = self.tools.get(id) {
            return b;
        }
        let b = self.add(tool_use(id, name), true, false, out);
        self.tools.insert(id.to_string(), b);
        b
    }

    /// A hub tool call whose input is known: its block becomes ready and complete.
    fn hub_call(&mut self, id: &str, name: &str, input: Value, out: &mut Vec<AnthropicEvent>) {
        let start = hub_tool_use(id, name, input);
        match self.tools.get(id) {
            Some(&b) => {
                self.blocks[b].start = start;
                self.blocks[b].ready = true;
                self.end(b, out);
            }
            None => {
                let b = self.add(start, true, true, out);
                self.tools.insert(id.to_string(), b);
            }
        }
    }

    /// The result block of hub tool call `id`: its output text, or the error.
    fn hub_result(&mut self, id: &str, result: Result<&str, &str>, out: &mut Vec<AnthropicEvent>) {
        let (is_error, text) = match result {
            Ok(text) => (false, text),
            Err(message) => (true, message),
        };
        let block = json!({
            "type": "mcp_tool_result", "tool_use_id": id, "is_error": is_error,
            "content": [{ "type": "text", "text": text }],
        });
        self.add(block, true, true, out);
    }

    fn open_part(&mut self, id: &str, start: Value, out: &mut Vec<AnthropicEvent>) {
        let b = self.add(start, true, false, out);
        self.parts.insert(id.to_string(), b);
    }

    fn part_delta(&mut self, id: &str, delta: Value, out: &mut Vec<AnthropicEvent>) {
        if let Some(&b) = self.parts.get(id) {
            self.delta(b, delta, out);
        }
    }

    fn add(&mut self, start: Value, ready: bool, ended: bool, out: &mut Vec<AnthropicEvent>) -> usize {
        self.blocks.push(Block {
            start,
            ready,
            deltas: Vec::new(),
            had_deltas: false,
            opened: false,
            ended,
        });
        self.pump(out);
        self.blocks.len() - 1
    }

    fn delta(&mut self, b: usize, delta: Value, out: &mut Vec<AnthropicEvent>) {
        let block = &mut self.blocks[b];
        if block.ended {
            return;
        }
        block.had_deltas = true;
        block.deltas.push(delta);
        self.pump(out);
    }

    fn end(&mut self, b: usize, out: &mut Vec<AnthropicEvent>) {
        self.blocks[b].ended = true;
        self.pump(out);
    }

    /// Sends what the oldest unfinished block has, and the blocks after it once it
    /// stops.
    fn pump(&mut self, out: &mut Vec<AnthropicEvent>) {
        while let Some(block) = self.blocks.get_mut(self.wire) {
            if !block.ready {
                return;
            }
            let index = self.wire;
            if !block.opened {
                block.opened = true;
                out.push(AnthropicEvent::new(
                    "content_block_start",
                    json!({ "index": index, "content_block": block.start }),
                ));
            }
            for delta in block.deltas.drain(..) {
                out.push(AnthropicEvent::new(
                    "content_block_delta",
                    json!({ "index": index, "delta": delta }),
                ));
            }
            if !block.ended {
                return;
            }
            out.push(AnthropicEvent::new(
                "content_block_stop",
                json!({ "index": index }),
            ));
            self.wire += 1;
        }
    }

    fn finish(
        &mut self,
        reason: Option<FinishReason>,
        metadata: Option<&Value>,
        out: &mut Vec<AnthropicEvent>,
    ) {
        for block in &mut self.blocks {
            block.ready = true;
            block.ended = true;
        }
        self.pump(out);
        let hub_reason = metadata
            .and_then(|m| m.get("finishReason"))
            .and_then(Value::as_str);
        let usage = metadata
            .and_then(|m| m.get("usage"))
            .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
            .unwrap_or_default();
        out.push(AnthropicEvent::new(
            "message_delta",
            json!({
                "delta": { "stop_reason": stop_reason(self.mode, reason, hub_reason), "stop_sequence": null },
                "usage": anthropic_usage(&usage),
            }),
        ));
        out.push(AnthropicEvent::new("message_stop", json!({})));
        self.ended = true;
    }
}

fn tool_use(id: &str, name: &str) -> Value {
    json!({ "type": "tool_use", "id": id, "name": name, "input": {} })
}

fn hub_tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({ "type": "mcp_tool_use", "id": id, "name": name, "server_name": HUB_SERVER, "input": input })
}

/// Anthropic's `stop_reason` for how the step or turn ended. In hub-tools mode a
/// turn that hit the step limit is `pause_turn` (send the answer back to go on).
pub(crate) fn stop_reason(mode: ToolMode, reason: Option<FinishReason>, hub: Option<&str>) -> &'static str {
    if hub == Some("max-steps") {
        return "pause_turn";
    }
    match reason {
        // Hub tools ran inside the turn: the client has no call to answer.
        Some(FinishReason::ToolCalls) if mode != ToolMode::Client => "end_turn",
        _ => anthropic_wire::stop_reason(reason),
    }
}

/// `providerMetadata.anthropic.KEY` of a UI chunk: what Anthropic attached to a
/// reasoning part (`signature`, `redactedData`).
fn anthropic_metadata<'a>(provider_metadata: &'a Option<Value>, key: &str) -> Option<&'a Value> {
    provider_metadata.as_ref()?.get("anthropic")?.get(key)
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
