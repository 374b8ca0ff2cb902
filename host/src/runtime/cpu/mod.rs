//! CPU shares per tenant (the token a call runs under). Instance slots bound how
//! many calls one token may have open; this bounds how much CPU its busy ones may
//! burn. Every epoch tick, each tenant gets `limits.caller_cpu_share_percent`
//! (unset: `limits.caller_share_percent`) of the
//! async worker threads (at least one) in tickets; a call still running at a tick
//! (past its first whole tick) spends one to run on to the next, and waits, in FIFO
//! order, when its tenant has none left. So one token's spinning calls share their
//! part of the CPU while every other token's calls find workers free. A call
//! blocked in a host call (a nested call, an HTTP response) passes no ticks and
//! holds nothing.
//!
//! Tickets meter time; they do not bound how many of a tenant's calls run guest
//! code at the same instant: a burst of new calls each ran its first tick (one to
//! two ticks, before the first epoch callback) at once and took every worker, so a
//! benign call waited a whole tick. So each tenant also holds that many *running*
//! permits, one per poll of a call ([`TickGate::running`]): at any instant at most
//! its share of the workers runs its guests, and the other workers stay free for
//! the other tenants. A nested call runs inside its parent's poll, on the permit
//! the parent holds.
//!
//! New calls wait only for a running permit, never for tickets: queued behind the
//! tickets, once one call of a busy token overran its first tick, every new call
//! of that token queued for a ticket, one let through per tick, and the queue
//! never drained (64 connections of one token: p99 135 ms, a fifth of the calls).
//!
//! Each tenant also has that many permits for large schema validations on the
//! blocking pool (`hub::checks`), the other CPU-heavy work a client can cause
//! before a plugin runs.
//!
//! Within a tenant, each plugin it calls has a part ([`Part`]): its calls wait for
//! running permits in a line of their own, and the lines take turns by weight
//! ([`running`]), so one plugin's spinning calls do not keep a benign call of
//! another plugin of the same token waiting behind all of them (a new call of a
//! plugin that runs nothing goes first and preempts the permits' holders at their
//! next epoch check: [`TickGate::preempted`], or, when they run on the
//! low-priority threads, runs at once on one slot over the tenant's limit);
//! they wait for
//! tickets in a line of their own too, and the tenant's tickets go to the lines in
//! proportion to the plugins' weights (`limits.plugin_cpu_weights`, [`tickets`]),
//! so a long call of one plugin does not queue behind another's spinners. One
//! plugin alone still has the tenant's whole share.
//!
//! With `limits.cpu_lend_idle` (off by default: in `bench/fairness.sh` it made a
//! benign call's latency under spinning calls much worse, most likely because with two workers a lent
//! slot runs a spinner on the last free core, docs/performance/fairness.md) the shares are work-conserving between tenants: at every tick, the tickets and
//! running permits of the tenants that ran nothing in the tick that ended (up to
//! the number of async workers, less the active tenants' shares) go to the tenants
//! that wanted more than their share, in proportion to their weights
//! (`limits.token_cpu_weights`, which also multiply a token's own share). A tenant
//! that comes back finds its own share at once (its tickets are topped up every
//! tick, its running permits never fall below it) and takes back what was lent at
//! the next tick. So one token alone may use every worker, and two busy tokens
//! split them.
//!
//! A plugin whose calls for a tenant ran past their first tick within
//! `limits.busy_ms` is *busy* for that tenant (a call has run past it once it has
//! also used a whole tick of CPU after it, [`spent`], not merely seen one pass
//! while the kernel ran something else): its calls run on low-priority
//! threads ([`background`]), those already running too, from their next poll
//! ([`moving`]), so the kernel too prefers the others (the tenant's other plugins
//! included); every large parse and validation runs there too.

mod background;
mod moving;
mod running;
mod spent;
mod tickets;

pub(crate) use moving::Movable;
pub(super) use running::{Running, inside_a_call};

use crate::config::CpuLimits;
use background::{Background, GiveWay};
use moving::BusyMark;
use running::{Line, RunSlots};
use spent::CallCpu;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tickets::Tickets;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Weight of a plugin or token the limits name none for.
const DEFAULT_WEIGHT: u32 = 1;

