//! The adapters on the providers' published examples: requests as each provider
//! takes them, and answers (streamed split anywhere, and whole) read by the hub's
//! transformer as they would be from OpenAI.
//!
//! Ollama examples from its API reference (`docs/api.md`, "Generate a chat
//! completion": "Chat request (Streaming)", "Chat request (With tools)" and the
//! thinking example), shortened.

use super::ollama_answer::{self, Lines};
use super::whole::Whole;
use super::{Call, prepare};
use crate::llm::client::{Recode, ResponseBodyError};
use crate::llm::providers::{Providers, Route};
use crate::llm::transform::{StepOptions, StepSummary, StepTransformer};
use crate::llm::ui::FinishReason;
use serde_json::{Value, json};

fn route(extra: &str) -> Route {
    let text =
        format!("name = \"o\"\nkind = \"ollama\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n{extra}\n");
    let ps = Providers::new(&[crate::toml::from_str(&text).unwrap()]).unwrap();
    ps.route("o/qwen3:8b").unwrap()
}

pub(super) fn body_of(call: &Call) -> Value {
    serde_json::from_slice(&call.body).unwrap()
}

/// Feeds `bytes` to `recode` in pieces of `step` bytes, then ends it.
pub(super) fn recode_all(
    recode: &mut dyn Recode,
    bytes: &[u8],
    step: usize,
) -> Result<Vec<u8>, ResponseBodyError> {
    let mut out = Vec::new();
    for piece in bytes.chunks(step) {
        recode.feed(piece, &mut out)?;
    }
    recode.finish(&mut out)?;
    Ok(out)
}

/// The SSE `out` read by the hub's transformer, as the UI stream reads an
/// OpenAI stream; also the raw events.
pub(super) fn transformed(out: &[u8]) -> (StepSummary, Vec<String>) {
    let mut parser = crate::sse::Parser::new(1 << 20);
    let mut events = Vec::new();
    parser
        .feed(out, &mut |e| events.push(e.data.to_string()))
        .unwrap();
    parser.finish(&mut |e| events.push(e.data.to_string())).unwrap();
    let mut t = StepTransformer::new(StepOptions::default());
    let mut chunks = Vec::new();
    t.begin(&mut chunks);
    for data in &events {
        t.feed_data(data, &mut chunks);
    }
    (t.finish(&mut chunks), events)
}

const THINKING_STREAM: &str = r#"{"model":"qwen3:8b","created_at":"2025-05-29T09:35:56.836222Z","message":{"role":"assistant","content":"","thinking":"The user asks"},"done":false}
{"model":"qwen3:8b","created_at":"2025-05-29T09:35:56.9Z","message":{"role":"assistant","content":"","thinking":" for the weather."},"done":false}
{"model":"qwen3:8b","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The","images":null},"done":false}
{"model":"qwen3:8b","created_at":"2023-08-04T08:52:19.4Z","message":{"role":"assistant","content":" sky is blue."},"done":false}
{"model":"qwen3:8b","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}
"#;

const TOOL_ANSWER: &str = r#"{"model":"llama3.2","created_at":"2024-07-22T20:33:28.123648Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_current_weather","arguments":{"format":"celsius","location":"Paris, FR"}}}]},"done_reason":"stop","done":true,"total_duration":885095291,"load_duration":3753500,"prompt_eval_count":122,"prompt_eval_duration":328493000,"eval_count":33,"eval_duration":552222000}"#;

#[test]
fn an_ollama_stream_split_anywhere_reads_as_an_openai_stream() {
    for step in [1, 7, 64, 4096] {
        let out = recode_all(&mut Lines::new(1 << 20), THINKING_STREAM.as_bytes(), step).unwrap();
        let (summary, events) = transformed(&out);
        assert_eq!(summary.text, "The sky is blue.", "pieces of {step}");
        assert_eq!(summary.reasoning, "The user asks for the weather.");
        assert_eq!(summary.finish_reason, FinishReason::Stop);
        assert_eq!(summary.error, None);
        let usage = summary.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.total_tokens),
            (26, 282, 308)
        );
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    }
}

