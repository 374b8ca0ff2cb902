//! Two hubs ("replicas") whose agents share one PostgreSQL database (feature
//! `postgres`; the server in `WASMHUB_TEST_DATABASE_URL`): a turn running on one
//! is resumed from the other (replay, then live), is busy (409) there while it
//! runs, and the session continues on the other replica once it ended.

use crate::support::chat::*;
use crate::support::client;
use crate::support::hub::Hub;
use crate::support::upstream::Upstream;
use std::time::Duration;
use wasmhub::config::StorageBackend;
use wasmhub::llm::UiChunk;
use wasmhub::storage::Backend;

async fn two_replicas(upstream: &Upstream) -> (Hub, Hub) {
    let mut config = chat_config(upstream, plugins(&[]));
    // Busy is 409 here: requests do not wait in line for the turn.
    config.agent.queued_turns = 0;
    config.storage.backend = StorageBackend::Postgres;
    config.storage.url_env = "WASMHUB_TEST_DATABASE_URL".into();
    let a = Backend::open(&config)
        .await
        .expect("the test database (WASMHUB_TEST_DATABASE_URL)");
    let b = Backend::open(&config)
        .await
        .expect("the test database (WASMHUB_TEST_DATABASE_URL)");
    (hub_on(config.clone(), a).await, hub_on(config, b).await)
}

async fn stream_status(addr: std::net::SocketAddr, id: &str) -> client::ClientResp {
    client::send(
        addr,
        http::Method::GET,
        &format!("/api/chat/{id}/stream"),
        None,
        &[],
    )
    .await
}

#[tokio::test]
async fn a_turn_on_one_replica_is_resumed_and_busy_on_the_other() {
    let upstream = Upstream::start().await;
    let (a, b) = two_replicas(&upstream).await;
    // The database outlives the test: a fresh session id.
    let id = wasmhub::ids::new_id("chat-pg");
    upstream.push(slow_text_step(
        "one two three four five six",
        Duration::from_millis(100),
    ));
    let mut first = post_chat(a.addr, &submit(&id, vec![user("u1", "hi")])).await;
    assert_eq!(first.status, 200);
    let mut seen = Vec::new();
    while let Some(c) = next_chunk(&mut first).await {
        let is_text = matches!(c, UiChunk::TextDelta { .. });
        seen.push(c);
        if is_text {
            break;
        }
    }
    assert!(matches!(seen.last(), Some(UiChunk::TextDelta { .. })), "{seen:?}");
    let busy = post_chat(b.addr, &submit(&id, vec![user("u2", "me too")])).await;
    assert_eq!(busy.status, 409, "one live turn per session across replicas");
    assert_eq!(busy.json().await["error"]["code"], "turn_in_progress");
    let listed = client::send(b.addr, http::Method::GET, "/api/sessions", None, &[])
        .await
        .json()
        .await;
    let mine = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .cloned();
    assert_eq!(mine.expect("the other replica lists the session")["active"], true);
    let joined = stream_status(b.addr, &id).await;
    assert_eq!(joined.status, 200);
    let late = chunks(joined).await;
    while let Some(c) = next_chunk(&mut first).await {
        seen.push(c);
    }
    assert_eq!(
        late, seen,
        "the other replica's late joiner sees exactly what the first client saw"
    );
    assert!(matches!(late.last(), Some(UiChunk::Finish { .. })));
    // Over: nothing to resume anywhere, and the next turn runs on the other replica.
    assert_eq!(stream_status(b.addr, &id).await.status, 204);
    assert_eq!(stream_status(a.addr, &id).await.status, 204);
    upstream.push(text_step("again"));
    let next = post_chat(b.addr, &submit(&id, vec![user("u2", "more")])).await;
    assert_eq!(next.status, 200);
    assert!(matches!(chunks(next).await.last(), Some(UiChunk::Finish { .. })));
    let s = session(a.addr, &id).await;
    assert_eq!(s["messages"].as_array().map(Vec::len), Some(4), "{s}");
    assert_eq!(s["active"], false);
    assert_eq!(s["version"], 4, "two saves per turn, no overwrite: {s}");
}
