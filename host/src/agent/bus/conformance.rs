//! The conformance suite every [`TurnBus`] passes. `a` and `b` are two buses on
//! one database (two replicas): turns begin on `a` and are watched through `b`.

use super::{TurnBus, Watch};
use crate::agent::AgentError;
use crate::agent::builder::MessageBuilder;
use crate::agent::live::TurnLimits;
use crate::agent::message::{Role, UiMessage};
use crate::llm::UiChunk;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Bus = Arc<dyn TurnBus>;

/// A resume budget a test turn outgrows quickly.
pub(crate) const SMALL_BUFFER: usize = 4096;

/// Turns that stop as their last watcher leaves and keep `resume_buffer` bytes.
pub(crate) fn limits(resume_buffer: usize) -> TurnLimits {
    TurnLimits {
        detached: Duration::ZERO,
        resume_buffer,
        lagging_watcher: resume_buffer,
    }
}

fn delta(text: &str) -> UiChunk {
    UiChunk::TextDelta {
        id: "t".into(),
        delta: text.into(),
    }
}

/// The next `n` chunks of `watch` (failing instead of hanging).
async fn take(watch: &mut Watch, n: usize) -> Vec<UiChunk> {
    let mut got = Vec::new();
    while got.len() < n {
        let batch = tokio::time::timeout(Duration::from_secs(20), watch.next_batch())
            .await
            .expect("chunks arrive")
            .expect("the turn is still live");
        got.extend(batch);
    }
    got
}

async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Replay then live, the end, one turn per session, watchers across buses.
pub(crate) async fn replay_live_and_end(a: Bus, b: Bus) {
    let turn = a.begin("s", "alice").await.unwrap();
    assert!(matches!(a.begin("s", "alice").await, Err(AgentError::Busy(_))));
    let first = turn.subscribe();
    turn.push(&[UiChunk::StartStep, delta("one")]);
    assert!(b.subscribe("other", None).await.unwrap().is_none());
    let mut late = b.subscribe("s", None).await.unwrap().expect("the live turn");
    assert_eq!(take(&mut late, 2).await, [UiChunk::StartStep, delta("one")]);
    turn.push(&[delta("two")]);
    turn.push(&[delta("three"), UiChunk::FinishStep]);
    assert_eq!(
        take(&mut late, 3).await,
        [delta("two"), delta("three"), UiChunk::FinishStep]
    );
    // A second late watcher replays everything from the start.
    let mut later = b.subscribe("s", None).await.unwrap().expect("the live turn");
    assert_eq!(take(&mut later, 5).await.len(), 5);
    // Watchers through `b` count: the first client leaving does not cancel.
    until("both late watchers count", || turn.subscriber_count() == 3).await;
    drop(first);
    drop(later);
    assert!(!turn.cancel.is_cancelled());
    turn.push(&[UiChunk::StartStep]);
    a.finish(&turn);
    assert_eq!(take(&mut late, 1).await, [UiChunk::StartStep]);
    let end = tokio::time::timeout(Duration::from_secs(20), late.next_batch()).await;
    assert!(end.expect("the end arrives").is_none());
    drop(late);
    assert!(!turn.cancel.is_cancelled(), "an ended turn is not cancelled");
    // Ended: nothing to join, and the session can have its next turn.
    assert!(b.subscribe("s", None).await.unwrap().is_none());
    let next = a.begin("s", "alice").await.unwrap();
    next.push(&[delta("next turn")]);
    let mut w = b.subscribe("s", None).await.unwrap().expect("the next turn");
    assert_eq!(take(&mut w, 1).await, [delta("next turn")]);
    a.finish(&next);
}

/// The last watcher leaving, wherever it watches from, cancels the turn.
pub(crate) async fn last_watcher_cancels(a: Bus, b: Bus) {
    let turn = a.begin("c", "alice").await.unwrap();
    let first = turn.subscribe();
    turn.push(&[UiChunk::StartStep]);
    let mut remote = b.subscribe("c", None).await.unwrap().expect("the live turn");
    assert_eq!(take(&mut remote, 1).await, [UiChunk::StartStep]);
    until("the remote watcher counts", || turn.subscriber_count() == 2).await;
    drop(first);
    assert!(!turn.cancel.is_cancelled());
    drop(remote);
    until("the turn is cancelled", || turn.cancel.is_cancelled()).await;
    a.finish(&turn);
}

