//! Builds the assistant UIMessage from the UI chunks the loop sends, the way the AI
//! SDK client does (`processUIMessageStream`), so the stored message is exactly what
//! the client shows.
//!
//! Text and reasoning parts are found by their stream ids, tool parts by
//! `toolCallId`; ids are only tracked for the current stream, as on the client.

use super::message::{Part, TextState, ToolApproval, ToolPart, ToolState, UiMessage};
use crate::llm::UiChunk;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The assistant message being streamed.
pub(crate) struct MessageBuilder {
    message: UiMessage,
    /// Stream id of an open text or reasoning part -> its index in `parts`.
    open: HashMap<String, usize>,
}

impl MessageBuilder {
    pub(crate) fn new(message: UiMessage) -> MessageBuilder {
        MessageBuilder {
            message,
            open: HashMap::new(),
        }
    }

    pub(crate) fn message(&self) -> &UiMessage {
        &self.message
    }

    pub(crate) fn message_mut(&mut self) -> &mut UiMessage {
        &mut self.message
    }

    /// The stream id of each text or reasoning part still open, with its index.
    pub(crate) fn open_parts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.open.iter().map(|(id, &i)| (id.as_str(), i))
    }

    /// The newest tool part of the call `id`.
    fn tool_mut(&mut self, id: &str) -> Option<&mut ToolPart> {
        self.message.parts.iter_mut().rev().find_map(|p| match p {
            Part::Tool(t) if t.tool_call_id == id => Some(t),
            _ => None,
        })
    }

    /// The tool part of the call `id`, added first if no `tool-input-start` came.
    fn tool_or_new(&mut self, id: &str, name: &str) -> &mut ToolPart {
        if self.tool_mut(id).is_none() {
            let part = ToolPart::new(id.to_string(), name.to_string());
            self.message.parts.push(Part::Tool(part));
        }
        self.tool_mut(id).expect("just ensured")
    }

    /// Applies one chunk.
    pub(crate) fn apply(&mut self, chunk: &UiChunk) {
        match chunk {
            UiChunk::Start { message_metadata, .. } | UiChunk::Finish { message_metadata, .. } => {
                if let Some(meta) = message_metadata {
                    self.message.merge_metadata(meta);
                }
            }
            UiChunk::MessageMetadata { message_metadata } => self.message.merge_metadata(message_metadata),
            UiChunk::StartStep => self.message.parts.push(Part::StepStart),
            UiChunk::FinishStep => self.open.clear(),
            UiChunk::TextStart { id } => self.open_part(id, |text, state| Part::Text { text, state }),
            UiChunk::ReasoningStart { id, .. } => {
                self.open_part(id, |text, state| Part::Reasoning { text, state })
            }
            UiChunk::TextDelta { id, delta } | UiChunk::ReasoningDelta { id, delta } => {
                if let Some(&i) = self.open.get(id.as_str())
                    && let Some(Part::Text { text, .. } | Part::Reasoning { text, .. }) =
                        self.message.parts.get_mut(i)
                {
                    text.push_str(delta);
                }
            }
            UiChunk::TextEnd { id } | UiChunk::ReasoningEnd { id, .. } => {
                if let Some(i) = self.open.remove(id.as_str()) {
                    self.mark_done(i);
                }
            }
            UiChunk::SourceUrl {
                source_id,
                url,
                title,
            } => {
                let mut v = json!({ "type": "source-url", "sourceId": source_id, "url": url });
                if let Some(title) = title {
                    v["title"] = Value::String(title.clone());
                }
                self.message.parts.push(Part::Other(v));
            }
            UiChunk::File { url, media_type } => {
                self.message.parts.push(Part::Other(
                    json!({ "type": "file", "url": url, "mediaType": media_type }),
                ));
            }
            UiChunk::Data {
                name,
                id,
                data,
                transient,
            } => self.apply_data(name, id.as_deref(), data, *transient),
            UiChunk::Error { error_text } => self.message.merge_metadata(&json!({ "error": error_text })),
            UiChunk::Abort { .. } => self.message.merge_metadata(&json!({ "aborted": true })),
            UiChunk::ToolInputStart { .. }
            | UiChunk::ToolInputDelta { .. }
            | UiChunk::ToolInputAvailable { .. }
            | UiChunk::ToolInputError { .. }
            | UiChunk::ToolOutputAvailable { .. }
            | UiChunk::ToolOutputError { .. }
            | UiChunk::ToolApprovalRequest { .. }
            | UiChunk::ToolOutputDenied { .. } => self.apply_tool(chunk),
        }
    }

    /// Starts a text or reasoning part for the stream id `id`.
    fn open_part(&mut self, id: &str, part: fn(String, Option<TextState>) -> Part) {
        self.open.insert(id.to_string(), self.message.parts.len());
        self.message
            .parts
            .push(part(String::new(), Some(TextState::Streaming)));
    }

    fn mark_done(&mut self, i: usize) {
        if let Some(Part::Text { state, .. } | Part::Reasoning { state, .. }) = self.message.parts.get_mut(i)
        {
            *state = Some(TextState::Done);
        }
    }

    /// The `tool-*` chunks (the input's deltas are not kept, as on the client).
    fn apply_tool(&mut self, chunk: &UiChunk) {
        match chunk {
            UiChunk::ToolInputStart {
                tool_call_id,
                tool_name,
                dynamic,
                ..
            } => {
                let mut t = ToolPart::new(tool_call_id.to_string(), tool_name.clone());
                t.dynamic = dynamic.unwrap_or(false);
                self.message.parts.push(Part::Tool(t));
            }
            UiChunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
                provider_metadata,
            } => {
                let t = self.tool_or_new(tool_call_id, tool_name);
                t.state = ToolState::InputAvailable;
                t.input = Some(input.clone());
                t.call_provider_metadata = provider_metadata.clone();
            }
            UiChunk::ToolInputError {
                tool_call_id,
                tool_name,
                input,
                error_text,
            } => {
                let t = self.tool_or_new(tool_call_id, tool_name);
                t.state = ToolState::OutputError;
                t.input = None;
                t.raw_input = Some(input.clone());
                t.error_text = Some(error_text.clone());
            }
            UiChunk::ToolOutputAvailable {
                tool_call_id, output, ..
            } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::OutputAvailable;
                    t.output = Some(output.clone());
                }
            }
            UiChunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::OutputError;
                    t.error_text = Some(error_text.clone());
                }
            }
            UiChunk::ToolApprovalRequest {
                approval_id,
                tool_call_id,
                reason,
            } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::ApprovalRequested;
                    t.approval = Some(Box::new(ToolApproval::requested(
                        approval_id.clone(),
                        reason.clone(),
                    )));
                }
            }
            UiChunk::ToolOutputDenied { tool_call_id } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::OutputDenied;
                }
            }
            _ => {}
        }
    }

    /// A `data-<name>` part: a later one with the same id replaces the earlier; a
    /// transient one is not kept.
    fn apply_data(&mut self, name: &str, id: Option<&str>, data: &Value, transient: Option<bool>) {
        if transient == Some(true) {
            return;
        }
        let ty = format!("data-{name}");
        let existing = id.and_then(|id| {
            self.message
                .parts
                .iter()
                .position(|p| matches!(p, Part::Other(v) if v["type"] == ty.as_str() && v["id"] == id))
        });
        let mut v = json!({ "type": ty, "data": data });
        if let Some(id) = id {
            v["id"] = Value::String(id.to_string());
        }
        match existing {
            Some(i) => self.message.parts[i] = Part::Other(v),
            None => self.message.parts.push(Part::Other(v)),
        }
    }

    /// Drops the parts after the last `step-start`: a failed attempt's partial
    /// output, which the next target's answer replaces (see `llm::route`).
    pub(crate) fn retract_attempt(&mut self) {
        let from = self
            .message
            .parts
            .iter()
            .rposition(|p| matches!(p, Part::StepStart))
            .map_or(0, |i| i + 1);
        self.message.parts.truncate(from);
        self.open.clear();
    }

    /// Marks every still-streaming text or reasoning part done (an aborted turn).
    pub(crate) fn close_open_parts(&mut self) {
        let open: Vec<usize> = self.open.drain().map(|(_, i)| i).collect();
        for i in open {
            self.mark_done(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::Role;

    #[test]
    fn a_streamed_step_becomes_the_clients_parts() {
        let mut b = MessageBuilder::new(UiMessage::new("a1".into(), Role::Assistant));
        let chunks = vec![
            UiChunk::Start {
                message_id: Some("a1".into()),
                message_metadata: None,
            },
            UiChunk::StartStep,
            UiChunk::ReasoningStart {
                id: "r".into(),
                provider_metadata: None,
            },
            UiChunk::ReasoningDelta {
                id: "r".into(),
                delta: "think".into(),
            },
            UiChunk::ReasoningEnd {
                id: "r".into(),
                provider_metadata: None,
            },
            UiChunk::TextStart { id: "t".into() },
            UiChunk::TextDelta {
                id: "t".into(),
                delta: "Hel".into(),
            },
            UiChunk::TextDelta {
                id: "t".into(),
                delta: "lo".into(),
            },
            UiChunk::TextEnd { id: "t".into() },
            UiChunk::ToolInputStart {
                tool_call_id: "c1".into(),
                tool_name: "hub_search".into(),
                dynamic: None,
                title: None,
            },
            UiChunk::ToolInputDelta {
                tool_call_id: "c1".into(),
                input_text_delta: "{}".into(),
            },
            UiChunk::ToolInputAvailable {
                tool_call_id: "c1".into(),
                tool_name: "hub_search".into(),
                input: json!({}),
                provider_metadata: None,
            },
            UiChunk::ToolInputStart {
                tool_call_id: "c2".into(),
                tool_name: "hub_call".into(),
                dynamic: None,
                title: None,
            },
            UiChunk::ToolInputError {
                tool_call_id: "c2".into(),
                tool_name: "hub_call".into(),
                input: json!("{x"),
                error_text: "bad".into(),
            },
            UiChunk::ToolOutputAvailable {
                tool_call_id: "c1".into(),
                output: json!([1]),
                preliminary: None,
            },
            UiChunk::FinishStep,
            UiChunk::StartStep,
            UiChunk::TextStart { id: "t".into() },
            UiChunk::TextDelta {
                id: "t".into(),
                delta: "cut".into(),
            },
            UiChunk::Abort { reason: None },
            UiChunk::Finish {
                finish_reason: None,
                message_metadata: Some(json!({"usage": {"inputTokens": 1}})),
            },
        ];
        for c in &chunks {
            b.apply(c);
        }
        b.close_open_parts();
        let m = serde_json::to_value(b.message()).unwrap();
        assert_eq!(
            m,
            json!({"id": "a1", "role": "assistant", "metadata": {"aborted": true, "usage": {"inputTokens": 1}}, "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "think", "state": "done"},
                {"type": "text", "text": "Hello", "state": "done"},
                {"type": "tool-hub_search", "toolCallId": "c1", "state": "output-available", "input": {}, "output": [1]},
                {"type": "tool-hub_call", "toolCallId": "c2", "state": "output-error", "input": null, "rawInput": "{x", "errorText": "bad"},
                {"type": "step-start"},
                {"type": "text", "text": "cut", "state": "done"}
            ]})
        );
    }
}
