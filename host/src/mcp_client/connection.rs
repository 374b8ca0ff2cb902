//! One JSON-RPC connection to an MCP server, whatever carries it: request ids,
//! the requests waiting for their answers, what the server sends on its own
//! (its requests are answered by `asked`, `notifications/tools/list_changed` is
//! reported), and the end of the connection, which fails every waiting request
//! with how it ended.
//!
//! A request whose future is dropped before its answer (the call was cancelled or
//! its deadline passed) sends `notifications/cancelled` for it, or, on a
//! stateless HTTP connection (2026-07-28, which has no client notifications),
//! abandons its HTTP exchange, which is that revision's cancellation. Once
//! [`Connection::adopt_stateless`] was called, every request carries the
//! stateless `_meta` (`stateless`).
//!
//! A request made inside a trace is a CLIENT span `{mcp.method.name} {tool}`
//! (MCP conventions) whose context goes in `params._meta` (`traceparent`,
//! `tracestate`, and the baggage `telemetry.forward_baggage` lets out; MCP
//! 2026-07-28), so the server's spans join the hub's trace; over HTTP the
//! transport also sends them as headers (`http`).

use super::asked::Asked;
use super::error::RequestError;
use crate::mcp_wire::jsonrpc::{self, Message};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Longest server text (an error message) kept, in bytes.
const MAX_SERVER_TEXT: usize = 2048;

/// Where the connection's outgoing messages go: a stdio child's input, or HTTP
/// requests. Never waits: a transport that cannot take a message now says so.
pub(super) trait Outbound: Send + Sync {
    /// Queues `message` for the server.
    fn send(&self, message: Value) -> Result<(), RequestError>;

    /// Abandons the exchange carrying request `id` (the stateless revision's
    /// cancellation); `false` when the transport cannot, so it is told instead.
    fn abandon(&self, _id: u64) -> bool {
        false
    }
}

/// What the server did that its supervisor acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Event {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// The connection ended; how.
    Closed(String),
}

type Waiting = oneshot::Sender<Result<Value, RequestError>>;

/// A live connection. Shared: calls hold it while they wait.
pub(super) struct Connection {
    next_id: AtomicU64,
    waiting: Mutex<State>,
    out: Box<dyn Outbound>,
    /// What the server's own requests get.
    asked: Asked,
    events: mpsc::UnboundedSender<Event>,
    /// Turns true when the connection closes (streams reading for it stop).
    ended: tokio::sync::watch::Sender<bool>,
    /// A `tools/list_changed` not relisted yet: a flood of them is one event.
    tools_changed: std::sync::atomic::AtomicBool,
    /// The `_meta` of every request, once the server speaks the stateless revision.
    stateless: std::sync::OnceLock<Value>,
}

#[derive(Default)]
struct State {
    pending: HashMap<u64, Waiting>,
    /// How the connection ended, once it has.
    closed: Option<String>,
}

impl Connection {
    /// A connection sending through `out`; its events go to the returned receiver.
    pub(super) fn new(
        out: Box<dyn Outbound>,
        asked: Asked,
    ) -> (Arc<Connection>, mpsc::UnboundedReceiver<Event>) {
        let (events, rx) = mpsc::unbounded_channel();
        let conn = Connection {
            next_id: AtomicU64::new(1),
            waiting: Mutex::new(State::default()),
            out,
            asked,
            events,
            ended: tokio::sync::watch::Sender::new(false),
            tools_changed: std::sync::atomic::AtomicBool::new(false),
            stateless: std::sync::OnceLock::new(),
        };
        (Arc::new(conn), rx)
    }

    /// Takes the pending `tools/list_changed`: later ones are events again (call
    /// before relisting, so a change during the listing is not lost).
    pub(super) fn take_tools_changed(&self) {
        self.tools_changed.store(false, Ordering::Release);
    }

    /// From now on every request carries `meta` (the server speaks 2026-07-28).
    pub(super) fn adopt_stateless(&self, meta: Value) {
        let _ = self.stateless.set(meta);
    }

    /// Whether the server speaks the stateless revision.
    pub(super) fn is_stateless(&self) -> bool {
        self.stateless.get().is_some()
    }

    /// What the hub answers the server's own requests.
    pub(super) fn asked(&self) -> &Asked {
        &self.asked
    }

