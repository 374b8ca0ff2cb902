//! Each model step of a turn, reported to the hub's accounting (`hub::accounting`):
//! the session, the assistant message, the provider and model the step was sent
//! to, the usage the provider reported and how long the step took. The turn's tool
//! calls are accounted by the call protocol, under the same session
//! (`CallContext::session`).

use super::run::{Turn, TurnEnv};
use crate::hub::StepReport;
use crate::llm::StepSummary;
use std::time::Duration;

/// Records step `step` of `turn`, which took `latency`.
pub(super) fn record_step(env: &TurnEnv, turn: &Turn, step: u32, summary: &StepSummary, latency: Duration) {
    env.hub.record_model_step(StepReport {
        session: Some(&turn.session.id),
        message: Some(&turn.assistant.id),
        step,
        caller: turn.caller.name(),
        provider: &turn.route.provider.config.name,
        model: &turn.route.model,
        usage: summary.usage,
        latency,
    });
}
