//! A message sent while a turn runs in its session waits for that turn (FIFO, at
//! most `agent.queued_turns`), then runs on the stored conversation; past the
//! bound it is refused with 409 naming the key.

use crate::support::chat::*;
use crate::support::client;
use std::net::SocketAddr;
use std::time::Duration;
use wasmhub::llm::UiChunk;

use crate::support::upstream::Upstream;

/// `wasmhub_chat_queued_turns` from `/metrics`.
async fn queued(addr: SocketAddr) -> u64 {
    let n = client::metric(addr, "wasmhub_chat_queued_turns").await;
    n.expect("wasmhub_chat_queued_turns in /metrics") as u64
}

async fn until_queued(addr: SocketAddr, n: u64) {
    crate::support::wait::until_seen(&format!("{n} requests to wait"), || async move {
        let now = queued(addr).await;
        if now == n { Ok(()) } else { Err(now) }
    })
    .await
}

#[tokio::test]
async fn a_second_message_waits_for_the_turn_and_a_third_past_the_bound_is_refused() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.queued_turns = 1).await;
    let id = wasmhub::ids::new_id("queued");
    upstream.push(slow_text_step(
        "first answer in words",
        Duration::from_millis(100),
    ));
    upstream.push(text_step("second answer"));
    let mut first = post_chat(hub.addr, &submit(&id, vec![user("u1", "one")])).await;
    assert!(matches!(
        next_chunk(&mut first).await,
        Some(UiChunk::Start { .. })
    ));
    let addr = hub.addr;
    let body = submit(&id, vec![user("u1", "one"), user("u2", "two")]);
    let second = tokio::spawn(async move { chunks(post_chat(addr, &body).await).await });
    until_queued(hub.addr, 1).await;
    let third = post_chat(
        hub.addr,
        &submit(&id, vec![user("u1", "one"), user("u3", "three")]),
    )
    .await;
    assert_eq!(third.status, 409);
    let error = third.json().await["error"].clone();
    assert_eq!(error["code"], "turn_queue_full");
    assert!(
        error["message"].as_str().unwrap().contains("agent.queued_turns"),
        "{error}"
    );
    // The first turn ends untouched, then the second runs after it.
    while next_chunk(&mut first).await.is_some() {}
    let second = second.await.unwrap();
    assert!(
        second
            .iter()
            .any(|c| matches!(c, UiChunk::TextDelta { delta, .. } if delta.contains("second")))
    );
    assert_eq!(queued(hub.addr).await, 0);
    let stored = session(hub.addr, &id).await;
    let roles: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "{stored}");
    assert_eq!(stored["messages"][2]["id"], "u2");
}
