//! Why an MCP server could not be started or a request to it failed. The texts
//! are what the operator reads in `GET /api/mcp-servers` and what a caller reads
//! in a call's error: they name the configuration key of every bound, and never
//! contain a secret value (env and header values are not part of any error).

use crate::secret_ref::SecretError;
use std::fmt;

/// Why a server did not get to `active`.
#[derive(Debug)]
pub(crate) enum StartError {
    /// A secret reference in `env` or `headers` cannot be resolved.
    Secret {
        /// `env.NAME` or `headers.NAME`.
        key: String,
        /// Why.
        source: SecretError,
    },
    /// The command could not be started.
    Spawn {
        /// The configured command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The child's pipes could not be set up.
    Pipes,
    /// The thread waiting for the child could not be started.
    Thread(std::io::Error),
    /// A request of the start (`initialize`, `tools/list`) failed.
    Request {
        /// The method.
        method: &'static str,
        /// Why.
        source: RequestError,
    },
    /// The server's answer to `initialize` is not one the hub can use.
    Handshake(String),
    /// The start did not finish within `start_timeout_ms`.
    Timeout {
        /// The configured bound, in ms.
        limit_ms: u64,
    },
    /// The server lists more tools than `max_tools`.
    TooManyTools {
        /// The configured bound.
        limit: usize,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Secret { key, source } => write!(f, "{key}: {source}"),
            StartError::Spawn { command, source } => write!(f, "cannot start {command:?}: {source}"),
            StartError::Pipes => f.write_str("cannot set up the server's stdin/stdout/stderr pipes"),
            StartError::Thread(e) => write!(f, "cannot start the thread that waits for the server: {e}"),
            StartError::Request { method, source } => write!(f, "{method} failed: {source}"),
            StartError::Handshake(why) => write!(f, "handshake failed: {why}"),
            StartError::Timeout { limit_ms } => write!(
                f,
                "unreachable: the handshake and tools/list did not finish within start_timeout_ms ({limit_ms} ms)"
            ),
            StartError::TooManyTools { limit } => {
                write!(f, "the server lists more than max_tools ({limit}) tools")
            }
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Secret { source, .. } => Some(source),
            StartError::Spawn { source, .. } | StartError::Thread(source) => Some(source),
            StartError::Request { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why one request to a server got no usable answer.
#[derive(Debug, Clone)]
pub(crate) enum RequestError {
    /// The connection ended (the process exited, the stream closed, the server sent
    /// something that is not JSON-RPC) before the answer; the text says how.
    Closed(String),
    /// The server answered with a JSON-RPC error.
    Rpc {
        /// Its code.
        code: i64,
        /// Its message, bounded.
        message: String,
    },
    /// The server is not reading what the hub sends (its input is full).
    NotReading,
    /// An HTTP exchange failed (status, body, transport), said in one line.
    Http(String),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Closed(how) => write!(f, "the connection to the server ended: {how}"),
            RequestError::Rpc { code, message } => write!(f, "the server answered error {code}: {message}"),
            RequestError::NotReading => f.write_str("the server is not reading its input"),
            RequestError::Http(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RequestError {}
