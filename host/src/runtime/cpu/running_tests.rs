//! The running slots' tests: lines per plugin, hungry calls, the slot over the limit.

use super::*;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
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
        let run = Running::new(
            Spin(ran.clone()),
            line,
            (started, Arc::default(), Arc::default()),
            clock.clone(),
        );
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

/// A tenant's slots, the clock, plugins a's and b's lines, and a's waiting calls.
type Scene = (Arc<RunSlots>, Arc<AtomicU64>, Arc<Line>, Arc<Line>, Vec<Call>);

/// One running slot, held by a poll of plugin a; three more calls of a have
/// waited a whole tick (starving); plugin b runs nothing.
fn a_holds_the_slot_and_three_of_its_calls_starve() -> Scene {
    let (slots, clock) = (Arc::new(RunSlots::new(1, None)), Arc::new(AtomicU64::new(0)));
    let (a, b) = (slots.line(1), slots.line(1));
    assert!(slots.try_take(&a, false));
    let mut waiting_a: Vec<Call> = (0..3).map(|_| Call::new(&slots, &a, &clock)).collect();
    assert!(waiting_a.iter_mut().all(|c| !c.poll()));
    clock.store(2, Ordering::SeqCst);
    assert!(waiting_a.iter_mut().all(|c| !c.poll()));
    assert_eq!(a.starving.load(Ordering::SeqCst), 3);
    (slots, clock, a, b, waiting_a)
}

#[test]
fn slots_given_back_go_to_each_plugins_line_in_turn() {
    let (slots, clock, a, b, mut waiting_a) = a_holds_the_slot_and_three_of_its_calls_starve();
    // A long call of b has run once (its first wait is over) and waits again:
    // b runs nothing, so it waits in b's line at once.
    let mut long = Call::new(&slots, &b, &clock);
    long.run.started = None;
    assert!(!long.poll());
    assert_eq!(b.starving.load(Ordering::SeqCst), 1);
    assert!(!slots.preempted(), "only a new call preempts");
    // a's poll ends: the slot goes to a's line (its turn), to its oldest waiter.
    slots.give_back(&a);
    assert!(waiting_a[0].woken() && !long.woken());
    assert!(waiting_a[0].poll(), "a's first waiter ran");
    // That poll's end hands the slot to b's line, ahead of a's other waiters.
    let woken = [long.woken(), waiting_a[1].woken(), waiting_a[2].woken()];
    assert_eq!(woken, [true, false, false]);
    // It is b's turn: a call of a that starves at once (a runs nothing now)
    // does not take the slot first.
    let mut late = Call::new(&slots, &a, &clock);
    assert!(!late.poll());
    assert!(long.poll(), "b's call ran second, not fourth");
    // And back to a's line.
    assert!(waiting_a[1].woken() && !waiting_a[2].woken());
    assert!(waiting_a[1].poll());
}

#[test]
fn a_new_call_of_a_plugin_that_runs_nothing_goes_first_and_preempts_the_holders() {
    let (slots, clock, a, b, mut waiting_a) = a_holds_the_slot_and_three_of_its_calls_starve();
    assert!(!slots.preempted());
    // A new call of b, which runs nothing: the holder is to yield for it...
    let mut benign = Call::new(&slots, &b, &clock);
    assert!(!benign.poll());
    assert!(slots.preempted(), "a's holder yields at its next epoch check");
    assert!(
        slots.preempts.load(Ordering::SeqCst) >= 1,
        "the epoch was bumped for it"
    );
    // ...and the slot it gives back goes to b before a's three waiters.
    slots.give_back(&a);
    assert!(benign.woken() && waiting_a.iter().all(|c| !c.woken()));
    assert!(benign.poll(), "b's call ran first");
    assert!(!slots.preempted(), "no one is hungry any more");
    // Its next wait is not a new call's: no preemption, a's line's turn.
    assert!(waiting_a[0].woken());
    assert!(waiting_a[0].poll());
    assert!(!slots.preempted());
}

#[test]
fn a_new_call_takes_a_slot_owed_to_another_line_before_its_waiter_comes() {
    let (slots, clock, a, b, mut waiting_a) = a_holds_the_slot_and_three_of_its_calls_starve();
    // a's poll ends: the slot is owed to a's line, whose woken waiter (on a
    // low-priority thread, say) has not taken it yet.
    slots.give_back(&a);
    assert!(waiting_a[0].woken());
    // A new call of b, which runs nothing, takes it at once: had a's waiter
    // taken it first, b's call would wait for that poll's next epoch check.
    let mut benign = Call::new(&slots, &b, &clock);
    assert!(benign.poll(), "b's call ran without waiting");
    assert!(!slots.preempted(), "no one is hungry any more");
    // The slot b's poll gave back is a's line's again: its woken waiter runs.
    assert!(waiting_a[0].poll());
    assert_eq!(b.taken.load(Ordering::SeqCst), 0);
}

