//! Human approval in the agent loop (ai 6.x/7.x `useChat` tool approvals).
//!
//! A model tool call whose operations the policy wants a person to approve
//! ([`Hub::approvals_needed`]; in practice a `hub_call` batch) is not invoked: the
//! loop issues an approval id, records it with the session ([`IssuedApproval`],
//! bound to the assistant message, the tool call and a digest of its input), sends
//! `tool-approval-request` and ends the turn with the part in `approval-requested`.
//! One approval per tool call: a batch of several asking operations is approved or
//! denied as a whole, the way the user sees it.
//!
//! The user's answer comes back as an ordinary continuation of that assistant
//! message, its part in `approval-responded`. [`apply_responses`] believes only
//! what the hub issued: the id must be one the hub recorded for this session, for
//! this very tool call, whose stored input is unchanged and equal to what the
//! client shows; then the stored part takes the answer, and the loop runs the
//! approved calls (with [`crate::hub::CallContext::approved_by`]) and reports the
//! denied ones to the model before it goes on.

use super::AgentError;
use super::message::{Part, ToolApproval, ToolState, UiMessage};
use super::store::{IssuedApproval, SessionStore};
use crate::hub::{Caller, Hub, MetaToolRequest};
use serde_json::Value;

/// Why a tool call needs the user's approval before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    /// The operations that asked, in batch order, each once.
    pub tools: Vec<String>,
    /// What the user is told (`tool-approval-request.reason`).
    pub reason: String,
}

/// Whether the model's call of meta-tool `name` with `input` needs an approval.
pub(crate) fn asks(hub: &Hub, caller: &Caller, name: &str, input: &Value) -> Option<Ask> {
    let Ok(MetaToolRequest::Call(args)) = MetaToolRequest::parse(name, input.clone()) else {
        return None;
    };
    let names: Vec<&str> = args.calls.iter().map(|c| c.tool.as_str()).collect();
    let mut tools = Vec::new();
    let mut reasons = Vec::new();
    for ask in hub.approvals_needed(caller, names).into_iter().flatten() {
        if tools.contains(&ask.tool) {
            continue;
        }
        let what = if ask.hints.is_empty() {
            "needs approval".to_string()
        } else {
            format!("is {}", ask.hints.join(", ").replace('_', "-"))
        };
        let key = ask.policy.as_deref().unwrap_or("approvals");
        reasons.push(format!(
            "{} {what} ({key} = \"ask\"): {}",
            ask.tool,
            ask.description.trim()
        ));
        tools.push(ask.tool);
    }
    (!tools.is_empty()).then(|| Ask {
        tools,
        reason: reasons.join("; "),
    })
}

/// SHA-256 (hex) of an input as stored.
pub(crate) fn digest(input: &Value) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, input.to_string().as_bytes());
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The record of an approval issued now for `tool_call_id` of message `message_id`.
pub(crate) fn issue(message_id: &str, tool_call_id: &str, input: &Value, ask: &Ask) -> IssuedApproval {
    IssuedApproval {
        id: crate::ids::new_id("apr"),
        message_id: message_id.to_string(),
        tool_call_id: tool_call_id.to_string(),
        input_sha256: digest(input),
        tools: ask.tools.clone(),
        issued_ms: crate::clock::now_ms(),
    }
}

fn rejected(message: String) -> AgentError {
    AgentError::Approval(message)
}