#[test]
fn ollama_tool_calls_get_ids_and_string_arguments_streamed_or_whole() {
    let line = format!("{TOOL_ANSWER}\n");
    let out = recode_all(&mut Lines::new(1 << 20), line.as_bytes(), 50).unwrap();
    let (summary, _) = transformed(&out);
    assert_eq!(summary.finish_reason, FinishReason::ToolCalls);
    let call = &summary.tool_calls[0];
    assert_eq!(call.name, "get_current_weather");
    assert!(call.id.starts_with("call_"), "{}", call.id);
    assert_eq!(
        call.arguments.as_ref().unwrap(),
        &json!({"format": "celsius", "location": "Paris, FR"})
    );

    let completion = ollama_answer::completion(serde_json::from_str(TOOL_ANSWER).unwrap());
    let message = &completion["choices"][0]["message"];
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        r#"{"format":"celsius","location":"Paris, FR"}"#
    );
    assert_eq!(message["tool_calls"][0]["type"], "function");
    assert!(
        message["tool_calls"][0].get("index").is_none(),
        "a message's calls have no index"
    );
    assert_eq!(
        completion["usage"],
        json!({"prompt_tokens": 122, "completion_tokens": 33, "total_tokens": 155})
    );

    // The same whole answer made a stream (`stream = false` with a streaming caller).
    let mut whole = Whole::stream(1 << 20, ollama_answer::completion);
    let (summary, events) = transformed(&recode_all(&mut whole, TOOL_ANSWER.as_bytes(), 10).unwrap());
    assert_eq!(
        (summary.finish_reason, summary.tool_calls.len()),
        (FinishReason::ToolCalls, 1)
    );
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
}

#[test]
fn ollama_errors_and_broken_streams_are_errors_never_a_finished_answer() {
    // A mid-stream error line.
    let text = "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"Hal\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model: unexpected EOF\"}\n";
    let (summary, events) = transformed(&recode_all(&mut Lines::new(1 << 20), text.as_bytes(), 9).unwrap());
    assert_eq!(summary.finish_reason, FinishReason::Error);
    assert!(summary.error.unwrap().contains("unexpected EOF"));
    assert!(!events.contains(&"[DONE]".to_string()));
    // A stream cut before its `done` line has no `[DONE]`: the hub reads it as cut.
    let cut = &THINKING_STREAM[..THINKING_STREAM.rfind("{\"model\"").unwrap()];
    let (summary, events) = transformed(&recode_all(&mut Lines::new(1 << 20), cut.as_bytes(), 64).unwrap());
    assert!(!events.contains(&"[DONE]".to_string()));
    assert_eq!(summary.finish_reason, FinishReason::Error, "{summary:?}");
    // A line over the limit.
    let err = recode_all(&mut Lines::new(100), THINKING_STREAM.as_bytes(), 4096).unwrap_err();
    assert!(err.to_string().contains("max_event_kb"), "{err}");
    // An error answer's body, and a whole answer cut short.
    let mut errors = Whole::errors(1 << 20);
    let out = recode_all(
        &mut errors,
        br#"{"error":"model \"nope\" not found, try pulling it first"}"#,
        5,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["error"]["message"],
        "model \"nope\" not found, try pulling it first"
    );
    let mut whole = Whole::stream(1 << 20, ollama_answer::completion);
    assert!(
        recode_all(&mut whole, &TOOL_ANSWER.as_bytes()[..40], 8)
            .unwrap()
            .is_empty()
    );
    let mut small = Whole::json(10, ollama_answer::completion);
    assert!(matches!(
        recode_all(&mut small, TOOL_ANSWER.as_bytes(), 8),
        Err(ResponseBodyError::TooLarge(10))
    ));
}

