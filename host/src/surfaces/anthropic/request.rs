//! An Anthropic Messages request: its checks (the fields every request needs, with
//! messages naming the field as Anthropic's API does, e.g. `max_tokens: Field
//! required`) and its translation into an OpenAI chat-completions body.
//!
//! Translation, field by field:
//! - `system` (a string or text blocks) → a leading `system` message;
//! - user `text`/`image` blocks → `content` (a plain string when it is only text,
//!   else `text`/`image_url` parts, images as `data:` URLs); `tool_result` blocks →
//!   `tool` messages placed before the rest of that user message, since OpenAI
//!   wants the results right after the assistant message that called the tools
//!   (`is_error` results are sent as `{"error": text}`, as the agent loop does);
//! - assistant `text` → `content`, `tool_use` → `tool_calls` (input as JSON text);
//!   `thinking` blocks are dropped (providers take no reasoning as input);
//! - `tools` (custom tools) → function tools; `tool_choice` auto/any/tool/none →
//!   `auto`/`required`/named function/`none`, `disable_parallel_tool_use` →
//!   `parallel_tool_calls: false`;
//! - `max_tokens`, `temperature`, `top_p` as they are, `stop_sequences` → `stop`,
//!   `metadata.user_id` → `user`. `top_k`, `thinking`, `service_tier` and unknown
//!   keys have no OpenAI counterpart and are left out.
//!
//! Anthropic's own server tools and blocks that need Anthropic's backend
//! (documents, search results, server tool results) are refused with a 400 naming
//! the block, rather than silently dropped.

use crate::llm::anthropic_wire::{
    REDACTED_THINKING, TEXT, THINKING, TOOL_USE, is_thinking_block, thinking_extension,
};
use serde_json::{Map, Value, json};

/// Why a request cannot be served; shown as a 400 `invalid_request_error`.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// The body is not JSON.
    Json(serde_json::Error),
    /// The body is JSON but not an object.
    NotAnObject,
    /// A required field is absent.
    Missing(String),
    /// A field has the wrong type or value; `expected` says what it must be.
    Invalid { field: String, expected: String },
    /// A field or block this hub cannot forward to an OpenAI-compatible provider.
    Unsupported { field: String, what: String },
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Json(e) => write!(f, "the request body is not valid JSON: {e}"),
            RequestError::NotAnObject => f.write_str("the request body must be a JSON object"),
            RequestError::Missing(field) => write!(f, "{field}: Field required"),
            RequestError::Invalid { field, expected } => write!(f, "{field}: {expected}"),
            RequestError::Unsupported { field, what } => write!(
                f,
                "{field}: {what} is not supported: this hub forwards requests to OpenAI-compatible providers"
            ),
        }
    }
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RequestError::Json(e) => Some(e),
            _ => None,
        }
    }
}

fn invalid(field: impl Into<String>, expected: impl Into<String>) -> RequestError {
    RequestError::Invalid {
        field: field.into(),
        expected: expected.into(),
    }
}

fn unsupported(field: impl Into<String>, what: impl Into<String>) -> RequestError {
    RequestError::Unsupported {
        field: field.into(),
        what: what.into(),
    }
}

/// What the handler needs from a checked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checked {
    /// `model` as the client named it (a route of the hub's providers).
    pub model: String,
    /// `stream`: answer with events rather than one message.
    pub stream: bool,
    /// Whether the request offers tools of its own (`tools` non-empty).
    pub has_tools: bool,
}

/// Parses `bytes` and checks the fields every request needs: `model`,
/// `max_tokens`, `messages` (each with a `role` and `content`), `stream`.
pub(crate) fn check(bytes: &[u8]) -> Result<(Value, Checked), RequestError> {
    let body: Value = serde_json::from_slice(bytes).map_err(RequestError::Json)?;
    let Value::Object(obj) = &body else {
        return Err(RequestError::NotAnObject);
    };
    let model = match obj.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(_) => return Err(invalid("model", "must be a non-empty string")),
        None => return Err(RequestError::Missing("model".into())),
    };
    match obj.get("max_tokens") {
        Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {}
        Some(_) => return Err(invalid("max_tokens", "must be an integer of at least 1")),
        None => return Err(RequestError::Missing("max_tokens".into())),
    }
    let messages = match obj.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => return Err(invalid("messages", "must contain at least one message")),
        Some(_) => return Err(invalid("messages", "must be an array of messages")),
        None => return Err(RequestError::Missing("messages".into())),
    };
    for (i, m) in messages.iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("user" | "assistant") => {}
            _ => {
                return Err(invalid(
                    format!("messages.{i}.role"),
                    "must be \"user\" or \"assistant\"",
                ));
            }
        }
        match m.get("content") {
            Some(Value::String(_) | Value::Array(_)) => {}
            Some(_) => {
                return Err(invalid(
                    format!("messages.{i}.content"),
                    "must be a string or an array of content blocks",
                ));
            }
            None => return Err(RequestError::Missing(format!("messages.{i}.content"))),
        }
    }
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("stream", "must be a boolean")),
    };
    let has_tools = obj
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let checked = Checked {
        model,
        stream,
        has_tools,
    };
    Ok((body, checked))
}

