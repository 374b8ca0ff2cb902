//! Reading UI chunks back (tests and the real-client harnesses), as strictly as
//! `useChat` does.

use super::{FinishReason, UiChunk};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

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
