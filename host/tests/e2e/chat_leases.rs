//! A session's lease and its versioned saves through `POST /api/chat`: a lease
//! held by another replica is the same 409 as a turn running here until it lapses,
//! and a turn whose session was written by someone else meanwhile (it lost its
//! lease) stops with an error instead of overwriting that write.

use crate::support::chat::*;
use crate::support::client;
use crate::support::upstream::{Frame, ReplyBody, Upstream};
use std::time::Duration;
use wasmhub::agent::{Lease, SaveOutcome, SaveRequest};
use wasmhub::llm::UiChunk;

#[tokio::test]
async fn a_session_leased_by_another_replica_is_busy_until_the_lease_lapses() {
    let upstream = Upstream::start().await;
    // Without a waiting line, so the lease shows as 409 until it lapses.
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.queued_turns = 0).await;
    let store = hub.app.agent.sessions().clone();
    let lease = store
        .acquire("chat-elsewhere", "another-replica", Duration::from_secs(3))
        .await
        .unwrap();
    assert!(matches!(lease, Lease::Acquired { .. }));
    let busy = post_chat(hub.addr, &submit("chat-elsewhere", vec![user("u1", "hi")])).await;
    assert_eq!(busy.status, 409);
    assert_eq!(busy.json().await["error"]["code"], "turn_in_progress");
    let del = client::send(
        hub.addr,
        http::Method::DELETE,
        "/api/sessions/chat-elsewhere",
        None,
        &[],
    )
    .await;
    // Nothing is stored under that id yet: a missing session, whoever leases it.
    assert_eq!(del.status, 404);
    // Nobody renews it: it lapses and the session is free here.
    upstream.push(text_step("hello"));
    let addr = hub.addr;
    let resp = crate::support::wait::until_seen("the lease to lapse", || async move {
        let resp = post_chat(addr, &submit("chat-elsewhere", vec![user("u1", "hi")])).await;
        if resp.status == 200 {
            Ok(resp)
        } else {
            Err(resp.status)
        }
    })
    .await;
    let chunks = chunks(resp).await;
    assert!(
        matches!(chunks.last(), Some(UiChunk::Finish { .. })),
        "{chunks:?}"
    );
    assert_eq!(
        session(hub.addr, "chat-elsewhere").await["messages"][1]["role"],
        "assistant"
    );
}

#[tokio::test]
async fn a_turn_whose_session_was_written_elsewhere_stops_with_an_error() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    // A step that streams slowly: the other write lands while it streams, and the
    // turn's save after its tool call finds it.
    let mut step = tool_step(None, &[("call_l", "hub_list", "{}".into())]);
    if let ReplyBody::Sse(frames) = &mut step.body {
        *frames = frames
            .drain(..)
            .flat_map(|f| [Frame::Delay(Duration::from_millis(250)), f])
            .collect();
    }
    upstream.push(step);
    let mut resp = post_chat(hub.addr, &submit("chat-cas", vec![user("u1", "wait")])).await;
    assert_eq!(resp.status, 200);
    // `start` is sent after the turn's first save.
    assert!(matches!(next_chunk(&mut resp).await, Some(UiChunk::Start { .. })));
    // Another replica (that took the lapsed lease) writes the session meanwhile.
    let store = hub.app.agent.sessions().clone();
    let stored = store
        .load("chat-cas")
        .await
        .unwrap()
        .expect("saved at the turn's start");
    let other = wasmhub::agent::UiMessage::new("u-other".into(), wasmhub::agent::Role::User);
    let save = SaveRequest {
        info: &stored.info,
        head: &stored.messages[..1],
        tail: Some(&other),
        from: 1,
        durable: true,
    };
    let SaveOutcome::Saved(written) = store.save(save).await.unwrap() else {
        panic!("the other write conflicted")
    };
    let mut seen = Vec::new();
    while let Some(c) = next_chunk(&mut resp).await {
        seen.push(c);
    }
    let error = seen.iter().find_map(|c| match c {
        UiChunk::Error { error_text } => Some(error_text.clone()),
        _ => None,
    });
    let error = error.unwrap_or_else(|| panic!("no error chunk: {seen:?}"));
    assert!(
        error.contains("written elsewhere") && error.contains("lost its lease"),
        "{error}"
    );
    let (reason, _) = finish(&seen);
    assert_eq!(reason, Some(wasmhub::llm::FinishReason::Error));
    // The other replica's write stands; the model was asked once.
    let after = store.load("chat-cas").await.unwrap().unwrap();
    assert_eq!(after.info, written);
    assert_eq!(after.messages[1].id, "u-other");
    assert_eq!(upstream.requests().len(), 1);
}
