//! Human approval in the agent loop through `POST /api/chat`, with the scripted
//! upstream and the `examples` test guest (`wipe` is hinted destructive, so the
//! default policy asks; `echo` is read-only). One approval per model tool call:
//! the model calls `examples.wipe` in two `hub_call`s of one step, the turn pauses
//! with two `tool-approval-request`s, the client approves one and denies the other
//! in the next request, and forged, swapped, changed and replayed answers are
//! refused with 400 `invalid_approval`. The continued request's accounting records
//! count the message's steps on, guarded results of approved calls included.

use crate::support::chat::*;
use crate::support::client;
use crate::support::upstream::{CHAT, Upstream};
use serde_json::{Value, json};
use wasmhub::llm::{FinishReason, UiChunk};

fn wipe(input: Value) -> String {
    call_args(json!([{ "tool": "examples.wipe", "input": input }]))
}

/// The stored message with the answers of `answers` = (tool call id, approval id
/// override, approved, reason) applied the way `addToolApprovalResponse` does.
fn answered(assistant: &Value, answers: &[(&str, Option<&str>, bool, Option<&str>)]) -> Value {
    let mut m = assistant.clone();
    for part in m["parts"].as_array_mut().unwrap() {
        let Some(&(_, id, approved, reason)) = answers.iter().find(|a| part["toolCallId"] == a.0) else {
            continue;
        };
        part["state"] = json!("approval-responded");
        if let Some(id) = id {
            part["approval"]["id"] = json!(id);
        }
        part["approval"]["approved"] = json!(approved);
        if let Some(reason) = reason {
            part["approval"]["reason"] = json!(reason);
        }
    }
    m
}

fn part<'a>(message: &'a Value, call: &str) -> &'a Value {
    message["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["toolCallId"] == call)
        .unwrap_or_else(|| panic!("no part for {call}: {message}"))
}

async fn refused(addr: std::net::SocketAddr, body: &Value, why: &str) {
    let resp = post_chat(addr, body).await;
    assert_eq!(resp.status, 400, "{why}");
    let err = resp.json().await;
    assert_eq!(err["error"]["code"], "invalid_approval", "{err}");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains(why), "{message} / {why}");
}

