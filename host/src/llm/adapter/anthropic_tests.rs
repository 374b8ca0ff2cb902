//! The Anthropic adapter on Anthropic's published examples (API reference,
//! "Streaming Messages": the basic stream, tool use with `input_json_delta`,
//! extended thinking, the error event; "Messages": the response object).

use super::anthropic_answer::{self, Events};
use super::prepare;
use super::sse_events::Sse;
use super::tests::{body_of, recode_all, transformed};
use super::whole::Whole;
use crate::llm::providers::Providers;
use crate::llm::ui::FinishReason;
use serde_json::{Value, json};

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

pub(super) fn tool_stream() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant",
            "model": "claude-opus-4-6", "stop_sequence": null, "content": [], "stop_reason": null,
            "usage": {"input_tokens": 472, "output_tokens": 2, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I need the weather."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Okay, let's check"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " the weather:"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"location\":"}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": " \"San Francisco, CA\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 89}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn an_anthropic_stream_split_anywhere_reads_as_an_openai_stream() {
    let text = sse(&tool_stream());
    for step in [1, 5, 100, 1 << 16] {
        let out = recode_all(&mut Sse::new(1 << 20, Events::new()), text.as_bytes(), step).unwrap();
        let (summary, events) = transformed(&out);
        assert_eq!(summary.text, "Okay, let's check the weather:", "pieces of {step}");
        assert_eq!(summary.reasoning, "I need the weather.");
        assert_eq!(summary.finish_reason, FinishReason::ToolCalls);
        let call = &summary.tool_calls[0];
        assert_eq!(
            (call.id.as_str(), call.name.as_str()),
            ("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
        );
        assert_eq!(
            call.arguments.as_ref().unwrap(),
            &json!({"location": "San Francisco, CA"})
        );
        let usage = summary.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens),
            (592, 89, Some(100))
        );
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    }
}

#[test]
fn an_anthropic_error_event_or_a_cut_stream_is_never_a_finished_answer() {
    let mut events = tool_stream()[..8].to_vec();
    events.push(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let out = recode_all(&mut Sse::new(1 << 20, Events::new()), sse(&events).as_bytes(), 64).unwrap();
    let (summary, raw) = transformed(&out);
    assert_eq!(
        (summary.finish_reason, summary.error.as_deref()),
        (FinishReason::Error, Some("Overloaded"))
    );
    assert!(!raw.contains(&"[DONE]".to_string()));
    let out = recode_all(
        &mut Sse::new(1 << 20, Events::new()),
        sse(&tool_stream()[..10]).as_bytes(),
        64,
    )
    .unwrap();
    let (summary, raw) = transformed(&out);
    assert_eq!(
        summary.finish_reason,
        FinishReason::Error,
        "cut before message_stop"
    );
    assert!(!raw.contains(&"[DONE]".to_string()));
    let err = recode_all(
        &mut Sse::new(64, Events::new()),
        sse(&tool_stream()).as_bytes(),
        1 << 16,
    )
    .unwrap_err();
    assert!(err.to_string().contains("unusable"), "{err}");
}

#[test]
fn a_whole_anthropic_message_and_its_errors_read_as_openai() {
    let message = json!({"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
        "content": [{"type": "text", "text": "Hi! My name is Claude."}], "stop_reason": "max_tokens", "stop_sequence": null,
        "usage": {"input_tokens": 2095, "output_tokens": 503}});
    let completion = anthropic_answer::completion(message.clone());
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "Hi! My name is Claude."
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "length");
    assert_eq!(completion["usage"]["total_tokens"], 2598);
    let mut whole = Whole::stream(1 << 20, anthropic_answer::completion);
    let (summary, _) = transformed(&recode_all(&mut whole, message.to_string().as_bytes(), 17).unwrap());
    assert_eq!(
        (summary.text.as_str(), summary.finish_reason),
        ("Hi! My name is Claude.", FinishReason::Length)
    );
    let mut errors = Whole::errors(1 << 20);
    let body = br#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    let v: Value = serde_json::from_slice(&recode_all(&mut errors, body, 7).unwrap()).unwrap();
    assert_eq!(
        v["error"]["message"],
        "Number of request tokens has exceeded your per-minute rate limit"
    );
}