    /// Turns true once the connection has closed.
    pub(super) fn ended(&self) -> tokio::sync::watch::Receiver<bool> {
        self.ended.subscribe()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How the connection ended; `None` while it is open.
    pub(super) fn closed(&self) -> Option<String> {
        self.state().closed.clone()
    }

    /// Sends `method` and waits for its answer. `cancellable`: dropping the future
    /// before the answer sends `notifications/cancelled` (never for `initialize`).
    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        cancellable: bool,
    ) -> Result<Value, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.state();
            if let Some(how) = &state.closed {
                return Err(RequestError::Closed(how.clone()));
            }
            state.pending.insert(id, tx);
        }
        let mut guard = Unanswered {
            conn: self,
            id,
            cancellable,
        };
        let span = client_span(method, &params);
        let params = match span.as_ref().and_then(|s| s.context()) {
            Some(context) => with_trace(params, context),
            None => params,
        };
        let params = match self.stateless.get() {
            Some(meta) => super::stateless::with_meta(params, meta),
            None => params,
        };
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if let Err(e) = self.out.send(message) {
            guard.cancellable = false;
            return Err(e);
        }
        let answer = rx.await;
        guard.cancellable = false;
        match answer {
            Ok(answer) => answer,
            // The state was dropped without an answer: only when closing.
            Err(_) => Err(RequestError::Closed(self.closed().unwrap_or_default())),
        }
    }

    /// Sends a notification.
    pub(super) fn notify(&self, method: &str, params: Value) -> Result<(), RequestError> {
        self.out.send(jsonrpc::notification(method, params))
    }

    /// Takes one message the server sent.
    pub(super) fn deliver(&self, message: Message) {
        match message {
            Message::Response { id, outcome } => self.answer(&id, outcome),
            Message::Request(request) => {
                // A server that does not read our answers will fail its calls.
                let _ = self.out.send(self.asked.answer(&request));
            }
            Message::Notification(n) if n.method == "notifications/tools/list_changed" => {
                self.tools_changed();
            }
            Message::Notification(_) => {}
            Message::Invalid { error, .. } => {
                self.close(format!(
                    "the server sent an invalid JSON-RPC message: {}",
                    error.message
                ));
            }
        }
    }

    /// Reports that the server's tools may have changed (relisted once, however
    /// many reports come before the relisting).
    pub(super) fn tools_changed(&self) {
        if !self.tools_changed.swap(true, Ordering::AcqRel) {
            let _ = self.events.send(Event::ToolsChanged);
        }
    }

    fn answer(&self, id: &Value, outcome: Result<Value, Value>) {
        let Some(id) = id.as_u64() else { return };
        let Some(waiting) = self.state().pending.remove(&id) else {
            return;
        };
        let _ = waiting.send(outcome.map_err(rpc_error));
    }

    /// Fails the request `id` (its transport could not deliver it or its answer).
    pub(super) fn fail(&self, id: &Value, error: RequestError) {
        let Some(id) = id.as_u64() else { return };
        if let Some(waiting) = self.state().pending.remove(&id) {
            let _ = waiting.send(Err(error));
        }
    }

    /// Ends the connection: every waiting request fails with `how`; once only.
    pub(super) fn close(&self, how: String) {
        let pending = {
            let mut state = self.state();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some(how.clone());
            std::mem::take(&mut state.pending)
        };
        for (_, waiting) in pending {
            let _ = waiting.send(Err(RequestError::Closed(how.clone())));
        }
        self.ended.send_replace(true);
        let _ = self.events.send(Event::Closed(how));
    }
}

/// A JSON-RPC error object as the server sent it, its message bounded.
fn rpc_error(error: Value) -> RequestError {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(jsonrpc::INTERNAL_ERROR);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    RequestError::Rpc {
        code,
        message: bounded(message),
    }
}

/// `text` cut at 2 KiB on a character boundary, marked when cut.
pub(super) fn bounded(text: &str) -> String {
    crate::runtime::bounded_text(text.to_string(), MAX_SERVER_TEXT)
}

/// A request still waiting: dropped unanswered, it is forgotten and, when
/// cancellable, the server is told.
struct Unanswered<'a> {
    conn: &'a Connection,
    id: u64,
    cancellable: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let was_waiting = self.conn.state().pending.remove(&self.id).is_some();
        let abandoned = || self.conn.is_stateless() && self.conn.out.abandon(self.id);
        if was_waiting && self.cancellable && !abandoned() {
            let params = json!({
                "requestId": self.id,
                "reason": "the hub's caller cancelled the call or its deadline passed",
            });
            let _ = self.conn.notify("notifications/cancelled", params);
        }
    }
}

/// For tests: an outbound that hands every message to a channel.
/// The CLIENT span of request `method` when one is made inside a trace (none
/// otherwise: the supervisor's own listing starts no trace).
fn client_span(method: &str, params: &Value) -> Option<crate::telemetry::Span> {
    use crate::telemetry::{Kind, Span};
    let parent = crate::telemetry::current()?;
    let tool = (method == "tools/call")
        .then(|| params.get("name").and_then(Value::as_str))
        .flatten();
    let mut span = match tool {
        Some(tool) => Span::child_of(Some(&parent), Kind::Client, format_args!("{method} {tool}")),
        None => Span::child_of(Some(&parent), Kind::Client, format_args!("{method}")),
    };
    if span.recording() {
        span.set("mcp.method.name", method);
        if let Some(tool) = tool {
            span.set("gen_ai.tool.name", tool);
            span.set("gen_ai.operation.name", "execute_tool");
        }
    }
    Some(span)
}