/// Applies the approval answers of `client` (the client's copy of the continued
/// assistant message) to `assistant` (the stored one), checking each against what
/// the hub issued in `session_id`. Every approval the stored message waits for
/// must be answered; a message without any is left alone.
pub(crate) async fn apply_responses(
    sessions: &dyn SessionStore,
    session_id: &str,
    assistant: &mut UiMessage,
    client: &UiMessage,
) -> Result<(), AgentError> {
    for part in &client.parts {
        let Part::Tool(answer) = part else { continue };
        if answer.state != ToolState::ApprovalResponded {
            continue;
        }
        let call = &answer.tool_call_id;
        let Some(ToolApproval {
            id,
            approved: Some(approved),
            reason,
            ..
        }) = answer.approval.as_deref()
        else {
            return Err(rejected(format!(
                "tool call {call:?} is \"approval-responded\" without \"approval\": {{\"id\", \"approved\"}}"
            )));
        };
        let Some(issued) = sessions.issued_approval(session_id, id).await? else {
            return Err(rejected(format!(
                "approval {id:?} was not issued by this hub in session {session_id:?}: only the hub asks for \
                 approvals, and only the ids it sent in tool-approval-request can answer them"
            )));
        };
        if issued.tool_call_id != *call || issued.message_id != assistant.id {
            return Err(rejected(format!(
                "approval {id:?} was issued for tool call {:?} of message {:?}, not for tool call {call:?} of \
                 message {:?}",
                issued.tool_call_id, issued.message_id, assistant.id
            )));
        }
        let stored = assistant.parts.iter_mut().find_map(|p| match p {
            Part::Tool(t) if t.tool_call_id == *call => Some(t),
            _ => None,
        });
        let Some(stored) = stored.filter(|t| {
            t.state == ToolState::ApprovalRequested && t.approval.as_ref().is_some_and(|a| a.id == *id)
        }) else {
            return Err(rejected(format!(
                "tool call {call:?} does not wait for approval {id:?} (it was answered already)"
            )));
        };
        let input = stored.input.clone().unwrap_or(Value::Null);
        if digest(&input) != issued.input_sha256 {
            return Err(rejected(format!(
                "the stored input of tool call {call:?} is not the one approval {id:?} was asked for"
            )));
        }
        if !same_json(answer.input.as_ref().unwrap_or(&Value::Null), &input) {
            return Err(rejected(format!(
                "the input of tool call {call:?} differs from the input put up for approval {id:?}: an \
                 approval is for exactly the input the user was shown"
            )));
        }
        stored.state = ToolState::ApprovalResponded;
        if let Some(a) = stored.approval.as_mut() {
            a.approved = Some(*approved);
            a.reason = reason.clone().filter(|r| !r.is_empty());
        }
    }
    let waiting = assistant.parts.iter().find_map(|p| match p {
        Part::Tool(t) if t.state == ToolState::ApprovalRequested => Some(t),
        _ => None,
    });
    if let Some(t) = waiting {
        let id = t.approval.as_ref().map(|a| a.id.as_str()).unwrap_or("");
        return Err(rejected(format!(
            "tool call {:?} still waits for an answer to approval {id:?}: answer every approval request of \
             message {:?} (addToolApprovalResponse) before continuing it",
            t.tool_call_id, assistant.id
        )));
    }
    Ok(())
}

