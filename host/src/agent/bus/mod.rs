//! The live-turn bus: publishing a turn's chunks and following them, so a
//! client that joins late (`GET /api/chat/{id}/stream`) gets everything sent so
//! far and then the live chunks, on whichever replica its request lands.
//!
//! [`TurnBus`] is the interface; [`open_in_process`] gives the in-process bus (one
//! process owns an embedded database, so every watcher is here: the registry of
//! [`LiveTurns`] as before). With the `postgres` feature, the PostgreSQL bus
//! also appends each chunk to a table and announces it with `pg_notify`, so a
//! watcher on another replica replays the rows and follows the notifications
//! until the turn's end marker.
//!
//! Watchers and cancellation: a turn is cancelled when its last watcher leaves.
//! A watcher on another replica counts like a local one: its replica tells the
//! turn's replica when it joins and when it leaves. If that replica dies, its
//! "leave" never comes and the turn runs to its end instead of being cancelled.

#[cfg(test)]
pub(crate) mod conformance;
#[cfg(feature = "postgres")]
mod postgres;

use super::AgentError;
use super::live::{LiveTurn, LiveTurns, Subscription, TurnLimits};
use crate::llm::UiChunk;
use crate::storage::{Backend, StorageError};
use std::sync::Arc;
use std::time::Duration;

/// Where turns publish their chunks and watchers follow them.
#[async_trait::async_trait]
pub trait TurnBus: Send + Sync {
    /// Registers a new turn of `session` (whose lease the caller holds) for
    /// `principal` and relays its chunks and its end to watchers anywhere; `Busy`
    /// when a turn of `session` is still registered here.
    async fn begin(&self, session: &str, principal: &str) -> Result<Arc<LiveTurn>, AgentError>;
    /// Forgets `turn`, then ends it: its watchers drain what is left and end.
    fn finish(&self, turn: &Arc<LiveTurn>);
    /// A watcher of `session`'s live turn from its first chunk, wherever it
    /// runs; `None` when no turn of `session` is live, or when `principal` is given
    /// and the turn is not that principal's.
    async fn subscribe(&self, session: &str, principal: Option<&str>) -> Result<Option<Watch>, StorageError>;
    /// Stops `session`'s live turn, wherever it runs, if `principal` is `None` or
    /// its principal; nothing when there is none.
    async fn stop(&self, session: &str, principal: Option<&str>) -> Result<(), StorageError>;
}

/// A watcher on another replica's turn.
#[cfg(feature = "postgres")]
#[async_trait::async_trait]
pub(crate) trait RemoteFeed: Send {
    /// As [`Watch::next_batch`].
    async fn next_batch(&mut self) -> Option<Vec<UiChunk>>;
}

/// One client's view of a live turn: the chunks so far, then the live ones, and
/// the span of the request that started the turn (its trace, wherever it runs).
pub struct Watch(Feed, Option<crate::telemetry::SpanContext>);

enum Feed {
    Local(Subscription),
    #[cfg(feature = "postgres")]
    Remote(Box<dyn RemoteFeed>),
}

impl Watch {
    /// The chunks not yet seen, waiting for some; `None` once the turn ended and
    /// everything was delivered.
    pub async fn next_batch(&mut self) -> Option<Vec<UiChunk>> {
        match &mut self.0 {
            Feed::Local(sub) => sub.next_batch().await,
            #[cfg(feature = "postgres")]
            Feed::Remote(feed) => feed.next_batch().await,
        }
    }

    #[cfg(feature = "postgres")]
    pub(crate) fn remote(feed: Box<dyn RemoteFeed>, trace: Option<crate::telemetry::SpanContext>) -> Watch {
        Watch(Feed::Remote(feed), trace)
    }

    /// A watcher of `turn` on this replica.
    pub(crate) fn local(turn: &Arc<LiveTurn>) -> Watch {
        Watch(Feed::Local(turn.subscribe()), turn.trace.clone())
    }

    /// The span of the request that started the turn.
    pub fn trace(&self) -> Option<&crate::telemetry::SpanContext> {
        self.1.as_ref()
    }
}

impl From<Subscription> for Watch {
    fn from(sub: Subscription) -> Watch {
        Watch(Feed::Local(sub), None)
    }
}

/// The in-process bus: [`LiveTurns`].
#[async_trait::async_trait]
impl TurnBus for LiveTurns {
    async fn begin(&self, session: &str, principal: &str) -> Result<Arc<LiveTurn>, AgentError> {
        LiveTurns::begin(self, session, principal).map_err(AgentError::Busy)
    }

    fn finish(&self, turn: &Arc<LiveTurn>) {
        LiveTurns::finish(self, turn)
    }

    async fn subscribe(&self, session: &str, principal: Option<&str>) -> Result<Option<Watch>, StorageError> {
        Ok(self.live(session, principal).map(|t| Watch::local(&t)))
    }

    async fn stop(&self, session: &str, principal: Option<&str>) -> Result<(), StorageError> {
        LiveTurns::stop(self, session, principal);
        Ok(())
    }
}

/// The bus of an embedded-backend hub: in process (one process owns the database).
pub(crate) fn open_in_process(limits: TurnLimits) -> Arc<dyn TurnBus> {
    Arc::new(LiveTurns::new(limits))
}

/// The bus for `backend`. With PostgreSQL, `owner` is this replica and a turn
/// without a sign of life for `ttl` is over for watchers on other replicas.
#[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
pub(crate) async fn open(
    backend: &Backend,
    owner: &str,
    ttl: Duration,
    limits: TurnLimits,
) -> Result<Arc<dyn TurnBus>, StorageError> {
    match backend {
        Backend::Embedded(_) => Ok(open_in_process(limits)),
        #[cfg(feature = "postgres")]
        Backend::Postgres(pg) => Ok(Arc::new(postgres::PgBus::open(pg, owner, ttl, limits).await?)),
    }
}

#[cfg(test)]
mod tests {
    use super::conformance;

    // One process owns a sled database: its "two replicas" are one bus.
    #[tokio::test]
    async fn conformance_in_process() {
        let bus = super::open_in_process(conformance::limits(1 << 20));
        conformance::replay_live_and_end(bus.clone(), bus.clone()).await;
        conformance::last_watcher_cancels(bus.clone(), bus.clone()).await;
        conformance::only_the_owner_watches(bus.clone(), bus.clone()).await;
        conformance::stop_reaches_the_turn(bus.clone(), bus).await;
        let small = super::open_in_process(conformance::limits(conformance::SMALL_BUFFER));
        conformance::long_turn_resumes_from_its_message(small.clone(), small).await;
    }
}
