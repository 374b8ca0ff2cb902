//! How the surfaces take a request. Large request bodies are parsed off the async
//! workers on every surface (`surfaces::parse`): a body of
//! `limits.validate_blocking_kb` or more goes to the low-priority blocking pool,
//! which `wasmhub_low_priority_parses_total` counts, and gets the same answer it
//! would get parsed in place; a small body is parsed in place. And the stages of a
//! request (`timing`) are counted on `/metrics`.

use crate::support::client::{self, ClientResp};
use crate::support::hub::{self, Hub};
use crate::support::upstream::{self, Reply, Upstream};
use http::Method;
use serde_json::{Value, json};
use wasmhub::config::Config;

/// A hub whose bodies of 1 KiB or more count as large, with one provider.
async fn hub_with_provider() -> (Upstream, Hub) {
    let up = Upstream::start().await;
    let answer = json!({"id": "c", "object": "chat.completion", "model": "gpt-test", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}
    ]});
    up.set_default(upstream::CHAT, Reply::json(200, answer));
    let mut config = Config {
        providers: vec![hub::provider("up", &up.base_url(), &["gpt-*"], "max_retries = 0")],
        ..Config::default()
    };
    config.limits.validation.blocking_kb = 1;
    (up, hub::start_with(config).await)
}

/// `wasmhub_low_priority_parses_total` now.
async fn parses(hub: &Hub) -> u64 {
    let resp = client::send(hub.addr, Method::GET, "/metrics", None, &[]).await;
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("wasmhub_low_priority_parses_total "))
        .unwrap_or_else(|| panic!("no parses counter in {text}"))
        .parse()
        .unwrap()
}

/// 2 KiB of text, to make a body large.
fn pad() -> String {
    "x".repeat(2048)
}

/// POSTs `body` to `path` and says how many parses it added to the counter.
async fn post_counted(hub: &Hub, path: &str, body: &Value, headers: &[(&str, &str)]) -> (ClientResp, u64) {
    let before = parses(hub).await;
    let bytes = bytes::Bytes::from(serde_json::to_vec(body).unwrap());
    let resp = client::send(hub.addr, Method::POST, path, Some(bytes), headers).await;
    (resp, parses(hub).await - before)
}

const MCP_HEADERS: [(&str, &str); 3] = [
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/list"),
];

#[tokio::test]
async fn large_bodies_are_parsed_off_the_workers_on_every_surface_with_the_same_answers() {
    let (_up, hub) = hub_with_provider().await;

    // MCP: a small tools/list is parsed in place, a large one off the workers,
    // and both list the four meta-tools.
    let list = |pad: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"pad": pad}}}})
    };
    let (resp, n) = post_counted(&hub, "/mcp", &list(""), &MCP_HEADERS).await;
    let small = resp.json().await;
    assert_eq!(n, 0, "a small body is parsed in place");
    let (resp, n) = post_counted(&hub, "/mcp", &list(&pad()), &MCP_HEADERS).await;
    let status = resp.status;
    let large = resp.json().await;
    assert_eq!(status, 200, "{large}");
    assert_eq!(n, 1, "a large MCP body");
    assert_eq!(large["result"]["tools"].as_array().unwrap().len(), 4, "{large}");
    assert_eq!(large, small);
    // A large body that is not JSON is a parse error, as in place.
    let before = parses(&hub).await;
    let broken = bytes::Bytes::from(format!("{{\"jsonrpc\": \"2.0\", \"id\": 1, \"x\": \"{}", pad()));
    let resp = client::send(hub.addr, Method::POST, "/mcp", Some(broken), &MCP_HEADERS).await;
    assert_eq!(resp.status, 400);
    let error = resp.json().await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(parses(&hub).await - before, 1);

    // The OpenAI proxy: the upstream gets the request and its answer comes back.
    let chat = json!({"model": "up/gpt-test", "messages": [{"role": "user", "content": pad()}]});
    let (resp, n) = post_counted(&hub, upstream::CHAT, &chat, &[]).await;
    assert_eq!(resp.status, 200);
    let answer = resp.json().await;
    assert_eq!(answer["choices"][0]["message"]["content"], "fine", "{answer}");
    assert_eq!(n, 1, "a large proxy body");

    // Anthropic Messages: the same checks as in place (here: max_tokens missing).
    let messages = json!({"model": "up/gpt-test", "messages": [{"role": "user", "content": pad()}]});
    let (resp, n) = post_counted(
        &hub,
        "/v1/messages",
        &messages,
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(resp.status, 400);
    let error = resp.json().await;
    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("max_tokens"),
        "{error}"
    );
    assert_eq!(n, 1, "a large Anthropic body");

    // The chat endpoint: a large request without messages is refused by name.
    let (resp, n) = post_counted(&hub, "/api/chat", &json!({"id": "big", "pad": pad()}), &[]).await;
    assert_eq!(resp.status, 400);
    let error = resp.json().await;
    assert_eq!(error["error"]["code"], "invalid_request", "{error}");
    assert_eq!(n, 1, "a large chat body");

    // REST meta-tools: a large hub_search answers like a small one.
    let (resp, n) = post_counted(&hub, "/api/hub/search", &json!({"q": pad()}), &[]).await;
    let status = resp.status;
    let found = resp.json().await;
    assert_eq!(status, 200, "{found}");
    let small = client::post(hub.addr, "/api/hub/search", &json!({"q": "x"}))
        .await
        .json()
        .await;
    assert_eq!(found, small, "no plugins: nothing found either way");
    assert_eq!(n, 1, "a large REST body");
}

/// `wasmhub_stage_{seconds,runs}_total` of every stage, by stage name.
async fn stage_totals(addr: std::net::SocketAddr) -> std::collections::HashMap<(String, String), f64> {
    let resp = client::send(addr, Method::GET, "/metrics", None, &[]).await;
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("wasmhub_stage_")?;
            let (kind, rest) = rest.split_once("_total{stage=\"")?;
            let (stage, value) = rest.split_once("\"} ")?;
            Some(((kind.to_string(), stage.to_string()), value.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn a_calls_stages_are_counted_on_metrics() {
    let dir = hub::plugins(&[], &["calc"]);
    let s = hub::serve(&dir, |_| {}).await;
    let call = json!({"calls": [{"tool": "calc.eval", "input": {"expression": "1 + 1"}}]});
    // The plugin loads in the background; the first answer waits for it.
    let out = client::post(s.addr, "/api/hub/call", &call).await.json().await;
    assert_eq!(out["results"][0]["ok"], true, "{out}");
    let before = stage_totals(s.addr).await;
    let out = client::post(s.addr, "/api/hub/call", &call).await.json().await;
    assert_eq!(out["results"][0]["ok"], true, "{out}");
    let after = stage_totals(s.addr).await;
    // Other tests in this process run calls too: at least this one is counted.
    let stages = [
        "request",
        "read_body",
        "parse_body",
        "invoke",
        "checks",
        "instantiate",
        "guest",
        "teardown",
        "output",
        "record",
        "encode",
    ];
    for stage in stages {
        let key = |kind: &str| (kind.to_string(), stage.to_string());
        let runs = after[&key("runs")] - before[&key("runs")];
        assert!(runs >= 1.0, "{stage} ran {runs} times");
        assert!(
            after[&key("seconds")] > before[&key("seconds")],
            "{stage} took no time"
        );
    }
    assert_eq!(after.len(), 2 * stages.len(), "{after:?}");
}
