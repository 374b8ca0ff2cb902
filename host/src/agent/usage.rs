//! Each model step of a turn, accounted (`hub::accounting`): the session, the
//! assistant message, the provider and model the step was sent to, the usage the
//! provider reported (else the hub's own count, `agent::counted`) and how long the
//! step took; and each activation of the
//! context guard, counted in `/metrics` and accounted with its tokens. Steps are
//! numbered within the assistant message, as its part ids are, so a turn
//! continued after an approval counts on. The turn's tool calls are accounted by
//! the call protocol, under the same session (`CallContext::session`).

use super::context_guard::Counter;
use super::guard_metrics::GuardMetrics;
use crate::hub::accounting::{Accounting, ContextGuard, Entry, ModelStep};
use crate::llm::tokenizer::Tokenizers;
use crate::llm::{Route, StepSummary};
use serde_json::Value;
use std::time::Duration;

/// Where one turn's records go, and the ids they carry.
pub(super) struct Ledger<'a> {
    pub accounting: &'a Accounting,
    pub session: &'a str,
    /// The assistant message the turn writes.
    pub message: &'a str,
    /// The principal the turn runs as.
    pub caller: &'a str,
    /// The OAuth client of its grant.
    pub client: Option<&'a str>,
    /// The named agent the turn runs as.
    pub agent: Option<&'a str>,
}

impl Ledger<'_> {
    fn account(&self, entry: Entry) {
        self.accounting
            .account(Some(self.session), self.caller, self.client, self.agent, entry);
    }
}

/// Records step `step` of the turn's message, which took `latency`, under the
/// target of `targets` that answered it (the chain's first when none did). Without
/// the provider's usage, the step's `request` and answer are counted by that target's
/// tokenizer from `tokenizers` (`agent::counted`).
pub(super) fn record_step(
    ledger: &Ledger<'_>,
    targets: &[Route],
    step: u32,
    summary: &StepSummary,
    latency: Duration,
    request: &Value,
    tokenizers: &Tokenizers,
) {
    let route = crate::llm::route::answering_route(targets, summary.target.as_deref());
    let measured = ModelStep::measured(&route.provider.config.name, &route.model, summary.usage, latency);
    let counter = || Counter::of(route, tokenizers);
    let measured = super::counted::fill_in(measured, counter, request, || {
        super::counted::summary_output(summary)
    });
    ledger.account(Entry::ModelStep(ModelStep {
        message: Some(ledger.message.to_string()),
        step,
        ..measured
    }));
}

/// Logs and counts (`guard`) one activation of the context guard and accounts it
/// under step `step` of the turn's message (the step whose tool call returned the
/// result).
pub(super) fn record_guard(ledger: &Ledger<'_>, guard: &GuardMetrics, step: u32, event: &ContextGuard) {
    guard.record(event);
    ledger.account(Entry::ContextGuard(ContextGuard {
        message: Some(ledger.message.to_string()),
        step,
        ..event.clone()
    }));
}
