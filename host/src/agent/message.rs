//! The AI SDK `UIMessage` shape (`{id, role, metadata?, parts}`) as the hub stores
//! and serves it.
//!
//! Parts the loop produces or reads (text, reasoning, step boundaries, tool parts)
//! are typed; every other part a client sends (`file`, `source-url`, `data-*`, ...)
//! is kept verbatim as JSON so a conversation round-trips unchanged. Tool parts are
//! `tool-<toolName>` (static tools) or `dynamic-tool` with a `toolName` field, as
//! the client renders them.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model (the system prompt).
    System,
    /// The person chatting.
    User,
    /// The model.
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiMessage {
    /// The message id, unique within its session.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// Free-form metadata (the hub adds usage and the model to assistant messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The content, in order.
    pub parts: Vec<Part>,
}

impl UiMessage {
    /// An empty message (no parts, no metadata).
    pub fn new(id: String, role: Role) -> UiMessage {
        UiMessage {
            id,
            role,
            metadata: None,
            parts: Vec::new(),
        }
    }

    /// The text parts joined, for titles and token estimates.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if let Part::Text { text, .. } = p {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// Merges `extra`'s keys into the metadata object (creating it).
    pub fn merge_metadata(&mut self, extra: &Value) {
        let Value::Object(extra) = extra else { return };
        let meta = self.metadata.get_or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        let obj = meta.as_object_mut().expect("just made an object");
        for (k, v) in extra {
            obj.insert(k.clone(), v.clone());
        }
    }
}

/// Where a tool call is in its life, as the client names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolState {
    /// The model is still sending the arguments.
    InputStreaming,
    /// The arguments are complete; the tool runs.
    InputAvailable,
    /// The tool returned `output`.
    OutputAvailable,
    /// The tool (or its arguments) failed with `error_text`.
    OutputError,
    /// The call waits for the user's approval (`approval.id`); it has not run.
    ApprovalRequested,
    /// The user answered (`approval.approved`); the hub has not acted on it yet.
    ApprovalResponded,
    /// The user denied the call; it did not run.
    OutputDenied,
}

/// A tool part's `approval` (ai 6.x, 7.x): the id the hub issued and, once the user
/// answered, their decision. Keys the hub does not use (`requestReason`,
/// `isAutomatic`, ...) are kept as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolApproval {
    /// The approval id the hub issued (`apr_...`).
    pub id: String,
    /// The user's answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// The user's reason, when they gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Any other key of the client's approval object.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolApproval {
    /// A fresh request: the id, and the reason shown to the user (`requestReason`).
    pub fn requested(id: String, request_reason: Option<String>) -> ToolApproval {
        let mut extra = Map::new();
        if let Some(r) = request_reason {
            extra.insert("requestReason".into(), Value::String(r));
        }
        ToolApproval {
            id,
            approved: None,
            reason: None,
            extra,
        }
    }
}

/// A tool call and (once known) its result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPart {
    /// The tool the model called.
    pub tool_name: String,
    /// The model's id for the call, which pairs it with its result.
    pub tool_call_id: String,
    /// `dynamic-tool` instead of `tool-<name>`.
    pub dynamic: bool,
    /// Where the call is in its life.
    pub state: ToolState,
    /// The parsed arguments, once complete and valid JSON.
    pub input: Option<Value>,
    /// The model's arguments as sent, when they were not valid JSON.
    pub raw_input: Option<Value>,
    /// The tool's result (`output-available`).
    pub output: Option<Value>,
    /// Why the call failed (`output-error`).
    pub error_text: Option<String>,
    /// The approval asked for and, once given, the answer.
    pub approval: Option<Box<ToolApproval>>,
    /// `callProviderMetadata`: what the provider wants back with the call
    /// (`UiChunk::ToolInputAvailable`'s `providerMetadata`).
    pub call_provider_metadata: Option<Value>,
}

impl ToolPart {
    /// A `tool-<tool_name>` part whose input is still streaming.
    pub fn new(tool_call_id: String, tool_name: String) -> ToolPart {
        ToolPart {
            tool_name,
            tool_call_id,
            dynamic: false,
            state: ToolState::InputStreaming,
            input: None,
            raw_input: None,
            output: None,
            error_text: None,
            approval: None,
            call_provider_metadata: None,
        }
    }
}

/// Whether a text or reasoning part is still being written (the client's
/// `"streaming"` / `"done"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextState {
    /// More text may follow.
    Streaming,
    /// The part is complete.
    Done,
}

/// Why a JSON value is not a message part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartError {
    /// The part is not a JSON object.
    NotAnObject,
    /// The part has no string `type`.
    MissingType,
    /// A `text` or `reasoning` part (the type is named) without a string `text`.
    MissingText(String),
    /// A `text` or `reasoning` part whose `state` is neither `streaming` nor `done`.
    UnknownTextState(String),
    /// A `dynamic-tool` part without `toolName`.
    MissingToolName,
    /// A `tool-` part with nothing after the prefix.
    EmptyToolName,
    /// A tool part without a string `toolCallId`.
    MissingToolCallId,
}

