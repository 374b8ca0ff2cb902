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
//!
//! Within a tenant, each plugin's calls wait in a [`Line`] of their own once
//! starving, and a slot given back while some wait goes to the lines in turn
//! (round-robin; until a waiter of the line whose turn it is takes it, no other
//! starving waiter may), so one plugin's hundred spinning calls take every other
//! slot at most, not all of them. A call of a plugin that runs nothing at the moment and
//! finds no slot starves at once rather than after a tick: a benign call beside a
//! spinning plugin waits for the next slot given back, not for a tick and then for
//! every spinner queued before it. A plugin alone still has all the tenant's slots
//! (work-conserving), and with one plugin nothing changes: its line is the only one.
//!
//! A tenant's limit is set every tick ([`RunSlots::set_limit`]): its share, plus
//! the slots idle tenants leave over while it wants more than its share
//! ([`RunSlots::tick`] says whether it did).

use super::spent::CallCpu;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

/// One tenant's running slots.
pub(crate) struct RunSlots {
    limit: AtomicUsize,
    taken: AtomicUsize,
    /// The most slots held at once this tick.
    peak: AtomicUsize,
    /// Whether a poll found every slot taken this tick.
    turned_away: AtomicBool,
    /// Waiters that have waited past a whole tick: newcomers leave slots to them.
    starving: AtomicUsize,
    /// Wakes one waiter whenever a slot is given back.
    freed: Arc<Notify>,
    /// Each plugin's line, and the next to be woken when starving waiters wait.
    lines: Mutex<(Vec<Arc<Line>>, usize)>,
    /// The line whose turn it is (its id + 1; 0: none): until one of its starving
    /// waiters takes the slot given back for it, no other starving waiter may.
    owed: AtomicUsize,
}

/// One plugin's calls within a tenant: the slots they hold and their starving
/// waiters, woken when the tenant's turn comes to this line.
pub(crate) struct Line {
    /// 1 + its index in the tenant's lines.
    id: usize,
    taken: AtomicUsize,
    starving: AtomicUsize,
    freed_starving: Arc<Notify>,
}

impl RunSlots {
    pub(crate) fn new(limit: usize) -> RunSlots {
        RunSlots {
            limit: AtomicUsize::new(limit),
            taken: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            turned_away: AtomicBool::new(false),
            starving: AtomicUsize::new(0),
            freed: Arc::new(Notify::new()),
            lines: Mutex::new((Vec::new(), 0)),
            owed: AtomicUsize::new(0),
        }
    }

    /// A new plugin's line (one per plugin the tenant calls).
    pub(crate) fn line(&self) -> Arc<Line> {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let line = Arc::new(Line {
            id: lines.0.len() + 1,
            taken: AtomicUsize::new(0),
            starving: AtomicUsize::new(0),
            freed_starving: Arc::new(Notify::new()),
        });
        lines.0.push(line.clone());
        line
    }

