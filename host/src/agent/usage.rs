//! Each model step of a turn, reported to the hub's accounting (`hub::accounting`):
//! the session, the assistant message, the provider and model the step was sent
//! to, the usage the provider reported and how long the step took; and each
//! activation of the context guard, counted in `/metrics` and accounted with its
//! tokens. Steps are numbered within the assistant message, as its part ids are,
//! so a turn continued after an approval counts on. The turn's tool calls are
//! accounted by the call protocol, under the same session (`CallContext::session`).

use super::budget::ContextGuardEvent;
use super::run::{Turn, TurnEnv};
use crate::hub::{GuardReport, StepReport};
use crate::llm::StepSummary;
use std::time::Duration;

/// Records step `step` of `turn`'s message, which took `latency`, under the target that
/// answered it (the chain's first when none did).
pub(super) fn record_step(env: &TurnEnv, turn: &Turn, step: u32, summary: &StepSummary, latency: Duration) {
    let route = summary
        .target
        .as_deref()
        .and_then(|name| turn.targets.iter().find(|r| r.target() == name))
        .unwrap_or(&turn.targets[0]);
    env.hub.record_model_step(StepReport {
        session: Some(&turn.session.id),
        message: Some(&turn.assistant.id),
        step,
        caller: turn.caller.name(),
        provider: &route.provider.config.name,
        model: &route.model,
        usage: summary.usage,
        latency,
    });
}

/// Logs and counts one activation of the context guard and accounts it under
/// step `step` of `turn`'s message (the step whose tool call returned the result).
pub(super) fn record_guard(env: &TurnEnv, turn: &Turn, step: u32, event: &ContextGuardEvent) {
    env.guard.record(event);
    env.hub.record_context_guard(GuardReport {
        session: Some(&turn.session.id),
        message: Some(&turn.assistant.id),
        step,
        caller: turn.caller.name(),
        provider: &event.provider,
        model: &event.model,
        trigger: event.trigger.as_str(),
        outcome: event.outcome.as_str(),
        projected_tokens: event.projected_tokens,
        limit_tokens: event.limit_tokens,
        remaining_tokens: event.remaining_tokens,
    });
}
