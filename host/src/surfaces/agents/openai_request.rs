//! A Chat Completions request whose `model` names an agent, as the agent's
//! `ChatRequest`: `system`/`developer` messages become system messages (after the
//! agent's own prompt), `user` text and `image_url` parts become text and file
//! parts, `assistant` text becomes text parts. The agent runs the hub's tools, so
//! the client's own `tools`, assistant `tool_calls` and `tool` messages are refused
//! with the field named.

use super::sampling_of;
use crate::agent::{Approver, ChatRequest, Trigger, UiMessage};
use serde_json::{Value, json};

/// Why a request cannot be run by an agent (400), naming the field.
#[derive(Debug)]
pub(crate) struct RequestError {
    /// The field (`messages.2.tool_calls`).
    pub field: String,
    /// What it must be.
    pub expected: String,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.expected)
    }
}

impl std::error::Error for RequestError {}

fn invalid(field: impl Into<String>, expected: impl Into<String>) -> RequestError {
    RequestError {
        field: field.into(),
        expected: expected.into(),
    }
}

/// The agent `agent`'s turn for a Chat Completions `body`.
pub(crate) fn chat_request(body: &Value, agent: &str) -> Result<ChatRequest, RequestError> {
    for key in ["tools", "functions"] {
        if body
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
        {
            return Err(invalid(
                key,
                format!("the agent {agent:?} runs the hub's tools itself; send no tools of your own"),
            ));
        }
    }
    let Some(messages) = body
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
    else {
        return Err(invalid("messages", "must be a non-empty array of messages"));
    };
    let mut ui = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let field = format!("messages.{i}");
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let (role, parts) = match role {
            "system" | "developer" => ("system", vec![text_part(&text_of(m, &field)?)]),
            "user" => ("user", user_parts(m, &field)?),
            "assistant" if m.get("tool_calls").is_some_and(|c| !c.is_null()) => {
                return Err(invalid(
                    format!("{field}.tool_calls"),
                    "an agent's conversation carries no client tool calls (the agent runs its own tools)",
                ));
            }
            "assistant" => ("assistant", vec![text_part(&text_of(m, &field)?)]),
            other => {
                return Err(invalid(
                    format!("{field}.role"),
                    format!(
                        "{other:?}: an agent takes system, developer, user and assistant messages (it runs its own tools)"
                    ),
                ));
            }
        };
        let message = json!({ "id": format!("m{i}"), "role": role, "parts": parts });
        ui.push(serde_json::from_value::<UiMessage>(message).map_err(|e| invalid(field, e.to_string()))?);
    }
    let sampling = sampling_of(body, &["max_completion_tokens", "max_tokens"])
        .map_err(|e| invalid(e.field, format!("must be {}", e.expected)))?;
    Ok(ChatRequest {
        // This API cannot ask its user: calls wait for an operator, as REST's do.
        approvals: Approver::Operator,
        session_id: crate::ids::new_id("completion"),
        messages: ui,
        trigger: Trigger::SubmitMessage,
        message_id: None,
        model: None,
        agent: Some(agent.to_string()),
        sampling,
        output: None,
        parent: None,
        surface: "openai",
    })
}

fn text_part(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// The text of a message's `content`: a string, or the text parts of an array.
fn text_of(m: &Value, field: &str) -> Result<String, RequestError> {
    match m.get("content") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, p) in parts.iter().enumerate() {
                match (
                    p.get("type").and_then(Value::as_str),
                    p.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    _ => {
                        return Err(invalid(
                            format!("{field}.content.{j}"),
                            "must be a text part ({\"type\": \"text\", \"text\": ...})",
                        ));
                    }
                }
            }
            Ok(text)
        }
        None | Some(Value::Null) => Ok(String::new()),
        Some(_) => Err(invalid(
            format!("{field}.content"),
            "must be a string or an array of parts",
        )),
    }
}

/// A user message's text and image parts.
fn user_parts(m: &Value, field: &str) -> Result<Vec<Value>, RequestError> {
    let Some(Value::Array(parts)) = m.get("content") else {
        return Ok(vec![text_part(&text_of(m, field)?)]);
    };
    let mut out = Vec::with_capacity(parts.len());
    for (j, p) in parts.iter().enumerate() {
        let at = format!("{field}.content.{j}");
        match p.get("type").and_then(Value::as_str) {
            Some("text") => match p.get("text").and_then(Value::as_str) {
                Some(t) => out.push(text_part(t)),
                None => return Err(invalid(format!("{at}.text"), "must be a string")),
            },
            Some("image_url") => match p.pointer("/image_url/url").and_then(Value::as_str) {
                Some(url) => out.push(json!({ "type": "file", "mediaType": media_type(url), "url": url })),
                None => return Err(invalid(format!("{at}.image_url.url"), "must be a string")),
            },
            _ => return Err(invalid(at, "an agent takes text and image_url parts")),
        }
    }
    Ok(out)
}

/// The media type a `data:` URL names, else any image.
fn media_type(url: &str) -> &str {
    url.strip_prefix("data:")
        .and_then(|rest| rest.split(';').next())
        .filter(|t| !t.is_empty())
        .unwrap_or("image/*")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Role;

    #[test]
    fn messages_become_ui_messages_and_sampling_is_read() {
        let body = json!({"model": "writer", "temperature": 0.4, "max_tokens": 50, "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
            {"role": "assistant", "content": "seen"},
            {"role": "user", "content": "and now?"}
        ]});
        let req = chat_request(&body, "writer").unwrap();
        assert_eq!(req.agent.as_deref(), Some("writer"));
        assert_eq!(req.model, None);
        let roles: Vec<Role> = req.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User]);
        assert_eq!(
            (req.sampling.temperature, req.sampling.max_output_tokens),
            (Some(0.4), Some(50))
        );
    }

    #[test]
    fn client_tools_are_refused_naming_the_field() {
        for (body, expected) in [
            (
                json!({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}),
                "tools: the agent \"w\" runs",
            ),
            (json!({"messages": []}), "messages: must be a non-empty array"),
            (
                json!({"messages": [{"role": "tool", "content": "x"}]}),
                "messages.0.role: \"tool\"",
            ),
            (
                json!({"messages": [{"role": "assistant", "tool_calls": []}]}),
                "messages.0.tool_calls",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}),
                "temperature: must be a number",
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "audio"}]}]}),
                "messages.0.content.0: an agent takes text",
            ),
        ] {
            let e = chat_request(&body, "w").unwrap_err().to_string();
            assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
        }
    }
}
