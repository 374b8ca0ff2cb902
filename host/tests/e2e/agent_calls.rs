//! Agents as operations (`agents.NAME`, `hub::agent_calls`): listed, searched and
//! described by the meta-tools, called through `hub_call` as sub-agents whose
//! final answer alone comes back (text, or JSON checked against a schema with one
//! correction round, then `invalid_output`), their own calls children of the
//! `agents.NAME` call in the audit log, and cancelled with their parent.

use crate::support::chat::{
    MODEL, call_args, chunks, ended_call, hub_alone, plugins, post_chat, slow_call_step, submit, text_step,
    tool_step, user,
};
use crate::support::client;
use crate::support::upstream::Upstream;
use crate::support::wait;
use serde_json::{Value, json};
use wasmhub::config::{AgentProfileConfig, ModelChoice};

fn agent(name: &str, description: &str) -> AgentProfileConfig {
    AgentProfileConfig {
        name: name.into(),
        description: description.into(),
        model: Some(ModelChoice::One(MODEL.into())),
        ..AgentProfileConfig::default()
    }
}

async fn hub_call(addr: std::net::SocketAddr, calls: Value) -> Value {
    let resp = client::post(addr, "/api/hub/call", &json!({ "calls": calls })).await;
    assert_eq!(resp.status, 200);
    resp.json().await
}

async fn calls(addr: std::net::SocketAddr) -> Vec<Value> {
    let resp = client::send(addr, http::Method::GET, "/api/calls", None, &[]).await;
    resp.json().await["calls"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_meta_tools_list_search_and_describe_the_agents() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![agent("calculator", "Summarises long documents in plain words")];
    })
    .await;
    let list = client::post(hub.addr, "/api/hub/list", &json!({"namespace": "agents"}))
        .await
        .json()
        .await;
    assert_eq!(
        list["operations"],
        json!([{"tool": "agents.calculator", "description": "Summarises long documents in plain words",
            "openWorld": true}])
    );
    let search = client::post(hub.addr, "/api/hub/search", &json!({"q": "summarise a document"}))
        .await
        .json()
        .await;
    assert_eq!(search["results"][0]["tool"], "agents.calculator", "{search}");
    let schema = client::post(hub.addr, "/api/hub/schema", &json!({"tool": "agents.calculator"}))
        .await
        .json()
        .await;
    assert_eq!(schema["inputSchema"]["required"], json!(["task"]), "{schema}");
    let bad = hub_call(
        hub.addr,
        json!([{"tool": "agents.calculator", "input": {"job": "x"}}]),
    )
    .await;
    assert_eq!(bad["results"][0]["error"]["code"], "invalid_input", "{bad}");
    assert!(upstream.requests().is_empty());
}

#[tokio::test]
async fn hub_call_runs_a_sub_agent_whose_calls_are_children_of_its_call() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![agent("calculator", "Computes")]
    })
    .await;
    let args = call_args(json!([{"tool": "calc.eval", "input": {"expression": "6*7"}}]));
    upstream.push(tool_step(None, &[("c1", "hub_call", args)]));
    upstream.push(text_step("It is 42."));
    let out = hub_call(
        hub.addr,
        json!([{"tool": "agents.calculator", "input": {"task": "What is 6*7?"}}]),
    )
    .await;
    assert_eq!(out["results"][0]["ok"], true, "{out}");
    assert_eq!(
        out["results"][0]["result"],
        json!({"output": "It is 42.", "corrections": 0})
    );
    // The sub-agent's context is its own: its task alone, after its prompt.
    let first = upstream.requests()[0].json();
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(
        (messages.len(), &messages[1]["content"]),
        (2, &json!("What is 6*7?"))
    );
    let records = calls(hub.addr).await;
    let parent = records.iter().find(|c| c["tool"] == "agents.calculator").unwrap();
    let child = records.iter().find(|c| c["tool"] == "calc.eval").unwrap();
    assert_eq!(child["parent"], parent["id"], "{records:?}");
    assert_eq!(child["agent"], "calculator");
    assert_eq!(parent["outcome"], "ok");
    let agent = &hub.app.agent;
    wait::until_seen("the sub-agent's session to be deleted", || async move {
        let left = agent.list_sessions(&wasmhub::hub::Visible::All).await.unwrap();
        if left.is_empty() { Ok(()) } else { Err(left.len()) }
    })
    .await;
}

#[tokio::test]
async fn a_json_answer_is_validated_corrected_once_or_invalid_output() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![agent("adder", "Adds")]
    })
    .await;
    let schema = json!({"type": "object", "required": ["sum"], "properties": {"sum": {"type": "integer"}}});
    let input = json!({"task": "Add 2 and 3.", "format": "json", "schema": schema});
    upstream.push(text_step("five"));
    upstream.push(text_step("{\"sum\": 5}"));
    let out = hub_call(hub.addr, json!([{"tool": "agents.adder", "input": input}])).await;
    assert_eq!(
        out["results"][0]["result"],
        json!({"output": {"sum": 5}, "corrections": 1}),
        "{out}"
    );
    upstream.push(text_step("{\"sum\": \"5\"}"));
    upstream.push(text_step("{\"sum\": 5.5}"));
    let out = hub_call(hub.addr, json!([{"tool": "agents.adder", "input": input}])).await;
    let error = &out["results"][0]["error"];
    assert_eq!(error["code"], "invalid_output", "{out}");
    assert_eq!(error["violations"][0]["path"], "/sum", "{out}");
}

