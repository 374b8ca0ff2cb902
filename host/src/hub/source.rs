//! Where an operation comes from, as the call protocol sees it: a Wasm plugin
//! (`runtime::Plugin`, run in the sandbox) or an external MCP server's tools
//! (`mcp_client::McpTools`, a process or a remote service outside it). Both list
//! [`Operation`]s (schemas compiled once, hints) and answer a call with a
//! [`CallOutput`] or a [`CallFailure`], so everything the hub does around a call
//! (validation, allowlists, approvals, the scheduler, deadlines, cancellation,
//! audit and accounting, nested calls) is the same for both.

use crate::mcp_client::McpTools;
use crate::runtime::{CallFailure, CallOutput, Invocation, Operation, Plugin};
use std::sync::Arc;

/// An operation source. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// A loaded Wasm plugin.
    Plugin(Arc<Plugin>),
    /// One start of an MCP server.
    Mcp(Arc<McpTools>),
}

impl Source {
    /// The namespace of its operations.
    pub(crate) fn name(&self) -> &str {
        match self {
            Source::Plugin(p) => p.name(),
            Source::Mcp(m) => m.name(),
        }
    }

    /// Its operations, in listing order.
    pub(crate) fn operations(&self) -> &[Operation] {
        match self {
            Source::Plugin(p) => p.operations(),
            Source::Mcp(m) => m.operations(),
        }
    }

    /// Text a model should read before using it.
    pub(crate) fn instructions(&self) -> Option<&str> {
        match self {
            Source::Plugin(p) => p.instructions(),
            Source::Mcp(m) => m.instructions(),
        }
    }

    /// Longest one call runs, in ms (the plugin's limit, the server's
    /// `call_timeout_ms`).
    pub(crate) fn timeout_ms(&self) -> u64 {
        match self {
            Source::Plugin(p) => p.limits().timeout_ms,
            Source::Mcp(m) => m.timeout_ms(),
        }
    }

    /// Runs operation `op`. Dropping the future stops it (a guest at its next
    /// epoch tick; an MCP server is sent `notifications/cancelled`).
    ///
    /// Both calls are boxed: a guest's (wasmtime's instantiation and call) and an
    /// MCP server's (the HTTP exchange) futures are kilobytes, and unboxed they made
    /// every future above them as big, each moved by value from frame to frame
    /// (`memmove` was 5-6% of a call's CPU). Boxed, a move above is a pointer's.
    pub(crate) async fn call(
        &self,
        op: &str,
        input_json: &str,
        inv: Invocation,
    ) -> Result<CallOutput, CallFailure> {
        match self {
            Source::Plugin(p) => Box::pin(p.call(op, input_json, inv)).await,
            // An MCP server's tool cannot call back into the hub: `inv.nested` is unused.
            // The call's span is current, so the request to the server is its child.
            Source::Mcp(m) => {
                Box::pin(crate::telemetry::within(
                    inv.trace,
                    m.call(op, input_json, inv.deadline),
                ))
                .await
            }
        }
    }
}
