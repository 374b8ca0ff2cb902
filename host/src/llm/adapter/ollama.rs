//! The hub's request (OpenAI chat completions) as Ollama's native `/api/chat`
//! takes it.
//!
//! Messages keep their roles (`developer` becomes `system`); content parts become
//! the text and the `images` list (base64, so only `data:` URLs can be sent);
//! an assistant's tool calls carry their arguments as objects and its reasoning
//! as `thinking`; a tool result names its tool (`tool_name`, found from the call
//! it answers). `tools` keep OpenAI's shape, which Ollama takes; `tool_choice:
//! "none"` sends no tools (Ollama has no other choice to make). `options` are the
//! provider's `options`, then the model's, then the request's own sampling fields
//! (`temperature`, `top_p`, `seed`, `stop`, `max_tokens` as `num_predict`,
//! `frequency_penalty`, `presence_penalty`); `think` is the model's or the
//! provider's; `response_format` becomes `format` (`"json"` or the schema).

use super::{RequestError, parts};
use crate::config::ProviderKind;
use crate::llm::providers::Route;
use serde_json::{Map, Value, json};

fn bad(message: impl Into<String>) -> RequestError {
    RequestError {
        kind: ProviderKind::Ollama,
        message: message.into(),
    }
}

/// `body` as an `/api/chat` request to `route`.
pub(crate) fn request(route: &Route, body: &Value, stream: bool) -> Result<Value, RequestError> {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    let mut out = Map::new();
    out.insert("model".into(), json!(route.model));
    out.insert("messages".into(), Value::Array(self::messages(messages)?));
    out.insert("stream".into(), json!(stream));
    let no_tools = body.get("tool_choice") == Some(&json!("none"));
    if let Some(tools) = body.get("tools").filter(|t| !no_tools && t.is_array()) {
        out.insert("tools".into(), tools.clone());
    }
    if let Some(format) = format(body.get("response_format")) {
        out.insert("format".into(), format);
    }
    let settings = route.settings();
    let think = settings.and_then(|s| s.think).or(route.provider.config.think);
    if let Some(think) = think {
        out.insert("think".into(), json!(think));
    }
    let options = options(route, body);
    if !options.is_empty() {
        out.insert("options".into(), Value::Object(options));
    }
    Ok(Value::Object(out))
}

/// The provider's options, the model's over them, the request's over both.
fn options(route: &Route, body: &Value) -> Map<String, Value> {
    let mut options = parts::configured_options(route);
    let fields = [
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("seed", "seed"),
        ("frequency_penalty", "frequency_penalty"),
        ("presence_penalty", "presence_penalty"),
        ("max_tokens", "num_predict"),
        ("max_completion_tokens", "num_predict"),
    ];
    parts::copy_fields(body, &mut options, &fields);
    if let Some(stop) = parts::stop_list(body) {
        options.insert("stop".into(), stop);
    }
    options
}

/// `response_format` as Ollama's `format`.
fn format(response_format: Option<&Value>) -> Option<Value> {
    let rf = response_format?;
    match rf.get("type").and_then(Value::as_str)? {
        "json_object" => Some(json!("json")),
        "json_schema" => rf.pointer("/json_schema/schema").cloned(),
        _ => None,
    }
}

fn messages(messages: &[Value]) -> Result<Vec<Value>, RequestError> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let (text, images) = content(i, &m["content"])?;
        let mut msg = Map::new();
        let role = match role {
            "system" | "developer" => "system",
            "user" | "assistant" | "tool" => role,
            other => {
                return Err(bad(format!(
                    "messages[{i}]: role {other:?} is not one Ollama knows"
                )));
            }
        };
        msg.insert("role".into(), json!(role));
        msg.insert("content".into(), json!(text));
        if !images.is_empty() {
            msg.insert("images".into(), json!(images));
        }
        if role == "assistant" {
            let thinking = m.get("reasoning_content").or_else(|| m.get("reasoning"));
            if let Some(thinking) = thinking.filter(|t| t.is_string()) {
                msg.insert("thinking".into(), thinking.clone());
            }
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                let calls = calls
                    .iter()
                    .map(|c| tool_call(i, c))
                    .collect::<Result<Vec<_>, _>>()?;
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
        }
        if role == "tool"
            && let Some(name) = tool_name(&messages[..i], m.get("tool_call_id").and_then(Value::as_str))
        {
            msg.insert("tool_name".into(), json!(name));
        }
        out.push(Value::Object(msg));
    }
    Ok(out)
}

/// An OpenAI tool call (in message `i`) as Ollama's: the arguments as an object.
fn tool_call(i: usize, call: &Value) -> Result<Value, RequestError> {
    let arguments = parts::call_arguments(ProviderKind::Ollama, i, call)?;
    Ok(json!({"function": {"name": call["function"]["name"], "arguments": arguments}}))
}

/// The name of the tool the call `id` (made in an earlier message) called.
fn tool_name<'a>(earlier: &'a [Value], id: Option<&str>) -> Option<&'a str> {
    let id = id?;
    earlier
        .iter()
        .rev()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .and_then(|c| c.pointer("/function/name").and_then(Value::as_str))
}

/// The content of message `i` as its text and its images (base64).
fn content(i: usize, content: &Value) -> Result<(String, Vec<String>), RequestError> {
    let parts = match content {
        Value::Null => return Ok((String::new(), Vec::new())),
        Value::String(text) => return Ok((text.clone(), Vec::new())),
        Value::Array(parts) => parts,
        _ => {
            return Err(bad(format!(
                "messages[{i}]: content must be a string or an array of parts"
            )));
        }
    };
    let (mut text, mut images) = (String::new(), Vec::new());
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(part["text"].as_str().unwrap_or("")),
            Some("image_url") => {
                let url = part
                    .pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let data = parts::data_url(url)
                    .map(|(_, data)| data)
                    .ok_or_else(|| {
                        bad(format!(
                            "messages[{i}]: an image given by URL: Ollama takes images inline, as data: URLs with base64"
                        ))
                    })?;
                images.push(data.to_string());
            }
            other => {
                return Err(bad(format!(
                    "messages[{i}]: a content part of type {other:?} is not one Ollama takes"
                )));
            }
        }
    }
    Ok((text, images))
}
