//! The AI SDK UI message stream chunk types (`useChat`'s wire format, ai 5.x-7.x).
//!
//! Clients validate every chunk against a schema and reject unknown types and, in
//! older releases, unknown keys; so serialization is written by hand to emit exactly
//! the keys the protocol lists, with optional ones omitted when absent. Hub-specific
//! data (usage, model, the hub's own finish reasons) travels only in
//! `messageMetadata`.

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

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

/// Parsing mirrors the client's strictness: unknown types, missing fields and extra
/// keys are errors, so tests that read the hub's output back catch what `useChat`
/// would reject.
impl<'de> Deserialize<'de> for UiChunk {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<UiChunk, D::Error> {
        let Value::Object(mut obj) = Value::deserialize(deserializer)? else {
            return Err(D::Error::custom("a UI chunk is a JSON object"));
        };
        let ty = match obj.remove("type") {
            Some(Value::String(t)) => t,
            _ => return Err(D::Error::custom("a UI chunk needs a string \"type\"")),
        };
        let chunk = from_fields(&ty, &mut obj).map_err(D::Error::custom)?;
        if let Some(extra) = obj.keys().next() {
            return Err(D::Error::custom(format!(
                "unexpected key {extra:?} in a {ty:?} chunk"
            )));
        }
        Ok(chunk)
    }
}

fn from_fields(ty: &str, obj: &mut Map<String, Value>) -> Result<UiChunk, String> {
    use UiChunk::*;
    let mut s = |k: &str| match obj.remove(k) {
        Some(Value::String(v)) => Ok(v),
        _ => Err(format!("{ty:?} chunk needs a string {k:?}")),
    };
    Ok(match ty {
        "start-step" => StartStep,
        "finish-step" => FinishStep,
        "text-start" => TextStart { id: s("id")? },
        "text-end" => TextEnd { id: s("id")? },
        "reasoning-start" => ReasoningStart { id: s("id")? },
        "reasoning-end" => ReasoningEnd { id: s("id")? },
        "text-delta" => TextDelta {
            id: s("id")?,
            delta: s("delta")?,
        },
        "reasoning-delta" => ReasoningDelta {
            id: s("id")?,
            delta: s("delta")?,
        },
        "tool-input-delta" => ToolInputDelta {
            tool_call_id: s("toolCallId")?,
            input_text_delta: s("inputTextDelta")?,
        },
        "tool-output-error" => ToolOutputError {
            tool_call_id: s("toolCallId")?,
            error_text: s("errorText")?,
        },
        "file" => File {
            url: s("url")?,
            media_type: s("mediaType")?,
        },
        "error" => Error {
            error_text: s("errorText")?,
        },
        "tool-input-start" => {
            let (tool_call_id, tool_name) = (s("toolCallId")?, s("toolName")?);
            ToolInputStart {
                tool_call_id,
                tool_name,
                dynamic: opt_bool(obj, "dynamic")?,
                title: opt_str(obj, "title")?,
            }
        }
        "tool-input-available" => {
            let (tool_call_id, tool_name) = (s("toolCallId")?, s("toolName")?);
            ToolInputAvailable {
                tool_call_id,
                tool_name,
                input: any(obj, ty, "input")?,
            }
        }
        "tool-input-error" => {
            let (tool_call_id, tool_name, error_text) = (s("toolCallId")?, s("toolName")?, s("errorText")?);
            ToolInputError {
                tool_call_id,
                tool_name,
                error_text,
                input: any(obj, ty, "input")?,
            }
        }
        "tool-output-available" => {
            let tool_call_id = s("toolCallId")?;
            ToolOutputAvailable {
                tool_call_id,
                output: any(obj, ty, "output")?,
                preliminary: opt_bool(obj, "preliminary")?,
            }
        }
        "source-url" => {
            let (source_id, url) = (s("sourceId")?, s("url")?);
            SourceUrl {
                source_id,
                url,
                title: opt_str(obj, "title")?,
            }
        }
        "start" => Start {
            message_id: opt_str(obj, "messageId")?,
            message_metadata: obj.remove("messageMetadata"),
        },
        "message-metadata" => MessageMetadata {
            message_metadata: any(obj, ty, "messageMetadata")?,
        },
        "finish" => {
            let finish_reason = match opt_str(obj, "finishReason")? {
                None => None,
                Some(r) => {
                    Some(FinishReason::parse(&r).ok_or_else(|| format!("unknown finishReason {r:?}"))?)
                }
            };
            Finish {
                finish_reason,
                message_metadata: obj.remove("messageMetadata"),
            }
        }
        "abort" => Abort {
            reason: opt_str(obj, "reason")?,
        },
        data if data.starts_with("data-") => Data {
            name: data["data-".len()..].to_string(),
            id: opt_str(obj, "id")?,
            data: any(obj, ty, "data")?,
            transient: opt_bool(obj, "transient")?,
        },
        other => return Err(format!("unknown UI chunk type {other:?}")),
    })
}

fn any(obj: &mut Map<String, Value>, ty: &str, key: &str) -> Result<Value, String> {
    obj.remove(key)
        .ok_or_else(|| format!("{ty:?} chunk needs {key:?}"))
}

fn opt_str(obj: &mut Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{key:?} must be a string")),
    }
}

