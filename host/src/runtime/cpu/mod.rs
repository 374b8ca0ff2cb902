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
//! running permits in a line of their own, and the lines take turns
//! ([`running`]), so one plugin's spinning calls do not keep a benign call of
//! another plugin of the same token waiting behind all of them; one plugin alone
//! still has the tenant's whole share.
//!
//! A plugin whose calls for a tenant ran past their first tick within
//! `limits.busy_ms` is *busy* for that tenant (a call has run past it once it has
//! used a whole tick of CPU, [`spent`], not merely seen one pass while the kernel
//! ran something else): its new calls run on low-priority
//! threads ([`background`]), so the kernel too prefers the others (the tenant's
//! other plugins included); every large parse and validation runs there too.

mod background;
mod running;
mod spent;

pub(crate) use background::Offloaded;
pub(super) use running::{Running, inside_a_call};

use crate::config::CpuLimits;
use background::Background;
use running::{Line, RunSlots};
use spent::CallCpu;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Ticks a call runs before its first epoch callback spends a ticket: the first
/// whole tick is free (`sandbox::new_store` sets the first deadline to this).
pub(super) const FREE_TICKS: u64 = 2;

/// `Tenant::overran` of a tenant whose calls never ran past their first tick.
const NEVER: u64 = u64::MAX;

/// Every tenant's tickets and validation permits.
pub struct CpuShares {
    per_tenant: usize,
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
}

/// One tenant's share.
struct Tenant {
    /// Ticks its busy calls may still run this tick (topped up every tick).
    ticks: Arc<Semaphore>,
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
            tenants: Mutex::new(HashMap::new()),
            clock: Arc::new(AtomicU64::new(0)),
            busy_ticks: (limits.busy_ms * 1000 / limits.epoch_tick_us.max(1)).max(1),
            tick_ns: limits.epoch_tick_us.saturating_mul(1000),
            background: Background::new(
                limits.busy_nice.min(19) as i32,
                limits.validate_sched_idle,
                workers,
            ),
        }
    }

    /// How many workers' worth one tenant gets.
    pub fn per_tenant(&self) -> usize {
        self.per_tenant
    }

    /// `f` of `tenant`'s share (tenants are the configured tokens and a few
    /// internal names, their parts the plugins they call, so the maps stay small).
    fn with<T>(&self, tenant: &Arc<str>, f: impl FnOnce(&mut Tenant) -> T) -> T {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = tenants.entry(tenant.clone()).or_insert_with(|| Tenant {
            ticks: Arc::new(Semaphore::new(self.per_tenant)),
            validations: Arc::new(Semaphore::new(self.per_tenant)),
            running: Arc::new(RunSlots::new(self.per_tenant)),
            plugins: HashMap::new(),
        });
        f(tenant)
    }

    /// The ticket gate of `plugin`'s call for `tenant`, for its epoch callback.
    pub(super) fn gate(&self, tenant: &Arc<str>, plugin: &Arc<str>) -> TickGate {
        let (ticks, running, part) = self.with(tenant, |t| {
            let running = &t.running;
            let part = t.plugins.entry(plugin.clone()).or_insert_with(|| Part {
                line: running.line(),
                overran: Arc::new(AtomicU64::new(NEVER)),
            });
            (t.ticks.clone(), t.running.clone(), part.clone())
        });
        TickGate {
            ticks,
            running,
            line: part.line,
            overran: part.overran,
            busy_ticks: self.busy_ticks,
            tick_ns: self.tick_ns,
            started: Arc::new(AtomicU64::new(self.clock.load(Ordering::Relaxed))),
            cpu: Arc::new(CallCpu::default()),
            clock: self.clock.clone(),
        }
    }

    /// Runs `call` on the low-priority threads (`Err` gives it back to run in
    /// place: they are off).
    pub(super) fn offload<F>(&self, call: F) -> Result<Offloaded<F::Output>, F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.background.spawn(call)
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

    /// Calls run on the low-priority threads since start.
    pub fn low_priority_calls(&self) -> u64 {
        self.background.calls()
    }

    /// Large parses and validations run by [`CpuShares::blocking`] since start.
    pub fn low_priority_parses(&self) -> u64 {
        self.background.parses()
    }

    /// Waits for one of `tenant`'s validation permits; given back when dropped.
    async fn validation(&self, tenant: &Arc<str>) -> OwnedSemaphorePermit {
        let permits = self.with(tenant, |t| t.validations.clone());
        permits
            .acquire_owned()
            .await
            .expect("validation permits are never closed")
    }

    /// Called by the epoch ticker every tick: each tenant's tickets back to full.
    pub(super) fn refill(&self) {
        self.clock.fetch_add(1, Ordering::Relaxed);
        let tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        for tenant in tenants.values() {
            let missing = self.per_tenant.saturating_sub(tenant.ticks.available_permits());
            if missing > 0 {
                tenant.ticks.add_permits(missing);
            }
        }
    }
}

