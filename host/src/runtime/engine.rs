//! The process's one wasmtime `Engine`: its configuration (pooling allocator when the
//! address space can be reserved, epoch interruption, no component-model async) and
//! the epoch ticker thread that drives deadlines and yields.

use crate::config::{CallCaps, CpuLimits, Limits, PoolLimits};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// The epoch tick (`limits.epoch_tick_us`). Each tick a running guest yields to
/// tokio (so a spinning guest cannot starve other tasks on its worker, and a
/// dropped call future stops it at the next tick), and every token's CPU tickets
/// are topped up. The check in the guest costs the same at any tick rate; a
/// shorter tick bounds how long a request waits behind a spinning guest on its
/// worker, for more wakeups of one sleeping thread.
pub fn epoch_tick(cpu: &CpuLimits) -> Duration {
    Duration::from_micros(cpu.epoch_tick_us)
}

/// Linear-memory slots per instance slot: Rust components have 1-2 memories,
/// componentize-py ones a few more.
const MEMORIES_PER_INSTANCE: u32 = 4;
/// Core-instance slots per component-instance slot (a component is several core
/// modules: the program, the WASI adapter, shims).
const CORE_INSTANCES_PER_INSTANCE: u32 = 16;
const TABLES_PER_INSTANCE: u32 = 8;

/// Which instance allocator the engine ended up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    /// wasmtime's pooling allocator: instance slots reserved up front (fast instantiation).
    Pooling,
    /// On-demand allocation: the fallback when the pooling reservation fails (slower).
    OnDemand,
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    // The component-model-async machinery costs ~1.5x per fresh-instance call
    // (`cargo bench -p wasmhub --bench runtime`, trivial call, with it enabled) and
    // only WASIp3 guests need it.
    config.concurrency_support(false);
    config.epoch_interruption(true);
    config
}

/// Pool slots for `pool.max_instances` instances of at most `call.memory_mb` each.
fn pooling(pool_limits: &PoolLimits, call: &CallCaps) -> PoolingAllocationConfig {
    let instances = pool_limits.max_instances;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(CORE_INSTANCES_PER_INSTANCE))
        .total_memories(instances.saturating_mul(MEMORIES_PER_INSTANCE))
        .total_tables(instances.saturating_mul(TABLES_PER_INSTANCE))
        .total_stacks(instances)
        .max_memory_size(usize::try_from(call.memory_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX))
        .table_keep_resident(16 << 10)
        .async_stack_keep_resident(16 << 10)
        // Warm slots let an instance reuse the memory image already mapped for its
        // plugin and the pages its last call faulted in; each costs up to
        // `warm_slot_kb` of resident memory while unused.
        .max_unused_warm_slots(pool_limits.warm_slots.min(instances));
    let keep = usize::try_from(pool_limits.warm_slot_kb.saturating_mul(1024)).unwrap_or(usize::MAX);
    // Resetting a freed slot: with Linux's PAGEMAP_SCAN (6.7+) wasmtime finds the
    // pages the call dirtied and memsets just those (up to `warm_slot_kb`), so the next call
    // neither faults them in again nor pays an madvise. Measured with
    // `cargo bench -p wasmhub --bench runtime` (the trivial fresh-instance call):
    // 30 µs -> 15 µs median, p99 ~2.5 ms -> ~0.1 ms under load. Without it,
    // keep-resident memsets the lowest bytes blindly, so keep that small.
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(Enabled::Yes).linear_memory_keep_resident(keep);
    } else {
        pool.linear_memory_keep_resident(keep.min(64 << 10));
    }
    pool
}

/// Builds the engine: pooling if its address space reservation succeeds, else
/// on-demand allocation (with a log line saying why).
pub(super) fn build(limits: &Limits) -> Result<(Engine, Allocator), wasmtime::Error> {
    let mut config = base_config();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(
        &limits.pool,
        &limits.call,
    )));
    match Engine::new(&config) {
        Ok(engine) => Ok((engine, Allocator::Pooling)),
        Err(e) => {
            crate::warn!(
                "pooling allocator unavailable ({e}); falling back to on-demand allocation \
                 (slower instantiation; check `ulimit -v` and vm.overcommit settings)"
            );
            let mut config = base_config();
            config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
            Ok((Engine::new(&config)?, Allocator::OnDemand))
        }
    }
}

/// The thread that advances the engine's epoch every tick ([`epoch_tick`]; between
/// ticks too while busy calls run, `CpuShares::nudge_every`) and tops up
/// every tenant's CPU tickets (`cpu`); stops when dropped.
pub(super) struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    pub(super) fn start(
        engine: Engine,
        cpu: Arc<super::cpu::CpuShares>,
        tick: Duration,
    ) -> std::io::Result<Ticker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("wasmhub-epoch".into())
            .spawn(move || {
                let mut next_tick = Instant::now() + tick;
                while !flag.load(Ordering::Relaxed) {
                    // Between ticks too while calls run on the low-priority
                    // threads: their guests give way at every epoch check
                    // (`cpu::background`); other guests see a deadline that is
                    // not a tick and go on.
                    let now = Instant::now();
                    let wake = match cpu.nudge_every() {
                        Some(every) => next_tick.min(now + every),
                        None => next_tick,
                    };
                    std::thread::sleep(wake.saturating_duration_since(now));
                    let now = Instant::now();
                    if now >= next_tick {
                        cpu.refill();
                        next_tick += tick;
                        // After a stall, no burst of ticks to catch up.
                        if next_tick <= now {
                            next_tick = now + tick;
                        }
                    }
                    engine.increment_epoch();
                }
            })?;
        Ok(Ticker { stop })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
