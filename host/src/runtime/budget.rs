//! Per-call budgets beside the manifest limits: the lines one call may put into the
//! hub log (`host.log` and the host's own lines about the call), its outgoing HTTP
//! requests (at once and in total), and the size of the text a plugin hands the
//! host (error messages, descriptions) before anything else sees it; and the one
//! process-wide budget, the linear memory of all running instances.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Lines one call may write to the hub log (`limits.log_lines`). Lines past it are
/// counted, not written; the call's end writes one summary line instead.
pub(super) struct LogBudget {
    limit: u32,
    written: AtomicU32,
    suppressed: AtomicU32,
}

impl LogBudget {
    pub(super) fn new(limit: u32) -> LogBudget {
        LogBudget {
            limit,
            written: AtomicU32::new(0),
            suppressed: AtomicU32::new(0),
        }
    }

    /// Whether one more line may be written; a refused line is counted.
    pub(super) fn take(&self) -> bool {
        if self.written.fetch_add(1, Ordering::Relaxed) < self.limit {
            return true;
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Writes the summary of what was suppressed, if anything was (once per call).
    pub(super) fn summarize(&self, plugin: &str, call_id: &str) {
        let n = self.suppressed.swap(0, Ordering::Relaxed);
        if n > 0 {
            crate::warn!(
                "plugin {plugin} call {call_id}: {n} lines suppressed (limits.log_lines = {} per call)",
                self.limit
            );
        }
    }
}

/// `call_log!(budget, level, "...")`: a log line about one call, written when the
/// level is enabled and the call's [`LogBudget`] has room. A filtered level costs
/// neither formatting nor budget.
macro_rules! call_log {
    ($budget:expr, $level:expr, $($arg:tt)+) => {{
        let level = $level;
        if $crate::logging::enabled(level) && $budget.take() {
            $crate::logging::write(level, module_path!(), format_args!($($arg)+));
        }
    }};
}
pub(super) use call_log;

/// Outgoing HTTP requests of one call: at most `concurrent` open at once
/// (`limits.max_http_concurrent`), at most `total` started
/// (`limits.max_http_requests`).
pub(super) struct HttpBudget {
    concurrent: u32,
    total: u32,
    open: AtomicU32,
    started: AtomicU32,
}

/// Which per-call HTTP budget refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HttpLimit {
    /// `limits.max_http_concurrent` requests of this call are already open.
    Concurrent { limit: u32 },
    /// This call already started `limits.max_http_requests` requests.
    Total { limit: u32 },
}

impl fmt::Display for HttpLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpLimit::Concurrent { limit } => write!(
                f,
                "too many outgoing HTTP requests at once: {limit} are open in this call \
                 (limits.max_http_concurrent = {limit}); wait for one to finish"
            ),
            HttpLimit::Total { limit } => write!(
                f,
                "too many outgoing HTTP requests: this call already made {limit} \
                 (limits.max_http_requests = {limit})"
            ),
        }
    }
}

impl std::error::Error for HttpLimit {}

/// One open request's share of an [`HttpBudget`]; released when dropped.
pub(super) struct HttpPermit(Arc<HttpBudget>);

impl Drop for HttpPermit {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl HttpBudget {
    pub(super) fn new(concurrent: u32, total: u32) -> Arc<HttpBudget> {
        Arc::new(HttpBudget {
            concurrent,
            total,
            open: AtomicU32::new(0),
            started: AtomicU32::new(0),
        })
    }

    /// Admits one more request, or says which budget it would exceed.
    pub(super) fn start(self: &Arc<Self>) -> Result<HttpPermit, HttpLimit> {
        let bump = |n: u32, limit: u32| (n < limit).then_some(n + 1);
        self.open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| bump(n, self.concurrent))
            .map_err(|_| HttpLimit::Concurrent {
                limit: self.concurrent,
            })?;
        let permit = HttpPermit(self.clone());
        self.started
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| bump(n, self.total))
            .map_err(|_| HttpLimit::Total { limit: self.total })?;
        Ok(permit)
    }
}

/// Linear memory of all running instances together (`limits.memory_budget_mb`):
/// each instance reserves what it grows to and releases it when its store is
/// dropped, so instantiating or growing past the budget is refused.
pub(super) struct MemoryBudget {
    budget_bytes: usize,
    used_bytes: AtomicUsize,
}

impl MemoryBudget {
    pub(super) fn new(budget_mb: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            budget_bytes: usize::try_from(budget_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
            used_bytes: AtomicUsize::new(0),
        })
    }

    /// The budget in MiB, for errors.
    pub(super) fn budget_mb(&self) -> u64 {
        (self.budget_bytes >> 20) as u64
    }

    /// Reserves `bytes` more, unless that would go past the budget.
    pub(super) fn reserve(&self, bytes: usize) -> bool {
        self.used_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes)
                    .filter(|&total| total <= self.budget_bytes)
            })
            .is_ok()
    }

    /// Bytes reserved by the instances alive now.
    pub(super) fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    pub(super) fn release(&self, bytes: usize) {
        self.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// `text` cut to at most `cap` bytes on a char boundary, with a marker giving the
/// original size, so a plugin's 1 MB error is never stored, logged or shown whole
/// (`limits.plugin_text_kb`).
pub(crate) fn bounded(mut text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let size = text.len();
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("… [truncated, {size} bytes]"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_a_char_boundary_with_a_marker() {
        assert_eq!(bounded("short".into(), 10), "short");
        let cut = bounded("ééé".into(), 3);
        assert_eq!(cut, "é… [truncated, 6 bytes]");
    }

    #[test]
    fn log_lines_past_the_budget_are_counted() {
        let budget = LogBudget::new(2);
        assert!(budget.take() && budget.take());
        assert!(!budget.take() && !budget.take());
        assert_eq!(budget.suppressed.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn memory_is_reserved_within_the_budget() {
        let budget = MemoryBudget::new(2);
        assert!(budget.reserve(1 << 20) && budget.reserve(1 << 20));
        assert!(!budget.reserve(1));
        budget.release(1 << 20);
        assert!(budget.reserve(1 << 20));
    }

    #[test]
    fn http_requests_are_bounded_at_once_and_in_total() {
        let budget = HttpBudget::new(2, 3);
        let a = budget.start().unwrap();
        let _b = budget.start().unwrap();
        assert_eq!(budget.start().err(), Some(HttpLimit::Concurrent { limit: 2 }));
        drop(a);
        let _c = budget.start().unwrap();
        drop(_c);
        assert_eq!(budget.start().err(), Some(HttpLimit::Total { limit: 3 }));
    }
}
