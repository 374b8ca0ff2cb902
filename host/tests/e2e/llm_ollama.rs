//! An `ollama` provider (`kind = "ollama"`, native `/api/chat`) behind every
//! surface: the proxy (streamed and whole), the UI stream, `/v1/messages`, the
//! agent loop with a tool round, a fallback chain mixing kinds, errors with their
//! status and `Retry-After`, a mid-stream error, and the per-provider `stream`
//! switch (also on an `openai` provider).
//!
//! The scripted answers are Ollama's own examples from its API reference
//! (`docs/api.md`, "Generate a chat completion": "Chat request (Streaming)",
//! "Chat request (With tools)", the thinking example, and the error shape
//! `{"error": "..."}`), shortened to what the tests read.

use crate::support::chat::{self, call_args, hub_with, plugins, submit, user};
use crate::support::client;
use crate::support::dialect::{Dialect, Scripted};
use crate::support::hub::{self, Hub};
use crate::support::llm::{WITHIN, error_text, openai_text, smart_chain, text_of, ui_chunks};
use crate::support::upstream::{CHAT, Reply, Upstream};
use serde_json::{Value, json};
use wasmhub::llm::FinishReason;

/// Ollama's chat endpoint as the upstream sees it (the base URL's `/v1` dropped).
const API_CHAT: &str = "/api/chat";

fn line(message: Value) -> Value {
    json!({"model": "llama3.2", "created_at": "2023-08-04T08:52:19.385406455-07:00", "message": message, "done": false})
}

fn done(prompt: u64, eval: u64) -> Value {
    json!({"model": "llama3.2", "created_at": "2023-08-04T19:22:45.499127Z",
           "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
           "total_duration": 4883583458u64, "load_duration": 1334875, "prompt_eval_count": prompt,
           "prompt_eval_duration": 342546000, "eval_count": eval, "eval_duration": 4535599000u64})
}

/// "The sky is blue because of Rayleigh scattering.", after some thinking.
fn sky() -> Reply {
    Dialect::Ollama.stream(&[
        line(json!({"role": "assistant", "content": "", "thinking": "The user asks why."})),
        line(json!({"role": "assistant", "content": "The sky is blue"})),
        line(json!({"role": "assistant", "content": " because of Rayleigh scattering."})),
        done(26, 282),
    ])
}

fn tool_call_answer(name: &str, arguments: Value) -> Value {
    json!({"model": "llama3.2", "created_at": "2024-07-22T20:33:28.123648Z",
           "message": {"role": "assistant", "content": "",
                       "tool_calls": [{"function": {"name": name, "arguments": arguments}}]},
           "done_reason": "stop", "done": true, "total_duration": 885095291, "load_duration": 3753500,
           "prompt_eval_count": 122, "prompt_eval_duration": 328493000, "eval_count": 33, "eval_duration": 552222000})
}

const LOCAL: Scripted = Scripted {
    dialect: Dialect::Ollama,
    name: "local",
    models: &["llama*"],
    key: None,
};

async fn ollama_hub(extra: &str) -> (Upstream, Hub) {
    LOCAL
        .start(&format!("options = {{ num_ctx = 8192 }}\n{extra}"))
        .await
}

fn ask(stream: bool) -> Value {
    json!({"model": "local/llama3.2", "stream": stream, "temperature": 0.5,
           "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]})
}

#[tokio::test]
async fn the_proxy_answers_openai_clients_from_ollamas_native_api() {
    let (up, hub) = ollama_hub("").await;
    up.push_for(API_CHAT, sky());
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(
        (resp.status.as_u16(), resp.header("content-type")),
        (200, Some("text/event-stream"))
    );
    let (events, _) = resp.events(WITHIN).await;
    assert_eq!(
        openai_text(&events),
        "The sky is blue because of Rayleigh scattering."
    );
    let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 26, "completion_tokens": 282, "total_tokens": 308})
    );
    let sent = up.requests();
    assert_eq!(
        sent[0].path, API_CHAT,
        "the native endpoint, under the server's root"
    );
    assert_eq!(
        sent[0].json(),
        json!({"model": "llama3.2", "stream": true, "options": {"num_ctx": 8192, "temperature": 0.5},
               "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]})
    );

    // Unstreamed: a tool call as OpenAI's `chat.completion`.
    up.push_for(
        API_CHAT,
        Reply::json(
            200,
            tool_call_answer("get_current_weather", json!({"location": "Paris, FR"})),
        ),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(false)).await;
    assert_eq!(resp.status, 200);
    let answer = resp.json().await;
    assert_eq!(answer["object"], "chat.completion");
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"location":"Paris, FR"}"#
    );
    assert_eq!(answer["usage"]["total_tokens"], 155);
    assert_eq!(up.requests()[1].json()["stream"], false);
}

