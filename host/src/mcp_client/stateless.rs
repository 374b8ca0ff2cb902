//! The client side of the stateless revision (2026-07-28): whether a server
//! speaks it, and what every request then carries.
//!
//! **Which revision.** Every start first sends `server/discover` as a 2026-07-28
//! request (the policy of the MCP SDKs' `auto` mode): a result whose
//! `supportedVersions` names 2026-07-28 makes the connection stateless (no
//! `initialize`, no session); any JSON-RPC error, an HTTP refusal, or a result
//! without that version means an older server, and the start goes on with the
//! `initialize` handshake (2025-11-25 and older). A stdio server that ends the
//! connection on the probe (some older servers exit on a request before
//! `initialize`) is started again without probing (`supervisor`).
//!
//! **Each request** then carries `params._meta` with the protocol version, the
//! hub's client capabilities and client info; over HTTP the routing headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) are derived from that body
//! ([`routing_headers`]). A `tools/call` answered `resultType: "input_required"`
//! is retried with the hub's answers to its `inputRequests` (`roots/list` from
//! the operator's roots; sampling and elicitation refused, which fails the call
//! with that reason; see `asked`) and the echoed `requestState`, at most
//! [`MAX_INPUT_ROUNDS`] times.
//!
//! **List changes** come on a `subscriptions/listen` stream ([`listen`]): a
//! request the server answers only when it ends the stream, whose
//! `notifications/tools/list_changed` make the hub list the tools again. A
//! stream the server ends is opened again after `restart_min_ms` and the tools
//! relisted (events are not replayed); a server without the method (an error
//! answer) is not asked again.

use super::asked::Asked;
use super::connection::Connection;
use super::error::RequestError;
use crate::mcp_wire::jsonrpc::UNSUPPORTED_PROTOCOL_VERSION;
use crate::mcp_wire::versions::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO, STATELESS_VERSION,
};
use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

/// Most `input_required` answers one call may get before it fails.
pub(super) const MAX_INPUT_ROUNDS: usize = 4;

