//! The hub: the four meta-tools, the registry of operations across plugins, search,
//! authentication, and the call protocol every surface goes through.
//!
//! [`Hub::invoke`] is the one entry point of every surface (REST, MCP, the agent
//! loop, the CLI): it takes a [`MetaToolRequest`] (a meta-tool with its typed
//! arguments, read from JSON by [`MetaToolRequest::parse`]) and answers with the
//! meta-tool's JSON output or a [`ToolError`]. Per-operation failures inside a
//! `hub_call` batch are data in that output, never a `ToolError`.
//!
//! - `meta_tools`: the four definitions and requests; `answers`: what each one
//!   returns; `registry`: the operation snapshot; `source`: where an operation
//!   comes from (a Wasm plugin or an external MCP server's tools); `agent_calls`:
//!   the agents as operations `agents.NAME`, run by the agent layer through a runner it
//!   registers (the hub never imports the agent);
//! - `search`: BM25F ranking and "did you mean"; `validate`: schema violations;
//!   `checks`: a call's input and output against its schemas;
//! - `state`: the hub's state ([`Core`]) and what a call runs under
//!   (`CallScope`), below the protocol and the approval policy;
//! - `protocol`: one call and batches; `graph`: a call's place in the call graph
//!   and its depth, fan-out and per-request bounds; `cancel`: cancellation trees;
//!   `schedule`: fair shares of the instance pool;
//! - `auth`: tokens, allowlists and the principal's access to stored items
//!   (`Caller::may_access`, `Caller::visible`); `grant`: the seam OAuth token
//!   verifiers plug into, and scopes; `quota`: what a principal may keep
//!   stored; `metrics`: Prometheus;
//! - `records`: the record pipeline (a writer thread per record kind: queue,
//!   batches, retention, reads in order) and a call's records
//!   (`records::CallRecorder`); its kinds are `audit` (the call log) and
//!   `accounting` (usage and cost records of model steps, calls and context guard
//!   activations), stored in record logs (embedded backend) or PostgreSQL.

pub mod accounting;
pub mod agent_calls;
mod answers;
mod approval;
pub(crate) mod audit;
pub(crate) mod auth;
pub(crate) mod cancel;
mod checks;
mod error;
pub mod grant;
mod graph;
mod meta_tools;
mod metrics;
mod needs;
mod state;
pub(crate) use answers::every_call_failed;
pub(crate) use metrics::escape as escape_label;
mod protocol;
mod quota;
pub(crate) mod records;
mod registry;
mod schedule;
pub(crate) mod search;
mod source;
pub(crate) mod validate;

pub use accounting::{AccountingError, AccountingRecord, Page, SessionUsage, Since};
pub use approval::{ApprovalAsk, ApprovalError, ApprovalRecord, DecideError, PendingApproval};
pub use audit::{CallOutcome, CallRecord};
pub use auth::{Allowlist, AuthError, Caller, Credentials, ProfileApprovals, Visible};
pub use cancel::CancelToken;
pub use error::{CallError, ErrorCode, HubError, Limit, ToolError};
pub use grant::{Grant, Rejection, Resource, Scope, Scopes, TokenVerifier};
pub use meta_tools::{
    CallArgs, ListArgs, MetaTool, MetaToolKind, MetaToolRequest, OperationCall, SEARCH_DEFAULT_LIMIT,
    SEARCH_MAX_LIMIT, SchemaArgs, SearchArgs, meta_tools,
};
pub use needs::{ConfigNeed, SecretAdminError, SecretNeed, plugin_needs};
pub use protocol::{ProgressEvent, ProgressFn};
pub use quota::{QuotaExceeded, QuotaKind, QuotaLimit, StorageQuota, StoredUsage};
pub use registry::{PluginCounts, PluginInfo, PluginLimits, PluginStatus, ServerInfo};
pub use search::{SearchDoc, SearchIndex};
pub use validate::Violation;

