//! Assembling tool calls from their streamed fragments: which call a fragment
//! belongs to (by id, then index, then the latest call), its name and arguments as
//! they arrive, its `tool-input-start` and `tool-input-delta` chunks, and at the end
//! of the step the parsed input (`tool-input-available`) or why it failed
//! (`tool-input-error`).

use super::ModelToolCall;
use super::StepTransformer;
use super::arguments;
use crate::llm::openai::ToolCallDelta;
use crate::llm::ui::{Text, UiChunk};
use serde_json::Value;

#[derive(Debug)]
pub(super) struct PendingCall {
    /// A `Text`, like `part_id`: each `tool-input-delta` repeats it.
    id: Text,
    /// Last `index` this call was seen with, for continuations that carry only that.
    index: Option<u32>,
    name: String,
    arguments: String,
    started: bool,
    /// The call's provider extensions (`extra_content`), the latest given.
    extra: Option<Value>,
}

impl PendingCall {
    /// Ends a call of an abandoned attempt: `tool-input-error` if its input had
    /// started streaming (it is never run), nothing otherwise.
    pub(super) fn discard(self, reason: &str, out: &mut Vec<UiChunk>) {
        if self.started {
            out.push(UiChunk::ToolInputError {
                tool_call_id: self.id.into(),
                tool_name: self.name,
                input: Value::String(self.arguments),
                error_text: format!("discarded, not run: {reason}"),
            });
        }
    }
}

impl StepTransformer {
    /// Finds the call a fragment belongs to: a non-empty id names it; otherwise the
    /// latest call seen with the same index; otherwise (no index either) the latest
    /// call. A fragment that matches nothing starts a new call.
    fn call_slot(&mut self, delta: &ToolCallDelta<'_>) -> usize {
        let id = delta.id.as_deref().filter(|id| !id.is_empty());
        let found = match (id, delta.index) {
            (Some(id), _) => self.calls.iter().rposition(|c| c.id == id),
            (None, Some(index)) => self.calls.iter().rposition(|c| c.index == Some(index)),
            (None, None) => self.calls.len().checked_sub(1),
        };
        if let Some(slot) = found {
            if delta.index.is_some() {
                self.calls[slot].index = delta.index;
            }
            return slot;
        }
        let id = match id {
            Some(id) => Text::from(id),
            None => {
                if self.opts.tool_id_prefix.is_empty() {
                    self.opts.tool_id_prefix = crate::ids::new_id("call");
                }
                Text::from(format!("{}_{}", self.opts.tool_id_prefix, self.calls.len()))
            }
        };
        self.calls.push(PendingCall {
            id,
            index: delta.index,
            name: String::new(),
            arguments: String::new(),
            started: false,
            extra: None,
        });
        self.calls.len() - 1
    }

    pub(super) fn push_tool_delta(&mut self, delta: &ToolCallDelta<'_>, out: &mut Vec<UiChunk>) {
        let (name, arguments) = match &delta.function {
            Some(f) => (
                f.name.as_deref().unwrap_or(""),
                f.arguments.as_deref().unwrap_or(""),
            ),
            None => ("", ""),
        };
        // An id-less, name-less, argument-less fragment carries nothing.
        let bare = delta.extra_content.is_none() && delta.id.as_deref().is_none_or(str::is_empty);
        if name.is_empty() && arguments.is_empty() && bare {
            return;
        }
        let slot = self.call_slot(delta);
        if let Some(extra) = &delta.extra_content {
            self.calls[slot].extra = Some((**extra).clone());
        }
        if !self.calls[slot].started {
            self.close_part(out);
        }
        let call = &mut self.calls[slot];
        // The first name wins: some providers repeat the full name on every fragment.
        if call.name.is_empty() && !name.is_empty() {
            call.name = name.to_string();
        }
        call.arguments.push_str(arguments);
        if !call.started {
            if call.name.is_empty() {
                // Wait for the name; the arguments gathered so far follow the start.
                return;
            }
            call.started = true;
            out.push(UiChunk::ToolInputStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                dynamic: None,
                title: None,
            });
            if !call.arguments.is_empty() {
                out.push(UiChunk::ToolInputDelta {
                    tool_call_id: call.id.clone(),
                    input_text_delta: Text::from(call.arguments.as_str()),
                });
            }
        } else if !arguments.is_empty() {
            out.push(UiChunk::ToolInputDelta {
                tool_call_id: call.id.clone(),
                input_text_delta: Text::from(arguments),
            });
        }
    }

    /// Ends `call`: `tool-input-available` with its provider extensions (and
    /// `message_extra`, the step's own, which the first call carries) or
    /// `tool-input-error`.
    pub(super) fn finalize_call(
        &self,
        call: PendingCall,
        message_extra: Option<Value>,
        failed: bool,
        out: &mut Vec<UiChunk>,
    ) -> ModelToolCall {
        if !call.started {
            out.push(UiChunk::ToolInputStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                dynamic: None,
                title: None,
            });
        }
        let arguments = arguments::parse(&call.name, call.arguments, failed);
        match &arguments {
            Ok(input) => out.push(UiChunk::ToolInputAvailable {
                tool_call_id: call.id.to_string(),
                tool_name: call.name.clone(),
                input: input.clone(),
                provider_metadata: merged(call.extra, message_extra),
            }),
            Err(e) => out.push(UiChunk::ToolInputError {
                tool_call_id: call.id.to_string(),
                tool_name: call.name.clone(),
                input: Value::String(e.raw().to_string()),
                error_text: e.to_string(),
            }),
        }
        ModelToolCall {
            id: call.id.into(),
            name: call.name,
            arguments,
        }
    }
}

/// A call's extensions with the step's merged in, provider by provider (the
/// call's own win).
fn merged(call: Option<Value>, message: Option<Value>) -> Option<Value> {
    match (call, message) {
        (Some(Value::Object(mut call)), Some(Value::Object(message))) => {
            for (provider, v) in message {
                call.entry(provider).or_insert(v);
            }
            Some(Value::Object(call))
        }
        (call, message) => call.or(message),
    }
}