/// Ticks a call runs before its first epoch callback spends a ticket: the first
/// whole tick is free (`sandbox::new_store` sets the first deadline to this).
pub(super) const FREE_TICKS: u64 = 2;

/// `Tenant::overran` of a tenant whose calls never ran past their first tick.
const NEVER: u64 = u64::MAX;

/// Every tenant's tickets and validation permits.
pub struct CpuShares {
    per_tenant: usize,
    /// The async workers: the most tickets and running permits lent out per tick.
    workers: usize,
    /// `limits.plugin_cpu_weights` and `limits.token_cpu_weights`.
    plugin_weights: BTreeMap<String, u32>,
    token_weights: BTreeMap<String, u32>,
    /// `limits.cpu_lend_idle`: whether idle tenants' shares are lent.
    lend_idle: bool,
    tenants: Mutex<HashMap<Arc<str>, Tenant>>,
    /// Ticks since start (bumped by `refill`): when a call started running.
    clock: Arc<AtomicU64>,
    /// Ticks a tenant stays busy after an overrun (`limits.busy_ms`).
    busy_ticks: u64,
    /// The CPU a call uses before it counts as having run past its first tick:
    /// one tick (`limits.epoch_tick_us`), in nanoseconds.
    tick_ns: u64,
    /// Where busy tenants' calls and large validations run.
    background: Background,
    /// How often the epoch is bumped while calls run there, so that their guests
    /// give way at that pace (`limits.busy_yield_us`, at most a tick; `None`: off).
    give_way_every: Option<std::time::Duration>,
    /// The engine whose epoch a new call bumps to preempt the running guests of
    /// its tenant (`running`; `None` until [`CpuShares::preempting`]).
    engine: Option<wasmtime::Engine>,
}

/// One tenant's share.
struct Tenant {
    /// Its own tickets and running permits per tick: `per_tenant` times its weight.
    share: usize,
    weight: u32,
    /// Ticks its busy calls may still run this tick (refilled every tick).
    ticks: Arc<Tickets>,
    /// Large validations it may run at once on the blocking pool.
    validations: Arc<Semaphore>,
    /// Polls of its calls running at once (guest code on a worker).
    running: Arc<RunSlots>,
    /// Each plugin it calls: its line for running slots and when it overran.
    plugins: HashMap<Arc<str>, Part>,
}

/// One plugin's part of a tenant's share.
#[derive(Clone)]
struct Part {
    line: Arc<Line>,
    /// Its line for the tenant's tickets.
    ticket_line: usize,
    /// The last tick one of its calls ran past its first tick ([`NEVER`]).
    overran: Arc<AtomicU64>,
}

impl CpuShares {
    /// `limits.caller_cpu_share_percent` (else `caller_share_percent`) of
    /// `workers` per tenant, at least one.
    pub(super) fn new(workers: usize, limits: &CpuLimits) -> CpuShares {
        let percent = limits.caller_percent;
        let per_tenant = (workers * percent as usize / 100).max(1);
        CpuShares {
            per_tenant,
            workers: workers.max(1),
            plugin_weights: limits.plugin_weights.clone(),
            token_weights: limits.token_weights.clone(),
            lend_idle: limits.lend_idle,
            tenants: Mutex::new(HashMap::new()),
            clock: Arc::new(AtomicU64::new(0)),
            busy_ticks: (limits.busy_ms * 1000 / limits.epoch_tick_us.max(1)).max(1),
            tick_ns: limits.epoch_tick_us.saturating_mul(1000),
            background: Background::new(
                limits.busy_nice.min(19) as i32,
                limits.validate_sched_idle,
                busy_threads(limits, workers),
            ),
            give_way_every: (limits.busy_yield_us > 0 && limits.busy_nice > 0)
                .then(|| std::time::Duration::from_micros(limits.busy_yield_us.min(limits.epoch_tick_us))),
            engine: None,
        }
    }

    /// These shares preempt guests of `engine` (`running`: a new call of a plugin
    /// that runs nothing does not wait for the rest of another plugin's tick).
    pub(super) fn preempting(mut self, engine: wasmtime::Engine) -> CpuShares {
        self.engine = Some(engine);
        self
    }