use crate::config::Config;
use crate::mcp_client::{McpServers, Reconciled, ServerEntry};
use crate::runtime::{LockFile, OnChange, PluginDir, PluginEntry, Runtime, RuntimeError, Secrets};
use crate::storage::Backend;
use approval::Verdict;
use auth::Authenticator;
use registry::Registry;
use serde_json::{Value, json};
use state::{CallScope, Core};
use std::sync::Arc;

/// What one meta-tool invocation runs under.
#[derive(Clone)]
pub struct CallContext {
    /// The token the invocation runs under: its name and allowlist.
    pub caller: Caller,
    /// Cancelling it cancels every call of the invocation and their nested calls.
    pub cancel: CancelToken,
    /// Called once per finished call of a `hub_call` batch.
    pub progress: Option<ProgressFn>,
    /// Who already approved every call of this invocation that asks for one (the
    /// person at `wasmhub call --approve`); `None` for everything else.
    pub approved_by: Option<String>,
    /// The chat session the invocation's calls are accounted to (agent turns).
    pub session: Option<Arc<str>>,
    /// The named agent whose turn makes the calls (recorded with them).
    pub agent: Option<Arc<str>>,
    /// The call whose children the calls are: a sub-agent's turn runs inside
    /// its `agents.NAME` call (`hub::agent_calls`).
    pub parent: Option<agent_calls::ParentCall>,
}

impl CallContext {
    /// A context for `caller` with a fresh cancel token and no progress reports.
    pub fn new(caller: Caller) -> CallContext {
        CallContext {
            caller,
            cancel: CancelToken::new(),
            progress: None,
            approved_by: None,
            session: None,
            agent: None,
            parent: None,
        }
    }
}

/// The hub. Shared as `Arc<Hub>` by every surface.
pub struct Hub {
    /// Holds the registry too (`Core::registry`).
    core: Arc<Core>,
    auth: Authenticator,
    runtime: Runtime,
    /// `oauth.public_url` without a trailing slash, when OAuth is on: the base of
    /// the protected resources a refusal points clients to.
    oauth_base: Option<Arc<str>>,
    /// The latest plugins folder and MCP servers, which the registry is built from.
    sources: std::sync::Mutex<(Vec<PluginEntry>, Vec<ServerEntry>)>,
    /// The supervised `[[mcp_servers]]`, until [`Hub::stop_mcp_servers`].
    mcp: tokio::sync::Mutex<Option<McpServers>>,
    /// [`Hub::stop_mcp_servers`] has run: a reload starts nothing any more.
    mcp_stopped: std::sync::atomic::AtomicBool,
}

impl Hub {
    /// Reads the token secrets (a missing one is an error naming the token), opens
    /// the audit and accounting stores in `backend` (migrating their schema) and
    /// starts their writers. The registry starts empty: hand
    /// [`Hub::apply_plugins`] to `PluginDir::start` as its `on_change`.
    pub async fn new(config: &Config, runtime: Runtime, backend: Backend) -> Result<Arc<Hub>, HubError> {
        let auth = Authenticator::from_config(&config.tokens, &config.storage)?;
        let audit = audit::AuditLog::start(audit::store::open(&backend).await?, &config.audit)
            .map_err(HubError::AuditWriter)?;
        let accounting =
            accounting::Accounting::start(accounting::store::open(&backend).await?, &config.accounting)
                .map_err(HubError::Accounting)?;
        let core = Arc::new(Core {
            tree: config.limits.tree.clone(),
            validation: config.limits.validation.clone(),
            load_wait_ms: config.limits.load.wait_ms,
            agent_timeout_ms: config.limits.call.agent_timeout_ms,
            cpu: runtime.cpu_shares().clone(),
            approvals: approval::Approvals::new(config),
            scheduler: schedule::Scheduler::new(config.limits.pool.max_instances, &config.limits.shares),
            audit,
            accounting: Arc::new(accounting),
            metrics: Default::default(),
            registry: tokio::sync::watch::Sender::new(Arc::new(Registry::empty())),
            agents: std::sync::RwLock::new(Arc::new(agent_calls::AgentSet::new(Vec::new()))),
            agent_runner: std::sync::OnceLock::new(),
        });
        let oauth_base = config.oauth.enabled().then(|| config.oauth.base().into());
        Ok(Arc::new(Hub {
            core,
            auth,
            runtime,
            oauth_base,
            sources: Default::default(),
            mcp: Default::default(),
            mcp_stopped: Default::default(),
        }))
    }