#[tokio::test]
async fn ollama_errors_keep_their_status_retry_after_and_message() {
    let (up, hub) = ollama_hub("max_retries = 0").await;
    let missing = r#"model "llama3.2" not found, try pulling it first"#;
    up.push_for(API_CHAT, Dialect::Ollama.error(404, "", missing));
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json().await["error"]["message"], missing);

    up.push_for(
        API_CHAT,
        Dialect::Ollama
            .error(429, "", "too many requests")
            .header("retry-after", "7"),
    );
    let resp = client::post(hub.addr, "/v1/chat/completions", &ask(false)).await;
    assert_eq!(
        (resp.status.as_u16(), resp.header("retry-after")),
        (429, Some("7"))
    );
    assert_eq!(resp.json().await["error"]["message"], "too many requests");

    // Mid-stream: the text so far, then an error frame and no `[DONE]`.
    up.push_for(
        API_CHAT,
        Dialect::Ollama.stream(&[
            line(json!({"role": "assistant", "content": "The sky"})),
            json!({"error": "an error was encountered while running the model: unexpected EOF"}),
        ]),
    );
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &ask(true))
        .await
        .events(WITHIN)
        .await;
    assert!(!events.contains(&"[DONE]".to_string()), "{events:?}");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unexpected EOF"),
        "{last}"
    );

    // The same on the UI stream: an error chunk, never a finished answer.
    up.push_for(
        API_CHAT,
        Dialect::Ollama.stream(&[line(json!({"role": "assistant", "content": "The sky"}))]),
    );
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &ask(true)).await;
    let chunks = ui_chunks(&resp.events(WITHIN).await.0);
    assert!(
        error_text(&chunks).is_some_and(|e| e.contains("ended before")),
        "{chunks:?}"
    );
}

#[tokio::test]
async fn a_503_from_ollama_is_retried_as_from_any_provider() {
    let (up, hub) = ollama_hub("max_retries = 1\nretry_base_ms = 1").await;
    up.push_for(
        API_CHAT,
        Reply::json(503, json!({"error": "server busy"})).header("retry-after", "0"),
    );
    up.push_for(API_CHAT, sky());
    let (events, _) = client::post(hub.addr, "/v1/chat/completions", &ask(true))
        .await
        .events(WITHIN)
        .await;
    assert_eq!(
        openai_text(&events),
        "The sky is blue because of Rayleigh scattering."
    );
    assert_eq!(up.requests().len(), 2);
}

#[tokio::test]
async fn the_ui_stream_and_the_messages_surface_read_an_ollama_model() {
    let (up, hub) = ollama_hub("think = true").await;
    up.push_for(API_CHAT, sky());
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &ask(true)).await;
    let chunks = ui_chunks(&resp.events(WITHIN).await.0);
    let (text, reasoning) = text_of(&chunks);
    assert_eq!(text, "The sky is blue because of Rayleigh scattering.");
    assert_eq!(reasoning, "The user asks why.");
    assert_eq!(chat::finish(&chunks).0, Some(FinishReason::Stop));
    assert_eq!(up.requests()[0].json()["think"], true);

    up.push_for(API_CHAT, sky());
    let body = json!({"model": "local/llama3.2", "max_tokens": 64, "system": "Be brief.",
                      "messages": [{"role": "user", "content": "Why is the sky blue?"}]});
    let resp = client::post(hub.addr, "/v1/messages", &body).await;
    assert_eq!(resp.status, 200);
    let message = resp.json().await;
    let texts: Vec<&str> = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(
        texts.concat(),
        "The sky is blue because of Rayleigh scattering.",
        "{message}"
    );
    assert_eq!(
        (
            message["stop_reason"].as_str(),
            message["usage"]["output_tokens"].as_u64()
        ),
        (Some("end_turn"), Some(282))
    );
    let sent = up.requests()[1].json();
    assert_eq!(
        (&sent["options"]["num_predict"], &sent["messages"][0]["role"]),
        (&json!(64), &json!("system"))
    );
}

#[tokio::test]
async fn an_agent_turn_runs_a_tool_round_through_ollama() {
    let up = Upstream::start().await;
    let hub = hub_with(&up, plugins(&[]), |c| c.providers[0].kind = "ollama".into()).await;
    let args: Value = serde_json::from_str(&call_args(
        json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]),
    ))
    .unwrap();
    up.push_for(
        API_CHAT,
        Dialect::Ollama.stream(&[tool_call_answer("hub_call", args)]),
    );
    up.push_for(
        API_CHAT,
        Dialect::Ollama.stream(&[
            line(json!({"role": "assistant", "content": "It is 42."})),
            done(300, 5),
        ]),
    );
    let chunks =
        chat::chunks(chat::post_chat(hub.addr, &submit("ollama-1", vec![user("u1", "6*7?")])).await).await;
    assert_eq!(text_of(&chunks).0, "It is 42.");
    let output = crate::support::llm::tool_output(&chunks).expect("the hub_call's output");
    assert_eq!(output["results"][0]["result"]["decimal"], "42");
    let second = up.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let (call, result) = (&messages[messages.len() - 2], &messages[messages.len() - 1]);
    assert_eq!(call["tool_calls"][0]["function"]["name"], "hub_call");
    assert!(
        call["tool_calls"][0]["function"]["arguments"].is_object(),
        "{call}"
    );
    assert_eq!(
        (&result["role"], &result["tool_name"]),
        (&json!("tool"), &json!("hub_call"))
    );
    assert!(result["content"].as_str().unwrap().contains("42"), "{result}");
}

