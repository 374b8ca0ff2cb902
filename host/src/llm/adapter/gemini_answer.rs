//! Gemini's answers read as OpenAI ones: the SSE stream of
//! `:streamGenerateContent?alt=sse` as chunks ([`Events`]), a whole
//! `GenerateContentResponse` as a `chat.completion` ([`completion`]).
//!
//! Shapes from Google's Gemini API reference ("Generating content": the
//! response body, `Candidate`, `FinishReason`, `UsageMetadata`; the "Text
//! generation" streaming, "Function calling" and "Thinking" guides' examples):
//! each event is a whole `GenerateContentResponse` with the new `parts` of
//! `candidates[0].content` (`text`; `thought: true` text is the model's
//! thinking; `functionCall {name, args}`, given whole and without an id, so each
//! gets one; its `thoughtSignature` rides along as `extra_content.google.
//! thought_signature`, the shape of Google's own OpenAI-compatible endpoint, for
//! the request that sends the call back), the last one with `finishReason` and
//! `usageMetadata`. The stream
//! has no end marker of its own: it ends when the connection does, so one that
//! ends before a `finishReason` is cut and reads as cut (no `[DONE]`). A prompt
//! the API blocks has no candidates and a `promptFeedback.blockReason`. An error
//! is `{"error": {code, message, status}}`, also as an event.

use super::error_body;
use super::sse_events::Translate;
use crate::sse;
use serde_json::{Map, Value, json};

/// Gemini's stream as OpenAI SSE chunks (read through `sse_events::Sse`).
pub(crate) struct Events {
    id: String,
    model: Value,
    /// Tool calls given so far (the next one's `index`).
    tools: u32,
    /// The finish reason, once an event gave one.
    finish: Option<&'static str>,
    /// The latest `usageMetadata`.
    usage: Value,
    /// An error was read, or the end written: what follows is ignored.
    ended: bool,
}

impl Events {
    pub(crate) fn new() -> Events {
        Events {
            id: crate::ids::new_id("chatcmpl"),
            model: Value::Null,
            tools: 0,
            finish: None,
            usage: Value::Null,
            ended: false,
        }
    }

    fn chunk(&self, choices: Value) -> Value {
        json!({"id": self.id, "object": "chat.completion.chunk", "created": crate::clock::now_ms() / 1000,
               "model": self.model, "choices": choices})
    }

    fn read(&mut self, data: &str, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            // Passed on as it is: the hub skips and counts a malformed chunk.
            sse::write_event(out, None, None, data);
            return;
        };
        if let Some(error) = event.get("error") {
            sse::write_json(out, &error_frame(error));
            self.ended = true;
            return;
        }
        if let Some(id) = event.get("responseId").and_then(Value::as_str) {
            self.id = id.to_string();
        }
        if let Some(model) = event.get("modelVersion").filter(|m| m.is_string()) {
            self.model = model.clone();
        }
        if let Some(usage) = event.get("usageMetadata").filter(|u| u.is_object()) {
            self.usage = usage.clone();
        }
        let candidate = event.pointer("/candidates/0").unwrap_or(&Value::Null);
        let delta = delta(&candidate["content"], &mut self.tools);
        if !delta.is_empty() {
            let choices = json!([{"index": 0, "delta": delta, "finish_reason": null}]);
            sse::write_json(out, &self.chunk(choices));
        }
        if let Some(reason) = finish_reason(&event, self.tools > 0) {
            self.finish = Some(reason);
        }
    }

    /// The end of a stream that finished: the finish reason, the usage, `[DONE]`.
    fn close(&mut self, out: &mut Vec<u8>) {
        let Some(reason) = self.finish.filter(|_| !self.ended) else {
            return;
        };
        let choices = json!([{"index": 0, "delta": {}, "finish_reason": reason}]);
        sse::write_json(out, &self.chunk(choices));
        if let Some(usage) = openai_usage(&self.usage) {
            let mut last = self.chunk(json!([]));
            last["usage"] = usage;
            sse::write_json(out, &last);
        }
        out.extend_from_slice(sse::DONE);
        self.ended = true;
    }
}

impl Translate for Events {
    fn event(&mut self, data: &str, out: &mut Vec<u8>) {
        self.read(data, out);
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.close(out);
    }
}