    /// How many workers' worth one tenant of weight 1 gets, at least.
    pub fn per_tenant(&self) -> usize {
        self.per_tenant
    }

    /// `f` of `tenant`'s share (tenants are the configured tokens and a few
    /// internal names, their parts the plugins they call, so the maps stay small).
    fn with<T>(&self, tenant: &Arc<str>, f: impl FnOnce(&mut Tenant) -> T) -> T {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = tenants.entry(tenant.clone()).or_insert_with(|| {
            let weight = self
                .token_weights
                .get(&**tenant)
                .copied()
                .unwrap_or(DEFAULT_WEIGHT);
            let share = (self.per_tenant * weight as usize).min(self.workers).max(1);
            Tenant {
                share,
                weight,
                ticks: Arc::new(Tickets::new(share)),
                validations: Arc::new(Semaphore::new(self.per_tenant)),
                running: Arc::new(RunSlots::new(share, self.engine.clone())),
                plugins: HashMap::new(),
            }
        });
        f(tenant)
    }

    /// The ticket gate of `plugin`'s call for `tenant`, for its epoch callback.
    pub(super) fn gate(&self, tenant: &Arc<str>, plugin: &Arc<str>) -> TickGate {
        let weight = self
            .plugin_weights
            .get(&**plugin)
            .copied()
            .unwrap_or(DEFAULT_WEIGHT);
        let (ticks, running, part) = self.with(tenant, |t| {
            let (running, ticks) = (&t.running, &t.ticks);
            let part = t.plugins.entry(plugin.clone()).or_insert_with(|| Part {
                line: running.line(weight),
                ticket_line: ticks.line(weight),
                overran: Arc::new(AtomicU64::new(NEVER)),
            });
            (t.ticks.clone(), t.running.clone(), part.clone())
        });
        TickGate {
            ticks,
            ticket_line: part.ticket_line,
            running,
            line: part.line,
            mark: BusyMark {
                overran: part.overran,
                clock: self.clock.clone(),
                busy_ticks: self.busy_ticks,
            },
            tick_ns: self.tick_ns,
            started: Arc::new(AtomicU64::new(self.clock.load(Ordering::Relaxed))),
            cpu: Arc::new(CallCpu::default()),
            paid: Arc::new(AtomicU64::new(NEVER)),
            clock: self.clock.clone(),
            yielded: Arc::default(),
            give_way: self.give_way_every.map(|_| self.background.give_way()),
        }
    }