#[test]
fn an_openai_request_as_ollama_takes_it() {
    let route = route(
        "think = false\noptions = { num_ctx = 8192, temperature = 0.1 }\n\n[[model_settings]]\nmodel = \"qwen3*\"\nthink = true\noptions = { num_ctx = 32768 }\n",
    );
    let body = json!({
        "model": "qwen3:8b", "stream": true, "stream_options": {"include_usage": true},
        "temperature": 0.7, "max_tokens": 100, "stop": "END", "seed": 1,
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}},
        "tools": [{"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "What is in "}, {"type": "text", "text": "this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
            {"role": "assistant", "content": null, "reasoning_content": "Look it up.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_current_weather", "arguments": "{\"location\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "22 degrees"},
        ],
    });
    let call = prepare(&route, &body).unwrap();
    assert_eq!(
        (call.path.as_str(), call.streams, call.wants_stream),
        ("/api/chat", true, true)
    );
    assert_eq!(
        body_of(&call),
        json!({
            "model": "qwen3:8b", "stream": true, "think": true, "format": {"type": "object"},
            "tools": body["tools"],
            "options": {"num_ctx": 32768, "temperature": 0.7, "num_predict": 100, "stop": ["END"], "seed": 1},
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is in this?", "images": ["iVBORw0KGgo="]},
                {"role": "assistant", "content": "", "thinking": "Look it up.",
                 "tool_calls": [{"function": {"name": "get_current_weather", "arguments": {"location": "Paris"}}}]},
                {"role": "tool", "content": "22 degrees", "tool_name": "get_current_weather"},
            ],
        })
    );
    // `tool_choice: "none"` sends no tools; the provider's stream switch.
    let plain =
        json!({"model": "qwen3:8b", "stream": true, "tool_choice": "none", "tools": [], "messages": []});
    let text = "name = \"o\"\nkind = \"ollama\"\nstream = false\nbase_url = \"http://x\"\n";
    let ps = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap();
    let unstreamed = ps.route("o/m").unwrap();
    let call = prepare(&unstreamed, &plain).unwrap();
    assert_eq!((call.streams, call.wants_stream), (false, true));
    assert_eq!(
        body_of(&call),
        json!({"model": "m", "stream": false, "messages": []})
    );
}

#[test]
fn requests_ollama_cannot_take_are_refused_saying_why() {
    let route = route("");
    let image = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]});
    let err = prepare(&route, &image).unwrap_err().to_string();
    assert!(err.contains("messages[0]") && err.contains("data: URLs"), "{err}");
    let args = json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "{not json"}}]}]});
    let err = prepare(&route, &args).unwrap_err().to_string();
    assert!(err.contains("\"f\"") && err.contains("not JSON"), "{err}");
}

#[test]
fn an_openai_provider_with_streaming_off_still_streams_to_its_caller() {
    let text = "name = \"p\"\nbase_url = \"http://x/v1\"\nstream = false\n";
    let ps = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap();
    let route = ps.route("p/gpt").unwrap();
    let body =
        json!({"model": "gpt", "stream": true, "stream_options": {"include_usage": true}, "messages": []});
    let call = prepare(&route, &body).unwrap();
    assert_eq!(
        body_of(&call),
        json!({"model": "gpt", "stream": false, "messages": []})
    );
    // OpenAI's own example answer (API reference, "Create chat completion").
    let answer = json!({"id": "chatcmpl-123", "object": "chat.completion", "created": 1677652288, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "\n\nHello there, how may I assist you today?"},
                     "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}});
    let mut whole = Whole::stream(1 << 20, std::convert::identity);
    let out = recode_all(&mut whole, answer.to_string().as_bytes(), 13).unwrap();
    let (summary, events) = transformed(&out);
    assert_eq!(summary.text, "\n\nHello there, how may I assist you today?");
    assert_eq!(
        (summary.finish_reason, summary.usage.unwrap().total_tokens),
        (FinishReason::Stop, 21)
    );
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    assert!(events[0].contains("chatcmpl-123"));
}
