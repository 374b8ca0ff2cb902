//! The instance pool's fair shares' tests: the levels, queueing, borrowing, the
//! reserve, and which waiters a freed slot wakes.

use super::*;

fn scheduler(plugin_share: u32, caller_share: u32) -> Scheduler {
    within_tokens(4, plugin_share, caller_share, 50, 10)
}

/// A pool of `pool` slots, shares in percent.
fn within_tokens(pool: u32, plugin: u32, caller: u32, part: u32, reserve: u32) -> Scheduler {
    Scheduler::new(
        pool,
        &ShareLimits {
            plugin_percent: plugin,
            caller_percent: caller,
            caller_plugin_percent: part,
            caller_reserve_percent: reserve,
            queue_ms: 100,
        },
    )
}

/// `n` slots for `plugin`'s calls of `caller`, each admitted at once.
async fn hold(s: &Scheduler, plugin: &str, caller: &str, n: usize) -> Vec<Slot> {
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(s.admit(plugin, caller, far()).await.unwrap());
    }
    held
}

/// Why `plugin`'s next call of `caller` is refused (the limit and the message).
async fn refused(s: &Scheduler, plugin: &str, caller: &str, deadline: Instant) -> (Limit, String) {
    let e = s.admit(plugin, caller, deadline).await.err().expect("refused");
    (e.limit.expect("a limit"), e.message)
}

/// Lets every spawned task run until it waits (time is paused: no timing).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

