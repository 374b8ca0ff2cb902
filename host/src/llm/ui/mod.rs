//! The AI SDK UI message stream chunk types (`useChat`'s wire format, ai 5.x-7.x).
//!
//! Clients validate every chunk against a schema and reject unknown types and, in
//! older releases, unknown keys; so a chunk serializes to exactly the keys the
//! protocol lists (`type` first, then the fields in declaration order), with
//! optional ones omitted when absent. Hub-specific data (usage, model, the hub's
//! own finish reasons) travels only in `messageMetadata`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod data;

/// Why a step or message finished, as the UI stream names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    Length,
    ContentFilter,
    ToolCalls,
    Error,
    Other,
}

impl FinishReason {
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
}

/// One chunk of a UI message stream. Reading one back (tests and the real-client
/// harnesses) is as strict as `useChat`: unknown types, missing fields and extra
/// keys are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase",
    deny_unknown_fields,
    expecting = "a UI chunk useChat accepts: a known \"type\" with exactly its keys"
)]
pub enum UiChunk {
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    #[serde(deserialize_with = "no_keys")]
    StartStep,
    #[serde(deserialize_with = "no_keys")]
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preliminary: Option<bool>,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    SourceUrl {
        source_id: String,
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    File {
        url: String,
        media_type: String,
    },
    Error {
        error_text: String,
    },
    Abort {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    MessageMetadata {
        message_metadata: Value,
    },
    Finish {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// `data-<name>`: application data parts (the only open-ended type, so written
    /// and read by hand; serde tries it after every fixed type).
    #[serde(
        untagged,
        serialize_with = "data::serialize",
        deserialize_with = "data::deserialize"
    )]
    Data {
        name: String,
        id: Option<String>,
        data: Value,
        transient: Option<bool>,
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

/// The rest of a chunk that has no fields must be empty (serde's unit variants
/// would accept any keys).
fn no_keys<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    let rest = serde_json::Map::<String, Value>::deserialize(deserializer)?;
    match rest.keys().next() {
        Some(extra) => Err(serde::de::Error::unknown_field(extra, &[])),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
