//! `[concurrency]`: how many requests each HTTP surface serves at once, and how
//! long the line of requests waiting for a turn may get. The limiter itself is
//! `surfaces::limit`'s; this is the shape of the file.

use serde::Deserialize;

/// Requests in flight per surface, and the waiting line in front of each.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConcurrencyConfig {
    /// `POST /mcp` requests answered at once.
    pub mcp: usize,
    /// `POST /api/hub/{list,search,schema,call}` requests answered at once.
    pub rest: usize,
    /// `POST /v1/chat/completions` and `POST /api/ui/chat/completions` at once.
    pub proxy: usize,
    /// `POST /v1/messages` (the Anthropic surface) at once.
    pub anthropic: usize,
    /// Agent turns (`POST /api/chat`) running at once.
    pub chat: usize,
    /// Requests of one surface waiting for a turn; past it, 429 at once.
    pub queue: usize,
    /// Longest a request waits in line, in milliseconds; then 429.
    pub queue_wait_ms: u64,
}

impl Default for ConcurrencyConfig {
    fn default() -> Self {
        ConcurrencyConfig {
            mcp: 64,
            rest: 64,
            proxy: 32,
            anthropic: 32,
            chat: 10,
            queue: 64,
            queue_wait_ms: 10_000,
        }
    }
}

impl ConcurrencyConfig {
    /// The first value that cannot work, said for the operator.
    pub(super) fn mismatch(&self) -> Option<String> {
        for (key, value) in [
            ("mcp", self.mcp),
            ("rest", self.rest),
            ("proxy", self.proxy),
            ("anthropic", self.anthropic),
            ("chat", self.chat),
        ] {
            if value == 0 {
                return Some(format!(
                    "concurrency.{key} must be greater than 0 (requests that surface serves at once)"
                ));
            }
        }
        if self.queue_wait_ms == 0 && self.queue > 0 {
            return Some("concurrency.queue_wait_ms must be greater than 0 when concurrency.queue is".into());
        }
        None
    }
}
