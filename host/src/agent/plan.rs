//! What a `useChat` request means for the stored conversation: the AI SDK's trigger
//! semantics applied to the session, which is the source of truth.
//!
//! The client always sends its whole history; the hub only believes it for a
//! session it does not have yet (then every message is validated). For a stored
//! session only the client's *last* message counts, located by id:
//!
//! | client's last message                     | meaning                                   |
//! |-------------------------------------------|-------------------------------------------|
//! | a user message the session lacks          | a new message: appended                   |
//! | a stored user message, `messageId` = it   | an edit (submit): replaced, later ones dropped |
//! | a stored user message otherwise           | regenerate / retry: later ones dropped    |
//! | the stored last assistant message         | a continuation: that message grows        |
//!
//! Regenerate drops the assistant message on the client before sending, so its last
//! message is the user message to answer again; the rule above covers it.

use super::message::{Part, Role, UiMessage};
use crate::ids::is_valid_client_id;

/// `trigger` of the DefaultChatTransport body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `submit-message`: a new or edited user message.
    SubmitMessage,
    /// `regenerate-message`: answer the last user message again.
    RegenerateMessage,
}

impl Trigger {
    /// Reads the wire value; `None` for anything else.
    pub fn parse(s: &str) -> Option<Trigger> {
        match s {
            "submit-message" => Some(Trigger::SubmitMessage),
            "regenerate-message" => Some(Trigger::RegenerateMessage),
            _ => None,
        }
    }
}

/// A chat request after the body was read.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The conversation (`id` of the body).
    pub session_id: String,
    /// The client's whole history, last message last.
    pub messages: Vec<UiMessage>,
    /// What the client asks for.
    pub trigger: Trigger,
    /// The edited message of a `submit-message` edit (`messageId`).
    pub message_id: Option<String>,
    /// The model to use; `None`: the agent's (else `[agent] model`).
    pub model: Option<String>,
    /// The agent profile the turn runs as; `None`: the default one (`[agent]`).
    pub agent: Option<String>,
    /// Sampling parameters the request sets, over the agent's.
    pub sampling: super::profiles::Sampling,
    /// The final answer must be JSON (satisfying a schema, if any).
    pub output: Option<super::structured::JsonOutput>,
    /// The call a sub-agent's turn runs inside (`hub::agent_calls`).
    pub parent: Option<crate::hub::agent_calls::ParentCall>,
    /// Who approves the calls the approval policy asks about.
    pub approvals: Approver,
    /// The chat surface that asked for the turn (`chat`, `openai`, `anthropic`,
    /// `agents`, `subagent`): the `surface` label of what its steps count on
    /// `/metrics`.
    pub surface: &'static str,
}

/// Who approves a turn's calls that the approval policy asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approver {
    /// The chat's user, through the AI SDK's tool approvals (`useChat`): the turn
    /// pauses with `tool-approval-request`.
    User,
    /// An operator, as for REST calls: the call waits in `GET /api/approvals` for at
    /// most `approvals.wait_secs`, then fails with `approval_required` (clients that
    /// cannot ask their user, such as the Anthropic Messages API).
    Operator,
}

/// The conversation a turn starts from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnPlan {
    /// Messages before the assistant message of this turn (ends with a user message,
    /// or is the history before a continued assistant message).
    pub history: Vec<UiMessage>,
    /// The assistant message this turn writes into: fresh, or the continued one.
    pub assistant: UiMessage,
    /// The assistant message existed before (its id is reused in `start`).
    pub continued: bool,
    /// Leading messages that are stored unchanged; saving rewrites from here.
    pub unchanged: usize,
}

/// Why a request cannot start a turn (HTTP 400 with this text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(
    /// The explanation, written for the client.
    pub String,
);

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlanError {}

fn err<T>(message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError(message.into()))
}

