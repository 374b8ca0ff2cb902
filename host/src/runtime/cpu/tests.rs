//! The CPU shares' tests: tickets, running permits and busy marking per tenant,
//! and what idle tenants lend.

use super::*;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Shares of `percent` of `workers`, lending idle shares, the other limits at
/// their defaults.
fn shares_of(workers: usize, percent: u32) -> CpuShares {
    let limits = CpuLimits {
        caller_percent: percent,
        lend_idle: true,
        ..crate::config::Limits::default().cpu
    };
    CpuShares::new(workers, &limits)
}

#[test]
fn the_low_priority_runtime_has_half_the_workers_unless_configured() {
    let defaults = crate::config::Limits::default().cpu;
    assert_eq!(busy_threads(&defaults, 2), 1);
    assert_eq!(busy_threads(&defaults, 1), 1);
    assert_eq!(busy_threads(&defaults, 8), 4);
    let three = CpuLimits {
        busy_threads: Some(3),
        ..defaults
    };
    assert_eq!(busy_threads(&three, 2), 3);
}

#[tokio::test]
async fn the_epoch_is_nudged_between_ticks_only_while_calls_run_at_low_priority() {
    let defaults = crate::config::Limits::default().cpu;
    let shares = CpuShares::new(2, &defaults);
    assert_eq!(shares.nudge_every(), None, "nothing runs there");
    let (go, wait) = tokio::sync::oneshot::channel::<()>();
    let call = shares.background.spawn(wait).ok().unwrap();
    assert_eq!(shares.nudge_every(), Some(std::time::Duration::from_micros(250)));
    go.send(()).unwrap();
    call.await.unwrap().unwrap();
    assert_eq!(shares.nudge_every(), None, "its call ended");
    // At most a tick apart; never when off.
    for (limits, every) in [
        (
            CpuLimits {
                busy_yield_us: 5000,
                ..defaults.clone()
            },
            Some(2000),
        ),
        (
            CpuLimits {
                busy_yield_us: 0,
                ..defaults.clone()
            },
            None,
        ),
        (
            CpuLimits {
                busy_nice: 0,
                ..defaults.clone()
            },
            None,
        ),
    ] {
        let shares = CpuShares::new(2, &limits);
        assert_eq!(shares.give_way_every, every.map(std::time::Duration::from_micros));
    }
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
    // Unspent tickets do not carry over: a refill gives the share again.
    shares.refill();
    shares.refill();
    assert!(shares.gate(&a, &Arc::from("p")).try_pass());
    assert!(!shares.gate(&a, &Arc::from("p")).try_pass());
}

#[tokio::test(start_paused = true)]
async fn a_busy_tenant_alone_borrows_the_idle_ones_share_until_they_come_back() {
    let shares = shares_of(2, 50);
    let (a, b, p): (Arc<str>, Arc<str>, Arc<str>) = ("a".into(), "b".into(), "p".into());
    // Both tenants exist; only `a` has spinning calls, and one waits.
    let _idle = shares.gate(&b, &p);
    assert!(shares.gate(&a, &p).try_pass());
    let waiting = tokio::spawn(shares.gate(&a, &p).pass());
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    // It wanted more than its one ticket while `b` ran nothing: at the tick it
    // has both workers' tickets (the waiting call takes one) and permits.
    shares.refill();
    waiting.await.unwrap();
    assert!(shares.gate(&a, &p).try_pass());
    assert!(!shares.gate(&a, &p).try_pass());
    assert_eq!(shares.with(&a, |t| t.running.limit()), 2);
    // `b` comes back: it finds its own ticket at once, and from the next tick
    // each has its share.
    assert!(shares.gate(&b, &p).try_pass());
    shares.refill();
    assert_eq!(shares.with(&a, |t| t.running.limit()), 1);
    assert!(shares.gate(&a, &p).try_pass());
    assert!(!shares.gate(&a, &p).try_pass());
    assert!(shares.gate(&b, &p).try_pass());
}

#[tokio::test(start_paused = true)]
async fn by_default_nothing_is_lent() {
    let shares = CpuShares::new(2, &crate::config::Limits::default().cpu);
    let (a, p): (Arc<str>, Arc<str>) = ("a".into(), "p".into());
    assert!(shares.gate(&a, &p).try_pass());
    let waiting = tokio::spawn(shares.gate(&a, &p).pass());
    tokio::task::yield_now().await;
    shares.refill();
    waiting.await.unwrap();
    assert!(!shares.gate(&a, &p).try_pass(), "one ticket a tick, alone or not");
    assert_eq!(shares.with(&a, |t| t.running.limit()), 1);
}

#[test]
fn a_tokens_weight_multiplies_its_share_and_its_part_of_what_is_lent() {
    let limits = CpuLimits {
        caller_percent: 25,
        token_weights: [("heavy".to_string(), 3)].into(),
        ..crate::config::Limits::default().cpu
    };
    let shares = CpuShares::new(8, &limits);
    assert_eq!(shares.with(&Arc::from("heavy"), |t| t.share), 6);
    assert_eq!(shares.with(&Arc::from("light"), |t| t.share), 2);
    let (h, l): (Arc<str>, Arc<str>) = ("h".into(), "l".into());
    let lent = lend(8, &[(&h, 3), (&l, 1)], 0);
    assert_eq!((lent[&h], lent[&l]), (6, 2));
    // What does not divide goes one each in turn.
    let lent: Vec<_> = (0..2).map(|tick| lend(1, &[(&h, 1), (&l, 1)], tick)).collect();
    assert_eq!((lent[0][&h], lent[1][&l]), (1, 1));
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
