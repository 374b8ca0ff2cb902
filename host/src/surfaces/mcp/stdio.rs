//! MCP over stdio: newline-delimited JSON-RPC on stdin/stdout, for desktop clients
//! that start `wasmhub mcp --stdio` themselves. Nothing but protocol messages is
//! written to stdout (the hub logs to stderr).
//!
//! One process is one connection, so there is no session id: the handshake era's
//! `initialize` sets the negotiated version (which decides whether batches are
//! allowed), and messages carrying the stateless `_meta` envelope are answered per
//! the 2026-07-28 revision (without the HTTP header checks). Requests run
//! concurrently; `notifications/cancelled` cancels one, and closing stdin cancels
//! everything still running. The caller is the local operator. A client that
//! declared `elicitation` at `initialize` is asked to approve the calls the policy
//! asks about: an `elicitation/create` request on stdout, its response on stdin.

use super::approval::{Elicitor, McpClient};
use super::backend::progress_notifier;
use super::dispatch::{CallCtx, Dispatcher};
use super::jsonrpc::{self, Message, Payload, Request, RpcError};
use super::method::McpMethod;
use super::revision::{self, Revision};
use crate::hub::Caller;
use crate::hub::cancel::CancelToken;
use crate::mcp_wire::lines::{self, Line};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

/// Messages queued for stdout before a slow reader makes producers wait.
const OUTBOX: usize = 256;

type InFlightMap = Arc<Mutex<HashMap<String, CancelToken>>>;

/// Our requests to the client waiting for its response, by id key.
type AskMap = Arc<Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>>;

struct Conn {
    dispatcher: Arc<Dispatcher>,
    caller: Caller,
    /// The handshake-era version negotiated by `initialize`, if any.
    version: Option<&'static str>,
    /// What the client declared at `initialize`.
    client: McpClient,
    in_flight: InFlightMap,
    asks: AskMap,
    next_ask: Arc<AtomicU64>,
    out: mpsc::Sender<Value>,
}

/// Serves one connection until `input` ends; `max_line` bounds one message.
pub(crate) async fn serve<R, W>(
    dispatcher: Arc<Dispatcher>,
    input: R,
    output: W,
    max_line: usize,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, rx) = mpsc::channel(OUTBOX);
    let writer = tokio::spawn(lines::write_loop(output, rx));
    let caller = dispatcher.backend().local_operator();
    let mut conn = Conn {
        dispatcher,
        caller,
        version: None,
        client: McpClient::default(),
        in_flight: Arc::default(),
        asks: Arc::default(),
        next_ask: Arc::new(AtomicU64::new(1)),
        out,
    };
    let mut input = input;
    let mut line = Vec::with_capacity(4096);
    loop {
        match lines::read_line(&mut input, &mut line, max_line).await? {
            Line::End => break,
            Line::Read => {}
            Line::TooLong => {
                // Answer once, then skip the rest of that line.
                lines::skip_line(&mut input).await?;
                let e = RpcError::invalid_request(format!("message is larger than {max_line} bytes"));
                conn.send(jsonrpc::error_response(&Value::Null, &e)).await;
                continue;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        conn.on_line(&line).await;
    }
    for token in conn.in_flight.lock().unwrap_or_else(|p| p.into_inner()).values() {
        token.cancel();
    }
    drop(conn);
    writer.await.map_err(std::io::Error::other)?
}

impl Conn {
    async fn send(&self, message: Value) {
        let _ = self.out.send(message).await;
    }

    async fn on_line(&mut self, line: &[u8]) {
        match jsonrpc::parse(line) {
            Err(e) => self.send(jsonrpc::error_response(&Value::Null, &e)).await,
            Ok(Payload::Single(m)) => {
                if let Some(answer) = self.on_message(m, None).await {
                    self.send(answer).await;
                }
            }
            Ok(Payload::Batch(items)) => {
                if !self.version.is_some_and(revision::batches_allowed) {
                    let version = self.version.unwrap_or("2026-07-28 or 2025-06-18 and later");
                    let e = RpcError::invalid_request(format!(
                        "JSON-RPC batches are not part of protocol revision {version}"
                    ));
                    return self.send(jsonrpc::error_response(&Value::Null, &e)).await;
                }
                let (tx, mut rx) = mpsc::channel(items.len().max(1));
                let mut count = 0;
                for m in items {
                    if let Some(answer) = self.on_message(m, Some(tx.clone())).await {
                        let _ = tx.send(answer).await;
                    }
                    count += 1;
                }
                drop(tx);
                let out = self.out.clone();
                tokio::spawn(async move {
                    let mut answers = Vec::with_capacity(count);
                    while let Some(a) = rx.recv().await {
                        answers.push(a);
                    }
                    if !answers.is_empty() {
                        let _ = out.send(Value::Array(answers)).await;
                    }
                });
            }
        }
    }

    /// Handles one message; an immediate answer is returned, a running request
    /// answers later on `reply` (or on stdout when `None`).
    async fn on_message(&mut self, m: Message, reply: Option<mpsc::Sender<Value>>) -> Option<Value> {
        match m {
            Message::Invalid { id, error } => Some(jsonrpc::error_response(&id, &error)),
            Message::Response { id, outcome } => {
                let waiting = self
                    .asks
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&jsonrpc::id_key(&id));
                if let Some(tx) = waiting {
                    let _ = tx.send(outcome);
                }
                None
            }
            Message::Notification(n) => {
                if n.known_method() == Some(McpMethod::NotificationsCancelled)
                    && let Some(id) = n.params.as_ref().and_then(|p| p.get("requestId"))
                    && let Some(token) = self
                        .in_flight
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&jsonrpc::id_key(id))
                {
                    token.cancel();
                }
                None
            }
            Message::Request(r) => {
                let revision = if revision::body_is_stateless(r.known_method(), r.params.as_ref()) {
                    Revision::Stateless
                } else {
                    Revision::Handshake
                };
                if revision == Revision::Stateless
                    && let Err(e) = revision::check_envelope(&r, None)
                {
                    return Some(jsonrpc::error_response(&r.id, &e));
                }
                if revision == Revision::Handshake && r.known_method() == Some(McpMethod::Initialize) {
                    return Some(self.initialize(&r));
                }
                self.spawn(r, revision, reply.unwrap_or_else(|| self.out.clone()));
                None
            }
        }
    }

    fn initialize(&mut self, r: &Request) -> Value {
        let version = match revision::negotiate_initialize(r) {
            Ok(version) => version,
            Err(e) => return jsonrpc::error_response(&r.id, &e),
        };
        self.version = Some(version);
        let params = r.params_object();
        self.client = McpClient::read(
            params.and_then(|p| p.get("clientInfo")),
            params.and_then(|p| p.get("capabilities")),
        );
        jsonrpc::result_response(&r.id, self.dispatcher.initialize_result(version, &self.caller))
    }

    fn spawn(&self, r: Request, revision: Revision, reply: mpsc::Sender<Value>) {
        let cancel = CancelToken::new();
        let key = jsonrpc::id_key(&r.id);
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), cancel.clone());
        let progress = r.progress_token().cloned().map(|t| {
            let out = self.out.clone();
            // A full outbox drops the report: progress is advisory.
            progress_notifier(t, move |n| drop(out.try_send(n)))
        });
        let elicitor = (revision == Revision::Handshake && self.client.elicitation).then(|| self.elicitor());
        let ctx = CallCtx {
            revision,
            caller: self.caller.clone(),
            cancel,
            progress,
            elicitor,
            session: None,
            transport: "pipe",
        };
        let dispatcher = self.dispatcher.clone();
        let in_flight = self.in_flight.clone();
        tokio::spawn(async move {
            let answer = dispatcher.respond(r, ctx).await;
            in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
            let _ = reply.send(answer).await;
        });
    }
}

