//! Listings byte for byte stable across calls and restarts, so provider prompt
//! caches keep hitting: `hub_list`, `hub_search` (ties included), MCP `tools/list`
//! and the whole request the agent loop sends upstream (system prompt, plugin
//! instructions, the four tools), against the real binary, started twice.

use crate::support::binary;
use crate::support::chat::text_step;
use crate::support::client::{self, ClientResp};
use crate::support::hub::plugins;
use crate::support::runtime::Scratch;
use crate::support::upstream::{CHAT, Upstream};
use bytes::Bytes;
use http::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;

async fn post(addr: SocketAddr, path: &str, body: &Value, headers: &[(&str, &str)]) -> ClientResp {
    let body = Bytes::from(body.to_string());
    client::send(addr, Method::POST, path, Some(body), headers).await
}

/// One round of every listing, as the bytes a client (or the upstream) received.
async fn listings(addr: SocketAddr, upstream: &Upstream, round: &str) -> Vec<(String, Bytes)> {
    let mut out = Vec::new();
    for (path, body) in [
        ("/api/hub/list", json!({})),
        ("/api/hub/list", json!({"namespace": "text"})),
        ("/api/hub/search", json!({"q": "text"})),
        // No query: every operation ties at score 0.
        ("/api/hub/search", json!({"namespace": "text"})),
        ("/api/hub/search", json!({})),
    ] {
        let resp = post(addr, path, &body, &[]).await;
        assert_eq!(resp.status, 200, "{path} {body}");
        out.push((format!("{path} {body}"), resp.bytes().await));
    }
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let resp = post(addr, "/mcp", &list, &headers).await;
    assert_eq!(resp.status, 200);
    out.push(("tools/list".into(), resp.bytes().await));

    // A chat turn in a fresh session: the request the agent sends upstream.
    let before = upstream.requests().len();
    let chat = json!({"id": format!("chat-stable-{round}"), "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What can you do?"}]}]});
    let resp = post(addr, "/api/chat", &chat, &[]).await;
    assert_eq!(resp.status, 200);
    resp.events(crate::support::llm::WITHIN).await;
    let sent = upstream.requests();
    assert_eq!(sent.len(), before + 1);
    let agent = &sent[before];
    assert_eq!(agent.path, CHAT);
    assert_eq!(agent.json()["tools"].as_array().map(Vec::len), Some(4));
    out.push(("agent request".into(), agent.body.clone()));
    out
}

#[tokio::test]
async fn listings_and_the_agents_request_are_the_same_bytes_across_calls_and_restarts() {
    let upstream = Upstream::start().await;
    upstream.set_default(CHAT, text_step("I can slugify text and evaluate arithmetic."));
    let dir = plugins(&[], &["text", "calc"]);
    let data = Scratch::new("stable-data");
    let providers = format!(
        "providers=[{{name = \"up\", base_url = \"{}\", models = [\"*\"], max_retries = 0}}]",
        upstream.base_url()
    );
    let sets = [providers.as_str(), "agent.model=up/m1"];

    let served = binary::serve(&dir.0, &data.path("store"), &sets);
    let first = listings(served.addr, &upstream, "1").await;
    let second = listings(served.addr, &upstream, "2").await;
    drop(served);
    let restarted = binary::serve(&dir.0, &data.path("store"), &sets);
    let third = listings(restarted.addr, &upstream, "3").await;

    for ((name, a), ((_, b), (_, c))) in first.iter().zip(second.iter().zip(&third)) {
        assert_eq!(a, b, "{name}: two calls differ");
        assert_eq!(a, c, "{name}: a restart changed it");
    }
    assert_eq!(first.len(), 7);
    // The listings are sorted by name.
    let list: Value = serde_json::from_slice(&first[0].1).unwrap();
    let names: Vec<&str> = list["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["tool"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.len() >= 5, "{names:?}");
}
