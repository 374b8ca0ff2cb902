//! The registry: every callable operation across the loaded plugins (`plugin.op`),
//! the search index over the visible ones, and each plugin's state for the
//! operator. One immutable snapshot per plugin-folder change; the hub swaps it
//! atomically and calls in flight keep the snapshot they started with.
//!
//! Deprecated plugins stay callable but are hidden from `hub_list` and `hub_search`;
//! rejected plugins have no operations and are listed with the reason. The
//! operations of external MCP servers (`[[mcp_servers]]`) are registered the same
//! way, each server under its name unless a plugin has that namespace.

use super::search::{SearchDoc, SearchIndex};
use super::source::Source;
use crate::mcp_client::{ServerEntry, ServerState};
use crate::runtime::{Operation, PluginEntry, PluginState, WitVersion};
use serde::Serialize;
use std::collections::HashMap;

/// One callable operation.
pub(crate) struct OpRef {
    pub tool: String,
    /// The plugin or MCP server it comes from.
    pub source: Source,
    index: usize,
    pub deprecated: bool,
}

impl OpRef {
    pub(super) fn operation(&self) -> &Operation {
        &self.source.operations()[self.index]
    }

    /// The operation's position in `source.operations()`.
    pub(super) fn index(&self) -> usize {
        self.index
    }
}

/// Where a plugin of the folder stands, as the operator sees it. Serialized into
/// [`PluginInfo`] as `"state": "active" | "deprecated" | "rejected" | "loading"`,
/// plus `"reason"` for a rejected one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum PluginStatus {
    /// Loaded; its operations are listed, searched and callable.
    Active,
    /// Loaded and callable, hidden from `hub_list` and `hub_search`.
    Deprecated,
    /// Not loaded: no operations.
    Rejected {
        /// Why (one line per problem).
        reason: String,
    },
    /// Found at start and still compiling: no operations yet; a call to one of its
    /// operations waits for it (`limits.load_wait_ms`).
    Loading,
}

/// The states' wire names, in the order active, deprecated, rejected, loading: what
/// [`PluginStatus::as_str`] and [`PluginCounts::by_state`] say, and (a test checks)
/// what serde writes as `"state"`.
const STATE_NAMES: [&str; 4] = ["active", "deprecated", "rejected", "loading"];

impl PluginStatus {
    /// The wire name: `active`, `deprecated`, `rejected` or `loading`.
    pub fn as_str(&self) -> &'static str {
        let index = match self {
            PluginStatus::Active => 0,
            PluginStatus::Deprecated => 1,
            PluginStatus::Rejected { .. } => 2,
            PluginStatus::Loading => 3,
        };
        STATE_NAMES[index]
    }

    /// Why a rejected plugin was not loaded.
    pub fn reason(&self) -> Option<&str> {
        match self {
            PluginStatus::Rejected { reason } => Some(reason),
            _ => None,
        }
    }
}

/// A plugin as the operator sees it (`GET /api/plugins`, `Hub::plugins`).
#[derive(Debug, Clone, Serialize)]
pub struct PluginInfo {
    /// The file stem, also the namespace of its operations.
    pub name: String,
    /// The `NAME.wasm` file.
    pub path: String,
    /// Its state (`"state"` and, when rejected, `"reason"`).
    #[serde(flatten)]
    pub state: PluginStatus,
    /// sha256 of the `.wasm` file, when it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Tool names (`plugin.op`).
    pub operations: Vec<String>,
    /// What the manifest grants, one line each (secret names, never values).
    pub capabilities: Vec<String>,
    /// Effective limits of a loaded plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<PluginLimits>,
    /// Load-time remarks that did not reject the plugin.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The `wasmhub:plugin` WIT version a loaded plugin targets (`"0.2.0"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wit_version: Option<WitVersion>,
    /// Whether the plugin gives instructions (`hub_list` shows them).
    pub instructions: bool,
    /// The key id of the trusted key whose signature was verified at load (`[trust]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The secrets its manifest declares (names and where each value is, never values).
    pub secrets: Vec<super::SecretNeed>,
    /// The configuration keys its manifest declares, with the values in effect.
    pub config: Vec<super::ConfigNeed>,
}

