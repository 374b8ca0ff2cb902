//! The hub: the four meta-tools, the registry of operations across plugins, search,
//! authentication, and the call protocol every surface goes through.
//!
//! [`Hub::invoke`] is the one entry point of every surface (REST, MCP, the agent
//! loop, the CLI): it takes a meta-tool name and its JSON arguments and answers
//! with the meta-tool's JSON output or a [`ToolError`]. Per-operation failures
//! inside a `hub_call` batch are data in that output, never a `ToolError`.
//!
//! - `meta_tools`: the four definitions; `registry`: the operation snapshot;
//! - `search`: BM25F ranking and "did you mean"; `validate`: schema violations;
//! - `protocol`: one call and batches; `cancel`: cancellation trees;
//! - `auth`: tokens and allowlists; `audit`: the call log; `metrics`: Prometheus.

pub mod audit;
pub mod auth;
pub mod cancel;
mod error;
mod meta_tools;
mod metrics;
mod protocol;
mod registry;
pub mod search;
pub mod validate;

pub use audit::CallRecord;
pub use auth::{Allowlist, AuthError, Caller};
pub use cancel::CancelToken;
pub use error::{CallError, ErrorCode, HubError, ToolError};
pub use meta_tools::{MetaTool, MetaToolKind, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, meta_tools};
pub use protocol::{ProgressEvent, ProgressFn};
pub use registry::{PluginInfo, PluginLimits};