#[tokio::test]
async fn a_chain_falls_back_from_openai_to_ollama_each_in_its_dialect() {
    let (first, second) = (Upstream::start().await, Upstream::start().await);
    let (a, b) = (first.base_url(), second.base_url());
    let providers = [
        ("cloud", a.as_str(), "max_retries = 0"),
        ("local", b.as_str(), "kind = \"ollama\"\nmax_retries = 0"),
    ];
    let hub = smart_chain(&providers, &["cloud/gpt-4o", "local/llama3.2"]).await;
    first.push(Reply::error(503, "overloaded"));
    second.push_for(API_CHAT, sky());
    let mut body = ask(true);
    body["model"] = json!("smart");
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.header("x-wasmhub-target"), Some("local/llama3.2"));
    assert_eq!(
        openai_text(&resp.events(WITHIN).await.0),
        "The sky is blue because of Rayleigh scattering."
    );
    let (a, b) = (first.requests(), second.requests());
    assert_eq!((a[0].path.as_str(), b[0].path.as_str()), (CHAT, API_CHAT));
    let (a, b) = (a[0].json(), b[0].json());
    assert_eq!((&a["model"], &b["model"]), (&json!("gpt-4o"), &json!("llama3.2")));
    assert_eq!(a["messages"], b["messages"], "the same conversation to each");
    assert_eq!(
        (&a["temperature"], &b["options"]["temperature"]),
        (&json!(0.5), &json!(0.5))
    );
    assert_eq!(
        (&a["stream_options"], &b["stream_options"]),
        (&Value::Null, &Value::Null)
    );
}

#[tokio::test]
async fn a_provider_with_streaming_off_still_streams_to_its_clients() {
    let up = Upstream::start().await;
    let hub = hub::start(vec![
        hub::provider("whole", &up.base_url(), &["gpt-*"], "stream = false"),
        hub::provider(
            "wholeollama",
            &up.base_url(),
            &["llama*"],
            "kind = \"ollama\"\nstream = false",
        ),
    ])
    .await;
    up.push(Reply::json(200, json!({"id": "chatcmpl-123", "object": "chat.completion", "created": 1677652288,
        "model": "gpt-4o-mini", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there!"},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}})));
    let mut body = ask(true);
    body["model"] = json!("whole/gpt-4o-mini");
    body["stream_options"] = json!({"include_usage": true});
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert_eq!(openai_text(&resp.events(WITHIN).await.0), "Hello there!");
    let sent = up.requests()[0].json();
    assert_eq!(
        (&sent["stream"], &sent["stream_options"]),
        (&json!(false), &Value::Null)
    );

    up.push_for(API_CHAT, Reply::json(200, json!({"model": "llama3.2", "created_at": "2023-12-12T14:13:43.416799Z",
        "message": {"role": "assistant", "content": "Hello! How are you today?"}, "done": true, "done_reason": "stop",
        "prompt_eval_count": 26, "eval_count": 298})));
    body["model"] = json!("wholeollama/llama3.2");
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &body).await;
    let chunks = ui_chunks(&resp.events(WITHIN).await.0);
    assert_eq!(text_of(&chunks).0, "Hello! How are you today?");
    assert_eq!(up.requests()[1].json()["stream"], false);
}

#[tokio::test]
async fn the_model_list_holds_what_ollama_has_pulled() {
    let (up, hub) = ollama_hub("").await;
    // Ollama's example answer ("List Local Models"), shortened.
    up.push_for(
        "/api/tags",
        Reply::json(200, json!({"models": [
            {"name": "deepseek-r1:latest", "model": "deepseek-r1:latest", "modified_at": "2025-05-10T08:06:48.639712648-07:00", "size": 4683075271u64},
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "modified_at": "2025-05-04T17:37:44.706015396-07:00", "size": 2019393189u64},
        ]})),
    );
    let list = client::send(hub.addr, http::Method::GET, "/v1/models", None, &[])
        .await
        .json()
        .await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["local/deepseek-r1:latest", "local/llama3.2:latest"]);
}