    /// Builds the runtime (compiled-plugin cache under `data_dir`) and the hub on
    /// `backend`, loads the plugins folder `config.plugins_dir` (pinned by `lock`
    /// with `serve --locked`) and keeps watching it. Dropping the [`PluginDir`]
    /// stops the watching.
    pub async fn start(
        config: &Config,
        backend: Backend,
        lock: Option<LockFile>,
    ) -> Result<(Arc<Hub>, PluginDir), HubError> {
        let (hub, runtime, on_change) = Hub::with_runtime(config, backend).await?;
        let dir = PluginDir::start(runtime, config.plugins_dir.clone(), lock, on_change).await?;
        Ok((hub, dir))
    }

    /// Like [`Hub::start`], but returns once the folder is read and loads the
    /// plugins in the background (`serve`, so the listener opens at once): until a
    /// plugin has loaded it is listed as `loading`, and calls to its operations wait
    /// for it (`limits.load_wait_ms`). [`Hub::loaded`] resolves when all have loaded.
    pub async fn start_in_background(
        config: &Config,
        backend: Backend,
        lock: Option<LockFile>,
    ) -> Result<(Arc<Hub>, PluginDir), HubError> {
        let (hub, runtime, on_change) = Hub::with_runtime(config, backend).await?;
        let dir = PluginDir::start_in_background(runtime, config.plugins_dir.clone(), lock, on_change)?;
        Ok((hub, dir))
    }

    /// The runtime, the hub on it, and the `on_change` that feeds the hub's registry.
    async fn with_runtime(
        config: &Config,
        backend: Backend,
    ) -> Result<(Arc<Hub>, Runtime, OnChange), HubError> {
        let store = crate::runtime::secrets::store::open(&backend).await?;
        let secrets = Secrets::new(Some(store), &config.secrets, config.plugin.clone())
            .map_err(RuntimeError::Settings)?;
        let runtime = Runtime::with_secrets(
            &config.limits,
            Some(&config.data_dir.join("compiled")),
            &config.trust,
            secrets,
        )?;
        // Compiled artifacts used to live in the store's `compiled` table; they are
        // files now (`runtime::cache`), and the old table only takes space.
        if let Backend::Embedded(storage) = &backend
            && let Err(e) = storage.drop_table("compiled")
        {
            crate::warn!("store: cannot drop the old compiled-plugin table: {e}");
        }
        let hub = Hub::new(config, runtime.clone(), backend).await?;
        if !config.mcp_servers.is_empty() {
            let servers = McpServers::start(&server_configs(config), hub.servers_changed());
            *hub.mcp.try_lock().expect("nobody else holds it yet") = Some(servers);
        }
        let on_change: OnChange = {
            let hub = Arc::downgrade(&hub);
            // Weak: the watcher must not keep a dropped hub alive.
            Arc::new(move |entries: Vec<PluginEntry>| {
                if let Some(hub) = hub.upgrade() {
                    hub.apply_plugins(entries);
                }
            })
        };
        Ok((hub, runtime, on_change))
    }

