//! JSON-RPC 2.0 framing for MCP: classifying what a peer sent (request,
//! notification, response, or something malformed), the error codes both MCP
//! revisions use, and building response objects.
//!
//! Parsing is split from dispatch so every transport (Streamable HTTP, stdio)
//! reports malformed input the same way: bytes that are not JSON are a parse error
//! (-32700) with `id: null`; JSON that is not a valid message is an invalid request
//! (-32600) carrying the request's id when one can be read.

use super::method::McpMethod;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// Invalid JSON was received.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object (or a batch where none is allowed).
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// The method does not exist (2026-07-28: also HTTP 404).
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters, including an unknown tool name.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// An internal error of the server.
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28: an `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` header disagrees
/// with the body.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability it did not declare.
pub(crate) const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the requested protocol version is not served here.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The request was cancelled before it finished (MCP's `RequestCancelled`).
pub(crate) const REQUEST_CANCELLED: i64 = -32800;
/// The server is busy: the request was not run (`[concurrency]`; HTTP 429).
pub(crate) const SERVER_BUSY: i64 = -32029;

/// A JSON-RPC error object: code, message and optional data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    pub(crate) fn parse(message: impl Into<String>) -> RpcError {
        RpcError::new(PARSE_ERROR, message)
    }

    pub(crate) fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_REQUEST, message)
    }

    pub(crate) fn method_not_found(method: &str) -> RpcError {
        RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(INTERNAL_ERROR, message)
    }

    fn to_value(&self) -> Value {
        let mut error = Map::with_capacity(3);
        error.insert("code".into(), self.code.into());
        error.insert("message".into(), Value::String(self.message.clone()));
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        Value::Object(error)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    /// A string or a number, kept as sent so the response echoes it verbatim.
    pub id: Value,
    pub method: String,
    /// `params` as sent; `None` when absent.
    pub params: Option<Value>,
}

impl Request {
    /// `params` as an object, or `None` when absent or not an object.
    pub(crate) fn params_object(&self) -> Option<&Map<String, Value>> {
        self.params.as_ref().and_then(Value::as_object)
    }

    /// The method, when it is one this server knows.
    pub(crate) fn known_method(&self) -> Option<McpMethod> {
        McpMethod::parse(&self.method)
    }

    /// `params._meta`, when present and an object.
    pub(crate) fn meta(&self) -> Option<&Map<String, Value>> {
        self.params_object()?.get("_meta")?.as_object()
    }

    /// `params._meta.progressToken` (a string or a number), when the client asked
    /// for progress notifications.
    pub(crate) fn progress_token(&self) -> Option<&Value> {
        self.meta()?
            .get("progressToken")
            .filter(|t| t.is_string() || t.is_number())
    }
}

/// A notification: no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

impl Notification {
    /// The method, when it is one this server knows.
    pub(crate) fn known_method(&self) -> Option<McpMethod> {
        McpMethod::parse(&self.method)
    }
}

/// One message a peer sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Message {
    Request(Request),
    Notification(Notification),
    /// A result or error object answering a request of ours (an approval
    /// question, `elicitation/create`): its id, and `Ok(result)` or `Err(error)`.
    Response {
        id: Value,
        outcome: Result<Value, Value>,
    },
    /// Not a valid message; answered with this error and this id (`null` when the
    /// id could not be read).
    Invalid {
        id: Value,
        error: RpcError,
    },
}

/// A whole POST body or stdio line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Payload {
    Single(Message),
    Batch(Vec<Message>),
}

/// Parses `bytes` as one JSON-RPC message or a batch of them. Fails only when the
/// bytes are not JSON (or are an empty batch); per-message problems come back as
/// [`Message::Invalid`] so the rest of a batch still runs.
///
/// A single object (nearly every POST) is read straight into its [`Members`],
/// without building the object itself; anything else, and an object that reading
/// refuses (a member named twice), goes through a [`Value`] as before.
pub(crate) fn parse(bytes: &[u8]) -> Result<Payload, RpcError> {
    let starts_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if starts_object && let Ok(members) = serde_json::from_slice::<Members>(bytes) {
        return Ok(Payload::Single(classify_members(members)));
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| RpcError::parse(format!("parse error: {e}")))?;
    match value {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(RpcError::invalid_request("an empty batch is not a valid request"));
            }
            Ok(Payload::Batch(items.into_iter().map(classify).collect()))
        }
        other => Ok(Payload::Single(classify(other))),
    }
}

