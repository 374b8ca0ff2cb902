//! Turns in progress: at most one per session, the chunks sent so far, and the
//! clients watching.
//!
//! A turn's chunks are kept in order until the turn ends, so a client that joins
//! late (`GET /api/chat/{id}/stream`) gets everything sent so far and then the live
//! chunks, and sees exactly what the first client saw. Each watching client holds a
//! [`Subscription`]; when the last one is dropped before the turn ended (every
//! client disconnected) the turn's [`CancelToken`] is cancelled, which stops the
//! upstream request and the running tool calls.

use crate::hub::CancelToken;
use crate::llm::UiChunk;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// One turn in progress.
pub struct LiveTurn {
    /// The session the turn writes.
    pub session_id: String,
    /// The principal whose turn it is (only it, or an operator, may watch).
    pub principal: String,
    /// Cancelled to stop the turn (when its last watcher leaves, or on request).
    pub cancel: CancelToken,
    chunks: Mutex<Vec<UiChunk>>,
    /// Bumped whenever chunks are added or the turn ends; `true` once it ended.
    state: watch::Sender<(usize, bool)>,
    subscribers: AtomicUsize,
}

impl LiveTurn {
    /// Records chunks and wakes the subscribers.
    pub fn push(&self, new: &[UiChunk]) {
        if new.is_empty() {
            return;
        }
        let len = {
            let mut chunks = self.chunks.lock().expect("chunk list lock");
            chunks.extend_from_slice(new);
            chunks.len()
        };
        self.state.send_modify(|s| s.0 = len);
    }

    /// Marks the turn over: subscribers drain what is left and end.
    pub fn end(&self) {
        self.state.send_modify(|s| s.1 = true);
    }

    /// Whether the turn is over (no more chunks will come).
    pub fn is_ended(&self) -> bool {
        self.state.borrow().1
    }

    /// Resolves once the turn is over.
    pub async fn ended(&self) {
        let mut state = self.state.subscribe();
        // The sender lives in `self`, so this cannot fail while we wait.
        let _ = state.wait_for(|s| s.1).await;
    }

    /// A new watcher starting from the first chunk.
    pub fn subscribe(self: &Arc<Self>) -> Subscription {
        self.watch();
        Subscription {
            turn: self.clone(),
            next: 0,
            rx: self.state.subscribe(),
            counted: true,
        }
    }

    /// A reader of every chunk that is not a watcher: the turn does not wait for
    /// it and is cancelled when the watchers leave (a bus relaying the chunks).
    #[cfg(feature = "postgres")]
    pub(crate) fn follow(self: &Arc<Self>) -> Subscription {
        Subscription {
            turn: self.clone(),
            next: 0,
            rx: self.state.subscribe(),
            counted: false,
        }
    }

    /// Counts one more watcher (a client here, or one on another replica).
    pub(crate) fn watch(&self) {
        self.subscribers.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a watcher gone; the last one leaving a turn still running cancels it.
    pub(crate) fn unwatch(&self) {
        let before = self
            .subscribers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if before == Ok(1) && !self.is_ended() {
            self.cancel.cancel();
        }
    }

    /// How many clients are watching.
    pub fn subscriber_count(&self) -> usize {
        self.subscribers.load(Ordering::Acquire)
    }
}

/// One client's view of a turn.
pub struct Subscription {
    turn: Arc<LiveTurn>,
    next: usize,
    rx: watch::Receiver<(usize, bool)>,
    /// Whether this subscription counts as a watcher (see [`LiveTurn::follow`]).
    counted: bool,
}

impl Subscription {
    /// The chunks not yet seen, waiting for some; `None` once the turn ended and
    /// everything was delivered.
    pub async fn next_batch(&mut self) -> Option<Vec<UiChunk>> {
        loop {
            let (len, ended) = *self.rx.borrow_and_update();
            if self.next < len {
                let chunks = self.turn.chunks.lock().expect("chunk list lock");
                let batch = chunks[self.next..].to_vec();
                self.next = chunks.len();
                return Some(batch);
            }
            if ended {
                return None;
            }
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }

    /// The turn this subscription watches.
    pub fn turn(&self) -> &Arc<LiveTurn> {
        &self.turn
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.counted {
            self.turn.unwatch();
        }
    }
}

/// Why a turn could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// The session that already has a turn running.
    pub session_id: String,
}

/// The registry of turns in progress.
#[derive(Default)]
pub struct LiveTurns {
    turns: Mutex<HashMap<String, Arc<LiveTurn>>>,
}

impl LiveTurns {
    /// Registers a turn for `session_id`, or says one is already running.
    pub fn begin(&self, session_id: &str, principal: &str) -> Result<Arc<LiveTurn>, Busy> {
        let mut turns = self.turns.lock().expect("live turns lock");
        if turns.contains_key(session_id) {
            return Err(Busy {
                session_id: session_id.to_string(),
            });
        }
        let (state, _) = watch::channel((0, false));
        let turn = Arc::new(LiveTurn {
            session_id: session_id.to_string(),
            principal: principal.to_string(),
            cancel: CancelToken::new(),
            chunks: Mutex::new(Vec::new()),
            state,
            subscribers: AtomicUsize::new(0),
        });
        turns.insert(session_id.to_string(), turn.clone());
        Ok(turn)
    }

    /// Forgets `turn` (only if it is still the registered one), then ends it. In
    /// that order: ending it closes its subscribers' streams, and a client that
    /// sends its next request as soon as its stream closes must find the session
    /// free, not still "in progress".
    pub fn finish(&self, turn: &Arc<LiveTurn>) {
        {
            let mut turns = self.turns.lock().expect("live turns lock");
            if turns.get(&turn.session_id).is_some_and(|t| Arc::ptr_eq(t, turn)) {
                turns.remove(&turn.session_id);
            }
        }
        turn.end();
    }

    /// The turn registered for `session_id`, if any.
    pub fn get(&self, session_id: &str) -> Option<Arc<LiveTurn>> {
        self.turns
            .lock()
            .expect("live turns lock")
            .get(session_id)
            .cloned()
    }

    /// How many turns are registered.
    pub fn len(&self) -> usize {
        self.turns.lock().expect("live turns lock").len()
    }

    /// Whether no turn is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // Paused time: the sleep below ends only once every task is idle, so the waiter
    // is parked in `next_batch` when the chunk arrives, however slow the machine.
    #[tokio::test(start_paused = true)]
    async fn late_joiners_get_everything_and_the_last_leaver_cancels() {
        let turns = LiveTurns::default();
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
        let turns = LiveTurns::default();
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
}
