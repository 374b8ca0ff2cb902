//! Human approval over MCP, through the real HTTP server with hand-written
//! JSON-RPC: a 2025-11-25 client that declared `elicitation` is asked with an
//! `elicitation/create` request on the call's event stream and answers with a
//! response POSTed on its session (accept runs the call with the client as
//! `approved_by`; decline fails only the asking operation with `approval_denied`);
//! a 2026-07-28 client that declared elicitation in `_meta` gets `input_required`
//! and retries with `inputResponses` and the echoed `requestState` (tampered,
//! other-request and expired states are refused); clients that declared neither
//! keep getting `approval_required`. The `examples` guest's `wipe` is destructive
//! (the default policy asks), its `echo` read-only.

use crate::support::client::{ClientResp, send};
use crate::support::hub::{Server, plugins, serve};
use bytes::Bytes;
use http::Method;
use serde_json::{Value, json};
use std::time::Duration;

const STATELESS_META: &str = "_meta";

async fn hub(approval_secs: u64) -> (Server, crate::support::runtime::Scratch) {
    let dir = plugins(&[("examples", "examples")], &[]);
    let s = serve(&dir, |c| c.server.mcp_approval_secs = approval_secs).await;
    s.hub.app.hub.loaded().await;
    (s, dir)
}

async fn post(s: &Server, body: &Value, headers: &[(&str, &str)]) -> ClientResp {
    let mut all = vec![("accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    send(
        s.addr,
        Method::POST,
        "/mcp",
        Some(Bytes::from(body.to_string())),
        &all,
    )
    .await
}

/// A wipe (asks) and an echo (does not) in one `hub_call`.
fn wipe_and_echo() -> Value {
    json!({ "calls": [
        { "tool": "examples.wipe", "input": { "all": true } },
        { "tool": "examples.echo", "input": { "text": "still runs" } },
    ] })
}

fn call(id: u64, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "hub_call", "arguments": arguments } })
}

/// Opens a 2025-11-25 session declaring `capabilities`; returns its id.
async fn initialize(s: &Server, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "e2e-client", "version": "1"}}});
    let resp = post(s, &init, &[]).await;
    assert_eq!(resp.status, 200);
    resp.header("mcp-session-id").expect("a session id").to_string()
}

async fn next_json(stream: &mut ClientResp) -> Value {
    let event = tokio::time::timeout(Duration::from_secs(30), stream.next_event())
        .await
        .expect("an event within 30 s")
        .expect("the stream is still open");
    serde_json::from_str(&event).unwrap()
}

/// Runs wipe-and-echo on a session that declared elicitation, answers the
/// question with `answer`, and returns (the question's params, the call's result).
async fn asked_and_answered(s: &Server, sid: &str, answer: Value) -> (Value, Value) {
    let session = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25")];
    let mut stream = post(s, &call(7, wipe_and_echo()), &session).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let question = next_json(&mut stream).await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let id = question["id"].clone();
    assert!(id.is_string(), "{question}");
    let response = json!({"jsonrpc": "2.0", "id": id, "result": answer});
    let ack = post(s, &response, &session).await;
    assert_eq!(ack.status, 202, "a client response is acknowledged");
    let answer = next_json(&mut stream).await;
    assert_eq!(answer["id"], 7, "{answer}");
    (question["params"].clone(), answer["result"].clone())
}

