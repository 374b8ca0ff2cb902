//! What the hub's client answers when a server asks it something (the
//! server→client requests of the handshake-era revisions, and the
//! `inputRequests` of a stateless `input_required` result), and the capabilities
//! it declares for that:
//!
//! - `ping`: an empty result;
//! - `roots/list`: the operator's `roots` of that server (none by default). The
//!   hub declares `roots` so servers that adapt to their client's roots see them;
//! - `sampling/createMessage`: refused with -32021 (a capability the hub does not
//!   declare): the hub never lends its providers' models, and their cost, to an
//!   external server;
//! - `elicitation/create`: refused with -32021: a call through the hub has no
//!   person on the line to ask (the hub's own approvals are how people decide
//!   about calls);
//! - anything else: -32601 naming the method.

use crate::config::McpRoot;
use crate::mcp_wire::jsonrpc::{self, MISSING_CLIENT_CAPABILITY, Request, RpcError};
use serde_json::{Value, json};

/// The hub's side of one server's connection.
#[derive(Clone, Debug, Default)]
pub(super) struct Asked {
    /// The server's name, for the texts.
    pub(super) server: String,
    /// Its configured `roots`.
    pub(super) roots: Vec<McpRoot>,
}

impl Asked {
    /// The hub's side for the server of `config`.
    pub(super) fn of(config: &crate::config::McpServerConfig) -> Asked {
        Asked {
            server: config.name.clone(),
            roots: config.roots.clone(),
        }
    }

    /// The client capabilities the hub declares.
    pub(super) fn capabilities() -> Value {
        json!({ "roots": { "listChanged": false } })
    }

    /// The answer to `request`, ready to send.
    pub(super) fn answer(&self, request: &Request) -> Value {
        match self.input(&request.method) {
            Ok(result) => jsonrpc::result_response(&request.id, result),
            Err(error) => jsonrpc::error_response(&request.id, &error),
        }
    }

    /// The result the hub gives a server asking `method` (a request of the
    /// handshake era, or an `inputRequests` entry of the stateless revision).
    pub(super) fn input(&self, method: &str) -> Result<Value, RpcError> {
        let server = &self.server;
        match method {
            "ping" => Ok(json!({})),
            "roots/list" => {
                let roots: Vec<Value> = self
                    .roots
                    .iter()
                    .map(|r| match &r.name {
                        Some(name) => json!({ "uri": r.uri, "name": name }),
                        None => json!({ "uri": r.uri }),
                    })
                    .collect();
                Ok(json!({ "roots": roots }))
            }
            "sampling/createMessage" => Err(RpcError::new(
                MISSING_CLIENT_CAPABILITY,
                format!(
                    "sampling/createMessage refused: wasmhub does not let MCP servers use its models (it declares no sampling capability); server {server} must do without sampling"
                ),
            )),
            "elicitation/create" => Err(RpcError::new(
                MISSING_CLIENT_CAPABILITY,
                format!(
                    "elicitation/create refused: a call through wasmhub has no person to ask (it declares no elicitation capability); server {server} must take what it needs as tool arguments"
                ),
            )),
            other => Err(RpcError::method_not_found(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(asked: &Asked, method: &str) -> Value {
        let request = Request {
            id: json!(7),
            method: method.into(),
            params: Some(json!({})),
        };
        asked.answer(&request)
    }

    #[test]
    fn roots_are_the_operators_and_sampling_and_elicitation_are_refused_by_name() {
        let none = Asked {
            server: "s".into(),
            roots: Vec::new(),
        };
        assert_eq!(ask(&none, "roots/list")["result"], json!({"roots": []}));
        let some = Asked {
            server: "s".into(),
            roots: vec![
                McpRoot {
                    uri: "file:///srv/data".into(),
                    name: Some("data".into()),
                },
                McpRoot {
                    uri: "file:///tmp".into(),
                    name: None,
                },
            ],
        };
        assert_eq!(
            ask(&some, "roots/list")["result"]["roots"],
            json!([{"uri": "file:///srv/data", "name": "data"}, {"uri": "file:///tmp"}])
        );
        assert_eq!(
            ask(&some, "ping"),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}})
        );
        for method in ["sampling/createMessage", "elicitation/create"] {
            let e = &ask(&some, method)["error"];
            assert_eq!(e["code"], MISSING_CLIENT_CAPABILITY, "{method}");
            let text = e["message"].as_str().unwrap();
            assert!(text.starts_with(&format!("{method} refused:")), "{text}");
            assert!(text.contains("server s"), "{text}");
        }
        let unknown = &ask(&some, "tasks/get")["error"];
        assert_eq!(unknown["code"], jsonrpc::METHOD_NOT_FOUND);
        assert_eq!(unknown["message"], "method not found: tasks/get");
        assert_eq!(Asked::capabilities(), json!({"roots": {"listChanged": false}}));
    }
}
