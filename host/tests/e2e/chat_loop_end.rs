//! How a turn ends at its step limit: the last allowed step offers no tools and
//! asks the model to conclude, so the conversation ends with an answer; the
//! configured `tool_choice` and `parallel_tool_calls` go with the other steps. And
//! the per-model context budget: its guard's activations in `/metrics` and in
//! `GET /api/accounting`.

use crate::support::chat::*;
use crate::support::client;
use crate::support::upstream::{CHAT, Upstream};
use serde_json::{Value, json};
use wasmhub::config::ToolChoice;
use wasmhub::llm::{FinishReason, UiChunk};

fn chat_requests(upstream: &Upstream) -> Vec<Value> {
    upstream
        .requests()
        .iter()
        .filter(|r| r.path == CHAT)
        .map(|r| r.json())
        .collect()
}

#[tokio::test]
async fn the_last_allowed_step_sends_no_tools_and_asks_for_the_answer() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| {
        c.agent.max_steps = 2;
        c.providers[0].tool_choice = Some(ToolChoice::Required);
        c.providers[0].parallel_tool_calls = Some(false);
    })
    .await;
    upstream.push(tool_step(None, &[("call_l", "hub_list", "{}".into())]));
    upstream.push(text_step("There are calc and text operations."));
    let chunks = chunks(
        post_chat(
            hub.addr,
            &submit("chat-conclude", vec![user("u1", "What is there?")]),
        )
        .await,
    )
    .await;

    let requests = chat_requests(&upstream);
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["tools"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        (&requests[0]["tool_choice"], &requests[0]["parallel_tool_calls"]),
        (&json!("required"), &json!(false))
    );
    let last = &requests[1];
    for key in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(last.get(key).is_none(), "the last request has no {key}: {last}");
    }
    let messages = last["messages"].as_array().unwrap();
    let conclude = messages.last().unwrap();
    assert_eq!(conclude["role"], "user");
    assert!(
        conclude["content"]
            .as_str()
            .unwrap()
            .contains("no more tools can be called"),
        "{conclude}"
    );
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "tool").count(),
        1,
        "the first step's result is there to conclude from"
    );

    let (reason, meta) = finish(&chunks);
    assert_eq!(reason, Some(FinishReason::Stop), "the model answered");
    assert_eq!(
        (&meta["finishReason"], &meta["steps"]),
        (&json!("max-steps"), &json!(2))
    );
    let stored = session(hub.addr, "chat-conclude").await;
    let parts = stored["messages"][1]["parts"].as_array().unwrap().clone();
    assert_eq!(
        parts.last().unwrap()["text"],
        "There are calc and text operations."
    );
    // The conclude instruction is the hub's, never part of the stored history.
    assert!(!json!(stored).to_string().contains("no more tools can be called"));
}

