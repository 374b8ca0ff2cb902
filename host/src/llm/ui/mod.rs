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
mod encode;
mod text;

pub use text::Text;

/// Why a step or message finished, as the UI stream names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// `stop`: the model ended its answer on its own.
    Stop,
    /// `length`: the output hit the token limit.
    Length,
    /// `content-filter`: the provider withheld or cut the output.
    ContentFilter,
    /// `tool-calls`: the step ended to run the tool calls it requested.
    ToolCalls,
    /// `error`: the turn failed (an `error` chunk says why).
    Error,
    /// `other`: any reason the protocol does not name.
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
    /// `start`: the assistant message begins.
    Start {
        /// `messageId`: the id the client gives the message; `None` lets it make one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// `messageMetadata`: hub data merged into the message's metadata.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// `start-step`: one model call (step) begins.
    #[serde(deserialize_with = "no_keys")]
    StartStep,
    /// `finish-step`: the current step ended.
    #[serde(deserialize_with = "no_keys")]
    FinishStep,
    /// `text-start`: a text part opens.
    TextStart {
        /// `id`: the part's id, repeated by its deltas and its end.
        id: Text,
    },
    /// `text-delta`: text appended to an open text part.
    TextDelta {
        /// `id`: the text part this belongs to.
        id: Text,
        /// `delta`: the text to append.
        delta: Text,
    },
    /// `text-end`: a text part is complete.
    TextEnd {
        /// `id`: the text part that closes.
        id: Text,
    },
    /// `reasoning-start`: a reasoning (thinking) part opens.
    ReasoningStart {
        /// `id`: the part's id, repeated by its deltas and its end.
        id: Text,
        /// `providerMetadata`: for reasoning the provider withheld,
        /// `{"anthropic": {"redactedData": ...}}` (the AI SDK's own field for
        /// Anthropic's `redacted_thinking`); the part then has no text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// `reasoning-delta`: text appended to an open reasoning part.
    ReasoningDelta {
        /// `id`: the reasoning part this belongs to.
        id: Text,
        /// `delta`: the reasoning text to append.
        delta: Text,
    },
    /// `reasoning-end`: a reasoning part is complete.
    ReasoningEnd {
        /// `id`: the reasoning part that closes.
        id: Text,
        /// `providerMetadata`: what the provider signed the reasoning with
        /// (`{"anthropic": {"signature": ...}}`: Anthropic wants a thinking block
        /// back with its signature in a tool-use loop).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// `tool-input-start`: the model began a tool call; its input streams next.
    ToolInputStart {
        /// `toolCallId`: the call's id, shared by all its later chunks.
        tool_call_id: Text,
        /// `toolName`: the tool being called.
        tool_name: String,
        /// `dynamic`: `Some(true)` for a tool the client has no static type for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        /// `title`: a display title for the call, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// `tool-input-delta`: a piece of the call's JSON input text as it streams.
    ToolInputDelta {
        /// `toolCallId`: the call this belongs to.
        tool_call_id: Text,
        /// `inputTextDelta`: raw JSON text to append (not valid JSON on its own).
        input_text_delta: Text,
    },
    /// `tool-input-available`: the call's complete, parsed input.
    ToolInputAvailable {
        /// `toolCallId`: the call this completes.
        tool_call_id: String,
        /// `toolName`: the tool being called.
        tool_name: String,
        /// `input`: the parsed arguments.
        input: Value,
        /// `providerMetadata`: what the provider wants back with the call in
        /// later rounds (the OpenAI message's `extra_content`: Gemini's thought
        /// signature, the step's Anthropic thinking blocks), keyed by provider.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<Value>,
    },
    /// `tool-input-error`: the call's input could not be parsed or was rejected.
    ToolInputError {
        /// `toolCallId`: the call that failed.
        tool_call_id: String,
        /// `toolName`: the tool being called.
        tool_name: String,
        /// `input`: the input as received (raw text when it did not parse).
        input: Value,
        /// `errorText`: why the input was refused, shown to the user.
        error_text: String,
    },
    /// `tool-output-available`: the tool ran and returned a result.
    ToolOutputAvailable {
        /// `toolCallId`: the call this answers.
        tool_call_id: String,
        /// `output`: the tool's result.
        output: Value,
        /// `preliminary`: `Some(true)` for a partial result a later one replaces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preliminary: Option<bool>,
    },
    /// `tool-output-error`: the tool ran and failed.
    ToolOutputError {
        /// `toolCallId`: the call this answers.
        tool_call_id: String,
        /// `errorText`: the failure, shown to the user.
        error_text: String,
    },
    /// `tool-approval-request`: the call waits for the user's approval (ai 6.x,
    /// 7.x); the client answers with `addToolApprovalResponse({id: approvalId})`.
    ToolApprovalRequest {
        /// `approvalId`: the id the server issued, which the answer must name.
        approval_id: String,
        /// `toolCallId`: the call that waits.
        tool_call_id: String,
        /// `reason`: why it asks (ai 7 shows it as `approval.requestReason`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `tool-output-denied`: the user denied the call; it did not run.
    ToolOutputDenied {
        /// `toolCallId`: the call that was denied.
        tool_call_id: String,
    },
    /// `source-url`: a web source the answer cites.
    SourceUrl {
        /// `sourceId`: the source's id within the message.
        source_id: String,
        /// `url`: where the source is.
        url: String,
        /// `title`: the source's title, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// `file`: a file part (e.g. a generated image).
    File {
        /// `url`: the file's URL (often a `data:` URL).
        url: String,
        /// `mediaType`: the file's IANA media type, e.g. `image/png`.
        media_type: String,
    },
    /// `error`: the turn failed; the client shows the text as the chat's error.
    Error {
        /// `errorText`: the failure, readable by the user.
        error_text: String,
    },
    /// `abort`: the turn was stopped before it finished.
    Abort {
        /// `reason`: why it stopped; `None` when no reason is given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `message-metadata`: metadata merged into the message mid-stream.
    MessageMetadata {
        /// `messageMetadata`: the object to merge.
        message_metadata: Value,
    },
    /// `finish`: the assistant message is complete; the last chunk of a turn.
    Finish {
        /// `finishReason`: why the message ended; `None` when unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
        /// `messageMetadata`: final metadata (usage, model) merged into the message.
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
        /// The `<name>` in `data-<name>`.
        name: String,
        /// `id`: a part with the same name and id replaces the earlier one;
        /// `None` always appends.
        id: Option<String>,
        /// `data`: the application payload.
        data: Value,
        /// `transient`: `Some(true)` for a part delivered to the client's
        /// `onData` but never added to the message history.
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
            ToolApprovalRequest { .. } => "tool-approval-request",
            ToolOutputDenied { .. } => "tool-output-denied",
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
