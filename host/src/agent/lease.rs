//! A turn's lease on its session, kept while the turn runs: taken before the
//! turn starts (someone else's live lease is the same `Busy` as a turn running
//! here), renewed every third of its lifetime, released when the turn ends.
//!
//! If the replica running the turn dies, nobody renews the lease and it lapses
//! after its lifetime (`storage.lease_secs`); the session's next turn can then
//! run on any replica. A turn that lost its lease anyway (a pause longer than
//! the lifetime) finds out at its next save, which conflicts and ends the turn.

use super::store::{Lease, SessionStore};
use super::{AgentError, Busy};
use std::sync::Arc;
use std::time::Duration;

/// Who holds leases for this process and for how long.
#[derive(Clone)]
pub(crate) struct Leases {
    pub store: Arc<dyn SessionStore>,
    /// This replica's id (the owner written with each lease).
    pub owner: String,
    pub ttl: Duration,
}

/// A held lease, renewed in the background until released.
pub(crate) struct HeldLease {
    leases: Leases,
    session: String,
    renewer: tokio::task::JoinHandle<()>,
}

impl Leases {
    /// Takes the lease of `session`, or says who runs a turn there.
    pub(crate) async fn acquire(&self, session: &str) -> Result<HeldLease, AgentError> {
        match self.store.acquire(session, &self.owner, self.ttl).await? {
            Lease::Acquired { .. } => Ok(HeldLease {
                leases: self.clone(),
                session: session.to_string(),
                renewer: tokio::spawn(renew(self.clone(), session.to_string())),
            }),
            Lease::HeldBy { owner, .. } => {
                crate::debug!("chat session {session}: a turn is live on {owner}");
                Err(AgentError::Busy(Busy {
                    session_id: session.to_string(),
                }))
            }
        }
    }
}

/// Renews the lease every third of its lifetime until it is lost.
async fn renew(leases: Leases, session: String) {
    let every = (leases.ttl / 3).max(Duration::from_millis(100));
    loop {
        tokio::time::sleep(every).await;
        match leases.store.renew(&session, &leases.owner, leases.ttl).await {
            Ok(true) => {}
            Ok(false) => {
                crate::warn!(
                    "chat session {session}: this replica lost the turn's lease; its next save will fail"
                );
                return;
            }
            // The next renewal may get through before the lease lapses.
            Err(e) => crate::warn!("chat session {session}: cannot renew the turn's lease: {e}"),
        }
    }
}

impl HeldLease {
    /// Stops renewing and gives the lease up.
    pub(crate) async fn release(self) {
        self.renewer.abort();
        if let Err(e) = self.leases.store.release(&self.session, &self.leases.owner).await {
            // It lapses on its own after its lifetime.
            crate::warn!(
                "chat session {}: cannot release the turn's lease: {e}",
                self.session
            );
        }
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        // A lease dropped unreleased (its task panicked) lapses on its own.
        self.renewer.abort();
    }
}
