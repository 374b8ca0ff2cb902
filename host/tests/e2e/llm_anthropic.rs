//! An `anthropic` provider (`kind = "anthropic"`, Anthropic's Messages API)
//! behind the proxy, the UI stream and `/v1/messages`: streamed answers with
//! thinking and a tool call, a whole answer, the key in `x-api-key` (never as
//! `Authorization`), errors (401, 429 with `Retry-After`, 529 overloaded, a
//! mid-stream `error` event), and a fallback chain from an Anthropic target to an
//! Ollama one that sends each the same conversation in its own dialect.
//!
//! The scripted answers are Anthropic's own examples from its API reference
//! ("Streaming Messages": the basic, tool use and extended thinking streams and
//! the error event; "Messages": the response object; "Errors": the error shapes),
//! and Ollama's from `docs/api.md` ("Chat request (Streaming)").

use crate::support::chat;
use crate::support::client;
use crate::support::dialect::{Dialect, Scripted, ollama_hello};
use crate::support::hub::Hub;
use crate::support::llm::{WITHIN, openai_text, smart_chain, text_of, ui_chunks};
use crate::support::upstream::{Reply, Upstream};
use serde_json::{Value, json};
use wasmhub::llm::FinishReason;

/// The Messages endpoint under the base URL `http://addr/v1`.
const MESSAGES: &str = "/v1/messages";
const KEY_VAR: &str = "WASMHUB_E2E_ANTHROPIC_KEY";
const KEY: &str = "sk-ant-e2e-secret";

fn start(usage: Value) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message",
        "role": "assistant", "content": [], "model": "claude-opus-4-6", "stop_reason": null, "stop_sequence": null, "usage": usage}})
}

fn text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

/// "Hello!" with some thinking first.
fn hello() -> Reply {
    Dialect::Anthropic.stream(&[
        start(json!({"input_tokens": 25, "output_tokens": 1})),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "A greeting."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9G"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        text_delta(1, "Hello"),
        text_delta(1, "!"),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
        json!({"type": "message_stop"}),
    ])
}

fn anthropic_error(status: u16, kind: &str, message: &str) -> Reply {
    Dialect::Anthropic.error(status, kind, message)
}

const CLAUDE: Scripted = Scripted {
    dialect: Dialect::Anthropic,
    name: "claude",
    models: &["claude-*"],
    key: Some((KEY_VAR, KEY)),
};

async fn anthropic_hub(extra: &str) -> (Upstream, Hub) {
    CLAUDE.start(extra).await
}

fn ask(stream: bool) -> Value {
    json!({"model": "claude/claude-opus-4-6", "stream": stream, "temperature": 0.5, "max_tokens": 1024,
           "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello, Claude"}]})
}

#[tokio::test]
async fn the_proxy_answers_openai_clients_from_the_messages_api() {
    let (up, hub) = anthropic_hub("").await;
    up.push_for(MESSAGES, hello());
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(resp.status, 200);
    let (events, _) = resp.events(WITHIN).await;
    assert_eq!(openai_text(&events), "Hello!");
    let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(
        (
            &usage["usage"]["prompt_tokens"],
            &usage["usage"]["completion_tokens"]
        ),
        (&json!(25), &json!(15))
    );
    let sent = &up.requests()[0];
    assert_eq!(sent.path, MESSAGES);
    assert_eq!(
        (sent.header("x-api-key"), sent.header("anthropic-version")),
        (Some(KEY), Some("2023-06-01"))
    );
    assert_eq!(
        sent.header("authorization"),
        None,
        "the key goes in x-api-key only"
    );
    assert_eq!(
        sent.json(),
        json!({"model": "claude-opus-4-6", "max_tokens": 1024, "system": "Be brief.", "stream": true, "temperature": 0.5,
               "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello, Claude"}]}]})
    );

    up.push_for(MESSAGES, Reply::json(200, json!({"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-opus-4-6", "content": [{"type": "text", "text": "Hi! My name is Claude."}],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 2095, "output_tokens": 503}})));
    let answer = client::post(hub.addr, "/v1/chat/completions", &ask(false))
        .await
        .json()
        .await;
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "Hi! My name is Claude."
    );
    assert_eq!(
        (
            &answer["choices"][0]["finish_reason"],
            &answer["usage"]["total_tokens"]
        ),
        (&json!("stop"), &json!(2598))
    );
}

