//! The hub's request (OpenAI chat completions) as Anthropic's Messages API
//! (`POST /v1/messages`) takes it: the inverse of what the `/v1/messages` surface
//! does with a client's Messages request (`surfaces::anthropic::request`).
//!
//! - `system`/`developer` messages → `system` (their texts joined by a blank line);
//! - user content → `text` and `image` blocks (a `data:` URL as a base64 source,
//!   any other URL as a `url` source); assistant text → a `text` block, its tool
//!   calls → `tool_use` blocks (arguments parsed into `input`), after its
//!   thinking blocks as they came (`anthropic_wire::THINKING_POINTER`: signed
//!   `thinking` and `redacted_thinking`); its plain reasoning text is left out
//!   (Anthropic takes thinking back only with the signature it made);
//! - `tool` messages → `tool_result` blocks in a user message; messages of the
//!   same role in a row are merged, as the API wants roles to alternate;
//! - `tools` → `{name, description, input_schema}`; `tool_choice` auto / required
//!   / none / a named function → `auto` / `any` / `none` / `tool`, and
//!   `parallel_tool_calls: false` → `disable_parallel_tool_use`;
//! - `max_tokens` (or `max_completion_tokens`; else the target's
//!   `max_output_tokens`, else [`DEFAULT_MAX_TOKENS`]: Anthropic requires it),
//!   `temperature`, `top_p`, `stop` → `stop_sequences`, `user` →
//!   `metadata.user_id`, `stream`; the provider's and model's `options` as
//!   request fields; extended thinking from `reasoning_effort` or `think`
//!   ([`thinking`]).

use super::RequestError;
use super::parts::{self, Choice, Piece};
use crate::config::ProviderKind;
use crate::llm::anthropic_wire::{TOOL_RESULT, TOOL_USE, thinking_blocks};
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
    options(route, &mut out);
    thinking(route, body, &mut out)?;
    if let Some(stop) = parts::stop_list(body) {
        out.insert("stop_sequences".into(), stop);
    }
    if let Some(user) = body.get("user").and_then(Value::as_str) {
        out.insert("metadata".into(), json!({ "user_id": user }));
    }
    tools(body, &mut out);
    Ok(Value::Object(out))
}

/// The provider's `options`, the model's over them key by key, as fields of the
/// request (`top_k`, `thinking`, `service_tier`, ...): a field the request
/// already has (the model, the messages, `stream`, the client's sampling) is
/// kept.
fn options(route: &Route, out: &mut Map<String, Value>) {
    for (k, v) in parts::configured_options(route) {
        out.entry(k).or_insert(v);
    }
}

/// `thinking` budgets for the request's `reasoning_effort`.
pub(crate) const EFFORT_BUDGETS: [(&str, u64); 4] = [
    ("minimal", 1024),
    ("low", 1024),
    ("medium", 4096),
    ("high", 16384),
];

/// The budget `think = true` asks for (the `medium` effort's).
pub(crate) const THINK_BUDGET: u64 = 4096;

/// Extended thinking: the request's `reasoning_effort` (`none` turns it off),
/// else `think` (the model's, else the provider's) unless `options` set
/// `thinking`. The budget comes on top of the answer's `max_tokens` (Anthropic
/// counts thinking in it and wants the budget below it), and `temperature` and
/// `top_p` are left out (the API refuses them with thinking).
///
/// Anthropic allows thinking only with `tool_choice` auto or none: a request
/// that forces a tool and asks for thinking itself (`reasoning_effort`) is
/// refused here, naming both; thinking that only the configuration turns on
/// (`think`, `options.thinking`) gives way to the client's forced tool.
fn thinking(route: &Route, body: &Value, out: &mut Map<String, Value>) -> Result<(), RequestError> {
    let forced = parts::tools(body).is_some_and(|t| !t.is_empty())
        && matches!(parts::tool_choice(body), Choice::Required | Choice::Function(_));
    let budget = match body.get("reasoning_effort").filter(|e| !e.is_null()) {
        Some(effort) => match effort.as_str() {
            Some("none") => {
                out.remove("thinking");
                return Ok(());
            }
            Some(_) if forced => {
                return Err(bad(
                    "reasoning_effort turns on Anthropic extended thinking, which allows only \
                     tool_choice auto or none; this request forces a tool (tool_choice \
                     required or a named function): drop one of them"
                        .into(),
                ));
            }
            Some(e) => match EFFORT_BUDGETS.iter().find(|(name, _)| *name == e) {
                Some((_, budget)) => Some(*budget),
                None => {
                    return Err(bad(format!(
                        "reasoning_effort {e:?} is not one of none, minimal, low, medium, high"
                    )));
                }
            },
            None => return Err(bad("reasoning_effort must be a string".into())),
        },
        None => {
            let think = route
                .settings()
                .and_then(|s| s.think)
                .or(route.provider.config.think);
            match think {
                Some(true) if !out.contains_key("thinking") => Some(THINK_BUDGET),
                _ => None,
            }
        }
    };
    if forced {
        out.remove("thinking");
        return Ok(());
    }
    if let Some(budget) = budget {
        out.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    let Some(budget) = out.get("thinking").filter(|t| t["type"] == "enabled") else {
        return Ok(());
    };
    let budget = budget["budget_tokens"].as_u64().unwrap_or(0);
    let max_tokens = out["max_tokens"].as_u64().unwrap_or(DEFAULT_MAX_TOKENS);
    out.insert("max_tokens".into(), json!(max_tokens + budget));
    out.remove("temperature");
    out.remove("top_p");
    Ok(())
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
                    vec![json!({"type": TOOL_RESULT, "tool_use_id": id, "content": text})],
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

/// An assistant turn: its thinking blocks first (signed, as they came), then
/// its text and its tool calls.
fn assistant_blocks(i: usize, m: &Value) -> Result<Vec<Value>, RequestError> {
    let mut blocks = thinking_blocks(m);
    blocks.extend(content_blocks(i, &m["content"])?);
    for call in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let input = parts::call_arguments(ProviderKind::Anthropic, i, call)?;
        let name = &call["function"]["name"];
        blocks.push(json!({"type": TOOL_USE, "id": call["id"], "name": name, "input": input}));
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
