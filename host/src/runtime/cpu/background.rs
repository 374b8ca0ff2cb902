//! Low-priority threads: where the CPU work of a busy tenant runs, so that the
//! kernel prefers every other client's work over it.
//!
//! Shares and running slots keep a tenant to its part of the hub's async workers,
//! but the hub shares its cores with the kernel's other threads: the clients on the
//! same machine, the balancer, the other workers. A worker running a spinning guest
//! is one more runnable thread at the same priority, and the kernel's time slices
//! of a few milliseconds then land on benign calls' latency. So the guests of a
//! *busy* tenant (one whose calls ran past their free first tick within the last
//! second) and the large parses and validations any client causes run here, on a
//! tokio runtime whose threads (workers and blocking pool) have the nice value
//! `limits.busy_nice`: they get the cores the normal-priority threads leave.
//! Raising a thread's own nice value needs no privilege, and these threads never
//! lower it again. `busy_nice = 0` runs everything on the hub's own runtime.
//!
//! The blocking pool's threads also switch to `SCHED_IDLE` when
//! `limits.validate_sched_idle` is on: a nice value only weighs a thread's share,
//! and the kernel lets a running low-priority thread finish its slice (a
//! millisecond or two) before a woken worker gets the core, which a large
//! validation always uses up; a `SCHED_IDLE` thread is preempted at once. Busy
//! calls stay on nice alone (at `SCHED_IDLE` they did worse: a spinner holding one
//! of its tenant's running slots then waited for any core to fall idle).
//!
//! A nice value alone still cost benign calls about 3× their idle p99 on a
//! 2-core machine (one plain nice-10 busy loop beside an idle hub: 0.30 → 1.16
//! ms): the kernel lets the low-priority thread run out its slice before a woken
//! normal-priority thread gets the core. So while calls run here, the epoch ticker
//! also bumps the epoch every `limits.busy_yield_us` (`CpuShares::nudge_every`), and
//! at every epoch check a guest on these threads offers its core to any other
//! runnable thread (`sched_yield`; [`GiveWay`]): a woken thread waits that long at
//! most. The same loop yielding every 250 µs left the benign p99 where it was
//! without the loop (0.31 ms; every 1 ms: 0.55 ms).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::task::{JoinError, JoinHandle};

/// The low-priority runtime, built on first use (most hubs in tests never need it).
pub(super) struct Background {
    nice: i32,
    /// Whether blocking work runs at `SCHED_IDLE` (`limits.validate_sched_idle`).
    idle_blocking: bool,
    /// Its worker threads (`limits.busy_threads`).
    threads: usize,
    runtime: OnceLock<Option<tokio::runtime::Runtime>>,
    /// Calls spawned here (`wasmhub_low_priority_calls_total`).
    calls: AtomicU64,
    /// Blocking work run here (`wasmhub_low_priority_parses_total`).
    parses: AtomicU64,
    /// Calls spawned here that have not ended.
    in_flight: Arc<AtomicUsize>,
    /// Cores offered at epoch checks (`wasmhub_low_priority_yields_total`).
    yields: Arc<AtomicU64>,
}

impl Background {
    pub(super) fn new(nice: i32, idle_blocking: bool, threads: usize) -> Background {
        Background {
            nice,
            idle_blocking,
            threads: threads.max(1),
            runtime: OnceLock::new(),
            calls: AtomicU64::new(0),
            parses: AtomicU64::new(0),
            in_flight: Arc::default(),
            yields: Arc::default(),
        }
    }

    /// The runtime, or `None` when off (`busy_nice = 0`) or it could not start
    /// (said once in the log; the work then runs where it was).
    fn runtime(&self) -> Option<&tokio::runtime::Runtime> {
        if self.nice == 0 {
            return None;
        }
        self.runtime
            .get_or_init(|| {
                let nice = self.nice;
                let built = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(self.threads)
                    .thread_name("wasmhub-busy")
                    .on_thread_start(move || {
                        LOW_PRIORITY.set(true);
                        lower_this_thread(nice)
                    })
                    .enable_all()
                    .build();
                built
                    .inspect_err(|e| {
                        crate::warn!("limits.busy_nice: cannot start the low-priority threads ({e}); busy work runs on the async workers")
                    })
                    .ok()
            })
            .as_ref()
    }

    /// Runs `call` on the low-priority workers (`None`: off, run it in place).
    /// Dropping the returned future drops `call` there too.
    pub(super) fn spawn<F>(&self, call: F) -> Result<Offloaded<F::Output>, F>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.runtime() {
            Some(runtime) => {
                self.calls.fetch_add(1, Ordering::Relaxed);
                let in_flight = InFlight::count(&self.in_flight);
                Ok(Offloaded(runtime.spawn(async move {
                    let _in_flight = in_flight;
                    call.await
                })))
            }
            None => Err(call),
        }
    }

    /// Runs `work` on the low-priority blocking pool, or on tokio's own when off.
    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, JoinError> {
        self.parses.fetch_add(1, Ordering::Relaxed);
        match self.runtime() {
            Some(runtime) if self.idle_blocking => {
                runtime
                    .spawn_blocking(move || {
                        idle_this_thread();
                        work()
                    })
                    .await
            }
            Some(runtime) => runtime.spawn_blocking(work).await,
            None => tokio::task::spawn_blocking(work).await,
        }
    }

    /// Calls run on the low-priority workers since start.
    pub(super) fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Large parses and validations run on the blocking pool since start.
    pub(super) fn parses(&self) -> u64 {
        self.parses.load(Ordering::Relaxed)
    }

    /// Whether calls run here now (spawned and not ended, wherever they wait).
    pub(super) fn in_use(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
    }

    /// How a call's epoch checks give way on these threads.
    pub(super) fn give_way(&self) -> GiveWay {
        GiveWay(self.yields.clone())
    }

    /// Cores offered at epoch checks since start.
    pub(super) fn yields(&self) -> u64 {
        self.yields.load(Ordering::Relaxed)
    }
}