#[tokio::test]
async fn stopping_the_parent_turn_cancels_the_sub_agent_and_its_calls() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&["adversary"]), |c| {
        c.agents = vec![agent("waiter", "Waits")];
    })
    .await;
    // The chat turn calls the sub-agent, whose turn calls adversary.slow (30 s).
    let args = call_args(json!([{"tool": "agents.waiter", "input": {"task": "wait"}}]));
    upstream.push(tool_step(None, &[("p1", "hub_call", args)]));
    upstream.push(slow_call_step());
    let id = format!("parent-{}", wasmhub::ids::new_id("t"));
    let resp = post_chat(hub.addr, &submit(&id, vec![user("u1", "delegate")])).await;
    assert_eq!(resp.status, 200);
    wait::in_flight(&hub.app.hub, 2).await;
    let stop = client::send(
        hub.addr,
        http::Method::POST,
        &format!("/api/chat/{id}/stop"),
        None,
        &[],
    )
    .await;
    assert_eq!(stop.status, 204);
    let slow = ended_call(&hub, "adversary.slow").await;
    assert_eq!(slow.outcome.as_str(), "cancelled", "{slow:?}");
    let delegated = ended_call(&hub, "agents.waiter").await;
    assert_eq!(delegated.outcome.as_str(), "cancelled", "{delegated:?}");
    assert_eq!(slow.parent.as_deref(), Some(delegated.id.as_str()));
    drop(chunks(resp).await);
}

#[tokio::test]
async fn an_agent_calling_itself_is_a_call_cycle() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![agent("looper", "Loops")]
    })
    .await;
    let args = call_args(json!([{"tool": "agents.looper", "input": {"task": "again"}}]));
    upstream.push(tool_step(None, &[("l1", "hub_call", args)]));
    upstream.push(text_step("I cannot call myself."));
    let out = hub_call(
        hub.addr,
        json!([{"tool": "agents.looper", "input": {"task": "loop"}}]),
    )
    .await;
    assert_eq!(
        out["results"][0]["result"]["output"], "I cannot call myself.",
        "{out}"
    );
    let second = upstream.requests()[1].json();
    let tool = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let result: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["results"][0]["error"]["code"], "call_limit", "{result}");
    assert!(
        result["results"][0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("call cycle: agents.looper -> agents.looper"),
        "{result}"
    );
    assert_eq!(
        upstream.requests().len(),
        2,
        "the inner call never reached a model"
    );
}

#[tokio::test]
async fn a_sub_agents_sampling_is_overridden_by_its_call_within_the_limits() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agent.temperature_limit = 1.0;
        c.agent.max_output_tokens_limit = 500;
        c.agents = vec![AgentProfileConfig {
            temperature: Some(0.9),
            top_p: Some(0.8),
            max_output_tokens: Some(400),
            ..agent("writer", "Writes")
        }];
    })
    .await;
    upstream.push(text_step("Done."));
    let input = json!({"task": "write", "temperature": 0.3, "top_p": 0.5, "max_output_tokens": 77});
    let out = hub_call(hub.addr, json!([{"tool": "agents.writer", "input": input}])).await;
    assert_eq!(out["results"][0]["result"]["output"], "Done.", "{out}");
    let sent = upstream.requests()[0].json();
    assert_eq!(
        (&sent["temperature"], &sent["top_p"], &sent["max_tokens"]),
        (&json!(0.3), &json!(0.5), &json!(77)),
        "{sent}"
    );
    // Left out, the profile's own.
    upstream.push(text_step("Done."));
    hub_call(
        hub.addr,
        json!([{"tool": "agents.writer", "input": {"task": "write", "top_p": 0.25}}]),
    )
    .await;
    let sent = upstream.requests()[1].json();
    assert_eq!(
        (&sent["temperature"], &sent["top_p"], &sent["max_tokens"]),
        (&json!(0.9), &json!(0.25), &json!(400)),
        "{sent}"
    );
    for (field, value, limit) in [
        ("temperature", json!(1.5), "agent.temperature_limit"),
        ("max_output_tokens", json!(501), "agent.max_output_tokens_limit"),
    ] {
        let mut input = json!({"task": "write"});
        input[field] = value;
        let out = hub_call(hub.addr, json!([{"tool": "agents.writer", "input": input}])).await;
        let error = &out["results"][0]["error"];
        assert_eq!(
            (&error["code"], &error["limit"]),
            (&json!("invalid_input"), &json!(limit)),
            "{out}"
        );
        assert_eq!(error["violations"][0]["path"], format!("/{field}"), "{out}");
        assert!(error["message"].as_str().unwrap().contains(limit), "{out}");
    }
    let out = hub_call(
        hub.addr,
        json!([{"tool": "agents.writer", "input": {"task": "write", "top_p": 0}}]),
    )
    .await;
    assert_eq!(
        out["results"][0]["error"]["violations"][0]["path"], "/top_p",
        "{out}"
    );
    assert_eq!(upstream.requests().len(), 2, "no refused call reached the model");
}
