//! The Anthropic Messages surface (`POST /v1/messages`) where the SDK suite in
//! `tests/node` cannot look: a client that leaves mid-answer cancels the upstream
//! request (and, in hub-tools mode, the running tool call, and the turn's session
//! goes), and a quiet upstream gets Anthropic `ping` events.

use crate::support::chat::{MODEL, ended_call, hub_alone, hub_with, plugins, slow_call_step};
use crate::support::client::{self, ClientResp};
use crate::support::upstream::{Frame, Reply, Upstream};
use serde_json::{Value, json};
use std::time::Duration;

async fn post_messages(addr: std::net::SocketAddr, body: &Value, headers: &[(&str, &str)]) -> ClientResp {
    let bytes = serde_json::to_vec(body).unwrap().into();
    client::send(addr, http::Method::POST, "/v1/messages", Some(bytes), headers).await
}

fn ask(text: &str) -> Value {
    json!({"model": MODEL, "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": text}]})
}

/// Reads events until one whose `type` is `kind` and that `also` accepts.
async fn read_until(resp: &mut ClientResp, kind: &str, also: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    while let Some(data) = resp.next_event().await {
        let event: Value = serde_json::from_str(&data).unwrap();
        let found = event["type"] == kind && also(&event);
        seen.push(event);
        if found {
            return seen;
        }
    }
    panic!("the stream ended before a {kind} event: {seen:?}");
}

fn text(t: &str) -> Frame {
    Frame::Data(json!({"choices": [{"index": 0, "delta": {"content": t}}]}).to_string())
}

#[tokio::test]
async fn a_client_that_leaves_cancels_the_upstream_request() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    upstream.push(Reply::sse(vec![text("partial "), text("answer"), Frame::Hang]));
    let mut resp = post_messages(hub.addr, &ask("hi"), &[]).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let seen = read_until(&mut resp, "content_block_delta", |e| {
        e["delta"]["text"] == "answer"
    })
    .await;
    assert_eq!(seen[0]["type"], "message_start");
    drop(resp);
    assert!(
        upstream.wait_cancelled(1, Duration::from_secs(30)).await,
        "the upstream request was cancelled"
    );
}

#[tokio::test]
async fn a_quiet_upstream_gets_ping_events() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| {
        c.providers[0].keepalive_ms = 20;
    })
    .await;
    upstream.push(Reply::sse(vec![Frame::Hang]));
    let mut resp = post_messages(hub.addr, &ask("hi"), &[]).await;
    // message_start, the first ping, then pings while the upstream says nothing.
    let seen = read_until(&mut resp, "ping", |_| true).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    let more = read_until(&mut resp, "ping", |_| true).await;
    assert_eq!(more, [json!({"type": "ping"})]);
}

#[tokio::test]
async fn a_hub_turn_whose_client_leaves_stops_its_tool_call_and_leaves_no_session() {
    let upstream = Upstream::start().await;
    // A store of its own: it counts every Anthropic session, and other tests make some.
    let hub = hub_alone(&upstream, plugins(&["adversary"]), |_| {}).await;
    upstream.push(slow_call_step());
    let mut resp = post_messages(hub.addr, &ask("wait"), &[("x-wasmhub-tools", "hub")]).await;
    assert_eq!(resp.status, 200);
    let seen = read_until(&mut resp, "content_block_start", |_| true).await;
    let block = &seen.last().unwrap()["content_block"];
    assert_eq!(block["type"], "mcp_tool_use");
    assert_eq!(block["server_name"], "wasmhub");
    assert_eq!(block["input"]["calls"][0]["tool"], "adversary.slow");
    crate::support::wait::in_flight(&hub.app.hub, 1).await;
    let live = anthropic_sessions(&hub.app.agent).await;
    assert_eq!(live.len(), 1, "the turn runs in a session of its own: {live:?}");
    drop(resp);
    let record = ended_call(&hub, "adversary.slow").await;
    assert_eq!(record.outcome.as_str(), "cancelled", "{record:?}");
    let agent = &hub.app.agent;
    crate::support::wait::until_seen("the turn's session to be deleted", || async move {
        let left = anthropic_sessions(agent).await;
        if left.is_empty() { Ok(()) } else { Err(left) }
    })
    .await;
}

/// The stored sessions of the Anthropic surface's hub-tools turns.
async fn anthropic_sessions(agent: &wasmhub::agent::Agent) -> Vec<String> {
    agent
        .list_sessions(&wasmhub::hub::Visible::All)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .filter(|id| id.starts_with("anthropic_"))
        .collect()
}

