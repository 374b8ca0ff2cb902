//! Anthropic's Messages vocabulary as both directions of the hub read it: the
//! `/v1/messages` surface (an Anthropic client's request → the hub's OpenAI
//! request, OpenAI chunks → Anthropic events) and the `anthropic` provider kind
//! (`llm::adapter::anthropic*`: the inverse). What they share lives here once:
//! the content-block kinds, `stop_reason` ⇄ finish reason, the usage fields (the
//! prompt cache's read and creation tokens), the error type ⇄ HTTP status, and
//! how an assistant turn's thinking blocks (with their `signature`, and
//! `redacted_thinking` blocks) ride in the OpenAI-shaped message
//! ([`THINKING_POINTER`]).

use super::openai::Usage;
use super::ui::FinishReason;
use serde_json::{Value, json};

/// A text block.
pub(crate) const TEXT: &str = "text";
/// The model's thinking, signed (`thinking`, `signature`).
pub(crate) const THINKING: &str = "thinking";
/// Thinking the API encrypted (`data`).
pub(crate) const REDACTED_THINKING: &str = "redacted_thinking";
/// A client tool call (`id`, `name`, `input`).
pub(crate) const TOOL_USE: &str = "tool_use";
/// A tool's answer in a user turn (`tool_use_id`, `content`).
pub(crate) const TOOL_RESULT: &str = "tool_result";

/// Where an OpenAI-shaped assistant message keeps the Anthropic thinking blocks
/// of its turn, verbatim (`extra_content.anthropic.thinking_blocks`, beside
/// Gemini's `extra_content.google`): Anthropic wants them back, signature and
/// all, before the turn's `tool_use` blocks when the tool results come back.
pub(crate) const THINKING_POINTER: &str = "/extra_content/anthropic/thinking_blocks";

/// `blocks` (thinking blocks) as the extension value an assistant message or
/// delta carries.
pub(crate) fn thinking_extension(blocks: Vec<Value>) -> Value {
    json!({ "anthropic": { "thinking_blocks": blocks } })
}

/// The thinking blocks an OpenAI-shaped assistant message carries: only
/// well-formed `thinking` (text and signature) and `redacted_thinking` (data).
pub(crate) fn thinking_blocks(message: &Value) -> Vec<Value> {
    let blocks = message.pointer(THINKING_POINTER).and_then(Value::as_array);
    blocks
        .into_iter()
        .flatten()
        .filter(|b| is_thinking_block(b))
        .cloned()
        .collect()
}

/// Whether `block` is a thinking block Anthropic takes back.
pub(crate) fn is_thinking_block(block: &Value) -> bool {
    let is_str = |k: &str| block.get(k).is_some_and(Value::is_string);
    // An unsigned block (a client echoing a stream that gave no signature)
    // would be refused by the API: it is left out.
    match block.get("type").and_then(Value::as_str) {
        Some(THINKING) => is_str("thinking") && block["signature"].as_str().is_some_and(|s| !s.is_empty()),
        Some(REDACTED_THINKING) => block["data"].as_str().is_some_and(|d| !d.is_empty()),
        _ => false,
    }
}

/// A request (OpenAI's) without the thinking blocks its assistant messages
/// carry, for a provider other than Anthropic (OpenAI refuses unknown message
/// fields; `extra_content.google`, Google's own, stays); `None` when it has none.
pub(crate) fn without_thinking(body: &Value) -> Option<Value> {
    let messages = body.get("messages")?.as_array()?;
    if !messages.iter().any(|m| m.pointer(THINKING_POINTER).is_some()) {
        return None;
    }
    let mut body = body.clone();
    for m in body["messages"].as_array_mut().into_iter().flatten() {
        let Some(Value::Object(extra)) = m.get_mut("extra_content") else {
            continue;
        };
        extra.remove("anthropic");
        if extra.is_empty() {
            m.as_object_mut().map(|m| m.remove("extra_content"));
        }
    }
    Some(body)
}

/// Anthropic's `stop_reason` for how a step ended.
pub(crate) fn stop_reason(finish: Option<FinishReason>) -> &'static str {
    match finish {
        Some(FinishReason::Length) => "max_tokens",
        Some(FinishReason::ContentFilter) => "refusal",
        Some(FinishReason::ToolCalls) => TOOL_USE,
        _ => "end_turn",
    }
}

/// OpenAI's `finish_reason` for Anthropic's `stop_reason`.
pub(crate) fn finish_reason(stop_reason: Option<&str>) -> &'static str {
    match stop_reason {
        Some("max_tokens") | Some("model_context_window_exceeded") => "length",
        Some(TOOL_USE) => "tool_calls",
        Some("refusal") => "content_filter",
        _ => "stop",
    }
}

/// Anthropic's usage for the hub's: `input_tokens` excludes the tokens read
/// from the prompt cache (OpenAI's `prompt_tokens` includes them), which
/// `cache_read_input_tokens` counts.
pub(crate) fn anthropic_usage(u: &Usage) -> Value {
    let cached = u.cached_input_tokens.unwrap_or(0).min(u.input_tokens);
    let mut v = json!({ "input_tokens": u.input_tokens - cached, "output_tokens": u.output_tokens });
    if u.cached_input_tokens.is_some() {
        v["cache_read_input_tokens"] = json!(cached);
    }
    v
}

