//! Structured output on the chat surfaces, for a `model` naming an agent: Chat
//! Completions' `response_format` (`json_schema` with its schema, `json_object`)
//! and Messages' `output_config.format` get the agent's JSON answer checked, with
//! the correction round (an invalid answer, then a valid one) and `invalid_output`
//! in each API's error shape when it never complies; a streamed request asking
//! for JSON is refused, as on `POST /v1/agents/{name}`; the conversation, with its
//! system message, reaches the model; no session is left.

use crate::support::chat::{MODEL, hub_alone, plugins, text_step};
use crate::support::client::{self, ClientResp};
use crate::support::upstream::Upstream;
use crate::support::wait;
use serde_json::{Value, json};
use wasmhub::config::{AgentProfileConfig, ModelChoice};

fn schema() -> Value {
    json!({"type": "object", "required": ["sum"], "additionalProperties": false,
        "properties": {"sum": {"type": "integer"}}})
}

async fn hub(upstream: &Upstream) -> crate::support::hub::Hub {
    // A store of its own: the test checks that no session is left.
    hub_alone(upstream, plugins(&[]), |c| {
        c.agents = vec![AgentProfileConfig {
            name: "adder".into(),
            model: Some(ModelChoice::One(MODEL.into())),
            ..AgentProfileConfig::default()
        }];
    })
    .await
}

async fn post(addr: std::net::SocketAddr, path: &str, body: &Value, headers: &[(&str, &str)]) -> ClientResp {
    let bytes = serde_json::to_vec(body).unwrap().into();
    client::send(addr, http::Method::POST, path, Some(bytes), headers).await
}

fn completion(format: Value) -> Value {
    json!({"model": "adder", "response_format": format, "messages": [
        {"role": "system", "content": "Answer tersely."},
        {"role": "user", "content": "Add 2 and 3."}
    ]})
}

/// The model answers `first`, then (in the correction round) `second`.
async fn completes(
    hub: &crate::support::hub::Hub,
    upstream: &Upstream,
    answers: [&str; 2],
    format: Value,
) -> ClientResp {
    for answer in answers {
        upstream.push(text_step(answer));
    }
    post(hub.addr, "/v1/chat/completions", &completion(format), &[]).await
}

fn message(format: Value) -> Value {
    json!({"model": "adder", "max_tokens": 200, "output_config": {"format": format},
        "messages": [{"role": "user", "content": "Add 2 and 3."}]})
}

async fn no_sessions_left(hub: &crate::support::hub::Hub) {
    let agent = &hub.app.agent;
    wait::until_seen("the JSON turns' sessions to be deleted", || async move {
        let left = agent.list_sessions(&wasmhub::hub::Visible::All).await.unwrap();
        if left.is_empty() { Ok(()) } else { Err(left.len()) }
    })
    .await;
}

