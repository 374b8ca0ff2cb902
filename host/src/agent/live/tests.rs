//! The live-turn registry, its turns and their subscriptions, together.

use super::*;
use std::time::Duration;

fn limits(detached_secs: u64) -> TurnLimits {
    TurnLimits {
        detached: Duration::from_secs(detached_secs),
        resume_buffer: 1 << 20,
        lagging_watcher: 1 << 20,
    }
}

// Paused time: the sleep below ends only once every task is idle, so the waiter
// is parked in `next_batch` when the chunk arrives, however slow the machine.
#[tokio::test(start_paused = true)]
async fn late_joiners_get_everything_and_the_last_leaver_cancels() {
    let turns = LiveTurns::new(limits(0));
    let turn = turns.begin("s", "local").unwrap();
    assert_eq!(
        turns.begin("s", "local").err(),
        Some(Busy {
            session_id: "s".into()
        })
    );
    let mut first = turn.subscribe();
    turn.push(&[UiChunk::StartStep]);
    assert_eq!(first.next_batch().await.unwrap(), vec![UiChunk::StartStep]);
    turn.push(&[UiChunk::FinishStep]);
    let mut late = turn.subscribe();
    assert_eq!(
        late.next_batch().await.unwrap(),
        vec![UiChunk::StartStep, UiChunk::FinishStep]
    );
    // Waiting subscribers wake on new chunks.
    let waiter = tokio::spawn(async move {
        let batch = late.next_batch().await;
        (late, batch)
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    turn.push(&[UiChunk::Abort { reason: None }]);
    let (late, batch) = tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(batch.unwrap(), vec![UiChunk::Abort { reason: None }]);
    drop(first);
    assert!(!turn.cancel.is_cancelled());
    drop(late);
    assert!(turn.cancel.is_cancelled());
}

#[tokio::test]
async fn finished_turns_end_subscriptions_without_cancelling() {
    let turns = LiveTurns::new(limits(0));
    let turn = turns.begin("s", "local").unwrap();
    let mut sub = turn.subscribe();
    turn.push(&[UiChunk::StartStep]);
    turns.finish(&turn);
    assert!(turns.get("s").is_none());
    assert_eq!(sub.next_batch().await.unwrap().len(), 1);
    assert!(sub.next_batch().await.is_none());
    drop(sub);
    assert!(!turn.cancel.is_cancelled());
    assert!(turns.begin("s", "local").is_ok());
}

// Paused time: the detached timer fires when the clock is advanced past it.
#[tokio::test(start_paused = true)]
async fn a_detached_turn_goes_on_until_nobody_rejoined_in_time() {
    let turns = LiveTurns::new(limits(60));
    let turn = turns.begin("s", "alice").unwrap();
    drop(turn.subscribe());
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(
        !turn.cancel.is_cancelled(),
        "a reload within the time finds it running"
    );
    // A reconnect, then another reload: the time counts from the last leave.
    let again = turn.subscribe();
    tokio::time::sleep(Duration::from_secs(30)).await;
    drop(again);
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(
        !turn.cancel.is_cancelled(),
        "the first timer does not fire after a rejoin"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(turn.cancel.is_cancelled(), "nobody came back: stopped");
}

#[tokio::test]
async fn a_turn_that_ends_with_its_clients_is_not_detached() {
    let turns = LiveTurns::new(limits(60));
    let turn = turns.begin("s", "alice").unwrap();
    turn.end_with_clients();
    drop(turn.subscribe());
    assert!(turn.cancel.is_cancelled(), "stopped when its client left");
    assert_eq!(turn.stop_reason().as_deref(), Some("the client disconnected"));
}

#[tokio::test]
async fn a_watcher_that_falls_behind_the_budget_is_told_and_ends() {
    let turns = LiveTurns::new(TurnLimits {
        detached: Duration::from_secs(60),
        resume_buffer: 1024,
        lagging_watcher: 1024,
    });
    let turn = turns.begin("s", "alice").unwrap();
    let mut slow = turn.subscribe();
    for _ in 0..100 {
        turn.push(&[UiChunk::TextDelta {
            id: "t".into(),
            delta: "a slow reader misses this".into(),
        }]);
    }
    assert!(turn.kept_bytes() <= 1024);
    let told = slow.next_batch().await.unwrap();
    assert!(
        matches!(&told[..], [UiChunk::Error { error_text }] if error_text.contains("agent.lagging_watcher_kb")),
        "{told:?}"
    );
    assert!(slow.next_batch().await.is_none());
    // A reconnect resumes it.
    let mut again = turn.subscribe();
    assert!(matches!(
        again.next_batch().await.unwrap()[0],
        UiChunk::Start { .. }
    ));
    assert!(!turn.cancel.is_cancelled());
}

#[tokio::test]
async fn stop_cancels_only_the_principals_turn() {
    let turns = LiveTurns::new(limits(60));
    let turn = turns.begin("s", "alice").unwrap();
    let _watching = turn.subscribe();
    assert!(!turns.stop("s", Some("bob")), "not bob's to stop");
    assert!(!turns.stop("other", None));
    assert!(!turn.cancel.is_cancelled());
    assert!(turns.stop("s", Some("alice")));
    assert!(turn.cancel.is_cancelled());
    turns.finish(&turn);
    assert!(!turns.stop("s", None), "an ended turn is no turn");
}
