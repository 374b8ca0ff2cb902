//! The context guard: a tool result that would overflow the model's context
//! window is replaced by a short error the model can act on, and each time that
//! happens is a [`ContextGuard`] record (logged, counted in `/metrics`, accounted
//! with its message and step: `usage::record_guard`).
//!
//! The limits are per target ([`ContextLimits::of`]): the target's `context_window`
//! (`[[providers.model_settings]]`, else the provider's, else `[agent]
//! context_window`, 131,072 by default), minus `max_output_tokens` kept for the
//! answer (else an eighth of the window, at least 1024) and `context_buffer` (else
//! 0). What is left is the input limit.
//!
//! Token estimate: one token per 4 bytes of UTF-8 JSON text, rounded up. That is
//! the usual rule of thumb for English text and slightly pessimistic for JSON's
//! punctuation-heavy output (BPE tokenizers average 3-4 bytes per token on it), and
//! it needs no tokenizer. The conversation's size is taken from the latest step's
//! reported usage (input + output tokens) when the provider sent it, else from the
//! estimate of the messages; results accepted in the current step are added as
//! they arrive.

use crate::hub::accounting::{ContextGuard, GuardOutcome, GuardTrigger};
use crate::llm::Route;

/// Tokens a text is estimated to take: `ceil(bytes / 4)`.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The context limits of one target, in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContextLimits {
    pub provider: String,
    pub model: String,
    pub window: u64,
    pub max_output: u64,
    pub buffer: u64,
}

impl ContextLimits {
    /// `route`'s limits; `fallback_window` when its provider names no window.
    pub(crate) fn of(route: &Route, fallback_window: u64) -> ContextLimits {
        let t = route.tuning();
        let window = t.context_window.unwrap_or(fallback_window);
        ContextLimits {
            provider: route.provider.config.name.clone(),
            model: route.model.clone(),
            window,
            max_output: t.max_output_tokens.unwrap_or((window / 8).max(1024)).min(window),
            buffer: t.context_buffer.unwrap_or(0),
        }
    }

    /// Tokens the conversation (the input of the next call) may take.
    pub(crate) fn input_limit(&self) -> u64 {
        self.window
            .saturating_sub(self.max_output)
            .saturating_sub(self.buffer)
    }
}

/// Tracks how full the context is during a turn.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    limits: ContextLimits,
    used: u64,
}

/// A result that does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooLarge {
    pub tokens: u64,
    pub available: u64,
    /// The guard's record of it (its message and step are the turn's to add).
    pub event: ContextGuard,
}

impl TooLarge {
    /// What the model is told instead of the result.
    pub(crate) fn message(&self) -> String {
        format!(
            "result too large: about {} tokens, but only {} tokens of context are left. \
             Ask for less (a narrower query, a smaller limit, fewer fields or calls).",
            self.tokens, self.available
        )
    }
}

impl Budget {
    pub(crate) fn new(limits: ContextLimits) -> Budget {
        Budget { limits, used: 0 }
    }

    /// The limits in force.
    pub(crate) fn limits(&self) -> &ContextLimits {
        &self.limits
    }

    /// Sets the conversation's size at the start of a step's tool results.
    pub(crate) fn set_used(&mut self, tokens: u64) {
        self.used = tokens;
    }

    /// Tokens left before the input limit.
    pub(crate) fn remaining(&self) -> u64 {
        self.limits.input_limit().saturating_sub(self.used)
    }

    /// Accepts a result of `text` (counting it) or says it does not fit.
    pub(crate) fn admit(&mut self, text: &str) -> Result<(), TooLarge> {
        let tokens = estimate_tokens(text);
        let available = self.remaining();
        if tokens > available {
            let event = ContextGuard {
                message: None,
                step: 0,
                provider: self.limits.provider.clone(),
                model: self.limits.model.clone(),
                trigger: GuardTrigger::ToolResult,
                outcome: GuardOutcome::Replaced,
                projected_tokens: self.used + tokens,
                limit_tokens: self.limits.input_limit(),
                remaining_tokens: available,
            };
            return Err(TooLarge {
                tokens,
                available,
                event,
            });
        }
        self.used += tokens;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(window: u64, max_output: u64, buffer: u64) -> ContextLimits {
        ContextLimits {
            provider: "p".into(),
            model: "m".into(),
            window,
            max_output,
            buffer,
        }
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn results_are_admitted_until_the_input_limit_is_full() {
        let mut b = Budget::new(limits(8192, 1024, 0));
        b.set_used(7000);
        assert!(b.admit(&"x".repeat(600)).is_ok()); // 150 tokens -> 7150
        let err = b.admit(&"x".repeat(400)).unwrap_err(); // 100 tokens, 18 left
        assert_eq!((err.tokens, err.available), (100, 18));
        assert!(err.message().starts_with("result too large"));
        assert_eq!(
            err.event,
            ContextGuard {
                message: None,
                step: 0,
                provider: "p".into(),
                model: "m".into(),
                trigger: GuardTrigger::ToolResult,
                outcome: GuardOutcome::Replaced,
                projected_tokens: 7250,
                limit_tokens: 7168,
                remaining_tokens: 18,
            }
        );
        assert_eq!(b.remaining(), 18);
        assert_eq!(
            serde_json::to_value(&err.event).unwrap()["trigger"],
            "tool_result"
        );
    }

    #[test]
    fn the_buffer_and_max_output_come_off_the_window() {
        let mut b = Budget::new(limits(10_000, 2_000, 500));
        assert_eq!(b.limits().input_limit(), 7_500);
        b.set_used(7_400);
        assert!(b.admit(&"x".repeat(404)).is_err(), "101 tokens > 100 left");
        let tiny = limits(1000, 5000, 0);
        assert_eq!(tiny.input_limit(), 0);
    }
}