use crate::config::Config;
use crate::runtime::{LockFile, PluginDir, PluginEntry, Runtime};
use crate::storage::Storage;
use auth::Authenticator;
use protocol::{CallScope, Core};
use registry::Registry;
use serde_json::{Map, Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

/// What one meta-tool invocation runs under.
#[derive(Clone)]
pub struct CallContext {
    pub caller: Caller,
    /// Cancelling it cancels every call of the invocation and their nested calls.
    pub cancel: CancelToken,
    /// Called once per finished call of a `hub_call` batch.
    pub progress: Option<ProgressFn>,
}

impl CallContext {
    /// A context for `caller` with a fresh cancel token and no progress reports.
    pub fn new(caller: Caller) -> CallContext {
        CallContext {
            caller,
            cancel: CancelToken::new(),
            progress: None,
        }
    }
}

/// The hub. Shared as `Arc<Hub>` by every surface.
pub struct Hub {
    core: Arc<Core>,
    /// Swapped whole on every plugin-folder change; calls keep the snapshot they
    /// started with.
    registry: RwLock<Arc<Registry>>,
    auth: Authenticator,
    runtime: Runtime,
}

impl Hub {
    /// Reads the token secrets (a missing one is an error naming the token), opens
    /// the audit table and starts its writer. The registry starts empty: hand
    /// [`Hub::apply_plugins`] to `PluginDir::start` as its `on_change`.
    pub fn new(config: &Config, runtime: Runtime, storage: Storage) -> Result<Arc<Hub>, HubError> {
        let auth = Authenticator::from_config(&config.tokens)?;
        let audit = audit::AuditLog::start(storage.table("calls")?, &config.audit)?;
        let core = Arc::new(Core {
            limits: config.limits.clone(),
            audit,
            metrics: Default::default(),
        });
        Ok(Arc::new(Hub {
            core,
            registry: RwLock::new(Arc::new(Registry::empty())),
            auth,
            runtime,
        }))
    }

    /// Builds the runtime (compiled-plugin cache in `storage`) and the hub, loads the
    /// plugins folder `config.plugins_dir` (pinned by `lock` with `serve --locked`)
    /// and keeps watching it. Dropping the [`PluginDir`] stops the watching.
    pub async fn start(
        config: &Config,
        storage: Storage,
        lock: Option<LockFile>,
    ) -> Result<(Arc<Hub>, PluginDir), HubError> {
        let runtime = Runtime::new(&config.limits, Some(storage.clone()))?;
        let hub = Hub::new(config, runtime.clone(), storage)?;
        let on_change = {
            let hub = Arc::downgrade(&hub);
            // Weak: the watcher must not keep a dropped hub alive.
            Arc::new(move |entries: Vec<PluginEntry>| {
                if let Some(hub) = hub.upgrade() {
                    hub.apply_plugins(entries);
                }
            })
        };
        let dir = PluginDir::start(runtime, config.plugins_dir.clone(), lock, on_change).await?;
        Ok((hub, dir))
    }

    /// Replaces the registry with one built from `entries` (the full set of the
    /// plugins folder). What `PluginDir`'s `on_change` calls.
    pub fn apply_plugins(&self, entries: Vec<PluginEntry>) {
        let registry = Arc::new(Registry::build(entries));
        let [(_, active), (_, deprecated), (_, rejected)] = registry.plugin_counts();
        crate::info!(
            "hub: {} operations from {active} active and {deprecated} deprecated plugins ({rejected} rejected)",
            registry.operation_count()
        );
        *self.registry.write().unwrap_or_else(|p| p.into_inner()) = registry;
    }

    /// The runtime the hub's plugins run in (for starting the plugin folder).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Who a request comes from: `bearer` is the token after `Bearer `.
    pub fn authenticate(&self, bearer: Option<&str>, peer: SocketAddr) -> Result<Caller, AuthError> {
        self.auth.authenticate(bearer, peer)
    }

    /// Runs meta-tool `tool` (`hub_list`, `hub_search`, `hub_schema`, `hub_call`, or
    /// the dotted aliases) with `args` (`null` counts as `{}`).
    pub async fn invoke(&self, tool: &str, args: Value, ctx: CallContext) -> Result<Value, ToolError> {
        let kind = MetaToolKind::parse(tool).ok_or_else(|| ToolError::UnknownTool {
            name: tool.to_string(),
            suggestions: search::suggest(tool, meta_tools().iter().map(|t| t.name)),
        })?;
        let args = if args.is_null() {
            Value::Object(Map::new())
        } else {
            args
        };
        check_arguments(kind, &args)?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let registry = self.snapshot();
        let caller = &ctx.caller;
        match kind {
            MetaToolKind::List => Ok(list(
                &registry,
                caller,
                args.get("namespace").and_then(Value::as_str),
            )),
            MetaToolKind::Search => Ok(search(&registry, caller, &args)),
            MetaToolKind::Schema => schema(&registry, caller, args["tool"].as_str().unwrap_or_default()),
            MetaToolKind::Call => self.call(&registry, &ctx, &args).await,
        }
    }

    /// Every plugin of the folder with its state (rejected ones with the reason).
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.snapshot().plugins.clone()
    }

    /// The newest `limit` call records, newest first.
    pub fn calls(&self, limit: usize) -> Result<Vec<CallRecord>, HubError> {
        Ok(self.core.audit.recent(limit)?)
    }

    /// Plugin counts by state and the number of operations, for `GET /health`.
    pub fn health(&self) -> Value {
        let registry = self.snapshot();
        let counts: Map<String, Value> = registry
            .plugin_counts()
            .iter()
            .map(|(s, n)| (s.to_string(), json!(n)))
            .collect();
        json!({ "plugins": counts, "operations": registry.operation_count() })
    }

    /// Prometheus text exposition of the hub's metrics.
    pub fn metrics_text(&self) -> String {
        let registry = self.snapshot();
        self.core.metrics.render(
            &registry.plugin_counts(),
            registry.operation_count(),
            self.core.audit.dropped(),
        )
    }

    fn snapshot(&self) -> Arc<Registry> {
        self.registry.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    async fn call(
        &self,
        registry: &Arc<Registry>,
        ctx: &CallContext,
        args: &Value,
    ) -> Result<Value, ToolError> {
        let calls = args["calls"].as_array().map(Vec::as_slice).unwrap_or_default();
        let limit = self.core.limits.max_batch;
        if calls.len() > limit {
            return Err(ToolError::BatchTooLarge {
                count: calls.len(),
                limit,
            });
        }
        let calls: Vec<(String, Value)> = calls
            .iter()
            .map(|c| {
                let tool = c["tool"].as_str().unwrap_or_default().to_string();
                (
                    tool,
                    c.get("input")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Map::new())),
                )
            })
            .collect();
        let scope = CallScope {
            core: &self.core,
            registry,
            caller: &ctx.caller,
            cancel: &ctx.cancel,
        };
        let tools: Vec<String> = calls.iter().map(|(tool, _)| tool.clone()).collect();
        let outcomes = protocol::call_batch(&scope, calls, ctx.progress.as_ref()).await;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let results: Vec<Value> = tools
            .into_iter()
            .zip(outcomes)
            .map(|(tool, outcome)| match outcome {
                Ok(result) => json!({ "tool": tool, "ok": true, "result": result }),
                Err(error) => json!({ "tool": tool, "ok": false, "error": error.to_json() }),
            })
            .collect();
        Ok(json!({ "results": results }))
    }
}