#[tokio::test]
async fn mcp_2025_elicitation_accept_runs_the_call_and_decline_fails_only_the_asking_operation() {
    let (s, _dir) = hub(300).await;
    let sid = initialize(&s, json!({"elicitation": {}})).await;

    let accept = json!({"action": "accept", "content": {"approve": true}});
    let (question, result) = asked_and_answered(&s, &sid, accept).await;
    let message = question["message"].as_str().unwrap();
    for part in [
        "examples.wipe",
        "destructive",
        "approvals.destructive",
        "{\"all\":true}",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(
        !message.contains("examples.echo"),
        "only the asking operation: {message}"
    );
    assert_eq!(
        question["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    let results = &result["structuredContent"]["results"];
    assert_eq!(results[0]["ok"], true, "{result}");
    assert_eq!(results[0]["result"], json!({"wiped": true}));
    assert_eq!(results[1]["result"], json!({"text": "still runs"}));

    let decline = json!({"action": "decline"});
    let (_, result) = asked_and_answered(&s, &sid, decline).await;
    let results = &result["structuredContent"]["results"];
    assert_eq!(results[0]["tool"], "examples.wipe", "{result}");
    assert_eq!(results[0]["error"]["code"], "approval_denied", "{result}");
    assert_eq!(results[0]["error"]["policy"], "approvals.destructive");
    let why = results[0]["error"]["message"].as_str().unwrap();
    assert!(why.contains("MCP client e2e-client of session"), "{why}");
    assert_eq!(results[1]["ok"], true, "the rest of the batch runs: {result}");
    assert!(result.get("isError").is_none(), "{result}");

    // Accepting with approve: false is a no.
    let no = json!({"action": "accept", "content": {"approve": false}});
    let (_, result) = asked_and_answered(&s, &sid, no).await;
    assert_eq!(
        result["structuredContent"]["results"][0]["error"]["code"],
        "approval_denied"
    );

    // The audit record names the client and session that approved.
    let records = s.calls_of("examples.wipe", None).await;
    let approved: Vec<&Value> = records.iter().map(|c| &c["approval"]).collect();
    assert_eq!(approved.len(), 1, "declined wipes never ran: {records:?}");
    assert_eq!(approved[0]["decision"], "approved");
    assert_eq!(
        approved[0]["by"],
        format!("MCP client e2e-client of session {sid}")
    );
}

#[tokio::test]
async fn mcp_2025_clients_without_elicitation_get_approval_required() {
    let (s, _dir) = hub(300).await;
    let sid = initialize(&s, json!({})).await;
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let resp = post(&s, &call(1, wipe_and_echo()), &session).await;
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let answer = resp.json().await;
    let results = &answer["result"]["structuredContent"]["results"];
    assert_eq!(results[0]["error"]["code"], "approval_required", "{answer}");
    assert_eq!(results[1]["ok"], true, "{answer}");
    // A session that declared elicitation but accepts only JSON cannot be asked.
    let sid = initialize(&s, json!({"elicitation": {}})).await;
    let resp = send(
        s.addr,
        Method::POST,
        "/mcp",
        Some(Bytes::from(call(2, wipe_and_echo()).to_string())),
        &[("accept", "application/json"), ("mcp-session-id", sid.as_str())],
    )
    .await;
    let answer = resp.json().await;
    assert_eq!(
        answer["result"]["structuredContent"]["results"][0]["error"]["code"], "approval_required",
        "{answer}"
    );
}

/// A 2026-07-28 `tools/call` of `arguments`, declaring `capabilities`, with
/// `extra` params (the retry's `inputResponses` and `requestState`).
async fn stateless_call(s: &Server, arguments: &Value, capabilities: Value, extra: Value) -> (u16, Value) {
    let mut params = json!({"name": "hub_call", "arguments": arguments});
    params[STATELESS_META] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "e2e-stateless", "version": "1"},
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            params[k] = v;
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "hub_call"),
    ];
    let resp = post(s, &body, &headers).await;
    let status = resp.status.as_u16();
    (status, resp.json().await)
}

#[tokio::test]
async fn mcp_2026_input_required_round_trip_accepts_declines_and_refuses_bad_states() {
    let (s, _dir) = hub(300).await;
    let elicit = json!({"elicitation": {}});
    let args = wipe_and_echo();

    let (status, first) = stateless_call(&s, &args, elicit.clone(), json!({})).await;
    assert_eq!(status, 200);
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let request = &result["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("examples.wipe")
    );
    let state = result["requestState"].as_str().unwrap().to_string();

    let yes = json!({"approval": {"action": "accept", "content": {"approve": true}}});
    let (_, done) = stateless_call(
        &s,
        &args,
        elicit.clone(),
        json!({"inputResponses": yes, "requestState": state}),
    )
    .await;
    let result = &done["result"];
    assert_eq!(result["resultType"], "complete", "{done}");
    assert_eq!(
        result["structuredContent"]["results"][0]["result"],
        json!({"wiped": true})
    );

    let no = json!({"approval": {"action": "decline"}});
    let (_, done) = stateless_call(
        &s,
        &args,
        elicit.clone(),
        json!({"inputResponses": no, "requestState": state}),
    )
    .await;
    let results = &done["result"]["structuredContent"]["results"];
    assert_eq!(results[0]["error"]["code"], "approval_denied", "{done}");
    assert!(
        results[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP client e2e-stateless")
    );
    assert_eq!(results[1]["ok"], true, "{done}");

    // A tampered state, a state for other arguments, a state without answers.
    let mut tampered = state.clone().into_bytes();
    tampered[10] = if tampered[10] == b'0' { b'1' } else { b'0' };
    let tampered = String::from_utf8(tampered).unwrap();
    let other_args = json!({"calls": [{"tool": "examples.wipe", "input": {"all": false}}]});
    for (arguments, extra, why) in [
        (
            &args,
            json!({"inputResponses": yes, "requestState": tampered}),
            "not issued by this server",
        ),
        (
            &other_args,
            json!({"inputResponses": yes, "requestState": state}),
            "another tool call",
        ),
        (&args, json!({"inputResponses": yes}), "needs the requestState"),
        (&args, json!({"requestState": state}), "inputResponses.approval"),
    ] {
        let (status, refused) = stateless_call(&s, arguments, elicit.clone(), extra).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{why}: {message}");
    }

    // A client that did not declare elicitation keeps getting approval_required.
    let (_, plain) = stateless_call(&s, &args, json!({}), json!({})).await;
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(
        plain["result"]["structuredContent"]["results"][0]["error"]["code"],
        "approval_required"
    );
}

#[tokio::test]
async fn mcp_2026_request_state_expires_after_mcp_approval_secs() {
    let (s, _dir) = hub(1).await;
    let elicit = json!({"elicitation": {}});
    let args = wipe_and_echo();
    let (_, first) = stateless_call(&s, &args, elicit.clone(), json!({})).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let yes = json!({"approval": {"action": "accept", "content": {"approve": true}}});
    let (status, refused) = stateless_call(
        &s,
        &args,
        elicit,
        json!({"inputResponses": yes, "requestState": state}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("expired"),
        "{refused}"
    );
}