/// One call's way past an epoch tick.
#[derive(Clone)]
pub(super) struct TickGate {
    ticks: Arc<Semaphore>,
    running: Arc<RunSlots>,
    /// Its plugin's line for the tenant's running slots.
    line: Arc<Line>,
    /// When its plugin's calls for the tenant last ran past their first tick.
    overran: Arc<AtomicU64>,
    busy_ticks: u64,
    /// The tick the call started running at: made with the gate, moved to when
    /// [`TickGate::running`] first got a permit (a call that waited for one has
    /// run no tick yet, however long it waited).
    started: Arc<AtomicU64>,
    /// The CPU the call has used in its polls.
    cpu: Arc<CallCpu>,
    tick_ns: u64,
    clock: Arc<AtomicU64>,
}

impl TickGate {
    /// At an epoch deadline: how many more ticks the call may run before it has
    /// had its free first whole tick since it started running; 0 once it has. From
    /// then on its plugin is busy for the tenant, once the call has also used a
    /// whole tick of CPU in its polls ([`spent`]; a call that never ran in a
    /// [`TickGate::running`] poll, such as a plugin's load, by the ticks alone): a
    /// trivial call whose worker the kernel gave to something else for a tick
    /// makes nothing busy.
    pub(super) fn first_tick_left(&self) -> u64 {
        let now = self.clock.load(Ordering::Relaxed);
        let left = (self.started.load(Ordering::Relaxed) + FREE_TICKS).saturating_sub(now);
        if left == 0 && self.cpu.spent().is_none_or(|ns| ns >= self.tick_ns) {
            self.overran.store(now, Ordering::Relaxed);
        }
        left
    }

    /// Whether a call of this tenant ran past its first tick within `limits.busy_ms`.
    pub(super) fn busy(&self) -> bool {
        let overran = self.overran.load(Ordering::Relaxed);
        overran != NEVER && self.clock.load(Ordering::Relaxed).saturating_sub(overran) <= self.busy_ticks
    }

    /// At a tick: spends one of the tenant's tickets if one is left (`true`: the
    /// call then yields the ordinary way), else `false`.
    pub(super) fn try_pass(&self) -> bool {
        match self.ticks.try_acquire() {
            Ok(ticket) => {
                ticket.forget();
                true
            }
            Err(_) => false,
        }
    }

    /// Waits for the next refill of the tenant's tickets and spends one (the
    /// tenant's other busy calls go first).
    pub(super) async fn pass(self) {
        self.ticks
            .acquire()
            .await
            .expect("tickets are never closed")
            .forget();
    }