    /// Takes a slot for `line` if one is free and, unless `starving` itself, no
    /// starving waiter is owed one.
    fn try_take(&self, line: &Line, starving: bool) -> bool {
        if !starving && self.starving.load(Ordering::SeqCst) > 0 {
            return false;
        }
        let owed = self.owed.load(Ordering::SeqCst);
        if starving && owed != 0 && owed != line.id {
            return false;
        }
        // SeqCst here and in `give_back`: each writes one counter and then reads the
        // other, which weaker orderings let both read stale.
        let limit = self.limit.load(Ordering::Relaxed);
        let taken = self.taken.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < limit).then_some(n + 1)
        });
        let Ok(before) = taken else {
            self.turned_away.store(true, Ordering::Relaxed);
            return false;
        };
        if before >= self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(before + 1, Ordering::Relaxed);
        }
        line.taken.fetch_add(1, Ordering::SeqCst);
        if starving {
            // Its line's turn is used.
            let _ = self
                .owed
                .compare_exchange(line.id, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
        true
    }

    /// At a tick: whether the tenant ran anything in the tick that ends and
    /// whether it wanted more than `share` slots (held more, or found none free).
    pub(crate) fn tick(&self, share: usize) -> (bool, bool) {
        let peak = self
            .peak
            .swap(self.taken.load(Ordering::Relaxed), Ordering::Relaxed);
        let turned_away = self.turned_away.swap(false, Ordering::Relaxed);
        (peak > 0 || turned_away, turned_away || peak > share)
    }

    /// How many slots the tenant has this tick.
    #[cfg(test)]
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::SeqCst)
    }

    /// Sets how many slots the tenant has; waiters are woken for each one added.
    pub(crate) fn set_limit(&self, limit: usize) {
        let before = self.limit.swap(limit, Ordering::SeqCst);
        for _ in before..limit {
            if self.starving.load(Ordering::SeqCst) == 0 || !self.wake_next_line() {
                self.freed.notify_one();
            }
        }
    }

    fn give_back(&self, line: &Line) {
        line.taken.fetch_sub(1, Ordering::SeqCst);
        self.taken.fetch_sub(1, Ordering::SeqCst);
        if self.starving.load(Ordering::SeqCst) == 0 || !self.wake_next_line() {
            self.freed.notify_one();
        }
    }

    /// After a starving waiter left its line: newcomers held back for it may go,
    /// and a slot given back while it was on its way (its line was woken for
    /// it) goes to the next line.
    fn left_the_line(&self) {
        if self.starving.load(Ordering::SeqCst) > 0
            && self.taken.load(Ordering::SeqCst) < self.limit.load(Ordering::SeqCst)
        {
            self.wake_next_line();
        }
        self.freed.notify_one();
    }

    /// Wakes a starving waiter of the next line (round-robin) that has one;
    /// `false`: none has (they took slots meanwhile).
    fn wake_next_line(&self) -> bool {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let (all, next) = &mut *lines;
        let count = all.len();
        for i in 0..count {
            let at = (*next + i) % count;
            if all[at].starving.load(Ordering::SeqCst) > 0 {
                self.owed.store(all[at].id, Ordering::SeqCst);
                all[at].freed_starving.notify_one();
                *next = at + 1;
                return true;
            }
        }
        self.owed.store(0, Ordering::SeqCst);
        false
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
    /// Its plugin's line within the tenant.
    line: Arc<Line>,
    /// Registered for the next slot given back, while none was free.
    waiting: Option<Pin<Box<OwnedNotified>>>,
    /// The gate's start tick, until the first slot restarts it.
    started: Option<Arc<AtomicU64>>,
    /// The CPU its polls use.
    cpu: Arc<CallCpu>,
    /// Ticks since start (the gate's clock).
    clock: Arc<AtomicU64>,
    /// The tick this call began waiting for a slot, while it waits.
    wait_began: Option<u64>,
    /// Whether it counts in `RunSlots::starving`.
    starving: bool,
}