    /// Replaces the registry with one built from `entries` (the full set of the
    /// plugins folder) and the MCP servers. What `PluginDir`'s `on_change` calls.
    pub fn apply_plugins(&self, entries: Vec<PluginEntry>) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        sources.0 = entries;
        self.rebuild(&sources);
    }

    /// Replaces the registry with one built from the plugins and `servers` (every
    /// configured MCP server's entry).
    pub(crate) fn apply_servers(&self, servers: Vec<ServerEntry>) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        sources.1 = servers;
        self.rebuild(&sources);
    }

    /// Publishes a registry of `sources` (built under their lock, so two changes
    /// cannot publish out of order).
    fn rebuild(&self, sources: &(Vec<PluginEntry>, Vec<ServerEntry>)) {
        let registry = Arc::new(Registry::build(sources.0.clone(), &sources.1));
        let counts = registry.plugin_counts();
        crate::info!(
            "hub: {} operations from {} active and {} deprecated plugins ({} rejected, {} loading) and {} MCP servers",
            registry.operation_count(),
            counts.active,
            counts.deprecated,
            counts.rejected,
            counts.loading,
            registry.servers.len()
        );
        self.core.registry.send_replace(registry);
    }

    /// What the MCP servers' supervisors call after each change (weak: they must
    /// not keep a dropped hub alive).
    fn servers_changed(self: &Arc<Self>) -> crate::mcp_client::ServersChanged {
        let weak = Arc::downgrade(self);
        Arc::new(move |entries| {
            if let Some(hub) = weak.upgrade() {
                hub.apply_servers(entries);
            }
        })
    }

    /// Applies the `[[mcp_servers]]` of a reloaded `config`: removed servers
    /// stop, added ones start, changed ones restart, the rest keep running
    /// (`McpServers::reconcile`). Nothing after [`Hub::stop_mcp_servers`].
    pub(crate) async fn reload_mcp_servers(self: &Arc<Self>, config: &Config) -> Option<Reconciled> {
        let configs = server_configs(config);
        let mut slot = self.mcp.lock().await;
        match slot.as_mut() {
            Some(servers) => Some(servers.reconcile(&configs).await),
            None if self.mcp_stopped.load(std::sync::atomic::Ordering::Acquire) => None,
            None => {
                let started = configs
                    .iter()
                    .filter(|c| c.enabled)
                    .map(|c| c.name.clone())
                    .collect();
                *slot = Some(McpServers::start(&configs, self.servers_changed()));
                Some(Reconciled {
                    started,
                    ..Reconciled::default()
                })
            }
        }
    }

    /// Stops the MCP servers (stdio ones: SIGTERM, then SIGKILL after their
    /// `stop_grace_ms`) and waits until each is gone; what `serve` and
    /// `mcp --stdio` do before they exit.
    pub async fn stop_mcp_servers(&self) {
        let mut slot = self.mcp.lock().await;
        self.mcp_stopped.store(true, std::sync::atomic::Ordering::Release);
        if let Some(mut servers) = slot.take() {
            servers.stop().await;
        }
    }

    /// Makes `runner` run the calls to `agents.NAME`, once (`false` when a runner
    /// was registered already).
    pub fn register_agents(&self, runner: Arc<dyn agent_calls::AgentRunner>) -> bool {
        self.core.agent_runner.set(runner).is_ok()
    }

    /// The agents callable as `agents.NAME` from now on (replacing the last set).
    pub fn publish_agents(&self, agents: Vec<agent_calls::AgentOperation>) {
        *self
            .core
            .agents
            .write()
            .expect("the agents lock is never poisoned") = Arc::new(agent_calls::AgentSet::new(agents));
    }

    /// Resolves once no plugin of the first load is `loading` any more (at once
    /// after [`Hub::start`]).
    pub async fn loaded(&self) {
        let mut registry = self.core.registry.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = registry.wait_for(|r| !r.is_loading()).await;
    }

    /// The runtime the hub's plugins run in (for starting the plugin folder).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Who a request presenting `creds` comes from.
    pub async fn authenticate(&self, creds: Credentials<'_>) -> Result<Caller, AuthError> {
        self.auth.authenticate(creds).await
    }

    /// Accepts the tokens `verifiers` vouch for (OAuth grants), once, at start-up;
    /// `false` when verifiers were set already.
    pub fn accept_grants(&self, verifiers: Vec<Arc<dyn TokenVerifier>>) -> bool {
        self.auth.accept(verifiers)
    }

    /// The policy a grant to `principal` runs under: the configured token of that
    /// name; `None` when there is none.
    pub fn policy(&self, principal: &str) -> Option<Caller> {
        self.auth.policy(principal)
    }

    /// `oauth.public_url` (no trailing slash) when OAuth is on.
    pub fn oauth_base(&self) -> Option<&str> {
        self.oauth_base.as_deref()
    }

    /// The configured token whose secret is `secret` (a person signing in with a
    /// hub token).
    pub fn configured_token(&self, secret: &str) -> Option<Caller> {
        self.auth.configured(secret)
    }

    /// The caller of a process the operator started (the CLI, MCP over stdio):
    /// every operation allowed, whatever tokens are configured.
    pub fn local_operator(&self) -> Caller {
        self.auth.local()
    }

    /// Runs one meta-tool request: answers with the meta-tool's JSON output or why
    /// it could not run.
    pub async fn invoke(&self, request: MetaToolRequest, ctx: CallContext) -> Result<Value, ToolError> {
        // One unit of tokio's cooperative budget per call: a call that never waits
        // (its guest done within a tick, no slot or permit to wait for) does not
        // yield otherwise, and an embedder's loop of such calls would hold its worker.
        tokio::task::consume_budget().await;
        let started = std::time::Instant::now();
        let answer = self.answer(request, ctx).await;
        crate::timing::record(crate::timing::Stage::Invoke, started);
        answer
    }

    async fn answer(&self, request: MetaToolRequest, ctx: CallContext) -> Result<Value, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let registry = self.snapshot();
        let caller = &ctx.caller;
        match request {
            MetaToolRequest::List(args) => Ok(answers::list(&registry, &self.core.agents(), caller, &args)),
            MetaToolRequest::Search(args) => {
                Ok(answers::search(&registry, &self.core.agents(), caller, &args))
            }
            MetaToolRequest::Schema(args) => answers::schema(&registry, &self.core.agents(), caller, &args),
            MetaToolRequest::Call(args) => {
                let scope = CallScope {
                    core: &self.core,
                    registry: &registry,
                    caller,
                    cancel: &ctx.cancel,
                    approved_by: ctx.approved_by.as_deref(),
                    session: ctx.session.as_ref(),
                    agent: ctx.agent.as_ref(),
                    parent: ctx.parent.as_ref().map(|p| &p.0),
                };
                answers::call(&scope, self.core.tree.max_batch, args, ctx.progress.as_ref()).await
            }
        }
    }

    /// The instructions of the active plugins `caller` may use, in plugin-name order,
    /// as one text for a system prompt or MCP's `instructions`; `None` when no such
    /// plugin gives any.
    pub fn instructions(&self, caller: &Caller) -> Option<String> {
        let registry = self.snapshot();
        let mut text = String::new();
        for (plugin, instructions) in registry.instructions(|tool| caller.may_call(tool)) {
            if text.is_empty() {
                text.push_str("Instructions from the plugins behind the hub's operations:\n");
            }
            text.push_str(&format!("\n## {plugin}\n{}\n", instructions.trim_end()));
        }
        (!text.is_empty()).then_some(text)
    }

    /// For a surface that can ask its own user before it invokes: which of `tools`
    /// the policy wants `caller` to have approved (`Some`), in order. An unknown
    /// tool, or one the policy allows or denies outright, is `None`: invoking it
    /// answers for itself. Run the approved ones with [`CallContext::approved_by`].
    pub fn approvals_needed<'t>(
        &self,
        caller: &Caller,
        tools: impl IntoIterator<Item = &'t str>,
    ) -> Vec<Option<ApprovalAsk>> {
        let registry = self.snapshot();
        let agents = self.core.agents();
        tools
            .into_iter()
            .map(|tool| {
                let op = match registry.get(tool) {
                    Some(op) => approval::Operation::of(op),
                    None => agent_calls::approval_operation(tool, agents.get(tool)?),
                };
                self.core.approvals.ask(caller, op)
            })
            .collect()
    }

    /// The calls waiting for an operator's approval that `by` may see, oldest
    /// first: every one for an operator, a caller's own for anyone else (only an
    /// operator decides them).
    pub fn pending_approvals(&self, by: &Caller) -> Vec<PendingApproval> {
        let mut pending = self.core.approvals.pending.list();
        pending.retain(|p| by.may_access(&p.caller));
        pending
    }

    /// An operator's decision on pending approval `id`: the waiting call runs, or
    /// fails with `approval_denied`. The decision goes into the call's audit record.
    pub fn decide_approval(
        &self,
        id: &str,
        approved: bool,
        reason: Option<String>,
        by: &Caller,
    ) -> Result<PendingApproval, ApprovalError> {
        if !by.is_operator() {
            return Err(ApprovalError::NotOperator(by.name().to_string()));
        }
        let verdict = Verdict {
            approved,
            by: by.name().to_string(),
            reason,
        };
        let decided = self
            .core
            .approvals
            .pending
            .decide(id, verdict)
            .map_err(ApprovalError::Unknown)?;
        crate::info!(
            "approval {id}: {} {} ({}) by {}",
            if approved { "approved" } else { "denied" },
            decided.tool,
            decided.call_id,
            by.name()
        );
        Ok(decided)
    }

    /// Every plugin of the folder with its state (rejected ones with the reason).
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.snapshot().plugins.clone()
    }

    /// Every configured MCP server with its state and operations.
    pub fn mcp_servers(&self) -> Vec<ServerInfo> {
        self.snapshot().servers.clone()
    }

    /// The newest `limit` call records that `visible` admits, newest first.
    /// Waits for the records queued before: call it off the async workers.
    pub fn calls(&self, limit: usize, visible: &Visible) -> Result<Vec<CallRecord>, HubError> {
        self.core.audit.recent(limit, visible)
    }

    /// Accounting: where the agent and the surfaces record model steps and
    /// context guard activations, and read records and session sums.
    pub(crate) fn accounting(&self) -> &Arc<accounting::Accounting> {
        &self.core.accounting
    }

    /// `GET /health`'s body: `"status"` is `"loading"` while a plugin of the first
    /// load is still compiling, then `"ok"`; plugin counts by state and the number
    /// of operations.
    pub fn health(&self) -> Value {
        let registry = self.snapshot();
        let status = if registry.is_loading() { "loading" } else { "ok" };
        json!({
            "status": status,
            "plugins": registry.plugin_counts(),
            "operations": registry.operation_count(),
        })
    }

    /// Prometheus text exposition of the hub's metrics.
    pub fn metrics_text(&self) -> String {
        let registry = self.snapshot();
        let totals = metrics::Totals {
            audit_dropped: self.core.audit.dropped(),
            accounting_dropped: self.core.accounting.dropped(),
            low_priority_calls: self.runtime().cpu_shares().low_priority_calls(),
            low_priority_parses: self.runtime().cpu_shares().low_priority_parses(),
            low_priority_yields: self.runtime().cpu_shares().low_priority_yields(),
            cpu_ticks: self.runtime().cpu_shares().ticks_spent(),
        };
        self.core
            .metrics
            .render(&registry.plugin_counts(), registry.operation_count(), &totals)
    }

    fn snapshot(&self) -> Arc<Registry> {
        self.core.registry.borrow().clone()
    }
}

#[cfg(test)]
mod future_size_tests;
#[cfg(test)]
mod stored_records_tests;

/// `config`'s `[[mcp_servers]]`, each bounded by its `secrets.max_value_kb`.
fn server_configs(config: &Config) -> Vec<crate::config::McpServerConfig> {
    let mut configs = config.mcp_servers.clone();
    for server in &mut configs {
        server.secret_max_bytes = config.secrets.max_value_kb.saturating_mul(1024);
    }
    configs
}
