//! A named agent on every chat surface, through the real router: listed by
//! `GET /v1/models` (both shapes), answering Chat Completions and Messages
//! requests that name it as `model` (streamed and not) and `POST
//! /v1/agents/{name}`, with the request's sampling over the profile's reaching
//! the provider, the tool activity run by the hub, and no session left behind.

use crate::support::chat::{MODEL, call_args, hub_alone, plugins, text_step, tool_step};
use crate::support::client;
use crate::support::upstream::Upstream;
use crate::support::wait;
use serde_json::{Value, json};
use std::time::Duration;
use wasmhub::config::{AgentProfileConfig, ModelChoice};

fn calculator() -> AgentProfileConfig {
    AgentProfileConfig {
        name: "calculator".into(),
        description: "Computes with calc.eval".into(),
        model: Some(ModelChoice::One(MODEL.into())),
        allow: Some(vec!["calc.*".into()]),
        temperature: Some(0.25),
        max_output_tokens: Some(300),
        system_prompt: Some("You compute.".into()),
        ..AgentProfileConfig::default()
    }
}

async fn hub(upstream: &Upstream) -> crate::support::hub::Hub {
    // A store of its own: the test checks that no session is left.
    hub_alone(upstream, plugins(&[]), |c| c.agents = vec![calculator()]).await
}

/// The model's two steps: a `calc.eval` call, then the answer.
fn script(upstream: &Upstream) {
    let args = call_args(json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]));
    upstream.push(tool_step(Some("Computing."), &[("c1", "hub_call", args)]));
    upstream.push(text_step("It is 42."));
}

async fn no_sessions_left(hub: &crate::support::hub::Hub) {
    let agent = &hub.app.agent;
    wait::until_seen("the one-off turns' sessions to be deleted", || async move {
        let left = agent.list_sessions(&wasmhub::hub::Visible::All).await.unwrap();
        if left.is_empty() { Ok(()) } else { Err(left.len()) }
    })
    .await;
}

/// The result the model was given for the hub_call of step 1.
fn tool_result_sent(upstream: &Upstream) -> Value {
    let second = upstream.requests()[1].json();
    let tool = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap_or_else(|| panic!("a tool message in {second}"));
    serde_json::from_str(tool["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn models_list_the_agents_first_in_both_shapes() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    let openai = client::send(hub.addr, http::Method::GET, "/v1/models", None, &[]).await;
    assert_eq!(openai.status, 200);
    let list = openai.json().await;
    assert_eq!(
        list["data"][0],
        json!({"id": "calculator", "object": "model", "created": 0, "owned_by": "wasmhub-agent", "description": "Computes with calc.eval"})
    );
    let anthropic = client::send(
        hub.addr,
        http::Method::GET,
        "/v1/models",
        None,
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    let list = anthropic.json().await;
    assert_eq!(
        (&list["data"][0]["id"], &list["first_id"]),
        (&json!("calculator"), &json!("calculator"))
    );
}

#[tokio::test]
async fn chat_completions_with_an_agents_name_run_the_loop() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    script(&upstream);
    let body = json!({"model": "calculator", "temperature": 0.5,
        "messages": [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "6*7?"}]});
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-wasmhub-agent"), Some("calculator"));
    let answer = resp.json().await;
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["model"], "calculator");
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "Computing.\n\nIt is 42."
    );
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert_eq!(answer["usage"]["prompt_tokens"], 200, "summed over the two steps");
    let first = upstream.requests()[0].json();
    assert_eq!(
        (&first["temperature"], &first["max_tokens"], &first["model"]),
        (&json!(0.5), &json!(300), &json!("m1")),
        "the request's temperature over the profile's"
    );
    assert!(
        first["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You compute.")
    );
    assert_eq!(first["messages"][1]["content"], "Be exact.");
    let sent = tool_result_sent(&upstream);
    assert_eq!(sent["results"][0]["result"]["decimal"], "42", "{sent}");
    no_sessions_left(&hub).await;
    // Accounting and audit name the agent.
    let calls = client::send(hub.addr, http::Method::GET, "/api/calls", None, &[])
        .await
        .json()
        .await;
    let call = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "calc.eval")
        .cloned();
    assert_eq!(
        call.map(|c| c["agent"].clone()),
        Some(json!("calculator")),
        "{calls}"
    );
    let page = client::send(hub.addr, http::Method::GET, "/api/accounting", None, &[])
        .await
        .json()
        .await;
    let records = page["records"].as_array().unwrap();
    let kinds: Vec<&str> = records
        .iter()
        .filter(|r| r["agent"] == "calculator")
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model_step", "tool_call", "model_step"], "{page}");
}