impl std::fmt::Display for PartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartError::NotAnObject => f.write_str("a message part must be a JSON object"),
            PartError::MissingType => f.write_str("a message part needs a string \"type\""),
            PartError::MissingText(ty) => write!(f, "a {ty:?} part needs a string \"text\""),
            PartError::UnknownTextState(ty) => {
                write!(f, "a {ty:?} part's \"state\" is \"streaming\" or \"done\"")
            }
            PartError::MissingToolName => f.write_str("a dynamic-tool part needs \"toolName\""),
            PartError::EmptyToolName => f.write_str("a tool part needs a tool name after \"tool-\""),
            PartError::MissingToolCallId => f.write_str("a tool part needs a string \"toolCallId\""),
        }
    }
}

impl std::error::Error for PartError {}

/// One part of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// `state` is absent in older clients.
    Text {
        /// The text written so far.
        text: String,
        /// Whether more text may follow.
        state: Option<TextState>,
    },
    /// The model's reasoning, shown apart from the answer.
    Reasoning {
        /// The reasoning written so far.
        text: String,
        /// Whether more reasoning may follow.
        state: Option<TextState>,
    },
    /// The boundary between two steps of the loop (`step-start`).
    StepStart,
    /// A tool call (`tool-<name>` or `dynamic-tool`).
    Tool(ToolPart),
    /// Any other part, kept as sent.
    Other(Value),
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Part, D::Error> {
        Part::from_value(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl Part {
    /// The part as the client's JSON (`{"type": ..., ...}`).
    pub fn to_value(&self) -> Value {
        match self {
            Part::Text { text, state } | Part::Reasoning { text, state } => {
                let ty = if matches!(self, Part::Text { .. }) {
                    "text"
                } else {
                    "reasoning"
                };
                let mut v = json!({ "type": ty, "text": text });
                if let Some(state) = state {
                    v["state"] = json!(state);
                }
                v
            }
            Part::StepStart => json!({ "type": "step-start" }),
            Part::Tool(t) => {
                let mut m = Map::new();
                if t.dynamic {
                    m.insert("type".into(), "dynamic-tool".into());
                    m.insert("toolName".into(), t.tool_name.clone().into());
                } else {
                    m.insert("type".into(), format!("tool-{}", t.tool_name).into());
                }
                m.insert("toolCallId".into(), t.tool_call_id.clone().into());
                m.insert("state".into(), json!(t.state));
                // The client's schema wants `input` on every state past streaming.
                let input = t.input.clone().unwrap_or(Value::Null);
                if t.input.is_some() || t.state != ToolState::InputStreaming {
                    m.insert("input".into(), input);
                }
                if let Some(raw) = &t.raw_input {
                    m.insert("rawInput".into(), raw.clone());
                }
                if let Some(output) = &t.output {
                    m.insert("output".into(), output.clone());
                }
                if let Some(e) = &t.error_text {
                    m.insert("errorText".into(), e.clone().into());
                }
                if let Some(a) = &t.approval {
                    m.insert("approval".into(), json!(a));
                }
                if let Some(meta) = &t.call_provider_metadata {
                    m.insert("callProviderMetadata".into(), meta.clone());
                }
                Value::Object(m)
            }
            Part::Other(v) => v.clone(),
        }
    }

    /// Reads a part; tool parts with an unknown state or a missing id are errors, any
    /// other well-formed part (an object with a string `type`) is kept as is.
    pub fn from_value(v: Value) -> Result<Part, PartError> {
        let Value::Object(obj) = &v else {
            return Err(PartError::NotAnObject);
        };
        let Some(ty) = obj.get("type").and_then(Value::as_str) else {
            return Err(PartError::MissingType);
        };
        Ok(match ty {
            "text" => {
                let (text, state) = text_fields(obj, ty)?;
                Part::Text { text, state }
            }
            "reasoning" => {
                let (text, state) = text_fields(obj, ty)?;
                Part::Reasoning { text, state }
            }
            "step-start" => Part::StepStart,
            "dynamic-tool" => {
                let name = obj
                    .get("toolName")
                    .and_then(Value::as_str)
                    .ok_or(PartError::MissingToolName)?;
                Part::Tool(ToolPart {
                    dynamic: true,
                    ..tool_part(obj, name)?
                })
            }
            t if t.starts_with("tool-") => Part::Tool(tool_part(obj, &t["tool-".len()..])?),
            _ => Part::Other(v),
        })
    }
}

/// The `text` and `state` of a `text` or `reasoning` part (`ty`).
fn text_fields(obj: &Map<String, Value>, ty: &str) -> Result<(String, Option<TextState>), PartError> {
    let text = obj
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| PartError::MissingText(ty.to_string()))?;
    let state = match obj.get("state") {
        None | Some(Value::Null) => None,
        Some(s) => Some(TextState::deserialize(s).map_err(|_| PartError::UnknownTextState(ty.to_string()))?),
    };
    Ok((text.to_string(), state))
}

fn tool_part(obj: &Map<String, Value>, name: &str) -> Result<ToolPart, PartError> {
    if name.is_empty() {
        return Err(PartError::EmptyToolName);
    }
    let id = obj
        .get("toolCallId")
        .and_then(Value::as_str)
        .ok_or(PartError::MissingToolCallId)?;
    // States the hub does not know are read as "input available": the call did not
    // run, which is what the model is told.
    let state = obj
        .get("state")
        .and_then(|s| ToolState::deserialize(s).ok())
        .unwrap_or(ToolState::InputAvailable);
    Ok(ToolPart {
        tool_name: name.to_string(),
        tool_call_id: id.to_string(),
        dynamic: false,
        state,
        input: obj.get("input").cloned(),
        raw_input: obj.get("rawInput").cloned(),
        output: obj.get("output").cloned(),
        error_text: obj.get("errorText").and_then(Value::as_str).map(str::to_string),
        call_provider_metadata: obj.get("callProviderMetadata").filter(|m| m.is_object()).cloned(),
        approval: obj
            .get("approval")
            .and_then(|a| ToolApproval::deserialize(a).ok())
            .map(Box::new),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_in_the_clients_shape() {
        let wire = json!({
            "id": "m1",
            "role": "assistant",
            "metadata": {"usage": {"inputTokens": 3}},
            "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "hmm", "state": "done"},
                {"type": "text", "text": "hi"},
                {"type": "tool-hub_search", "toolCallId": "c1", "state": "output-available", "input": {"q": "x"}, "output": [1]},
                {"type": "tool-hub_call", "toolCallId": "c2", "state": "output-error", "input": null, "rawInput": "{bad", "errorText": "invalid"},
                {"type": "dynamic-tool", "toolName": "x", "toolCallId": "c3", "state": "input-available", "input": {}},
                {"type": "tool-hub_call", "toolCallId": "c4", "state": "approval-requested", "input": {"calls": []}, "approval": {"id": "apr_1", "requestReason": "x.wipe is destructive"}},
                {"type": "tool-hub_call", "toolCallId": "c5", "state": "approval-responded", "input": {}, "approval": {"id": "apr_2", "approved": false, "reason": "no"}},
                {"type": "tool-hub_call", "toolCallId": "c6", "state": "output-denied", "input": {}, "approval": {"id": "apr_3", "approved": false}},
                {"type": "data-weather", "id": "d", "data": {"t": 1}},
                {"type": "file", "mediaType": "image/png", "url": "data:,"}
            ]
        });
        let m: UiMessage = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(m.role, Role::Assistant);
        assert!(
            matches!(&m.parts[3], Part::Tool(t) if t.tool_name == "hub_search" && t.state == ToolState::OutputAvailable)
        );
        assert!(matches!(&m.parts[5], Part::Tool(t) if t.dynamic && t.tool_name == "x"));
        assert!(
            matches!(&m.parts[6], Part::Tool(t) if t.state == ToolState::ApprovalRequested
            && t.approval.as_ref().is_some_and(|a| a.id == "apr_1" && a.approved.is_none()))
        );
        assert!(
            matches!(&m.parts[7], Part::Tool(t) if t.state == ToolState::ApprovalResponded
            && t.approval.as_ref().is_some_and(|a| a.approved == Some(false) && a.reason.as_deref() == Some("no")))
        );
        assert!(matches!(&m.parts[8], Part::Tool(t) if t.state == ToolState::OutputDenied));
        assert!(matches!(&m.parts[9], Part::Other(_)));
        assert_eq!(serde_json::to_value(&m).unwrap(), wire);
    }

    #[test]
    fn malformed_parts_are_rejected_with_a_reason() {
        for (bad, why) in [
            (json!({"text": "x"}), "type"),
            (json!({"type": "text"}), "text"),
            (json!({"type": "text", "text": "x", "state": "typing"}), "state"),
            (
                json!({"type": "tool-hub_call", "state": "input-available"}),
                "toolCallId",
            ),
            (json!({"type": "tool-", "toolCallId": "c"}), "tool name"),
            (json!("text"), "object"),
        ] {
            let err = Part::from_value(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
        let err = serde_json::from_value::<UiMessage>(json!({"id": "a", "role": "robot", "parts": []}))
            .unwrap_err();
        assert!(err.to_string().contains("robot"));
    }

    #[test]
    fn metadata_merges_and_text_joins() {
        let mut m = UiMessage::new("a".into(), Role::User);
        m.parts.push(Part::Text {
            text: "one".into(),
            state: None,
        });
        m.parts.push(Part::StepStart);
        m.parts.push(Part::Text {
            text: "two".into(),
            state: None,
        });
        assert_eq!(m.text(), "one\ntwo");
        m.merge_metadata(&json!({"a": 1}));
        m.merge_metadata(&json!({"b": 2}));
        assert_eq!(m.metadata, Some(json!({"a": 1, "b": 2})));
    }
}
