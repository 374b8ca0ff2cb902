//! The context guard in `/metrics`: its activations by provider, model, trigger
//! and outcome, and the tokens each target's conversation had left after its
//! latest step. Rendered after the hub's own metrics.

use super::context_guard::ContextLimits;
use crate::hub::accounting::ContextGuard;
use crate::hub::escape_label;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Most (provider, model) pairs with series of their own: clients choose model
/// names (a provider's `*` pattern serves any), so later pairs share the model
/// label `_other` rather than growing the exposition without bound.
const MAX_TARGETS: usize = 256;

/// The model label of the pairs past [`MAX_TARGETS`].
const OTHER: &str = "_other";

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
    pub(crate) fn record(&self, event: &ContextGuard) {
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
    pub(crate) fn remaining(&self, limits: &ContextLimits, tokens: u64) {
        let mut remaining = self.remaining.lock().unwrap_or_else(|e| e.into_inner());
        let mut key = (limits.provider.clone(), limits.model.clone());
        if !remaining.contains_key(&key) && remaining.len() >= MAX_TARGETS {
            key.1 = OTHER.into();
        }
        remaining.insert(key, tokens);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::accounting::{GuardOutcome, GuardTrigger};

    fn limits(model: &str) -> ContextLimits {
        ContextLimits {
            provider: "p".into(),
            model: model.into(),
            window: 100,
            max_output: 10,
            buffer: 0,
            counter: Default::default(),
        }
    }

    #[test]
    fn events_and_remaining_tokens_render_with_bounded_labels() {
        let m = GuardMetrics::default();
        let event = |model: &str| ContextGuard {
            message: None,
            step: 0,
            provider: "p".into(),
            model: model.into(),
            trigger: GuardTrigger::ToolResult,
            outcome: GuardOutcome::Replaced,
            projected_tokens: 120,
            limit_tokens: 90,
            remaining_tokens: 5,
            tokenizer: "estimate".into(),
        };
        m.record(&event("m\"1"));
        m.record(&event("m\"1"));
        for i in 0..MAX_TARGETS + 3 {
            m.remaining(&limits(&format!("m{i}")), i as u64);
        }
        let text = m.render();
        assert!(
            text.contains("wasmhub_context_guard_events_total{provider=\"p\",model=\"m\\\"1\",trigger=\"tool_result\",outcome=\"replaced\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("wasmhub_context_remaining_tokens{provider=\"p\",model=\"m0\"} 0\n"));
        assert!(text.contains(&format!(
            "wasmhub_context_remaining_tokens{{provider=\"p\",model=\"_other\"}} {}\n",
            MAX_TARGETS + 2
        )));
        assert_eq!(
            text.matches("wasmhub_context_remaining_tokens{").count(),
            MAX_TARGETS + 1
        );
    }
}