    /// `call`, each poll of it holding one of the tenant's running permits
    /// (waiting in FIFO order when its other calls hold them all).
    pub(super) fn running<F: Future>(&self, call: F) -> Running<F> {
        Running::new(
            call,
            (self.running.clone(), self.line.clone()),
            (self.started.clone(), self.cpu.clone()),
            self.clock.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Shares of `percent` of `workers`, the other limits at their defaults.
    fn shares_of(workers: usize, percent: u32) -> CpuShares {
        let limits = CpuLimits {
            caller_percent: percent,
            ..crate::config::Limits::default().cpu
        };
        CpuShares::new(workers, &limits)
    }

    #[test]
    fn a_tenant_gets_its_share_of_the_workers_and_at_least_one() {
        assert_eq!(shares_of(2, 50).per_tenant(), 1);
        assert_eq!(shares_of(8, 50).per_tenant(), 4);
        assert_eq!(shares_of(1, 10).per_tenant(), 1);
        assert_eq!(shares_of(4, 100).per_tenant(), 4);
        assert_eq!(shares_of(8, 25).per_tenant(), 2);
    }

    #[tokio::test]
    async fn busy_calls_of_one_tenant_wait_for_the_next_tick_and_others_do_not() {
        let shares = shares_of(2, 50);
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        shares.gate(&a, &Arc::from("p")).pass().await;
        // `a`'s ticket for this tick is spent: its next busy call waits...
        let waiting = tokio::spawn(shares.gate(&a, &Arc::from("p")).pass());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // ...while `b` passes at once, and may validate.
        shares.gate(&b, &Arc::from("p")).pass().await;
        let _permit = shares.validation(&b).await;
        // The next tick tops `a` up: the waiting call runs on.
        shares.refill();
        waiting.await.unwrap();
        // At a tick, a ticket left is spent at once; none left, the call must wait.
        shares.refill();
        assert!(shares.gate(&a, &Arc::from("p")).try_pass());
        assert!(!shares.gate(&a, &Arc::from("p")).try_pass());
        // A refill never gives more than the share.
        shares.refill();
        shares.refill();
        assert_eq!(shares.with(&a, |t| t.ticks.available_permits()), 1);
    }

    #[test]
    fn a_tenant_is_busy_for_busy_ms_after_a_call_ran_past_its_first_tick() {
        let shares = shares_of(2, 50);
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let (gate_a, gate_b) = (shares.gate(&a, &Arc::from("p")), shares.gate(&b, &Arc::from("p")));
        assert!(!gate_a.busy() && !gate_b.busy());
        // Within its first tick a call makes its tenant nothing.
        assert_eq!(gate_a.first_tick_left(), FREE_TICKS);
        assert!(!gate_a.busy());
        for _ in 0..FREE_TICKS {
            shares.refill();
        }
        assert_eq!(gate_a.first_tick_left(), 0);
        // Now every call of `a`, new ones too, is busy; `b`'s are not.
        assert!(gate_a.busy() && shares.gate(&a, &Arc::from("p")).busy());
        // Its other plugins' calls are not.
        assert!(!shares.gate(&a, &Arc::from("q")).busy());
        assert!(!gate_b.busy());
        for _ in 0..shares.busy_ticks {
            shares.refill();
        }
        assert!(
            gate_a.busy(),
            "busy for the whole second ({} ticks)",
            shares.busy_ticks
        );
        shares.refill();
        assert!(!shares.gate(&a, &Arc::from("p")).busy());
        assert_eq!(shares.busy_ticks, 500);
    }

    /// Polls `f` once on a fresh thread (another worker) with a no-op waker.
    fn poll_on_another_thread<F: Future + Send + 'static>(f: F) -> (Poll<F::Output>, Pin<Box<F>>)
    where
        F::Output: Send,
    {
        std::thread::spawn(move || {
            let mut f = Box::pin(f);
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let poll = f.as_mut().poll(&mut cx);
            (poll, f)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn at_most_a_share_of_one_tenants_calls_run_at_once_and_nested_calls_run_inside() {
        let shares = Arc::new(shares_of(2, 50));
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let (gate_a, gate_b) = (shares.gate(&a, &Arc::from("p")), shares.gate(&b, &Arc::from("p")));
        let outer = gate_a.clone().running(std::future::poll_fn(move |cx| {
            // While this poll of `a` runs, another of `a`'s calls on another worker
            // waits without being polled; `b`'s runs.
            let polled = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = polled.clone();
            let second_a = gate_a.running(async move {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            let (poll, second_a) = poll_on_another_thread(second_a);
            assert!(poll.is_pending());
            assert!(!polled.load(std::sync::atomic::Ordering::SeqCst));
            let (poll, _) = poll_on_another_thread(gate_b.running(async { 7 }));
            assert_eq!(poll, Poll::Ready(7));
            // A nested call of the same tenant runs inside this poll.
            let mut nested = gate_a.running(async { 1 });
            assert_eq!(Pin::new(&mut nested).poll(cx), Poll::Ready(1));
            Poll::Ready((second_a, polled))
        }));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut outer = Box::pin(outer);
        let Poll::Ready((second_a, polled)) = outer.as_mut().poll(&mut cx) else {
            panic!("the outer call finishes in one poll")
        };
        // The first call's poll is over: the waiting one gets the permit and runs.
        let (poll, _) = poll_on_another_thread(second_a);
        assert!(poll.is_ready());
        assert!(polled.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_call_the_kernel_kept_waiting_past_its_first_tick_makes_nothing_busy_and_a_spinning_one_does() {
        let shares = shares_of(2, 50);
        let (a, p): (Arc<str>, Arc<str>) = ("a".into(), "p".into());
        let gate = shares.gate(&a, &p);
        let mut call = gate.running(std::future::poll_fn(|_| {
            // The ticks pass while the call has used next to no CPU (its worker
            // was descheduled): past its free tick, but its plugin stays as it was.
            for _ in 0..FREE_TICKS {
                shares.refill();
            }
            let preempted = (gate.first_tick_left(), gate.busy());
            // Then it spins through a whole tick of CPU.
            spent::spin(shares.tick_ns);
            Poll::Ready((preempted, gate.first_tick_left()))
        }));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let Poll::Ready((preempted, spun)) = Pin::new(&mut call).poll(&mut cx) else {
            panic!("the call finishes in one poll")
        };
        assert_eq!(preempted, (0, false));
        assert_eq!(spun, 0);
        assert!(shares.gate(&a, &p).busy());
    }

    #[test]
    fn the_free_first_tick_counts_from_when_a_call_starts_running() {
        let shares = shares_of(2, 50);
        let gate = shares.gate(&Arc::from("a"), &Arc::from("p"));
        assert_eq!(gate.first_tick_left(), FREE_TICKS);
        for _ in 0..5 {
            shares.refill();
        }
        // Without a running permit (plugin loads) the ticks count from the gate.
        assert_eq!(gate.first_tick_left(), 0);
        // A call that waited five ticks for its permit has run none of them.
        let mut call = gate.running(async {});
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(Pin::new(&mut call).poll(&mut cx).is_ready());
        assert_eq!(gate.first_tick_left(), FREE_TICKS);
        shares.refill();
        assert_eq!(gate.first_tick_left(), FREE_TICKS - 1);
    }
}
