//! One call's way to its tenant's running slots: it waits in its plugin's line
//! (starving, hungry, or taking the slot over the limit, as the parent module
//! says), and each of its polls holds a slot, given back when the poll returns.

use super::super::background::on_low_priority_thread;
use super::super::spent::CallCpu;
use super::{Line, RunSlots};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::sync::futures::OwnedNotified;

thread_local! {
    /// Whether the poll on this thread holds a slot: a nested call, polled inside
    /// its parent's poll, must not wait for one (its parent would never be polled
    /// again to give it back).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is polling a call now: a call started here is a nested call.
pub(crate) fn inside_a_call() -> bool {
    HOLDING.get()
}

/// A call polled only while it holds one of its tenant's running slots.
pub(in crate::runtime) struct Running<F> {
    call: Pin<Box<F>>,
    slots: Arc<RunSlots>,
    /// Its plugin's line within the tenant.
    line: Arc<Line>,
    /// Registered for the next slot given back, while none was free.
    waiting: Option<Pin<Box<OwnedNotified>>>,
    /// The gate's start tick, until the first slot restarts it.
    pub(super) started: Option<Arc<AtomicU64>>,
    /// The CPU its polls use.
    cpu: Arc<CallCpu>,
    /// Set by its epoch callback when the poll under way ends in a yield.
    yielded: Arc<AtomicBool>,
    /// Ticks since start (the gate's clock).
    clock: Arc<AtomicU64>,
    /// The tick this call began waiting for a slot, while it waits.
    wait_began: Option<u64>,
    /// Whether it counts in `RunSlots::starving`.
    starving: bool,
    /// Whether it counts in `RunSlots::hungry` (and its line's).
    hungry: bool,
    /// Whether the slot it took is the one over the limit (for its next poll).
    over: bool,
}

impl<F: Future> Running<F> {
    pub(in crate::runtime::cpu) fn new(
        call: F,
        (slots, line): (Arc<RunSlots>, Arc<Line>),
        (started, cpu, yielded): (Arc<AtomicU64>, Arc<CallCpu>, Arc<AtomicBool>),
        clock: Arc<AtomicU64>,
    ) -> Self {
        Running {
            call: Box::pin(call),
            slots,
            line,
            waiting: None,
            started: Some(started),
            cpu,
            yielded,
            clock,
            wait_began: None,
            starving: false,
            hungry: false,
            over: false,
        }
    }

    /// Takes a slot, or registers for the next one given back (`Pending`).
    fn take_slot(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let now = self.clock.load(Ordering::Relaxed);
            let began = *self.wait_began.get_or_insert(now);
            if !self.starving && now > began + 1 {
                self.start_starving();
            }
            if self.slots.try_take(&self.line, self.starving) {
                self.stop_waiting();
                return Poll::Ready(());
            }
            if self.hungry {
                // Every slot is taken (a hungry call may take one owed to
                // another line): it runs beside a holder on a low-priority
                // thread, else the holders yield at their next epoch check.
                if self.slots.try_take_over(&self.line) {
                    self.over = true;
                    self.stop_waiting();
                    return Poll::Ready(());
                }
                self.slots.preempt();
            }
            if !self.starving && self.line.taken.load(Ordering::SeqCst) == 0 {
                // Its plugin runs nothing: it waits for its plugin's turn now, and
                // a new call goes first, preempting the holders.
                let new_and_alone = self.started.is_some() && self.line.starving.load(Ordering::SeqCst) == 0;
                if new_and_alone && self.slots.try_take_over(&self.line) {
                    self.over = true;
                    self.stop_waiting();
                    return Poll::Ready(());
                }
                self.start_starving();
                if new_and_alone {
                    self.start_hungry();
                }
                continue;
            }
            match &mut self.waiting {
                None => {
                    // Registered before the second try, so a slot given back in
                    // between wakes us.
                    let line = match self.starving {
                        true => &self.line.freed_starving,
                        false => &self.slots.freed,
                    };
                    let mut notified = Box::pin(line.clone().notified_owned());
                    notified.as_mut().enable();
                    self.waiting = Some(notified);
                }
                Some(notified) => match notified.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => self.waiting = None,
                },
            }
        }
    }

    /// From now on it waits in its plugin's starving line.
    fn start_starving(&mut self) {
        self.starving = true;
        self.slots.starve(&self.line);
        self.unregister();
    }

    /// From now on its line goes first and the tenant's holders yield for it.
    fn start_hungry(&mut self) {
        self.hungry = true;
        self.line.hungry.fetch_add(1, Ordering::SeqCst);
        self.slots.hungry.fetch_add(1, Ordering::SeqCst);
    }

    /// No longer hungry (it took a slot, or was dropped).
    fn stop_hungry(&mut self) {
        if std::mem::take(&mut self.hungry) {
            self.line.hungry.fetch_sub(1, Ordering::SeqCst);
            self.slots.hungry.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Drops its registration, consuming a wake-up it may have had: dropped
    /// unconsumed, tokio passes it on to the line's next waiter, out of turn. (A
    /// call dropped while waiting does pass it on, so the slot is not lost.)
    fn unregister(&mut self) {
        if let Some(mut notified) = self.waiting.take() {
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let _ = notified.as_mut().poll(&mut cx);
        }
    }

    /// Leaves the line (a slot was taken, or the call was dropped).
    fn stop_waiting(&mut self) {
        self.unregister();
        self.stop_hungry();
        self.wait_began = None;
        if std::mem::take(&mut self.starving) {
            self.slots.leave(&self.line);
        }
    }
}

impl<F> Drop for Running<F> {
    fn drop(&mut self) {
        if self.hungry {
            self.line.hungry.fetch_sub(1, Ordering::SeqCst);
            self.slots.hungry.fetch_sub(1, Ordering::SeqCst);
        }
        if self.starving {
            self.slots.leave(&self.line);
        }
    }
}

impl<F: Future> Future for Running<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        if HOLDING.get() {
            return measured(&mut this.call, &this.cpu, cx);
        }
        if this.take_slot(cx).is_pending() {
            return Poll::Pending;
        }
        if let Some(started) = this.started.take() {
            started.store(this.clock.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        let held = Held::start(&this.slots, &this.line, std::mem::take(&mut this.over));
        let result = measured(&mut this.call, &this.cpu, cx);
        if this.yielded.swap(false, Ordering::Relaxed) && result.is_pending() {
            // It yields its slot at a tick: it waits its plugin's turn for the
            // next one, counted as starving before the slot is given back, so
            // the slot goes to the lines in turn. Left to tokio's run queue, the
            // calls took turns one by one: with fewer threads than slots (the
            // low-priority runtime) no call ever found the slot taken, and one
            // long call beside 32 spinners of another plugin ran 1 tick in 33.
            // (Not registered for a wake-up: a yield is woken at once.)
            this.starving = true;
            this.slots.starve(&this.line);
        }
        drop(held);
        result
    }
}

/// Polls `call`, adding the CPU the poll used to `cpu` (a finished call's last
/// poll is not read: nothing asks any more).
fn measured<F: Future>(call: &mut Pin<Box<F>>, cpu: &CallCpu, cx: &mut Context<'_>) -> Poll<F::Output> {
    cpu.poll_begins();
    let result = call.as_mut().poll(cx);
    if result.is_pending() {
        cpu.poll_ends();
    }
    result
}

/// Marks this thread's poll as holding a slot until dropped (also on a panic),
/// then gives the slot back.
struct Held<'a> {
    slots: &'a RunSlots,
    line: &'a Line,
    /// The slot over the limit ([`RunSlots::try_take_over`]).
    over: bool,
    /// Counted in `RunSlots::low`: the poll runs on a low-priority thread.
    low: bool,
}

impl<'a> Held<'a> {
    /// `slots.low` already counts a slot taken on a low-priority thread
    /// (`RunSlots::try_take`).
    fn start(slots: &'a RunSlots, line: &'a Line, over: bool) -> Held<'a> {
        HOLDING.set(true);
        let low = !over && on_low_priority_thread();
        Held {
            slots,
            line,
            over,
            low,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        HOLDING.set(false);
        if self.over {
            return self.slots.give_back_over(self.line);
        }
        if self.low {
            self.slots.low.fetch_sub(1, Ordering::SeqCst);
        }
        self.slots.give_back(self.line);
    }
}
