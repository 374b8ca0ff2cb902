//! Streams of a running turn: a late joiner (`GET /api/chat/{id}/stream`) gets the
//! chunks so far and then the live ones; with `agent.detached_turn_secs = 0` a
//! client that disconnects aborts the turn at once, which cancels the upstream
//! request and the running tool calls, and the partial assistant message is stored
//! marked aborted (`chat_detached`: the default, where a turn outlives its client).

use crate::support::chat::*;
use crate::support::client;
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::json;
use std::time::Duration;
use wasmhub::llm::UiChunk;

#[tokio::test]
async fn a_late_joiner_gets_the_whole_turn_and_204_when_none_runs() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    let none = client::send(
        hub.addr,
        http::Method::GET,
        "/api/chat/chat-res/stream",
        None,
        &[],
    )
    .await;
    assert_eq!(none.status, 204);

    upstream.push(tool_step(None, &[("call_l", "hub_list", "{}".into())]));
    upstream.push(slow_text_step(
        "one two three four five six",
        Duration::from_millis(100),
    ));
    let mut first = post_chat(hub.addr, &submit("chat-res", vec![user("u1", "list")])).await;
    let mut seen = Vec::new();
    // Read until the second step streams text, then join.
    while let Some(c) = next_chunk(&mut first).await {
        let is_text = matches!(c, UiChunk::TextDelta { .. });
        seen.push(c);
        if is_text {
            break;
        }
    }
    let joined = client::send(
        hub.addr,
        http::Method::GET,
        "/api/chat/chat-res/stream",
        None,
        &[],
    )
    .await;
    assert_eq!(joined.status, 200);
    let late = chunks(joined).await;
    while let Some(c) = next_chunk(&mut first).await {
        seen.push(c);
    }
    assert_eq!(
        late, seen,
        "the late joiner sees exactly what the first client saw"
    );
    assert!(matches!(late.last(), Some(UiChunk::Finish { .. })));
    let after = client::send(
        hub.addr,
        http::Method::GET,
        "/api/chat/chat-res/stream",
        None,
        &[],
    )
    .await;
    assert_eq!(after.status, 204);
}

#[tokio::test]
async fn the_joiner_keeps_the_turn_alive_when_the_first_client_leaves() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    upstream.push(slow_text_step("a b c d e f g h", Duration::from_millis(100)));
    let mut first = post_chat(hub.addr, &submit("chat-keep", vec![user("u1", "hi")])).await;
    assert!(next_chunk(&mut first).await.is_some());
    let joined = client::send(
        hub.addr,
        http::Method::GET,
        "/api/chat/chat-keep/stream",
        None,
        &[],
    )
    .await;
    drop(first);
    let late = chunks(joined).await;
    assert!(
        matches!(late.last(), Some(UiChunk::Finish { .. })),
        "{:?}",
        types(&late)
    );
    assert_eq!(upstream.cancelled(), 0);
    let s = session(hub.addr, "chat-keep").await;
    assert!(s["messages"][1]["metadata"].get("aborted").is_none());
}

#[tokio::test]
async fn disconnecting_cancels_the_upstream_request_and_stores_the_partial_message() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.detached_turn_secs = 0).await;
    let frames = vec![
        Frame::Data(json!({"choices": [{"index": 0, "delta": {"content": "partial "}}]}).to_string()),
        Frame::Data(json!({"choices": [{"index": 0, "delta": {"content": "answer"}}]}).to_string()),
        Frame::Hang,
    ];
    upstream.push(Reply::sse(frames));
    let mut resp = post_chat(hub.addr, &submit("chat-abort", vec![user("u1", "hi")])).await;
    let mut text = String::new();
    while let Some(c) = next_chunk(&mut resp).await {
        if let UiChunk::TextDelta { delta, .. } = c {
            text.push_str(&delta);
            if text == "partial answer" {
                break;
            }
        }
    }
    drop(resp);
    assert!(
        upstream.wait_cancelled(1, Duration::from_secs(10)).await,
        "the upstream request was cancelled"
    );
    let s = ended_session(hub.addr, "chat-abort").await;
    let a = &s["messages"][1];
    assert_eq!(a["metadata"]["aborted"], true, "{a}");
    assert_eq!(a["metadata"]["finishReason"], "aborted");
    assert_eq!(a["parts"][1]["text"], "partial answer");
    assert_eq!(a["parts"][1]["state"], "done");

    // The session goes on: the next turn tells the model the answer was cut.
    upstream.push(text_step("ok"));
    let mut msgs = s["messages"].as_array().unwrap().clone();
    msgs.push(user("u2", "go on"));
    let c = chunks(post_chat(hub.addr, &submit("chat-abort", msgs)).await).await;
    assert!(matches!(c.last(), Some(UiChunk::Finish { .. })));
}

#[tokio::test]
async fn disconnecting_cancels_a_running_tool_call() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&["adversary"]), |c| {
        c.agent.detached_turn_secs = 0
    })
    .await;
    upstream.push(slow_call_step());
    let mut resp = post_chat(hub.addr, &submit("chat-tool-abort", vec![user("u1", "wait")])).await;
    while let Some(c) = next_chunk(&mut resp).await {
        if matches!(c, UiChunk::ToolInputAvailable { .. }) {
            break;
        }
    }
    // Leave once the call runs.
    crate::support::wait::in_flight(&hub.app.hub, 1).await;
    drop(resp);
    let record = ended_call(&hub, "adversary.slow").await;
    assert_eq!(record.outcome.as_str(), "cancelled", "{record:?}");
    assert!(
        record.duration_us < 15_000_000,
        "stopped long before its 30 s: {record:?}"
    );
    let s = ended_session(hub.addr, "chat-tool-abort").await;
    let a = &s["messages"][1];
    assert_eq!(a["metadata"]["aborted"], true);
    assert_eq!(a["parts"][1]["type"], "tool-hub_call");
    assert_eq!(
        a["parts"][1]["state"], "input-available",
        "no result was stored for the cancelled call"
    );
}