#[tokio::test]
async fn anthropic_errors_keep_their_status_retry_after_and_message() {
    let (up, hub) = anthropic_hub("max_retries = 0").await;
    up.push_for(
        MESSAGES,
        anthropic_error(401, "authentication_error", "invalid x-api-key"),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(resp.status, 401);
    assert_eq!(resp.json().await["error"]["message"], "invalid x-api-key");

    let limited = "Number of request tokens has exceeded your per-minute rate limit";
    up.push_for(
        MESSAGES,
        anthropic_error(429, "rate_limit_error", limited).header("retry-after", "30"),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(false)).await;
    assert_eq!(
        (resp.status.as_u16(), resp.header("retry-after")),
        (429, Some("30"))
    );
    assert_eq!(resp.json().await["error"]["message"], limited);

    up.push_for(MESSAGES, anthropic_error(529, "overloaded_error", "Overloaded"));
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(resp.status, 529);
    assert_eq!(resp.json().await["error"]["message"], "Overloaded");

    // Mid-stream: the text so far, then the error and no `[DONE]`.
    up.push_for(
        MESSAGES,
        Dialect::Anthropic.stream(&[
            start(json!({"input_tokens": 25, "output_tokens": 1})),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            text_delta(0, "Hel"),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]),
    );
    let (seen, _) = client::post(hub.addr, "/v1/chat/completions", &ask(true))
        .await
        .events(WITHIN)
        .await;
    assert!(!seen.contains(&"[DONE]".to_string()), "{seen:?}");
    let last: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(last["error"]["message"], "Overloaded");
    // The 529 was retried, as any provider's, when retries are allowed.
    let (up, hub) = anthropic_hub("max_retries = 1\nretry_base_ms = 1").await;
    up.push_for(
        MESSAGES,
        anthropic_error(529, "overloaded_error", "Overloaded").header("retry-after", "0"),
    );
    up.push_for(MESSAGES, hello());
    let (seen, _) = client::post(hub.addr, "/v1/chat/completions", &ask(true))
        .await
        .events(WITHIN)
        .await;
    assert_eq!(openai_text(&seen), "Hello!");
}

#[tokio::test]
async fn the_ui_stream_and_the_messages_surface_read_an_anthropic_model() {
    let (up, hub) = anthropic_hub("").await;
    up.push_for(MESSAGES, hello());
    let chunks = ui_chunks(
        &client::post(hub.addr, "/api/ui/chat/completions", &ask(true))
            .await
            .events(WITHIN)
            .await
            .0,
    );
    assert_eq!(
        text_of(&chunks),
        ("Hello!".to_string(), "A greeting.".to_string())
    );
    assert_eq!(crate::support::chat::finish(&chunks).0, Some(FinishReason::Stop));

    up.push_for(MESSAGES, hello());
    let body = json!({"model": "claude/claude-opus-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello, Claude"}]});
    let message = client::post(hub.addr, "/v1/messages", &body).await.json().await;
    let texts: Vec<&str> = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(texts.concat(), "Hello!", "{message}");
    assert_eq!(message["stop_reason"], "end_turn");
}

#[tokio::test]
async fn a_chain_falls_back_from_anthropic_to_ollama_each_in_its_dialect() {
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var(KEY_VAR, KEY) };
    let (first, second) = (Upstream::start().await, Upstream::start().await);
    let claude = format!("kind = \"anthropic\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0");
    let (a, b) = (first.base_url(), second.base_url());
    let providers = [
        ("claude", a.as_str(), claude.as_str()),
        ("local", b.as_str(), "kind = \"ollama\"\nmax_retries = 0"),
    ];
    let hub = smart_chain(&providers, &["claude/claude-opus-4-6", "local/llama3.2"]).await;
    first.push_for(MESSAGES, anthropic_error(529, "overloaded_error", "Overloaded"));
    second.push_for("/api/chat", ollama_hello());
    let mut body = ask(true);
    body["model"] = json!("smart");
    body["tools"] =
        json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.header("x-wasmhub-target"), Some("local/llama3.2"));
    assert_eq!(openai_text(&resp.events(WITHIN).await.0), "Hello from Ollama.");

    let (a, b) = (first.requests()[0].json(), second.requests()[0].json());
    // The same conversation, sampling and tools, each in its own dialect.
    assert_eq!(
        (&a["system"], &b["messages"][0]),
        (
            &json!("Be brief."),
            &json!({"role": "system", "content": "Be brief."})
        )
    );
    assert_eq!(
        a["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Hello, Claude"}]}])
    );
    assert_eq!(
        b["messages"][1],
        json!({"role": "user", "content": "Hello, Claude"})
    );
    assert_eq!(
        (&a["temperature"], &b["options"]["temperature"]),
        (&json!(0.5), &json!(0.5))
    );
    assert_eq!(
        (&a["max_tokens"], &b["options"]["num_predict"]),
        (&json!(1024), &json!(1024))
    );
    assert_eq!(
        a["tools"],
        json!([{"name": "get_weather", "input_schema": {"type": "object"}}])
    );
    assert_eq!(b["tools"], body["tools"]);
}

