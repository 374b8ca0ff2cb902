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
//! starving (a call that yields its slot at a tick starves at once: it waits its
//! line's turn for the next), and a slot given back while some wait goes to the lines in turn,
//! in proportion to their plugins' weights (`limits.plugin_cpu_weights`; stride
//! scheduling, as for tickets; until a waiter of the line whose turn it is takes
//! it, no other starving waiter may), so one plugin's hundred spinning calls take
//! every other slot at most, not all of them. (The slots, not the tickets, are
//! what a tenant's spinning plugins wait for: while the lines took plain turns, a
//! plugin of weight 3 beside one of weight 1 ran as many ticks, 206 to 197, in
//! e2e `runtime_fair`.) A call of a plugin that runs nothing at the moment and
//! finds no slot starves at once rather than after a tick: a benign call beside a
//! spinning plugin waits for the next slot given back, not for a tick and then for
//! every spinner queued before it. A plugin alone still has all the tenant's slots
//! (work-conserving), and with one plugin nothing changes: its line is the only one.
//!
//! A *new* call of a plugin that runs nothing at the moment (no slot held, none
//! starving) is *hungry*: its line goes before the others when a slot is given
//! back, and, when the tenant's slots are all taken, it preempts their holders
//! (`RunSlots::preempt`: it bumps the engine's epoch, and every holder of the
//! tenant yields at that deadline without spending a ticket, `TickGate::preempted`),
//! so it waits for the next epoch check of a running guest, not for the rest of
//! a spinner's tick. (Without it, a benign `calc.eval` beside 128 spinning calls of
//! its own token waited a tick or two, p50 3.3 ms against 0.05 ms idle: the
//! tenant's one slot was held by a spinner until its tick ended, then often by the
//! next.) Only a call's first wait is hungry: a long call of that plugin waits its
//! turn after its first poll like any other, so it cannot take the tenant's slots
//! by preempting them at every tick.
//!
//! When the holders run on the low-priority threads (a busy plugin's calls,
//! [`super::background`]), a hungry call on a normal-priority thread does not wait
//! for them at all: it takes one slot over the tenant's limit for its poll
//! ([`RunSlots::try_take_over`], one per tenant at a time). Waiting, it depended on
//! the kernel running a nice-10 thread to its next epoch check, which on a loaded
//! machine took milliseconds (benign `calc.eval` p99 5-20× idle beside 128 spinning
//! calls of its own token, docs/performance/fairness.md). The holders are not
//! preempted then: they run on, below every normal-priority thread anyway, and the
//! tenant runs at most one poll more than its share, for as long as a short call's
//! poll takes.
//!
//! A tenant's limit is set every tick ([`RunSlots::set_limit`]): its share, plus
//! the slots idle tenants leave over while it wants more than its share
//! ([`RunSlots::tick`] says whether it did).

use super::background::on_low_priority_thread;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// A slot's pass for a plugin of weight 1.
const STRIDE: u64 = 1 << 20;

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
    /// Each plugin's line, and the pass the last slot was given at (stride
    /// scheduling, as for tickets: a line's pass grows by its stride with each
    /// slot it is given, and the starving line with the lowest goes next).
    lines: Mutex<(Vec<Arc<Line>>, u64)>,
    /// Slots given back and owed to a line whose turn it was (the sum of the
    /// lines' `owed`): while any is, only a starving waiter of a line owed one
    /// may take a slot. A count per line, not one line's turn: with two slots
    /// given back before either's line took one, the second turn overwrote the
    /// first, and weights 3:1 ran 1.8:1 (e2e `runtime_fair`).
    owed: AtomicUsize,
    /// Hungry waiters (new calls of plugins that ran nothing): while there are
    /// any, the slots' holders yield at their next epoch check.
    hungry: AtomicUsize,
    /// Slots held by polls on the low-priority threads.
    low: AtomicUsize,
    /// Whether a hungry call holds the slot over the limit
    /// ([`RunSlots::try_take_over`]; not counted in `taken`).
    over: AtomicBool,
    /// The engine whose epoch a hungry waiter bumps to preempt the holders
    /// (`None` in unit tests: no guest runs).
    engine: Option<wasmtime::Engine>,
    /// Preemptions asked for (the tests' view of the epoch bumps).
    #[cfg(test)]
    preempts: AtomicUsize,
}

/// One plugin's calls within a tenant: the slots they hold and their starving
/// waiters, woken when the tenant's turn comes to this line.
pub(crate) struct Line {
    taken: AtomicUsize,
    starving: AtomicUsize,
    /// Its hungry waiters: its line goes first when a slot is given back.
    hungry: AtomicUsize,
    /// Slots given back for its turns that none of its waiters took yet.
    owed: AtomicUsize,
    /// `STRIDE / weight` (`limits.plugin_cpu_weights`), and its pass (both
    /// read and written under `RunSlots::lines`).
    stride: u64,
    pass: AtomicU64,
    freed_starving: Arc<Notify>,
}

impl RunSlots {
    pub(crate) fn new(limit: usize, engine: Option<wasmtime::Engine>) -> RunSlots {
        RunSlots {
            limit: AtomicUsize::new(limit),
            taken: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            turned_away: AtomicBool::new(false),
            starving: AtomicUsize::new(0),
            freed: Arc::new(Notify::new()),
            lines: Mutex::new((Vec::new(), 0)),
            owed: AtomicUsize::new(0),
            hungry: AtomicUsize::new(0),
            low: AtomicUsize::new(0),
            over: AtomicBool::new(false),
            engine,
            #[cfg(test)]
            preempts: AtomicUsize::new(0),
        }
    }