    /// `call`, run where it is polled until the plugin `busy` marks is busy
    /// for its tenant ([`TickGate::busy_mark`]), from then on on the
    /// low-priority threads ([`moving`]).
    pub(super) fn movable<F>(&self, busy: BusyMark, call: F) -> Movable<'_, F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        Movable::new(call, busy, &self.background)
    }

    /// Runs CPU-heavy work `tenant` caused (a large parse or validation) on the
    /// low-priority blocking pool (tokio's own when `limits.busy_nice = 0`), holding
    /// one of the tenant's validation permits while it runs, so each tenant keeps to
    /// its share of the cores.
    pub async fn blocking<T: Send + 'static>(
        &self,
        tenant: &Arc<str>,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        let _permit = self.validation(tenant).await;
        self.background.blocking(work).await
    }

    /// Epoch ticks each (tenant, plugin)'s calls ran past their free first tick
    /// since start (each spent a ticket), in name order.
    pub fn ticks_spent(&self) -> Vec<(Arc<str>, Arc<str>, u64)> {
        let tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let mut spent: Vec<_> = (tenants.iter())
            .flat_map(|(name, t)| {
                (t.plugins.iter()).map(move |(plugin, part)| {
                    (name.clone(), plugin.clone(), t.ticks.spent(part.ticket_line))
                })
            })
            .collect();
        spent.sort_unstable();
        spent
    }

    /// Calls run on the low-priority threads since start.
    pub fn low_priority_calls(&self) -> u64 {
        self.background.calls()
    }

    /// Large parses and validations run by [`CpuShares::blocking`] since start.
    pub fn low_priority_parses(&self) -> u64 {
        self.background.parses()
    }

    /// Times a guest on the low-priority threads offered its core to other
    /// threads at an epoch check since start (`limits.busy_yield_us`).
    pub fn low_priority_yields(&self) -> u64 {
        self.background.yields()
    }

    /// For the epoch ticker: how soon to bump the epoch again between ticks, so
    /// that guests on the low-priority threads reach an epoch check and give way
    /// ([`background`]); `None` while no call runs there (or when off).
    pub(super) fn nudge_every(&self) -> Option<std::time::Duration> {
        self.give_way_every.filter(|_| self.background.in_use())
    }

    /// Waits for one of `tenant`'s validation permits; given back when dropped.
    async fn validation(&self, tenant: &Arc<str>) -> OwnedSemaphorePermit {
        let permits = self.with(tenant, |t| t.validations.clone());
        permits
            .acquire_owned()
            .await
            .expect("validation permits are never closed")
    }

    /// Called by the epoch ticker every tick: each tenant gets its share of
    /// tickets and running permits, and those who wanted more than their share
    /// what the idle tenants leave over (the module doc).
    pub(super) fn refill(&self) {
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        let tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let mut reserved = 0;
        let mut wanting = Vec::new();
        for (name, tenant) in tenants.iter() {
            let demand = tenant.ticks.demand();
            let (ran, wants_more_slots) = tenant.running.tick(tenant.share);
            if ran || demand.active() {
                reserved += tenant.share;
            }
            if wants_more_slots || demand.waiting > 0 || demand.spent > tenant.share {
                wanting.push((name, tenant.weight));
            }
        }
        let spare = if self.lend_idle {
            self.workers.saturating_sub(reserved)
        } else {
            0
        };
        let lent = lend(spare, &wanting, tick);
        for (name, tenant) in tenants.iter() {
            let extra = lent.get(name).copied().unwrap_or(0);
            tenant.ticks.refill(tenant.share + extra);
            tenant.running.set_limit(tenant.share + extra);
        }
    }
}

/// Threads of the low-priority runtime: `limits.busy_threads`, else half the
/// async workers, at least one. Not all of them: busy calls spin until their
/// time limit, and with as many low-priority threads as cores every core ran
/// one, so a benign call's worker always woke beside a spinner and the slot
/// hand-offs between spinning calls bounced across all the cores (a benign
/// `calc.eval` beside 128 spinning calls of its own token, 2 cores: p99 1.28 ms
/// with 2 threads, 0.83 ms with 1, `bench/fairness.sh`).
fn busy_threads(limits: &CpuLimits, workers: usize) -> usize {
    match limits.busy_threads {
        Some(threads) => threads as usize,
        None => (workers / 2).max(1),
    }
}

/// Divides `spare` between the `wanting` tenants in proportion to their weights;
/// what does not divide evenly goes one each in turn, starting at a place that
/// moves with `tick`.
fn lend<'a>(spare: usize, wanting: &[(&'a Arc<str>, u32)], tick: u64) -> HashMap<&'a Arc<str>, usize> {
    let mut lent = HashMap::new();
    let total: usize = wanting.iter().map(|(_, w)| *w as usize).sum();
    if spare == 0 || total == 0 {
        return lent;
    }
    let mut left = spare;
    for (name, weight) in wanting {
        let part = spare * *weight as usize / total;
        left -= part;
        lent.insert(*name, part);
    }
    let start = tick as usize % wanting.len();
    for (name, _) in wanting.iter().cycle().skip(start).take(left) {
        *lent.entry(*name).or_default() += 1;
    }
    lent
}

