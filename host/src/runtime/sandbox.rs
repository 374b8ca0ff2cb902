//! The per-call sandbox: the data of one `Store` (WASI context built from the
//! plugin's grants only, bounded stdout/stderr capture, wasi-http hooks, memory
//! limiter, nested-call handle) and how a fresh one is made for every call.
//!
//! `WasiCtxBuilder::new()` is deny-all (no env, no preopens, stdin closed, sockets
//! and DNS denied); we only add what the manifest grants and never `inherit_*`.

use super::budget::{HttpBudget, LogBudget, MemoryBudget};
use super::capture::CapturePipe;
use super::cpu::TickGate;
use super::manifest::{DirGrant, EffectiveLimits};
use super::net::{NetHooks, NetPolicy};
use super::secrets::{CallSecrets, SecretNeeds};
use super::types::NestedCalls;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Most resources (streams, pollables, HTTP handles...) one call may hold at once.
const MAX_RESOURCES: usize = 10_000;
/// Largest `get-random-bytes` request (the WASI default is 64 MiB).
const MAX_RANDOM_BYTES: u64 = 1 << 20;
/// Most table elements one table may grow to.
const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Most component-model handles alive at once in one call (default 100,000).
const MAX_HANDLES: usize = 10_000;

/// What a plugin's calls are granted, resolved once at load so a call only copies it.
pub(super) struct SandboxSpec {
    /// Environment variables and `[env] secrets`, with values read at load time.
    pub env: Vec<(String, String)>,
    /// The plugin's configuration (`[config.NAME]` with the operator's values),
    /// as `wasi:config/store` gives it.
    pub config: Arc<Vec<(String, String)>>,
    /// Its `[secrets.NAME]`: injected into requests, or revealed.
    pub needs: Arc<SecretNeeds>,
    pub dirs: Vec<DirGrant>,
    pub net: Arc<NetPolicy>,
    pub limits: EffectiveLimits,
    /// The runtime's budget for all instances together.
    pub memory: Arc<MemoryBudget>,
}

/// Caps the total linear memory of one call's instance (all its memories together)
/// and reserves it from the runtime's [`MemoryBudget`]; remembers which cap was hit,
/// so a guest that aborts on a failed allocation is reported as `MemoryLimit` or
/// `MemoryBudget`, not as a generic trap. What it reserved is released at drop.
pub(super) struct MemoryLimiter {
    max_bytes: usize,
    used_bytes: usize,
    global: Arc<MemoryBudget>,
    pub hit: bool,
    pub budget_hit: bool,
}

impl Drop for MemoryLimiter {
    fn drop(&mut self) {
        self.global.release(self.used_bytes);
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used_bytes - current.min(self.used_bytes) + desired;
        if total > self.max_bytes {
            self.hit = true;
            return Ok(false);
        }
        let more = total.saturating_sub(self.used_bytes);
        if !self.global.reserve(more) {
            self.budget_hit = true;
            return Ok(false);
        }
        self.used_bytes += more;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// The data of one call's `Store`.
pub(super) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    net: NetHooks,
    pub limiter: MemoryLimiter,
    pub output: CapturePipe,
    pub plugin: Arc<str>,
    pub call_id: Arc<str>,
    pub nested: Arc<dyn NestedCalls>,
    /// Lines this call may still put into the hub log; shared with the HTTP hooks.
    pub log: Arc<LogBudget>,
    /// Its tenant's CPU tickets (see `cpu`), spent at every epoch tick after the first.
    pub gate: TickGate,
    /// The secrets this call used or missed; shared with the HTTP hooks.
    pub secrets: Arc<CallSecrets>,
    /// The plugin's configuration, for `wasi:config/store`.
    pub config: Arc<Vec<(String, String)>>,
    /// Instantiation and guest time, set as the call runs (`bindings`).
    pub times: super::types::CallTimes,
}

/// Why a sandbox could not be set up: a granted directory cannot be opened (it
/// vanished or changed since load).
#[derive(Debug)]
pub struct SandboxError {
    dir: std::path::PathBuf,
    source: wasmtime::Error,
}

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot open granted directory {}: {}",
            self.dir.display(),
            self.source
        )
    }
}

impl std::error::Error for SandboxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