#[tokio::test]
async fn two_wipes_in_one_step_wait_for_approval_one_approved_one_denied_forgeries_refused() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&["examples"]), |_| {}).await;
    // One step: two hub_calls of examples.wipe (each asks) and one of examples.echo
    // (read-only: runs at once).
    upstream.push(tool_step(
        Some("Wiping."),
        &[
            ("call_w1", "hub_call", wipe(json!({"scope": "cache"}))),
            ("call_w2", "hub_call", wipe(json!({"scope": "everything"}))),
            (
                "call_e",
                "hub_call",
                call_args(json!([{ "tool": "examples.echo", "input": {"text": "hi"} }])),
            ),
        ],
    ));
    let chat = "chat-approve";
    let first = chunks(
        post_chat(
            hub.addr,
            &submit(chat, vec![user("u1", "Wipe the cache and everything.")]),
        )
        .await,
    )
    .await;
    let t = types(&first);
    let requests: Vec<(String, String, String)> = first
        .iter()
        .filter_map(|c| match c {
            UiChunk::ToolApprovalRequest {
                approval_id,
                tool_call_id,
                reason,
            } => Some((
                approval_id.clone(),
                tool_call_id.clone(),
                reason.clone().unwrap_or_default(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        requests.len(),
        2,
        "one approval request per asking tool call: {t:?}"
    );
    for (id, call, reason) in &requests {
        assert!(id.starts_with("apr_"), "{id}");
        assert!(reason.contains("examples.wipe is destructive"), "{reason}");
        assert!(reason.contains("approvals.destructive"), "{reason}");
        // Each request follows its call's complete input.
        let input_at = first
            .iter()
            .position(
                |c| matches!(c, UiChunk::ToolInputAvailable { tool_call_id, .. } if tool_call_id == call),
            )
            .unwrap();
        let request_at = first
            .iter()
            .position(
                |c| matches!(c, UiChunk::ToolApprovalRequest { tool_call_id, .. } if tool_call_id == call),
            )
            .unwrap();
        assert!(input_at < request_at, "{t:?}");
    }
    assert_eq!(
        requests.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(),
        ["call_w1", "call_w2"]
    );
    // The echo ran; neither wipe did; the turn paused with the AI SDK's finish reason.
    let ran: Vec<&str> = first
        .iter()
        .filter_map(|c| match c {
            UiChunk::ToolOutputAvailable { tool_call_id, .. }
            | UiChunk::ToolOutputError { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ran, ["call_e"], "{t:?}");
    let Some(UiChunk::Finish {
        finish_reason,
        message_metadata,
    }) = first.last()
    else {
        panic!("the stream ends with finish: {t:?}")
    };
    assert_eq!(*finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        message_metadata.as_ref().unwrap()["finishReason"],
        "approval-requested"
    );
    assert_eq!(t.iter().filter(|x| *x == "finish-step").count(), 1, "{t:?}");

    // Stored: both wipes wait, with the ids the hub issued.
    let stored = session(hub.addr, chat).await;
    let messages = stored["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 2);
    let assistant = messages[1].clone();
    for (id, call, _) in &requests {
        let p = part(&assistant, call);
        assert_eq!(p["state"], "approval-requested", "{p}");
        assert_eq!(p["approval"]["id"], id.as_str(), "{p}");
        assert!(
            p["approval"]["requestReason"]
                .as_str()
                .unwrap()
                .contains("examples.wipe")
        );
    }
    assert_eq!(part(&assistant, "call_e")["state"], "output-available");

    let (id1, id2) = (requests[0].0.as_str(), requests[1].0.as_str());
    let body = |answers: &[(&str, Option<&str>, bool, Option<&str>)]| {
        let mut body = submit(chat, vec![messages[0].clone(), answered(&assistant, answers)]);
        body["messageId"] = assistant["id"].clone();
        body
    };
    // A modified client cannot approve itself: an id the hub never issued, the other
    // call's id, a changed input, and leaving one request unanswered are refused.
    refused(
        hub.addr,
        &body(&[
            ("call_w1", Some("apr_forged0000"), true, None),
            ("call_w2", None, false, None),
        ]),
        "was not issued by this hub",
    )
    .await;
    refused(
        hub.addr,
        &body(&[("call_w1", Some(id2), true, None), ("call_w2", None, false, None)]),
        "was issued for tool call \"call_w2\"",
    )
    .await;
    let mut changed = body(&[("call_w1", None, true, None), ("call_w2", None, false, None)]);
    for p in changed["messages"][1]["parts"].as_array_mut().unwrap() {
        if p["toolCallId"] == "call_w2" {
            p["input"]["calls"][0]["tool"] = json!("examples.echo");
        }
    }
    refused(hub.addr, &changed, "differs from the input").await;
    refused(hub.addr, &body(&[("call_w1", None, true, None)]), "still waits").await;
    // Nothing of that reached the store or the model.
    assert_eq!(session(hub.addr, chat).await["messages"][1], assistant);
    assert_eq!(upstream.requests().iter().filter(|r| r.path == CHAT).count(), 1);

    // The real answer: approve the first, deny the second with a reason.
    upstream.push(text_step("I wiped the cache; you declined wiping everything."));
    let answer = body(&[
        ("call_w1", None, true, None),
        ("call_w2", None, false, Some("not everything")),
    ]);
    let second = chunks(post_chat(hub.addr, &answer).await).await;
    let t = types(&second);
    let UiChunk::Start { message_id, .. } = &second[0] else {
        panic!("{t:?}")
    };
    assert_eq!(
        message_id.as_deref(),
        assistant["id"].as_str(),
        "the same assistant message"
    );
    // Both outcomes before the next model step.
    let next_step = t.iter().position(|x| x == "start-step").unwrap();
    let wiped = second[..next_step].iter().find_map(|c| match c {
        UiChunk::ToolOutputAvailable {
            tool_call_id, output, ..
        } if tool_call_id == "call_w1" => Some(output.clone()),
        _ => None,
    });
    let wiped = wiped.unwrap_or_else(|| panic!("call_w1 ran: {t:?}"));
    assert_eq!(wiped["results"][0]["ok"], true, "{wiped}");
    assert_eq!(wiped["results"][0]["result"]["wiped"], true, "{wiped}");
    assert!(
        second[..next_step]
            .iter()
            .any(|c| matches!(c, UiChunk::ToolOutputDenied { tool_call_id } if tool_call_id == "call_w2")),
        "{t:?}"
    );
    assert!(matches!(
        second.last(),
        Some(UiChunk::Finish {
            finish_reason: Some(FinishReason::Stop),
            ..
        })
    ));
    // The model was told: the wipe's result, and the denial with the user's reason.
    let sent: Vec<Value> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == CHAT)
        .map(|r| r.json())
        .collect();
    let tool_message = |call: &str| {
        sent[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == call)
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        tool_message("call_w1").contains("\"wiped\":true"),
        "{}",
        tool_message("call_w1")
    );
    let denial = tool_message("call_w2");
    assert!(denial.contains("denied"), "{denial}");
    assert!(denial.contains("not everything"), "{denial}");

    // The session stores both outcomes on the same assistant message.
    let stored = session(hub.addr, chat).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 2);
    let a = &stored["messages"][1];
    assert_eq!(a["id"], assistant["id"]);
    let w1 = part(a, "call_w1");
    assert_eq!(w1["state"], "output-available", "{w1}");
    assert_eq!(w1["approval"]["id"], id1);
    assert_eq!(w1["approval"]["approved"], true);
    let w2 = part(a, "call_w2");
    assert_eq!(w2["state"], "output-denied", "{w2}");
    assert_eq!(w2["approval"]["id"], id2);
    assert_eq!(w2["approval"]["approved"], false);
    assert_eq!(w2["approval"]["reason"], "not everything");
    assert!(
        a["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "text" && p["text"].as_str().unwrap().contains("you declined"))
    );

    // An answered approval cannot be replayed.
    refused(hub.addr, &answer, "answered already").await;

    // The audit record of the approved wipe names the approval and who gave it; the
    // denied one never ran.
    let calls = client::send(hub.addr, http::Method::GET, "/api/calls", None, &[])
        .await
        .json()
        .await;
    let wipes: Vec<&Value> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["tool"] == "examples.wipe" && c["approval"]["by"].as_str().is_some_and(|b| b.contains(id1))
        })
        .collect();
    assert_eq!(wipes.len(), 1, "{calls}");
    assert_eq!(wipes[0]["approval"]["decision"], "approved");
    assert_eq!(
        wipes[0]["approval"]["by"],
        format!("user of session {chat} (approval {id1})")
    );
    assert!(
        !calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["approval"]["by"].as_str().is_some_and(|b| b.contains(id2))),
        "the denied wipe did not run"
    );
    // Accounted on the same message, the continued request's step counting on.
    let steps: Vec<(Value, Value)> = accounting_of(hub.addr, chat)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "model_step")
        .map(|r| (r["message"].clone(), r["step"].clone()))
        .collect();
    assert_eq!(
        steps,
        [
            (assistant["id"].clone(), json!(0)),
            (assistant["id"].clone(), json!(1))
        ]
    );
}

#[tokio::test]
async fn a_new_message_while_an_approval_waits_tells_the_model_it_did_not_run() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&["examples"]), |_| {}).await;
    upstream.push(tool_step(None, &[("call_w", "hub_call", wipe(json!({})))]));
    let chat = "chat-approve-ignored";
    let first = chunks(post_chat(hub.addr, &submit(chat, vec![user("u1", "Wipe it.")])).await).await;
    assert!(
        first
            .iter()
            .any(|c| matches!(c, UiChunk::ToolApprovalRequest { .. }))
    );
    // The user writes instead of answering (an ai 5.x client cannot answer at all).
    upstream.push(text_step("Fine, I did not wipe anything."));
    let stored = session(hub.addr, chat).await;
    let mut history = stored["messages"].as_array().unwrap().clone();
    history.push(user("u2", "Never mind."));
    let second = chunks(post_chat(hub.addr, &submit(chat, history)).await).await;
    assert!(matches!(
        second.last(),
        Some(UiChunk::Finish {
            finish_reason: Some(FinishReason::Stop),
            ..
        })
    ));
    let sent = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == CHAT)
        .nth(1)
        .unwrap()
        .json();
    let tool = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        tool.contains("did not run") && tool.contains("approval"),
        "{tool}"
    );
    let stored = session(hub.addr, chat).await;
    assert_eq!(
        part(&stored["messages"][1], "call_w")["state"],
        "approval-requested"
    );
    // The wipe never ran.
    let calls = client::send(hub.addr, http::Method::GET, "/api/calls", None, &[])
        .await
        .json()
        .await;
    assert!(
        !calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["tool"] == "examples.wipe"
                && c["approval"]["by"].as_str().is_some_and(|b| b.contains(chat))),
        "{calls}"
    );
}