#[tokio::test(start_paused = true)]
async fn one_plugin_cannot_take_the_pool_from_the_others() {
    let s = scheduler(50, 100);
    let held = [
        s.admit("a", "ci", far()).await.unwrap(),
        s.admit("a", "ci", far()).await.unwrap(),
    ];
    let e = s.admit("a", "ci", far()).await.err().unwrap();
    assert_eq!(e.limit, Some(Limit::PluginShare));
    assert!(
        e.message.contains("\"a\" already runs 2 calls")
            && e.message.contains("limits.plugin_share_percent = 50% of 4"),
        "{}",
        e.message
    );
    // The rest of the pool is the other plugins'.
    let _b = [
        s.admit("b", "web", far()).await.unwrap(),
        s.admit("b", "web", far()).await.unwrap(),
    ];
    // Past the shares, the pool itself is the bound.
    let e = s.admit("c", "cron", far()).await.err().unwrap();
    assert_eq!(e.limit, Some(Limit::Instances));
    drop(held);
    s.admit("c", "cron", far()).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn one_token_cannot_take_the_pool_from_the_others() {
    let s = scheduler(100, 25);
    let _held = s.admit("a", "ci", far()).await.unwrap();
    let e = s.admit("b", "ci", far()).await.err().unwrap();
    assert_eq!(e.limit, Some(Limit::CallerShare));
    assert!(e.message.contains("token \"ci\""), "{}", e.message);
    s.admit("a", "web", far()).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_call_over_its_share_waits_for_a_slot_rather_than_failing() {
    let s = Arc::new(scheduler(25, 100));
    let held = s.admit("a", "ci", far()).await.unwrap();
    let waiting = {
        let s = s.clone();
        tokio::spawn(async move { s.admit("a", "ci", far()).await.is_ok() })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(held);
    assert!(waiting.await.unwrap(), "the queued call got the freed slot");
    // Never waits past the call's own deadline.
    let _held = s.admit("a", "ci", far()).await.unwrap();
    let started = Instant::now();
    let soon = started + Duration::from_millis(10);
    assert!(s.admit("a", "ci", soon).await.is_err());
    assert_eq!(started.elapsed(), Duration::from_millis(10));
}

#[tokio::test(start_paused = true)]
async fn a_plugin_alone_borrows_all_but_its_tokens_reserve() {
    // The token's 8 slots: a part of 4 per plugin, 2 kept free by borrowers.
    let s = within_tokens(8, 100, 100, 50, 25);
    let _calc = hold(&s, "calc", "ci", 6).await;
    let (limit, message) = refused(&s, "calc", "ci", far()).await;
    assert_eq!(limit, Limit::CallerPluginShare);
    assert!(
        message.contains("the plugin \"calc\" within token \"ci\" already runs at least 4 calls")
            && message.contains("limits.caller_plugin_share_percent = 50%")
            && message.contains("2 of the token's slots stay free")
            && message.contains("limits.caller_reserve_percent = 25%"),
        "{message}"
    );
    // A newcomer of the same token finds the reserve free.
    let _echo = hold(&s, "echo", "ci", 2).await;
    assert_eq!(refused(&s, "echo", "ci", far()).await.0, Limit::CallerShare);
    // Another token's calls find the pool full.
    assert_eq!(refused(&s, "calc", "web", far()).await.0, Limit::Instances);
}

#[tokio::test(start_paused = true)]
async fn a_borrower_yields_the_freed_slots_to_a_waiting_plugin_of_its_token() {
    // One token may take the whole pool of 4; a plugin's part is 2, no reserve.
    let s = Arc::new(within_tokens(4, 100, 100, 50, 0));
    let mut calc = hold(&s, "calc", "ci", 4).await;
    let admit = |plugin: &'static str| {
        let s = s.clone();
        tokio::spawn(async move { s.admit(plugin, "ci", far()).await })
    };
    let echo = [admit("echo"), admit("echo")];
    settle().await;
    let more_calc = admit("calc");
    settle().await;
    // Two of calc's calls end: both slots go to echo, not to calc's newer call.
    calc.truncate(2);
    settle().await;
    let [first, second] = echo;
    let _echo = [first.await.unwrap().unwrap(), second.await.unwrap().unwrap()];
    assert!(
        !more_calc.is_finished(),
        "calc borrows past its part only when echo waits for nothing"
    );
    // With nobody else waiting, calc borrows again.
    calc.pop();
    more_calc.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_borrower_is_refused_while_a_plugin_of_its_token_waits() {
    let s = Arc::new(within_tokens(4, 100, 100, 50, 0));
    // ci's calc holds its part, web holds the rest of the pool.
    let _calc = hold(&s, "calc", "ci", 2).await;
    let mut web = hold(&s, "text", "web", 2).await;
    let echo = {
        let s = s.clone();
        tokio::spawn(async move { s.admit("echo", "ci", far()).await })
    };
    settle().await;
    // (A deadline before echo's wait ends.)
    let soon = Instant::now() + Duration::from_millis(10);
    let (limit, message) = refused(&s, "calc", "ci", soon).await;
    assert_eq!(limit, Limit::CallerPluginShare);
    assert!(message.contains("other plugins are waiting"), "{message}");
    // A slot freed goes to echo; once echo waits no more, calc may borrow again.
    web.pop();
    echo.await.unwrap().unwrap();
    web.pop();
    s.admit("calc", "ci", far()).await.unwrap();
}

/// A waker that counts its wake-ups.
struct Count(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn a_freed_slot_wakes_only_the_waiters_it_may_let_through() {
    use std::sync::atomic::Ordering::SeqCst;
    use std::task::{Context, Poll, Waker};
    // Tokens of 4 slots in a pool of 8; a plugin's part is 2, 1 kept free.
    let s = within_tokens(8, 100, 50, 50, 25);
    let mut spin = hold(&s, "spin", "ci", 3).await;
    let mut calc = hold(&s, "calc", "web", 2).await;
    let count = Arc::new(Count(Default::default()));
    let waker = Waker::from(count.clone());
    let mut queued = Box::pin(s.admit("spin", "ci", far()));
    let mut poll = || queued.as_mut().poll(&mut Context::from_waker(&waker));
    assert!(poll().is_pending(), "spin borrows no further: the reserve");
    // Another token's calls end: nothing changed for ci's waiter.
    calc.pop();
    assert_eq!(count.0.load(SeqCst), 0, "not woken by web's slot");
    // A call of ci's own that ends, but leaves spin still over its part
    // with the reserve taken: still nothing to wake it for.
    let _echo = s.admit("echo", "ci", far()).await.unwrap();
    assert!(poll().is_pending());
    drop(_echo);
    assert_eq!(count.0.load(SeqCst), 0, "the reserve is still needed");
    // One of spin's own ends: now it may borrow it back.
    spin.pop();
    assert_eq!(count.0.load(SeqCst), 1);
    assert!(matches!(poll(), Poll::Ready(Ok(_))));
}

#[tokio::test(start_paused = true)]
async fn a_waiter_that_gives_up_no_longer_holds_borrowers_back() {
    let s = Arc::new(within_tokens(4, 100, 100, 50, 0));
    let _calc = hold(&s, "calc", "ci", 2).await;
    let _web = hold(&s, "text", "web", 2).await;
    let echo = {
        let s = s.clone();
        tokio::spawn(async move { s.admit("echo", "ci", far()).await })
    };
    settle().await;
    echo.abort();
    assert!(echo.await.err().is_some_and(|e| e.is_cancelled()));
    assert!(
        !s.0.lock().callers["ci"].plugins.contains_key("echo"),
        "forgotten"
    );
    // Only the pool (full) stops calc now.
    assert_eq!(refused(&s, "calc", "ci", far()).await.0, Limit::Instances);
}