/// Counts a call in [`Background::in_use`] until dropped (with the call, when it
/// ends or is aborted).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn count(n: &Arc<AtomicUsize>) -> InFlight {
        n.fetch_add(1, Ordering::Relaxed);
        InFlight(n.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A call's way of giving its core away at an epoch check (the module doc).
#[derive(Clone)]
pub(super) struct GiveWay(Arc<AtomicU64>);

impl GiveWay {
    /// On a low-priority thread: lets any other runnable thread of this core run
    /// first (`sched_yield`; it returns at once when there is none). Elsewhere:
    /// nothing, a normal-priority worker keeps its core.
    pub(super) fn now(&self) {
        if !on_low_priority_thread() {
            return;
        }
        // SAFETY: a plain syscall with no arguments.
        unsafe { libc::sched_yield() };
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // A hub may be dropped inside an async context, where blocking on the
        // runtime's threads would panic; anything still running there is dropped.
        if let Some(Some(runtime)) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Raises the calling thread's nice value by `nice`, to 19 at most (Linux: per
/// thread), so the threads stay below the hub's own whatever its nice value.
fn lower_this_thread(nice: i32) {
    // SAFETY: plain syscalls on the calling thread; no memory is passed.
    let rc = unsafe {
        let tid = libc::gettid() as libc::id_t;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (now + nice).min(19))
    };
    if rc != 0 {
        crate::debug!(
            "limits.busy_nice: setpriority failed: {}",
            std::io::Error::last_os_error()
        );
    }
}

thread_local! {
    static IDLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether this thread is one of the low-priority runtime's.
    static LOW_PRIORITY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is one of the low-priority threads (`running`: a
/// slot's holder there is slow to reach its next epoch check on a loaded machine).
pub(super) fn on_low_priority_thread() -> bool {
    LOW_PRIORITY.get()
}

/// Marks the calling thread as a low-priority one, as the runtime's threads are
/// (tests of `running` stand in for a busy call's holder this way).
#[cfg(test)]
pub(super) fn mark_low_priority() {
    LOW_PRIORITY.set(true);
}

/// Puts the calling thread (one of the low-priority blocking pool's, which never
/// run anything else) in `SCHED_IDLE`, once. No privilege is needed to switch to it.
fn idle_this_thread() {
    if IDLE.replace(true) {
        return;
    }
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` lives across the call; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        crate::debug!(
            "limits.validate_sched_idle: sched_setscheduler failed: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// A call running on the low-priority workers; aborted when dropped.
pub(crate) struct Offloaded<T>(JoinHandle<T>);

impl<T> Future for Offloaded<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for Offloaded<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_threads_nice() -> i32 {
        // SAFETY: a plain syscall about the calling thread.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    fn this_threads_policy() -> i32 {
        // SAFETY: a plain syscall about the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[tokio::test]
    async fn work_runs_on_threads_with_the_configured_nice_value_and_policy() {
        let base = this_threads_nice();
        assert_eq!(this_threads_policy(), libc::SCHED_OTHER);
        let background = Background::new(7, true, 2);
        let on_worker = async { (this_threads_nice(), this_threads_policy()) };
        let (nice, policy) = background.spawn(on_worker).ok().unwrap().await.unwrap();
        assert_eq!((nice, policy), ((base + 7).min(19), libc::SCHED_OTHER));
        let blocking = || (this_threads_nice(), this_threads_policy());
        assert_eq!(
            background.blocking(blocking).await.unwrap(),
            (nice, libc::SCHED_IDLE)
        );
        assert_eq!(background.calls(), 1);
        // Without SCHED_IDLE, blocking work keeps the nice value alone.
        let nice_only = Background::new(7, false, 2);
        assert_eq!(
            nice_only.blocking(blocking).await.unwrap(),
            (nice, libc::SCHED_OTHER)
        );
        // Off: the call comes back to run in place, blocking work uses tokio's pool.
        let off = Background::new(0, true, 2);
        assert!(off.spawn(async {}).is_err());
        assert_eq!(off.blocking(blocking).await.unwrap(), (base, libc::SCHED_OTHER));
        assert_eq!(off.calls(), 0);
    }

    #[tokio::test]
    async fn calls_count_as_in_use_until_they_end_and_only_their_threads_give_way() {
        let background = Background::new(5, false, 1);
        let give_way = background.give_way();
        // On a normal-priority thread, giving way does nothing.
        give_way.now();
        assert_eq!(background.yields(), 0);
        assert!(!background.in_use());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let on_worker = give_way.clone();
        let call = background
            .spawn(async move {
                on_worker.now();
                wait.await.unwrap();
            })
            .ok()
            .unwrap();
        assert!(background.in_use(), "a call runs there");
        go.send(()).unwrap();
        call.await.unwrap();
        assert!(!background.in_use(), "its call ended");
        assert_eq!(background.yields(), 1, "it gave way once, on its thread");
    }

    #[tokio::test]
    async fn dropping_an_offloaded_call_drops_it_on_the_low_priority_thread() {
        let background = Background::new(5, true, 1);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let call = background
            .spawn(async move {
                let _tx = tx; // dropped with the call
                std::future::pending::<()>().await
            })
            .ok()
            .unwrap();
        drop(call);
        assert!(rx.await.is_err(), "the call was dropped, not left running");
    }
}