/// Validates meta-tool arguments against the meta-tool's input schema.
fn check_arguments(kind: MetaToolKind, args: &Value) -> Result<(), ToolError> {
    let tool = kind.tool();
    let (violations, extra) = validate::violations(&tool.validator, &tool.input_schema, args);
    if violations.is_empty() {
        return Ok(());
    }
    Err(ToolError::InvalidArguments {
        message: format!(
            "invalid arguments for {}: {}",
            tool.name,
            validate::summary(&violations, extra)
        ),
        violations,
    })
}

/// One `hub_list` entry: tool, description and the hints that hold.
fn entry(op: &registry::OpRef) -> Value {
    let operation = op.operation();
    let mut out = Map::new();
    out.insert("tool".into(), json!(op.tool));
    out.insert("description".into(), json!(operation.description));
    let hints = &operation.hints;
    for (name, set) in [
        ("readOnly", hints.read_only),
        ("destructive", hints.destructive),
        ("idempotent", hints.idempotent),
        ("openWorld", hints.open_world),
    ] {
        if set {
            out.insert(name.into(), Value::Bool(true));
        }
    }
    Value::Object(out)
}

/// Visible operations `caller` may call, in name order, optionally one namespace.
fn callable<'a>(
    registry: &'a Registry,
    caller: &'a Caller,
    namespace: Option<&'a str>,
) -> impl Iterator<Item = &'a registry::OpRef> {
    registry
        .visible()
        .filter(move |op| namespace.is_none_or(|ns| op.plugin.name() == ns) && caller.may_call(&op.tool))
}

fn list(registry: &Registry, caller: &Caller, namespace: Option<&str>) -> Value {
    let operations: Vec<Value> = callable(registry, caller, namespace).map(entry).collect();
    json!({ "operations": operations })
}

fn search(registry: &Registry, caller: &Caller, args: &Value) -> Value {
    let q = args.get("q").and_then(Value::as_str).unwrap_or("").trim();
    let namespace = args.get("namespace").and_then(Value::as_str);
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(SEARCH_DEFAULT_LIMIT, |l| l as usize);
    let result = |op: &registry::OpRef, score: f32| json!({ "tool": op.tool, "description": op.operation().description, "score": (score * 1000.0).round() / 1000.0 });
    let results: Vec<Value> = if q.is_empty() {
        // No query: everything visible, in name order.
        callable(registry, caller, namespace)
            .take(limit)
            .map(|op| result(op, 0.0))
            .collect()
    } else {
        let index = &registry.index;
        index
            .search(q, namespace, limit, |doc| caller.may_call(index.tool(doc)))
            .into_iter()
            .map(|hit| result(registry.visible_at(hit.doc), hit.score))
            .collect()
    };
    json!({ "results": results })
}

fn schema(registry: &Registry, caller: &Caller, tool: &str) -> Result<Value, ToolError> {
    let Some(op) = registry.get(tool) else {
        let suggestions = search::suggest(tool, registry.tool_names().filter(|t| caller.may_call(t)));
        return Err(ToolError::NotFound {
            tool: tool.to_string(),
            suggestions,
        });
    };
    if !caller.may_call(tool) {
        return Err(ToolError::Forbidden {
            tool: tool.to_string(),
            caller: caller.name.clone(),
        });
    }
    let operation = op.operation();
    let mut out = json!({
        "tool": op.tool,
        "description": operation.description,
        "inputSchema": operation.input_schema,
    });
    if let Some(output) = &operation.output_schema {
        out["outputSchema"] = output.clone();
    }
    Ok(out)
}
