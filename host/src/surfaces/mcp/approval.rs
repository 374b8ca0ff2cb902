//! Asking the MCP client's user to approve the operations of a `hub_call` the
//! approval policy asks about, with `elicitation/create`: a server-to-client
//! request in 2025-11-25 (sent only to clients that declared the `elicitation`
//! capability), an `input_required` result in 2026-07-28 (only for clients whose
//! `_meta` client capabilities declare `elicitation`).
//!
//! One question covers every asking operation of the call: the message names each
//! (its description, hints, the policy key that asks, its input) and the form has
//! one required boolean, `approve`. `accept` with `approve: true` runs them with
//! the answer's author as `approved_by`; anything else (`decline`, `cancel`,
//! `accept` with `approve: false`) fails them with `approval_denied`; no answer in
//! time leaves them to the policy (`approval_required`, or an operator's decision
//! when `approvals.wait_secs` is set).

use super::backend::{ApprovalNeed, BoxFuture, ClientApproval};
use serde_json::{Value, json};
use std::sync::Arc;

/// The key of the one input request of an `input_required` answer.
pub(crate) const INPUT_KEY: &str = "approval";

/// The form field the user sets.
const FIELD: &str = "approve";

/// The longest input shown per operation, in characters.
const INPUT_SHOWN: usize = 2000;

/// Sends one `elicitation/create` request to the client and waits for its
/// response: `Ok(result)`, `Err(error)` for a JSON-RPC error answer; `None` when
/// it cannot be sent or the connection went away.
pub(crate) type SendRequest =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Option<Result<Value, Value>>> + Send + Sync>;

/// How a transport of the 2025-11-25 era reaches a client that declared `elicitation`.
#[derive(Clone)]
pub(crate) struct Elicitor {
    /// Who answers, for the audit record: `MCP client <name> of session <id>`.
    pub by: String,
    pub send: SendRequest,
}

/// What a client declared at `initialize` (or in `_meta`) that matters here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct McpClient {
    /// `clientInfo.name`, or `unknown`.
    pub name: String,
    /// It declared the `elicitation` capability (form mode).
    pub elicitation: bool,
}

impl McpClient {
    /// From `clientInfo` and `capabilities` objects (either may be absent).
    pub(crate) fn read(info: Option<&Value>, capabilities: Option<&Value>) -> McpClient {
        let name = info
            .and_then(|i| i.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or("unknown");
        let elicitation =
            capabilities
                .and_then(|c| c.get("elicitation"))
                .is_some_and(|e| match e.get("form") {
                    // `{}` means form mode; `{url: {}}` alone means URL mode only.
                    Some(form) => form.is_object(),
                    None => e.is_object() && e.get("url").is_none(),
                });
        McpClient {
            name: name.chars().take(100).collect(),
            elicitation,
        }
    }
}

/// The `elicitation/create` params asking about `needs`.
pub(crate) fn elicitation_params(needs: &[ApprovalNeed]) -> Value {
    let mut message = String::from(if needs.len() == 1 {
        "The hub asks your approval before it runs this operation:\n"
    } else {
        "The hub asks your approval before it runs these operations:\n"
    });
    for need in needs {
        message.push_str(&format!("\n- {}: {}", need.tool, need.description.trim()));
        if !need.hints.is_empty() {
            message.push_str(&format!("\n  hints: {}", need.hints.join(", ")));
        }
        if let Some(policy) = &need.policy {
            message.push_str(&format!("\n  asked by the policy key {policy}"));
        }
        let mut input = need.input.to_string();
        if input.chars().count() > INPUT_SHOWN {
            input = input.chars().take(INPUT_SHOWN).collect::<String>() + "…";
        }
        message.push_str(&format!("\n  input: {input}"));
    }
    message
        .push_str("\n\nApprove to run them; decline to refuse them (the rest of the call runs either way).");
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                FIELD: {
                    "type": "boolean",
                    "title": "Approve",
                    "description": "Run the operations listed above",
                    "default": false,
                }
            },
            "required": [FIELD],
        },
    })
}

/// Reads a client's `ElicitResult` (`{action, content?}`) as an approval by `by`;
/// `None` when it is not one (then nobody decided).
pub(crate) fn read_answer(result: &Value, by: &str) -> Option<ClientApproval> {
    let approved = match result.get("action")?.as_str()? {
        "accept" => result.get("content").and_then(|c| c.get(FIELD)) == Some(&Value::Bool(true)),
        "decline" | "cancel" => false,
        _ => return None,
    };
    Some(ClientApproval {
        approved,
        by: by.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_approvals() {
        let yes = read_answer(&json!({"action": "accept", "content": {"approve": true}}), "me").unwrap();
        assert!(yes.approved && yes.by == "me");
        for no in [
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "accept"}),
            json!({"action": "accept", "content": {"approve": "true"}}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
        ] {
            assert!(!read_answer(&no, "me").unwrap().approved, "{no}");
        }
        assert_eq!(read_answer(&json!({"action": "maybe"}), "me"), None);
        assert_eq!(read_answer(&json!({}), "me"), None);
    }

    #[test]
    fn the_question_names_each_operation_and_asks_one_boolean() {
        let need = |index, tool: &str| ApprovalNeed {
            index,
            tool: tool.into(),
            description: "Deletes things.".into(),
            input: json!({"all": true}),
            hints: vec!["destructive"],
            policy: Some("approvals.destructive".into()),
        };
        let p = elicitation_params(&[need(0, "examples.wipe"), need(2, "files.rm")]);
        let message = p["message"].as_str().unwrap();
        for part in [
            "examples.wipe",
            "files.rm",
            "destructive",
            "approvals.destructive",
            "{\"all\":true}",
        ] {
            assert!(message.contains(part), "{part}: {message}");
        }
        assert_eq!(p["requestedSchema"]["properties"]["approve"]["type"], "boolean");
        assert_eq!(p["requestedSchema"]["required"], json!(["approve"]));
    }

    #[test]
    fn capabilities_declare_form_elicitation() {
        let read = |caps: Value| McpClient::read(Some(&json!({"name": "c"})), Some(&caps)).elicitation;
        assert!(read(json!({"elicitation": {}})));
        assert!(read(json!({"elicitation": {"form": {}}})));
        assert!(read(json!({"elicitation": {"form": {}, "url": {}}})));
        assert!(!read(json!({"elicitation": {"url": {}}})));
        assert!(!read(json!({"sampling": {}})));
        assert_eq!(McpClient::read(None, None).name, "unknown");
    }
}
