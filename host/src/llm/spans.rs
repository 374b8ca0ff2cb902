//! The GenAI conventions' `chat {gen_ai.request.model}` CLIENT span of one model
//! step: the provider and model asked, the model that answered, token usage and
//! finish reason, `error.type` when the step failed. Requests to providers carry
//! the span as `traceparent` (`upstream`), so a provider that traces joins the
//! hub's trace. With `telemetry.capture_content`, the span also carries the
//! conversation sent (`gen_ai.input.messages`) and the answer
//! (`gen_ai.output.messages`) in the conventions' JSON shape, redacted and bounded
//! by `telemetry::content_json`.

use super::openai::{ChatChunk, Usage};
use super::providers::Route;
use super::transform::StepSummary;
use crate::telemetry::{Kind, Span};
use serde_json::{Value, json};

/// The span of a step over `targets` (named by the first one's model) sending
/// `body` (an OpenAI chat-completions request).
pub(crate) fn chat_span(targets: &[Route], body: &Value) -> Span {
    let model = targets.first().map_or("", |r| r.model.as_str());
    let mut span = Span::start(Kind::Client, format_args!("chat {model}"));
    if span.recording() {
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.request.model", model);
        if let Some(route) = targets.first() {
            span.set("gen_ai.provider.name", route.provider.config.name.as_str());
        }
        if let Some(messages) = crate::telemetry::content_json(|| input_messages(body)) {
            span.set("gen_ai.input.messages", messages);
        }
    }
    span
}

/// An OpenAI request's `messages` as the conventions' input messages: `{role,
/// parts}`, a part being `text` (`content`), `tool_call` (`id`, `name`,
/// `arguments`) or `tool_call_response` (`id`, `response`); other content parts
/// (images, audio, files) by their type alone.
fn input_messages(body: &Value) -> Value {
    let messages = body["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let converted = messages.iter().map(|m| {
        let mut parts = Vec::new();
        if m["role"] == "tool" {
            let response = json_or_text(&m["content"]);
            parts.push(json!({"type": "tool_call_response", "id": m["tool_call_id"], "response": response}));
        } else {
            match &m["content"] {
                Value::String(text) => parts.push(json!({"type": "text", "content": text})),
                Value::Array(items) => parts.extend(items.iter().map(|p| match p["text"].as_str() {
                    Some(text) => json!({"type": "text", "content": text}),
                    None => json!({"type": p["type"]}),
                })),
                _ => {}
            }
        }
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            let f = &call["function"];
            let arguments = json_or_text(&f["arguments"]);
            parts.push(
                json!({"type": "tool_call", "id": call["id"], "name": f["name"], "arguments": arguments}),
            );
        }
        json!({"role": m["role"], "parts": parts})
    });
    Value::Array(converted.collect())
}

/// A string holding JSON as that JSON, else as it is.
fn json_or_text(v: &Value) -> Value {
    v.as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_else(|| v.clone())
}

/// The step's answer as the conventions' output messages: one assistant message
/// with its text and tool calls, and its finish reason.
fn output_messages(summary: &StepSummary, finish_reason: &str) -> Value {
    let mut parts = Vec::new();
    if !summary.text.is_empty() {
        parts.push(json!({"type": "text", "content": summary.text}));
    }
    for call in &summary.tool_calls {
        let arguments = match &call.arguments {
            Ok(value) => value.clone(),
            Err(super::transform::ArgumentsError::InvalidJson { raw, .. }) => Value::String(raw.clone()),
            Err(_) => Value::Null,
        };
        parts.push(json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}));
    }
    json!([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])
}