/// A principal's turn is watched by that principal, or by whoever may see every
/// principal's (`None`), from any replica; to anyone else there is no turn.
pub(crate) async fn only_the_owner_watches(a: Bus, b: Bus) {
    let turn = a.begin("o", "alice").await.unwrap();
    let first = turn.subscribe();
    turn.push(&[delta("alice's")]);
    assert!(b.subscribe("o", Some("bob")).await.unwrap().is_none());
    assert!(a.subscribe("o", Some("bob")).await.unwrap().is_none());
    let mut own = b
        .subscribe("o", Some("alice"))
        .await
        .unwrap()
        .expect("her own turn");
    assert_eq!(take(&mut own, 1).await, [delta("alice's")]);
    let mut operator = b.subscribe("o", None).await.unwrap().expect("an operator's view");
    assert_eq!(take(&mut operator, 1).await, [delta("alice's")]);
    drop((own, operator, first));
    a.finish(&turn);
}

/// A stop through either bus cancels the turn, only for its principal or an
/// operator (`None`); stopping a session with no live turn is nothing.
pub(crate) async fn stop_reaches_the_turn(a: Bus, b: Bus) {
    let (x, y) = (
        a.begin("x", "alice").await.unwrap(),
        a.begin("y", "alice").await.unwrap(),
    );
    let _watching = (x.subscribe(), y.subscribe());
    b.stop("x", Some("bob")).await.unwrap();
    b.stop("none", None).await.unwrap();
    // Stops travel in order: once the operator's stop of `y` arrived, bob's of `x`
    // had arrived before it.
    b.stop("y", None).await.unwrap();
    until("an operator's stop reaches the turn", || y.cancel.is_cancelled()).await;
    assert!(!x.cancel.is_cancelled(), "bob cannot stop alice's turn");
    b.stop("x", Some("alice")).await.unwrap();
    until("the owner's stop reaches the turn", || x.cancel.is_cancelled()).await;
    a.finish(&x);
    a.finish(&y);
}

/// The message a client builds from `chunks`.
fn built(chunks: &[UiChunk]) -> UiMessage {
    let mut b = MessageBuilder::new(UiMessage::new(String::new(), Role::Assistant));
    for c in chunks {
        b.apply(c);
    }
    b.message().clone()
}

/// A turn longer than the resume budget: a late watcher, anywhere, gets a replay
/// of the message (not every chunk) and then the live chunks, which continue the
/// open text part; the turn itself keeps no more than the budget.
pub(crate) async fn long_turn_resumes_from_its_message(a: Bus, b: Bus) {
    let turn = a.begin("long", "alice").await.unwrap();
    turn.start_message(UiMessage::new("m1".into(), Role::Assistant));
    let mut first = turn.subscribe();
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(batch) = first.next_batch().await {
            seen.extend(batch);
        }
        seen
    });
    turn.push(&[
        UiChunk::Start {
            message_id: Some("m1".into()),
            message_metadata: None,
        },
        UiChunk::StartStep,
        UiChunk::TextStart { id: "t".into() },
    ]);
    let mut expected = String::new();
    for i in 0..2000 {
        let word = format!("w{i} ");
        expected.push_str(&word);
        turn.push(&[delta(&word)]);
        // A watcher that reads along keeps up (one that does not is told it fell
        // behind: see `agent::live`).
        tokio::task::yield_now().await;
    }
    assert!(
        turn.kept_bytes() <= SMALL_BUFFER,
        "kept {} bytes of chunks",
        turn.kept_bytes()
    );
    let mut late = b.subscribe("long", None).await.unwrap().expect("the live turn");
    // Everything so far, in far fewer chunks than were sent. A relay to another
    // replica that fell behind this fast a turn tells a watcher part way through,
    // which reconnects, as a client does.
    let mut got = Vec::new();
    let mut reconnects = 0;
    while built(&got).text() != expected {
        let batch = take(&mut late, 1).await;
        if matches!(&batch[..], [UiChunk::Error { error_text }] if error_text.contains("fell behind")) {
            reconnects += 1;
            assert!(reconnects < 10, "reconnected {reconnects} times");
            late = b.subscribe("long", None).await.unwrap().expect("the live turn");
            got.clear();
            continue;
        }
        got.extend(batch);
        assert!(
            got.len() < 1000,
            "a replay, not the whole stream: {} chunks",
            got.len()
        );
    }
    turn.push(&[delta("live"), UiChunk::TextEnd { id: "t".into() }]);
    got.extend(take(&mut late, 2).await);
    assert!(
        matches!(&got[0], UiChunk::Start { message_id: Some(id), .. } if id == "m1"),
        "the replay starts the message: {:?}",
        got[0]
    );
    let message = built(&got);
    assert!(
        message.text() == format!("{expected}live"),
        "the live tail continues the part"
    );
    a.finish(&turn);
    assert!(
        tokio::time::timeout(Duration::from_secs(20), late.next_batch())
            .await
            .unwrap()
            .is_none()
    );
    let seen = reader.await.unwrap();
    assert!(
        built(&seen).text() == format!("{expected}live"),
        "the first watcher saw it all"
    );
}