impl Conn {
    /// Asks the client on stdout; its response comes back on stdin.
    fn elicitor(&self) -> Elicitor {
        let asks = self.asks.clone();
        let out = self.out.clone();
        let next = self.next_ask.clone();
        Elicitor {
            by: format!("MCP client {} over stdio", self.client.name),
            send: Arc::new(move |params: Value| {
                let (asks, out) = (asks.clone(), out.clone());
                let id = format!("wasmhub-approval-{}", next.fetch_add(1, Ordering::Relaxed));
                Box::pin(async move {
                    let key = jsonrpc::id_key(&json!(id));
                    let (tx, rx) = oneshot::channel();
                    asks.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(key.clone(), tx);
                    let _forget = Forget { asks, key };
                    let request = json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "method": McpMethod::ElicitationCreate.as_str(),
                        "params": params,
                    });
                    out.send(request).await.ok()?;
                    rx.await.ok()
                })
            }),
        }
    }
}

/// Forgets an awaited answer when dropped (answered, timed out or cancelled).
struct Forget {
    asks: AskMap,
    key: String,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surfaces::mcp::dispatch::tests::FakeBackend;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, duplex};

    /// Runs a connection over in-memory pipes; returns (client writer, client line reader).
    fn connect() -> (
        tokio::io::DuplexStream,
        tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    ) {
        let (client_in, server_in) = duplex(1 << 16);
        let (server_out, client_out) = duplex(1 << 16);
        let dispatcher = Arc::new(Dispatcher::new(Arc::new(FakeBackend::default())));
        tokio::spawn(serve(dispatcher, BufReader::new(server_in), server_out, 4096));
        (client_in, BufReader::new(client_out).lines())
    }

    async fn next(lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(5), lines.next_line())
            .await
            .unwrap()
            .unwrap();
        serde_json::from_str(&line.expect("a line")).unwrap()
    }

    #[tokio::test]
    async fn handshake_list_call_and_errors() {
        let (mut w, mut r) = connect();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n").await.unwrap();
        assert_eq!(next(&mut r).await["result"]["protocolVersion"], "2025-11-25");
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\n")
            .await
            .unwrap();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n")
            .await
            .unwrap();
        assert_eq!(next(&mut r).await["result"]["tools"].as_array().unwrap().len(), 4);
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"hub_echo\",\"arguments\":{\"x\":1}}}\n").await.unwrap();
        assert_eq!(next(&mut r).await["result"]["structuredContent"]["echo"]["x"], 1);
        w.write_all(b"not json\n").await.unwrap();
        assert_eq!(next(&mut r).await["error"]["code"], jsonrpc::PARSE_ERROR);
        w.write_all(b"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]\n")
            .await
            .unwrap();
        assert_eq!(
            next(&mut r).await["error"]["code"],
            jsonrpc::INVALID_REQUEST,
            "no batches in 2025-11-25"
        );
        w.write_all(format!("{{\"x\":\"{}\"}}\n", "a".repeat(5000)).as_bytes())
            .await
            .unwrap();
        assert_eq!(
            next(&mut r).await["error"]["code"],
            jsonrpc::INVALID_REQUEST,
            "line too long"
        );
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        assert_eq!(
            next(&mut r).await["id"],
            5,
            "the connection survives an oversized line"
        );
    }

    #[tokio::test]
    async fn a_client_with_elicitation_is_asked_on_stdout_and_answers_on_stdin() {
        let (mut w, mut r) = connect();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}},\"clientInfo\":{\"name\":\"desk\",\"version\":\"1\"}}}\n").await.unwrap();
        next(&mut r).await;
        for (id, answer, approved) in [
            (2, json!({"action": "accept", "content": {"approve": true}}), true),
            (3, json!({"action": "cancel"}), false),
        ] {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "hub_echo", "arguments": {"guarded": true}}});
            w.write_all(format!("{call}\n").as_bytes()).await.unwrap();
            let question = next(&mut r).await;
            assert_eq!(question["method"], "elicitation/create", "{question}");
            assert!(
                question["params"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("fake.guarded")
            );
            let response = json!({"jsonrpc": "2.0", "id": question["id"], "result": answer});
            w.write_all(format!("{response}\n").as_bytes()).await.unwrap();
            let result = next(&mut r).await;
            assert_eq!(result["id"], id);
            let approval = &result["result"]["structuredContent"]["approval"];
            assert_eq!(approval["approved"], approved, "{result}");
            assert_eq!(approval["by"], "MCP client desk over stdio");
        }
        // Unguarded calls ask nothing.
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"hub_echo\",\"arguments\":{}}}\n").await.unwrap();
        let plain = next(&mut r).await;
        assert_eq!(plain["id"], 4);
        assert!(plain["result"]["structuredContent"].get("approval").is_none());
    }

    #[tokio::test]
    async fn a_client_without_elicitation_is_not_asked() {
        let (mut w, mut r) = connect();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n").await.unwrap();
        next(&mut r).await;
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"hub_echo\",\"arguments\":{\"guarded\":true}}}\n").await.unwrap();
        let result = next(&mut r).await;
        assert_eq!(result["id"], 2, "answered without a question: {result}");
        assert!(result["result"]["structuredContent"].get("approval").is_none());
    }

    #[tokio::test]
    async fn stateless_messages_cancellation_progress_and_batches() {
        let (mut w, mut r) = connect();
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        w.write_all(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{{meta}}}}}\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        let d = next(&mut r).await;
        assert_eq!(d["result"]["resultType"], "complete");
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",\"params\":{}}\n")
            .await
            .unwrap();
        assert_eq!(next(&mut r).await["error"]["code"], jsonrpc::INVALID_PARAMS);

        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"tools/call\",\"params\":{\"name\":\"hub_wait\"}}\n").await.unwrap();
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"w\"}}\n").await.unwrap();
        let cancelled = next(&mut r).await;
        assert_eq!(cancelled["id"], "w");
        assert_eq!(cancelled["error"]["code"], jsonrpc::REQUEST_CANCELLED);

        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"hub_progress\",\"_meta\":{\"progressToken\":\"t\"}}}\n").await.unwrap();
        let p1 = next(&mut r).await;
        assert_eq!(p1["method"], "notifications/progress");
        assert_eq!(p1["params"]["progressToken"], "t");
        assert_eq!(next(&mut r).await["params"]["progress"], 2.0);
        assert_eq!(next(&mut r).await["result"]["structuredContent"]["done"], true);

        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\"}}\n").await.unwrap();
        assert_eq!(next(&mut r).await["result"]["protocolVersion"], "2025-03-26");
        w.write_all(b"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"x\"},{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"nope\"}]\n").await.unwrap();
        let batch = next(&mut r).await;
        let batch = batch.as_array().expect("a batch answer");
        assert_eq!(batch.len(), 2);
        assert!(batch.iter().any(|a| a["id"] == 9 && a["result"] == json!({})));
        assert!(
            batch
                .iter()
                .any(|a| a["id"] == 10 && a["error"]["code"] == jsonrpc::METHOD_NOT_FOUND)
        );
    }
}
