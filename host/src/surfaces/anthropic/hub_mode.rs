//! Hub-tools mode: a Messages request without `tools` that sends
//! `x-wasmhub-tools: hub`, or whose `model` names an agent, is answered by the
//! agent loop (the default agent, or that one), which offers the model the four
//! meta-tools and runs them. This module turns the request into the agent's
//! `ChatRequest` (Anthropic messages → UI messages, in a fresh session).
//!
//! - `system` → a leading system message (after the hub's own prompt);
//! - user `text` and `image` blocks → text and file parts;
//! - assistant `text` → text parts; the `mcp_tool_use` / `mcp_tool_result` blocks
//!   of an earlier hub-mode answer → the tool part they came from (each result
//!   ends a step, so the model sees the exchange it had); `thinking` is dropped;
//! - the client's own `tool_use` / `tool_result` blocks are refused: in this mode
//!   the hub runs the tools.
//!
//! The Messages API is stateless (the client sends the whole conversation each
//! time), so the session exists only while the turn runs; the handler deletes it.

use super::events::HUB_SERVER;
use super::request::{RequestError, block_text, block_type, blocks_of, image_url, system_text};
use crate::agent::{ChatRequest, Trigger, UiMessage};
use serde_json::{Value, json};

/// The request header that selects hub-tools mode, and its value.
pub(crate) const HEADER: &str = "x-wasmhub-tools";
/// The value of [`HEADER`] that asks for the hub's tools.
pub(crate) const HUB: &str = "hub";

