//! The registry: every callable operation across the loaded plugins (`plugin.op`),
//! the search index over the visible ones, and each plugin's state for the
//! operator. One immutable snapshot per plugin-folder change; the hub swaps it
//! atomically and calls in flight keep the snapshot they started with.
//!
//! Deprecated plugins stay callable but are hidden from `hub_list` and `hub_search`;
//! rejected plugins have no operations and are listed with the reason.

use super::search::{SearchDoc, SearchIndex};
use crate::runtime::{Operation, Plugin, PluginEntry, PluginState, WitVersion};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// One callable operation.
pub(crate) struct OpRef {
    pub tool: String,
    pub plugin: Arc<Plugin>,
    index: usize,
    pub deprecated: bool,
}

impl OpRef {
    pub(super) fn operation(&self) -> &Operation {
        &self.plugin.operations()[self.index]
    }

    /// The operation's position in `plugin.operations()`.
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

/// One snapshot of everything callable.
pub(crate) struct Registry {
    ops: HashMap<String, OpRef>,
    /// Visible (active) tools in name order; `index` documents use the same order.
    visible: Vec<String>,
    pub index: SearchIndex,
    pub plugins: Vec<PluginInfo>,
}

impl Registry {
    pub(super) fn empty() -> Registry {
        Registry::build(Vec::new())
    }

    pub(super) fn build(entries: Vec<PluginEntry>) -> Registry {
        let mut ops = HashMap::new();
        let mut plugins: Vec<PluginInfo> = entries.iter().map(|e| describe(e, &mut ops)).collect();
        plugins.sort_by(|a, b| a.name.cmp(&b.name));
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
        }
    }

    /// The active plugins that give instructions and that `caller` may call an
    /// operation of, as `(plugin, text)` in name order: a stable prefix, so a
    /// provider's prompt cache keeps hitting.
    pub(super) fn instructions<'a>(
        &'a self,
        may_call: impl Fn(&str) -> bool + 'a,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.plugins.iter().filter_map(move |info| {
            if info.state != PluginStatus::Active || !info.instructions {
                return None;
            }
            let tool = info.operations.iter().find(|t| may_call(t))?;
            let plugin = &self.ops[tool].plugin;
            Some((plugin.name(), plugin.instructions()?))
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

    /// Whether a plugin of the first load is still compiling.
    pub(super) fn is_loading(&self) -> bool {
        self.plugins.iter().any(|p| p.state == PluginStatus::Loading)
    }

    /// Whether `tool` (`plugin.op`) belongs to a plugin that is still loading.
    pub(super) fn is_loading_tool(&self, tool: &str) -> bool {
        self.plugins.iter().any(|p| {
            p.state == PluginStatus::Loading
                && tool
                    .strip_prefix(p.name.as_str())
                    .is_some_and(|op| op.starts_with('.'))
        })
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
    let mut operations = Vec::with_capacity(plugin.operations().len());
    for (index, op) in plugin.operations().iter().enumerate() {
        let tool = format!("{}.{}", plugin.name(), op.name);
        operations.push(tool.clone());
        ops.insert(
            tool.clone(),
            OpRef {
                tool,
                plugin: plugin.clone(),
                index,
                deprecated,
            },
        );
    }
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
