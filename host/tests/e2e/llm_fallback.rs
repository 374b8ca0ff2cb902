//! Fallback chains (`[[models]]` with several targets) on all three paths: the
//! proxy, the UI stream and the agent loop, with two scripted upstreams. The first
//! target fails before its first event or mid-stream; the second answers. Every
//! attempt gets the same request; the partial answer is not kept.

use crate::support::chat::{self, MODEL, post_chat, session, submit, text_step, tool_step, user};
use crate::support::client;
use crate::support::hub::{self, Hub};
use crate::support::llm::{WITHIN, error_text, text_of, ui_chunks};
use crate::support::upstream::{self, Frame, Reply, Upstream};
use serde_json::{Value, json};
use std::time::Duration;
use wasmhub::config::{Config, ModelConfig};
use wasmhub::llm::{FinishReason, UiChunk};

fn chain(name: &str, targets: &[&str]) -> ModelConfig {
    wasmhub::toml::from_str(&format!("name = {name:?}\ntargets = {targets:?}\n")).unwrap()
}

/// Upstreams `first` and `second` as providers `a` and `b`, and the model `smart`
/// = `a/m1`, then `b/m2`.
async fn two_targets() -> (Upstream, Upstream, Hub) {
    let (first, second) = (Upstream::start().await, Upstream::start().await);
    let config = Config {
        providers: vec![
            hub::provider("a", &first.base_url(), &[], "max_retries = 0"),
            hub::provider("b", &second.base_url(), &[], "max_retries = 0"),
        ],
        models: vec![chain("smart", &["a/m1", "b/m2"])],
        ..Config::default()
    };
    let hub = hub::start_with(config).await;
    (first, second, hub)
}

fn body(stream: bool) -> Value {
    json!({"model": "smart", "stream": stream, "temperature": 0.2,
           "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})
}

/// The one request each upstream got, with `model` taken out: they must be equal.
fn same_request_but_model(first: &Upstream, second: &Upstream) -> (Value, Value) {
    let (a, b) = (first.requests(), second.requests());
    assert_eq!((a.len(), b.len()), (1, 1), "one attempt per target");
    let (mut a, mut b) = (a[0].json(), b[0].json());
    let models = (a["model"].take(), b["model"].take());
    assert_eq!(a, b, "every attempt gets the same request");
    models
}

#[tokio::test]
async fn the_proxy_moves_on_when_the_first_target_fails_before_its_first_event() {
    let (first, second, hub) = two_targets().await;
    first.push(Reply::error(503, "overloaded"));
    second.push(Reply::sse(upstream::fixture_frames("openai--openai-text")));
    let resp = client::post(hub.addr, "/v1/chat/completions", &body(true)).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-wasmhub-target"), Some("b/m2"));
    let (events, _) = resp.events(WITHIN).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    assert!(!events.iter().any(|e| e.contains("\"error\"")), "{events:?}");
    let models = same_request_but_model(&first, &second);
    assert_eq!(models, (json!("m1"), json!("m2")));

    // A stream that breaks before its first event, and a whole answer.
    first.push(Reply::sse(vec![Frame::Drop]));
    second.push(Reply::json(
        200,
        json!({"id": "x", "object": "chat.completion", "choices": []}),
    ));
    let resp = client::post(hub.addr, "/v1/chat/completions", &body(true)).await;
    assert_eq!(
        (resp.status.as_u16(), resp.header("x-wasmhub-target")),
        (200, Some("b/m2"))
    );
    assert_eq!(resp.json().await["object"], "chat.completion");

    // The last target's failure is relayed as it is without a chain.
    first.push(Reply::error(500, "down"));
    second.push(Reply::error(429, "slow down"));
    let resp = client::post(hub.addr, "/v1/chat/completions", &body(false)).await;
    assert_eq!(resp.status, 429);
    assert_eq!(resp.json().await["error"]["message"], "slow down");
}

#[tokio::test]
async fn the_ui_stream_gives_up_a_target_that_fails_mid_stream_and_the_next_answers() {
    let (first, second, hub) = two_targets().await;
    first.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("Partial ans")),
        // The hub reads the text before the connection breaks.
        Frame::Delay(Duration::from_millis(100)),
        Frame::Drop,
    ]));
    second.push(chat::text_step("A clean answer."));
    let resp = client::post(hub.addr, "/api/ui/chat/completions", &body(true)).await;
    let chunks = ui_chunks(&resp.events(WITHIN).await.0);
    assert_eq!(error_text(&chunks), None, "the client sees no error");
    let fallback: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::Data { name, data, .. } if name == "llm-fallback" => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(fallback.len(), 1, "one warning part");
    assert_eq!(
        (&fallback[0]["from"], &fallback[0]["to"]),
        (&json!("a/m1"), &json!("b/m2"))
    );
    assert_eq!(fallback[0]["discarded"], true);
    let (reason, meta) = chat::finish(&chunks);
    assert_eq!(reason, Some(FinishReason::Stop));
    assert_eq!(
        (&meta["provider"], &meta["target"]),
        (&json!("b"), &json!("b/m2"))
    );
    // The answer after the warning is the second target's alone.
    let at = chunks
        .iter()
        .position(|c| matches!(c, UiChunk::Data { .. }))
        .unwrap();
    assert_eq!(text_of(&chunks[at..]).0, "A clean answer.");
    same_request_but_model(&first, &second);
}

