//! The hub's whole state behind the call protocol ([`Core`]: limits, CPU shares,
//! approvals, the scheduler, the audit log and accounting (`hub::records`),
//! metrics and the registry) and what one call runs under ([`CallScope`]). It sits below the call
//! protocol (`hub::protocol`) and the approval policy (`hub::approval`), which
//! both use it, so neither imports the other for it.

use super::accounting::Accounting;
use super::agent_calls::{AgentRunner, AgentSet};
use super::approval::Approvals;
use super::audit::AuditLog;
use super::auth::Caller;
use super::cancel::CancelToken;
use super::graph::Frame;
use super::metrics::Metrics;
use super::registry::Registry;
use super::schedule::Scheduler;
use crate::config::{TreeLimits, ValidationLimits};
use crate::runtime::CpuShares;
use std::sync::Arc;

/// What every call needs from the hub, shared with nested calls and batch tasks.
pub(crate) struct Core {
    /// The call tree's bounds (`hub::graph`) and the batch size.
    pub tree: TreeLimits,
    /// The schema checks' bounds (`hub::checks`).
    pub validation: ValidationLimits,
    /// How long a call waits for its plugin's first load (`limits.load_wait_ms`).
    pub load_wait_ms: u64,
    /// The deadline of a call to an agent (`limits.agent_timeout_ms`).
    pub agent_timeout_ms: u64,
    /// Each tenant's CPU share (the runtime's), for large validations.
    pub cpu: Arc<CpuShares>,
    pub approvals: Approvals,
    pub scheduler: Scheduler,
    pub audit: AuditLog,
    /// Accounting (`hub::accounting`): one record per call beside its audit
    /// record; the agent and the surfaces hold it too.
    pub accounting: Arc<Accounting>,
    pub metrics: Metrics,
    /// The current registry, swapped whole on every plugin-folder change (calls
    /// keep the snapshot they started with); a call waiting for a loading plugin
    /// watches it.
    pub registry: tokio::sync::watch::Sender<Arc<Registry>>,
    /// The agents callable as `agents.NAME` (`hub::agent_calls`), swapped whole.
    pub agents: std::sync::RwLock<Arc<AgentSet>>,
    /// What runs them, registered once by the agent layer.
    pub agent_runner: std::sync::OnceLock<Arc<dyn AgentRunner>>,
}

impl Core {
    /// The agents published now.
    pub(crate) fn agents(&self) -> Arc<AgentSet> {
        self.agents
            .read()
            .expect("the agents lock is never poisoned")
            .clone()
    }
}

/// Everything a call runs under.
pub(crate) struct CallScope<'a> {
    pub core: &'a Arc<Core>,
    pub registry: &'a Arc<Registry>,
    pub caller: &'a Caller,
    pub cancel: &'a CancelToken,
    /// Who already approved every call of this invocation that asks for one
    /// (`wasmhub call --approve`); `None`: nobody has.
    pub approved_by: Option<&'a str>,
    /// The chat session the calls are accounted to.
    pub session: Option<&'a Arc<str>>,
    /// The named agent whose turn makes the calls.
    pub agent: Option<&'a Arc<str>>,
    /// The call whose children these calls are (a sub-agent's calls).
    pub parent: Option<&'a Arc<Frame>>,
}

impl CallScope<'_> {
    /// The chain of tools a call to `tool` (a child of `parent`, if any) sits at
    /// the end of, once the call graph's bounds and the caller's allowlist let it
    /// run.
    pub(crate) fn admit(
        &self,
        parent: Option<&Frame>,
        tool: &str,
    ) -> Result<Vec<String>, super::error::CallError> {
        let chain = match parent {
            Some(p) => super::graph::check_graph(p, tool, &self.core.tree)?,
            None => vec![tool.to_string()],
        };
        super::error::check_allowed(self.caller, tool)?;
        Ok(chain)
    }

    /// The frame of a call `id` made in this scope as a child of `parent` (or a
    /// tree's first call): `chain`, `deadline` and `cancel` are the call's own,
    /// `agent` the named agent its records name.
    pub(crate) fn frame(
        &self,
        parent: Option<&Frame>,
        id: String,
        chain: Vec<String>,
        deadline: crate::runtime::Deadline,
        cancel: CancelToken,
        agent: Option<Arc<str>>,
    ) -> Frame {
        Frame {
            id,
            chain,
            deadline,
            cancel,
            caller: self.caller.clone(),
            approved_by: self.approved_by.map(str::to_string),
            session: self.session.cloned(),
            agent,
            registry: self.registry.clone(),
            nested: std::sync::atomic::AtomicU32::new(0),
            // The top-level call is the tree's first.
            tree_calls: parent.map_or_else(
                || Arc::new(std::sync::atomic::AtomicU32::new(1)),
                |p| p.tree_calls.clone(),
            ),
            trace: None,
        }
    }
}
