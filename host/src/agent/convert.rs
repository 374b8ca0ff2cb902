//! UIMessages -> OpenAI chat-completions `messages`.
//!
//! - system and user messages: their text parts (user images as `image_url` parts);
//! - an assistant message is split at its `step-start` parts: each step becomes one
//!   assistant message (its text as `content`, its tool parts as `tool_calls`)
//!   followed by one `tool` message per call with the result, so the model sees
//!   exactly the exchange it had;
//! - a call that ended in an error is answered `{"error": "..."}`; a call that never
//!   got a result (the turn was aborted) is answered with an error saying so, since
//!   OpenAI rejects a `tool_calls` message whose calls are not all answered;
//! - reasoning parts are not sent back (providers do not accept them as input);
//!   what a provider wants back with a call (a tool part's
//!   `callProviderMetadata`: Gemini's thought signature, the step's signed
//!   Anthropic thinking blocks) goes back as `extra_content`, on the call and on
//!   the message (see `llm::anthropic_wire::THINKING_POINTER`).

use super::message::{Part, Role, ToolPart, ToolState, UiMessage};
use serde_json::{Value, json};

/// What the model is told about a call that has no result.
pub(crate) const INTERRUPTED: &str = "the call was interrupted before it returned a result";

/// What the model is told about a call whose approval the user never gave.
pub(crate) const NOT_APPROVED: &str =
    "the call did not run: it needed the user's approval and the user did not answer the request";

/// What the model is told about a call the user denied: `execution-denied`, with
/// their reason (as the AI SDK's own loop tells its models).
pub(crate) fn denied_json(reason: Option<&str>) -> String {
    let mut v = json!({
        "type": "execution-denied",
        "error": "the user denied this call; it did not run. Do not retry it unless the user asks.",
    });
    if let Some(r) = reason.filter(|r| !r.trim().is_empty()) {
        v["reason"] = Value::String(r.to_string());
    }
    v.to_string()
}

/// The OpenAI messages for `system` (if any) followed by `messages`.
pub(crate) fn to_openai(system: Option<&str>, messages: &[UiMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() * 2 + 1);
    if let Some(system) = system.filter(|s| !s.trim().is_empty()) {
        out.push(json!({ "role": "system", "content": system }));
    }
    for m in messages {
        match m.role {
            Role::System => {
                let text = m.text();
                if !text.is_empty() {
                    out.push(json!({ "role": "system", "content": text }));
                }
            }
            Role::User => out.push(user_message(m)),
            Role::Assistant => assistant_messages(m, &mut out),
        }
    }
    out
}

fn user_message(m: &UiMessage) -> Value {
    let has_image = m.parts.iter().any(|p| image_url(p).is_some());
    if !has_image {
        return json!({ "role": "user", "content": m.text() });
    }
    let mut content = Vec::new();
    for p in &m.parts {
        if let Part::Text { text, .. } = p {
            content.push(json!({ "type": "text", "text": text }));
        } else if let Some(url) = image_url(p) {
            content.push(json!({ "type": "image_url", "image_url": { "url": url } }));
        }
    }
    json!({ "role": "user", "content": content })
}

fn image_url(p: &Part) -> Option<&str> {
    let Part::Other(v) = p else { return None };
    if v.get("type")?.as_str()? != "file" || !v.get("mediaType")?.as_str()?.starts_with("image/") {
        return None;
    }
    v.get("url")?.as_str()
}

/// One step of an assistant message while it is being converted.
#[derive(Default)]
struct Step<'a> {
    text: String,
    calls: Vec<&'a ToolPart>,
}

fn assistant_messages(m: &UiMessage, out: &mut Vec<Value>) {
    let mut step = Step::default();
    for p in &m.parts {
        match p {
            Part::StepStart => flush_step(std::mem::take(&mut step), out),
            Part::Text { text, .. } => step.text.push_str(text),
            Part::Tool(t) => step.calls.push(t),
            Part::Reasoning { .. } | Part::Other(_) => {}
        }
    }
    flush_step(step, out);
}

fn flush_step(step: Step<'_>, out: &mut Vec<Value>) {
    if step.text.is_empty() && step.calls.is_empty() {
        return;
    }
    let mut msg = json!({ "role": "assistant", "content": if step.text.is_empty() { Value::Null } else { Value::String(step.text) } });
    if !step.calls.is_empty() {
        let calls: Vec<Value> = step
            .calls
            .iter()
            .map(|t| {
                let mut call = json!({
                    "id": t.tool_call_id,
                    "type": "function",
                    "function": { "name": t.tool_name, "arguments": arguments_text(t) },
                });
                let (own, message) = split_metadata(t.call_provider_metadata.as_ref());
                if let Some(own) = own {
                    call["extra_content"] = own;
                }
                if let Some(message) = message {
                    msg["extra_content"] = message;
                }
                call
            })
            .collect();
        msg["tool_calls"] = Value::Array(calls);
    }
    out.push(msg);
    for t in step.calls {
        out.push(json!({ "role": "tool", "tool_call_id": t.tool_call_id, "content": result_text(t) }));
    }
}

