//! The registry: every callable operation across the loaded plugins (`plugin.op`),
//! the search index over the visible ones, and each plugin's state for the
//! operator. One immutable snapshot per plugin-folder change; the hub swaps it
//! atomically and calls in flight keep the snapshot they started with.
//!
//! Deprecated plugins stay callable but are hidden from `hub_list` and `hub_search`;
//! rejected plugins have no operations and are listed with the reason.

use super::search::{SearchDoc, SearchIndex};
use crate::runtime::{Operation, Plugin, PluginEntry, PluginState};
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
    pub fn operation(&self) -> &Operation {
        &self.plugin.operations()[self.index]
    }
}

/// A plugin as the operator sees it (`GET /api/plugins`, `Hub::plugins`).
#[derive(Debug, Clone, Serialize)]
pub struct PluginInfo {
    pub name: String,
    pub path: String,
    /// `active`, `deprecated` or `rejected`.
    pub state: &'static str,
    /// Why a rejected plugin was not loaded (one line per problem).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
}

#[derive(Debug, Clone, Serialize)]
pub struct PluginLimits {
    pub memory_mb: u64,
    pub timeout_ms: u64,
    pub output_kb: u64,
    pub input_kb: u64,
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
    pub fn empty() -> Registry {
        Registry::build(Vec::new())
    }

    pub fn build(entries: Vec<PluginEntry>) -> Registry {
        let mut ops = HashMap::new();
        let mut plugins = Vec::with_capacity(entries.len());
        for entry in entries {
            let (state, plugin) = match &entry.state {
                PluginState::Active(p) => ("active", Some(p)),
                PluginState::Deprecated(p) => ("deprecated", Some(p)),
                PluginState::Rejected { .. } => ("rejected", None),
            };
            let mut info = PluginInfo {
                name: entry.name.clone(),
                path: entry.path.display().to_string(),
                state,
                reason: None,
                digest: None,
                operations: Vec::new(),
                capabilities: Vec::new(),
                limits: None,
                notes: Vec::new(),
            };
            match plugin {
                Some(p) => {
                    for (index, op) in p.operations().iter().enumerate() {
                        let tool = format!("{}.{}", p.name(), op.name);
                        info.operations.push(tool.clone());
                        let deprecated = state == "deprecated";
                        ops.insert(
                            tool.clone(),
                            OpRef {
                                tool,
                                plugin: p.clone(),
                                index,
                                deprecated,
                            },
                        );
                    }
                    let l = p.limits();
                    info.digest = Some(p.digest().to_string());
                    info.capabilities = p.manifest().describe();
                    info.limits = Some(PluginLimits {
                        memory_mb: l.memory_mb,
                        timeout_ms: l.timeout_ms,
                        output_kb: l.output_kb,
                        input_kb: l.input_kb,
                    });
                    info.notes = p.notes().to_vec();
                }
                None => {
                    if let PluginState::Rejected { reason, digest } = &entry.state {
                        info.reason = Some(reason.clone());
                        info.digest = digest.clone();
                    }
                }
            }
            plugins.push(info);
        }
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

    /// Any callable operation, deprecated ones included.
    pub fn get(&self, tool: &str) -> Option<&OpRef> {
        self.ops.get(tool)
    }

    /// Visible operations in name order (also the search index's document order).
    pub fn visible(&self) -> impl Iterator<Item = &OpRef> {
        self.visible.iter().map(|t| &self.ops[t])
    }

    /// Visible operation `doc` of the search index.
    pub fn visible_at(&self, doc: usize) -> &OpRef {
        &self.ops[&self.visible[doc]]
    }

    /// Every callable tool name (for "did you mean").
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.ops.keys().map(String::as_str)
    }

    /// Plugins by state, for `/health` and `/metrics`.
    pub fn plugin_counts(&self) -> [(&'static str, usize); 3] {
        let count = |s: &str| self.plugins.iter().filter(|p| p.state == s).count();
        [
            ("active", count("active")),
            ("deprecated", count("deprecated")),
            ("rejected", count("rejected")),
        ]
    }

    pub fn operation_count(&self) -> usize {
        self.ops.len()
    }
}
