//! The agent loop through `POST /api/chat` with the scripted upstream and the real
//! calc and text plugins: a multi-step turn with concurrent tool calls, tool
//! failures the model recovers from, the step limit, and the trigger semantics
//! (regenerate, edit, continuation, validation, 409).

use crate::support::chat::*;
use crate::support::client;
use crate::support::upstream::{CHAT, Reply, Upstream};
use serde_json::{Value, json};
use std::time::Duration;
use wasmhub::llm::{FinishReason, UiChunk};

fn outputs(chunks: &[UiChunk]) -> Vec<(String, Result<Value, String>)> {
    chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::ToolOutputAvailable {
                tool_call_id, output, ..
            } => Some((tool_call_id.clone(), Ok(output.clone()))),
            UiChunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => Some((tool_call_id.clone(), Err(error_text.clone()))),
            _ => None,
        })
        .collect()
}

/// The OpenAI messages of the `n`th upstream request.
fn sent_messages(upstream: &Upstream, n: usize) -> Vec<Value> {
    let requests: Vec<_> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == CHAT)
        .collect();
    requests[n].json()["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_turn_searches_reads_a_schema_and_calls_calc_and_text_in_one_batch() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    // Step 1: two calls at once; step 2: one batch of two operations; step 3: answer.
    upstream.push(tool_step(
        Some("Looking."),
        &[
            (
                "call_s",
                "hub_search",
                json!({"q": "evaluate arithmetic expression", "limit": 3}).to_string(),
            ),
            ("call_k", "hub_schema", json!({"tool": "calc.eval"}).to_string()),
        ],
    ));
    upstream.push(tool_step(
        None,
        &[(
            "call_c",
            "hub_call",
            call_args(json!([
                {"tool": "calc.eval", "input": {"expression": "6*7"}},
                {"tool": "text.slugify", "input": {"text": "Hello World"}}
            ])),
        )],
    ));
    upstream.push(text_step("6*7 is 42 and the slug is hello-world."));

    let chunks = chunks(
        post_chat(
            hub.addr,
            &submit("chat-1", vec![user("u1", "What is 6*7? Slugify Hello World.")]),
        )
        .await,
    )
    .await;
    let t = types(&chunks);
    assert_eq!(t.first().map(String::as_str), Some("start"));
    assert_eq!(t.iter().filter(|x| *x == "start-step").count(), 3, "{t:?}");
    assert_eq!(t.iter().filter(|x| *x == "finish-step").count(), 3, "{t:?}");
    // finish-step closes each step after its tool results.
    let first_finish = t.iter().position(|x| x == "finish-step").unwrap();
    let first_output = t.iter().position(|x| x == "tool-output-available").unwrap();
    assert!(first_output < first_finish, "{t:?}");
    let UiChunk::Start {
        message_id: Some(assistant_id),
        ..
    } = &chunks[0]
    else {
        panic!("start without messageId")
    };

    let outs = outputs(&chunks);
    assert_eq!(outs.len(), 3, "{outs:?}");
    let by_id = |id: &str| outs.iter().find(|(i, _)| i == id).unwrap().1.clone().unwrap();
    let search = by_id("call_s");
    assert_eq!(search["results"][0]["tool"], "calc.eval", "{search}");
    assert_eq!(by_id("call_k")["inputSchema"]["required"], json!(["expression"]));
    let batch = by_id("call_c");
    assert_eq!(batch["results"][0]["tool"], "calc.eval");
    assert_eq!(batch["results"][0]["ok"], true, "{batch}");
    assert_eq!(batch["results"][0]["result"]["decimal"], "42", "{batch}");
    assert_eq!(batch["results"][1]["result"]["slug"], "hello-world", "{batch}");

    let (reason, meta) = finish(&chunks);
    assert_eq!(reason, Some(FinishReason::Stop));
    assert_eq!(meta["finishReason"], "stop");
    assert_eq!(meta["steps"], 3);
    assert_eq!(
        meta["usage"]["inputTokens"], 300,
        "usage is summed over the steps: {meta}"
    );
    assert_eq!(meta["model"], MODEL);

    // What the model was sent: the system prompt, the four tools, and in step 2 the
    // assistant's tool calls followed by one tool message per call, in order.
    let first = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == CHAT)
        .unwrap()
        .json();
    assert_eq!(first["model"], "m1");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["hub_list", "hub_search", "hub_schema", "hub_call"]);
    let step2 = sent_messages(&upstream, 1);
    assert_eq!(step2[0]["role"], "system");
    assert!(step2[0]["content"].as_str().unwrap().contains("hub_search"));
    assert_eq!(
        step2[1],
        json!({"role": "user", "content": "What is 6*7? Slugify Hello World."})
    );
    assert_eq!(step2[2]["content"], "Looking.");
    assert_eq!(step2[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(step2[3]["tool_call_id"], "call_s");
    assert_eq!(step2[4]["tool_call_id"], "call_k");
    let step3 = sent_messages(&upstream, 2);
    assert_eq!(step3.len(), 7);
    assert!(step3[6]["content"].as_str().unwrap().contains("hello-world"));

    // The stored session is the conversation the client saw.
    let s = session(hub.addr, "chat-1").await;
    assert_eq!(s["messageCount"], 2);
    assert_eq!(s["title"], "What is 6*7? Slugify Hello World.");
    let a = &s["messages"][1];
    assert_eq!(a["id"], assistant_id.as_str());
    let parts: Vec<&str> = a["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        parts,
        [
            "step-start",
            "text",
            "tool-hub_search",
            "tool-hub_schema",
            "step-start",
            "tool-hub_call",
            "step-start",
            "text"
        ]
    );
    assert_eq!(a["parts"][5]["state"], "output-available");
    assert_eq!(a["parts"][7]["text"], "6*7 is 42 and the slug is hello-world.");
    assert_eq!(a["metadata"]["usage"]["outputTokens"], 30);
}

#[tokio::test]
async fn tool_failures_and_invalid_arguments_go_back_to_the_model() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    upstream.push(tool_step(
        None,
        &[
            ("call_a", "hub_call", call_args(json!([{"tool": "calc.eval", "input": {"expression": "1/0"}}, {"tool": "calc.eval", "input": {}}]))),
            ("call_b", "hub_schema", json!({"tool": "calc.evil"}).to_string()),
            ("call_c", "hub_call", "{\"calls\": [".to_string()),
        ],
    ));
    upstream.push(text_step("Division by zero is undefined."));
    let chunks =
        chunks(post_chat(hub.addr, &submit("chat-err", vec![user("u1", "What is 1/0?")])).await).await;
    let t = types(&chunks);
    assert!(t.contains(&"tool-input-error".to_string()), "{t:?}");
    let outs = outputs(&chunks);
    // The batch answers with per-call errors; the unknown tool is a tool error.
    let batch = outs
        .iter()
        .find(|(id, _)| id == "call_a")
        .unwrap()
        .1
        .clone()
        .unwrap();
    assert_eq!(batch["results"][0]["ok"], false);
    assert_eq!(batch["results"][1]["ok"], false);
    let schema_err = outs
        .iter()
        .find(|(id, _)| id == "call_b")
        .unwrap()
        .1
        .clone()
        .unwrap_err();
    assert!(
        schema_err.contains("calc.eval"),
        "a suggestion is offered: {schema_err}"
    );
    assert!(
        !outs.iter().any(|(id, _)| id == "call_c"),
        "invalid JSON is not run"
    );
    assert_eq!(finish(&chunks).0, Some(FinishReason::Stop));

    let step2 = sent_messages(&upstream, 1);
    let tool_msgs: Vec<&Value> = step2.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs.len(), 3);
    assert!(tool_msgs[0]["content"].as_str().unwrap().contains("\"ok\":false"));
    assert!(
        tool_msgs[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("{\"error\":")
    );
    assert!(
        tool_msgs[2]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{}",
        tool_msgs[2]
    );
    assert_eq!(
        step2.iter().find(|m| m["role"] == "assistant").unwrap()["tool_calls"][2]["function"]["arguments"],
        "{\"calls\": ["
    );
    let s = session(hub.addr, "chat-err").await;
    assert_eq!(s["messages"][1]["parts"][3]["state"], "output-error");
    assert_eq!(s["messages"][1]["parts"][3]["rawInput"], "{\"calls\": [");
}

