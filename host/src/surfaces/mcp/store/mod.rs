//! Where the 2025-11-25 era's sessions live: [`McpSessionStore`], owned by the MCP
//! surface, so that any replica can serve a request carrying an `Mcp-Session-Id`.
//! A stored session is what every replica needs: its id, the caller that opened
//! it, the negotiated version, what its client declared, and when it was opened
//! and last used (idle expiry). What a replica runs for a session (in-flight
//! requests and our questions to the client) stays in that replica's
//! `super::session::SessionTable`.
//!
//! The store also keeps the key that signs 2026-07-28 `requestState`s
//! (`super::request_state`), which every replica must share.
//!
//! - `memory`: the sessions in this process (the embedded backend: one process);
//! - `postgres`: the tables `wasmhub_mcp_sessions` and `wasmhub_mcp_keys`,
//!   shared by every replica;
//! - `conformance`: the suite every implementation passes.

#[cfg(test)]
pub(crate) mod conformance;
mod memory;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;

pub(crate) use memory::MemorySessions;

use super::approval::McpClient;
use crate::storage::{Backend, StorageError};
use std::sync::Arc;
use std::time::Duration;

/// Limits of the session table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionLimits {
    /// Most sessions kept at once.
    pub max_sessions: usize,
    /// A session unused for this long is dropped.
    pub idle_ttl: Duration,
}

impl From<&crate::config::ServerConfig> for SessionLimits {
    fn from(server: &crate::config::ServerConfig) -> Self {
        SessionLimits {
            max_sessions: server.mcp_max_sessions,
            idle_ttl: Duration::from_secs(server.mcp_session_idle_minutes.saturating_mul(60)),
        }
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits::from(&crate::config::ServerConfig::default())
    }
}

/// The session store of `backend` with `limits`: this process's memory with
/// the embedded backend, shared tables with PostgreSQL (schema migrated first).
pub(crate) async fn open(
    backend: &Backend,
    limits: SessionLimits,
) -> Result<Arc<dyn McpSessionStore>, StorageError> {
    match backend {
        Backend::Embedded(_) => Ok(Arc::new(MemorySessions::new(limits))),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgMcpSessions::open(pg.clone(), limits).await?)),
    }
}

/// A session as every replica sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredSession {
    /// The token name that opened it (another token's requests get 404).
    pub caller: String,
    /// The version negotiated by its `initialize`.
    pub version: &'static str,
    /// What its client declared at `initialize`.
    pub client: McpClient,
}

/// The session table shared by the replicas. Bounded (`server.mcp_max_sessions`)
/// with an idle expiry (`server.mcp_session_idle_minutes`), both given when the
/// store is built.
#[async_trait::async_trait]
pub(crate) trait McpSessionStore: Send + Sync {
    /// Stores the new session `id`, first removing expired sessions and, while the
    /// table is full, the least recently used; answers the ids removed.
    async fn open(&self, id: &str, session: StoredSession) -> Result<Vec<String>, StorageError>;

    /// Session `id` of `caller`, marked as used now. `None` when unknown, expired
    /// (it is removed) or another caller's.
    async fn touch(&self, id: &str, caller: &str) -> Result<Option<StoredSession>, StorageError>;

    /// Removes session `id` of `caller`. Whether it existed (and was `caller`'s).
    async fn close(&self, id: &str, caller: &str) -> Result<bool, StorageError>;

    /// The key that signs `requestState`s, the same for every replica of the store.
    async fn state_key(&self) -> Result<Vec<u8>, StorageError>;
}