/// The agent request for a checked Messages `body` naming `model`.
pub(crate) fn chat_request(body: &Value, model: &str) -> Result<ChatRequest, RequestError> {
    let mut messages = Vec::new();
    let system = system_text(body.get("system").unwrap_or(&Value::Null))?;
    if !system.is_empty() {
        messages
            .push(json!({ "id": "system", "role": "system", "parts": [{ "type": "text", "text": system }] }));
    }
    let empty = Vec::new();
    for (i, m) in body["messages"].as_array().unwrap_or(&empty).iter().enumerate() {
        let content = blocks_of(&m["content"]);
        let id = format!("m{i}");
        let message = if m["role"] == "assistant" {
            json!({ "id": id, "role": "assistant", "parts": assistant_parts(i, &content)? })
        } else {
            json!({ "id": id, "role": "user", "parts": user_parts(i, &content)? })
        };
        messages.push(message);
    }
    let messages = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            serde_json::from_value::<UiMessage>(m).map_err(|e| RequestError::Invalid {
                field: format!("messages.{i}"),
                expected: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ChatRequest {
        // The Messages API cannot ask its user: calls wait for an operator, as REST's do.
        approvals: crate::agent::Approver::Operator,
        session_id: crate::ids::new_id("anthropic"),
        messages,
        trigger: Trigger::SubmitMessage,
        message_id: None,
        model: Some(model.to_string()),
        agent: None,
        sampling: Default::default(),
        output: None,
        parent: None,
        surface: "anthropic",
    })
}

fn refused_tool_block(field: String, kind: &str) -> RequestError {
    RequestError::Invalid {
        field,
        expected: format!(
            "a {kind:?} block cannot be sent with {HEADER}: {HUB} (the hub runs the tools in this mode; \
             send your own tools without that header)"
        ),
    }
}

fn user_parts(i: usize, content: &[Value]) -> Result<Vec<Value>, RequestError> {
    let mut parts = Vec::with_capacity(content.len());
    for (j, b) in content.iter().enumerate() {
        let field = format!("messages.{i}.content.{j}");
        match block_type(b, &field)? {
            "text" => parts.push(json!({ "type": "text", "text": block_text(b, &field)? })),
            "image" => {
                let url = image_url(b, &field)?;
                let media = b
                    .pointer("/source/media_type")
                    .and_then(Value::as_str)
                    .unwrap_or("image/*");
                parts.push(json!({ "type": "file", "mediaType": media, "url": url }));
            }
            kind @ "tool_result" => return Err(refused_tool_block(field, kind)),
            other => {
                return Err(RequestError::Unsupported {
                    field,
                    what: format!("a {other:?} block in a user message"),
                });
            }
        }
    }
    Ok(parts)
}

fn assistant_parts(i: usize, content: &[Value]) -> Result<Vec<Value>, RequestError> {
    let mut parts = vec![json!({ "type": "step-start" })];
    let mut after_result = false;
    for (j, b) in content.iter().enumerate() {
        let field = format!("messages.{i}.content.{j}");
        let kind = block_type(b, &field)?;
        if after_result && matches!(kind, "text" | "mcp_tool_use") {
            // A result ended the step; what follows is the model's next call.
            parts.push(json!({ "type": "step-start" }));
            after_result = false;
        }
        match kind {
            "text" => parts.push(json!({ "type": "text", "text": block_text(b, &field)?, "state": "done" })),
            "thinking" | "redacted_thinking" => {}
            "mcp_tool_use" if b.get("server_name").and_then(Value::as_str) == Some(HUB_SERVER) => {
                parts.push(hub_call_part(b, &field)?)
            }
            "mcp_tool_result" => {
                after_result = true;
                apply_result(&mut parts, b, &field)?;
            }
            kind @ ("tool_use" | "mcp_tool_use") => return Err(refused_tool_block(field, kind)),
            other => {
                return Err(RequestError::Unsupported {
                    field,
                    what: format!("a {other:?} block in an assistant message"),
                });
            }
        }
    }
    Ok(parts)
}

/// The tool part of an earlier hub call, waiting for its result.
fn hub_call_part(b: &Value, field: &str) -> Result<Value, RequestError> {
    let id = b.get("id").and_then(Value::as_str);
    let name = b.get("name").and_then(Value::as_str);
    let (Some(id), Some(name)) = (id, name) else {
        return Err(RequestError::Invalid {
            field: field.to_string(),
            expected: "an mcp_tool_use block needs a string id and name".into(),
        });
    };
    Ok(json!({
        "type": format!("tool-{name}"), "toolCallId": id, "state": "input-available",
        "input": b.get("input").cloned().unwrap_or_else(|| json!({})),
    }))
}

/// Completes the tool part an `mcp_tool_result` answers.
fn apply_result(parts: &mut [Value], b: &Value, field: &str) -> Result<(), RequestError> {
    let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
    let Some(part) = parts.iter_mut().rev().find(|p| p["toolCallId"] == id) else {
        return Err(RequestError::Invalid {
            field: format!("{field}.tool_use_id"),
            expected: format!("{id:?} names no mcp_tool_use block before it"),
        });
    };
    let text: String = match b.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks.iter().filter_map(|c| c["text"].as_str()).collect(),
        _ => String::new(),
    };
    if b.get("is_error").and_then(Value::as_bool) == Some(true) {
        part["state"] = json!("output-error");
        part["errorText"] = Value::String(text);
    } else {
        part["state"] = json!("output-available");
        part["output"] = serde_json::from_str(&text).unwrap_or(Value::String(text));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Part, Role, ToolState};

    #[test]
    fn an_earlier_hub_answer_becomes_tool_parts_in_steps() {
        let body = json!({
            "system": [{"type": "text", "text": "be brief"}],
            "messages": [
                {"role": "user", "content": "what is 6*7?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me compute."},
                    {"type": "mcp_tool_use", "id": "c1", "name": "hub_call", "server_name": "wasmhub", "input": {"calls": []}},
                    {"type": "mcp_tool_result", "tool_use_id": "c1", "is_error": false, "content": [{"type": "text", "text": "[{\"ok\":true}]"}]},
                    {"type": "text", "text": "42"}
                ]},
                {"role": "user", "content": [{"type": "text", "text": "thanks"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}]}
            ]
        });
        let req = chat_request(&body, "up/m").unwrap();
        assert_eq!(req.model.as_deref(), Some("up/m"));
        assert!(req.session_id.starts_with("anthropic_"));
        let roles: Vec<Role> = req.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User]);
        let parts = &req.messages[2].parts;
        assert_eq!(parts.iter().filter(|p| matches!(p, Part::StepStart)).count(), 2);
        let Some(Part::Tool(t)) = parts.iter().find(|p| matches!(p, Part::Tool(_))) else {
            panic!("a tool part: {parts:?}");
        };
        assert_eq!(
            (t.tool_name.as_str(), t.state),
            ("hub_call", ToolState::OutputAvailable)
        );
        assert_eq!(t.output, Some(json!([{"ok": true}])));
        assert!(
            matches!(&req.messages[3].parts[1], Part::Other(v) if v["url"] == "data:image/png;base64,AA")
        );
    }

    #[test]
    fn the_clients_own_tool_blocks_are_refused() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
        ]});
        let e = chat_request(&body, "m").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "messages.1.content.0: a \"tool_use\" block cannot be sent with x-wasmhub-tools: hub"
            ),
            "{e}"
        );
        let body =
            json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]});
        assert!(chat_request(&body, "m").is_err());
    }
}