/// The members of a message object that say what it is; the others are ignored.
/// A member sent as `null` is `Some(Value::Null)`, an absent one `None`.
#[derive(Deserialize)]
struct Members {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Classifies one decoded JSON value.
pub(crate) fn classify(value: Value) -> Message {
    let Value::Object(mut obj) = value else {
        return invalid(Value::Null, "a JSON-RPC message must be an object");
    };
    classify_members(Members {
        jsonrpc: obj.remove("jsonrpc"),
        id: obj.remove("id"),
        method: obj.remove("method"),
        params: obj.remove("params"),
        result: obj.remove("result"),
        error: obj.remove("error"),
    })
}

/// Classifies one message object by its members.
fn classify_members(m: Members) -> Message {
    let raw_id = m.id;
    // The id to answer with: only a valid one is echoed, anything else is `null`.
    let id = match &raw_id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    if m.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "\"jsonrpc\" must be \"2.0\"");
    }
    let method = match m.method {
        Some(Value::String(method)) => method,
        Some(_) => return invalid(id, "\"method\" must be a string"),
        None if m.result.is_some() || m.error.is_some() => {
            let outcome = match m.error {
                Some(error) => Err(error),
                None => Ok(m.result.unwrap_or(Value::Null)),
            };
            return Message::Response { id, outcome };
        }
        None => return invalid(id, "a request needs a \"method\""),
    };
    let params = m.params;
    if let Some(p) = &params
        && !p.is_object()
        && !p.is_array()
    {
        return invalid(id, "\"params\" must be an object or an array");
    }
    match raw_id {
        None => Message::Notification(Notification { method, params }),
        Some(Value::String(_) | Value::Number(_)) => Message::Request(Request { id, method, params }),
        // MCP: "the ID MUST NOT be null"; JSON-RPC: ids are strings or numbers.
        Some(_) => invalid(Value::Null, "\"id\" must be a string or a number"),
    }
}

fn invalid(id: Value, message: &str) -> Message {
    Message::Invalid {
        id,
        error: RpcError::invalid_request(message),
    }
}

// The messages below are built from their parts, not with `json!`: the macro
// serializes each value it is given into a new one, which for a tool's result
// would copy the whole output once more per answer.

/// `{"jsonrpc":"2.0","id":…,"result":…}`.
pub(crate) fn result_response(id: &Value, result: Value) -> Value {
    message([("id", id.clone()), ("result", result)])
}

/// `{"jsonrpc":"2.0","id":…,"error":{…}}`.
pub(crate) fn error_response(id: &Value, error: &RpcError) -> Value {
    message([("id", id.clone()), ("error", error.to_value())])
}

/// A notification object from the server.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    message([("method", method.into()), ("params", params)])
}

/// `{"jsonrpc":"2.0", …fields}`, the fields moved in.
fn message<const N: usize>(fields: [(&str, Value); N]) -> Value {
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), "2.0".into());
    for (name, value) in fields {
        obj.insert(name.into(), value);
    }
    Value::Object(obj)
}

/// A stable map key for a request id (`"7"` and `7` are different ids).
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn single(text: &str) -> Message {
        match parse(text.as_bytes()).unwrap() {
            Payload::Single(m) => m,
            Payload::Batch(_) => panic!("expected a single message"),
        }
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let m = single(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"progressToken":"p"}}}"#,
        );
        let Message::Request(r) = m else { panic!("{m:?}") };
        assert_eq!(r.id, json!(7));
        assert_eq!(r.method, "tools/list");
        assert_eq!(r.progress_token(), Some(&json!("p")));
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Message::Notification(Notification {
                method: "notifications/initialized".into(),
                params: None
            })
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Message::Response {
                id: json!("a"),
                outcome: Ok(json!({}))
            }
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}"#),
            Message::Response {
                id: json!("a"),
                outcome: Err(json!({"code": 1, "message": "x"}))
            }
        );
    }

    #[test]
    fn malformed_messages_are_invalid_requests_with_the_readable_id() {
        let cases = [
            (r#"{"id":1,"method":"ping"}"#, json!(1)),
            (r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#, json!("x")),
            (r#"{"jsonrpc":"2.0","id":2,"method":5}"#, json!(2)),
            (r#"{"jsonrpc":"2.0","id":3}"#, json!(3)),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}"#,
                json!(4),
            ),
            (r#"42"#, Value::Null),
        ];
        for (text, want_id) in cases {
            match single(text) {
                Message::Invalid { id, error } => {
                    assert_eq!(id, want_id, "{text}");
                    assert_eq!(error.code, INVALID_REQUEST, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_object_read_by_its_members_classifies_as_its_value_does() {
        let cases = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":null}]}},"extra":true}"#,
            r#" {"jsonrpc":"2.0","method":"notifications/initialized","params":null}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":null,"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"a","id":3}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}"#,
        ];
        for text in cases {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(single(text), classify(value), "{text}");
        }
        // A member named twice: the last one counts, as in a `Value`.
        let Message::Request(r) = single(r#"{"jsonrpc":"2.0","id":2,"method":"a","id":3}"#) else {
            panic!("expected a request")
        };
        assert_eq!(r.id, json!(3));
        assert_eq!(parse(b"{\"jsonrpc\":\"2.0\",").unwrap_err().code, PARSE_ERROR);
    }

    #[test]
    fn parse_errors_and_batches() {
        assert_eq!(parse(b"{not json").unwrap_err().code, PARSE_ERROR);
        assert_eq!(parse(b"[]").unwrap_err().code, INVALID_REQUEST);
        let Payload::Batch(items) =
            parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},7]"#).unwrap()
        else {
            panic!("expected a batch")
        };
        assert!(matches!(items[0], Message::Request(_)));
        assert!(matches!(items[1], Message::Notification(_)));
        assert!(matches!(items[2], Message::Invalid { .. }));
    }

    #[test]
    fn builds_responses() {
        let e = RpcError::invalid_params("bad").with_data(json!({"x":1}));
        assert_eq!(
            error_response(&json!("a"), &e),
            json!({"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"bad","data":{"x":1}}})
        );
        assert_eq!(
            result_response(&json!(1), json!({})),
            json!({"jsonrpc":"2.0","id":1,"result":{}})
        );
        assert_ne!(id_key(&json!("7")), id_key(&json!(7)));
    }
}
