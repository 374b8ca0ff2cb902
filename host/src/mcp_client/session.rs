//! One start of a server: its transport (a child process, or HTTP), the
//! `initialize` handshake (the hub asks for the newest handshake-era revision and
//! accepts any it serves itself), `notifications/initialized`, and `tools/list`
//! page by page (at most `max_tools` tools), all within `start_timeout_ms`.

use super::connection::{Connection, Event};
use super::error::StartError;
use super::process::{self, Child};
use crate::config::{McpServerConfig, McpTransport};
use crate::mcp_wire::versions::{HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION};
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
    /// The server's `instructions`, cut at 8 KiB.
    pub instructions: Option<String>,
    /// Every tool entry it listed.
    pub tools: Vec<Value>,
}

/// Starts the server of `config` and lists its tools; a child started for it is
/// stopped again when the start fails.
pub(super) async fn open(config: &McpServerConfig) -> Result<Session, StartError> {
    let (conn, events, mut child) = match config.transport {
        McpTransport::Stdio => {
            let mut child = process::spawn(config)?;
            let (conn, events) = super::stdio::connect(&mut child, config);
            (conn, events, Some(child))
        }
        McpTransport::Http => {
            let (conn, events) = super::http::connect(config)?;
            (conn, events, None)
        }
    };
    let within = Duration::from_millis(config.start_timeout_ms);
    let started = tokio::time::timeout(within, handshake(&conn, config)).await;
    let result = match started {
        Ok(result) => result,
        Err(_) => Err(StartError::Timeout {
            limit_ms: config.start_timeout_ms,
        }),
    };
    match result {
        Ok((instructions, tools)) => Ok(Session {
            conn,
            events,
            child,
            instructions,
            tools,
        }),
        Err(e) => {
            conn.close(format!("the start failed: {e}"));
            if let Some(child) = &mut child {
                child.stop().await;
            }
            Err(e)
        }
    }
}

/// `initialize`, `notifications/initialized`, `tools/list`: the instructions and
/// the tools.
async fn handshake(
    conn: &Connection,
    config: &McpServerConfig,
) -> Result<(Option<String>, Vec<Value>), StartError> {
    let params = json!({
        "protocolVersion": LATEST_HANDSHAKE_VERSION,
        "capabilities": {},
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
        .filter(|text| !text.trim().is_empty())
        .map(|text| bounded_text(text.to_string(), MAX_INSTRUCTIONS_BYTES));
    conn.notify("notifications/initialized", json!({}))
        .map_err(|source| StartError::Request {
            method: "notifications/initialized",
            source,
        })?;
    let tools = list_tools(conn, config.max_tools).await?;
    Ok((instructions, tools))
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
