//! The hub's client of external MCP servers (`[[mcp_servers]]`): each server's
//! tools become an operation source ([`McpTools`]) the hub registers as
//! `NAME.tool` beside the Wasm plugins' operations, called through the same call
//! protocol. Written on `mcp_wire` (the JSON-RPC framing the hub's own MCP server
//! uses) and `http_client`, without an MCP SDK.
//!
//! A stdio server is a child process of the hub, **outside the Wasm sandbox**: it
//! runs with the hub's user and whatever that user may do; the hub only chooses
//! its environment (`env_allow`, `env`) and working directory, and supervises it.
//! What any server says (tool names, descriptions, schemas, annotations,
//! instructions, results) is untrusted input, bounded and checked like a plugin's.
//!
//! Modules: `process` (the child: spawn, SIGTERM then SIGKILL, reaping),
//! `connection` (JSON-RPC requests, answers, cancellation, what the server sends on
//! its own), `asked` (what the hub answers the server's own requests: roots,
//! sampling and elicitation refused), `stdio`, `http` and `http_legacy` (the transports; the last the
//! 2024-11-05 HTTP+SSE fallback), `session` (one start: handshake
//! and listing), `stateless` (the 2026-07-28 revision: the `server/discover`
//! probe, per-request `_meta` and headers, `input_required` answers), `tools` (tool entries as operations: names, bounded schemas,
//! hints), `result` (a `tools/call` result as an output), `server` (calls), and
//! `supervisor` (restart with backoff, relisting); `error` says why.

mod asked;
mod connection;
mod error;
mod http;
mod http_legacy;
mod process;
mod result;
mod server;
mod session;
mod stateless;
mod stdio;
mod supervisor;
mod tools;

pub(crate) use server::McpTools;

use crate::config::{McpServerConfig, McpTransport};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Where a server stands.
#[derive(Clone, Debug)]
pub(crate) enum ServerState {
    /// Starting (or restarting after it stopped): calls to its tools wait.
    Loading,
    /// Started; its tools are operations.
    Active(Arc<McpTools>),
    /// Not started: why (and when the next attempt is), or disabled.
    Rejected(String),
}

/// One configured server as the hub sees it.
#[derive(Clone, Debug)]
pub(crate) struct ServerEntry {
    /// Its name, the namespace of its tools.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// What it is: the command (without arguments or environment) or the URL
    /// (without its query).
    pub target: String,
    pub state: ServerState,
    /// Remarks of its last listing (tools left out) or of its last stop.
    pub notes: Vec<String>,
    /// Times it was started again.
    pub restarts: u32,
    /// The process of a running stdio server.
    pub pid: Option<u32>,
}

/// Called with every server's entry, in configuration order, after each change.
pub(crate) type ServersChanged = Arc<dyn Fn(Vec<ServerEntry>) + Send + Sync>;

/// The entries, and who hears of their changes.
#[derive(Clone)]
pub(super) struct Table {
    entries: Arc<Mutex<Vec<ServerEntry>>>,
    on_change: ServersChanged,
}

impl Table {
    /// Replaces the entry of the same name and publishes them all.
    fn set(&self, entry: ServerEntry) {
        let all = {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = entries.iter_mut().find(|e| e.name == entry.name) {
                *slot = entry;
            }
            entries.clone()
        };
        (self.on_change)(all);
    }
}

/// The configured servers, supervised until [`McpServers::stop`] (or drop, which
/// stops the tasks and signals the children).
pub(crate) struct McpServers {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl McpServers {
    /// Publishes every server of `configs` (`loading`, or `rejected` when
    /// disabled) and starts the enabled ones.
    pub(crate) fn start(configs: &[McpServerConfig], on_change: ServersChanged) -> McpServers {
        let initial = configs
            .iter()
            .map(|c| {
                let state = if c.enabled {
                    ServerState::Loading
                } else {
                    ServerState::Rejected("disabled (enabled = false)".into())
                };
                supervisor::entry(c, state, Vec::new(), 0)
            })
            .collect::<Vec<_>>();
        on_change(initial.clone());
        let table = Table {
            entries: Arc::new(Mutex::new(initial)),
            on_change,
        };
        let (stop, stopping) = watch::channel(false);
        let tasks = configs
            .iter()
            .filter(|c| c.enabled)
            .map(|c| {
                let config = Arc::new(c.clone());
                tokio::spawn(supervisor::supervise(config, table.clone(), stopping.clone()))
            })
            .collect();
        McpServers { stop, tasks }
    }

    /// Stops every server (SIGTERM, then SIGKILL after `stop_grace_ms`) and waits
    /// until each is gone.
    pub(crate) async fn stop(&mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What a server is, for the operator: the command alone (its arguments and
/// environment may carry secrets) or the URL without its query.
fn target(config: &McpServerConfig) -> String {
    match config.transport {
        McpTransport::Stdio => config.command.clone().unwrap_or_default(),
        McpTransport::Http => {
            let url = config.url.as_deref().unwrap_or_default();
            match url.parse::<::http::Uri>() {
                // No user info, no query: either may carry a secret.
                Ok(uri) => format!(
                    "{}://{}{}{}",
                    uri.scheme_str().unwrap_or("http"),
                    uri.host().unwrap_or_default(),
                    uri.port().map(|p| format!(":{p}")).unwrap_or_default(),
                    uri.path()
                ),
                Err(_) => String::new(),
            }
        }
    }
}
