//! The registry of turns in progress: at most one per session, with the limits
//! every turn keeps to.

use super::LiveTurn;
use super::log::TurnLog;
use crate::hub::CancelToken;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Why a turn could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// The session that already has a turn running.
    pub session_id: String,
}

/// How long a turn goes on unwatched and how much it keeps for joiners.
#[derive(Debug, Clone, Copy)]
pub struct TurnLimits {
    /// How long a turn goes on with nobody watching (`agent.detached_turn_secs`;
    /// zero: it stops when its last watcher leaves).
    pub detached: Duration,
    /// The most bytes of chunks a turn keeps for joiners (`agent.resume_buffer_kb`).
    pub resume_buffer: usize,
    /// The most bytes of chunks a turn keeps for a connected watcher that reads
    /// slowly (`agent.lagging_watcher_kb`); past it the watcher is told it fell
    /// behind.
    pub lagging_watcher: usize,
}

/// The registry of turns in progress.
pub struct LiveTurns {
    turns: Mutex<HashMap<String, Arc<LiveTurn>>>,
    /// What each turn keeps to.
    limits: TurnLimits,
}

impl LiveTurns {
    /// A registry whose turns keep to `limits`.
    pub fn new(limits: TurnLimits) -> LiveTurns {
        LiveTurns {
            turns: Mutex::default(),
            limits,
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
            log: Mutex::new(TurnLog::new(
                self.limits.resume_buffer,
                self.limits.lagging_watcher,
            )),
            state,
            subscribers: AtomicUsize::new(0),
            detached: self.limits.detached,
            watch_epoch: AtomicU64::new(0),
            stopped: Mutex::new(None),
            ends_with_clients: AtomicBool::new(false),
            trace: crate::telemetry::current(),
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