/// `params` with `context` in its `_meta` (`telemetry::into_meta`).
fn with_trace(params: Value, context: &crate::telemetry::SpanContext) -> Value {
    let mut params = match params {
        Value::Object(p) => p,
        _ => serde_json::Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Value::Object(meta) = meta {
        crate::telemetry::into_meta(meta, context);
    }
    Value::Object(params)
}

#[cfg(test)]
pub(super) struct Capture(pub mpsc::UnboundedSender<Value>);

#[cfg(test)]
impl Outbound for Capture {
    fn send(&self, message: Value) -> Result<(), RequestError> {
        self.0.send(message).map_err(|_| RequestError::NotReading)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_wire::jsonrpc::classify;

    /// Hands messages to a channel and records the exchanges abandoned.
    struct Abandoning(mpsc::UnboundedSender<Value>, Arc<Mutex<Vec<u64>>>);

    impl Outbound for Abandoning {
        fn send(&self, message: Value) -> Result<(), RequestError> {
            self.0.send(message).map_err(|_| RequestError::NotReading)
        }
        fn abandon(&self, id: u64) -> bool {
            self.1.lock().unwrap().push(id);
            true
        }
    }

    #[tokio::test]
    async fn a_stateless_connection_sends_meta_and_abandons_instead_of_notifying() {
        let (tx, mut sent) = mpsc::unbounded_channel();
        let abandoned = Arc::new(Mutex::new(Vec::new()));
        let out = Abandoning(tx, abandoned.clone());
        let (conn, _events) = Connection::new(Box::new(out), Asked::default());
        // Before the server is known to be stateless: cancellation is a notification.
        let c = conn.clone();
        let call = tokio::spawn(async move { c.request("tools/call", json!({}), true).await });
        let req = sent.recv().await.unwrap();
        assert!(req["params"].get("_meta").is_none(), "{req}");
        call.abort();
        assert_eq!(sent.recv().await.unwrap()["method"], "notifications/cancelled");

        conn.adopt_stateless(super::super::stateless::meta());
        let c = conn.clone();
        let call = tokio::spawn(async move { c.request("tools/call", json!({"name": "x"}), true).await });
        let req = sent.recv().await.unwrap();
        assert_eq!(
            req["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(req["params"]["name"], "x");
        call.abort();
        let _ = call.await;
        assert_eq!(*abandoned.lock().unwrap(), vec![req["id"].as_u64().unwrap()]);
        assert!(
            sent.try_recv().is_err(),
            "no notification on a stateless connection"
        );
    }

    #[tokio::test]
    async fn answers_errors_pings_cancels_and_close() {
        let (tx, mut sent) = mpsc::unbounded_channel();
        let (conn, mut events) = Connection::new(Box::new(Capture(tx)), Asked::default());
        let c = conn.clone();
        let call = tokio::spawn(async move { c.request("tools/list", json!({}), true).await });
        let req = sent.recv().await.unwrap();
        assert_eq!(req["method"], "tools/list");
        conn.deliver(classify(
            json!({"jsonrpc": "2.0", "id": req["id"], "result": {"tools": []}}),
        ));
        assert_eq!(call.await.unwrap().unwrap(), json!({"tools": []}));

        let c = conn.clone();
        let call = tokio::spawn(async move { c.request("tools/call", json!({}), true).await });
        let req = sent.recv().await.unwrap();
        conn.deliver(classify(
            json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602, "message": "bad"}}),
        ));
        let e = call.await.unwrap().unwrap_err();
        assert_eq!(e.to_string(), "the server answered error -32602: bad");

        conn.deliver(classify(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})));
        assert_eq!(
            sent.recv().await.unwrap(),
            json!({"jsonrpc": "2.0", "id": "p", "result": {}})
        );
        conn.deliver(classify(
            json!({"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage"}),
        ));
        assert_eq!(
            sent.recv().await.unwrap()["error"]["code"],
            jsonrpc::MISSING_CLIENT_CAPABILITY
        );
        conn.deliver(classify(
            json!({"jsonrpc": "2.0", "id": 10, "method": "roots/list"}),
        ));
        assert_eq!(sent.recv().await.unwrap()["result"], json!({"roots": []}));
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        for _ in 0..100 {
            conn.deliver(classify(changed.clone()));
        }
        assert_eq!(events.recv().await.unwrap(), Event::ToolsChanged);
        assert!(
            events.try_recv().is_err(),
            "a flood of changes is one event until relisted"
        );
        conn.take_tools_changed();
        conn.deliver(classify(changed));
        assert_eq!(events.recv().await.unwrap(), Event::ToolsChanged);

        // A dropped request is cancelled on the server.
        let c = conn.clone();
        let call = tokio::spawn(async move { c.request("tools/call", json!({}), true).await });
        let req = sent.recv().await.unwrap();
        call.abort();
        let cancelled = sent.recv().await.unwrap();
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], req["id"]);

        let c = conn.clone();
        let call = tokio::spawn(async move { c.request("tools/call", json!({}), true).await });
        sent.recv().await.unwrap();
        conn.deliver(classify(json!({"jsonrpc": "1.0", "id": 1, "method": "x"})));
        let e = call.await.unwrap().unwrap_err().to_string();
        assert!(e.contains("invalid JSON-RPC message"), "{e}");
        assert!(matches!(events.recv().await.unwrap(), Event::Closed(_)));
        let e = conn.request("tools/list", json!({}), true).await.unwrap_err();
        assert!(matches!(e, RequestError::Closed(_)));
    }
}