#[tokio::test]
async fn the_step_limit_ends_the_turn_with_max_steps_in_the_metadata() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.max_steps = 3).await;
    upstream.set_default(CHAT, tool_step(None, &[("call_l", "hub_list", "{}".into())]));
    let chunks =
        chunks(post_chat(hub.addr, &submit("chat-max", vec![user("u1", "List forever")])).await).await;
    assert_eq!(upstream.requests().iter().filter(|r| r.path == CHAT).count(), 3);
    let (reason, meta) = finish(&chunks);
    assert_eq!(reason, Some(FinishReason::ToolCalls), "a valid AI SDK reason");
    assert_eq!(meta["finishReason"], "max-steps");
    assert_eq!(meta["steps"], 3);
}

#[tokio::test]
async fn upstream_errors_end_the_turn_with_an_error_chunk() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    upstream.push(Reply::error(400, "context length exceeded"));
    let chunks = chunks(post_chat(hub.addr, &submit("chat-up", vec![user("u1", "hi")])).await).await;
    let err = chunks.iter().find_map(|c| match c {
        UiChunk::Error { error_text } => Some(error_text.clone()),
        _ => None,
    });
    assert!(err.unwrap().contains("context length exceeded"));
    assert_eq!(finish(&chunks).1["finishReason"], "error");
    let s = session(hub.addr, "chat-up").await;
    assert!(
        s["messages"][1]["metadata"]["error"]
            .as_str()
            .unwrap()
            .contains("context length")
    );
}

