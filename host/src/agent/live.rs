//! Turns in progress: at most one per session, the chunks sent so far, and the
//! clients watching.
//!
//! A turn's chunks are kept in order until the turn ends, so a client that joins
//! late (`GET /api/chat/{id}/stream`) gets everything sent so far and then the live
//! chunks, and sees exactly what the first client saw. Each watching client holds a
//! [`Subscription`]. A turn outlives its connections: when the last one is dropped
//! before the turn ended (a page reload, a network blip) the turn goes on, detached,
//! for up to `agent.detached_turn_secs`, and a client that joins in that time
//! follows it; if nobody does, the turn's [`CancelToken`] is cancelled, which stops
//! the upstream request and the running tool calls. `stop` cancels it at once.

use crate::hub::CancelToken;
use crate::llm::UiChunk;
use crate::race::{Race, race};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
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
    /// How long the turn goes on with nobody watching (zero: it is cancelled when
    /// the last watcher leaves).
    detached: Duration,
    /// Bumped whenever a watcher comes or goes, so a detached timer knows whether
    /// the turn was watched again since it started.
    watch_epoch: AtomicU64,
    /// Why the turn was stopped, said in its `abort` chunk (the first reason wins).
    stopped: Mutex<Option<String>>,
    /// Stop when the last watcher leaves, whatever `detached` says (a client that
    /// cannot resume).
    ends_with_clients: AtomicBool,
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

    /// Stops the turn (cancels it), saying `why` in its `abort` chunk.
    pub fn stop(&self, why: impl Into<String>) {
        self.stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| why.into());
        self.cancel.cancel();
    }

    /// Makes the turn stop as soon as its last watcher leaves, not after
    /// `agent.detached_turn_secs`: for clients that cannot resume a turn (the
    /// Anthropic Messages API).
    pub fn end_with_clients(&self) {
        self.ends_with_clients.store(true, Ordering::Release);
    }

    /// Whether `principal` may follow or stop this turn: its own principal, or
    /// anyone when `None` (an operator).
    pub fn belongs_to(&self, principal: Option<&str>) -> bool {
        principal.is_none_or(|p| self.principal == p)
    }

    /// Why the turn was stopped, if it was.
    pub fn stop_reason(&self) -> Option<String> {
        self.stopped.lock().unwrap_or_else(|e| e.into_inner()).clone()
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
        self.watch_epoch.fetch_add(1, Ordering::AcqRel);
        self.subscribers.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts a watcher gone. When the last one leaves a turn still running, the
    /// turn goes on detached: cancelled unless somebody watches it again within
    /// `detached` (at once when that is zero).
    pub(crate) fn unwatch(self: &Arc<Self>) {
        let epoch = self.watch_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        let before = self
            .subscribers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if before != Ok(1) || self.is_ended() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !self.detached.is_zero() && !self.ends_with_clients.load(Ordering::Acquire) => {
                runtime.spawn(self.clone().cancel_unless_watched(epoch));
            }
            _ => self.stop("the client disconnected"),
        }
    }

    /// After `detached`, cancels the turn if nobody watched it since `epoch`; ends
    /// early when the turn does.
    async fn cancel_unless_watched(self: Arc<Self>, epoch: u64) {
        if let Race::First(()) = race(tokio::time::sleep(self.detached), self.ended()).await {
            let unwatched = self.watch_epoch.load(Ordering::Acquire) == epoch && self.subscriber_count() == 0;
            if unwatched && !self.is_ended() {
                let why = format!(
                    "nobody watched the turn for {} s (agent.detached_turn_secs)",
                    self.detached.as_secs()
                );
                crate::info!("chat session {}: {why}: stopped", self.session_id);
                self.stop(why);
            }
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
pub struct LiveTurns {
    turns: Mutex<HashMap<String, Arc<LiveTurn>>>,
    /// How long a turn goes on with nobody watching (`agent.detached_turn_secs`).
    detached: Duration,
}

impl LiveTurns {
    /// A registry whose turns go on for `detached` with nobody watching.
    pub fn new(detached: Duration) -> LiveTurns {
        LiveTurns {
            turns: Mutex::default(),
            detached,
        }
    }

    /// Stops the turn of `session_id` running here if `principal` is `None` or
    /// its principal; whether one was stopped.
    pub fn stop(&self, session_id: &str, principal: Option<&str>) -> bool {
        let turn = self.live(session_id, principal);
        if let Some(turn) = &turn {
            turn.stop("stopped on request");
        }
        turn.is_some()
    }

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
            detached: self.detached,
            watch_epoch: AtomicU64::new(0),
            stopped: Mutex::new(None),
            ends_with_clients: AtomicBool::new(false),
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

    /// The turn of `session_id` still running here, if `principal` may see it.
    pub fn live(&self, session_id: &str, principal: Option<&str>) -> Option<Arc<LiveTurn>> {
        self.get(session_id)
            .filter(|t| !t.is_ended() && t.belongs_to(principal))
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
        let turns = LiveTurns::new(Duration::ZERO);
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
        let turns = LiveTurns::new(Duration::ZERO);
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
        let turns = LiveTurns::new(Duration::from_secs(60));
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
        let turns = LiveTurns::new(Duration::from_secs(60));
        let turn = turns.begin("s", "alice").unwrap();
        turn.end_with_clients();
        drop(turn.subscribe());
        assert!(turn.cancel.is_cancelled(), "stopped when its client left");
        assert_eq!(turn.stop_reason().as_deref(), Some("the client disconnected"));
    }

    #[tokio::test]
    async fn stop_cancels_only_the_principals_turn() {
        let turns = LiveTurns::new(Duration::from_secs(60));
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
}