/// The text of `system`: a string or an array of text blocks (joined by blank lines).
pub(crate) fn system_text(system: &Value) -> Result<String, RequestError> {
    match system {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                match (b.get("type").and_then(Value::as_str), b.get("text")) {
                    (Some("text"), Some(Value::String(t))) => texts.push(t.as_str()),
                    _ => return Err(invalid(format!("system.{i}"), "must be a text block")),
                }
            }
            Ok(texts.join("\n\n"))
        }
        _ => Err(invalid("system", "must be a string or an array of text blocks")),
    }
}

/// The OpenAI chat-completions body for a checked Anthropic request `body`, sent to
/// the provider's model `upstream_model`. Streaming options are the caller's.
pub(crate) fn to_openai(body: &Value, upstream_model: &str) -> Result<Value, RequestError> {
    let mut out = Map::new();
    out.insert("model".into(), Value::String(upstream_model.to_string()));
    let mut messages = Vec::new();
    let system = system_text(body.get("system").unwrap_or(&Value::Null))?;
    if !system.is_empty() {
        messages.push(json!({ "role": "system", "content": system }));
    }
    let empty = Vec::new();
    for (i, m) in body["messages"].as_array().unwrap_or(&empty).iter().enumerate() {
        let content = blocks_of(&m["content"]);
        if m["role"] == "assistant" {
            messages.push(assistant_message(i, &content)?);
        } else {
            user_messages(i, &content, &mut messages)?;
        }
    }
    out.insert("messages".into(), Value::Array(messages));
    for key in ["max_tokens", "temperature", "top_p"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(stop) = body.get("stop_sequences").filter(|v| !v.is_null()) {
        out.insert("stop".into(), stop.clone());
    }
    if let Some(user) = body.pointer("/metadata/user_id").filter(|v| v.is_string()) {
        out.insert("user".into(), user.clone());
    }
    tools(body, &mut out)?;
    Ok(Value::Object(out))
}

/// `content` as blocks: a string is one text block.
pub(crate) fn blocks_of(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![json!({ "type": "text", "text": s })],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The type of block `b`, or the error naming where it sits.
pub(crate) fn block_type<'b>(b: &'b Value, field: &str) -> Result<&'b str, RequestError> {
    b.get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{field}.type"), "must be a content block type"))
}

/// A text block's text.
pub(crate) fn block_text<'b>(b: &'b Value, field: &str) -> Result<&'b str, RequestError> {
    b.get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{field}.text"), "must be a string"))
}

/// An image block's URL: a `data:` URL for base64 sources, the URL itself otherwise.
pub(crate) fn image_url(b: &Value, field: &str) -> Result<String, RequestError> {
    let source = &b["source"];
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let media = source.get("media_type").and_then(Value::as_str);
            let data = source.get("data").and_then(Value::as_str);
            match (media, data) {
                (Some(media), Some(data)) => Ok(format!("data:{media};base64,{data}")),
                _ => Err(invalid(
                    format!("{field}.source"),
                    "a base64 image needs media_type and data",
                )),
            }
        }
        Some("url") => source
            .get("url")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| invalid(format!("{field}.source.url"), "must be a string")),
        Some(other) => Err(unsupported(
            format!("{field}.source"),
            format!("image source {other:?}"),
        )),
        None => Err(invalid(
            format!("{field}.source.type"),
            "must be \"base64\" or \"url\"",
        )),
    }
}

fn user_messages(i: usize, content: &[Value], out: &mut Vec<Value>) -> Result<(), RequestError> {
    let mut parts = Vec::new();
    let mut only_text = true;
    for (j, b) in content.iter().enumerate() {
        let field = format!("messages.{i}.content.{j}");
        match block_type(b, &field)? {
            "text" => parts.push(json!({ "type": "text", "text": block_text(b, &field)? })),
            "image" => {
                only_text = false;
                parts.push(json!({ "type": "image_url", "image_url": { "url": image_url(b, &field)? } }));
            }
            "tool_result" => out.push(tool_result(b, &field)?),
            other => return Err(unsupported(field, format!("a {other:?} block in a user message"))),
        }
    }
    if parts.is_empty() {
        return Ok(());
    }
    let content = if only_text {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n\n"))
    } else {
        Value::Array(parts)
    };
    out.push(json!({ "role": "user", "content": content }));
    Ok(())
}