#[test]
fn an_openai_request_as_the_messages_api_takes_it() {
    let text = "name = \"a\"\nkind = \"anthropic\"\nbase_url = \"https://api.anthropic.com/v1\"\nmax_output_tokens = 2048\n";
    let ps = Providers::new(&[crate::toml::from_str(text).unwrap()]).unwrap();
    let route = ps.route("a/claude-opus-4-6").unwrap();
    let body = json!({"model": "claude-opus-4-6", "stream": true, "stream_options": {"include_usage": true},
    "temperature": 0.2, "stop": "END", "user": "u-1", "tool_choice": "required", "parallel_tool_calls": false,
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}}],
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather here?"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}]},
        {"role": "assistant", "content": "Checking.", "reasoning_content": "hmm", "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "22 degrees"},
        {"role": "user", "content": "Thanks"},
    ]});
    let call = prepare(&route, &body).unwrap();
    assert_eq!((call.path.as_str(), call.streams), ("/messages", true));
    assert_eq!(
        body_of(&call),
        json!({"model": "claude-opus-4-6", "max_tokens": 2048, "system": "Be brief.", "stream": true,
        "temperature": 0.2, "stop_sequences": ["END"], "metadata": {"user_id": "u-1"},
        "tools": [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather here?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "22 degrees"},
                {"type": "text", "text": "Thanks"}]},
        ]})
    );
    let bad = json!({"model": "m", "messages": [{"role": "function", "content": "x"}]});
    let err = prepare(&route, &bad).unwrap_err().to_string();
    assert!(
        err.contains("an anthropic provider") && err.contains("messages[0]"),
        "{err}"
    );
}