impl CallState {
    pub(super) fn new(
        spec: &SandboxSpec,
        plugin: Arc<str>,
        call_id: Arc<str>,
        deadline: tokio::time::Instant,
        nested: Arc<dyn NestedCalls>,
        gate: TickGate,
        trace: Option<crate::telemetry::SpanContext>,
    ) -> Result<CallState, SandboxError> {
        let output = CapturePipe::new(spec.limits.log_bytes());
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(output.clone())
            .stderr(output.clone())
            .max_random_size(MAX_RANDOM_BYTES)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (k, v) in &spec.env {
            wasi.env(k, v);
        }
        for d in &spec.dirs {
            let perms = if d.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            wasi.preopened_dir(&d.host, &d.guest, perms)
                .map_err(|source| SandboxError {
                    dir: d.host.clone(),
                    source,
                })?;
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        let log = Arc::new(LogBudget::new(spec.limits.log_lines));
        let secrets = CallSecrets::new(spec.needs.clone());
        Ok(CallState {
            wasi: wasi.build(),
            table,
            http: WasiHttpCtx::new(),
            net: NetHooks {
                policy: spec.net.clone(),
                deadline,
                plugin: plugin.clone(),
                call_id: call_id.clone(),
                log: log.clone(),
                http: HttpBudget::new(spec.limits.max_http_concurrent, spec.limits.max_http_requests),
                secrets: secrets.clone(),
                trace,
            },
            limiter: MemoryLimiter {
                max_bytes: spec.limits.memory_bytes(),
                used_bytes: 0,
                global: spec.memory.clone(),
                hit: false,
                budget_hit: false,
            },
            output,
            plugin,
            call_id,
            nested,
            log,
            gate,
            secrets,
            config: spec.config.clone(),
            times: super::types::CallTimes::default(),
        })
    }
}

/// A store for one call, with every per-store limit set: memory limiter, hostcall
/// fuel (bytes the guest may hand the host in one host call: enough for the
/// largest input or output, not the 128 MiB default), handle cap, and the epoch
/// deadline: a call still running after a whole tick yields to tokio at every
/// tick and spends one of its tenant's CPU tickets (`cpu`); the wall-clock deadline
/// itself is the caller's `tokio::time::timeout`, which also covers blocked host
/// calls.
pub(super) fn new_store(
    engine: &wasmtime::Engine,
    state: CallState,
    limits: &EffectiveLimits,
) -> wasmtime::Store<CallState> {
    let mut store = wasmtime::Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.set_hostcall_fuel(
        limits
            .input_bytes()
            .max(limits.output_bytes())
            .saturating_add(64 << 10),
    );
    store.set_max_component_handles(MAX_HANDLES);
    // Two: the first callback comes after at least one whole tick, so calls that
    // finish within it never spend a ticket.
    store.set_epoch_deadline(super::cpu::FREE_TICKS);
    store.epoch_deadline_callback(|ctx| {
        let gate = &ctx.data().gate;
        // On a low-priority thread, the core goes to any other runnable thread
        // first (the epoch is bumped between ticks for it, `cpu::background`).
        gate.give_way();
        // A call that waited for a running permit reaches its first deadline as
        // soon as it runs: its free first tick counts from when it started running.
        // (Deadlines are in epochs, which preemptions bump too: one may come
        // early, and is set again.) Read before a preemption's yield: it marks the
        // plugin busy once the call has overrun, which moves it to the
        // low-priority threads at its next poll; a spinner preempted at every
        // check by a tenant's benign calls was never marked.
        let left = gate.first_tick_left();
        let update = if gate.preempted() {
            // A new call of another plugin of the tenant waits for this call's
            // running slot (`runtime::cpu::running`): give it back now.
            wasmtime::UpdateDeadline::Yield(1)
        } else if left > 0 {
            wasmtime::UpdateDeadline::Continue(left)
        } else if gate.paid_this_tick() {
            // A preemption for another tenant's call: this tick is paid for.
            wasmtime::UpdateDeadline::Continue(1)
        } else if gate.try_pass() {
            // The ordinary yield to tokio at every tick (other tasks run, the
            // call's timeout is noticed).
            wasmtime::UpdateDeadline::Yield(1)
        } else {
            wasmtime::UpdateDeadline::YieldCustom(1, Box::pin(gate.clone().pass()))
        };
        if !matches!(update, wasmtime::UpdateDeadline::Continue(_)) {
            gate.yields();
        }
        Ok(update)
    });
    store
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.net,
        }
    }
}
