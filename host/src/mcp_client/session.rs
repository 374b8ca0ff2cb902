//! One start of a server: its transport (a child process, HTTP, or a
//! WebSocket), the
//! revision (`stateless`'s `server/discover` probe; when the server does not
//! speak 2026-07-28, the `initialize` handshake, asking for the newest
//! handshake-era revision and accepting any the hub serves itself, then
//! `notifications/initialized`), and `tools/list` page by page (at most
//! `max_tools` tools), all within `start_timeout_ms`.

use super::connection::{Connection, Event};
use super::error::StartError;
use super::process::{self, Child};
use super::stateless::{self, Era};
use crate::config::{McpServerConfig, McpTransport};
use crate::mcp_wire::versions::{HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, STATELESS_VERSION};
use crate::runtime::{MAX_INSTRUCTIONS_BYTES, bounded_text};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// A started server.
pub(super) struct Session {
    pub conn: Arc<Connection>,
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The process of a stdio server.
    pub child: Option<Child>,
    /// The transport of an HTTP server (its session ends at stop).
    pub http: Option<Arc<super::http::HttpOut>>,
    /// The server's `instructions`, cut at 8 KiB.
    pub instructions: Option<String>,
    /// The protocol revision it speaks.
    pub protocol: String,
    /// Every tool entry it listed.
    pub tools: Vec<Value>,
}

/// Starts the server of `config` and lists its tools; a child started for it is
/// stopped again when the start fails. `probe`: ask `server/discover` first.
pub(super) async fn open(config: &McpServerConfig, probe: bool) -> Result<Session, StartError> {
    let (conn, events, child, http) = match config.transport {
        McpTransport::Stdio => {
            let mut child = process::spawn(config)?;
            let (conn, events) = super::stdio::connect(&mut child, config);
            (conn, events, Some(child), None)
        }
        McpTransport::Http => {
            let (conn, events, out) = super::http::connect(config)?;
            (conn, events, None, Some(out))
        }
        McpTransport::Websocket => {
            let within = Duration::from_millis(config.start_timeout_ms);
            let opened = tokio::time::timeout(within, super::websocket::connect(config)).await;
            let (conn, events) = opened.map_err(|_| StartError::Timeout {
                limit_ms: config.start_timeout_ms,
            })??;
            (conn, events, None, None)
        }
    };
    let within = Duration::from_millis(config.start_timeout_ms);
    let started = tokio::time::timeout(within, handshake(&conn, config, probe)).await;
    let result = match started {
        Ok(result) => result,
        Err(_) => Err(StartError::Timeout {
            limit_ms: config.start_timeout_ms,
        }),
    };
    match result {
        Ok(Opened {
            instructions,
            protocol,
            tools,
        }) => Ok(Session {
            conn,
            events,
            child,
            http,
            instructions,
            protocol,
            tools,
        }),
        Err(e) => {
            conn.close(format!("the start failed: {e}"));
            let mut failed = Session {
                conn,
                events,
                child,
                http,
                instructions: None,
                protocol: String::new(),
                tools: Vec::new(),
            };
            failed.stop(config).await;
            Err(e)
        }
    }
}

impl Session {
    /// Stops what is left of the server: a stdio child gets SIGTERM, then
    /// SIGKILL after `stop_grace_ms`, and is reaped; an HTTP server's session is
    /// ended (DELETE) within `stop_grace_ms`.
    pub(super) async fn stop(&mut self, config: &McpServerConfig) {
        if let Some(child) = &mut self.child {
            child.stop().await;
        }
        if let Some(out) = self.http.take() {
            let grace = Duration::from_millis(config.stop_grace_ms);
            if let Some(status) = super::http::end_session(&out, grace).await {
                crate::info!(
                    "mcp server {}: ended its HTTP session (DELETE answered {status})",
                    config.name
                );
            }
        }
    }
}

/// What a start learnt.
struct Opened {
    instructions: Option<String>,
    protocol: String,
    tools: Vec<Value>,
}

/// The probe (when `probe`), else or when it says so `initialize` and
/// `notifications/initialized`; then `tools/list`.
async fn handshake(conn: &Connection, config: &McpServerConfig, probe: bool) -> Result<Opened, StartError> {
    let era = if probe {
        stateless::probe(conn)
            .await
            .map_err(|source| StartError::Request {
                method: "server/discover",
                source,
            })?
    } else {
        Era::Handshake("not probed: the server ended the connection on server/discover before".into())
    };
    let (instructions, protocol) = match era {
        Era::Stateless(found) => {
            if !found.tools {
                return Err(StartError::Handshake(
                    "the server does not offer tools (no capabilities.tools in server/discover)".into(),
                ));
            }
            conn.adopt_stateless(stateless::meta());
            crate::info!(
                "mcp server {}: speaks {STATELESS_VERSION} ({})",
                config.name,
                found.server_name.as_deref().unwrap_or("unnamed")
            );
            (found.instructions, STATELESS_VERSION.to_string())
        }
        Era::Handshake(why) => {
            crate::info!("mcp server {}: initialize ({why})", config.name);
            initialize(conn).await?
        }
    };
    let instructions = instructions
        .filter(|text| !text.trim().is_empty())
        .map(|text| bounded_text(text, MAX_INSTRUCTIONS_BYTES));
    let tools = list_tools(conn, config.max_tools).await?;
    Ok(Opened {
        instructions,
        protocol,
        tools,
    })
}

/// `initialize` and `notifications/initialized`: the instructions and the
/// negotiated version.
async fn initialize(conn: &Connection) -> Result<(Option<String>, String), StartError> {
    let params = json!({
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": super::asked::Asked::capabilities(),
        "clientInfo": { "name": "wasmhub", "version": env!("CARGO_PKG_VERSION") },
    });
    let init = conn
        .request("initialize", params, false)
        .await
        .map_err(|source| StartError::Request {
            method: "initialize",
            source,
        })?;
    let version = init.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    if !HANDSHAKE_VERSIONS.contains(&version) {
        return Err(StartError::Handshake(format!(
            "the server answered protocol version {:?}; the hub speaks {}",
            bounded_text(version.to_string(), 64),
            HANDSHAKE_VERSIONS.join(", ")
        )));
    }
    if init.pointer("/capabilities/tools").is_none() {
        return Err(StartError::Handshake(
            "the server does not offer tools (no capabilities.tools)".into(),
        ));
    }
    let instructions = init
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string);
    conn.notify("notifications/initialized", json!({}))
        .map_err(|source| StartError::Request {
            method: "notifications/initialized",
            source,
        })?;
    Ok((instructions, version.to_string()))
}

/// Every page of `tools/list`, at most `max_tools` entries.
pub(super) async fn list_tools(conn: &Connection, max_tools: usize) -> Result<Vec<Value>, StartError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = conn
            .request("tools/list", params, true)
            .await
            .map_err(|source| StartError::Request {
                method: "tools/list",
                source,
            })?;
        let Some(Value::Array(entries)) = page.get("tools") else {
            return Err(StartError::Handshake(
                "its tools/list answer has no \"tools\" array".into(),
            ));
        };
        if tools.len() + entries.len() > max_tools {
            return Err(StartError::TooManyTools { limit: max_tools });
        }
        tools.extend(entries.iter().cloned());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_string()),
            _ => return Ok(tools),
        }
    }
}
