//! The limits in a manifest: what it asks for, and what a plugin's calls run under
//! once the requests are clamped to the operator's global caps.

use crate::config::CallCaps;

/// Limits a manifest asks for; `None` = the operator's global cap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitRequests {
    /// `limits.memory_mb`: linear memory per call instance, in MiB.
    pub memory_mb: Option<u64>,
    /// `limits.timeout_ms`: wall-clock deadline of one call, in ms.
    pub timeout_ms: Option<u64>,
    /// `limits.output_kb`: JSON output one call may return, in KiB.
    pub output_kb: Option<u64>,
    /// `limits.log_kb`: stdout + stderr one call may write, in KiB.
    pub log_kb: Option<u64>,
}

/// The limits one plugin's calls run under: its manifest's requests clamped to the
/// operator's caps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveLimits {
    /// Linear memory per call instance, in MiB.
    pub memory_mb: u64,
    /// Wall-clock deadline of one call, in ms (host calls included).
    pub timeout_ms: u64,
    /// JSON output one call may return, in KiB.
    pub output_kb: u64,
    /// stdout + stderr one call may write (captured), in KiB.
    pub log_kb: u64,
    /// JSON input one call may receive, in KiB (the operator's cap; not per plugin).
    pub input_kb: u64,
    /// Most hub-log lines one call may write (`limits.log_lines`).
    ///
    /// The operator's per-call budgets (`limits.log_lines`, ...); not per plugin.
    pub log_lines: u32,
    /// Most outgoing HTTP requests one call may have open at once.
    pub max_http_concurrent: u32,
    /// Most outgoing HTTP requests one call may make in total.
    pub max_http_requests: u32,
    /// Longest plugin-provided text (error message, description) kept, in KiB.
    pub plugin_text_kb: u64,
}

impl EffectiveLimits {
    /// Clamps `requests` to `caps`; the notes say which requests were lowered.
    pub fn resolve(requests: &LimitRequests, caps: &CallCaps) -> (EffectiveLimits, Vec<String>) {
        let mut notes = Vec::new();
        let mut clamp = |key: &str, asked: Option<u64>, cap: u64| match asked {
            Some(v) if v > cap => {
                notes.push(format!(
                    "limits.{key} = {v} is above the operator's cap; using {cap}"
                ));
                cap
            }
            Some(v) => v,
            None => cap,
        };
        let limits = EffectiveLimits {
            memory_mb: clamp("memory_mb", requests.memory_mb, caps.memory_mb),
            timeout_ms: clamp("timeout_ms", requests.timeout_ms, caps.timeout_ms),
            output_kb: clamp("output_kb", requests.output_kb, caps.output_kb),
            log_kb: clamp("log_kb", requests.log_kb, caps.log_kb),
            input_kb: caps.input_kb,
            log_lines: caps.log_lines,
            max_http_concurrent: caps.max_http_concurrent,
            max_http_requests: caps.max_http_requests,
            plugin_text_kb: caps.plugin_text_kb,
        };
        (limits, notes)
    }

    /// `memory_mb` in bytes (saturating).
    pub fn memory_bytes(&self) -> usize {
        usize::try_from(self.memory_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }
    /// `output_kb` in bytes (saturating).
    pub fn output_bytes(&self) -> usize {
        usize::try_from(self.output_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
    /// `log_kb` in bytes (saturating).
    pub fn log_bytes(&self) -> usize {
        usize::try_from(self.log_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
    /// `plugin_text_kb` in bytes (saturating).
    pub fn text_bytes(&self) -> usize {
        usize::try_from(self.plugin_text_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
    /// `input_kb` in bytes (saturating).
    pub fn input_bytes(&self) -> usize {
        usize::try_from(self.input_kb.saturating_mul(1024)).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_clamped_to_caps() {
        let caps = crate::config::Limits::default().call;
        let asked = LimitRequests {
            memory_mb: Some(10_000),
            timeout_ms: Some(50),
            ..Default::default()
        };
        let (l, notes) = EffectiveLimits::resolve(&asked, &caps);
        assert_eq!(l.memory_mb, caps.memory_mb);
        assert_eq!(l.timeout_ms, 50);
        assert_eq!(l.output_kb, caps.output_kb);
        assert_eq!(notes.len(), 1);
    }
}