#[tokio::test]
async fn a_tool_result_too_large_for_the_context_is_replaced_by_an_error() {
    let upstream = Upstream::start().await;
    // 8192-token window, 1024 reserved, the step reports 100+10 tokens used.
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.context_window = 8192).await;
    let long = "word ".repeat(8000);
    upstream.push(tool_step(
        None,
        &[(
            "call_big",
            "hub_call",
            call_args(json!([{"tool": "text.slugify", "input": {"text": long, "max_length": 100000}}])),
        )],
    ));
    upstream.push(text_step("Too large."));
    let chunks = chunks(post_chat(hub.addr, &submit("chat-big", vec![user("u1", "slug it")])).await).await;
    let outs = outputs(&chunks);
    let err = outs[0].1.clone().unwrap_err();
    assert!(err.starts_with("result too large"), "{err}");
    let tool_msg = sent_messages(&upstream, 1)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(tool_msg["content"].as_str().unwrap().contains("result too large"));
}

#[tokio::test]
async fn regenerate_edit_and_continuation_follow_the_ai_sdk() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |_| {}).await;
    upstream.push(text_step("first answer"));
    let c1 = chunks(post_chat(hub.addr, &submit("chat-r", vec![user("u1", "hello")])).await).await;
    let UiChunk::Start {
        message_id: Some(a1), ..
    } = &c1[0]
    else {
        panic!()
    };

    // Regenerate: the client dropped the assistant message and names it.
    upstream.push(text_step("second answer"));
    let body = json!({"id": "chat-r", "trigger": "regenerate-message", "messageId": a1, "messages": [user("u1", "hello")]});
    let c2 = chunks(post_chat(hub.addr, &body).await).await;
    let UiChunk::Start {
        message_id: Some(a2), ..
    } = &c2[0]
    else {
        panic!()
    };
    assert_ne!(a1, a2);
    let s = session(hub.addr, "chat-r").await;
    assert_eq!(s["messages"].as_array().unwrap().len(), 2);
    assert_eq!(s["messages"][1]["id"], a2.as_str());
    assert_eq!(s["messages"][1]["parts"][1]["text"], "second answer");
    // The model saw no trace of the first answer.
    assert_eq!(sent_messages(&upstream, 1).len(), 2);

    // A second turn, then an edit of the first message drops everything after it.
    upstream.push(text_step("more"));
    let history = s["messages"].as_array().unwrap().clone();
    let mut msgs = history.clone();
    msgs.push(user("u2", "more please"));
    chunks(post_chat(hub.addr, &submit("chat-r", msgs)).await).await;
    assert_eq!(session(hub.addr, "chat-r").await["messageCount"], 4);
    upstream.push(text_step("edited answer"));
    let body = json!({"id": "chat-r", "trigger": "submit-message", "messageId": "u1", "messages": [user("u1", "hello, edited")]});
    chunks(post_chat(hub.addr, &body).await).await;
    let s = session(hub.addr, "chat-r").await;
    assert_eq!(s["messageCount"], 2);
    assert_eq!(s["messages"][0]["parts"][0]["text"], "hello, edited");
    assert_eq!(sent_messages(&upstream, 3)[1]["content"], "hello, edited");

    // The client's copy of an earlier message is ignored: the store is the truth.
    upstream.push(text_step("ok"));
    let mut msgs = s["messages"].as_array().unwrap().clone();
    msgs[0]["parts"][0]["text"] = json!("tampered");
    msgs.push(user("u3", "next"));
    chunks(post_chat(hub.addr, &submit("chat-r", msgs)).await).await;
    assert_eq!(sent_messages(&upstream, 4)[1]["content"], "hello, edited");

    // Continuation: the last message is the stored assistant message; start reuses its id.
    let s = session(hub.addr, "chat-r").await;
    let last = s["messages"][3].clone();
    upstream.push(text_step("continued"));
    let c = chunks(
        post_chat(
            hub.addr,
            &submit("chat-r", s["messages"].as_array().unwrap().clone()),
        )
        .await,
    )
    .await;
    let UiChunk::Start {
        message_id: Some(id), ..
    } = &c[0]
    else {
        panic!()
    };
    assert_eq!(id, last["id"].as_str().unwrap());
    let s = session(hub.addr, "chat-r").await;
    assert_eq!(s["messageCount"], 4);
    let texts: Vec<&str> = s["messages"][3]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(texts, ["ok", "continued"]);
}

