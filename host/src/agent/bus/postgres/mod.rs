//! The live-turn bus in PostgreSQL: a watcher on any replica replays a turn's
//! chunks and follows it live.
//!
//! Tables (component `chat_turns` of `wasmhub_schema`): `wasmhub_chat_turns(turn_id,
//! session_id, owner (the replica), started, alive_until, ended, principal)` and
//! `wasmhub_chat_turn_chunks(turn_id, seq, chunk)`. The replica running a turn keeps
//! its chunks in memory for its own watchers (as the in-process bus does) and a relay
//! task ([`relay`]) appends them to `wasmhub_chat_turn_chunks`, bumps `alive_until`
//! and sends a `pg_notify` on the channel `wasmhub_chat_turns`, all in one
//! statement per batch; a long turn's rows are bounded by a stored replay of its
//! message. `ended` is the end marker, set after the last chunk. A watcher
//! elsewhere ([`follower`]) reads the rows from its position in one statement (one
//! snapshot: the end marker is never seen without the chunks before it), then
//! waits for a notification. A turn whose `alive_until` passed (its replica died)
//! is over for its watchers. Ended turns' rows are deleted a minute after they end.
//!
//! Notifications are `<kind> <turn id>`: `c` chunks, `e` end, `j`/`l` a watcher
//! on another replica joined/left, which the turn's replica counts like a local
//! watcher (the last one leaving detaches the turn), and `x` a stop asked on
//! another replica (the principal was checked there, against the row).

mod follower;
mod relay;

use super::{TurnBus, Watch};
use crate::agent::AgentError;
use crate::agent::live::{LiveTurn, LiveTurns, TurnLimits};
use crate::llm::UiChunk;
use crate::storage::postgres::Notifications;
use crate::storage::{Postgres, StorageError};
use crate::telemetry::SpanContext;
use follower::Follower;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::watch;

const CHANNEL: &str = "wasmhub_chat_turns";
/// How long an ended turn's rows stay for watchers still replaying them.
const KEEP_ENDED_SECS: f64 = 60.0;
/// A watcher re-reads this often without a notification.
const POLL: Duration = Duration::from_secs(1);
/// Failed reads in a row after which a remote watcher gives up.
const READ_ATTEMPTS: u32 = 5;

const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE wasmhub_chat_turns (
        turn_id text PRIMARY KEY,
        session_id text NOT NULL,
        owner text NOT NULL,
        started timestamptz NOT NULL DEFAULT now(),
        alive_until timestamptz NOT NULL,
        ended timestamptz
    );
    CREATE INDEX wasmhub_chat_turns_session ON wasmhub_chat_turns (session_id, started DESC);
    CREATE TABLE wasmhub_chat_turn_chunks (
        turn_id text NOT NULL REFERENCES wasmhub_chat_turns (turn_id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        chunk text NOT NULL,
        PRIMARY KEY (turn_id, seq)
    );
",
    "
    -- The principal whose turn it is: only it (or an operator) may watch.
    ALTER TABLE wasmhub_chat_turns ADD COLUMN principal text NOT NULL DEFAULT 'local';
",
    "
    -- A long turn's replay (its message at position replay_at as chunks, the rows
    -- before it deleted), and the first row still kept (see relay.rs).
    ALTER TABLE wasmhub_chat_turns
        ADD COLUMN replay_at bigint NOT NULL DEFAULT 0,
        ADD COLUMN replay text,
        ADD COLUMN kept_from bigint NOT NULL DEFAULT 0;
",
    "
    -- The W3C traceparent of the request that started the turn: a watcher on
    -- another replica joins its trace.
    ALTER TABLE wasmhub_chat_turns ADD COLUMN traceparent text;
",
    "
    -- The rest of that request's trace context: its tracestate and the client's
    -- W3C baggage, which a watcher on another replica keeps too.
    ALTER TABLE wasmhub_chat_turns ADD COLUMN tracestate text, ADD COLUMN baggage text;