/// The limits a loaded plugin's calls run under (its manifest's, clamped to the
/// global caps).
#[derive(Debug, Clone, Serialize)]
pub struct PluginLimits {
    /// Linear memory of one instance, in MiB.
    pub memory_mb: u64,
    /// Longest one call runs, in milliseconds.
    pub timeout_ms: u64,
    /// Largest output of one call, in KiB.
    pub output_kb: u64,
    /// Largest input of one call, in KiB.
    pub input_kb: u64,
}

/// Plugins of the folder by state, for `/health` (serialized as
/// `{"active": n, "deprecated": n, "rejected": n, "loading": n}`) and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PluginCounts {
    /// Loaded, listed and callable.
    pub active: usize,
    /// Loaded and callable, hidden from search.
    pub deprecated: usize,
    /// Not loaded, with a reason.
    pub rejected: usize,
    /// Still compiling after the hub started (see [`PluginStatus::Loading`]).
    pub loading: usize,
}

impl PluginCounts {
    /// (state wire name, count) pairs, in the order active, deprecated, rejected,
    /// loading.
    pub fn by_state(&self) -> [(&'static str, usize); 4] {
        let counts = [self.active, self.deprecated, self.rejected, self.loading];
        std::array::from_fn(|i| (STATE_NAMES[i], counts[i]))
    }
}

/// An external MCP server as the operator sees it (`GET /api/mcp-servers`,
/// `Hub::mcp_servers`).
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Its name: the namespace of its operations.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command (without arguments) or the URL (without query or user info).
    pub target: String,
    /// `"state"`: `loading`, `active` or `rejected` (with `"reason"`).
    #[serde(flatten)]
    pub state: PluginStatus,
    /// Tool names (`server.tool`).
    pub operations: Vec<String>,
    /// Tools left out of its last listing, or how it last stopped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Whether the server gives instructions (`hub_list` shows them).
    pub instructions: bool,
    /// Times it was started again.
    pub restarts: u32,
    /// The process of a running stdio server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The MCP revision an active server speaks (`2026-07-28`, or the version
    /// its `initialize` negotiated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// One snapshot of everything callable.
pub(crate) struct Registry {
    ops: HashMap<String, OpRef>,
    /// Visible (active) tools in name order; `index` documents use the same order.
    visible: Vec<String>,
    pub index: SearchIndex,
    pub plugins: Vec<PluginInfo>,
    pub servers: Vec<ServerInfo>,
}

impl Registry {
    pub(super) fn empty() -> Registry {
        Registry::build(Vec::new(), &[])
    }

    pub(super) fn build(entries: Vec<PluginEntry>, servers: &[ServerEntry]) -> Registry {
        let mut ops = HashMap::new();
        let mut plugins: Vec<PluginInfo> = entries.iter().map(|e| describe(e, &mut ops)).collect();
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
        let servers = servers
            .iter()
            .map(|s| describe_server(s, &plugins, &mut ops))
            .collect();
        let mut visible: Vec<String> = ops
            .values()
            .filter(|o| !o.deprecated)
            .map(|o| o.tool.clone())
            .collect();
        visible.sort();
        let index = SearchIndex::build(visible.iter().map(|tool| {
            let op = ops[tool].operation();
            SearchDoc {
                tool,
                description: &op.description,
                input_schema: &op.input_schema,
            }
        }));
        Registry {
            ops,
            visible,
            index,
            plugins,
            servers,
        }
    }