/// Applies `req` to the stored messages (`None`: the session does not exist).
pub(crate) fn plan_turn(
    stored: Option<Vec<UiMessage>>,
    req: &ChatRequest,
    new_id: impl FnOnce() -> String,
) -> Result<TurnPlan, PlanError> {
    let Some(last) = req.messages.last() else {
        return err("\"messages\" is empty: send at least the new user message");
    };
    let (mut base, mut unchanged) = match stored {
        Some(stored) => {
            let n = stored.len();
            (stored, n)
        }
        None => {
            validate_history(&req.messages)?;
            (req.messages[..req.messages.len() - 1].to_vec(), 0)
        }
    };
    let position = base.iter().position(|m| m.id == last.id);
    match (last.role, position) {
        (Role::User, None) => {
            validate_new_user_message(last)?;
            base.push(last.clone());
        }
        (Role::User, Some(i)) => {
            if base[i].role != Role::User {
                return err(format!(
                    "message {:?} is a {:?} message in the stored session",
                    last.id, base[i].role
                ));
            }
            let edit =
                req.trigger == Trigger::SubmitMessage && req.message_id.as_deref() == Some(last.id.as_str());
            if edit {
                validate_new_user_message(last)?;
                base[i] = last.clone();
                unchanged = unchanged.min(i);
            }
            base.truncate(i + 1);
            unchanged = unchanged.min(base.len());
        }
        (Role::Assistant, Some(i)) if req.trigger == Trigger::SubmitMessage => {
            base.truncate(i + 1);
            let assistant = base.pop().expect("position i exists");
            unchanged = unchanged.min(base.len());
            return Ok(TurnPlan {
                history: base,
                assistant,
                continued: true,
                unchanged,
            });
        }
        (Role::Assistant, _) if req.trigger == Trigger::RegenerateMessage => {
            return err("regenerate-message: the last message must be the user message to answer again");
        }
        (Role::Assistant, _) => {
            return err(format!(
                "the last message {:?} is an assistant message this session does not have",
                last.id
            ));
        }
        (Role::System, _) => return err("the last message must be a user message, not a system message"),
    }
    let assistant = UiMessage::new(new_id(), Role::Assistant);
    Ok(TurnPlan {
        history: base,
        assistant,
        continued: false,
        unchanged,
    })
}

/// The history a client sends to start a session: valid, unique ids and parts that
/// a client could have produced (tool parts only in assistant messages).
fn validate_history(messages: &[UiMessage]) -> Result<(), PlanError> {
    let mut seen = std::collections::HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        if !is_valid_client_id(&m.id) {
            return err(format!(
                "messages[{i}].id {:?} must be 1-128 characters of A-Z a-z 0-9 _ -",
                m.id
            ));
        }
        if !seen.insert(m.id.as_str()) {
            return err(format!("messages[{i}].id {:?} is used twice", m.id));
        }
        if m.role != Role::Assistant && m.parts.iter().any(|p| matches!(p, Part::Tool(_))) {
            return err(format!(
                "messages[{i}] is a {:?} message with a tool part",
                m.role
            ));
        }
    }
    Ok(())
}