    /// A new plugin's line (one per plugin the tenant calls), of `weight`.
    pub(crate) fn line(&self, weight: u32) -> Arc<Line> {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let line = Arc::new(Line {
            taken: AtomicUsize::new(0),
            starving: AtomicUsize::new(0),
            hungry: AtomicUsize::new(0),
            owed: AtomicUsize::new(0),
            stride: STRIDE / u64::from(weight.max(1)),
            pass: AtomicU64::new(lines.1),
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
        // A hungry line may take a slot owed to another: the owed waiter may be
        // on its way on a low-priority thread, and once it had the slot the
        // hungry call waited for its next epoch check, a whole tick.
        if starving
            && self.owed.load(Ordering::SeqCst) > 0
            && line.owed.load(Ordering::SeqCst) == 0
            && line.hungry.load(Ordering::SeqCst) == 0
        {
            return false;
        }
        // A holder on a low-priority thread counts in `low` before its slot
        // counts as taken: a hungry call that finds every slot taken must also
        // see why (`try_take_over`), or it waits for the holder's next epoch
        // check, which the kernel may delay by preempting the holder right here.
        let low = on_low_priority_thread();
        if low {
            self.low.fetch_add(1, Ordering::SeqCst);
        }
        // SeqCst here and in `give_back`: each writes one counter and then reads the
        // other, which weaker orderings let both read stale.
        let limit = self.limit.load(Ordering::Relaxed);
        let taken = self.taken.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < limit).then_some(n + 1)
        });
        let Ok(before) = taken else {
            if low {
                self.low.fetch_sub(1, Ordering::SeqCst);
            }
            self.turned_away.store(true, Ordering::Relaxed);
            return false;
        };
        if before >= self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(before + 1, Ordering::Relaxed);
        }
        line.taken.fetch_add(1, Ordering::SeqCst);
        if starving {
            // One of its line's turns is used.
            self.settle_turn(line);
        }
        true
    }

    /// A hungry call's slot over the limit (the module doc): only while every
    /// slot is taken, one of them by a poll on a low-priority thread, and no other
    /// call holds it; never for a call on a low-priority thread itself.
    fn try_take_over(&self, line: &Line) -> bool {
        if on_low_priority_thread()
            || self.low.load(Ordering::SeqCst) == 0
            || self.taken.load(Ordering::SeqCst) < self.limit.load(Ordering::SeqCst)
        {
            return false;
        }
        if (self.over)
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        line.taken.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Gives back the slot over the limit: no waiter is woken (it was never one of
    /// the tenant's slots).
    fn give_back_over(&self, line: &Line) {
        line.taken.fetch_sub(1, Ordering::SeqCst);
        self.over.store(false, Ordering::SeqCst);
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

    /// A waiter of `line` starts starving (its twin is [`RunSlots::leave`]).
    fn starve(&self, line: &Line) {
        line.starving.fetch_add(1, Ordering::SeqCst);
        self.starving.fetch_add(1, Ordering::SeqCst);
    }

    /// A starving waiter leaves `line`: its line's turns lapse with its last one.
    fn leave(&self, line: &Line) {
        if line.starving.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.forfeit_turns(line);
        }
        self.starving.fetch_sub(1, Ordering::SeqCst);
        self.left_the_line();
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

    /// Whether a hungry waiter wants the holders to yield ([`RunSlots`]).
    pub(crate) fn preempted(&self) -> bool {
        self.hungry.load(Ordering::Relaxed) > 0
    }

    /// A hungry waiter found every slot taken: the holders yield at their next
    /// epoch check (the epoch is bumped for it; calls of other tenants see a
    /// deadline that is not a tick, and go on without spending a ticket).
    fn preempt(&self) {
        #[cfg(test)]
        self.preempts.fetch_add(1, Ordering::SeqCst);
        if let Some(engine) = &self.engine {
            engine.increment_epoch();
        }
    }

    /// One slot owed to `line` is taken (or no longer wanted).
    fn settle_turn(&self, line: &Line) {
        let took = (line.owed).fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if took.is_ok() {
            self.owed.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Every slot owed to `line` is dropped: it has no starving waiter left.
    fn forfeit_turns(&self, line: &Line) {
        let n = line.owed.swap(0, Ordering::SeqCst);
        if n > 0 {
            self.owed.fetch_sub(n, Ordering::SeqCst);
        }
    }

    /// Wakes a starving waiter of the next line that has one: a hungry line's
    /// first, else the one with the lowest pass (a line idle meanwhile counts from
    /// the current pass: it saves up no turns); `false`: none has (they took
    /// slots meanwhile).
    fn wake_next_line(&self) -> bool {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let (all, now) = &mut *lines;
        let pass = |l: &Line| l.pass.load(Ordering::Relaxed).max(*now);
        let starving = all.iter().filter(|l| l.starving.load(Ordering::SeqCst) > 0);
        let next = (starving.clone())
            .find(|l| l.hungry.load(Ordering::SeqCst) > 0)
            .or_else(|| starving.min_by_key(|l| pass(l)));
        if let Some(line) = next {
            *now = pass(line);
            line.pass.store(*now + line.stride, Ordering::Relaxed);
            line.owed.fetch_add(1, Ordering::SeqCst);
            self.owed.fetch_add(1, Ordering::SeqCst);
            line.freed_starving.notify_one();
            return true;
        }
        for line in all.iter() {
            self.forfeit_turns(line);
        }
        false
    }
}

mod call;

pub(in crate::runtime) use call::Running;
pub(crate) use call::inside_a_call;

#[cfg(test)]
#[path = "running_tests.rs"]
mod tests;
