//! The temporary session of a one-off turn (the stateless APIs' turns, a task's
//! turns): deleted once its turn ended, by whoever is still there. The request
//! that started the turn waits for its end and deletes the session
//! ([`TemporarySession::finish`]); a request that went away mid-turn (its future
//! dropped: the client disconnected, or the call that ran a sub-agent was
//! dropped) leaves the guard behind, which stops the turn and hands the deletion
//! to a task of its own, so no session of a turn nobody waits for stays stored.

use super::{Agent, LiveTurn};
use crate::hub::Caller;
use std::sync::Arc;

/// A one-off turn's session, deleted when the turn ends.
pub struct TemporarySession {
    /// `None` once it was deleted (or handed over to a task).
    held: Option<Held>,
}

struct Held {
    agent: Arc<Agent>,
    caller: Caller,
    session: String,
    turn: Arc<LiveTurn>,
}

impl Held {
    /// Waits for the turn to end, then deletes its session.
    async fn delete_after_turn(&self) {
        self.turn.ended().await;
        if let Err(e) = self.agent.delete_session(&self.caller, &self.session).await {
            crate::warn!(
                "agent: cannot delete the temporary session {} of a finished turn: {e}",
                self.session
            );
        }
    }
}

impl Agent {
    /// Guards `session`, where `turn` runs for `caller`: it is deleted once the
    /// turn ended, whether the request waits for that or not.
    pub fn temporary_session(
        self: &Arc<Self>,
        caller: &Caller,
        session: &str,
        turn: &Arc<LiveTurn>,
    ) -> TemporarySession {
        TemporarySession {
            held: Some(Held {
                agent: self.clone(),
                caller: caller.clone(),
                session: session.to_string(),
                turn: turn.clone(),
            }),
        }
    }
}

impl TemporarySession {
    /// Waits for the turn to end (stop it first to end it early), then deletes
    /// the session. Dropped on the way, the guard finishes the job.
    pub async fn finish(mut self) {
        if let Some(held) = &self.held {
            held.delete_after_turn().await;
        }
        self.held = None;
    }
}

impl Drop for TemporarySession {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else { return };
        held.turn.stop("the request that started the turn went away");
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { held.delete_after_turn().await });
            }
            Err(_) => crate::warn!(
                "agent: the temporary session {} stays: no runtime left to delete it on",
                held.session
            ),
        }
    }
}
