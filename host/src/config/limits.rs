//! `[limits]`: the operator's global caps on every call (a plugin's manifest may
//! ask for less, never for more), the shares and budgets that keep one plugin or
//! one token from starving the others, and their checks.
//!
//! The TOML keeps one flat table (`[limits] memory_mb = 64`, the brief's
//! contract); the code sees it in groups by what each controls, and each consumer
//! takes only its group: the per-call caps the runtime clamps manifests to, the
//! call tree's bounds, validation, the instance pool, the shares of slots, the CPU
//! scheduler, and plugin loading.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Global caps, grouped. Read from the flat `[limits]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "LimitKeys")]
pub struct Limits {
    /// What one call may use; a manifest may ask for less.
    pub call: CallCaps,
    /// Nesting and fan-out of one call tree.
    pub tree: TreeLimits,
    /// Input and output validation.
    pub validation: ValidationLimits,
    /// The instance pool every call's instance comes from.
    pub pool: PoolLimits,
    /// The shares of instance slots one plugin or one token may hold.
    pub shares: ShareLimits,
    /// The epoch scheduler and the low-priority threads.
    pub cpu: CpuLimits,
    /// Loading plugins.
    pub load: LoadLimits,
}

/// The per-call caps (`runtime::EffectiveLimits` clamps a manifest's requests to
/// them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallCaps {
    /// Linear memory per call instance, in MiB.
    pub memory_mb: u64,
    /// Wall-clock deadline of one call, in milliseconds (host calls included).
    pub timeout_ms: u64,
    /// Longest a call to an agent (`agents.NAME`, a sub-agent's whole run) may
    /// take, in milliseconds (never past its parent's deadline); then `timeout`.
    /// Not a plugin's: a manifest cannot ask for it.
    pub agent_timeout_ms: u64,
    /// Bytes of JSON output one call may return, in KiB.
    pub output_kb: u64,
    /// Bytes of stdout + stderr one call may write (captured, bounded), in KiB.
    pub log_kb: u64,
    /// Bytes of JSON input one call may receive, in KiB.
    pub input_kb: u64,
    /// Most lines one call may put into the hub log; the rest are counted in one
    /// summary line.
    pub log_lines: u32,
    /// Longest plugin-provided text (an error message, a description) kept, in
    /// KiB; longer text is cut with a marker.
    pub plugin_text_kb: u64,
    /// Most outgoing HTTP requests one call may have open at once.
    pub max_http_concurrent: u32,
    /// Most outgoing HTTP requests one call may make in total.
    pub max_http_requests: u32,
}

/// Bounds on one call tree (`hub::graph`) and one `hub_call` batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeLimits {
    /// Deepest chain of nested plugin -> hub calls.
    pub max_call_depth: u32,
    /// Most calls in one `hub_call` batch.
    pub max_batch: usize,
    /// Most nested calls one call may make in total.
    pub max_fanout: u32,
    /// Most calls in one call tree: a top-level call and all its nested calls.
    pub max_calls_per_request: u32,
}

/// How inputs and outputs are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationLimits {
    /// Most schema violations reported for one input; the rest are counted.
    pub max_violations: usize,
    /// Inputs of at least this many KiB are validated on the blocking pool, off
    /// the async workers.
    pub blocking_kb: u64,
}

impl ValidationLimits {
    /// `blocking_kb` in bytes: inputs, outputs and request bodies this large are
    /// parsed and checked on the low-priority blocking pool.
    pub fn blocking_bytes(&self) -> usize {
        (self.blocking_kb as usize).saturating_mul(1024)
    }
}

/// The pooling allocator's slots and the memory of all instances together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolLimits {
    /// Most plugin instances alive at once (the pooling allocator's slots).
    pub max_instances: u32,
    /// Freed instance slots kept warm (their plugin's memory image still mapped,
    /// their last call's pages still resident) for the next call of that plugin.
    pub warm_slots: u32,
    /// Pages of linear memory a warm slot keeps resident, in KiB (zeroed in place
    /// instead of returned to the kernel and faulted in again by the next call).
    pub warm_slot_kb: u64,
    /// Linear memory of all running plugin instances together, in MiB: an
    /// instance that would go past it is not created (or not grown).
    pub memory_budget_mb: u64,
}

/// The shares of `pool.max_instances` (`hub::schedule`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLimits {
    /// Share of the instance slots one plugin's calls may hold at once, in percent.
    pub plugin_percent: u32,
    /// Share of the instance slots one token's calls may hold at once, in percent.
    pub caller_percent: u32,
    /// Share of its token's slots one plugin holds without borrowing, in percent:
    /// past it, the plugin takes a slot only while none of the token's other
    /// plugins waits for one.
    pub caller_plugin_percent: u32,
    /// Share of a token's slots a plugin past its part leaves free for the
    /// token's other plugins, in percent (0: borrowers may fill the share).
    pub caller_reserve_percent: u32,
    /// Longest a call waits for an instance slot of its shares, in milliseconds.
    pub queue_ms: u64,
}