#[tokio::test]
async fn a_streamed_agent_answer_is_chat_completion_chunks_then_done() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    script(&upstream);
    let body = json!({"model": "calculator", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "6*7?"}]});
    let resp = client::post(hub.addr, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status, 200);
    let (events, _) = resp.events(Duration::from_secs(30)).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "calculator")
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Computing.\n\nIt is 42.");
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"][0]["delta"].get("tool_calls").is_none()),
        "the hub's tool calls are not the client's"
    );
    let finish: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str().map(|_| c))
        .collect();
    assert_eq!(finish.len(), 1);
    assert_eq!(finish[0]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks.last().unwrap()["usage"]["completion_tokens"], 20);
    no_sessions_left(&hub).await;
}

#[tokio::test]
async fn requests_an_agent_cannot_take_are_refused_naming_the_field() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    let too_hot =
        json!({"model": "calculator", "temperature": 3, "messages": [{"role": "user", "content": "x"}]});
    let resp = client::post(hub.addr, "/v1/chat/completions", &too_hot).await;
    assert_eq!(resp.status, 400);
    let error = resp.json().await;
    assert_eq!(error["error"]["code"], "sampling_out_of_range", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent.temperature_limit")
    );
    let tools = json!({"model": "calculator", "tools": [{"type": "function", "function": {"name": "f"}}],
        "messages": [{"role": "user", "content": "x"}]});
    let resp = client::post(hub.addr, "/v1/chat/completions", &tools).await;
    assert_eq!(resp.status, 400);
    assert!(
        resp.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("tools: the agent \"calculator\"")
    );
    let resp = client::post(hub.addr, "/v1/agents/nobody", &json!({"input": "x"})).await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.json().await["error"]["code"], "agent_not_found");
    let resp = client::post(
        hub.addr,
        "/v1/agents/calculator",
        &json!({"input": "x", "colour": 1}),
    )
    .await;
    assert_eq!(resp.status, 400);
    assert!(upstream.requests().is_empty(), "nothing reached the provider");
}

#[tokio::test]
async fn messages_with_an_agents_name_run_the_loop_with_the_requests_max_tokens() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    script(&upstream);
    let body =
        json!({"model": "calculator", "max_tokens": 64, "messages": [{"role": "user", "content": "6*7?"}]});
    let resp = client::send(
        hub.addr,
        http::Method::POST,
        "/v1/messages",
        Some(serde_json::to_vec(&body).unwrap().into()),
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(resp.status, 200);
    let message = resp.json().await;
    let kinds: Vec<&str> = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["text", "mcp_tool_use", "mcp_tool_result", "text"],
        "{message}"
    );
    assert_eq!(message["model"], "calculator");
    let first = upstream.requests()[0].json();
    assert_eq!(
        (&first["max_tokens"], &first["temperature"]),
        (&json!(64), &json!(0.25))
    );
    no_sessions_left(&hub).await;
}

#[tokio::test]
async fn the_rest_route_answers_the_final_text_or_streams_the_turn() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    script(&upstream);
    let resp = client::post(
        hub.addr,
        "/v1/agents/calculator",
        &json!({"input": "6*7?", "top_p": 0.5}),
    )
    .await;
    assert_eq!(resp.status, 200);
    let answer = resp.json().await;
    assert_eq!(
        (&answer["agent"], &answer["output"], &answer["finishReason"]),
        (
            &json!("calculator"),
            &json!("Computing.\n\nIt is 42."),
            &json!("stop")
        )
    );
    assert_eq!(answer["usage"]["outputTokens"], 20);
    assert_eq!(upstream.requests()[0].json()["top_p"], json!(0.5));
    upstream.push(text_step("Streamed."));
    let resp = client::post(
        hub.addr,
        "/v1/agents/calculator",
        &json!({"input": "hi", "stream": true}),
    )
    .await;
    let chunks = crate::support::chat::chunks(resp).await;
    let (_, meta) = crate::support::chat::finish(&chunks);
    assert_eq!(meta["agent"], "calculator");
    no_sessions_left(&hub).await;
}

#[tokio::test]
async fn an_agent_calls_only_what_its_allow_and_its_caller_both_allow() {
    let upstream = Upstream::start().await;
    let texter = AgentProfileConfig {
        name: "texter".into(),
        allow: Some(vec!["text.*".into()]),
        ..calculator()
    };
    let hub = hub_alone(&upstream, plugins(&[]), |c| c.agents = vec![texter]).await;
    script(&upstream);
    let resp = client::post(hub.addr, "/v1/agents/texter", &json!({"input": "6*7?"})).await;
    assert_eq!(resp.status, 200);
    let sent = tool_result_sent(&upstream);
    assert_eq!(sent["results"][0]["ok"], false, "{sent}");
    assert_eq!(sent["results"][0]["error"]["code"], "forbidden", "{sent}");
}
