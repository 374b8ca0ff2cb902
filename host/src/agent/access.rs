//! Sessions and live turns as a principal sees them: its own, or every one for an
//! operator, another principal's being exactly as missing as an unknown id (the
//! decision is `Caller::may_access`; this applies it to every session operation
//! of the agent: join, stop, read, list, delete, hand over, and continuing one).

use super::{Agent, AgentError, Session, SessionInfo, Watch};
use crate::hub::{Caller, Visible};
use crate::storage::StorageError;
use std::collections::HashSet;

impl Agent {
    /// Joins the turn running in `session_id`, on this replica or another one,
    /// if `caller` may see it.
    pub async fn join(&self, caller: &Caller, session_id: &str) -> Result<Option<Watch>, StorageError> {
        self.bus.subscribe(session_id, caller.own_only()).await
    }

    /// Session `id` with its messages, if it exists and `caller` may see it.
    pub async fn session(&self, caller: &Caller, id: &str) -> Result<Option<Session>, StorageError> {
        // The record first: another principal's session costs what a missing one
        // does (one record read), not a load of its messages.
        if !self.visible_session(caller, id).await? {
            return Ok(None);
        }
        Ok(self
            .env
            .sessions
            .load(id)
            .await?
            .filter(|s| caller.may_access(&s.info.principal)))
    }

    /// The records of the sessions `visible` admits, most recently updated first.
    pub async fn list_sessions(&self, visible: &Visible) -> Result<Vec<SessionInfo>, StorageError> {
        match visible {
            Visible::Nothing => Ok(Vec::new()),
            Visible::All | Visible::Only(_) => self.env.sessions.list(visible.principal()).await,
        }
    }

    /// The sessions with a turn live on some replica.
    pub async fn active_sessions(&self) -> Result<HashSet<String>, StorageError> {
        self.env.sessions.leased().await
    }

    /// Deletes a session `caller` may see; refused while a turn runs in it
    /// (anywhere). False when there is no such session.
    pub async fn delete_session(&self, caller: &Caller, id: &str) -> Result<bool, AgentError> {
        // Before the lease: another principal's busy session answers as missing.
        if !self.visible_session(caller, id).await? {
            return Ok(false);
        }
        // Holding the session's lease keeps turns out while it is deleted.
        let lease = self.leases.acquire(id).await?;
        let deleted = match self.visible_session(caller, id).await {
            Ok(true) => self.env.sessions.delete(id).await,
            Ok(false) => Ok(false),
            Err(e) => Err(e),
        };
        if matches!(deleted, Ok(true)) {
            self.env.hub.accounting().forget_session(id);
        }
        lease.release().await;
        Ok(deleted?)
    }

    /// An operator gives session `id` to `principal`; refused while a turn runs in
    /// it. `None` when there is no such session.
    pub async fn hand_over(
        &self,
        caller: &Caller,
        id: &str,
        principal: &str,
    ) -> Result<Option<SessionInfo>, AgentError> {
        if !caller.is_operator() {
            return Err(AgentError::NotOperator(caller.name().to_string()));
        }
        let lease = self.leases.acquire(id).await?;
        let given = self.env.sessions.hand_over(id, principal).await;
        lease.release().await;
        if let Ok(Some(_)) = &given {
            crate::info!(
                "chat session {id}: handed over to {principal} by {}",
                caller.name()
            );
        }
        Ok(given?)
    }

    /// Whether session `id` exists and `caller` may see it.
    async fn visible_session(&self, caller: &Caller, id: &str) -> Result<bool, StorageError> {
        let info = self.env.sessions.info(id).await?;
        Ok(info.is_some_and(|i| caller.may_access(&i.principal)))
    }

    /// Stops the live turn of session `id` if `caller` may see it (its owner or an
    /// operator), on whichever replica it runs; nothing otherwise.
    pub async fn stop(&self, caller: &Caller, id: &str) -> Result<(), StorageError> {
        self.bus.stop(id, caller.own_only()).await
    }
}

/// Whether `caller` may run a turn in the session `info` records (`None`: a new
/// one): its own; another principal's is missing, or for an operator, not its to
/// continue.
pub(super) fn owned_by(info: Option<&SessionInfo>, caller: &Caller) -> Result<(), AgentError> {
    match info {
        Some(info) if info.principal != caller.name() => Err(if caller.may_access(&info.principal) {
            AgentError::NotOwner {
                session: info.id.clone(),
                principal: info.principal.clone(),
            }
        } else {
            AgentError::NotFound(info.id.clone())
        }),
        Some(_) | None => Ok(()),
    }
}
