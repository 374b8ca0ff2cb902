//! `[limits]`: the operator's global caps on every call (a plugin's manifest may
//! ask for less, never for more), the shares and budgets that keep one plugin or
//! one token from starving the others, and their checks.

use serde::Deserialize;

/// Global caps. A plugin's manifest may ask for less, never for more.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Linear memory per call instance, in MiB.
    pub memory_mb: u64,
    /// Wall-clock deadline of one call, in milliseconds (host calls included).
    pub timeout_ms: u64,
    /// Bytes of JSON output one call may return, in KiB.
    pub output_kb: u64,
    /// Bytes of stdout + stderr one call may write (captured, bounded), in KiB.
    pub log_kb: u64,
    /// Bytes of JSON input one call may receive, in KiB.
    pub input_kb: u64,
    /// Deepest chain of nested plugin -> hub calls.
    pub max_call_depth: u32,
    /// Most calls in one `hub_call` batch.
    pub max_batch: usize,
    /// Most nested calls one call may make in total.
    pub max_fanout: u32,
    /// Most calls in one call tree: a top-level call and all its nested calls.
    pub max_calls_per_request: u32,
    /// Most schema violations reported for one input; the rest are counted.
    pub max_violations: usize,
    /// Inputs of at least this many KiB are validated on the blocking pool, off
    /// the async workers.
    pub validate_blocking_kb: u64,
    /// Largest `.wasm` file the loader compiles, in MiB (compiling has no timeout).
    pub max_plugin_mb: u64,
    /// Most plugin instances alive at once (the pooling allocator's slots).
    pub max_instances: u32,
    /// Freed instance slots kept warm (their plugin's memory image still mapped,
    /// their last call's pages still resident) for the next call of that plugin.
    pub warm_slots: u32,
    /// Pages of linear memory a warm slot keeps resident, in KiB (zeroed in place
    /// instead of returned to the kernel and faulted in again by the next call).
    pub warm_slot_kb: u64,
    /// Share of `max_instances` one plugin's calls may hold at once, in percent.
    pub plugin_share_percent: u32,
    /// Share of `max_instances` one token's calls may hold at once, in percent.
    pub caller_share_percent: u32,
    /// Share of the async workers one token's guests may run on at once, in
    /// percent; unset: `caller_share_percent`.
    pub caller_cpu_share_percent: Option<u32>,
    /// Longest a call waits for an instance slot of its shares, in milliseconds.
    pub queue_ms: u64,
    /// The epoch tick, in microseconds: how often a running guest yields its worker
    /// thread and every token's CPU tickets are topped up (`runtime::cpu`).
    pub epoch_tick_us: u64,
    /// Nice value (0-19) added to the threads that run busy tokens' calls and
    /// large parses and validations (`runtime::cpu`); 0 runs them on the workers.
    pub busy_nice: u32,
    /// How long a token stays busy after one of its calls ran past its first epoch
    /// tick, in milliseconds.
    pub busy_ms: u64,
    /// Whether large parses and validations run at `SCHED_IDLE` (with
    /// `busy_nice` above 0): only on cores nothing else wants.
    pub validate_sched_idle: bool,
    /// Longest time a plugin's instantiation and `list()` may take at load, in
    /// milliseconds (the plugin's own `timeout_ms` if shorter).
    pub load_timeout_ms: u64,
    /// Longest a call to an operation of a plugin that is still loading after the
    /// hub started waits for that load, in milliseconds (never past the call's
    /// parent's deadline); then it fails with `timeout`.
    pub load_wait_ms: u64,
    /// Longest a call to an agent (`agents.NAME`, a sub-agent's whole run) may
    /// take, in milliseconds (never past its parent's deadline); then `timeout`.
    pub agent_timeout_ms: u64,
    /// Most outgoing HTTP requests one call may have open at once.
    pub max_http_concurrent: u32,
    /// Most outgoing HTTP requests one call may make in total.
    pub max_http_requests: u32,
    /// Most lines one call may put into the hub log (`host.log` and the host's lines
    /// about the call); the rest are counted in one summary line.
    pub log_lines: u32,
    /// Longest plugin-provided text (an error message, a description) kept, in KiB;
    /// longer text is cut with a marker.
    pub plugin_text_kb: u64,
    /// Linear memory of all running plugin instances together, in MiB: an instance
    /// that would go past it is not created (or not grown).
    pub memory_budget_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_mb: 64,
            timeout_ms: 10_000,
            output_kb: 1024,
            log_kb: 64,
            input_kb: 1024,
            max_call_depth: 4,
            max_batch: 32,
            max_fanout: 64,
            max_calls_per_request: 1000,
            max_violations: 20,
            validate_blocking_kb: 64,
            max_plugin_mb: 64,
            max_instances: 256,
            warm_slots: 64,
            warm_slot_kb: 1024,
            plugin_share_percent: 50,
            caller_share_percent: 50,
            caller_cpu_share_percent: None,
            queue_ms: 1000,
            epoch_tick_us: 2000,
            busy_nice: 10,
            busy_ms: 1000,
            validate_sched_idle: true,
            load_timeout_ms: 10_000,
            load_wait_ms: 5_000,
            agent_timeout_ms: 300_000,
            max_http_concurrent: 16,
            max_http_requests: 256,
            log_lines: 100,
            plugin_text_kb: 16,
            memory_budget_mb: 4096,
        }
    }
}

impl Limits {
    /// `validate_blocking_kb` in bytes: inputs, outputs and request bodies this
    /// large are parsed and checked on the low-priority blocking pool.
    pub fn validate_blocking_bytes(&self) -> usize {
        (self.validate_blocking_kb as usize).saturating_mul(1024)
    }

    /// The first value out of range, said with its key.
    pub(super) fn problem(&self) -> Option<String> {
        let l = self;
        for (key, value) in [
            ("limits.memory_mb", l.memory_mb),
            ("limits.timeout_ms", l.timeout_ms),
            ("limits.agent_timeout_ms", l.agent_timeout_ms),
            ("limits.output_kb", l.output_kb),
            ("limits.input_kb", l.input_kb),
            ("limits.max_plugin_mb", l.max_plugin_mb),
        ] {
            if value == 0 {
                return Some(format!("{key} must be greater than 0"));
            }
        }
        if !(100..=100_000).contains(&l.epoch_tick_us) {
            return Some(format!(
                "limits.epoch_tick_us must be between 100 and 100000 (it is {})",
                l.epoch_tick_us
            ));
        }
        if l.busy_ms == 0 {
            return Some("limits.busy_ms must be greater than 0".into());
        }
        if l.busy_nice > 19 {
            return Some(format!(
                "limits.busy_nice must be between 0 and 19 (it is {})",
                l.busy_nice
            ));
        }
        if l.max_batch == 0 || l.max_instances == 0 {
            return Some("limits.max_batch and limits.max_instances must be greater than 0".into());
        }
        if let Some(percent) = l.caller_cpu_share_percent.filter(|p| !(1..=100).contains(p)) {
            return Some(format!(
                "limits.caller_cpu_share_percent must be between 1 and 100 (it is {percent})"
            ));
        }
        None
    }
}