impl<F: Future> Running<F> {
    pub(super) fn new(
        call: F,
        (slots, line): (Arc<RunSlots>, Arc<Line>),
        (started, cpu): (Arc<AtomicU64>, Arc<CallCpu>),
        clock: Arc<AtomicU64>,
    ) -> Self {
        Running {
            call: Box::pin(call),
            slots,
            line,
            waiting: None,
            started: Some(started),
            cpu,
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
                self.start_starving();
            }
            if self.slots.try_take(&self.line, self.starving) {
                self.stop_waiting();
                return Poll::Ready(());
            }
            if !self.starving && self.line.taken.load(Ordering::SeqCst) == 0 {
                // Its plugin runs nothing: it waits for its plugin's turn now.
                self.start_starving();
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
        self.line.starving.fetch_add(1, Ordering::SeqCst);
        self.slots.starving.fetch_add(1, Ordering::SeqCst);
        self.unregister();
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
        self.wait_began = None;
        if std::mem::take(&mut self.starving) {
            self.line.starving.fetch_sub(1, Ordering::SeqCst);
            self.slots.starving.fetch_sub(1, Ordering::SeqCst);
            self.slots.left_the_line();
        }
    }
}

impl<F> Drop for Running<F> {
    fn drop(&mut self) {
        if self.starving {
            self.line.starving.fetch_sub(1, Ordering::SeqCst);
            self.slots.starving.fetch_sub(1, Ordering::SeqCst);
            self.slots.left_the_line();
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
        let held = Held::start(&this.slots, &this.line);
        let result = measured(&mut this.call, &this.cpu, cx);
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
struct Held<'a>(&'a RunSlots, &'a Line);

impl<'a> Held<'a> {
    fn start(slots: &'a RunSlots, line: &'a Line) -> Held<'a> {
        HOLDING.set(true);
        Held(slots, line)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        HOLDING.set(false);
        self.0.give_back(self.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Wake, Waker};

    /// A waker that records being woken.
    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A guest that never ends, counting its polls.
    struct Spin(Arc<AtomicUsize>);

    impl Future for Spin {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Poll::Pending
        }
    }

    /// One call of a plugin: counts its polls (each on a running slot), never ends.
    struct Call {
        run: Pin<Box<Running<Spin>>>,
        ran: Arc<AtomicUsize>,
        woken: Arc<Flag>,
    }

    impl Call {
        fn new(slots: &Arc<RunSlots>, line: &Arc<Line>, clock: &Arc<AtomicU64>) -> Call {
            let ran = Arc::new(AtomicUsize::new(0));
            let started = Arc::new(AtomicU64::new(0));
            let line = (slots.clone(), line.clone());
            let run = Running::new(Spin(ran.clone()), line, (started, Arc::default()), clock.clone());
            Call {
                run: Box::pin(run),
                ran,
                woken: Arc::new(Flag(AtomicBool::new(false))),
            }
        }

        /// Polls it once; whether it ran (held a slot for that poll).
        fn poll(&mut self) -> bool {
            self.woken.0.store(false, Ordering::SeqCst);
            let before = self.ran.load(Ordering::SeqCst);
            let waker = Waker::from(self.woken.clone());
            assert!(
                self.run
                    .as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending()
            );
            self.ran.load(Ordering::SeqCst) > before
        }

        fn woken(&self) -> bool {
            self.woken.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn slots_given_back_go_to_each_plugins_line_in_turn() {
        // One running slot; plugin a's poll holds it.
        let (slots, clock) = (Arc::new(RunSlots::new(1)), Arc::new(AtomicU64::new(0)));
        let (a, b) = (slots.line(), slots.line());
        assert!(slots.try_take(&a, false));
        // Three more calls of a wait, and after a whole tick they are starving.
        let mut waiting_a: Vec<Call> = (0..3).map(|_| Call::new(&slots, &a, &clock)).collect();
        assert!(waiting_a.iter_mut().all(|c| !c.poll()));
        clock.store(2, Ordering::SeqCst);
        assert!(waiting_a.iter_mut().all(|c| !c.poll()));
        assert_eq!(a.starving.load(Ordering::SeqCst), 3);
        // A call of b, which runs nothing, waits in b's line at once.
        let mut benign = Call::new(&slots, &b, &clock);
        assert!(!benign.poll());
        assert_eq!(b.starving.load(Ordering::SeqCst), 1);
        // a's poll ends: the slot goes to a's line (its turn), to its oldest waiter.
        slots.give_back(&a);
        assert!(waiting_a[0].woken() && !benign.woken());
        assert!(waiting_a[0].poll(), "a's first waiter ran");
        // That poll's end hands the slot to b's line, ahead of a's other waiters.
        let woken = [benign.woken(), waiting_a[1].woken(), waiting_a[2].woken()];
        assert_eq!(woken, [true, false, false]);
        // It is b's turn: a call of a that starves at once (a runs nothing now)
        // does not take the slot first.
        let mut late = Call::new(&slots, &a, &clock);
        assert!(!late.poll());
        assert!(benign.poll(), "b's call ran second, not fourth");
        // And back to a's line.
        assert!(waiting_a[1].woken() && !waiting_a[2].woken());
        assert!(waiting_a[1].poll());
    }

    #[test]
    fn a_slot_lent_at_a_tick_wakes_a_waiter_and_the_tick_says_who_wanted_more() {
        let (slots, clock) = (Arc::new(RunSlots::new(1)), Arc::new(AtomicU64::new(0)));
        let a = slots.line();
        assert!(slots.try_take(&a, false));
        let mut second = Call::new(&slots, &a, &clock);
        assert!(!second.poll());
        // It held its one slot and found none for a second call: it wanted more.
        assert_eq!(slots.tick(1), (true, true));
        slots.set_limit(2);
        assert!(
            second.woken() && second.poll(),
            "the lent slot ran the waiting call"
        );
        // Two held at once is more than its share of one.
        assert_eq!(slots.tick(1), (true, true));
        assert_eq!(slots.tick(1), (true, false), "one still held, no one turned away");
        slots.give_back(&a);
        assert_eq!(slots.tick(1), (true, false), "held during the tick");
        assert_eq!(slots.tick(1), (false, false), "idle");
    }

    #[test]
    fn a_plugin_alone_has_all_its_tenants_slots() {
        let (slots, clock) = (Arc::new(RunSlots::new(2)), Arc::new(AtomicU64::new(0)));
        let (a, _idle) = (slots.line(), slots.line());
        assert!(slots.try_take(&a, false) && slots.try_take(&a, false));
        assert!(!slots.try_take(&a, false), "the tenant's two slots are taken");
        let mut third = Call::new(&slots, &a, &clock);
        assert!(!third.poll());
        slots.give_back(&a);
        assert!(third.woken() && third.poll());
    }
}
