//! Turns outlive their connections: a client that leaves (a reload) does not stop
//! the turn, a reconnect within `agent.detached_turn_secs` follows it to its end,
//! a turn nobody comes back to stops after that time, and `POST /api/chat/{id}/stop`
//! stops one at once, the stored message saying so.

use crate::support::chat::*;
use crate::support::client;
use std::time::Duration;
use wasmhub::llm::UiChunk;

use crate::support::upstream::{Reply, Upstream};

const WORDS: &str = "one two three four five six seven eight nine ten";

/// Reads `resp` up to its first text delta.
async fn first_text(resp: &mut client::ClientResp) {
    while let Some(chunk) = next_chunk(resp).await {
        if matches!(chunk, UiChunk::TextDelta { .. }) {
            return;
        }
    }
    panic!("the turn ended before any text");
}

fn stream_path(id: &str) -> String {
    format!("/api/chat/{id}/stream")
}

/// The text of every text delta in `chunks`.
fn text_of(chunks: &[UiChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_reload_mid_turn_reconnects_and_the_answer_completes() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    let id = wasmhub::ids::new_id("reload");
    upstream.push(slow_text_step(WORDS, Duration::from_millis(60)));
    let mut first = post_chat(hub.addr, &submit(&id, vec![user("u1", "count")])).await;
    first_text(&mut first).await;
    // The page reloads: its connection is gone, nobody watches the turn.
    drop(first);
    let again = client::send(hub.addr, http::Method::GET, &stream_path(&id), None, &[]).await;
    assert_eq!(again.status, 200, "the turn is still live after its client left");
    let chunks = chunks(again).await;
    assert_eq!(text_of(&chunks), WORDS, "every word, from the first");
    assert!(!chunks.iter().any(|c| matches!(c, UiChunk::Abort { .. })));
    let stored = ended_session(hub.addr, &id).await;
    assert_eq!(stored["messages"][1]["parts"][1]["text"], WORDS, "{stored}");
    assert_ne!(stored["messages"][1]["metadata"]["aborted"], true);
}

#[tokio::test]
async fn a_turn_nobody_comes_back_to_stops_after_detached_turn_secs() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.detached_turn_secs = 1).await;
    let id = wasmhub::ids::new_id("abandoned");
    // Long enough that only the detached timer can end it.
    upstream.push(slow_text_step(&"word ".repeat(200), Duration::from_millis(100)));
    let mut first = post_chat(hub.addr, &submit(&id, vec![user("u1", "talk")])).await;
    first_text(&mut first).await;
    drop(first);
    let stored = ended_session(hub.addr, &id).await;
    assert_eq!(stored["messages"][1]["metadata"]["aborted"], true, "{stored}");
    let text = stored["messages"][1]["parts"][1]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.len() < 1000, "stopped part way: {} bytes", text.len());
}

#[tokio::test]
async fn stop_ends_the_turn_for_every_watcher_and_the_stored_message_says_so() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    let id = wasmhub::ids::new_id("stopped");
    upstream.push(slow_text_step(&"word ".repeat(200), Duration::from_millis(100)));
    let mut first = post_chat(hub.addr, &submit(&id, vec![user("u1", "talk")])).await;
    first_text(&mut first).await;
    let mut watcher = client::send(hub.addr, http::Method::GET, &stream_path(&id), None, &[]).await;
    assert_eq!(watcher.status, 200);
    let stop = format!("/api/chat/{id}/stop");
    let stopped = client::send(hub.addr, http::Method::POST, &stop, None, &[]).await;
    assert_eq!(stopped.status, 204);
    let mut rest = Vec::new();
    while let Some(c) = next_chunk(&mut first).await {
        rest.push(c);
    }
    let reason = rest.iter().find_map(|c| match c {
        UiChunk::Abort { reason } => reason.clone(),
        _ => None,
    });
    assert_eq!(
        reason.as_deref(),
        Some("stopped on request"),
        "{:?}",
        types(&rest)
    );
    while next_chunk(&mut watcher).await.is_some() {}
    let stored = ended_session(hub.addr, &id).await;
    assert_eq!(stored["messages"][1]["metadata"]["aborted"], true, "{stored}");
    // Idempotent: no turn runs now, and an unknown session is the same 204.
    let again = client::send(hub.addr, http::Method::POST, &stop, None, &[]).await;
    assert_eq!(again.status, 204);
    let unknown = client::send(
        hub.addr,
        http::Method::POST,
        "/api/chat/nothing-here/stop",
        None,
        &[],
    )
    .await;
    assert_eq!(unknown.status, 204);
}

/// A model step of `halves[0]`, then (once `gate` is notified) `halves[1]`, in
/// 1 KiB deltas.
fn gated_long_step(halves: [&str; 2], gate: &std::sync::Arc<tokio::sync::Notify>) -> Reply {
    use crate::support::upstream::{Frame, finish_chunk, text_chunk};
    let deltas = |text: &str| -> Vec<Frame> {
        text.as_bytes()
            .chunks(1024)
            .map(|piece| Frame::Data(text_chunk(std::str::from_utf8(piece).unwrap())))
            .collect()
    };
    let mut frames = deltas(halves[0]);
    frames.push(Frame::Until(gate.clone()));
    frames.extend(deltas(halves[1]));
    frames.push(Frame::Data(finish_chunk("stop")));
    frames.push(Frame::Data("[DONE]".into()));
    Reply::sse(frames)
}

#[tokio::test]
async fn a_long_turn_resumes_from_its_message_state_not_its_whole_stream() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.resume_buffer_kb = 64).await;
    let id = wasmhub::ids::new_id("long");
    // 5 MB before the reload, 5 MB after: far past the 64 KiB kept for resume.
    let first_half = "lorem ipsum ".repeat(5 << 20 >> 4);
    let second_half = "dolor sit amet. ".repeat(5 << 20 >> 4);
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    upstream.push(gated_long_step([&first_half, &second_half], &gate));
    let mut first = post_chat(hub.addr, &submit(&id, vec![user("u1", "a lot")])).await;
    let mut seen = Vec::new();
    while text_of(&seen).len() < first_half.len() {
        seen.push(next_chunk(&mut first).await.expect("the first half"));
    }
    assert_eq!(text_of(&seen), first_half);
    // The page reloads while the model is paused after the first half.
    drop(first);
    let mut again = client::send(hub.addr, http::Method::GET, &stream_path(&id), None, &[]).await;
    assert_eq!(again.status, 200, "the turn is still live after its client left");
    let mut replay = Vec::new();
    while text_of(&replay).len() < first_half.len() {
        replay.push(next_chunk(&mut again).await.expect("the replay"));
    }
    assert_eq!(text_of(&replay), first_half, "the replay holds everything so far");
    assert!(
        replay.len() < 10,
        "a replay of the message, not its {} chunks: {:?}",
        seen.len(),
        types(&replay)
    );
    gate.notify_one();
    let mut rest = Vec::new();
    while let Some(chunk) = next_chunk(&mut again).await {
        rest.push(chunk);
    }
    assert_eq!(
        text_of(&[replay, rest.clone()].concat()),
        format!("{first_half}{second_half}"),
        "the whole answer, to its last character"
    );
    assert!(rest.iter().any(|c| matches!(c, UiChunk::Finish { .. })));
    let stored = ended_session(hub.addr, &id).await;
    let stored_text = stored["messages"][1]["parts"][1]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        stored_text == format!("{first_half}{second_half}"),
        "the stored answer is whole"
    );
}