#[tokio::test]
async fn the_agent_loop_stores_only_the_answer_of_the_target_that_finished_the_step() {
    let (first, second) = (Upstream::start().await, Upstream::start().await);
    let hub = chat::hub_with(&first, chat::plugins(&[]), |c| {
        c.providers
            .push(hub::provider("b", &second.base_url(), &[], "max_retries = 0"));
        c.models = vec![chain("smart", &[MODEL, "b/m2"])];
        c.agent.model = Some("smart".into());
    })
    .await;
    // The first target streams text and half a tool call, then breaks.
    let mut partial = tool_step(Some("Let me look"), &[("call_x", "hub_list", "{}".into())]);
    if let upstream::ReplyBody::Sse(frames) = &mut partial.body {
        frames.truncate(2);
        frames.extend([Frame::Delay(Duration::from_millis(100)), Frame::Drop]);
    }
    first.push(partial);
    second.push(text_step("Two plugins: calc and text."));
    let chunks = chat::chunks(
        post_chat(
            hub.addr,
            &submit("chat-fallback", vec![user("u1", "What is there?")]),
        )
        .await,
    )
    .await;
    assert_eq!(error_text(&chunks), None);
    let (reason, meta) = chat::finish(&chunks);
    assert_eq!(reason, Some(FinishReason::Stop));
    assert_eq!(
        (&meta["target"], &meta["finishReason"]),
        (&json!("b/m2"), &json!("stop"))
    );
    // The partial tool input ended as not run; no tool ran.
    assert!(chunks.iter().any(|c| matches!(c, UiChunk::ToolInputError { error_text, .. } if error_text.starts_with("discarded, not run"))));
    assert!(!chunks.iter().any(|c| matches!(
        c,
        UiChunk::ToolOutputAvailable { .. } | UiChunk::ToolOutputError { .. }
    )));
    same_request_but_model(&first, &second);

    let stored = session(hub.addr, "chat-fallback").await;
    let parts = &stored["messages"][1]["parts"];
    let kinds: Vec<&str> = parts
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["step-start", "data-llm-fallback", "text"], "{parts}");
    assert_eq!(parts[2]["text"], "Two plugins: calc and text.");
    assert!(
        !parts.to_string().contains("Let me look"),
        "no partial text in history"
    );
}

#[tokio::test]
async fn a_hub_shutdown_mid_stream_ends_the_step_with_its_error_and_tries_no_other_target() {
    let (first, second, mut hub) = two_targets().await;
    first.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("Hel")),
        Frame::Hang,
    ]));
    let mut resp = client::post(hub.addr, "/api/ui/chat/completions", &body(true)).await;
    let mut events = Vec::new();
    while let Some(event) = resp.next_event().await {
        let hel = event.contains("Hel");
        events.push(event);
        if hel {
            break;
        }
    }
    hub.shut_down();
    events.extend(resp.events(WITHIN).await.0);
    let chunks = ui_chunks(&events);
    assert!(
        error_text(&chunks).is_some_and(|e| e.contains("the hub is shutting down")),
        "{chunks:?}"
    );
    assert_eq!(text_of(&chunks).0, "Hel", "the partial answer stays");
    assert!(
        !chunks
            .iter()
            .any(|c| matches!(c, UiChunk::Data { name, .. } if name == "llm-fallback")),
        "no fallback: {chunks:?}"
    );
    assert!(second.requests().is_empty(), "the second target was not tried");
}
