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
//! Token counts: with the target's `tokenizer` (its `model_settings` entry's, else its
//! provider's; loaded once from `[tokenizers]`, `llm::tokenizer`), the tokens of the
//! UTF-8 JSON text; without one, or when its file cannot be loaded, one token per 4
//! bytes of that text, rounded up: the usual rule of thumb for English text and
//! slightly pessimistic for JSON's punctuation-heavy output. Each guard record names
//! which counted (`tokenizer`). The conversation's size is taken from the latest
//! step's reported usage (input + output tokens) when the provider sent it, else from
//! the count of the messages; results accepted in the current step are added as
//! they arrive.
//! estimate of the messages; results accepted in the current step are added as
//! they arrive.

use crate::hub::accounting::{ContextGuard, GuardOutcome, GuardTrigger};
use crate::llm::Route;
use crate::llm::tokenizer::{Tokenizer, Tokenizers};
use std::sync::Arc;

/// What a guard record's `tokenizer` says when the 4-bytes estimate counted.
pub(crate) const ESTIMATE: &str = "estimate";

/// Tokens a text is estimated to take: `ceil(bytes / 4)`.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// What counts a target's tokens: its tokenizer, else the 4-bytes estimate.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counter(Option<Arc<Tokenizer>>);

impl Counter {
    /// `route`'s configured tokenizer from `tokenizers`; the estimate when it has none
    /// or its file could not be loaded (the cache logged why).
    pub(crate) fn of(route: &Route, tokenizers: &Tokenizers) -> Counter {
        Counter(route.tokenizer().and_then(|spec| tokenizers.get(spec).ok()))
    }

    /// Tokens `text` takes.
    pub(crate) fn count(&self, text: &str) -> u64 {
        match &self.0 {
            Some(t) => t.count(text),
            None => estimate_tokens(text),
        }
    }

    /// The tokenizer's spec, or [`ESTIMATE`].
    pub(crate) fn name(&self) -> String {
        self.0
            .as_ref()
            .map_or_else(|| ESTIMATE.to_string(), |t| t.spec().to_string())
    }
}

impl PartialEq for Counter {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Counter {}

/// The context limits of one target, in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContextLimits {
    pub provider: String,
    pub model: String,
    pub window: u64,
    pub max_output: u64,
    pub buffer: u64,
    /// What counts the target's tokens.
    pub counter: Counter,
}

impl ContextLimits {
    /// `route`'s limits; `fallback_window` when its provider names no window.
    pub(crate) fn of(route: &Route, fallback_window: u64, tokenizers: &Tokenizers) -> ContextLimits {
        let t = route.tuning();
        let window = t.context_window.unwrap_or(fallback_window);
        ContextLimits {
            provider: route.provider.config.name.clone(),
            model: route.model.clone(),
            window,
            max_output: t.max_output_tokens.unwrap_or((window / 8).max(1024)).min(window),
            buffer: t.context_buffer.unwrap_or(0),
            counter: Counter::of(route, tokenizers),
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
    pub event: Box<ContextGuard>,
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
        let tokens = self.limits.counter.count(text);
        let available = self.remaining();
        if tokens > available {
            let event = Box::new(ContextGuard {
                message: None,
                step: 0,
                provider: self.limits.provider.clone(),
                model: self.limits.model.clone(),
                trigger: GuardTrigger::ToolResult,
                outcome: GuardOutcome::Replaced,
                projected_tokens: self.used + tokens,
                limit_tokens: self.limits.input_limit(),
                remaining_tokens: available,
                tokenizer: self.limits.counter.name(),
            });
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
            counter: Counter::default(),
        }
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn a_tokenizer_counts_and_is_named_in_the_record() {
        // A vocabulary of the 256 bytes plus "xx" and "xxxx": 399 x's are 99 "xxxx",
        // one "xx" and one "x", 101 tokens, where the estimate says 100; so with 100
        // tokens left the tokenizer refuses what the estimate would have let in.
        let dir = crate::test_dir::TempDir::new("guard-tokenizer");
        let ranks = crate::llm::tokenizer::test_ranks(&[(b"xx", 256), (b"xxxx", 257)]);
        let path = dir.path().join("v.tiktoken");
        std::fs::write(&path, ranks).unwrap();
        let spec = crate::config::Spec::File(path);
        let tokenizer = Tokenizer::load(&spec, dir.path(), 64).unwrap();
        let mut l = limits(8192, 1024, 0);
        l.counter = Counter(Some(Arc::new(tokenizer)));
        assert_eq!(l.counter.count(&"x".repeat(399)), 101);
        assert_eq!(estimate_tokens(&"x".repeat(399)), 100);
        let mut b = Budget::new(l);
        b.set_used(7168 - 100);
        let err = b.admit(&"x".repeat(399)).unwrap_err();
        assert_eq!((err.tokens, err.available), (101, 100));
        assert_eq!(err.event.tokenizer, format!("{spec}"));
        assert!(err.event.tokenizer.starts_with("file:"));
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
            *err.event,
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
                tokenizer: "estimate".into(),
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
