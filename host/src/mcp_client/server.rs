//! [`McpTools`]: one started server's tools as an operation source, published in
//! the hub's registry until the server restarts or relists. A call takes one of
//! the server's `max_concurrent` places (waiting within the call's deadline),
//! sends `tools/call`, and waits for the answer until the deadline
//! (`call_timeout_ms`, or the caller's sooner bound); a call dropped or timed out
//! before its answer sends `notifications/cancelled` (`connection`). A stateless
//! server's `input_required` answer is answered and the call retried.

use super::connection::Connection;
use super::error::RequestError;
use super::result::{failure, output};
use super::stateless;
use crate::runtime::{CallFailure, CallOutput, Deadline, ErrorCode, Operation};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// The tools of one start of a server, callable.
pub(crate) struct McpTools {
    pub(super) server: String,
    pub(super) operations: Vec<Operation>,
    pub(super) instructions: Option<String>,
    pub(super) conn: Arc<Connection>,
    /// Shared by every start of the server.
    pub(super) places: Arc<Semaphore>,
    pub(super) max_concurrent: usize,
    pub(super) call_timeout_ms: u64,
    pub(super) max_result_kb: u64,
    /// The protocol revision the server speaks.
    pub(super) protocol: String,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTools")
            .field("server", &self.server)
            .field("operations", &self.operations)
            .finish_non_exhaustive()
    }
}

impl McpTools {
    /// The server's name: the namespace of its operations.
    pub(crate) fn name(&self) -> &str {
        &self.server
    }

    /// Its tools, as listed.
    pub(crate) fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The server's `instructions`.
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The protocol revision the server speaks.
    pub(crate) fn protocol(&self) -> &str {
        &self.protocol
    }

    /// Longest one call runs (`call_timeout_ms`).
    pub(crate) fn timeout_ms(&self) -> u64 {
        self.call_timeout_ms
    }

    /// Calls tool `op` with `input_json` (an object) until `deadline`.
    pub(crate) async fn call(
        &self,
        op: &str,
        input_json: &str,
        deadline: Deadline,
    ) -> Result<CallOutput, CallFailure> {
        let server = &self.server;
        let (at, limit_ms) = deadline.resolve(Instant::now(), self.call_timeout_ms);
        let place = match tokio::time::timeout_at(at, self.places.acquire()).await {
            Ok(Ok(place)) => place,
            _ => {
                return Err(CallFailure::Source {
                    code: ErrorCode::CallLimit,
                    message: format!(
                        "all {} places of mcp server {server} stayed taken until the call's deadline (mcp_servers.{server}.max_concurrent)",
                        self.max_concurrent
                    ),
                });
            }
        };
        let arguments: Value = serde_json::from_str(input_json)
            .map_err(|e| failure(ErrorCode::InvalidInput, format!("the input is not JSON: {e}")))?;
        let params = json!({ "name": op, "arguments": arguments });
        let answer = tokio::time::timeout_at(at, self.exchange(params)).await;
        drop(place);
        match answer {
            Err(_) => Err(failure(
                ErrorCode::Timeout,
                format!(
                    "mcp server {server} did not answer within {limit_ms} ms (mcp_servers.{server}.call_timeout_ms, or the caller's deadline); the hub sent notifications/cancelled"
                ),
            )),
            Ok(Err(e)) => Err(failure(
                ErrorCode::PluginError,
                format!("mcp server {server}: {e}"),
            )),
            Ok(Ok(result)) => output(server, result, self.max_result_kb),
        }
    }

    /// `tools/call` with `params`; a stateless server's `input_required`
    /// answers are answered (`stateless::input_responses`) and the call retried,
    /// at most `MAX_INPUT_ROUNDS` times.
    async fn exchange(&self, params: Value) -> Result<Value, CallError> {
        let mut result = self.conn.request("tools/call", params.clone(), true).await?;
        for _ in 0..stateless::MAX_INPUT_ROUNDS {
            if !stateless::wants_input(&result) {
                return Ok(result);
            }
            let retry = stateless::input_responses(self.conn.asked(), &result).map_err(CallError::Input)?;
            let mut params = params.clone();
            if let Value::Object(p) = &mut params {
                p.extend(retry);
            }
            result = self.conn.request("tools/call", params, true).await?;
        }
        if stateless::wants_input(&result) {
            return Err(CallError::Input(format!(
                "it still asked for input after {} answers",
                stateless::MAX_INPUT_ROUNDS
            )));
        }
        Ok(result)
    }
}

/// Why a `tools/call` exchange got no result.
#[derive(Debug)]
enum CallError {
    /// The request failed.
    Request(RequestError),
    /// The server asked for input the hub does not give.
    Input(String),
}

impl From<RequestError> for CallError {
    fn from(e: RequestError) -> CallError {
        CallError::Request(e)
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Request(e) => e.fmt(f),
            CallError::Input(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Request(e) => Some(e),
            CallError::Input(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_client::connection::Capture;
    use crate::mcp_wire::jsonrpc::classify;
    use tokio::sync::mpsc;

    fn tools(places: usize) -> (Arc<McpTools>, mpsc::UnboundedReceiver<Value>) {
        let (tx, sent) = mpsc::unbounded_channel();
        let (conn, _events) = Connection::new(Box::new(Capture(tx)), Default::default());
        let tools = McpTools {
            server: "s".into(),
            operations: Vec::new(),
            instructions: None,
            conn,
            places: Arc::new(Semaphore::new(places)),
            max_concurrent: places,
            call_timeout_ms: 1000,
            max_result_kb: 64,
            protocol: "2025-11-25".into(),
        };
        (Arc::new(tools), sent)
    }

    fn soon(ms: u64) -> Deadline {
        Deadline::new(Instant::now(), ms, None)
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_answers_or_hits_its_deadline_or_finds_no_place() {
        let (t, mut sent) = tools(1);
        let call = tokio::spawn({
            let t = t.clone();
            async move { t.call("echo", r#"{"text":"hi"}"#, soon(1000)).await }
        });
        let request = sent.recv().await.unwrap();
        assert_eq!(
            request["params"],
            json!({"name": "echo", "arguments": {"text": "hi"}})
        );
        let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "hi"}]}});
        t.conn.deliver(classify(answer));
        assert_eq!(call.await.unwrap().unwrap().json, r#"{"text":"hi"}"#);

        // No answer: a timeout naming the key, and the server is told.
        let e = t.call("hang", "{}", soon(1000)).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Timeout);
        assert!(e.to_string().contains("mcp_servers.s.call_timeout_ms"), "{e}");
        let hang = sent.recv().await.unwrap();
        let cancelled = sent.recv().await.unwrap();
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], hang["id"]);

        // Its one place held by a call that never ends: the next one finds none.
        let held = t.places.clone().acquire_owned().await.unwrap();
        let e = t.call("echo", "{}", soon(500)).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::CallLimit);
        assert!(e.to_string().contains("mcp_servers.s.max_concurrent"), "{e}");
        drop(held);
        assert!(sent.try_recv().is_err(), "nothing was sent without a place");
    }
}