#[tokio::test]
async fn the_model_list_asks_anthropic_with_its_key_and_version() {
    let (up, hub) = anthropic_hub("").await;
    // Anthropic's example answer ("List Models"), shortened.
    up.push_for(
        "/v1/models",
        Reply::json(200, json!({"data": [{"type": "model", "id": "claude-opus-4-6", "display_name": "Claude Opus 4.6",
            "created_at": "2026-02-04T00:00:00Z"}], "has_more": false, "first_id": "claude-opus-4-6", "last_id": "claude-opus-4-6"})),
    );
    let list = client::send(hub.addr, http::Method::GET, "/v1/models", None, &[])
        .await
        .json()
        .await;
    assert_eq!(list["data"][0]["id"], "claude/claude-opus-4-6");
    let sent = &up.requests()[0];
    assert_eq!(
        (sent.header("x-api-key"), sent.header("anthropic-version")),
        (Some(KEY), Some("2023-06-01"))
    );
}

/// Anthropic's "Extended thinking with tool use" example: the signed thinking
/// block the second round must send back before its `tool_use`.
fn signed_thinking() -> Value {
    json!({"type": "thinking", "thinking": "I need the weather in Paris.",
           "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"})
}

#[tokio::test]
async fn a_tool_round_sends_the_signed_thinking_back_with_thinking_from_reasoning_effort() {
    let (up, hub) = anthropic_hub("").await;
    up.push_for(MESSAGES, Reply::json(200, json!({"id": "msg_01", "type": "message", "role": "assistant",
        "model": "claude-opus-4-6", "stop_reason": "tool_use", "stop_sequence": null,
        "content": [signed_thinking(),
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "Paris"}}],
        "usage": {"input_tokens": 412, "output_tokens": 96}})));
    let tools =
        json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
    let mut body = json!({"model": "claude/claude-opus-4-6", "max_tokens": 1024, "reasoning_effort": "low",
        "tools": tools, "messages": [{"role": "user", "content": "Weather in Paris?"}]});
    let first = client::post(hub.addr, "/v1/chat/completions", &body)
        .await
        .json()
        .await;
    let message = first["choices"][0]["message"].clone();
    assert_eq!(message["tool_calls"][0]["id"], "toolu_01A09q90qw90lq917835lq9");

    // An OpenAI client echoes the assistant message with the tool's result.
    up.push_for(MESSAGES, hello());
    body["messages"].as_array_mut().unwrap().extend([
        message,
        json!({"role": "tool", "tool_call_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"}),
    ]);
    body["stream"] = json!(true);
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(openai_text(&resp.events(WITHIN).await.0), "Hello!");

    let sent = up.requests();
    assert_eq!(
        (&sent[0].json()["thinking"], &sent[0].json()["max_tokens"]),
        (&json!({"type": "enabled", "budget_tokens": 1024}), &json!(2048)),
        "reasoning_effort low asks a 1024-token budget on top of max_tokens"
    );
    assert_eq!(
        sent[1].json()["messages"][1],
        json!({"role": "assistant", "content": [signed_thinking(),
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "Paris"}}]}),
        "round 2 carries round 1's signed thinking block before its tool_use"
    );
}

#[tokio::test]
async fn an_agent_turn_sends_the_signed_thinking_back_in_its_next_round() {
    let up = Upstream::start().await;
    let hub = chat::hub_with(&up, chat::plugins(&[]), |c| {
        c.providers[0].kind = "anthropic".into();
        c.providers[0].think = Some(true);
    })
    .await;
    let input: Value = serde_json::from_str(&chat::call_args(
        json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]),
    ))
    .unwrap();
    let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"});
    up.push_for(MESSAGES, Dialect::Anthropic.stream(&[
        start(json!({"input_tokens": 30, "output_tokens": 1})),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I need the weather in Paris."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta",
               "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": redacted}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "hub_call", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ]));
    up.push_for(MESSAGES, hello());
    let body = chat::submit("anthropic-1", vec![chat::user("u1", "6*7?")]);
    let chunks = chat::chunks(chat::post_chat(hub.addr, &body).await).await;
    assert_eq!(text_of(&chunks).0, "Hello!");
    let first = up.requests()[0].json();
    assert_eq!(
        first["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    let second = up.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let (turn, result) = (&messages[messages.len() - 2], &messages[messages.len() - 1]);
    assert_eq!(
        turn["content"],
        json!([signed_thinking(), redacted,
               {"type": "tool_use", "id": "toolu_01", "name": "hub_call", "input": input}]),
        "round 2 carries round 1's thinking blocks, signed, before its tool_use"
    );
    assert_eq!(result["content"][0]["tool_use_id"], "toolu_01");
}

#[tokio::test]
async fn an_openai_provider_gets_no_anthropic_thinking_blocks() {
    let (up, hub) = crate::support::llm::setup("").await;
    up.push(Reply::json(200, json!({"id": "c", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]})));
    let body = json!({"model": "up/gpt-test", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "extra_content": {"anthropic": {"thinking_blocks": [signed_thinking()]}},
         "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "15 degrees"}]});
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status, 200);
    let sent = up.requests()[0].json();
    assert_eq!(sent["messages"][1].get("extra_content"), None, "{sent}");
    assert_eq!(
        sent["messages"][1]["tool_calls"],
        body["messages"][1]["tool_calls"]
    );
}
