//! The wall clock in Unix milliseconds: the one place the host reads
//! `SystemTime` for timestamps (audit records, sessions, log lines, the
//! `Retry-After` date arithmetic). Durations are measured with `Instant`
//! elsewhere; this is only for times that are stored or shown.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; 0 if the system clock is set before it
/// (a timestamp is informational, never worth failing a call over).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_ms_is_after_2020_and_monotone_enough() {
        let a = now_ms();
        let b = now_ms();
        assert!(a > 1_577_836_800_000, "clock reads {a}");
        assert!(b >= a);
    }
}
