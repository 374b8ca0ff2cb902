//! Reading the `DefaultChatTransport` request body of `POST /api/chat`:
//! `{ id, messages, trigger, messageId?, model?, agent?, ...extra }`.
//!
//! Unknown extra keys are accepted (the transport merges the application's `body`
//! option into the request); the known ones are checked with messages that name the
//! field, because the client shows the response text as its error.

use crate::agent::{ChatRequest, Trigger, UiMessage};
use crate::ids::is_valid_client_id;
use serde_json::Value;

/// Why a request body was refused; the message names the field.
#[derive(Debug)]
pub(crate) enum ChatRequestError {
    Json(serde_json::Error),
    NotAnObject,
    MissingId,
    IdNotAString,
    /// The chat id has characters (or a length) ids may not have.
    InvalidId(String),
    TriggerNotAString,
    UnknownTrigger(String),
    InvalidMessageId,
    InvalidModel,
    /// `agent` is not an agent name.
    InvalidAgent,
    MissingMessages,
    MessagesNotAnArray,
    /// `messages[index]` is not a UI message.
    InvalidMessage {
        index: usize,
        source: serde_json::Error,
    },
}

impl std::fmt::Display for ChatRequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChatRequestError::Json(e) => write!(f, "request body is not valid JSON: {e}"),
            ChatRequestError::NotAnObject => f.write_str("the request body must be a JSON object"),
            ChatRequestError::MissingId => f.write_str("\"id\" (the chat id) is required"),
            ChatRequestError::IdNotAString => f.write_str("\"id\" must be a string (the chat id)"),
            ChatRequestError::InvalidId(id) => {
                write!(f, "\"id\" {id:?} must be 1-128 characters of A-Z a-z 0-9 _ -")
            }
            ChatRequestError::TriggerNotAString => f.write_str("\"trigger\" must be a string"),
            ChatRequestError::UnknownTrigger(t) => write!(
                f,
                "\"trigger\" {t:?} must be \"submit-message\" or \"regenerate-message\""
            ),
            ChatRequestError::InvalidMessageId => f.write_str("\"messageId\" must be a message id string"),
            ChatRequestError::InvalidModel => f.write_str("\"model\" must be a non-empty string"),
            ChatRequestError::InvalidAgent => write!(
                f,
                "\"agent\" must be an agent's name ({})",
                crate::config::AGENT_NAME_RULE
            ),
            ChatRequestError::MissingMessages => f.write_str("\"messages\" is required"),
            ChatRequestError::MessagesNotAnArray => {
                f.write_str("\"messages\" must be an array of UI messages")
            }
            ChatRequestError::InvalidMessage { index, source } => write!(f, "messages[{index}]: {source}"),
        }
    }
}

impl std::error::Error for ChatRequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ChatRequestError::Json(e) | ChatRequestError::InvalidMessage { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// Parses and checks a request body.
pub(crate) fn parse(body: &[u8]) -> Result<ChatRequest, ChatRequestError> {
    let value: Value = serde_json::from_slice(body).map_err(ChatRequestError::Json)?;
    let Value::Object(mut obj) = value else {
        return Err(ChatRequestError::NotAnObject);
    };
    let session_id = match obj.remove("id") {
        Some(Value::String(id)) if is_valid_client_id(&id) => id,
        Some(Value::String(id)) => return Err(ChatRequestError::InvalidId(id)),
        Some(_) => return Err(ChatRequestError::IdNotAString),
        None => return Err(ChatRequestError::MissingId),
    };
    let trigger = match obj.remove("trigger") {
        Some(Value::String(t)) => Trigger::parse(&t).ok_or(ChatRequestError::UnknownTrigger(t))?,
        // Older transports send no trigger: a plain submit.
        None | Some(Value::Null) => Trigger::SubmitMessage,
        Some(_) => return Err(ChatRequestError::TriggerNotAString),
    };
    let message_id = match obj.remove("messageId") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if is_valid_client_id(&id) => Some(id),
        Some(_) => return Err(ChatRequestError::InvalidMessageId),
    };
    let model = match obj.remove("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if !m.trim().is_empty() => Some(m),
        Some(_) => return Err(ChatRequestError::InvalidModel),
    };
    let agent = match obj.remove("agent") {
        None | Some(Value::Null) => None,
        Some(Value::String(a)) if crate::config::is_agent_name(&a) => Some(a),
        Some(_) => return Err(ChatRequestError::InvalidAgent),
    };
    let messages = match obj.remove("messages") {
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(index, m)| {
                serde_json::from_value::<UiMessage>(m)
                    .map_err(|source| ChatRequestError::InvalidMessage { index, source })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(ChatRequestError::MessagesNotAnArray),
        None => return Err(ChatRequestError::MissingMessages),
    };
    Ok(ChatRequest {
        approvals: crate::agent::Approver::User,
        session_id,
        messages,
        trigger,
        message_id,
        model,
        agent,
        sampling: Default::default(),
        output: None,
        parent: None,
        surface: "chat",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transport_body_parses_with_extra_keys() {
        let r = parse(
            br#"{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],
                "trigger":"regenerate-message","messageId":"a1","model":"p/m","temperature":0,"agent":"writer"}"#,
        )
        .unwrap();
        assert_eq!(
            (
                r.session_id.as_str(),
                r.trigger,
                r.message_id.as_deref(),
                r.model.as_deref()
            ),
            ("c1", Trigger::RegenerateMessage, Some("a1"), Some("p/m"))
        );
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.agent.as_deref(), Some("writer"));
    }

    #[test]
    fn bad_fields_are_named() {
        for (body, why) in [
            (&br#"[1]"#[..], "JSON object"),
            (br#"{"messages":[]}"#, "\"id\""),
            (br#"{"id":"../x","messages":[]}"#, "1-128"),
            (br#"{"id":"c","messages":[],"trigger":"go"}"#, "trigger"),
            (br#"{"id":"c"}"#, "messages"),
            (
                br#"{"id":"c","messages":[{"id":"u","role":"user"}]}"#,
                "messages[0]",
            ),
            (br#"{"id":"c","messages":[],"model":""}"#, "model"),
            (br#"{"id":"c","messages":[],"messageId":5}"#, "messageId"),
            (
                br#"{"id":"c","messages":[],"agent":"No Such"}"#,
                "\"agent\" must be",
            ),
            (b"{", "not valid JSON"),
        ] {
            let e = parse(body).unwrap_err().to_string();
            assert!(e.contains(why), "{e} / {why}");
        }
    }
}