/// Anthropic's "Extended thinking" examples: a signed thinking block and a
/// redacted one ("Thinking redaction").
fn signed() -> Value {
    json!({"type": "thinking", "thinking": "I need the weather.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})
}

fn redacted() -> Value {
    json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"})
}

#[test]
fn signed_thinking_rides_along_in_the_answer_and_goes_back_first() {
    let mut events = tool_stream();
    events.insert(
        5,
        json!({"type": "content_block_start", "index": 9, "content_block": redacted()}),
    );
    events.insert(6, json!({"type": "content_block_stop", "index": 9}));
    let out = recode_all(&mut Sse::new(1 << 20, Events::new()), sse(&events).as_bytes(), 7).unwrap();
    let (_, chunks) = transformed(&out);
    let blocks: Vec<Value> = chunks
        .iter()
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .filter_map(|c| {
            c.pointer("/choices/0/delta/extra_content/anthropic/thinking_blocks/0")
                .cloned()
        })
        .collect();
    assert_eq!(blocks, vec![signed(), redacted()]);

    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
        "content": [signed(), redacted(), {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}});
    let answer = anthropic_answer::completion(message)["choices"][0]["message"].clone();
    assert_eq!(
        answer["extra_content"],
        json!({"anthropic": {"thinking_blocks": [signed(), redacted()]}})
    );

    // The client (or the agent loop) sends the answer back with the tool result.
    let ps = Providers::new(&[crate::toml::from_str(
        "name = \"a\"\nkind = \"anthropic\"\nbase_url = \"https://api.anthropic.com/v1\"\n",
    )
    .unwrap()])
    .unwrap();
    let route = ps.route("a/claude-opus-4-6").unwrap();
    let body = json!({"model": "claude-opus-4-6", "messages": [
        {"role": "user", "content": "Weather in Paris?"}, answer,
        {"role": "tool", "tool_call_id": "toolu_1", "content": "22 degrees"}]});
    let sent = body_of(&prepare(&route, &body).unwrap());
    assert_eq!(
        sent["messages"][1]["content"],
        json!([signed(), redacted(), {"type": "text", "text": "Checking."},
               {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}])
    );
}

/// What an `anthropic` provider configured with `settings` sends for `body`
/// with `extra`'s fields added.
fn sent_with(settings: &str, body: Value, extra: Value) -> Result<Value, super::RequestError> {
    let text = format!(
        "name = \"a\"\nkind = \"anthropic\"\nbase_url = \"https://api.anthropic.com/v1\"\n{settings}"
    );
    let ps = Providers::new(&[crate::toml::from_str(&text).unwrap()]).unwrap();
    let mut body = body;
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    prepare(&ps.route("a/m").unwrap(), &body).map(|call| body_of(&call))
}

#[test]
fn extended_thinking_comes_from_reasoning_effort_think_or_options() {
    let sent = |settings: &str, extra: Value| {
        let body = json!({"model": "m", "temperature": 0.2, "messages": [{"role": "user", "content": "Hi"}]});
        sent_with(&format!("max_output_tokens = 2048\n{settings}"), body, extra)
    };
    let think = sent("think = true", json!({})).unwrap();
    assert_eq!(
        (&think["thinking"], &think["max_tokens"], think.get("temperature")),
        (
            &json!({"type": "enabled", "budget_tokens": 4096}),
            &json!(6144),
            None
        ),
        "the budget comes on top of the answer's max_tokens; no temperature with thinking"
    );
    let high = sent("", json!({"reasoning_effort": "high", "max_tokens": 1000})).unwrap();
    assert_eq!(
        (&high["thinking"]["budget_tokens"], &high["max_tokens"]),
        (&json!(16384), &json!(17384))
    );
    let off = sent("think = true", json!({"reasoning_effort": "none"})).unwrap();
    assert_eq!((off.get("thinking"), &off["temperature"]), (None, &json!(0.2)));
    let options =
        "options = { top_k = 5, stream = true, thinking = { type = \"enabled\", budget_tokens = 2000 } }";
    let own = sent(options, json!({})).unwrap();
    assert_eq!(
        (
            &own["thinking"]["budget_tokens"],
            &own["max_tokens"],
            &own["top_k"]
        ),
        (&json!(2000), &json!(4048), &json!(5))
    );
    assert_eq!(
        own["stream"], false,
        "options do not override what the request has"
    );
    let plain = sent("", json!({})).unwrap();
    assert_eq!(
        (plain.get("thinking"), &plain["max_tokens"]),
        (None, &json!(2048))
    );
    let err = sent("", json!({"reasoning_effort": "extreme"})).unwrap_err();
    assert!(err.to_string().contains("reasoning_effort \"extreme\""), "{err}");
}

#[test]
fn a_forced_tool_and_thinking_do_not_go_together() {
    let sent = |settings: &str, extra: Value| {
        let body = json!({"model": "m", "temperature": 0.2, "max_tokens": 100,
            "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]});
        sent_with(settings, body, extra)
    };
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    for choice in [json!("required"), named.clone()] {
        let err = sent("", json!({"reasoning_effort": "low", "tool_choice": choice})).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("reasoning_effort") && text.contains("tool_choice"),
            "{text}"
        );
    }
    let configured = "think = true\noptions = { thinking = { type = \"enabled\", budget_tokens = 2000 } }";
    let forced = sent(configured, json!({"tool_choice": named})).unwrap();
    assert_eq!(
        (
            forced.get("thinking"),
            &forced["max_tokens"],
            &forced["temperature"],
            &forced["tool_choice"]["type"]
        ),
        (None, &json!(100), &json!(0.2), &json!("tool")),
        "configured thinking gives way to the client's forced tool"
    );
    let auto = sent(
        "think = true",
        json!({"reasoning_effort": "low", "tool_choice": "auto"}),
    )
    .unwrap();
    assert_eq!(auto["thinking"]["budget_tokens"], json!(1024));
    let none = sent("", json!({"reasoning_effort": "low", "tool_choice": "none"})).unwrap();
    assert_eq!(none["thinking"]["budget_tokens"], json!(1024));
}