",
];

/// The PostgreSQL bus of one replica.
pub(crate) struct PgBus {
    inner: Arc<Inner>,
}

struct Inner {
    pg: Postgres,
    /// This replica (written with its turns).
    owner: String,
    /// How long a turn stays live for other replicas without a sign of life.
    ttl: Duration,
    /// The turns running here, by session (their watchers here read memory).
    local: LiveTurns,
    /// Bytes of rows a turn writes before it stores a replay
    /// (`agent.resume_buffer_kb`), and the most it keeps for watchers part way
    /// through (`agent.lagging_watcher_kb`).
    limits: TurnLimits,
    /// The turns running here, by turn id, for watchers joining from elsewhere.
    owned: Mutex<HashMap<String, Arc<LiveTurn>>>,
    /// Wakes this replica's watchers of other replicas' turns, by turn id.
    wakers: Mutex<HashMap<String, watch::Sender<u64>>>,
}

fn encode(chunk: &UiChunk) -> Result<String, StorageError> {
    serde_json::to_string(chunk).map_err(StorageError::Encode)
}

impl PgBus {
    /// The bus on `pg` for replica `owner`; a turn without a sign of life for
    /// `ttl` is over for watchers elsewhere.
    pub(crate) async fn open(
        pg: &Postgres,
        owner: &str,
        ttl: Duration,
        limits: TurnLimits,
    ) -> Result<PgBus, StorageError> {
        pg.migrate("chat_turns", MIGRATIONS).await?;
        let notes = pg.listen(CHANNEL).await?;
        let inner = Arc::new(Inner {
            pg: pg.clone(),
            owner: owner.to_string(),
            ttl,
            local: LiveTurns::new(limits),
            limits,
            owned: Mutex::default(),
            wakers: Mutex::default(),
        });
        tokio::spawn(dispatch(Arc::downgrade(&inner), notes));
        Ok(PgBus { inner })
    }
}