fn validate_new_user_message(m: &UiMessage) -> Result<(), PlanError> {
    if !is_valid_client_id(&m.id) {
        return err(format!(
            "message id {:?} must be 1-128 characters of A-Z a-z 0-9 _ -",
            m.id
        ));
    }
    if m.parts
        .iter()
        .any(|p| matches!(p, Part::Tool(_) | Part::StepStart | Part::Reasoning { .. }))
    {
        return err("a user message may only have text, file and data parts");
    }
    if m.text().trim().is_empty() && !m.parts.iter().any(|p| matches!(p, Part::Other(_))) {
        return err("the user message is empty");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(id: &str, role: &str, text: &str) -> UiMessage {
        serde_json::from_value(json!({"id": id, "role": role, "parts": [{"type": "text", "text": text}]}))
            .unwrap()
    }

    fn req(messages: Vec<UiMessage>, trigger: Trigger, message_id: Option<&str>) -> ChatRequest {
        ChatRequest {
            approvals: Approver::User,
            session_id: "s".into(),
            messages,
            trigger,
            message_id: message_id.map(str::to_string),
            model: None,
            agent: None,
            surface: "chat",
            sampling: Default::default(),
            output: None,
            parent: None,
        }
    }

    fn ids(ms: &[UiMessage]) -> Vec<&str> {
        ms.iter().map(|m| m.id.as_str()).collect()
    }

    fn stored() -> Vec<UiMessage> {
        vec![
            m("u1", "user", "hi"),
            m("a1", "assistant", "hello"),
            m("u2", "user", "more"),
            m("a2", "assistant", "sure"),
        ]
    }

    #[test]
    fn a_new_session_takes_the_clients_history() {
        let p = plan_turn(
            None,
            &req(
                vec![
                    m("u1", "user", "hi"),
                    m("a1", "assistant", "yo"),
                    m("u2", "user", "?"),
                ],
                Trigger::SubmitMessage,
                None,
            ),
            || "new".into(),
        )
        .unwrap();
        assert_eq!(ids(&p.history), ["u1", "a1", "u2"]);
        assert_eq!(
            (p.assistant.id.as_str(), p.continued, p.unchanged),
            ("new", false, 0)
        );
    }

    #[test]
    fn submit_appends_to_the_stored_history_ignoring_the_clients_copy() {
        // The client's copy of a1 differs; the stored one wins.
        let client = vec![
            m("u1", "user", "hi"),
            m("a1", "assistant", "tampered"),
            m("u2", "user", "more"),
            m("a2", "assistant", "x"),
            m("u3", "user", "next"),
        ];
        let p = plan_turn(Some(stored()), &req(client, Trigger::SubmitMessage, None), || {
            "a3".into()
        })
        .unwrap();
        assert_eq!(ids(&p.history), ["u1", "a1", "u2", "a2", "u3"]);
        assert_eq!(p.history[1].text(), "hello");
        assert_eq!(p.unchanged, 4);
    }

    #[test]
    fn regenerate_drops_the_answer_after_the_last_user_message() {
        let client = vec![
            m("u1", "user", "hi"),
            m("a1", "assistant", "hello"),
            m("u2", "user", "more"),
        ];
        let p = plan_turn(
            Some(stored()),
            &req(client, Trigger::RegenerateMessage, Some("a2")),
            || "a2b".into(),
        )
        .unwrap();
        assert_eq!(ids(&p.history), ["u1", "a1", "u2"]);
        assert_eq!(p.unchanged, 3);
        assert!(!p.continued);
    }

    #[test]
    fn editing_a_user_message_replaces_it_and_drops_what_followed() {
        let client = vec![m("u1", "user", "hi (edited)")];
        let p = plan_turn(
            Some(stored()),
            &req(client, Trigger::SubmitMessage, Some("u1")),
            || "n".into(),
        )
        .unwrap();
        assert_eq!(ids(&p.history), ["u1"]);
        assert_eq!(p.history[0].text(), "hi (edited)");
        assert_eq!(p.unchanged, 0);
        // Without messageId the stored text stays.
        let p = plan_turn(
            Some(stored()),
            &req(vec![m("u1", "user", "other")], Trigger::SubmitMessage, None),
            || "n".into(),
        )
        .unwrap();
        assert_eq!(p.history[0].text(), "hi");
    }

    #[test]
    fn the_last_assistant_message_is_continued() {
        let p = plan_turn(
            Some(stored()),
            &req(stored(), Trigger::SubmitMessage, None),
            || unreachable!(),
        )
        .unwrap();
        assert!(p.continued);
        assert_eq!(p.assistant.id, "a2");
        assert_eq!(ids(&p.history), ["u1", "a1", "u2"]);
        assert_eq!(p.unchanged, 3);
    }

    #[test]
    fn invalid_requests_say_why() {
        let cases = vec![
            (None, vec![], Trigger::SubmitMessage, "empty"),
            (
                None,
                vec![m("bad id", "user", "x")],
                Trigger::SubmitMessage,
                "must be 1-128",
            ),
            (
                None,
                vec![m("u", "user", "x"), m("u", "user", "y")],
                Trigger::SubmitMessage,
                "used twice",
            ),
            (
                Some(stored()),
                vec![m("zz", "assistant", "x")],
                Trigger::SubmitMessage,
                "does not have",
            ),
            (
                Some(stored()),
                vec![m("a2", "assistant", "x")],
                Trigger::RegenerateMessage,
                "user message to answer",
            ),
            (
                Some(stored()),
                vec![m("a1", "user", "x")],
                Trigger::SubmitMessage,
                "Assistant message in the stored",
            ),
            (
                Some(stored()),
                vec![m("u9", "user", "  ")],
                Trigger::SubmitMessage,
                "empty",
            ),
            (
                Some(stored()),
                vec![m("s", "system", "x")],
                Trigger::SubmitMessage,
                "system",
            ),
        ];
        for (stored, messages, trigger, why) in cases {
            let e = plan_turn(stored, &req(messages, trigger, None), || "n".into()).unwrap_err();
            assert!(e.0.contains(why), "{e} / {why}");
        }
        let tool_in_user: UiMessage = serde_json::from_value(
            json!({"id": "u", "role": "user", "parts": [{"type": "tool-hub_call", "toolCallId": "c", "state": "input-available", "input": {}}]}),
        )
        .unwrap();
        assert!(
            plan_turn(
                None,
                &req(vec![tool_in_user], Trigger::SubmitMessage, None),
                || "n".into()
            )
            .is_err()
        );
    }
}