/// A call's `callProviderMetadata` as the OpenAI message carries it: the
/// call's own `extra_content` (Gemini's thought signature) and the message's
/// (Anthropic's thinking blocks of the step, which its first call kept).
fn split_metadata(meta: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let Some(Value::Object(meta)) = meta else {
        return (None, None);
    };
    let mut own = meta.clone();
    let message = own.remove("anthropic").map(|a| json!({ "anthropic": a }));
    let own = (!own.is_empty()).then_some(Value::Object(own));
    (own, message)
}

/// The arguments as the model sent them: the raw text when it was not valid JSON.
fn arguments_text(t: &ToolPart) -> String {
    match (&t.input, &t.raw_input) {
        (Some(input), _) if !input.is_null() => input.to_string(),
        (_, Some(Value::String(raw))) => raw.clone(),
        (_, Some(raw)) => raw.to_string(),
        _ => "{}".to_string(),
    }
}

/// The `tool` message content for a call.
pub(crate) fn result_text(t: &ToolPart) -> String {
    match t.state {
        ToolState::OutputAvailable => match &t.output {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "null".to_string(),
        },
        ToolState::OutputError => error_json(t.error_text.as_deref().unwrap_or("the call failed")),
        ToolState::OutputDenied => denied_json(t.approval.as_ref().and_then(|a| a.reason.as_deref())),
        ToolState::ApprovalRequested => error_json(NOT_APPROVED),
        ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalResponded => {
            error_json(INTERRUPTED)
        }
    }
}

/// `{"error": message}` as text: how a failed call is reported to the model.
pub(crate) fn error_json(message: &str) -> String {
    json!({ "error": message }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(v: Value) -> UiMessage {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn what_a_provider_wants_back_with_a_call_goes_back() {
        let thinking = json!({"type": "thinking", "thinking": "t", "signature": "EqQB"});
        let history = vec![msg(json!({"id": "a1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-hub_call", "toolCallId": "c1", "state": "output-available", "input": {}, "output": 1,
             "callProviderMetadata": {"google": {"thought_signature": "c2ln"}, "anthropic": {"thinking_blocks": [thinking]}}},
            {"type": "tool-hub_call", "toolCallId": "c2", "state": "output-available", "input": {}, "output": 2,
             "callProviderMetadata": {"google": {"thought_signature": "c2lnMg=="}}},
        ]}))];
        assert_eq!(
            serde_json::to_value(&history[0]).unwrap()["parts"][1]["callProviderMetadata"]["google"],
            json!({"thought_signature": "c2ln"}),
            "the stored message keeps it"
        );
        let out = to_openai(None, &history);
        assert_eq!(
            out[0]["extra_content"],
            json!({"anthropic": {"thinking_blocks": [thinking]}})
        );
        let calls = &out[0]["tool_calls"];
        assert_eq!(
            calls[0]["extra_content"],
            json!({"google": {"thought_signature": "c2ln"}})
        );
        assert_eq!(
            calls[1]["extra_content"],
            json!({"google": {"thought_signature": "c2lnMg=="}})
        );
    }

    #[test]
    fn assistant_steps_become_tool_call_exchanges() {
        let history = vec![
            msg(json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "add 2 and 3"}]})),
            msg(json!({"id": "a1", "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "search first"},
                {"type": "text", "text": "Looking."},
                {"type": "tool-hub_search", "toolCallId": "c1", "state": "output-available", "input": {"q": "add"}, "output": [{"tool": "calc.add"}]},
                {"type": "step-start"},
                {"type": "tool-hub_call", "toolCallId": "c2", "state": "output-error", "input": null, "rawInput": "{bad", "errorText": "not JSON"},
                {"type": "tool-hub_call", "toolCallId": "c3", "state": "input-available", "input": {"calls": []}},
                {"type": "step-start"},
                {"type": "text", "text": "5"}
            ]})),
        ];
        let out = to_openai(Some("be brief"), &history);
        assert_eq!(out[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(out[1], json!({"role": "user", "content": "add 2 and 3"}));
        assert_eq!(out[2]["content"], "Looking.");
        assert_eq!(
            out[2]["tool_calls"][0]["function"],
            json!({"name": "hub_search", "arguments": "{\"q\":\"add\"}"})
        );
        assert_eq!(
            out[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "[{\"tool\":\"calc.add\"}]"})
        );
        assert_eq!(out[4]["content"], Value::Null);
        assert_eq!(out[4]["tool_calls"][0]["function"]["arguments"], "{bad");
        assert_eq!(out[5]["content"], "{\"error\":\"not JSON\"}");
        assert_eq!(out[6]["content"], error_json(INTERRUPTED));
        assert_eq!(out[7], json!({"role": "assistant", "content": "5"}));
        assert_eq!(out.len(), 8);
    }

    #[test]
    fn user_images_become_content_parts_and_empty_system_prompts_vanish() {
        let m = msg(json!({"id": "u", "role": "user", "parts": [
            {"type": "text", "text": "what is this"},
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA"},
            {"type": "file", "mediaType": "application/pdf", "url": "data:,"}
        ]}));
        let out = to_openai(Some("  "), &[m]);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}})
        );
        assert_eq!(out[0]["content"].as_array().unwrap().len(), 2);
    }
}
