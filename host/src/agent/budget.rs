//! The context budget guard: a tool result that would overflow the model's context
//! window is replaced by a short error the model can act on.
//!
//! Token estimate: one token per 4 bytes of UTF-8 JSON text, rounded up. That is
//! the usual rule of thumb for English text and slightly pessimistic for JSON's
//! punctuation-heavy output (BPE tokenizers average 3-4 bytes per token on it), and
//! it needs no tokenizer. The conversation's size is taken from the latest step's
//! reported usage (input + output tokens) when the provider sent it, else from the
//! estimate of the messages; results accepted in the current step are added as
//! they arrive. A reserve of an eighth of the window (at least 1024 tokens) is kept
//! for the model's answer.

/// Tokens a text is estimated to take: `ceil(bytes / 4)`.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Tracks how full the context is during a turn.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    window: u64,
    used: u64,
}

/// A result that does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooLarge {
    pub tokens: u64,
    pub available: u64,
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
    pub(crate) fn new(window: u64) -> Budget {
        Budget { window, used: 0 }
    }

    fn reserve(&self) -> u64 {
        (self.window / 8).max(1024).min(self.window)
    }

    /// Sets the conversation's size at the start of a step's tool results.
    pub(crate) fn set_used(&mut self, tokens: u64) {
        self.used = tokens;
    }

    #[cfg(test)]
    fn used(&self) -> u64 {
        self.used
    }

    /// Accepts a result of `text` (counting it) or says it does not fit.
    pub(crate) fn admit(&mut self, text: &str) -> Result<(), TooLarge> {
        let tokens = estimate_tokens(text);
        let available = self
            .window
            .saturating_sub(self.reserve())
            .saturating_sub(self.used);
        if tokens > available {
            return Err(TooLarge { tokens, available });
        }
        self.used += tokens;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn results_are_admitted_until_the_window_minus_the_reserve_is_full() {
        let mut b = Budget::new(8192); // reserve 1024
        b.set_used(7000);
        assert!(b.admit(&"x".repeat(600)).is_ok()); // 150 tokens -> 7150
        let err = b.admit(&"x".repeat(400)).unwrap_err(); // 100 tokens, 18 left
        assert_eq!(
            err,
            TooLarge {
                tokens: 100,
                available: 18
            }
        );
        assert!(err.message().starts_with("result too large"));
        assert_eq!(b.used(), 7150);
    }
}