/// Hands each notification to whom it concerns; listens again when the
/// listening connection is gone.
async fn dispatch(inner: Weak<Inner>, mut notes: Notifications) {
    loop {
        if let Some(payload) = notes.recv().await {
            match inner.upgrade() {
                Some(inner) => inner.on_note(&payload),
                None => return,
            }
            continue;
        }
        loop {
            let Some(live) = inner.upgrade() else { return };
            // Whatever was announced meanwhile is read from the rows.
            live.wake_all();
            match live.pg.listen(CHANNEL).await {
                Ok(fresh) => {
                    notes = fresh;
                    break;
                }
                Err(e) => crate::warn!("turn bus: cannot listen for turn chunks again: {e}"),
            }
            drop(live);
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Inner {
    fn on_note(&self, payload: &str) {
        let Some((kind, turn)) = payload.split_once(' ') else {
            return;
        };
        match kind {
            "c" | "e" => {
                if let Some(waker) = self.wakers.lock().expect("wakers lock").get(turn) {
                    waker.send_modify(|n| *n += 1);
                }
            }
            "j" | "l" | "x" => {
                let owned = self.owned.lock().expect("owned turns lock").get(turn).cloned();
                match (owned, kind) {
                    (Some(t), "j") => t.watch(),
                    (Some(t), "l") => t.unwatch(),
                    (Some(t), _) => t.stop("stopped on request"),
                    (None, _) => {}
                }
            }
            _ => {}
        }
    }

    /// The live turn of `session` (of `principal`, when given), on any replica.
    async fn live_turn(
        &self,
        session: &str,
        principal: Option<&str>,
    ) -> Result<Option<(String, Option<SpanContext>)>, StorageError> {
        let client = self.pg.client().await?;
        let row = client
            .query_opt(
                "SELECT turn_id, traceparent, tracestate, baggage FROM wasmhub_chat_turns
                 WHERE session_id = $1 AND ended IS NULL AND alive_until > now()
                   AND ($2::text IS NULL OR principal = $2)
                 ORDER BY started DESC LIMIT 1",
                &[&session, &principal],
            )
            .await
            .map_err(StorageError::pg("find a live turn"))?;
        Ok(row.map(|r| {
            let (parent, state, baggage): (Option<String>, Option<String>, Option<String>) =
                (r.get(1), r.get(2), r.get(3));
            let trace = parent
                .and_then(|p| SpanContext::parse(&p, state.as_deref()))
                .map(|c| c.with_baggage(baggage.as_deref()));
            (r.get(0), trace)
        }))
    }

    fn wake_all(&self) {
        for waker in self.wakers.lock().expect("wakers lock").values() {
            waker.send_modify(|n| *n += 1);
        }
    }

    async fn notify(&self, kind: &str, turn: &str) -> Result<(), StorageError> {
        let client = self.pg.client().await?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &format!("{kind} {turn}")])
            .await
            .map_err(StorageError::pg("announce a turn event"))?;
        Ok(())
    }

    /// Registers turn `turn_id` of `session` (and forgets long-ended or dead turns).
    async fn register(
        &self,
        turn_id: &str,
        session: &str,
        principal: &str,
        trace: Option<&SpanContext>,
    ) -> Result<(), StorageError> {
        let traceparent = trace.map(SpanContext::traceparent);
        let state = trace.and_then(|c| c.state.as_deref());
        let baggage = trace.and_then(|c| c.baggage.as_deref());
        let client = self.pg.client().await?;
        client
            .execute(
                "DELETE FROM wasmhub_chat_turns
                 WHERE ended < now() - $1::float8 * interval '1 second'
                    OR alive_until < now() - $1::float8 * interval '1 second'",
                &[&KEEP_ENDED_SECS],
            )
            .await
            .map_err(StorageError::pg("forget ended turns"))?;
        client
            .execute(
                "INSERT INTO wasmhub_chat_turns
                     (turn_id, session_id, owner, alive_until, principal, traceparent, tracestate, baggage)
                 VALUES ($1, $2, $3, now() + $4::float8 * interval '1 second', $5, $6, $7, $8)",
                &[
                    &turn_id,
                    &session,
                    &self.owner,
                    &self.ttl.as_secs_f64(),
                    &principal,
                    &traceparent,
                    &state,
                    &baggage,
                ],
            )
            .await
            .map_err(StorageError::pg("register a turn"))?;
        Ok(())
    }

    async fn forget(&self, turn: &str) -> Result<(), StorageError> {
        let client = self.pg.client().await?;
        client
            .execute("DELETE FROM wasmhub_chat_turns WHERE turn_id = $1", &[&turn])
            .await
            .map_err(StorageError::pg("forget an ended turn"))?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl TurnBus for PgBus {
    async fn begin(&self, session: &str, principal: &str) -> Result<Arc<LiveTurn>, AgentError> {
        let live = self
            .inner
            .local
            .begin(session, principal)
            .map_err(AgentError::Busy)?;
        let turn_id = crate::ids::new_id("turn");
        if let Err(e) = self
            .inner
            .register(&turn_id, session, principal, live.trace.as_ref())
            .await
        {
            self.inner.local.finish(&live);
            return Err(AgentError::Storage(e));
        }
        self.inner
            .owned
            .lock()
            .expect("owned turns lock")
            .insert(turn_id.clone(), live.clone());
        tokio::spawn(relay::relay(self.inner.clone(), turn_id, live.clone()));
        Ok(live)
    }

    fn finish(&self, turn: &Arc<LiveTurn>) {
        self.inner.local.finish(turn)
    }

    async fn stop(&self, session: &str, principal: Option<&str>) -> Result<(), StorageError> {
        if self.inner.local.stop(session, principal) {
            return Ok(());
        }
        let Some((turn_id, _)) = self.inner.live_turn(session, principal).await? else {
            return Ok(());
        };
        self.inner.notify("x", &turn_id).await
    }

    async fn subscribe(&self, session: &str, principal: Option<&str>) -> Result<Option<Watch>, StorageError> {
        if let Some(turn) = self.inner.local.get(session).filter(|t| !t.is_ended()) {
            // Another principal's turn is no turn at all (and is not looked for
            // elsewhere: one session has one owner).
            return Ok(turn.belongs_to(principal).then(|| Watch::local(&turn)));
        }
        let Some((turn_id, trace)) = self.inner.live_turn(session, principal).await? else {
            return Ok(None);
        };
        // Waiting for notifications before the first read: none is missed.
        let rx = {
            let mut wakers = self.inner.wakers.lock().expect("wakers lock");
            wakers
                .entry(turn_id.clone())
                .or_insert_with(|| watch::channel(0).0)
                .subscribe()
        };
        let follower = Follower {
            inner: self.inner.clone(),
            turn_id,
            next: 0,
            rx,
            done: false,
        };
        self.inner.notify("j", &follower.turn_id).await?;
        Ok(Some(Watch::remote(Box::new(follower), trace)))
    }
}

#[cfg(test)]
mod tests {
    use super::PgBus;
    use crate::agent::bus::{TurnBus, conformance};
    use crate::storage::postgres::test_database;
    use std::sync::Arc;
    use std::time::Duration;

    /// Two buses on one fresh database: two replicas.
    async fn two() -> (Arc<dyn TurnBus>, Arc<dyn TurnBus>) {
        two_keeping(1 << 20).await
    }

    /// Two replicas whose turns keep `resume_buffer` bytes.
    async fn two_keeping(resume_buffer: usize) -> (Arc<dyn TurnBus>, Arc<dyn TurnBus>) {
        let pg = test_database().await;
        let ttl = Duration::from_secs(15);
        let limits = conformance::limits(resume_buffer);
        let a = Arc::new(PgBus::open(&pg, "replica-a", ttl, limits).await.unwrap());
        let b = Arc::new(PgBus::open(&pg, "replica-b", ttl, limits).await.unwrap());
        (a, b)
    }

    #[tokio::test]
    async fn conformance_a_long_turn_resumes_from_its_message_across_replicas() {
        let (a, b) = two_keeping(conformance::SMALL_BUFFER).await;
        conformance::long_turn_resumes_from_its_message(a, b).await;
    }

    #[tokio::test]
    async fn conformance_replay_live_and_end_across_replicas() {
        let (a, b) = two().await;
        conformance::replay_live_and_end(a, b).await;
    }

    #[tokio::test]
    async fn conformance_the_last_watcher_anywhere_cancels() {
        let (a, b) = two().await;
        conformance::last_watcher_cancels(a, b).await;
    }

    #[tokio::test]
    async fn conformance_only_the_owner_watches_across_replicas() {
        let (a, b) = two().await;
        conformance::only_the_owner_watches(a, b).await;
    }

    #[tokio::test]
    async fn a_watcher_on_another_replica_keeps_the_turns_trace_state_and_baggage() {
        let (a, b) = two().await;
        let started = crate::telemetry::SpanContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("vendor=1"),
        )
        .unwrap()
        .with_baggage(Some("user=alice,tier=gold"));
        let turn = crate::telemetry::within(Some(started.clone()), a.begin("t", "alice"))
            .await
            .unwrap();
        let _watching = turn.subscribe();
        let watch = b.subscribe("t", Some("alice")).await.unwrap().expect("the turn");
        assert_eq!(watch.trace(), Some(&started));
        drop(watch);
        a.finish(&turn);
    }

    #[tokio::test]
    async fn conformance_a_stop_on_one_replica_reaches_the_turn_on_the_other() {
        let (a, b) = two().await;
        conformance::stop_reaches_the_turn(a, b).await;
    }
}
