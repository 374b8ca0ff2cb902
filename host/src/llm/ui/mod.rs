//! The AI SDK UI message stream chunk types (`useChat`'s wire format, ai 5.x-7.x).
//!
//! Clients validate every chunk against a schema and reject unknown types and, in
//! older releases, unknown keys; so serialization is written by hand to emit exactly
//! the keys the protocol lists, with optional ones omitted when absent. Hub-specific
//! data (usage, model, the hub's own finish reasons) travels only in
//! `messageMetadata`.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Why a step or message finished, as the UI stream names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    Stop,
    Length,
    ContentFilter,
    ToolCalls,
    Error,
    Other,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content-filter",
            FinishReason::ToolCalls => "tool-calls",
            FinishReason::Error => "error",
            FinishReason::Other => "other",
        }
    }

    /// The UI value for an OpenAI `finish_reason`.
    pub fn from_openai(reason: &str) -> FinishReason {
        match reason {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            _ => FinishReason::Other,
        }
    }

    fn parse(s: &str) -> Option<FinishReason> {
        Some(match s {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "content-filter" => FinishReason::ContentFilter,
            "tool-calls" => FinishReason::ToolCalls,
            "error" => FinishReason::Error,
            "other" => FinishReason::Other,
            _ => return None,
        })
    }
}

/// One chunk of a UI message stream.
#[derive(Debug, Clone, PartialEq)]
pub enum UiChunk {
    Start {
        message_id: Option<String>,
        message_metadata: Option<Value>,
    },
    StartStep,
    FinishStep,
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        delta: String,
    },
    ReasoningEnd {
        id: String,
    },
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
        dynamic: Option<bool>,
        title: Option<String>,
    },
    ToolInputDelta {
        tool_call_id: String,
        input_text_delta: String,
    },
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    ToolInputError {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        error_text: String,
    },
    ToolOutputAvailable {
        tool_call_id: String,
        output: Value,
        preliminary: Option<bool>,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    SourceUrl {
        source_id: String,
        url: String,
        title: Option<String>,
    },
    File {
        url: String,
        media_type: String,
    },
    /// `data-<name>`: application data parts (the only open-ended type).
    Data {
        name: String,
        id: Option<String>,
        data: Value,
        transient: Option<bool>,
    },
    MessageMetadata {
        message_metadata: Value,
    },
    Finish {
        finish_reason: Option<FinishReason>,
        message_metadata: Option<Value>,
    },
    Error {
        error_text: String,
    },
    Abort {
        reason: Option<String>,
    },
}

impl UiChunk {
    /// The wire `type` (`data-<name>` for data parts).
    pub fn type_name(&self) -> std::borrow::Cow<'static, str> {
        use UiChunk::*;
        std::borrow::Cow::Borrowed(match self {
            Start { .. } => "start",
            StartStep => "start-step",
            FinishStep => "finish-step",
            TextStart { .. } => "text-start",
            TextDelta { .. } => "text-delta",
            TextEnd { .. } => "text-end",
            ReasoningStart { .. } => "reasoning-start",
            ReasoningDelta { .. } => "reasoning-delta",
            ReasoningEnd { .. } => "reasoning-end",
            ToolInputStart { .. } => "tool-input-start",
            ToolInputDelta { .. } => "tool-input-delta",
            ToolInputAvailable { .. } => "tool-input-available",
            ToolInputError { .. } => "tool-input-error",
            ToolOutputAvailable { .. } => "tool-output-available",
            ToolOutputError { .. } => "tool-output-error",
            SourceUrl { .. } => "source-url",
            File { .. } => "file",
            Data { name, .. } => return std::borrow::Cow::Owned(format!("data-{name}")),
            MessageMetadata { .. } => "message-metadata",
            Finish { .. } => "finish",
            Error { .. } => "error",
            Abort { .. } => "abort",
        })
    }
}

impl Serialize for UiChunk {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use UiChunk::*;
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry("type", &self.type_name())?;
        match self {
            Start {
                message_id,
                message_metadata,
            } => {
                opt(&mut m, "messageId", message_id)?;
                opt(&mut m, "messageMetadata", message_metadata)?;
            }
            StartStep | FinishStep => {}
            TextStart { id } | TextEnd { id } | ReasoningStart { id } | ReasoningEnd { id } => {
                m.serialize_entry("id", id)?;
            }
            TextDelta { id, delta } | ReasoningDelta { id, delta } => {
                m.serialize_entry("id", id)?;
                m.serialize_entry("delta", delta)?;
            }
            ToolInputStart {
                tool_call_id,
                tool_name,
                dynamic,
                title,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                opt(&mut m, "dynamic", dynamic)?;
                opt(&mut m, "title", title)?;
            }
            ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("inputTextDelta", input_text_delta)?;
            }
            ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("input", input)?;
            }
            ToolInputError {
                tool_call_id,
                tool_name,
                input,
                error_text,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("input", input)?;
                m.serialize_entry("errorText", error_text)?;
            }
            ToolOutputAvailable {
                tool_call_id,
                output,
                preliminary,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("output", output)?;
                opt(&mut m, "preliminary", preliminary)?;
            }
            ToolOutputError {
                tool_call_id,
                error_text,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("errorText", error_text)?;
            }
            SourceUrl {
                source_id,
                url,
                title,
            } => {
                m.serialize_entry("sourceId", source_id)?;
                m.serialize_entry("url", url)?;
                opt(&mut m, "title", title)?;
            }
            File { url, media_type } => {
                m.serialize_entry("url", url)?;
                m.serialize_entry("mediaType", media_type)?;
            }
            Data {
                name: _,
                id,
                data,
                transient,
            } => {
                opt(&mut m, "id", id)?;
                m.serialize_entry("data", data)?;
                opt(&mut m, "transient", transient)?;
            }
            MessageMetadata { message_metadata } => m.serialize_entry("messageMetadata", message_metadata)?,
            Finish {
                finish_reason,
                message_metadata,
            } => {
                opt(&mut m, "finishReason", &finish_reason.map(FinishReason::as_str))?;
                opt(&mut m, "messageMetadata", message_metadata)?;
            }
            Error { error_text } => m.serialize_entry("errorText", error_text)?,
            Abort { reason } => opt(&mut m, "reason", reason)?,
        }
        m.end()
    }
}

fn opt<M: SerializeMap, T: Serialize>(m: &mut M, key: &str, value: &Option<T>) -> Result<(), M::Error> {
    match value {
        Some(v) => m.serialize_entry(key, v),
        None => Ok(()),
    }
}

mod parse;
#[cfg(test)]
mod tests;
