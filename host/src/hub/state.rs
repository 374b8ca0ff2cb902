//! The hub's whole state behind the call protocol ([`Core`]: limits, CPU shares,
//! approvals, the scheduler, the audit log and accounting (`hub::records`),
//! metrics and the registry) and what one call runs under ([`CallScope`]). It sits below the call
//! protocol (`hub::protocol`) and the approval policy (`hub::approval`), which
//! both use it, so neither imports the other for it.

use super::accounting::Accounting;
use super::approval::Approvals;
use super::audit::AuditLog;
use super::auth::Caller;
use super::cancel::CancelToken;
use super::metrics::Metrics;
use super::registry::Registry;
use super::schedule::Scheduler;
use crate::config::Limits;
use crate::runtime::CpuShares;
use std::sync::Arc;

/// What every call needs from the hub, shared with nested calls and batch tasks.
pub(crate) struct Core {
    pub limits: Limits,
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
}