/// What the step's summary says, on its span.
pub(crate) fn end_chat(span: &mut Span, summary: &StepSummary) {
    if !span.recording() {
        return;
    }
    if let Some(target) = &summary.target {
        span.set("wasmhub.llm.target", target.as_str());
    }
    if let Some(model) = &summary.model {
        span.set("gen_ai.response.model", model.as_str());
    }
    let reason = summary
        .upstream_finish_reason
        .clone()
        .unwrap_or_else(|| format!("{:?}", summary.finish_reason).to_lowercase());
    if let Some(messages) = crate::telemetry::content_json(|| output_messages(summary, &reason)) {
        span.set("gen_ai.output.messages", messages);
    }
    span.set("gen_ai.response.finish_reasons", reason);
    if let Some(usage) = &summary.usage {
        span.set("gen_ai.usage.input_tokens", usage.input_tokens);
        span.set("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    span.set("wasmhub.llm.tool_calls", summary.tool_calls.len() as u64);
    if let Some(error) = &summary.error {
        span.fail("upstream_error", error);
    }
}

/// What a relayed answer (the provider's own chunks, passed through by the
/// proxy) said, gathered as it passes for its span: the finish reason, and its
/// text only when content is captured.
pub(crate) struct RelayedAnswer {
    text: String,
    finish_reason: Option<String>,
    recording: bool,
    capture: bool,
}

impl RelayedAnswer {
    /// Gathers for `span` (nothing when it does not record).
    pub(crate) fn new(span: &Span) -> RelayedAnswer {
        RelayedAnswer {
            text: String::new(),
            finish_reason: None,
            recording: span.recording(),
            capture: span.recording() && crate::telemetry::capturing(),
        }
    }

    /// One relayed chunk.
    pub(crate) fn see(&mut self, chunk: &ChatChunk<'_>) {
        let Some(choice) = chunk.choice.as_ref().filter(|_| self.recording) else {
            return;
        };
        if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
            self.finish_reason.get_or_insert_with(|| reason.to_string());
        }
        if self.capture
            && let Some(text) = choice.delta.as_ref().and_then(|d| d.content.as_deref())
        {
            self.text.push_str(text);
        }
    }

    /// A whole (non-streamed) answer's body, parsed only for a span that records.
    pub(crate) fn whole(&mut self, body: &[u8]) {
        if !self.recording {
            return;
        }
        let Ok(answer) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        let choice = &answer["choices"][0];
        self.finish_reason = choice["finish_reason"].as_str().map(str::to_string);
        if self.capture {
            self.text = choice["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
    }
}

/// A relayed answer's end on its span: the target that answered, the finish
/// reason, usage, its text as the output message (when captured), `error.type`
/// when it failed.
pub(crate) fn end_relay(
    span: &mut Span,
    route: &Route,
    usage: Option<&Usage>,
    answer: &RelayedAnswer,
    error: Option<&str>,
) {
    if !span.recording() {
        return;
    }
    span.set("wasmhub.llm.target", route.target());
    let reason = answer.finish_reason.as_deref().unwrap_or("");
    if answer.capture {
        let parts = match answer.text.as_str() {
            "" => json!([]),
            text => json!([{"type": "text", "content": text}]),
        };
        let output = || json!([{"role": "assistant", "parts": parts, "finish_reason": reason}]);
        if let Some(messages) = crate::telemetry::content_json(output) {
            span.set("gen_ai.output.messages", messages);
        }
    }
    if !reason.is_empty() {
        span.set("gen_ai.response.finish_reasons", reason.to_string());
    }
    if let Some(usage) = usage {
        span.set("gen_ai.usage.input_tokens", usage.input_tokens);
        span.set("gen_ai.usage.output_tokens", usage.output_tokens);
    }
    if let Some(error) = error {
        span.fail(error, "the relayed answer failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_conventions_shape() {
        let body = json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "data:x"}}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "hub_call", "arguments": "{\"calls\":[]}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\":true}"}
        ]});
        assert_eq!(
            input_messages(&body),
            json!([
                {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                {"role": "user", "parts": [{"type": "text", "content": "Look"}, {"type": "image_url"}]},
                {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "hub_call", "arguments": {"calls": []}}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"ok": true}}]}
            ])
        );
        let summary = StepSummary {
            finish_reason: crate::llm::FinishReason::ToolCalls,
            upstream_finish_reason: Some("tool_calls".into()),
            text: "Computing.".into(),
            reasoning: String::new(),
            tool_calls: vec![crate::llm::ModelToolCall {
                id: "c2".into(),
                name: "hub_call".into(),
                arguments: Ok(json!({"calls": []})),
            }],
            usage: None,
            model: None,
            error: None,
            target: None,
            unknown_events: 0,
        };
        assert_eq!(
            output_messages(&summary, "tool_calls"),
            json!([{"role": "assistant", "finish_reason": "tool_calls", "parts": [
                {"type": "text", "content": "Computing."},
                {"type": "tool_call", "id": "c2", "name": "hub_call", "arguments": {"calls": []}}
            ]}])
        );
    }
}
