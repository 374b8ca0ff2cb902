//! Each model step of a turn, reported to the hub's accounting (`hub::accounting`):
//! the session, the assistant message, the provider and model the step was sent
//! to, the usage the provider reported and how long the step took. The turn's tool
//! calls are accounted by the call protocol, under the same session
//! (`CallContext::session`).

use super::run::{Turn, TurnEnv};
use crate::hub::StepReport;
use crate::llm::StepSummary;
use std::time::Duration;

/// Records step `step` of `turn`, which took `latency`, under the target that
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
