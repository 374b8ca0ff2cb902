//! Pieces of the hub's OpenAI request that every adapter reads the same way: the
//! stop sequences, the tools offered and the choice among them, a tool call's
//! arguments as an object, a message's content as
//! text and image pieces, a `data:` URL's parts, fields copied under another
//! name; and the route's configured `options`.

use super::RequestError;
use crate::config::ProviderKind;
use crate::llm::Route;
use serde_json::{Map, Value, json};

/// The route's `options`: the provider's, the model's over them key by key.
pub(super) fn configured_options(route: &Route) -> Map<String, Value> {
    let mut options = route.provider.config.options.clone();
    if let Some(settings) = route.settings() {
        options.extend(settings.options.clone());
    }
    options
}

/// `stop` (a string or an array of strings) as an array.
pub(super) fn stop_list(body: &Value) -> Option<Value> {
    match body.get("stop") {
        Some(Value::String(stop)) => Some(json!([stop])),
        Some(stop @ Value::Array(_)) => Some(stop.clone()),
        _ => None,
    }
}

/// Copies each `(from, to)` field of `body` that is set into `out` as `to`.
pub(super) fn copy_fields(body: &Value, out: &mut Map<String, Value>, fields: &[(&str, &str)]) {
    for (from, to) in fields {
        if let Some(v) = body.get(*from).filter(|v| !v.is_null()) {
            out.insert((*to).into(), v.clone());
        }
    }
}

/// The arguments of the tool call `call` in message `i` as a JSON object (the
/// OpenAI request carries them as JSON text), for a provider of `kind`.
pub(super) fn call_arguments(kind: ProviderKind, i: usize, call: &Value) -> Result<Value, RequestError> {
    let function = &call["function"];
    match &function["arguments"] {
        Value::String(text) if text.trim().is_empty() => Ok(json!({})),
        Value::String(text) => serde_json::from_str::<Value>(text).map_err(|e| RequestError {
            kind,
            message: format!(
                "messages[{i}]: the arguments of the call to {:?} are not JSON: {e}",
                function["name"].as_str().unwrap_or("")
            ),
        }),
        Value::Null => Ok(json!({})),
        other => Ok(other.clone()),
    }
}

/// A `data:<media type>;base64,<data>` URL's media type and data.
pub(super) fn data_url(url: &str) -> Option<(&str, &str)> {
    url.strip_prefix("data:")?.split_once(";base64,")
}

/// One piece of a message's content: text, or an image by its URL.
pub(super) enum Piece<'a> {
    Text(&'a str),
    Image(&'a str),
}

/// The content of message `i` as pieces (empty text left out), for a provider
/// of `kind`.
pub(super) fn pieces(kind: ProviderKind, i: usize, content: &Value) -> Result<Vec<Piece<'_>>, RequestError> {
    let bad = |message: String| RequestError { kind, message };
    let items = match content {
        Value::Null => return Ok(Vec::new()),
        Value::String(text) if text.is_empty() => return Ok(Vec::new()),
        Value::String(text) => return Ok(vec![Piece::Text(text)]),
        Value::Array(items) => items,
        _ => {
            return Err(bad(format!(
                "messages[{i}]: content must be a string or an array of parts"
            )));
        }
    };
    let mut out = Vec::new();
    for part in items {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => match part["text"].as_str().unwrap_or("") {
                "" => {}
                text => out.push(Piece::Text(text)),
            },
            Some("image_url") => {
                let url = part.pointer("/image_url/url").and_then(Value::as_str);
                out.push(Piece::Image(url.unwrap_or("")));
            }
            other => {
                return Err(bad(format!(
                    "messages[{i}]: a content part of type {other:?} is not one {} takes here",
                    kind.as_str()
                )));
            }
        }
    }
    Ok(out)
}

/// The text of message `i` (a system or tool message: its text pieces joined).
pub(super) fn text(kind: ProviderKind, i: usize, content: &Value) -> Result<String, RequestError> {
    let mut text = String::new();
    for piece in pieces(kind, i, content)? {
        match piece {
            Piece::Text(t) => text.push_str(t),
            Piece::Image(_) => {
                return Err(RequestError {
                    kind,
                    message: format!("messages[{i}]: only text is taken in this message"),
                });
            }
        }
    }
    Ok(text)
}

/// The request's `tools` when it offers any.
pub(super) fn tools(body: &Value) -> Option<&Vec<Value>> {
    body.get("tools")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty())
}

/// A tool's `name` and its `description`, if it has one: the start of its
/// declaration in both Anthropic's and Gemini's API.
pub(super) fn declaration(tool: &Value) -> Value {
    let f = &tool["function"];
    let mut out = json!({ "name": f["name"] });
    if let Some(d) = f.get("description").filter(|d| d.is_string()) {
        out["description"] = d.clone();
    }
    out
}

/// OpenAI's `tool_choice`, read the same way for every provider.
pub(super) enum Choice<'a> {
    /// The model decides (also when unset or not understood).
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call a tool.
    None,
    /// The model must call the function of this name.
    Function(&'a Value),
}

pub(super) fn tool_choice(body: &Value) -> Choice<'_> {
    match body.get("tool_choice") {
        Some(Value::String(c)) if c == "required" => Choice::Required,
        Some(Value::String(c)) if c == "none" => Choice::None,
        Some(Value::Object(c)) => match c.get("function").and_then(|f| f.get("name")) {
            Some(name) => Choice::Function(name),
            None => Choice::Auto,
        },
        _ => Choice::Auto,
    }
}
