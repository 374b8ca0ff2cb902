//! Per-surface concurrency limits (`[concurrency]`, `surfaces::limit`) on the real
//! router over loopback, in front of a scripted upstream: requests beyond a
//! surface's limit wait first in, first out; a client that hangs up while waiting
//! never reaches the upstream; a full line and a wait that runs out are 429 with
//! `Retry-After`, naming the limit.

use crate::support::client::{self, ClientResp};
use crate::support::hub::{self, Hub};
use crate::support::upstream::{self, Frame, Reply, Upstream};
use crate::support::wait::until_seen;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use wasmhub::config::Config;

/// A hub whose proxy surface serves one request at once, with `queue` waiting
/// places of `wait_ms`.
async fn proxy_hub(queue: usize, wait_ms: u64) -> (Upstream, Hub) {
    let up = Upstream::start().await;
    up.set_default(
        upstream::CHAT,
        Reply::json(
            200,
            json!({"id": "c", "object": "chat.completion", "choices": []}),
        ),
    );
    let mut config = Config {
        providers: vec![hub::provider(
            "up",
            &up.base_url(),
            &["gpt-*"],
            "max_retries = 0\nkeepalive_ms = 100",
        )],
        ..Config::default()
    };
    config.concurrency.proxy = 1;
    config.concurrency.queue = queue;
    config.concurrency.queue_wait_ms = wait_ms;
    let hub = hub::start_with(config).await;
    (up, hub)
}

fn body(tag: &str, stream: bool) -> Value {
    json!({"model": "up/gpt-test", "messages": [{"role": "user", "content": tag}], "stream": stream})
}

/// The tags of the requests the upstream got, in arrival order.
fn tags(up: &Upstream) -> Vec<String> {
    up.requests()
        .iter()
        .map(|r| r.json()["messages"][0]["content"].as_str().unwrap().to_string())
        .collect()
}

/// The value of the proxy surface's series `name` on `GET /metrics`.
async fn proxy_metric(hub: &Hub, name: &str) -> String {
    let resp = client::send(hub.addr, http::Method::GET, "/metrics", None, &[]).await;
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    let prefix = format!("{name}{{surface=\"proxy\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{name} in {text}"))
        .to_string()
}

async fn queued_becomes(hub: &Hub, n: usize) {
    until_seen(&format!("{n} requests waiting"), || async move {
        let seen = proxy_metric(hub, "wasmhub_surface_queued").await;
        if seen == n.to_string() { Ok(()) } else { Err(seen) }
    })
    .await
}

/// Holds the surface's one place: a stream the upstream never ends.
async fn hold(up: &Upstream, hub: &Hub) -> ClientResp {
    up.push(Reply::sse(vec![
        Frame::Data(upstream::text_chunk("held")),
        Frame::Hang,
    ]));
    let mut held = client::post(hub.addr, upstream::CHAT, &body("A", true)).await;
    assert_eq!(held.status, 200);
    let first = held.next_event().await.expect("the held stream starts");
    assert!(first.contains("held"), "{first}");
    held
}

#[tokio::test]
async fn waiting_requests_go_in_order_and_one_that_hung_up_never_starts() {
    let (up, hub) = proxy_hub(8, 60_000).await;
    let held = hold(&up, &hub).await;
    let addr = hub.addr;
    let send = |tag: &'static str| {
        tokio::spawn(async move { client::post(addr, upstream::CHAT, &body(tag, false)).await.status })
    };
    let b = send("B");
    queued_becomes(&hub, 1).await;
    // A client that sends its whole request, then hangs up while it waits.
    let gone = serde_json::to_vec(&body("X", false)).unwrap();
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        upstream::CHAT,
        gone.len()
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    sock.write_all(&gone).await.unwrap();
    queued_becomes(&hub, 2).await;
    drop(sock);
    queued_becomes(&hub, 1).await;
    assert_eq!(proxy_metric(&hub, "wasmhub_surface_queue_left_total").await, "1");
    let c = send("C");
    queued_becomes(&hub, 2).await;
    let d = send("D");
    queued_becomes(&hub, 3).await;
    assert_eq!(tags(&up), ["A"], "nobody passed the held place");
    drop(held);
    for waiting in [b, c, d] {
        assert_eq!(waiting.await.unwrap(), 200);
    }
    assert_eq!(
        tags(&up),
        ["A", "B", "C", "D"],
        "first in, first out; X never reached the upstream"
    );
    assert_eq!(
        proxy_metric(&hub, "wasmhub_surface_queue_wait_seconds_count").await,
        "3"
    );
    assert_eq!(proxy_metric(&hub, "wasmhub_surface_in_flight").await, "0");
}

