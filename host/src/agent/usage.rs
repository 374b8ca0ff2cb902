//! Each model step of a turn, reported to the hub's accounting (`hub::accounting`):
//! the session, the assistant message, the provider and model the step was sent
//! to, the usage the provider reported and how long the step took; and each
//! activation of the context guard, counted in `/metrics` and accounted with its
//! tokens. Steps are numbered within the assistant message, as its part ids are,
//! so a turn continued after an approval counts on. The turn's tool calls are
//! accounted by the call protocol, under the same session (`CallContext::session`).

use super::budget::ContextGuardEvent;
use super::guard_metrics::GuardMetrics;
use crate::hub::{GuardReport, Hub, StepReport};
use crate::llm::{Route, StepSummary};
use std::time::Duration;

/// Where one turn's records go, and the ids they carry.
pub(super) struct Ledger<'a> {
    pub hub: &'a Hub,
    pub session: &'a str,
    /// The assistant message the turn writes.
    pub message: &'a str,
    /// The principal the turn runs as.
    pub caller: &'a str,
    /// The OAuth client of its grant.
    pub client: Option<&'a str>,
}

/// Records step `step` of the turn's message, which took `latency`, under the
/// target of `targets` that answered it (the chain's first when none did).
pub(super) fn record_step(
    ledger: &Ledger<'_>,
    targets: &[Route],
    step: u32,
    summary: &StepSummary,
    latency: Duration,
) {
    let route = summary
        .target
        .as_deref()
        .and_then(|name| targets.iter().find(|r| r.target() == name))
        .unwrap_or(&targets[0]);
    ledger.hub.record_model_step(StepReport {
        session: Some(ledger.session),
        message: Some(ledger.message),
        step,
        caller: ledger.caller,
        client: ledger.client,
        provider: &route.provider.config.name,
        model: &route.model,
        usage: summary.usage,
        latency,
    });
}

/// Logs and counts (`guard`) one activation of the context guard and accounts it
/// under step `step` of the turn's message (the step whose tool call returned the
/// result).
pub(super) fn record_guard(ledger: &Ledger<'_>, guard: &GuardMetrics, step: u32, event: &ContextGuardEvent) {
    guard.record(event);
    ledger.hub.record_context_guard(GuardReport {
        session: Some(ledger.session),
        message: Some(ledger.message),
        step,
        caller: ledger.caller,
        provider: &event.provider,
        model: &event.model,
        trigger: event.trigger.as_str(),
        outcome: event.outcome.as_str(),
        projected_tokens: event.projected_tokens,
        limit_tokens: event.limit_tokens,
        remaining_tokens: event.remaining_tokens,
    });
}