    /// The active plugins, then the active MCP servers, that give instructions
    /// and that `caller` may call an operation of, as `(namespace, text)` in name
    /// order: a stable prefix, so a provider's prompt cache keeps hitting.
    pub(super) fn instructions<'a>(
        &'a self,
        may_call: impl Fn(&str) -> bool + 'a,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let plugins = self
            .plugins
            .iter()
            .map(|p| (&p.state, p.instructions, &p.operations));
        let servers = self
            .servers
            .iter()
            .map(|s| (&s.state, s.instructions, &s.operations));
        plugins
            .chain(servers)
            .filter_map(move |(state, gives, operations)| {
                if *state != PluginStatus::Active || !gives {
                    return None;
                }
                let tool = operations.iter().find(|t| may_call(t))?;
                let source = &self.ops[tool].source;
                Some((source.name(), source.instructions()?))
            })
    }

    /// Any callable operation, deprecated ones included.
    pub(super) fn get(&self, tool: &str) -> Option<&OpRef> {
        self.ops.get(tool)
    }

    /// Visible operations in name order (also the search index's document order).
    pub(super) fn visible(&self) -> impl Iterator<Item = &OpRef> {
        self.visible.iter().map(|t| &self.ops[t])
    }

    /// Visible operation `doc` of the search index.
    pub(super) fn visible_at(&self, doc: usize) -> &OpRef {
        &self.ops[&self.visible[doc]]
    }

    /// Every callable tool name (for "did you mean").
    pub(super) fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.ops.keys().map(String::as_str)
    }

    /// Plugins by state, for `/health` and `/metrics`.
    pub(super) fn plugin_counts(&self) -> PluginCounts {
        let mut counts = PluginCounts::default();
        for plugin in &self.plugins {
            *match plugin.state {
                PluginStatus::Active => &mut counts.active,
                PluginStatus::Deprecated => &mut counts.deprecated,
                PluginStatus::Rejected { .. } => &mut counts.rejected,
                PluginStatus::Loading => &mut counts.loading,
            } += 1;
        }
        counts
    }

    pub(super) fn operation_count(&self) -> usize {
        self.ops.len()
    }

    /// Whether a plugin of the first load is still compiling. MCP servers do not
    /// count: one restarting must not make `/health?ready` refuse the replica.
    pub(super) fn is_loading(&self) -> bool {
        self.plugins.iter().any(|p| p.state == PluginStatus::Loading)
    }

    /// Whether `tool` (`namespace.op`) belongs to a plugin that is still loading
    /// or an MCP server that is (re)starting.
    pub(super) fn is_loading_tool(&self, tool: &str) -> bool {
        let plugins = self.plugins.iter().map(|p| (&p.name, &p.state));
        let servers = self.servers.iter().map(|s| (&s.name, &s.state));
        plugins.chain(servers).any(|(name, state)| {
            *state == PluginStatus::Loading
                && tool
                    .strip_prefix(name.as_str())
                    .is_some_and(|op| op.starts_with('.'))
        })
    }

    /// Why the MCP server that `tool` (`server.op`) would belong to has no
    /// operations, when it is rejected.
    pub(super) fn rejected_server(&self, tool: &str) -> Option<&ServerInfo> {
        let (namespace, _) = tool.split_once('.')?;
        self.servers
            .iter()
            .find(|s| s.name == namespace && s.state.reason().is_some())
    }
}

/// The operator's view of a plugin with no operations (rejected or loading).
fn unloaded(entry: &PluginEntry, state: PluginStatus, digest: Option<String>) -> PluginInfo {
    PluginInfo {
        name: entry.name.clone(),
        path: entry.path.display().to_string(),
        state,
        digest,
        operations: Vec::new(),
        capabilities: Vec::new(),
        limits: None,
        notes: Vec::new(),
        wit_version: None,
        instructions: false,
        signer: None,
        secrets: Vec::new(),
        config: Vec::new(),
    }
}