/// JSON equality as a JavaScript client sees it: numbers by value (`1.0` is `1`).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::ToolPart;
    use crate::storage::Storage;
    use serde_json::json;
    use std::sync::Arc;

    const SESSION: &str = "s1";

    fn pending(call: &str, id: &str, input: Value) -> Part {
        let mut t = ToolPart::new(call.into(), "hub_call".into());
        t.state = ToolState::ApprovalRequested;
        t.input = Some(input);
        t.approval = Some(Box::new(ToolApproval::requested(
            id.into(),
            Some("x.wipe is destructive".into()),
        )));
        Part::Tool(t)
    }

    fn answer(call: &str, id: &str, input: Value, approved: bool, reason: Option<&str>) -> Part {
        let mut t = ToolPart::new(call.into(), "hub_call".into());
        t.state = ToolState::ApprovalResponded;
        t.input = Some(input);
        let mut a = ToolApproval::requested(id.into(), None);
        a.approved = Some(approved);
        a.reason = reason.map(str::to_string);
        t.approval = Some(Box::new(a));
        Part::Tool(t)
    }

    fn message(parts: Vec<Part>) -> UiMessage {
        let mut m = UiMessage::new("a1".into(), crate::agent::Role::Assistant);
        m.parts = parts;
        m
    }

    /// A store where the hub issued `apr_1` for c1 and `apr_2` for c2 of a1.
    async fn issued(input: &Value) -> Arc<dyn SessionStore> {
        let s = crate::agent::store::open_sled(&Storage::temporary().unwrap()).unwrap();
        let ask = Ask {
            tools: vec!["x.wipe".into()],
            reason: String::new(),
        };
        let mut one = issue("a1", "c1", input, &ask);
        one.id = "apr_1".into();
        let mut two = issue("a1", "c2", input, &ask);
        two.id = "apr_2".into();
        s.issue_approvals(SESSION, &[one, two]).await.unwrap();
        s
    }

    #[tokio::test]
    async fn answers_to_issued_approvals_are_applied() {
        let input = json!({"calls": [{"tool": "x.wipe", "input": {"n": 1.0}}]});
        let s = issued(&input).await;
        let mut stored = message(vec![
            pending("c1", "apr_1", input.clone()),
            pending("c2", "apr_2", input.clone()),
        ]);
        let client_input = json!({"calls": [{"tool": "x.wipe", "input": {"n": 1}}]});
        let client = message(vec![
            answer("c1", "apr_1", client_input.clone(), true, None),
            answer("c2", "apr_2", client_input, false, Some("not now")),
        ]);
        apply_responses(&*s, SESSION, &mut stored, &client).await.unwrap();
        let states: Vec<_> = stored
            .parts
            .iter()
            .map(|p| match p {
                Part::Tool(t) => (
                    t.state,
                    t.approval.as_ref().unwrap().approved,
                    t.approval.as_ref().unwrap().reason.clone(),
                ),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            states,
            [
                (ToolState::ApprovalResponded, Some(true), None),
                (ToolState::ApprovalResponded, Some(false), Some("not now".into()))
            ]
        );
    }

    #[tokio::test]
    async fn forged_swapped_changed_repeated_and_missing_answers_are_refused() {
        let input = json!({"calls": [{"tool": "x.wipe"}]});
        let other = json!({"calls": [{"tool": "x.wipe", "input": {"all": true}}]});
        let s = issued(&input).await;
        let stored = || {
            message(vec![
                pending("c1", "apr_1", input.clone()),
                pending("c2", "apr_2", input.clone()),
            ])
        };
        let both = |first: Part| message(vec![first, answer("c2", "apr_2", input.clone(), true, None)]);
        for (client, why) in [
            (
                both(answer("c1", "apr_forged", input.clone(), true, None)),
                "was not issued",
            ),
            (
                both(answer("c1", "apr_2", input.clone(), true, None)),
                "issued for tool call \"c2\"",
            ),
            (
                both(answer("c1", "apr_1", other.clone(), true, None)),
                "differs from the input",
            ),
            (
                message(vec![answer("c1", "apr_1", input.clone(), true, None)]),
                "still waits",
            ),
            (message(vec![]), "still waits"),
        ] {
            let err = apply_responses(&*s, SESSION, &mut stored(), &client)
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{err} / {why}");
        }
        // Another session's store never issued these ids.
        let err = apply_responses(
            &*s,
            "s2",
            &mut stored(),
            &both(answer("c1", "apr_1", input.clone(), true, None)),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("was not issued"), "{err}");
        // An answered approval cannot be answered again.
        let mut answered = stored();
        let client = both(answer("c1", "apr_1", input.clone(), true, None));
        apply_responses(&*s, SESSION, &mut answered, &client)
            .await
            .unwrap();
        let err = apply_responses(&*s, SESSION, &mut answered, &client)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("answered already"), "{err}");
        // A stored input that changed after the approval was asked for is refused too.
        let mut tampered = message(vec![
            pending("c1", "apr_1", other.clone()),
            pending("c2", "apr_2", input.clone()),
        ]);
        let err = apply_responses(
            &*s,
            SESSION,
            &mut tampered,
            &both(answer("c1", "apr_1", other, true, None)),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("is not the one"), "{err}");
    }

    #[tokio::test]
    async fn a_message_without_approvals_is_a_plain_continuation() {
        let s = issued(&json!({})).await;
        let mut stored = message(vec![Part::StepStart]);
        apply_responses(&*s, SESSION, &mut stored, &message(vec![]))
            .await
            .unwrap();
        assert_eq!(stored.parts, vec![Part::StepStart]);
    }
}
