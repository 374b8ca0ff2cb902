//! Turns in progress: at most one per session, what each has sent, and the
//! clients watching.
//!
//! A client that joins late (`GET /api/chat/{id}/stream`) gets what the turn sent
//! so far and then the live chunks. The sent chunks are kept up to
//! `agent.resume_buffer_kb` ([`log`]): within it a joiner gets exactly what the
//! first client saw; past it, a replay of the message state ([`replay`]), so a long
//! turn is never buffered whole. Each watching client holds a [`Subscription`]. A
//! turn outlives its connections: when the last one is dropped before the turn
//! ended (a page reload, a network blip) the turn goes on, detached, for up to
//! `agent.detached_turn_secs`, and a client that joins in that time follows it; if
//! nobody does, the turn's [`CancelToken`] is cancelled, which stops the upstream
//! request and the running tool calls. `stop` cancels it at once.

mod log;
mod registry;
mod replay;
mod subscription;
#[cfg(test)]
mod tests;

#[cfg(feature = "postgres")]
pub(crate) use log::{Lagged, Position};
pub use registry::{Busy, LiveTurns, TurnLimits};
pub use subscription::Subscription;

/// What a watcher that fell behind the kept chunks (or rows) is told, in its
/// `error` chunk, before its stream ends.
pub(crate) const FELL_BEHIND: &str =
    "this stream fell behind the turn by more than agent.lagging_watcher_kb; reconnect to resume it";

use super::builder::MessageBuilder;
use super::message::UiMessage;
use crate::hub::CancelToken;
use crate::llm::UiChunk;
use crate::race::{Race, race};
use log::TurnLog;
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
    /// The message the turn builds and the chunks kept for joiners.
    log: Mutex<TurnLog>,
    /// The position after the last chunk, bumped as chunks are added; `true` once
    /// the turn ended.
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
    /// The span of the request that started the turn: a watcher anywhere joins
    /// its trace (the PostgreSQL bus stores it with the turn).
    pub trace: Option<crate::telemetry::SpanContext>,
}

impl LiveTurn {
    /// Applies chunks to the turn's message, keeps them for joiners and wakes the
    /// subscribers.
    pub fn push(&self, new: &[UiChunk]) {
        if new.is_empty() {
            return;
        }
        let head = {
            let mut log = self.log();
            log.push(new);
            log.head()
        };
        self.state.send_modify(|s| s.0 = head);
    }

    /// Starts the turn's message from `message` (new, or one the turn continues).
    pub(crate) fn start_message(&self, message: UiMessage) {
        self.log().start_message(message);
    }

    /// Reads the turn's message.
    pub(crate) fn with_message<R>(&self, read: impl FnOnce(&UiMessage) -> R) -> R {
        read(self.log().builder().message())
    }

    /// Changes the turn's message other than by a chunk (what a joiner's replay
    /// shows too).
    pub(crate) fn edit_message<R>(&self, edit: impl FnOnce(&mut MessageBuilder) -> R) -> R {
        edit(self.log().builder_mut())
    }

    /// How many bytes of chunks the turn keeps for joiners.
    pub fn kept_bytes(&self) -> usize {
        self.log().kept_bytes()
    }

    fn log(&self) -> std::sync::MutexGuard<'_, TurnLog> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
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

    /// A new watcher: what the turn sent so far (or its replay), then the live
    /// chunks.
    pub fn subscribe(self: &Arc<Self>) -> Subscription {
        self.watch();
        self.reader(true)
    }

    /// A reader of every chunk that is not a watcher: the turn does not wait for
    /// it and is cancelled when the watchers leave (a bus relaying the chunks).
    #[cfg(feature = "postgres")]
    pub(crate) fn follow(self: &Arc<Self>) -> Subscription {
        self.reader(false)
    }

    fn reader(self: &Arc<Self>, counted: bool) -> Subscription {
        // Subscribed before joining: a chunk pushed in between is not missed.
        let rx = self.state.subscribe();
        let joined = {
            let mut log = self.log();
            let (first, next) = log.join();
            (first, next, log.add_reader(next))
        };
        Subscription::new(self.clone(), joined, rx, counted)
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