#[tokio::test]
async fn a_full_line_and_a_long_wait_are_429_with_retry_after_naming_the_limit() {
    let (up, hub) = proxy_hub(1, 60_000).await;
    let held = hold(&up, &hub).await;
    let addr = hub.addr;
    let waiting =
        tokio::spawn(async move { client::post(addr, upstream::CHAT, &body("B", false)).await.status });
    queued_becomes(&hub, 1).await;
    let full = client::post(addr, upstream::CHAT, &body("C", false)).await;
    assert_eq!(full.status, 429);
    assert_eq!(full.header("retry-after"), Some("1"));
    let error = full.json().await["error"].clone();
    assert_eq!(
        (&error["code"], &error["limit"], &error["surface"]),
        (&json!("queue_full"), &json!("concurrency.queue"), &json!("proxy"))
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("concurrency.proxy = 1"),
        "{error}"
    );
    drop(held);
    assert_eq!(waiting.await.unwrap(), 200);
    assert_eq!(
        tags(&up),
        ["A", "B"],
        "the refused request never reached the upstream"
    );

    let (up, hub) = proxy_hub(4, 200).await;
    let _held = hold(&up, &hub).await;
    let timed_out = client::post(hub.addr, upstream::CHAT, &body("late", false)).await;
    assert_eq!(timed_out.status, 429);
    assert_eq!(timed_out.header("retry-after"), Some("1"));
    let error = timed_out.json().await["error"].clone();
    assert_eq!(
        (&error["code"], &error["limit"]),
        (&json!("queue_timeout"), &json!("concurrency.queue_wait_ms"))
    );
    assert!(
        error["message"].as_str().unwrap().contains("waited 200 ms"),
        "{error}"
    );
    assert_eq!(tags(&up), ["A"]);
    let resp = client::send(hub.addr, http::Method::GET, "/metrics", None, &[]).await;
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    assert!(
        text.contains("wasmhub_surface_rejected_total{surface=\"proxy\",reason=\"queue_timeout\"} 1"),
        "{text}"
    );
}

/// A 2026-07-28 `tools/call` of `hub_call` with `arguments`, as JSON-RPC request `id`.
async fn mcp_call(addr: std::net::SocketAddr, id: u64, arguments: Value) -> ClientResp {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "hub_call", "arguments": arguments, "_meta": meta}});
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "hub_call"),
    ];
    client::send(
        addr,
        http::Method::POST,
        "/mcp",
        Some(body.to_string().into()),
        &headers,
    )
    .await
}

#[tokio::test]
async fn a_busy_mcp_surface_answers_a_json_rpc_error_with_429_and_lets_notifications_through() {
    let gate = crate::support::gate::Gate::start().await;
    let dir = hub::plugins(&[("flood", "f")], &[]);
    std::fs::write(dir.path("f.toml"), gate.grant()).unwrap();
    let s = hub::serve(&dir, |c| {
        c.concurrency.mcp = 1;
        c.concurrency.queue = 0;
    })
    .await;
    s.hub.app.hub.loaded().await;
    let addr = s.addr;
    let burst = json!({"calls": [{"tool": "f.burst", "input": {"authority": gate.authority(), "count": 1}}]});
    let running = tokio::spawn(async move { mcp_call(addr, 1, burst).await.json().await });
    gate.holds(1).await;
    let busy = mcp_call(addr, 2, json!({"calls": []})).await;
    assert_eq!(busy.status, 429);
    assert_eq!(busy.header("retry-after"), Some("1"));
    let answer = busy.json().await;
    assert_eq!(
        (&answer["id"], &answer["error"]["code"]),
        (&json!(2), &json!(-32029)),
        "{answer}"
    );
    assert_eq!(answer["error"]["data"]["limit"], "concurrency.queue");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("concurrency.mcp = 1"),
        "{answer}"
    );
    // A notification is never held back by a busy surface.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let resp = client::send(
        addr,
        http::Method::POST,
        "/mcp",
        Some(note.to_string().into()),
        &headers,
    )
    .await;
    assert_eq!(resp.status, 202);
    gate.open();
    let done = running.await.unwrap();
    assert_eq!(
        done["result"]["structuredContent"]["results"][0]["ok"], true,
        "{done}"
    );
}

#[tokio::test]
async fn an_agent_turn_holds_its_chat_place_until_it_ends() {
    use crate::support::chat::{chunks, hub_with, next_chunk, plugins, post_chat, submit, text_step, user};
    let up = Upstream::start().await;
    let hub = hub_with(&up, plugins(&[]), |c| {
        c.concurrency.chat = 1;
        c.concurrency.queue = 0;
        // A turn ends as soon as its client leaves (not after the detached time).
        c.agent.detached_turn_secs = 0;
    })
    .await;
    up.push(Reply::sse(vec![
        Frame::Data(json!({"choices": [{"index": 0, "delta": {"content": "thinking"}}]}).to_string()),
        Frame::Hang,
    ]));
    let mut first = post_chat(hub.addr, &submit("limit-a", vec![user("u1", "hi")])).await;
    assert_eq!(first.status, 200);
    // The turn is running once its text arrives.
    while let Some(chunk) = next_chunk(&mut first).await {
        if matches!(chunk, wasmhub::llm::UiChunk::TextDelta { .. }) {
            break;
        }
    }
    let busy = post_chat(hub.addr, &submit("limit-b", vec![user("u1", "hi")])).await;
    assert_eq!(busy.status, 429);
    let error = busy.json().await["error"].clone();
    assert_eq!(
        (&error["code"], &error["surface"]),
        (&json!("queue_full"), &json!("chat"))
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("concurrency.chat = 1"),
        "{error}"
    );
    // The client leaves: the turn is cancelled, ends, and gives its place back.
    drop(first);
    up.push(text_step("hello"));
    let chat_in_flight = || async {
        let resp = client::send(hub.addr, http::Method::GET, "/metrics", None, &[]).await;
        let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
        let seen = text
            .lines()
            .find_map(|l| l.strip_prefix("wasmhub_surface_in_flight{surface=\"chat\"} "))
            .unwrap()
            .to_string();
        if seen == "0" { Ok(()) } else { Err(seen) }
    };
    until_seen("the cancelled turn to give its place back", chat_in_flight).await;
    let next = chunks(post_chat(hub.addr, &submit("limit-b", vec![user("u1", "hi")])).await).await;
    assert!(
        next.iter()
            .any(|c| matches!(c, wasmhub::llm::UiChunk::Finish { .. })),
        "{next:?}"
    );
}