#[test]
fn a_slot_taken_on_a_low_priority_thread_counts_as_such_at_once() {
    let (slots, clock) = (Arc::new(RunSlots::new(1, None)), Arc::new(AtomicU64::new(0)));
    let (a, b) = (slots.line(1), slots.line(1));
    std::thread::scope(|s| {
        s.spawn(|| {
            super::super::background::mark_low_priority();
            assert!(slots.try_take(&a, false));
        });
    });
    // Taken, its poll not begun: a hungry call already sees a low-priority holder.
    assert_eq!(slots.low.load(Ordering::SeqCst), 1);
    let mut benign = Call::new(&slots, &b, &clock);
    assert!(benign.poll(), "it ran on the slot over the limit");
    // A try on a low-priority thread that finds no slot leaves no count behind.
    std::thread::scope(|s| {
        s.spawn(|| {
            super::super::background::mark_low_priority();
            assert!(!slots.try_take(&a, false));
        });
    });
    assert_eq!(slots.low.load(Ordering::SeqCst), 1);
}

#[test]
fn a_hungry_call_dropped_while_waiting_stops_the_preemption() {
    let (slots, clock) = (Arc::new(RunSlots::new(1, None)), Arc::new(AtomicU64::new(0)));
    let (a, b) = (slots.line(1), slots.line(1));
    assert!(slots.try_take(&a, false));
    let mut benign = Call::new(&slots, &b, &clock);
    assert!(!benign.poll());
    assert!(slots.preempted());
    drop(benign);
    assert!(!slots.preempted());
    assert_eq!(b.hungry.load(Ordering::SeqCst), 0);
}

#[test]
fn a_slot_lent_at_a_tick_wakes_a_waiter_and_the_tick_says_who_wanted_more() {
    let (slots, clock) = (Arc::new(RunSlots::new(1, None)), Arc::new(AtomicU64::new(0)));
    let a = slots.line(1);
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
    let (slots, clock) = (Arc::new(RunSlots::new(2, None)), Arc::new(AtomicU64::new(0)));
    let (a, _idle) = (slots.line(1), slots.line(1));
    assert!(slots.try_take(&a, false) && slots.try_take(&a, false));
    assert!(!slots.try_take(&a, false), "the tenant's two slots are taken");
    let mut third = Call::new(&slots, &a, &clock);
    assert!(!third.poll());
    slots.give_back(&a);
    assert!(third.woken() && third.poll());
}

/// A tenant's slots, the clock, and plugins a's, b's and c's lines.
type Busy = (Arc<RunSlots>, Arc<AtomicU64>, Arc<Line>, Arc<Line>, Arc<Line>);

/// One running slot, held by a poll of plugin a on a low-priority thread (a busy
/// plugin's call); plugins b and c run nothing.
fn a_busy_call_holds_the_slot() -> Busy {
    let (slots, clock) = (Arc::new(RunSlots::new(1, None)), Arc::new(AtomicU64::new(0)));
    let (a, b, c) = (slots.line(1), slots.line(1), slots.line(1));
    assert!(slots.try_take(&a, false));
    slots.low.fetch_add(1, Ordering::SeqCst);
    (slots, clock, a, b, c)
}

#[test]
fn a_new_call_beside_a_holder_on_a_low_priority_thread_runs_at_once_without_preempting() {
    let (slots, clock, a, b, _c) = a_busy_call_holds_the_slot();
    let mut benign = Call::new(&slots, &b, &clock);
    assert!(benign.poll(), "it ran on the slot over the limit");
    assert!(!slots.preempted(), "the holder runs on");
    // Its slot was given back after the poll; the tenant's own slot is still a's.
    assert!(!slots.over.load(Ordering::SeqCst));
    assert_eq!(b.taken.load(Ordering::SeqCst), 0);
    assert_eq!(slots.taken.load(Ordering::SeqCst), 1);
    // Its next poll is not a new call's: it waits its turn like any other.
    assert!(!benign.poll());
    assert!(!slots.preempted());
    // A waiter of a is not woken by the slot over the limit given back; a's own
    // slot given back goes to the waiting call.
    slots.low.fetch_sub(1, Ordering::SeqCst);
    slots.give_back(&a);
    assert!(benign.woken() && benign.poll());
}

#[test]
fn one_call_at_a_time_holds_the_slot_over_the_limit() {
    let (slots, clock, _a, b, c) = a_busy_call_holds_the_slot();
    // b's new call holds the slot over the limit (mid-poll): c's new call waits
    // and preempts the holders, as beside a holder on a normal thread.
    assert!(slots.try_take_over(&b));
    let mut other = Call::new(&slots, &c, &clock);
    assert!(!other.poll());
    assert!(slots.preempted());
    slots.give_back_over(&b);
    assert!(!slots.over.load(Ordering::SeqCst));
}

#[test]
fn no_slot_over_the_limit_for_a_call_on_a_low_priority_thread_or_while_a_slot_is_free() {
    let (slots, clock, _a, b, _c) = a_busy_call_holds_the_slot();
    std::thread::scope(|s| {
        s.spawn(|| {
            super::super::background::mark_low_priority();
            let mut busy = Call::new(&slots, &b, &clock);
            assert!(!busy.poll(), "a busy plugin's new call waits");
            assert!(slots.preempted());
        });
    });
    // With a slot free, a new call takes it the ordinary way.
    let slots = Arc::new(RunSlots::new(2, None));
    let (held, free) = (slots.line(1), slots.line(1));
    assert!(slots.try_take(&held, false));
    slots.low.fetch_add(1, Ordering::SeqCst);
    assert!(!slots.try_take_over(&free), "a slot is free");
}
