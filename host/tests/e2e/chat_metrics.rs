//! The chat metrics of the surfaces whose answers come from the agent loop, read
//! from `/metrics` through the real router: the upstream events a step skipped
//! (`wasmhub_chat_unknown_upstream_events_total`) counted per surface that asked for
//! the turn, and the non-streamed agent answers (`POST /v1/agents/{name}`, the JSON
//! answers of Chat Completions and Messages) counted as requests and errors with
//! their duration but no time to first byte. Each test has a provider name of its
//! own: the metrics are the process's.

use crate::support::chat::{hub_alone, plugins, text_step};
use crate::support::client;
use crate::support::hub::provider;
use crate::support::upstream::{Frame, Reply, ReplyBody, Upstream};
use serde_json::json;
use std::net::SocketAddr;
use wasmhub::config::{AgentProfileConfig, ModelChoice};

/// A hub whose only provider is `name` and whose agent `helper` (and default
/// model) is `name/m1`.
async fn hub(upstream: &Upstream, name: &str) -> crate::support::hub::Hub {
    let model = format!("{name}/m1");
    hub_alone(upstream, plugins(&[]), |c| {
        c.providers = vec![provider(name, &upstream.base_url(), &["m*"], "max_retries = 0")];
        c.agent.model = Some(model.clone());
        c.agents = vec![AgentProfileConfig {
            name: "helper".into(),
            model: Some(ModelChoice::One(model)),
            ..AgentProfileConfig::default()
        }];
    })
    .await
}

/// `text_step(text)` after an event that is not a JSON chunk (skipped).
fn garbled_step(text: &str) -> Reply {
    let mut reply = text_step(text);
    let ReplyBody::Sse(frames) = &mut reply.body else {
        unreachable!("text_step streams")
    };
    frames.insert(0, Frame::Data("{not json".into()));
    reply
}

/// The value of the sample `name{labels}` on `/metrics` (0 when absent).
async fn metric(addr: SocketAddr, sample: &str) -> f64 {
    client::metric(addr, sample).await.unwrap_or(0.0)
}

fn unknown(surface: &str, provider: &str) -> String {
    format!("wasmhub_chat_unknown_upstream_events_total{{surface=\"{surface}\",provider=\"{provider}\"}}")
}

#[tokio::test]
async fn unknown_upstream_events_of_agent_turns_count_per_surface() {
    const P: &str = "unknown_events_e2e";
    let upstream = Upstream::start().await;
    let hub = hub(&upstream, P).await;
    let turns = [
        (
            "chat",
            "/api/chat",
            json!({"id": "metrics-chat", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
        ),
        (
            "agents",
            "/v1/agents/helper",
            json!({"input": "hi", "stream": true}),
        ),
        (
            "openai",
            "/v1/chat/completions",
            json!({"model": "helper", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "anthropic",
            "/v1/messages",
            json!({"model": "helper", "max_tokens": 50, "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        ),
    ];
    for (surface, path, body) in turns {
        upstream.push(garbled_step("Hello there."));
        let resp = client::post(hub.addr, path, &body).await;
        assert_eq!(resp.status, 200, "{surface}");
        let text = String::from_utf8_lossy(&resp.bytes().await).into_owned();
        assert!(text.contains("there."), "{surface}: {text}");
        // Counted by the agent loop when the step ended, before the answer's end.
        assert_eq!(metric(hub.addr, &unknown(surface, P)).await, 1.0, "{surface}");
    }
}

#[tokio::test]
async fn non_streamed_agent_answers_count_without_a_first_byte() {
    const P: &str = "answers_e2e";
    let upstream = Upstream::start().await;
    let hub = hub(&upstream, P).await;
    let labels = |surface: &str| format!("surface=\"{surface}\",provider=\"{P}\"");
    let requests = |s: &str| format!("wasmhub_chat_requests_total{{{}}}", labels(s));
    let errors = |s: &str| format!("wasmhub_chat_errors_total{{{}}}", labels(s));
    let duration = |s: &str| format!("wasmhub_chat_turn_duration_seconds_count{{{}}}", labels(s));
    let first_byte = |s: &str| format!("wasmhub_chat_time_to_first_byte_seconds_count{{{}}}", labels(s));

    upstream.push(garbled_step("Done."));
    let resp = client::post(hub.addr, "/v1/agents/helper", &json!({"input": "hi"})).await;
    assert_eq!(resp.status, 200);
    assert_eq!(metric(hub.addr, &requests("agents")).await, 1.0);
    assert_eq!(metric(hub.addr, &duration("agents")).await, 1.0);
    assert_eq!(metric(hub.addr, &first_byte("agents")).await, 0.0);
    assert_eq!(metric(hub.addr, &errors("agents")).await, 0.0);
    assert_eq!(metric(hub.addr, &unknown("agents", P)).await, 1.0);

    // The upstream fails: an error, named by the provider the agent asks first.
    upstream.push(Reply::json(500, json!({"error": {"message": "down"}})));
    let resp = client::post(hub.addr, "/v1/agents/helper", &json!({"input": "hi"})).await;
    assert_eq!(resp.status, 502);
    assert_eq!(metric(hub.addr, &requests("agents")).await, 2.0);
    assert_eq!(metric(hub.addr, &errors("agents")).await, 1.0);

    // The JSON answers of Chat Completions and Messages.
    upstream.push(text_step("{\"sum\": 5}"));
    let body = json!({"model": "helper", "response_format": {"type": "json_object"},
        "messages": [{"role": "user", "content": "sum"}]});
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status, 200);
    assert_eq!(metric(hub.addr, &requests("openai")).await, 1.0);
    assert_eq!(metric(hub.addr, &first_byte("openai")).await, 0.0);
    upstream.push(text_step("{\"sum\": 5}"));
    let body = json!({"model": "helper", "max_tokens": 50,
        "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
        "messages": [{"role": "user", "content": "sum"}]});
    let resp = client::post(hub.addr, "/v1/messages", &body).await;
    assert_eq!(resp.status, 200);
    assert_eq!(metric(hub.addr, &requests("anthropic")).await, 1.0);
    assert_eq!(metric(hub.addr, &duration("anthropic")).await, 1.0);
}
