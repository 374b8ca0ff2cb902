//! The JSON-RPC error replies of the MCP endpoint that both the HTTP endpoint
//! (`super::http`) and the 2025-11-25 handshake (`super::handshake`) send.

use super::jsonrpc::{self, RpcError};
use crate::surfaces::respond::{self, Resp};
use http::StatusCode;
use serde_json::Value;

/// JSON-RPC code for authentication failures and unknown sessions (implementation-defined range).
pub(super) const SERVER_ERROR: i64 = -32001;

/// A JSON-RPC error `e` answering `id`, with HTTP `status`.
pub(super) fn error(status: StatusCode, id: &Value, e: RpcError) -> Resp {
    respond::json(status, &jsonrpc::error_response(id, &e))
}

/// The session store failed (a database that is down): 503, the request may be
/// retried.
pub(super) fn session_store_error(e: &crate::storage::StorageError) -> Resp {
    crate::error!("mcp: session store: {e}");
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        &Value::Null,
        RpcError::internal(format!("the MCP session store failed: {e}")),
    )
}

/// An unknown or expired session: 404, the client must initialize again.
pub(super) fn session_not_found() -> Resp {
    error(
        StatusCode::NOT_FOUND,
        &Value::Null,
        RpcError::new(
            SERVER_ERROR,
            "session not found (it ended or expired): send initialize to open a new one",
        ),
    )
}