/// One call's way past an epoch tick.
#[derive(Clone)]
pub(super) struct TickGate {
    ticks: Arc<Tickets>,
    /// Its plugin's line for the tenant's tickets.
    ticket_line: usize,
    running: Arc<RunSlots>,
    /// Its plugin's line for the tenant's running slots.
    line: Arc<Line>,
    /// When its plugin's calls for the tenant last ran past their first tick.
    mark: BusyMark,
    /// The tick the call started running at: made with the gate, moved to when
    /// [`TickGate::running`] first got a permit (a call that waited for one has
    /// run no tick yet, however long it waited).
    started: Arc<AtomicU64>,
    /// The CPU the call has used in its polls.
    cpu: Arc<CallCpu>,
    tick_ns: u64,
    /// The tick the call last spent a ticket for ([`NEVER`]: none yet).
    paid: Arc<AtomicU64>,
    clock: Arc<AtomicU64>,
    /// Whether the call yields at the end of this poll (a tick, a preemption):
    /// it then waits its plugin's turn for its next slot ([`running`]).
    yielded: Arc<std::sync::atomic::AtomicBool>,
    /// How it offers its core at an epoch check on a low-priority thread
    /// (`None`: `limits.busy_yield_us = 0`).
    give_way: Option<GiveWay>,
}

impl TickGate {
    /// At an epoch deadline: how many more ticks the call may run before it has
    /// had its free first whole tick since it started running; 0 once it has. From
    /// then on its plugin is busy for the tenant, once the call has also used a
    /// whole tick of CPU in its polls since its first check past it ([`spent`]; a
    /// call that never ran in a [`TickGate::running`] poll, such as a plugin's load,
    /// by the ticks alone): a trivial call whose worker the kernel gave to something
    /// else for a tick makes nothing busy.
    pub(super) fn first_tick_left(&self) -> u64 {
        let now = self.clock.load(Ordering::Relaxed);
        let left = (self.started.load(Ordering::Relaxed) + FREE_TICKS).saturating_sub(now);
        if left == 0 && self.cpu.spent().is_none_or(|ns| ns >= self.tick_ns) {
            self.mark.overran.store(now, Ordering::Relaxed);
        }
        left
    }

    /// At every epoch check: on a low-priority thread, lets any other runnable
    /// thread of the core run first ([`background`]).
    pub(super) fn give_way(&self) {
        if let Some(give_way) = &self.give_way {
            give_way.now();
        }
    }

    /// Whether a call of this tenant ran past its first tick within `limits.busy_ms`.
    #[cfg(test)]
    pub(super) fn busy(&self) -> bool {
        self.mark.busy()
    }

    /// Whether the call's plugin is busy for its tenant, for [`CpuShares::movable`].
    pub(super) fn busy_mark(&self) -> BusyMark {
        self.mark.clone()
    }

    /// The call yields its slot at the end of this poll (its epoch callback
    /// returns a yield): its next slot comes in its plugin's turn.
    pub(super) fn yields(&self) {
        self.yielded.store(true, Ordering::Relaxed);
    }

    /// Whether a new call of another of the tenant's plugins waits for the
    /// running slot this call holds: it should yield at once (no ticket spent).
    pub(super) fn preempted(&self) -> bool {
        self.running.preempted()
    }

    /// Whether the call already spent a ticket in this tick: an epoch deadline
    /// it reaches within the tick is a preemption for another tenant's call, not
    /// a tick ([`running`]), and costs nothing.
    pub(super) fn paid_this_tick(&self) -> bool {
        self.paid.load(Ordering::Relaxed) == self.clock.load(Ordering::Relaxed)
    }

    /// At a tick: spends one of the tenant's tickets if one is left and no call
    /// waits for one (`true`: the call then yields the ordinary way), else `false`.
    pub(super) fn try_pass(&self) -> bool {
        let passed = self.ticks.try_pass(self.ticket_line);
        if passed {
            self.paid
                .store(self.clock.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        passed
    }

    /// Waits in its plugin's line for one of the tenant's tickets and spends it.
    pub(super) async fn pass(self) {
        self.ticks.pass(self.ticket_line).await;
        self.paid
            .store(self.clock.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// `call`, each poll of it holding one of the tenant's running permits
    /// (waiting in FIFO order when its other calls hold them all).
    pub(super) fn running<F: Future>(&self, call: F) -> Running<F> {
        Running::new(
            call,
            (self.running.clone(), self.line.clone()),
            (self.started.clone(), self.cpu.clone(), self.yielded.clone()),
            self.clock.clone(),
        )
    }
}

#[cfg(test)]
mod tests;