/// The `_meta` every stateless request carries.
pub(super) fn meta() -> Value {
    json!({
        META_PROTOCOL_VERSION: STATELESS_VERSION,
        META_CLIENT_CAPABILITIES: Asked::capabilities(),
        META_CLIENT_INFO: { "name": "wasmhub", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// What `server/discover` said about a stateless server.
#[derive(Debug, Default)]
pub(super) struct Discovered {
    pub instructions: Option<String>,
    /// `capabilities.tools` is present.
    pub tools: bool,
    /// `serverInfo.name`, for the log.
    pub server_name: Option<String>,
}

/// The probe's verdict.
#[derive(Debug)]
pub(super) enum Era {
    /// The server speaks 2026-07-28.
    Stateless(Discovered),
    /// Go on with `initialize`; why, for the log.
    Handshake(String),
}

/// Sends `server/discover` and decides the revision. `Err` only when the
/// connection ended or the server is not reading (no verdict).
pub(super) async fn probe(conn: &Connection) -> Result<Era, RequestError> {
    let params = json!({ "_meta": meta() });
    match conn.request("server/discover", params, false).await {
        Ok(result) => Ok(verdict(&result)),
        Err(RequestError::Rpc { code, message }) => {
            let why = if code == UNSUPPORTED_PROTOCOL_VERSION {
                format!("it does not serve {STATELESS_VERSION} ({message})")
            } else {
                format!("server/discover answered error {code}")
            };
            Ok(Era::Handshake(why))
        }
        Err(RequestError::Http(why)) => Ok(Era::Handshake(format!("server/discover: {why}"))),
        Err(e) => Err(e),
    }
}

/// The verdict on a `server/discover` result.
fn verdict(result: &Value) -> Era {
    let supported = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(STATELESS_VERSION)));
    if !supported {
        return Era::Handshake(format!("its server/discover does not list {STATELESS_VERSION}"));
    }
    let server_name = result
        .pointer("/_meta")
        .and_then(|m| m.get(META_SERVER_INFO))
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .map(super::connection::bounded);
    Era::Stateless(Discovered {
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
        tools: result.pointer("/capabilities/tools").is_some(),
        server_name,
    })
}

/// `params` with the stateless `_meta` merged in (keys already there kept).
pub(super) fn with_meta(params: Value, meta: &Value) -> Value {
    let mut params = match params {
        Value::Object(p) => p,
        _ => Map::new(),
    };
    let slot = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let (Value::Object(slot), Value::Object(meta)) = (slot, meta) {
        for (k, v) in meta {
            slot.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Value::Object(params)
}

/// The routing headers of a stateless request `message` (none for a message
/// without the stateless `_meta`): `MCP-Protocol-Version`, `Mcp-Method`, and
/// `Mcp-Name` for `tools/call`, `prompts/get` (`name`) and `resources/read`
/// (`uri`), base64-encoded (`=?base64?…?=`) when not plain visible ASCII.
pub(super) fn routing_headers(message: &Value) -> Vec<(HeaderName, HeaderValue)> {
    let params = message.get("params");
    let Some(version) = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let mut headers = Vec::new();
    let mut add = |name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.push((HeaderName::from_static(name), v));
        }
    };
    add("mcp-protocol-version", version);
    add("mcp-method", method);
    let key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(value) = key.and_then(|k| params?.get(k)?.as_str()) {
        add("mcp-name", &header_text(value));
    }
    headers
}

/// `value` as a header value: itself when plain visible ASCII without
/// surrounding spaces, else `=?base64?…?=`.
fn header_text(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !value.starts_with("=?base64?");
    if plain {
        value.to_string()
    } else {
        format!("=?base64?{}?=", crate::base64::encode(value.as_bytes()))
    }
}

/// The hub's answers to an `input_required` result's `inputRequests`, and its
/// `requestState`, as the params to add to the retry; `Err` with the reason the
/// hub cannot answer.
pub(super) fn input_responses(asked: &Asked, result: &Value) -> Result<Map<String, Value>, String> {
    let Some(requests) = result.get("inputRequests").and_then(Value::as_object) else {
        return Err("its input_required answer has no inputRequests object".into());
    };
    let mut responses = Map::new();
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let answer = asked
            .input(method)
            .map_err(|e| format!("it asked for input the hub does not give: {}", e.message))?;
        responses.insert(key.clone(), answer);
    }
    let mut retry = Map::new();
    retry.insert("inputResponses".into(), Value::Object(responses));
    if let Some(state) = result.get("requestState") {
        retry.insert("requestState".into(), state.clone());
    }
    Ok(retry)
}

/// Whether `result` asks for input (`resultType: "input_required"`).
pub(super) fn wants_input(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// Keeps a `subscriptions/listen` stream open on `conn` for tool list changes,
/// until the connection ends or the server refuses the method.
pub(super) async fn listen(
    conn: std::sync::Arc<Connection>,
    server: String,
    again_after: std::time::Duration,
) {
    loop {
        let params = json!({ "notifications": { "toolsListChanged": true } });
        match conn.request("subscriptions/listen", params, true).await {
            // The server ended the stream: relist (changes may have been missed)
            // and listen again.
            Ok(_) => conn.tools_changed(),
            Err(RequestError::Rpc { code, .. }) => {
                crate::info!(
                    "mcp server {server}: subscriptions/listen answered error {code}; its tool list changes are seen when it restarts"
                );
                return;
            }
            Err(RequestError::Closed(_)) => return,
            Err(e) => {
                crate::warn!("mcp server {server}: subscriptions/listen ended: {e}; listening again");
                conn.tools_changed();
            }
        }
        tokio::time::sleep(again_after).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discover_results_decide_the_revision() {
        let modern = json!({
            "supportedVersions": ["2026-07-28", "2025-11-25"],
            "capabilities": {"tools": {}},
            "instructions": "Use it.",
            "_meta": {META_SERVER_INFO: {"name": "peer", "version": "1"}},
        });
        let Era::Stateless(d) = verdict(&modern) else {
            panic!("modern")
        };
        assert!(d.tools);
        assert_eq!(d.instructions.as_deref(), Some("Use it."));
        assert_eq!(d.server_name.as_deref(), Some("peer"));
        let legacy = json!({"supportedVersions": ["2025-11-25"], "capabilities": {"tools": {}}});
        assert!(matches!(verdict(&legacy), Era::Handshake(why) if why.contains("does not list 2026-07-28")));
        assert!(matches!(verdict(&json!({})), Era::Handshake(_)));
    }

    #[test]
    fn requests_carry_meta_and_their_routing_headers() {
        let params = with_meta(
            json!({"name": "hub_call", "_meta": {"progressToken": 3}}),
            &meta(),
        );
        assert_eq!(params["_meta"]["progressToken"], 3);
        assert_eq!(params["_meta"][META_PROTOCOL_VERSION], STATELESS_VERSION);
        assert_eq!(
            params["_meta"][META_CLIENT_CAPABILITIES],
            json!({"roots": {"listChanged": false}})
        );
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let headers: Vec<(String, String)> = routing_headers(&message)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        assert_eq!(
            headers,
            pairs(&[
                ("mcp-protocol-version", STATELESS_VERSION),
                ("mcp-method", "tools/call"),
                ("mcp-name", "hub_call"),
            ])
        );
        let odd = json!({"method": "tools/call", "params": with_meta(json!({"name": "café"}), &meta())});
        let name = routing_headers(&odd)
            .into_iter()
            .find(|(k, _)| k == "mcp-name")
            .unwrap()
            .1;
        assert_eq!(name.to_str().unwrap(), "=?base64?Y2Fmw6k=?=");
        let handshake = json!({"method": "tools/list", "params": {}});
        assert!(routing_headers(&handshake).is_empty());
    }

    #[test]
    fn input_requests_get_roots_and_refusals() {
        let asked = Asked {
            server: "s".into(),
            roots: vec![crate::config::McpRoot {
                uri: "file:///srv".into(),
                name: None,
            }],
        };
        let roots = json!({
            "resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list", "params": {}}},
            "requestState": "opaque",
        });
        assert!(wants_input(&roots));
        let retry = input_responses(&asked, &roots).unwrap();
        assert_eq!(
            Value::Object(retry),
            json!({"inputResponses": {"r": {"roots": [{"uri": "file:///srv"}]}}, "requestState": "opaque"})
        );
        let elicit = json!({
            "resultType": "input_required",
            "inputRequests": {"e": {"method": "elicitation/create", "params": {}}},
        });
        let why = input_responses(&asked, &elicit).unwrap_err();
        assert!(why.contains("elicitation/create refused"), "{why}");
        assert!(!wants_input(&json!({"resultType": "complete"})));
    }
}