/// The operator's view of `entry`; a loaded plugin's operations go into `ops`.
fn describe(entry: &PluginEntry, ops: &mut HashMap<String, OpRef>) -> PluginInfo {
    let (state, plugin, digest) = match &entry.state {
        PluginState::Active(p) => (PluginStatus::Active, p, p.digest()),
        PluginState::Deprecated(p) => (PluginStatus::Deprecated, p, p.digest()),
        PluginState::Rejected { reason, digest } => {
            let state = PluginStatus::Rejected {
                reason: reason.clone(),
            };
            return unloaded(entry, state, digest.clone());
        }
        PluginState::Loading => return unloaded(entry, PluginStatus::Loading, None),
    };
    let deprecated = state == PluginStatus::Deprecated;
    let operations = register(&Source::Plugin(plugin.clone()), deprecated, ops);
    let l = plugin.limits();
    let (secrets, config) = super::needs::plugin_needs(plugin);
    PluginInfo {
        name: entry.name.clone(),
        path: entry.path.display().to_string(),
        state,
        digest: Some(digest.to_string()),
        operations,
        capabilities: plugin.manifest().describe(),
        limits: Some(PluginLimits {
            memory_mb: l.memory_mb,
            timeout_ms: l.timeout_ms,
            output_kb: l.output_kb,
            input_kb: l.input_kb,
        }),
        notes: plugin.notes().to_vec(),
        wit_version: Some(plugin.wit_version()),
        instructions: plugin.instructions().is_some(),
        signer: plugin.signer().map(str::to_string),
        secrets,
        config,
    }
}

/// Puts `source`'s operations into `ops`; their tool names.
fn register(source: &Source, deprecated: bool, ops: &mut HashMap<String, OpRef>) -> Vec<String> {
    let mut operations = Vec::with_capacity(source.operations().len());
    for (index, op) in source.operations().iter().enumerate() {
        let tool = format!("{}.{}", source.name(), op.name);
        operations.push(tool.clone());
        ops.insert(
            tool.clone(),
            OpRef {
                tool,
                source: source.clone(),
                index,
                deprecated,
            },
        );
    }
    operations
}

/// The operator's view of an MCP server; an active one's tools go into `ops`
/// unless a plugin already has its namespace.
fn describe_server(
    entry: &ServerEntry,
    plugins: &[PluginInfo],
    ops: &mut HashMap<String, OpRef>,
) -> ServerInfo {
    let mut operations = Vec::new();
    let mut instructions = false;
    let mut protocol = None;
    let state = match &entry.state {
        ServerState::Loading => PluginStatus::Loading,
        ServerState::Rejected(reason) => PluginStatus::Rejected {
            reason: reason.clone(),
        },
        ServerState::Active(_) if plugins.iter().any(|p| p.name == entry.name) => PluginStatus::Rejected {
            reason: format!(
                "the plugin {}.wasm has this namespace; rename the server in [[mcp_servers]]",
                entry.name
            ),
        },
        ServerState::Active(tools) => {
            let source = Source::Mcp(tools.clone());
            instructions = source.instructions().is_some();
            protocol = Some(tools.protocol().to_string());
            operations = register(&source, false, ops);
            PluginStatus::Active
        }
    };
    ServerInfo {
        name: entry.name.clone(),
        transport: entry.transport,
        target: entry.target.clone(),
        state,
        operations,
        notes: entry.notes.clone(),
        instructions,
        restarts: entry.restarts,
        pid: entry.pid,
        protocol,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_are_what_serde_writes() {
        let all = [
            PluginStatus::Active,
            PluginStatus::Deprecated,
            PluginStatus::Rejected { reason: "r".into() },
            PluginStatus::Loading,
        ];
        for (status, name) in all.iter().zip(STATE_NAMES) {
            assert_eq!(status.as_str(), name);
            assert_eq!(serde_json::to_value(status).unwrap()["state"], name);
        }
        let counts = PluginCounts {
            active: 1,
            deprecated: 2,
            rejected: 3,
            loading: 4,
        };
        assert_eq!(
            counts.by_state(),
            [("active", 1), ("deprecated", 2), ("rejected", 3), ("loading", 4)]
        );
    }
}
