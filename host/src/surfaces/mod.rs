//! The HTTP surfaces clients talk to: the listener and router, request guards,
//! authentication, and each API (REST meta-tools, MCP, the OpenAI proxy, the
//! agents on the chat APIs and `/v1/agents/{name}`, the
//! UI-stream and chat endpoints, the chat page, the operator console, metrics,
//! OAuth discovery and the built-in authorization server). Surfaces call the hub and the LLM client;
//! nothing below them calls back up.

// Handlers return `Result<_, Resp>` so a guard can answer early with `?`. The
// response is big (clippy's result_large_err) but it is the answer, sent once:
// boxing it would only add an allocation on the path that ends the request.
#![allow(clippy::result_large_err)]

pub(crate) mod agents;
pub(crate) mod anthropic;
pub(crate) mod approvals;
pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod chat;
pub(crate) mod chat_metrics;
pub(crate) mod console;
pub(crate) mod cors;
pub(crate) mod guard;
pub(crate) mod limit;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub(crate) mod oauth;
pub(crate) mod openai_proxy;
pub(crate) mod parse;
pub(crate) mod query;
pub(crate) mod respond;
pub(crate) mod rest;
pub(crate) mod router;
pub(crate) mod secrets;
pub(crate) mod server;
pub(crate) mod step_accounting;
pub(crate) mod watched;

pub use body::Body;
pub use limit::{LimitRefusal, Permit, RefusalReason, Surface, SurfaceLimits, held};
pub use mcp::McpState;
pub use oauth::OAuthState;
pub use server::{bind, serve};

use crate::config::Config;
use std::sync::Arc;

/// Everything a request handler can reach. Built once by `wasmhub serve`.
pub struct App {
    /// The configuration the hub was started with.
    pub config: Arc<Config>,
    /// Upstream model providers (the OpenAI proxy, the UI stream, the agent loop).
    pub llm: Arc<crate::llm::Llm>,
    /// The meta-tools, the registry and the call protocol.
    pub hub: Arc<crate::hub::Hub>,
    /// The agent loop and its stored conversations (`/api/chat`, `/api/sessions`).
    pub agent: Arc<crate::agent::Agent>,
    /// The MCP server's methods and session table (`/mcp`).
    pub mcp: mcp::McpState,
    /// Requests each surface serves at once, and the lines in front of them.
    pub limits: Arc<SurfaceLimits>,
    /// Discovery and the built-in authorization server (`[oauth]`).
    pub oauth: OAuthState,
}
