//! Running permits: how many polls of one tenant's calls run at once.
//!
//! A slot is taken for one poll and given back when the poll returns. Unlike a
//! semaphore, a slot given back is not handed to the oldest waiter: whoever polls
//! next takes it (the waiters are woken one at a time to try). Handing it over
//! meant every call of a busy tenant waited for the woken task to reach the front
//! of its worker's run queue, with the slot idle meanwhile: 64 connections of one
//! token made 1.3k calls/s instead of 18k. A waiter that has waited past a whole
//! tick is *starving*: then no newcomer takes a slot before it (else a busy
//! tenant's unlucky calls waited 100 ms and more behind its newer ones). Waiting
//! is only ever within one tenant, so the tenants' shares stay as they were.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

/// One tenant's running slots.
pub(crate) struct RunSlots {
    limit: usize,
    taken: AtomicUsize,
    /// Waiters that have waited past a whole tick: newcomers leave slots to them.
    starving: AtomicUsize,
    /// Wakes one waiter whenever a slot is given back.
    freed: Arc<Notify>,
    /// The same for starving waiters, who are woken first.
    freed_starving: Arc<Notify>,
}

impl RunSlots {
    pub(crate) fn new(limit: usize) -> RunSlots {
        RunSlots {
            limit,
            taken: AtomicUsize::new(0),
            starving: AtomicUsize::new(0),
            freed: Arc::new(Notify::new()),
            freed_starving: Arc::new(Notify::new()),
        }
    }

    /// Takes a slot if one is free and, unless `starving` itself, no starving
    /// waiter is owed one.
    fn try_take(&self, starving: bool) -> bool {
        if !starving && self.starving.load(Ordering::SeqCst) > 0 {
            return false;
        }
        // SeqCst here and in `give_back`: each writes one counter and then reads the
        // other, which weaker orderings let both read stale.
        self.taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::SeqCst);
        if self.starving.load(Ordering::SeqCst) > 0 {
            self.freed_starving.notify_one();
        } else {
            self.freed.notify_one();
        }
    }
}

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
    /// Registered for the next slot given back, while none was free.
    waiting: Option<Pin<Box<OwnedNotified>>>,
    /// The gate's start tick, until the first slot restarts it.
    started: Option<Arc<AtomicU64>>,
    /// Ticks since start (the gate's clock).
    clock: Arc<AtomicU64>,
    /// The tick this call began waiting for a slot, while it waits.
    wait_began: Option<u64>,
    /// Whether it counts in `RunSlots::starving`.
    starving: bool,
}

impl<F: Future> Running<F> {
    pub(super) fn new(call: F, slots: Arc<RunSlots>, started: Arc<AtomicU64>, clock: Arc<AtomicU64>) -> Self {
        Running {
            call: Box::pin(call),
            slots,
            waiting: None,
            started: Some(started),
            clock,
            wait_began: None,
            starving: false,
        }
    }

    /// Takes a slot, or registers for the next one given back (`Pending`).
    fn take_slot(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let now = self.clock.load(Ordering::Relaxed);
            let began = *self.wait_began.get_or_insert(now);
            if !self.starving && now > began + 1 {
                self.starving = true;
                self.slots.starving.fetch_add(1, Ordering::SeqCst);
                // From now on it waits in the starving line.
                self.waiting = None;
            }
            if self.slots.try_take(self.starving) {
                self.stop_waiting();
                return Poll::Ready(());
            }
            match &mut self.waiting {
                None => {
                    // Registered before the second try, so a slot given back in
                    // between wakes us.
                    let line = match self.starving {
                        true => &self.slots.freed_starving,
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

    /// Leaves the line (a slot was taken, or the call was dropped).
    fn stop_waiting(&mut self) {
        self.waiting = None;
        self.wait_began = None;
        if std::mem::take(&mut self.starving) {
            self.slots.starving.fetch_sub(1, Ordering::SeqCst);
            // Newcomers held back for this waiter may go now.
            self.slots.freed.notify_one();
        }
    }
}

impl<F> Drop for Running<F> {
    fn drop(&mut self) {
        if self.starving {
            self.slots.starving.fetch_sub(1, Ordering::SeqCst);
            self.slots.freed.notify_one();
        }
    }
}

impl<F: Future> Future for Running<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if HOLDING.get() {
            return self.call.as_mut().poll(cx);
        }
        let this = &mut *self;
        if this.take_slot(cx).is_pending() {
            return Poll::Pending;
        }
        if let Some(started) = this.started.take() {
            started.store(this.clock.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        let held = Held::start(&this.slots);
        let result = this.call.as_mut().poll(cx);
        drop(held);
        result
    }
}

/// Marks this thread's poll as holding a slot until dropped (also on a panic),
/// then gives the slot back.
struct Held<'a>(&'a RunSlots);

impl<'a> Held<'a> {
    fn start(slots: &'a RunSlots) -> Held<'a> {
        HOLDING.set(true);
        Held(slots)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        HOLDING.set(false);
        self.0.give_back();
    }
}
