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
//! sampling and elicitation refused), `stdio`, `http`, `http_legacy` and `websocket` (the transports; `http_legacy` the
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
mod websocket;

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
    table: Table,
    running: Vec<Running>,
}

/// One enabled server's supervisor.
struct Running {
    config: Arc<McpServerConfig>,
    stop: watch::Sender<supervisor::StopReason>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the server (its waiting calls fail with `why`) and waits until it
    /// is gone.
    async fn stop(self, why: &str) {
        let _ = self.stop.send(Some(why.to_string()));
        let _ = self.task.await;
    }
}

/// The entry a configured server starts with: `loading`, or `rejected` when
/// disabled.
fn initial(config: &McpServerConfig) -> ServerEntry {
    let state = if config.enabled {
        ServerState::Loading
    } else {
        ServerState::Rejected("disabled (enabled = false)".into())
    };
    supervisor::entry(config, state, Vec::new(), 0)
}

impl McpServers {
    /// Publishes every server of `configs` (`loading`, or `rejected` when
    /// disabled) and starts the enabled ones.
    pub(crate) fn start(configs: &[McpServerConfig], on_change: ServersChanged) -> McpServers {
        let entries = configs.iter().map(initial).collect::<Vec<_>>();
        on_change(entries.clone());
        let table = Table {
            entries: Arc::new(Mutex::new(entries)),
            on_change,
        };
        let running = configs
            .iter()
            .filter(|c| c.enabled)
            .map(|c| spawn(c, &table))
            .collect();
        McpServers { table, running }
    }

    /// Makes the running servers those of `configs` (a reloaded configuration):
    /// a server whose entry is gone or changed is stopped (its calls still waiting
    /// fail saying so; a stdio child gets SIGTERM then SIGKILL, an HTTP session
    /// its DELETE), then new and changed ones start; unchanged ones keep running
    /// untouched. Returns the names stopped, started and restarted.
    pub(crate) async fn reconcile(&mut self, configs: &[McpServerConfig]) -> Reconciled {
        let mut done = Reconciled::default();
        let mut keep = Vec::new();
        for running in std::mem::take(&mut self.running) {
            let name = running.config.name.clone();
            match configs.iter().find(|c| c.name == name) {
                Some(c) if c == running.config.as_ref() => keep.push(running),
                Some(c) => {
                    let why =
                        "its [[mcp_servers]] entry changed (configuration reloaded); the server restarts";
                    running.stop(why).await;
                    if c.enabled {
                        done.restarted.push(name);
                    } else {
                        done.stopped.push(name);
                    }
                }
                None => {
                    running
                        .stop("its [[mcp_servers]] entry was removed (configuration reloaded)")
                        .await;
                    done.stopped.push(name);
                }
            }
        }
        // The table in the new order: entries of servers kept stay as they are.
        let kept: Vec<String> = keep.iter().map(|r| r.config.name.clone()).collect();
        let entries = {
            let mut entries = self.table.entries.lock().unwrap_or_else(|e| e.into_inner());
            let fresh: Vec<ServerEntry> = configs
                .iter()
                .map(|c| match entries.iter().find(|e| e.name == c.name) {
                    Some(e) if kept.contains(&c.name) => e.clone(),
                    _ => initial(c),
                })
                .collect();
            *entries = fresh;
            entries.clone()
        };
        (self.table.on_change)(entries);
        for c in configs.iter().filter(|c| c.enabled) {
            if !kept.contains(&c.name) {
                if !done.restarted.contains(&c.name) {
                    done.started.push(c.name.clone());
                }
                keep.push(spawn(c, &self.table));
            }
        }
        self.running = keep;
        done
    }

    /// Stops every server (SIGTERM, then SIGKILL after `stop_grace_ms`) and waits
    /// until each is gone.
    pub(crate) async fn stop(&mut self) {
        for running in self.running.drain(..) {
            running.stop("the hub is stopping").await;
        }
    }
}

/// What [`McpServers::reconcile`] did, by server name.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reconciled {
    pub stopped: Vec<String>,
    pub started: Vec<String>,
    pub restarted: Vec<String>,
}

/// Starts the supervisor of `config`'s server.
fn spawn(config: &McpServerConfig, table: &Table) -> Running {
    let config = Arc::new(config.clone());
    let (stop, stopping) = watch::channel(None);
    let task = tokio::spawn(supervisor::supervise(config.clone(), table.clone(), stopping));
    Running { config, stop, task }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for running in &self.running {
            running.task.abort();
        }
    }
}

/// What a server is, for the operator: the command alone (its arguments and
/// environment may carry secrets) or the URL without its query.
fn target(config: &McpServerConfig) -> String {
    match config.transport {
        McpTransport::Stdio => config.command.clone().unwrap_or_default(),
        McpTransport::Http | McpTransport::Websocket => {
            let url = config.url.as_deref().unwrap_or_default();
            match url.parse::<::http::Uri>() {
                // No user info, no query: either may carry a secret.
                Ok(uri) => format!(
                    "{}://{}{}{}",
                    uri.scheme_str().unwrap_or_default(),
                    uri.host().unwrap_or_default(),
                    uri.port().map(|p| format!(":{p}")).unwrap_or_default(),
                    uri.path()
                ),
                Err(_) => String::new(),
            }
        }
    }
}