/// The CPU scheduler (`runtime::cpu`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuLimits {
    /// Share of the async workers one token's guests may run on at once, in
    /// percent (`limits.caller_cpu_share_percent`, unset: the slot share).
    pub caller_percent: u32,
    /// The epoch tick, in microseconds: how often a running guest yields its
    /// worker thread and every token's CPU tickets are topped up.
    pub epoch_tick_us: u64,
    /// Nice value (0-19) of the threads that run busy tokens' calls and large
    /// parses and validations; 0 runs them on the workers.
    pub busy_nice: u32,
    /// Worker threads of the low-priority runtime (`limits.busy_threads`; unset:
    /// half the async workers, at least one).
    pub busy_threads: Option<u32>,
    /// How often, in microseconds, a busy call's thread offers its core to any
    /// other runnable thread (`limits.busy_yield_us`; 0: never).
    pub busy_yield_us: u64,
    /// How long a token stays busy after one of its calls ran past its first
    /// epoch tick, in milliseconds.
    pub busy_ms: u64,
    /// Whether large parses and validations run at `SCHED_IDLE` (with `busy_nice`
    /// above 0): only on cores nothing else wants.
    pub validate_sched_idle: bool,
    /// Each named plugin's weight (1-100, default 1) when its calls and another
    /// plugin's of the same token wait for CPU tickets
    /// (`limits.plugin_cpu_weights`).
    pub plugin_weights: BTreeMap<String, u32>,
    /// Each named token's weight (1-100, default 1): it multiplies the token's CPU
    /// share and its part of what idle tokens leave over
    /// (`limits.token_cpu_weights`; `local` is the no-token principal).
    pub token_weights: BTreeMap<String, u32>,
    /// Whether idle tokens' CPU tickets and running permits are lent to busy
    /// tokens every tick (`limits.cpu_lend_idle`, default off).
    pub lend_idle: bool,
}

/// Loading plugins (`runtime::loader`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadLimits {
    /// Largest `.wasm` file the loader compiles, in MiB (compiling has no timeout).
    pub max_plugin_mb: u64,
    /// Longest time a plugin's instantiation and `list()` may take at load, in
    /// milliseconds (the plugin's own `timeout_ms` if shorter).
    pub timeout_ms: u64,
    /// Longest a call to an operation of a plugin that is still loading after the
    /// hub started waits for that load, in milliseconds (never past the call's
    /// parent's deadline); then it fails with `timeout`.
    pub wait_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        LimitKeys::default().into()
    }
}

/// The `[limits]` table as the operator writes it: flat, each key documented in
/// the README.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct LimitKeys {
    memory_mb: u64,
    timeout_ms: u64,
    output_kb: u64,
    log_kb: u64,
    input_kb: u64,
    max_call_depth: u32,
    max_batch: usize,
    max_fanout: u32,
    max_calls_per_request: u32,
    max_violations: usize,
    validate_blocking_kb: u64,
    max_plugin_mb: u64,
    max_instances: u32,
    warm_slots: u32,
    warm_slot_kb: u64,
    plugin_share_percent: u32,
    caller_share_percent: u32,
    caller_plugin_share_percent: u32,
    caller_reserve_percent: u32,
    caller_cpu_share_percent: Option<u32>,
    queue_ms: u64,
    epoch_tick_us: u64,
    busy_nice: u32,
    busy_threads: Option<u32>,
    busy_yield_us: u64,
    busy_ms: u64,
    validate_sched_idle: bool,
    plugin_cpu_weights: BTreeMap<String, u32>,
    token_cpu_weights: BTreeMap<String, u32>,
    cpu_lend_idle: bool,
    load_timeout_ms: u64,
    load_wait_ms: u64,
    agent_timeout_ms: u64,
    max_http_concurrent: u32,
    max_http_requests: u32,
    log_lines: u32,
    plugin_text_kb: u64,
    memory_budget_mb: u64,
}