/// The paths of an error body's violations.
fn paths(error: &Value) -> Vec<String> {
    error["error"]["violations"]
        .as_array()
        .unwrap_or_else(|| panic!("violations in {error}"))
        .iter()
        .map(|v| v["path"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn chat_completions_response_format_gets_a_checked_json_answer() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    let json_schema =
        json!({"type": "json_schema", "json_schema": {"name": "sum", "strict": true, "schema": schema()}});

    let resp = completes(
        &hub,
        &upstream,
        ["The sum is 5.", "{\"sum\": 5}"],
        json_schema.clone(),
    )
    .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-wasmhub-corrections"), Some("1"));
    let answer = resp.json().await;
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    let content = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(content).unwrap(), json!({"sum": 5}));
    // The conversation reached the model with the schema; the correction sent back.
    let first = upstream.requests()[0].json();
    let texts: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(texts.iter().any(|t| t.contains("Answer tersely.")), "{first}");
    assert!(
        texts.iter().any(|t| t.contains("must satisfy this JSON Schema")),
        "{first}"
    );
    let correction = upstream.requests()[1].json();
    let last = correction["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["content"].as_str().unwrap().contains("not one JSON value"),
        "{last}"
    );

    // json_object: any JSON object.
    let resp = completes(
        &hub,
        &upstream,
        ["[5]", "{\"result\": 5}"],
        json!({"type": "json_object"}),
    )
    .await;
    let answer = resp.json().await;
    let content = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"result": 5})
    );

    // Never complying: invalid_output with the violations, not to be retried.
    let resp = completes(
        &hub,
        &upstream,
        ["{\"sum\": \"5\"}", "{\"sum\": 5.5}"],
        json_schema.clone(),
    )
    .await;
    assert_eq!(resp.status, 502);
    assert_eq!(resp.header("x-should-retry"), Some("false"));
    let error = resp.json().await;
    assert_eq!(error["error"]["code"], "invalid_output", "{error}");
    assert_eq!(paths(&error), ["/sum"]);

    let requests = upstream.requests().len();
    let mut streamed = completion(json_schema);
    streamed["stream"] = json!(true);
    for (body, field) in [
        (streamed, "response_format: a JSON answer is checked whole"),
        (completion(json!({"type": "xml"})), "response_format.type"),
        (
            completion(json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 7}}})),
            "response_format: schema: not a valid JSON Schema",
        ),
    ] {
        let resp = post(hub.addr, "/v1/chat/completions", &body, &[]).await;
        assert_eq!(resp.status, 400);
        let error = resp.json().await;
        assert!(
            error["error"]["message"].as_str().unwrap().starts_with(field),
            "{error}"
        );
    }
    assert_eq!(upstream.requests().len(), requests, "no refused request ran");
    no_sessions_left(&hub).await;
}

#[tokio::test]
async fn messages_output_config_format_gets_a_checked_json_answer() {
    let upstream = Upstream::start().await;
    let hub = hub(&upstream).await;
    let format = json!({"type": "json_schema", "schema": schema()});

    upstream.push(text_step("five"));
    upstream.push(text_step("{\"sum\": 5}"));
    let resp = post(hub.addr, "/v1/messages", &message(format.clone()), &[]).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("x-wasmhub-corrections"), Some("1"));
    let answer = resp.json().await;
    assert_eq!(
        (
            &answer["type"],
            &answer["stop_reason"],
            &answer["content"][0]["type"]
        ),
        (&json!("message"), &json!("end_turn"), &json!("text")),
        "{answer}"
    );
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), json!({"sum": 5}));
    assert_eq!(answer["usage"]["output_tokens"], 20, "both rounds: {answer}");

    upstream.push(text_step("{}"));
    upstream.push(text_step("{\"sum\": 5, \"more\": true}"));
    let resp = post(hub.addr, "/v1/messages", &message(format.clone()), &[]).await;
    assert_eq!(resp.status, 502);
    assert_eq!(resp.header("x-should-retry"), Some("false"));
    let error = resp.json().await;
    assert_eq!(
        (&error["type"], &error["error"]["type"]),
        (&json!("error"), &json!("api_error")),
        "{error}"
    );
    assert_eq!(paths(&error), ["/more"]);
    assert!(
        error["error"]["message"].as_str().unwrap().contains("/more: "),
        "{error}"
    );

    let requests = upstream.requests().len();
    let mut streamed = message(format.clone());
    streamed["stream"] = json!(true);
    let mut default_agent = message(format);
    default_agent["model"] = json!(MODEL);
    for (body, headers, starts) in [
        (
            streamed,
            &[][..],
            "output_config.format: a JSON answer is checked whole",
        ),
        (
            default_agent,
            &[("x-wasmhub-tools", "hub")][..],
            "output_config.format: structured output comes from an agent",
        ),
        (
            message(json!({"type": "json_schema"})),
            &[][..],
            "output_config.format: its schema must be",
        ),
    ] {
        let resp = post(hub.addr, "/v1/messages", &body, headers).await;
        assert_eq!(resp.status, 400);
        let error = resp.json().await;
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert!(
            error["error"]["message"].as_str().unwrap().starts_with(starts),
            "{error}"
        );
    }
    assert_eq!(upstream.requests().len(), requests, "no refused request ran");
    no_sessions_left(&hub).await;
}