/// A `tool_result` block as an OpenAI `tool` message.
fn tool_result(b: &Value, field: &str) -> Result<Value, RequestError> {
    let id = b
        .get("tool_use_id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{field}.tool_use_id"), "must be a string"))?;
    let text = match b.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (k, c) in blocks.iter().enumerate() {
                let inner = format!("{field}.content.{k}");
                match block_type(c, &inner)? {
                    "text" => texts.push(block_text(c, &inner)?),
                    other => {
                        return Err(unsupported(
                            inner,
                            format!("a {other:?} block inside a tool_result"),
                        ));
                    }
                }
            }
            texts.join("\n\n")
        }
        Some(_) => {
            return Err(invalid(
                format!("{field}.content"),
                "must be a string or text blocks",
            ));
        }
    };
    let content = if b.get("is_error").and_then(Value::as_bool) == Some(true) {
        json!({ "error": text }).to_string()
    } else {
        text
    };
    Ok(json!({ "role": "tool", "tool_call_id": id, "content": content }))
}

fn assistant_message(i: usize, content: &[Value]) -> Result<Value, RequestError> {
    let mut text = String::new();
    let (mut calls, mut thinking) = (Vec::new(), Vec::new());
    for (j, b) in content.iter().enumerate() {
        let field = format!("messages.{i}.content.{j}");
        match block_type(b, &field)? {
            TEXT => text.push_str(block_text(b, &field)?),
            // Kept for an Anthropic upstream, which wants them back signed.
            THINKING | REDACTED_THINKING if is_thinking_block(b) => thinking.push(b.clone()),
            THINKING | REDACTED_THINKING => {}
            TOOL_USE => {
                let id = b.get("id").and_then(Value::as_str);
                let name = b.get("name").and_then(Value::as_str);
                let (Some(id), Some(name)) = (id, name) else {
                    return Err(invalid(field, "a tool_use block needs a string id and name"));
                };
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": { "name": name, "arguments": input.to_string() },
                }));
            }
            other => {
                return Err(unsupported(
                    field,
                    format!("a {other:?} block in an assistant message"),
                ));
            }
        }
    }
    let mut msg = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { Value::String(text) },
    });
    if !calls.is_empty() {
        msg["tool_calls"] = Value::Array(calls);
    }
    if !thinking.is_empty() {
        msg["extra_content"] = thinking_extension(thinking);
    }
    Ok(msg)
}

/// `tools` and `tool_choice` into `out`.
fn tools(body: &Value, out: &mut Map<String, Value>) -> Result<(), RequestError> {
    let tools = match body.get("tools") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(t)) => t,
        Some(_) => return Err(invalid("tools", "must be an array of tools")),
    };
    let mut functions = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        match t.get("type").and_then(Value::as_str) {
            None | Some("custom") => {}
            Some(other) => {
                return Err(unsupported(
                    format!("tools.{i}.type"),
                    format!("the server tool {other:?} (only custom tools can be forwarded)"),
                ));
            }
        }
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            return Err(RequestError::Missing(format!("tools.{i}.name")));
        };
        let schema = t
            .get("input_schema")
            .ok_or_else(|| RequestError::Missing(format!("tools.{i}.input_schema")))?;
        let mut function = json!({ "name": name, "parameters": schema });
        if let Some(d) = t.get("description").and_then(Value::as_str) {
            function["description"] = Value::String(d.to_string());
        }
        functions.push(json!({ "type": "function", "function": function }));
    }
    if functions.is_empty() {
        return Ok(());
    }
    out.insert("tools".into(), Value::Array(functions));
    let Some(choice) = body.get("tool_choice").filter(|c| !c.is_null()) else {
        return Ok(());
    };
    let openai = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => match choice.get("name").and_then(Value::as_str) {
            Some(name) => json!({ "type": "function", "function": { "name": name } }),
            None => return Err(RequestError::Missing("tool_choice.name".into())),
        },
        _ => {
            return Err(invalid(
                "tool_choice.type",
                "must be \"auto\", \"any\", \"tool\" or \"none\"",
            ));
        }
    };
    out.insert("tool_choice".into(), openai);
    if choice.get("disable_parallel_tool_use").and_then(Value::as_bool) == Some(true) {
        out.insert("parallel_tool_calls".into(), Value::Bool(false));
    }
    Ok(())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