/// A whole `GenerateContentResponse` as a `chat.completion` (an error body as
/// an OpenAI error body).
pub(crate) fn completion(answer: Value) -> Value {
    if let Some(error) = answer.get("error") {
        return error_frame(error);
    }
    let mut tools = 0;
    let candidate = answer.pointer("/candidates/0").unwrap_or(&Value::Null);
    let mut message = delta(&candidate["content"], &mut tools);
    message.insert("role".into(), json!("assistant"));
    message.entry("content").or_insert(json!(""));
    if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
        for call in calls {
            call.as_object_mut().map(|c| c.remove("index"));
        }
    }
    let reason = finish_reason(&answer, tools > 0).unwrap_or("stop");
    let id = answer
        .get("responseId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| crate::ids::new_id("chatcmpl"));
    let mut completion = json!({
        "id": id, "object": "chat.completion", "created": crate::clock::now_ms() / 1000,
        "model": answer["modelVersion"],
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
    });
    if let Some(usage) = openai_usage(&answer["usageMetadata"]) {
        completion["usage"] = usage;
    }
    completion
}

/// A candidate's `content` as an OpenAI delta (no `role`): thought parts as
/// `reasoning_content`, text as `content`, function calls as tool calls with
/// fresh ids numbered from `*tools` on.
fn delta(content: &Value, tools: &mut u32) -> Map<String, Value> {
    let (mut text, mut thinking, mut calls) = (String::new(), String::new(), Vec::new());
    for part in content["parts"].as_array().into_iter().flatten() {
        if let Some(call) = part.get("functionCall") {
            let args = match call.get("args") {
                None | Some(Value::Null) => "{}".to_string(),
                Some(args) => args.to_string(),
            };
            let mut openai = json!({"index": *tools, "id": crate::ids::new_id("call"), "type": "function",
                                    "function": {"name": call["name"], "arguments": args}});
            if let Some(signature) = part.get("thoughtSignature").filter(|s| s.is_string()) {
                openai["extra_content"] = json!({"google": {"thought_signature": signature}});
            }
            calls.push(openai);
            *tools += 1;
        } else if let Some(t) = part.get("text").and_then(Value::as_str) {
            let into = if part["thought"] == json!(true) {
                &mut thinking
            } else {
                &mut text
            };
            into.push_str(t);
        }
    }
    let mut delta = Map::new();
    if !thinking.is_empty() {
        delta.insert("reasoning_content".into(), json!(thinking));
    }
    if !text.is_empty() {
        delta.insert("content".into(), json!(text));
    }
    if !calls.is_empty() {
        delta.insert("tool_calls".into(), Value::Array(calls));
    }
    delta
}

/// OpenAI's finish reason for a response, if it says it is finished: a blocked
/// prompt and the safety family as `content_filter`, `MAX_TOKENS` as `length`,
/// `tool_calls` when the answer called tools, else `stop`.
fn finish_reason(response: &Value, called_tools: bool) -> Option<&'static str> {
    let reason = response
        .pointer("/candidates/0/finishReason")
        .and_then(Value::as_str);
    let Some(reason) = reason else {
        let blocked = response.pointer("/promptFeedback/blockReason").is_some();
        return blocked.then_some("content_filter");
    };
    Some(match reason {
        "MAX_TOKENS" => "length",
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            "content_filter"
        }
        _ if called_tools => "tool_calls",
        _ => "stop",
    })
}

/// `usageMetadata` as OpenAI usage: thoughts count into `completion_tokens` and
/// as `reasoning_tokens`, cached content as `cached_tokens`, tool-use prompt
/// tokens into `prompt_tokens`.
fn openai_usage(usage: &Value) -> Option<Value> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    let (prompt, candidates) = (n("promptTokenCount"), n("candidatesTokenCount"));
    if prompt.is_none() && candidates.is_none() {
        return None;
    }
    let thoughts = n("thoughtsTokenCount").unwrap_or(0);
    let prompt = prompt.unwrap_or(0) + n("toolUsePromptTokenCount").unwrap_or(0);
    let completion = candidates.unwrap_or(0) + thoughts;
    Some(json!({
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": n("cachedContentTokenCount").unwrap_or(0)},
        "completion_tokens_details": {"reasoning_tokens": thoughts},
    }))
}

/// Gemini's `error` object as an OpenAI error body (its `status` as the type).
fn error_frame(error: &Value) -> Value {
    let message = match error {
        Value::String(m) => m.as_str(),
        _ => error["message"].as_str().unwrap_or("the upstream failed"),
    };
    let mut frame = error_body(message);
    if let Some(status) = error.get("status").filter(|s| s.is_string()) {
        frame["error"]["type"] = status.clone();
    }
    if let Some(code) = error.get("code").filter(|c| !c.is_null()) {
        frame["error"]["code"] = code.clone();
    }
    frame
}