fn opt_bool(obj: &mut Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match obj.remove(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(format!("{key:?} must be a boolean")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_variant_round_trips_with_the_documented_keys() {
        let cases = vec![
            (
                UiChunk::Start {
                    message_id: None,
                    message_metadata: None,
                },
                json!({"type": "start"}),
            ),
            (
                UiChunk::Start {
                    message_id: Some("m1".into()),
                    message_metadata: Some(json!({"a": 1})),
                },
                json!({"type": "start", "messageId": "m1", "messageMetadata": {"a": 1}}),
            ),
            (UiChunk::StartStep, json!({"type": "start-step"})),
            (UiChunk::FinishStep, json!({"type": "finish-step"})),
            (
                UiChunk::TextStart { id: "t".into() },
                json!({"type": "text-start", "id": "t"}),
            ),
            (
                UiChunk::TextDelta {
                    id: "t".into(),
                    delta: "hi".into(),
                },
                json!({"type": "text-delta", "id": "t", "delta": "hi"}),
            ),
            (
                UiChunk::TextEnd { id: "t".into() },
                json!({"type": "text-end", "id": "t"}),
            ),
            (
                UiChunk::ReasoningStart { id: "r".into() },
                json!({"type": "reasoning-start", "id": "r"}),
            ),
            (
                UiChunk::ReasoningDelta {
                    id: "r".into(),
                    delta: "x".into(),
                },
                json!({"type": "reasoning-delta", "id": "r", "delta": "x"}),
            ),
            (
                UiChunk::ReasoningEnd { id: "r".into() },
                json!({"type": "reasoning-end", "id": "r"}),
            ),
            (
                UiChunk::ToolInputStart {
                    tool_call_id: "c".into(),
                    tool_name: "hub_list".into(),
                    dynamic: None,
                    title: None,
                },
                json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "hub_list"}),
            ),
            (
                UiChunk::ToolInputStart {
                    tool_call_id: "c".into(),
                    tool_name: "x".into(),
                    dynamic: Some(true),
                    title: Some("T".into()),
                },
                json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "x", "dynamic": true, "title": "T"}),
            ),
            (
                UiChunk::ToolInputDelta {
                    tool_call_id: "c".into(),
                    input_text_delta: "{".into(),
                },
                json!({"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{"}),
            ),
            (
                UiChunk::ToolInputAvailable {
                    tool_call_id: "c".into(),
                    tool_name: "w".into(),
                    input: json!({"q": 1}),
                },
                json!({"type": "tool-input-available", "toolCallId": "c", "toolName": "w", "input": {"q": 1}}),
            ),
            (
                UiChunk::ToolInputError {
                    tool_call_id: "c".into(),
                    tool_name: "w".into(),
                    input: json!("{bad"),
                    error_text: "e".into(),
                },
                json!({"type": "tool-input-error", "toolCallId": "c", "toolName": "w", "input": "{bad", "errorText": "e"}),
            ),
            (
                UiChunk::ToolOutputAvailable {
                    tool_call_id: "c".into(),
                    output: json!([1]),
                    preliminary: None,
                },
                json!({"type": "tool-output-available", "toolCallId": "c", "output": [1]}),
            ),
            (
                UiChunk::ToolOutputError {
                    tool_call_id: "c".into(),
                    error_text: "no".into(),
                },
                json!({"type": "tool-output-error", "toolCallId": "c", "errorText": "no"}),
            ),
            (
                UiChunk::SourceUrl {
                    source_id: "s".into(),
                    url: "https://x".into(),
                    title: None,
                },
                json!({"type": "source-url", "sourceId": "s", "url": "https://x"}),
            ),
            (
                UiChunk::File {
                    url: "data:,".into(),
                    media_type: "text/plain".into(),
                },
                json!({"type": "file", "url": "data:,", "mediaType": "text/plain"}),
            ),
            (
                UiChunk::Data {
                    name: "call".into(),
                    id: Some("d".into()),
                    data: json!({"k": 2}),
                    transient: Some(true),
                },
                json!({"type": "data-call", "id": "d", "data": {"k": 2}, "transient": true}),
            ),
            (
                UiChunk::MessageMetadata {
                    message_metadata: json!({"usage": {}}),
                },
                json!({"type": "message-metadata", "messageMetadata": {"usage": {}}}),
            ),
            (
                UiChunk::Finish {
                    finish_reason: Some(FinishReason::ContentFilter),
                    message_metadata: None,
                },
                json!({"type": "finish", "finishReason": "content-filter"}),
            ),
            (
                UiChunk::Finish {
                    finish_reason: None,
                    message_metadata: None,
                },
                json!({"type": "finish"}),
            ),
            (
                UiChunk::Error {
                    error_text: "boom".into(),
                },
                json!({"type": "error", "errorText": "boom"}),
            ),
            (UiChunk::Abort { reason: None }, json!({"type": "abort"})),
        ];
        for (chunk, wire) in cases {
            assert_eq!(serde_json::to_value(&chunk).unwrap(), wire);
            assert_eq!(serde_json::from_value::<UiChunk>(wire).unwrap(), chunk);
        }
    }

    #[test]
    fn parsing_is_as_strict_as_the_client() {
        for bad in [
            json!({"type": "text-delta", "id": "t"}),
            json!({"type": "text-start", "id": "t", "extra": 1}),
            json!({"type": "tool-call"}),
            json!({"type": "finish", "finishReason": "max-steps"}),
            json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "x", "dynamic": "yes"}),
        ] {
            assert!(serde_json::from_value::<UiChunk>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn openai_finish_reasons_map_to_ui_values() {
        for (openai, ui) in [
            ("stop", "stop"),
            ("length", "length"),
            ("content_filter", "content-filter"),
            ("tool_calls", "tool-calls"),
            ("function_call", "tool-calls"),
            ("eos", "other"),
        ] {
            assert_eq!(FinishReason::from_openai(openai).as_str(), ui);
        }
    }
}
