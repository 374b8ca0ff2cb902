//! The MCP server: the hub's four meta-tools for MCP clients, over Streamable HTTP
//! (`/mcp`) and stdio, speaking both live revisions: the 2025-11-25 handshake
//! (`initialize`, sessions) and the stateless 2026-07-28 revision
//! (`server/discover`, per-request `_meta`). Written on hyper without an MCP SDK.
//!
//! Modules, bottom up: `method` (the method names) and `jsonrpc` (framing and
//! error codes), both in `mcp_wire` (shared with anything else that speaks MCP), [`revision`] (which revision a message speaks and the stateless
//! envelope checks), [`backend`] (what the server needs from the hub, implemented
//! for the hub in `hub_backend`), [`dispatch`] (the methods), [`session`] (the
//! bounded session table, shared by the replicas through [`store`]), [`approval`] and [`request_state`] (asking the
//! client's user to approve calls: `elicitation/create` and the 2026-07-28
//! `input_required` round trip), `span` (a request's trace span) and [`metrics`]
//! (`mcp.server.operation.duration`), and the two transports, [`http`] (with `handshake` for
//! the 2025 era and [`exchange`] answering as JSON or SSE) and [`stdio`].

pub(crate) mod approval;
pub(crate) mod backend;
pub(crate) mod dispatch;
pub(crate) mod exchange;
mod handshake;
mod headers;
pub(crate) mod http;
pub(crate) mod hub_backend;
pub(crate) mod metrics;
pub(crate) use crate::mcp_wire::{jsonrpc, method};
mod replies;
pub(crate) mod request_state;
pub(crate) mod revision;
pub(crate) mod session;
mod span;
pub(crate) mod stdio;
pub(crate) mod store;

use dispatch::Dispatcher;
use session::SessionTable;
use std::sync::Arc;
use store::McpSessionStore;
#[cfg(test)]
use store::MemorySessions;
use store::SessionLimits;

/// The MCP server's state, shared by every request to `/mcp`.
pub struct McpState {
    /// Answers each JSON-RPC method.
    pub(crate) dispatcher: Arc<Dispatcher>,
    /// The 2025-11-25 era's sessions (`Mcp-Session-Id`).
    pub(crate) sessions: Arc<SessionTable>,
}

impl McpState {
    /// The MCP server over `backend`, with `limits` on its session table.
    #[cfg(test)]
    pub(crate) fn new(backend: Arc<dyn backend::McpBackend>, limits: SessionLimits) -> McpState {
        McpState::with_dispatcher(Dispatcher::new(backend), Arc::new(MemorySessions::new(limits)))
    }

    fn with_dispatcher(dispatcher: Dispatcher, store: Arc<dyn McpSessionStore>) -> McpState {
        McpState {
            dispatcher: Arc::new(dispatcher),
            sessions: Arc::new(SessionTable::new(store)),
        }
    }

    /// The MCP server over `hub`, with the session limits and approval time of
    /// `[server]`; its sessions and `requestState` key in `backend` (this
    /// process's memory with the embedded backend, tables shared by the replicas
    /// with PostgreSQL).
    pub async fn open(
        hub: Arc<crate::hub::Hub>,
        server: &crate::config::ServerConfig,
        backend: &crate::storage::Backend,
    ) -> Result<McpState, crate::storage::StorageError> {
        let store = store::open(backend, SessionLimits::from(server)).await?;
        let key = store.state_key().await?;
        let hub_backend = Arc::new(hub_backend::HubBackend::new(hub));
        let approval_time = std::time::Duration::from_secs(server.mcp_approval_secs);
        let dispatcher = Dispatcher::with_approval_time(hub_backend, approval_time).with_state_key(&key);
        Ok(McpState::with_dispatcher(dispatcher, store))
    }
}

#[cfg(test)]
mod http_tests;