#[tokio::test]
async fn requests_the_sdk_would_not_send_get_anthropic_errors() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.server.max_body_kb = 1).await;
    let expect = |resp: Value, kind: &str, message: &str| {
        assert_eq!(resp["type"], "error", "{resp}");
        assert_eq!(resp["error"]["type"], kind, "{resp}");
        let got = resp["error"]["message"].as_str().unwrap();
        assert!(got.contains(message), "{got:?} should say {message:?}");
    };
    let big =
        json!({"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": "x".repeat(2048)}]});
    let resp = post_messages(hub.addr, &big, &[]).await;
    assert_eq!(resp.status, 413);
    expect(resp.json().await, "request_too_large", "larger than 1024 bytes");
    let resp = post_messages(hub.addr, &ask("hi"), &[("x-wasmhub-tools", "all")]).await;
    assert_eq!(resp.status, 400);
    expect(
        resp.json().await,
        "invalid_request_error",
        "x-wasmhub-tools header must be \"hub\"",
    );
    let doc = json!({"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]});
    let resp = post_messages(hub.addr, &doc, &[]).await;
    assert_eq!(resp.status, 400);
    expect(
        resp.json().await,
        "invalid_request_error",
        "messages.0.content.0: a \"document\" block",
    );
    let resp = post_messages(
        hub.addr,
        &json!({"model": "other/x", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}),
        &[],
    )
    .await;
    assert_eq!(resp.status, 404);
    expect(resp.json().await, "not_found_error", "other/x");
    assert!(upstream.requests().is_empty(), "nothing reached the provider");
}

#[tokio::test]
async fn a_busy_surface_is_a_rate_limit_error_and_each_call_is_accounted() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| {
        c.concurrency.anthropic = 1;
        c.concurrency.queue = 0;
    })
    .await;
    // One stream holds the surface's only place.
    upstream.push(Reply::sse(vec![text("held"), Frame::Hang]));
    let mut held = post_messages(hub.addr, &ask("first"), &[]).await;
    read_until(&mut held, "content_block_delta", |e| e["delta"]["text"] == "held").await;
    let busy = post_messages(hub.addr, &ask("second"), &[]).await;
    assert_eq!(
        (busy.status.as_u16(), busy.header("retry-after")),
        (429, Some("1"))
    );
    let refusal = busy.json().await;
    assert_eq!(refusal["error"]["type"], "rate_limit_error", "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(message.contains("concurrency.anthropic = 1"), "{message}");
    drop(held);
    assert!(upstream.wait_cancelled(1, Duration::from_secs(30)).await);

    // The place is free again; the answered call is a model-step record with the
    // provider's usage.
    upstream.push(Reply::sse(vec![
        text("hello"),
        Frame::Data(crate::support::upstream::finish_chunk("stop")),
        Frame::Data(
            json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}})
                .to_string(),
        ),
        Frame::Data("[DONE]".into()),
    ]));
    let mut collected = ask("third");
    collected["stream"] = json!(false);
    let answer = crate::support::wait::until_seen("the surface's place back", || async {
        let resp = post_messages(hub.addr, &collected, &[]).await;
        match resp.status.as_u16() {
            200 => Ok(resp.json().await),
            other => Err(other),
        }
    })
    .await;
    assert_eq!(answer["content"][0]["text"], "hello", "{answer}");
    let records = crate::support::wait::until_seen("the model step record", || async {
        let resp = client::send(hub.addr, http::Method::GET, "/api/accounting", None, &[]).await;
        let all: Value = resp.json().await;
        let steps: Vec<Value> = all["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["kind"] == "model_step" && r["input_tokens"] == 11)
            .cloned()
            .collect();
        if steps.is_empty() { Err(all) } else { Ok(steps) }
    })
    .await;
    assert_eq!(
        (
            &records[0]["provider"],
            &records[0]["output_tokens"],
            records[0].get("session")
        ),
        (&json!("scripted"), &json!(2), None),
        "{records:?}"
    );
}

/// A hub-tools turn whose model calls the destructive `examples.wipe`.
async fn wipe_through_messages(
    hub: &crate::support::hub::Hub,
    upstream: &Upstream,
) -> tokio::task::JoinHandle<Value> {
    let calls = json!([{ "tool": "examples.wipe", "input": {"scope": "cache"} }]);
    upstream.push(crate::support::chat::tool_step(
        None,
        &[("call_w", "hub_call", crate::support::chat::call_args(calls))],
    ));
    upstream.push(crate::support::chat::text_step("Done."));
    let mut body = ask("wipe the cache");
    body["stream"] = json!(false);
    let addr = hub.addr;
    tokio::spawn(async move {
        let resp = post_messages(addr, &body, &[("x-wasmhub-tools", "hub")]).await;
        assert_eq!(resp.status, 200);
        resp.json().await
    })
}

/// The hub_call result the model was given, as the Messages answer shows it.
fn tool_result(message: &Value) -> String {
    let block = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "mcp_tool_result")
        .unwrap_or_else(|| panic!("a tool result block: {message}"));
    block["content"].to_string()
}

#[tokio::test]
async fn hub_tools_mode_asks_an_operator_like_rest_does() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&["examples"]), |c| c.approvals.wait_secs = 60).await;
    let answer = wipe_through_messages(&hub, &upstream).await;
    // The call waits in the operator's queue (no tool-approval round trip: the
    // Messages API cannot ask its user).
    let addr = hub.addr;
    let pending = crate::support::wait::until("the wipe to wait for an operator", || async move {
        let list = client::send(addr, http::Method::GET, "/api/approvals", None, &[])
            .await
            .json()
            .await;
        list["approvals"]
            .as_array()
            .filter(|a| a.len() == 1)
            .map(|a| a[0].clone())
    })
    .await;
    assert_eq!(pending["tool"], "examples.wipe");
    let decide = format!("/api/approvals/{}", pending["id"].as_str().unwrap());
    let yes = serde_json::to_vec(&json!({"approved": true})).unwrap().into();
    assert_eq!(
        client::send(hub.addr, http::Method::POST, &decide, Some(yes), &[])
            .await
            .status,
        200
    );
    let message = answer.await.unwrap();
    assert!(tool_result(&message).contains("wiped"), "{message}");
    assert_eq!(ended_call(&hub, "examples.wipe").await.outcome.as_str(), "ok");

    // Nobody to ask (wait_secs = 0): the call fails with approval_required, and the
    // model is told so.
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&["examples"]), |c| c.approvals.wait_secs = 0).await;
    let message = wipe_through_messages(&hub, &upstream).await.await.unwrap();
    assert!(tool_result(&message).contains("approval_required"), "{message}");
}