#[tokio::test]
async fn bad_requests_busy_sessions_and_the_session_routes() {
    let upstream = Upstream::start().await;
    // No waiting line: a request while a turn runs is refused (chat_queue has the line).
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.queued_turns = 0).await;
    for (body, code) in [
        (json!({"messages": []}), "invalid_request"),
        (
            json!({"id": "../x", "messages": [user("u1", "x")]}),
            "invalid_request",
        ),
        (json!({"id": "c", "messages": []}), "invalid_request"),
        (
            json!({"id": "c", "messages": [user("u1", "x")], "trigger": "resume"}),
            "invalid_request",
        ),
        (
            json!({"id": "c", "messages": [user("u1", "x")], "model": "nobody/none"}),
            "model_not_found",
        ),
        (
            json!({"id": "c", "messages": [{"id": "a", "role": "assistant", "parts": []}]}),
            "invalid_request",
        ),
    ] {
        let resp = post_chat(hub.addr, &body).await;
        let status = resp.status;
        let v = resp.json().await;
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
        assert!(status.is_client_error(), "{status}");
    }
    assert_eq!(upstream.requests().len(), 0);

    // One turn per session: with no line, a second request while the first
    // streams gets 409.
    upstream.push(slow_text_step("slow answer here", Duration::from_millis(150)));
    let mut first = post_chat(hub.addr, &submit("chat-busy", vec![user("u1", "slow")])).await;
    assert!(matches!(
        next_chunk(&mut first).await,
        Some(UiChunk::Start { .. })
    ));
    let second = post_chat(
        hub.addr,
        &submit("chat-busy", vec![user("u1", "slow"), user("u2", "again")]),
    )
    .await;
    assert_eq!(second.status, 409);
    assert_eq!(second.json().await["error"]["code"], "turn_in_progress");
    let del = client::send(
        hub.addr,
        http::Method::DELETE,
        "/api/sessions/chat-busy",
        None,
        &[],
    )
    .await;
    assert_eq!(del.status, 409);
    while next_chunk(&mut first).await.is_some() {}

    let list = client::send(hub.addr, http::Method::GET, "/api/sessions", None, &[])
        .await
        .json()
        .await;
    // The chat tests share one store: other tests' sessions are listed too, so
    // check the order over the whole list, newest first, and find this one in it.
    let sessions = list["sessions"].as_array().unwrap();
    let updated: Vec<u64> = sessions
        .iter()
        .map(|s| s["updatedAt"].as_u64().unwrap())
        .collect();
    assert!(updated.windows(2).all(|w| w[0] >= w[1]), "newest first: {list}");
    let busy = sessions.iter().find(|s| s["id"] == "chat-busy");
    let busy = busy.unwrap_or_else(|| panic!("chat-busy in {list}"));
    assert_eq!(busy["active"], false);
    let del = client::send(
        hub.addr,
        http::Method::DELETE,
        "/api/sessions/chat-busy",
        None,
        &[],
    )
    .await;
    assert_eq!(del.status, 204);
    let gone = client::send(hub.addr, http::Method::GET, "/api/sessions/chat-busy", None, &[]).await;
    assert_eq!(gone.status, 404);
    let bad = client::send(hub.addr, http::Method::GET, "/api/sessions/a.b", None, &[]).await;
    assert_eq!(bad.status, 400);
    let page = client::send(hub.addr, http::Method::GET, "/", None, &[]).await;
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.bytes().await).contains("/api/chat"));
}