impl Default for LimitKeys {
    fn default() -> Self {
        LimitKeys {
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
            caller_plugin_share_percent: 50,
            caller_reserve_percent: 10,
            caller_cpu_share_percent: None,
            queue_ms: 1000,
            epoch_tick_us: 2000,
            busy_nice: 10,
            busy_threads: None,
            busy_yield_us: 250,
            busy_ms: 1000,
            validate_sched_idle: true,
            plugin_cpu_weights: BTreeMap::new(),
            token_cpu_weights: BTreeMap::new(),
            cpu_lend_idle: false,
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

impl From<LimitKeys> for Limits {
    fn from(k: LimitKeys) -> Limits {
        Limits {
            call: CallCaps {
                memory_mb: k.memory_mb,
                timeout_ms: k.timeout_ms,
                agent_timeout_ms: k.agent_timeout_ms,
                output_kb: k.output_kb,
                log_kb: k.log_kb,
                input_kb: k.input_kb,
                log_lines: k.log_lines,
                plugin_text_kb: k.plugin_text_kb,
                max_http_concurrent: k.max_http_concurrent,
                max_http_requests: k.max_http_requests,
            },
            tree: TreeLimits {
                max_call_depth: k.max_call_depth,
                max_batch: k.max_batch,
                max_fanout: k.max_fanout,
                max_calls_per_request: k.max_calls_per_request,
            },
            validation: ValidationLimits {
                max_violations: k.max_violations,
                blocking_kb: k.validate_blocking_kb,
            },
            pool: PoolLimits {
                max_instances: k.max_instances,
                warm_slots: k.warm_slots,
                warm_slot_kb: k.warm_slot_kb,
                memory_budget_mb: k.memory_budget_mb,
            },
            shares: ShareLimits {
                plugin_percent: k.plugin_share_percent,
                caller_percent: k.caller_share_percent,
                caller_plugin_percent: k.caller_plugin_share_percent,
                caller_reserve_percent: k.caller_reserve_percent,
                queue_ms: k.queue_ms,
            },
            cpu: CpuLimits {
                caller_percent: k.caller_cpu_share_percent.unwrap_or(k.caller_share_percent),
                epoch_tick_us: k.epoch_tick_us,
                busy_nice: k.busy_nice,
                busy_threads: k.busy_threads,
                busy_yield_us: k.busy_yield_us,
                busy_ms: k.busy_ms,
                validate_sched_idle: k.validate_sched_idle,
                plugin_weights: k.plugin_cpu_weights,
                token_weights: k.token_cpu_weights,
                lend_idle: k.cpu_lend_idle,
            },
            load: LoadLimits {
                max_plugin_mb: k.max_plugin_mb,
                timeout_ms: k.load_timeout_ms,
                wait_ms: k.load_wait_ms,
            },
        }
    }
}

impl Limits {
    /// The first value out of range, said with its key.
    pub(super) fn problem(&self) -> Option<String> {
        for (key, value) in [
            ("limits.memory_mb", self.call.memory_mb),
            ("limits.timeout_ms", self.call.timeout_ms),
            ("limits.agent_timeout_ms", self.call.agent_timeout_ms),
            ("limits.output_kb", self.call.output_kb),
            ("limits.input_kb", self.call.input_kb),
            ("limits.max_plugin_mb", self.load.max_plugin_mb),
        ] {
            if value == 0 {
                return Some(format!("{key} must be greater than 0"));
            }
        }
        let cpu = &self.cpu;
        if !(100..=100_000).contains(&cpu.epoch_tick_us) {
            return Some(format!(
                "limits.epoch_tick_us must be between 100 and 100000 (it is {})",
                cpu.epoch_tick_us
            ));
        }
        if cpu.busy_ms == 0 {
            return Some("limits.busy_ms must be greater than 0".into());
        }
        if let Some(threads) = cpu.busy_threads.filter(|t| !(1..=1024).contains(t)) {
            return Some(format!(
                "limits.busy_threads must be between 1 and 1024 (it is {threads})"
            ));
        }
        if cpu.busy_yield_us != 0 && !(50..=100_000).contains(&cpu.busy_yield_us) {
            return Some(format!(
                "limits.busy_yield_us must be 0 (off) or between 50 and 100000 (it is {})",
                cpu.busy_yield_us
            ));
        }
        if cpu.busy_nice > 19 {
            return Some(format!(
                "limits.busy_nice must be between 0 and 19 (it is {})",
                cpu.busy_nice
            ));
        }
        for (key, weights) in [
            ("limits.plugin_cpu_weights", &cpu.plugin_weights),
            ("limits.token_cpu_weights", &cpu.token_weights),
        ] {
            if let Some((name, weight)) = weights.iter().find(|(_, w)| !(1..=100).contains(*w)) {
                return Some(format!("{key}.{name} must be between 1 and 100 (it is {weight})"));
            }
        }
        if self.tree.max_batch == 0 || self.pool.max_instances == 0 {
            return Some("limits.max_batch and limits.max_instances must be greater than 0".into());
        }
        for (key, percent) in [
            ("limits.plugin_share_percent", self.shares.plugin_percent),
            ("limits.caller_share_percent", self.shares.caller_percent),
            (
                "limits.caller_plugin_share_percent",
                self.shares.caller_plugin_percent,
            ),
            ("limits.caller_cpu_share_percent", cpu.caller_percent),
        ] {
            if !(1..=100).contains(&percent) {
                return Some(format!("{key} must be between 1 and 100 (it is {percent})"));
            }
        }
        if self.shares.caller_reserve_percent > 99 {
            return Some(format!(
                "limits.caller_reserve_percent must be between 0 and 99 (it is {})",
                self.shares.caller_reserve_percent
            ));
        }
        None
    }
}
