//! wasmhub: an LLM tool hub that runs WebAssembly component operations in a
//! deny-by-default sandbox and shows models exactly four meta-tools.
//!
//! Layers, top to bottom (a layer only uses the ones below it):
//! - [`cli`]: the `wasmhub` command;
//! - [`surfaces`]: HTTP routes: REST, MCP, the OpenAI proxy, chat, OAuth;
//! - `oauth`: the builtin OAuth 2.1 authorization server (used by `surfaces`,
//!   verifying for `hub` through `hub::grant::TokenVerifier`);
//! - [`agent`]: the agent loop over the meta-tools;
//! - [`llm`]: upstream model providers and the OpenAI -> UI message stream transform;
//! - [`hub`]: the four meta-tools, the registry, search, the call protocol, and
//!   the record pipeline of its audit log and accounting (record logs on the
//!   embedded backend, tables on PostgreSQL);
//! - [`runtime`]: the wasmtime engine, sandbox, loader and plugin cache;
//! - `mcp_client`: external MCP servers (`[[mcp_servers]]`) as operation
//!   sources: stdio child processes (outside the sandbox) and Streamable HTTP;
//! - [`distribution`]: plugins from OCI registries (pull, push, sync) and
//!   their signatures, for the CLI and `serve`;
//! - beside them: [`storage`] (the embedded backend: sled tables and record logs
//!   in segment files; PostgreSQL),
//!   [`config`] and [`toml`], [`sse`],
//!   [`logging`], [`ids`], [`race`], [`clock`] (Unix milliseconds), `prom`
//!   (Prometheus histogram and counter families),
//!   [`http_client`] (outbound HTTP/1 + TLS), `base64`, `mcp_wire` (MCP's
//!   JSON-RPC framing, shared by the MCP server and `mcp_client`), `secret_ref`
//!   (`env:VAR`, `file:/path` references in configuration values), `telemetry`
//!   (OpenTelemetry spans, W3C trace context, the OTLP/HTTP JSON exporter).

#![warn(missing_docs, unreachable_pub)]

pub mod agent;
pub(crate) mod base64;
pub mod cli;
pub(crate) mod clock;
pub mod config;
pub mod distribution;
pub(crate) mod http_client;
pub mod hub;
pub mod ids;
pub(crate) mod json;
pub mod llm;
pub(crate) mod logging;
pub(crate) mod mcp_client;
pub(crate) mod mcp_wire;
pub(crate) mod oauth;
pub(crate) mod percent;
pub(crate) mod prom;
pub(crate) mod race;
pub(crate) mod redact;
pub mod runtime;
pub(crate) mod secret_ref;
pub mod sse;
pub mod storage;
pub mod surfaces;
mod swar;
pub mod telemetry;
#[cfg(test)]
mod test_dir;
pub(crate) mod timing;
pub mod toml;
