//! Structured output through `POST /v1/agents/{name}` with `format: "json"`: a
//! scripted upstream that first answers invalid JSON and then valid JSON shows the
//! correction round (the violations sent back to the model); one that never
//! complies gets `invalid_output` with the violations; a provider configured with
//! `json_schema = true` gets the schema as `response_format` instead of in the
//! prompt, and the profile's `output_schema` stands in for a request without one.

use crate::support::chat::{MODEL, hub_alone, plugins, text_step};
use crate::support::client;
use crate::support::upstream::Upstream;
use serde_json::{Value, json};
use wasmhub::config::{AgentProfileConfig, ModelChoice};

fn schema() -> Value {
    json!({"type": "object", "required": ["sum"], "additionalProperties": false,
        "properties": {"sum": {"type": "integer"}}})
}

fn adder(output_schema: Option<Value>) -> AgentProfileConfig {
    AgentProfileConfig {
        name: "adder".into(),
        model: Some(ModelChoice::One(MODEL.into())),
        output_schema,
        ..AgentProfileConfig::default()
    }
}

fn task(schema: Option<Value>) -> Value {
    let mut body = json!({"input": "Add 2 and 3.", "format": "json"});
    if let Some(schema) = schema {
        body["schema"] = schema;
    }
    body
}

#[tokio::test]
async fn an_invalid_answer_gets_one_correction_round() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| c.agents = vec![adder(None)]).await;
    upstream.push(text_step("The sum is 5."));
    upstream.push(text_step("{\"sum\": 5}"));
    let resp = client::post(hub.addr, "/v1/agents/adder", &task(Some(schema()))).await;
    assert_eq!(resp.status, 200);
    let answer = resp.json().await;
    assert_eq!(
        (&answer["output"], &answer["corrections"]),
        (&json!({"sum": 5}), &json!(1)),
        "{answer}"
    );
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("must satisfy this JSON Schema"), "{system}");
    assert!(first.get("response_format").is_none());
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("(the answer): the answer is not one JSON value"),
        "{last}"
    );
    assert_eq!(
        messages[messages.len() - 2]["content"],
        "The sum is 5.",
        "the model sees its answer"
    );
}

#[tokio::test]
async fn an_answer_that_never_complies_is_invalid_output_with_the_violations() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.agents = vec![adder(Some(schema()))]
    })
    .await;
    upstream.push(text_step("{\"sum\": \"5\"}"));
    upstream.push(text_step("{\"sum\": \"five\", \"note\": 1}"));
    // No schema in the request: the profile's output_schema applies.
    let resp = client::post(hub.addr, "/v1/agents/adder", &task(None)).await;
    assert_eq!(resp.status, 502);
    let error = resp.json().await;
    assert_eq!(error["error"]["code"], "invalid_output", "{error}");
    let paths: Vec<&str> = error["error"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/note", "/sum"], "{error}");
    assert_eq!(upstream.requests().len(), 2, "one correction round, no more");
    let correction = upstream.requests()[1].json();
    let last = correction["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last["content"].as_str().unwrap().contains("- /sum: "), "{last}");
}

#[tokio::test]
async fn a_provider_with_json_schema_gets_the_schema_as_response_format() {
    let upstream = Upstream::start().await;
    let hub = hub_alone(&upstream, plugins(&[]), |c| {
        c.providers[0].json_schema = true;
        c.agents = vec![adder(None)];
    })
    .await;
    upstream.push(text_step("{\"sum\": 5}"));
    let resp = client::post(hub.addr, "/v1/agents/adder", &task(Some(schema()))).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json().await["corrections"], 0);
    let sent = upstream.requests()[0].json();
    assert_eq!(
        sent["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema()}})
    );
    assert!(
        !sent["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("JSON Schema")
    );
    let bad = client::post(hub.addr, "/v1/agents/adder", &task(Some(json!({"type": 7})))).await;
    assert_eq!(bad.status, 400);
    let error = bad.json().await;
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("schema: not a valid JSON Schema"),
        "{error}"
    );
}