#[tokio::test]
async fn tool_calls_sent_anyway_on_the_last_step_are_not_run() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| c.agent.max_steps = 1).await;
    upstream.push(tool_step(
        Some("Let me check."),
        &[("call_x", "hub_list", "{}".into())],
    ));
    let chunks =
        chunks(post_chat(hub.addr, &submit("chat-last-tools", vec![user("u1", "List")])).await).await;
    assert!(chat_requests(&upstream)[0].get("tools").is_none());
    let errors: Vec<&str> = chunks
        .iter()
        .filter_map(|c| match c {
            UiChunk::ToolOutputError { error_text, .. } => Some(error_text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("step limit ([agent] max_steps = 1)"),
        "{errors:?}"
    );
    assert!(
        !chunks
            .iter()
            .any(|c| matches!(c, UiChunk::ToolOutputAvailable { .. }))
    );
    let (reason, meta) = finish(&chunks);
    assert_eq!(
        (reason, &meta["finishReason"]),
        (Some(FinishReason::ToolCalls), &json!("max-steps"))
    );
}

#[tokio::test]
async fn the_per_model_context_guard_replaces_a_large_result_counts_it_in_metrics_and_accounts_it() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&[]), |c| {
        // The model's own window (the agent's 131,072 would admit the result).
        c.providers[0].max_output_tokens = Some(1024);
        c.providers[0].model_settings = vec![
            wasmhub::toml::from_str("model = \"m1\"\ncontext_window = 8192\ncontext_buffer = 100\n").unwrap(),
        ];
    })
    .await;
    let long = "word ".repeat(8000);
    let input = json!([{"tool": "text.slugify", "input": {"text": long, "max_length": 100000}}]);
    upstream.push(tool_step(None, &[("call_big", "hub_call", call_args(input))]));
    upstream.push(text_step("Too large."));
    let chunks = chunks(post_chat(hub.addr, &submit("chat-guard", vec![user("u1", "slug it")])).await).await;
    let replaced = chunks.iter().find_map(|c| match c {
        UiChunk::ToolOutputError { error_text, .. } => Some(error_text.as_str()),
        _ => None,
    });
    // 8192 - 1024 - 100 = 7068 tokens of input, 110 used by the step.
    let replaced = replaced.expect("the result was replaced");
    assert!(
        replaced.starts_with("result too large: about 100")
            && replaced.contains("only 6958 tokens of context are left"),
        "{replaced}"
    );
    let resp = client::send(hub.addr, http::Method::GET, "/metrics", None, &[]).await;
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    assert!(
        text.contains(
            "wasmhub_context_guard_events_total{provider=\"scripted\",model=\"m1\",trigger=\"tool_result\",outcome=\"replaced\"} 1\n"
        ),
        "{text}"
    );
    // After the last step: its usage (100 + 10) of the 7068.
    assert!(
        text.contains("wasmhub_context_remaining_tokens{provider=\"scripted\",model=\"m1\"} 6958\n"),
        "{text}"
    );
    assert_guard_accounted(&hub, &chunks, replaced).await;
}

/// The activation's accounting record: the turn's session and message, the step
/// that called the tool (as its `model_step` record says), the target and tokens.
async fn assert_guard_accounted(hub: &crate::support::hub::Hub, chunks: &[UiChunk], replaced: &str) {
    let message = chunks
        .iter()
        .find_map(|c| match c {
            UiChunk::Start { message_id, .. } => message_id.clone(),
            _ => None,
        })
        .expect("start names the message");
    let result_tokens: u64 = replaced["result too large: about ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the message names the tokens");
    let records = accounting_of(hub.addr, "chat-guard").await;
    let seen = json!(records);
    let guards: Vec<&Value> = records.iter().filter(|r| r["kind"] == "context_guard").collect();
    assert_eq!(guards.len(), 1, "{seen}");
    let mut guard = guards[0].clone();
    let id = guard["id"].as_u64().expect("an id");
    assert!(guard["time_ms"].as_u64().is_some_and(|t| t > 0), "{guard}");
    guard
        .as_object_mut()
        .unwrap()
        .retain(|k, _| k != "id" && k != "time_ms");
    assert_eq!(
        guard,
        json!({
            "kind": "context_guard", "session": "chat-guard", "caller": "local",
            "message": message, "step": 0, "provider": "scripted", "model": "m1",
            "trigger": "tool_result", "outcome": "replaced",
            "projected_tokens": 110 + result_tokens, "limit_tokens": 7068, "remaining_tokens": 6958,
            "tokenizer": "estimate"
        })
    );
    let step0 = records
        .iter()
        .find(|r| r["kind"] == "model_step" && r["step"] == 0)
        .expect("the step that called the tool");
    assert_eq!(
        (&step0["message"], &step0["session"]),
        (&json!(message), &json!("chat-guard"))
    );
    assert!(
        step0["id"].as_u64().unwrap() < id,
        "the step is accounted before its result: {seen}"
    );
}