/// Anthropic's usage as OpenAI's: cached input (read and written) counts into
/// `prompt_tokens`, the read part also as `prompt_tokens_details.cached_tokens`.
pub(crate) fn openai_usage(usage: &Value) -> Option<Value> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    let (input, output) = (n("input_tokens"), n("output_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    let read = n("cache_read_input_tokens").unwrap_or(0);
    let prompt = input.unwrap_or(0) + read + n("cache_creation_input_tokens").unwrap_or(0);
    let completion = output.unwrap_or(0);
    Some(
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": read}}),
    )
}

/// The error types of Anthropic's API ("Errors") and their HTTP statuses.
const ERRORS: [(u16, &str); 9] = [
    (400, "invalid_request_error"),
    (401, "authentication_error"),
    (402, "billing_error"),
    (403, "permission_error"),
    (404, "not_found_error"),
    (413, "request_too_large"),
    (429, "rate_limit_error"),
    (504, "timeout_error"),
    (529, "overloaded_error"),
];

/// The error type Anthropic's API sends with `status`.
pub(crate) fn error_type(status: u16) -> &'static str {
    match ERRORS.iter().find(|(s, _)| *s == status) {
        Some((_, kind)) => kind,
        None if status >= 500 => "api_error",
        None => "invalid_request_error",
    }
}

/// The HTTP status of an Anthropic error type (as an `error` event names it
/// mid-stream), if it is one of the API's.
pub(crate) fn error_status(kind: &str) -> Option<u16> {
    match kind {
        "api_error" => Some(500),
        _ => ERRORS.iter().find(|(_, k)| *k == kind).map(|(s, _)| *s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_and_finish_reasons_map_both_ways() {
        for finish in [
            FinishReason::Length,
            FinishReason::ContentFilter,
            FinishReason::ToolCalls,
            FinishReason::Stop,
        ] {
            let back = finish_reason(Some(stop_reason(Some(finish))));
            assert_eq!(FinishReason::from_openai(back), finish);
        }
        assert_eq!(finish_reason(Some("pause_turn")), "stop");
        assert_eq!(finish_reason(Some("model_context_window_exceeded")), "length");
    }

    #[test]
    fn usage_maps_both_ways_with_the_cache() {
        // Anthropic's "Prompt caching" example: a cache read of 1000 tokens.
        let anthropic = json!({"input_tokens": 21, "cache_read_input_tokens": 1000, "output_tokens": 393});
        let openai = openai_usage(&anthropic).unwrap();
        assert_eq!(openai["prompt_tokens"], 1021);
        assert_eq!(openai["prompt_tokens_details"]["cached_tokens"], 1000);
        let usage = Usage::from_openai(&openai).unwrap();
        assert_eq!(anthropic_usage(&usage), anthropic);
        let written = json!({"input_tokens": 21, "cache_creation_input_tokens": 188, "output_tokens": 5});
        assert_eq!(openai_usage(&written).unwrap()["prompt_tokens"], 209);
        assert_eq!(openai_usage(&json!({})), None);
    }

    #[test]
    fn error_types_and_statuses_map_both_ways() {
        for (status, kind) in ERRORS {
            assert_eq!(error_type(status), kind);
            assert_eq!(error_status(kind), Some(status));
        }
        assert_eq!(
            (error_type(502), error_type(422)),
            ("api_error", "invalid_request_error")
        );
        assert_eq!(error_status("api_error"), Some(500));
        assert_eq!(error_status("made_up_error"), None);
    }

    #[test]
    fn only_well_formed_thinking_blocks_ride_along() {
        let signed = json!({"type": "thinking", "thinking": "Let me check.", "signature": "EqQBCgIYAhIM"});
        let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"});
        let unsigned = json!({"type": "thinking", "thinking": "no signature"});
        let mut message = json!({"role": "assistant", "content": "",
            "extra_content": thinking_extension(vec![signed.clone(), unsigned, redacted.clone()])});
        assert_eq!(thinking_blocks(&message), vec![signed, redacted]);
        message["extra_content"] = json!({"google": {}});
        assert!(thinking_blocks(&message).is_empty());
    }

    #[test]
    fn other_providers_get_no_thinking_blocks() {
        let signed = json!({"type": "thinking", "thinking": "t", "signature": "EqQB"});
        let empty = json!({"type": "thinking", "thinking": "t", "signature": ""});
        assert!(is_thinking_block(&signed) && !is_thinking_block(&empty));
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "extra_content": thinking_extension(vec![signed.clone()])},
            {"role": "assistant", "content": "", "extra_content": {"google": {"x": 1}, "anthropic": {"thinking_blocks": []}}}]});
        let stripped = without_thinking(&body).unwrap();
        assert_eq!(
            stripped["messages"][1],
            json!({"role": "assistant", "content": ""})
        );
        assert_eq!(
            stripped["messages"][2]["extra_content"],
            json!({"google": {"x": 1}})
        );
        assert_eq!(without_thinking(&stripped), None);
    }
}
