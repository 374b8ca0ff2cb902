//! The context guard in `/metrics`: its activations by provider, model, trigger
//! and outcome, and the tokens each target's conversation had left after its
//! latest step. Rendered after the hub's own metrics.

use super::budget::{ContextGuardEvent, Limits};
use crate::hub::escape_label;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// (provider, model, trigger, outcome) -> count.
type Events = BTreeMap<(String, String, &'static str, &'static str), u64>;

/// The guard's counters, one per agent.
#[derive(Debug, Default)]
pub(crate) struct GuardMetrics {
    events: Mutex<Events>,
    /// (provider, model) -> tokens left after the latest step.
    remaining: Mutex<BTreeMap<(String, String), u64>>,
}

impl GuardMetrics {
    /// Counts one activation, and logs it.
    pub(crate) fn record(&self, event: &ContextGuardEvent) {
        crate::info!("{event}");
        let key = (
            event.provider.clone(),
            event.model.clone(),
            event.trigger.as_str(),
            event.outcome.as_str(),
        );
        *self
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default() += 1;
    }

    /// Sets the tokens `limits`' target had left after a step.
    pub(crate) fn remaining(&self, limits: &Limits, tokens: u64) {
        let key = (limits.provider.clone(), limits.model.clone());
        self.remaining
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, tokens);
    }

    /// The Prometheus exposition text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP wasmhub_context_guard_events_total Context guard activations in the agent loop.\n",
        );
        out.push_str("# TYPE wasmhub_context_guard_events_total counter\n");
        for ((provider, model, trigger, outcome), n) in
            self.events.lock().unwrap_or_else(|e| e.into_inner()).iter()
        {
            let _ = writeln!(
                out,
                "wasmhub_context_guard_events_total{{provider=\"{}\",model=\"{}\",trigger=\"{trigger}\",outcome=\"{outcome}\"}} {n}",
                escape_label(provider),
                escape_label(model)
            );
        }
        out.push_str("# HELP wasmhub_context_remaining_tokens Tokens of context left after the latest agent step, by target.\n");
        out.push_str("# TYPE wasmhub_context_remaining_tokens gauge\n");
        for ((provider, model), n) in self.remaining.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(
                out,
                "wasmhub_context_remaining_tokens{{provider=\"{}\",model=\"{}\"}} {n}",
                escape_label(provider),
                escape_label(model)
            );
        }
        out
    }
}
