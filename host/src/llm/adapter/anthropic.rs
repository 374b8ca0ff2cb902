//! The hub's request (OpenAI chat completions) as Anthropic's Messages API
//! (`POST /v1/messages`) takes it: the inverse of what the `/v1/messages` surface
//! does with a client's Messages request (`surfaces::anthropic::request`).
//!
//! - `system`/`developer` messages → `system` (their texts joined by a blank line);
//! - user content → `text` and `image` blocks (a `data:` URL as a base64 source,
//!   any other URL as a `url` source); assistant text → a `text` block, its tool
//!   calls → `tool_use` blocks (arguments parsed into `input`); its reasoning is
//!   left out (Anthropic takes thinking back only with the signature it made);
//! - `tool` messages → `tool_result` blocks in a user message; messages of the
//!   same role in a row are merged, as the API wants roles to alternate;
//! - `tools` → `{name, description, input_schema}`; `tool_choice` auto / required
//!   / none / a named function → `auto` / `any` / `none` / `tool`, and
//!   `parallel_tool_calls: false` → `disable_parallel_tool_use`;
//! - `max_tokens` (or `max_completion_tokens`; else the target's
//!   `max_output_tokens`, else [`DEFAULT_MAX_TOKENS`]: Anthropic requires it),
//!   `temperature`, `top_p`, `stop` → `stop_sequences`, `user` →
//!   `metadata.user_id`, `stream`.

use super::RequestError;
use super::parts::{self, Choice, Piece};
use crate::config::ProviderKind;
use crate::llm::providers::Route;
use serde_json::{Map, Value, json};

/// `max_tokens` sent when neither the request nor the target's
/// `max_output_tokens` says (Anthropic's API requires one).
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

fn bad(message: String) -> RequestError {
    RequestError {
        kind: ProviderKind::Anthropic,
        message,
    }
}

/// `body` as a Messages request to `route`.
pub(crate) fn request(route: &Route, body: &Value, stream: bool) -> Result<Value, RequestError> {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    let (system, messages) = self::messages(messages)?;
    let max_tokens = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64))
        .or(route.tuning().max_output_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let mut out = Map::new();
    out.insert("model".into(), json!(route.model));
    out.insert("max_tokens".into(), json!(max_tokens));
    if !system.is_empty() {
        out.insert("system".into(), json!(system));
    }
    out.insert("messages".into(), Value::Array(messages));
    out.insert("stream".into(), json!(stream));
    parts::copy_fields(
        body,
        &mut out,
        &[("temperature", "temperature"), ("top_p", "top_p")],
    );
    if let Some(stop) = parts::stop_list(body) {
        out.insert("stop_sequences".into(), stop);
    }
    if let Some(user) = body.get("user").and_then(Value::as_str) {
        out.insert("metadata".into(), json!({ "user_id": user }));
    }
    tools(body, &mut out);
    Ok(Value::Object(out))
}

fn tools(body: &Value, out: &mut Map<String, Value>) {
    let Some(tools) = parts::tools(body) else {
        return;
    };
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut tool = parts::declaration(t);
            let schema = t["function"].get("parameters").cloned();
            tool["input_schema"] = schema.unwrap_or(json!({"type": "object"}));
            tool
        })
        .collect();
    out.insert("tools".into(), Value::Array(tools));
    let mut choice = match parts::tool_choice(body) {
        Choice::Required => json!({"type": "any"}),
        Choice::None => json!({"type": "none"}),
        Choice::Function(name) => json!({"type": "tool", "name": name}),
        Choice::Auto => json!({"type": "auto"}),
    };
    if body.get("parallel_tool_calls") == Some(&json!(false)) && choice["type"] != "none" {
        choice["disable_parallel_tool_use"] = json!(true);
    }
    out.insert("tool_choice".into(), choice);
}

/// The system text and the alternating messages.
fn messages(messages: &[Value]) -> Result<(String, Vec<Value>), RequestError> {
    let mut system = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let (role, blocks) = match role {
            "system" | "developer" => {
                system.push(text_of(i, &m["content"])?);
                continue;
            }
            "user" => ("user", content_blocks(i, &m["content"])?),
            "assistant" => ("assistant", assistant_blocks(i, m)?),
            "tool" => {
                let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                let text = text_of(i, &m["content"])?;
                (
                    "user",
                    vec![json!({"type": "tool_result", "tool_use_id": id, "content": text})],
                )
            }
            other => {
                return Err(bad(format!(
                    "messages[{i}]: role {other:?} is not one Anthropic knows"
                )));
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                last["content"]
                    .as_array_mut()
                    .expect("content is blocks")
                    .extend(blocks);
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    Ok((system.join("\n\n"), out))
}

fn assistant_blocks(i: usize, m: &Value) -> Result<Vec<Value>, RequestError> {
    let mut blocks = content_blocks(i, &m["content"])?;
    for call in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let input = parts::call_arguments(ProviderKind::Anthropic, i, call)?;
        let name = &call["function"]["name"];
        blocks.push(json!({"type": "tool_use", "id": call["id"], "name": name, "input": input}));
    }
    Ok(blocks)
}

/// A message's content as Anthropic blocks (empty text left out).
fn content_blocks(i: usize, content: &Value) -> Result<Vec<Value>, RequestError> {
    let pieces = parts::pieces(ProviderKind::Anthropic, i, content)?;
    let blocks = pieces.into_iter().map(|piece| match piece {
        Piece::Text(text) => json!({"type": "text", "text": text}),
        Piece::Image(url) => {
            let source = match parts::data_url(url) {
                Some((media_type, data)) => json!({"type": "base64", "media_type": media_type, "data": data}),
                None => json!({"type": "url", "url": url}),
            };
            json!({"type": "image", "source": source})
        }
    });
    Ok(blocks.collect())
}

/// The text of a system or tool message (text parts joined).
fn text_of(i: usize, content: &Value) -> Result<String, RequestError> {
    parts::text(ProviderKind::Anthropic, i, content)
}