#[tokio::test]
async fn a_guarded_result_of_an_approved_call_is_accounted_on_the_step_that_asked() {
    let upstream = Upstream::start().await;
    let hub = hub_with(&upstream, plugins(&["examples"]), |c| {
        // 10 tokens of input: every tool result is replaced.
        c.providers[0].max_output_tokens = Some(1024);
        c.providers[0].model_settings =
            vec![wasmhub::toml::from_str("model = \"m1\"\ncontext_window = 1034\n").unwrap()];
    })
    .await;
    let echo = call_args(json!([{ "tool": "examples.echo", "input": {"text": "hi"} }]));
    upstream.push(tool_step(None, &[("call_e", "hub_call", echo)]));
    upstream.push(tool_step(None, &[("call_w", "hub_call", wipe(json!({})))]));
    let chat = "chat-approve-guard";
    chunks(post_chat(hub.addr, &submit(chat, vec![user("u1", "Echo, then wipe.")])).await).await;
    let stored = session(hub.addr, chat).await;
    let messages = stored["messages"].as_array().unwrap().clone();
    let assistant = messages[1].clone();
    assert_eq!(part(&assistant, "call_w")["state"], "approval-requested");
    upstream.push(text_step("Both results were too large."));
    let mut body = submit(
        chat,
        vec![
            messages[0].clone(),
            answered(&assistant, &[("call_w", None, true, None)]),
        ],
    );
    body["messageId"] = assistant["id"].clone();
    let second = chunks(post_chat(hub.addr, &body).await).await;
    assert!(
        second.iter().any(
            |c| matches!(c, UiChunk::ToolOutputError { tool_call_id, error_text }
            if tool_call_id == "call_w" && error_text.starts_with("result too large"))
        ),
        "{:?}",
        types(&second)
    );
    // The echo's result was guarded in step 0, the approved wipe's (run when the
    // turn went on) is put on step 1, which asked for it; the answer is step 2.
    let records = accounting_of(hub.addr, chat).await;
    let kinds: Vec<(&str, u64)> = records
        .iter()
        .filter(|r| r["kind"] != "tool_call")
        .map(|r| (r["kind"].as_str().unwrap(), r["step"].as_u64().unwrap()))
        .collect();
    let expected = [
        ("model_step", 0),
        ("context_guard", 0),
        ("model_step", 1),
        ("context_guard", 1),
        ("model_step", 2),
    ];
    assert_eq!(kinds, expected, "{records:?}");
    for guard in records.iter().filter(|r| r["kind"] == "context_guard") {
        assert_eq!(guard["message"], assistant["id"], "{guard}");
        assert_eq!(
            (&guard["limit_tokens"], &guard["remaining_tokens"]),
            (&json!(10), &json!(0)),
            "{guard}"
        );
        assert!(guard["projected_tokens"].as_u64().unwrap() > 10, "{guard}");
    }
}
