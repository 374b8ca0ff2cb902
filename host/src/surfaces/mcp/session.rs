//! The handshake era's sessions (`Mcp-Session-Id`): what every replica shares is
//! in a [`McpSessionStore`] (`store`: the caller that opened the session, its
//! negotiated version, what its client declared, its last use), a bounded table
//! with an idle expiry, so sessions that clients never `DELETE` cannot pile up.
//! Expired sessions are swept whenever a session is opened; when the table is
//! still full the least recently used session is evicted (its client gets 404 and
//! re-initializes, which is what the revision prescribes for a lost session).
//! Another token's requests on a session get 404, as if the id did not exist.
//!
//! What runs for a session stays on the replica that runs it: its in-flight
//! requests (so `notifications/cancelled` can cancel one) and our questions to
//! the client (approvals) waiting for its response. A cancellation, a response
//! or a `DELETE` that reaches another replica does not reach them there: the
//! request runs to its end (or its question to its timeout); closing or evicting
//! a session cancels what runs for it on the replica that did it.

use super::approval::McpClient;
use super::store::{McpSessionStore, StoredSession};
use crate::hub::cancel::CancelToken;
use crate::storage::StorageError;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Where the client's response to one of our requests goes.
type Answer = oneshot::Sender<Result<Value, Value>>;

/// What this replica runs for one session.
#[derive(Default)]
struct Local {
    /// In-flight requests by [`crate::surfaces::mcp::jsonrpc::id_key`].
    in_flight: HashMap<String, CancelToken>,
    /// Our requests to the client (approval questions) waiting for its response,
    /// by the id key of our request.
    asks: HashMap<String, Answer>,
}

impl Local {
    fn is_empty(&self) -> bool {
        self.in_flight.is_empty() && self.asks.is_empty()
    }

    fn cancel_all(&self) {
        for token in self.in_flight.values() {
            token.cancel();
        }
    }
}

/// What a request learns about its session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LiveSession {
    pub version: &'static str,
    pub client: McpClient,
}

/// The session table: the shared store and what this replica runs. Cheap to
/// share: clone the `Arc` it lives in.
pub(crate) struct SessionTable {
    store: Arc<dyn McpSessionStore>,
    /// Only sessions with a request running or a question waiting here; the
    /// caller was checked against the store (`touch`) before either began.
    local: Mutex<HashMap<String, Local>>,
}

impl SessionTable {
    pub(crate) fn new(store: Arc<dyn McpSessionStore>) -> SessionTable {
        SessionTable {
            store,
            local: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Local>> {
        // A panic while holding the lock leaves the map consistent (every update
        // is a single insert/remove), so a poisoned lock is still usable.
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `caller`'s `client` at `version` and returns its id.
    pub(crate) async fn open_for(
        &self,
        caller: &str,
        version: &'static str,
        client: McpClient,
    ) -> Result<String, StorageError> {
        let id = crate::ids::new_id("mcp");
        let session = StoredSession {
            caller: caller.to_string(),
            version,
            client,
        };
        let removed = self.store.open(&id, session).await?;
        let mut local = self.lock();
        for gone in removed {
            if let Some(l) = local.remove(&gone) {
                l.cancel_all();
            }
        }
        Ok(id)
    }

    /// The live session `id` of `caller`, marked as used now. `None` when unknown,
    /// expired, or opened by another caller.
    pub(crate) async fn touch(&self, id: &str, caller: &str) -> Result<Option<LiveSession>, StorageError> {
        let stored = self.store.touch(id, caller).await?;
        Ok(stored.map(|s| LiveSession {
            version: s.version,
            client: s.client,
        }))
    }

    /// Expects the client of session `id` to answer our request `key`: the
    /// receiver gets its response. Closing or evicting the session here drops the
    /// sender (the receiver then errs).
    pub(crate) fn expect_answer(
        self: &Arc<Self>,
        id: &str,
        key: String,
    ) -> (AwaitedAnswer, oneshot::Receiver<Result<Value, Value>>) {
        let (tx, rx) = oneshot::channel();
        self.lock()
            .entry(id.to_string())
            .or_default()
            .asks
            .insert(key.clone(), tx);
        let guard = AwaitedAnswer {
            table: self.clone(),
            session: id.to_string(),
            key,
        };
        (guard, rx)
    }

    /// Hands the response `key` POSTed on session `id` (its caller checked by
    /// `touch`) to the request waiting for it here. Whether one was.
    pub(crate) fn answer(&self, id: &str, key: &str, outcome: Result<Value, Value>) -> bool {
        let mut local = self.lock();
        match local.get_mut(id).and_then(|l| l.asks.remove(key)) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Ends session `id` of `caller`, cancelling its requests running here.
    /// Whether it existed.
    pub(crate) async fn close(&self, id: &str, caller: &str) -> Result<bool, StorageError> {
        if !self.store.close(id, caller).await? {
            return Ok(false);
        }
        if let Some(l) = self.lock().remove(id) {
            l.cancel_all();
        }
        Ok(true)
    }

    /// Records that request `key` of session `id` runs here under `cancel`; the
    /// returned guard forgets it when dropped.
    pub(crate) fn track(self: &Arc<Self>, id: &str, key: String, cancel: CancelToken) -> InFlightRequest {
        self.lock()
            .entry(id.to_string())
            .or_default()
            .in_flight
            .insert(key.clone(), cancel);
        InFlightRequest {
            table: self.clone(),
            session: id.to_string(),
            key,
        }
    }

    /// Cancels in-flight request `key` of session `id` (`notifications/cancelled`,
    /// its caller checked by `touch`) when it runs here. Whether it did.
    pub(crate) fn cancel(&self, id: &str, key: &str) -> bool {
        let local = self.lock();
        local
            .get(id)
            .and_then(|l| l.in_flight.get(key))
            .map(CancelToken::cancel)
            .is_some()
    }

    /// Forgets `key` of session `id` (in flight or asked), and the session's
    /// local entry once nothing runs for it here.
    fn forget(&self, id: &str, key: &str, asked: bool) {
        let mut local = self.lock();
        if let Some(l) = local.get_mut(id) {
            if asked {
                l.asks.remove(key);
            } else {
                l.in_flight.remove(key);
            }
            if l.is_empty() {
                local.remove(id);
            }
        }
    }

    /// Sessions with something running here.
    #[cfg(test)]
    fn local_len(&self) -> usize {
        self.lock().len()
    }
}

/// Keeps a request registered as in flight until dropped.
pub(crate) struct InFlightRequest {
    table: Arc<SessionTable>,
    session: String,
    key: String,
}

/// Forgets an awaited answer when dropped (answered, timed out or cancelled).
pub(crate) struct AwaitedAnswer {
    table: Arc<SessionTable>,
    session: String,
    key: String,
}

impl Drop for AwaitedAnswer {
    fn drop(&mut self) {
        self.table.forget(&self.session, &self.key, true);
    }
}

impl Drop for InFlightRequest {
    fn drop(&mut self) {
        self.table.forget(&self.session, &self.key, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surfaces::mcp::store::{MemorySessions, SessionLimits};
    use std::time::{Duration, Instant};

    #[test]
    fn limits_come_from_the_server_config() {
        let server = crate::config::ServerConfig {
            mcp_max_sessions: 8,
            mcp_session_idle_minutes: 2,
            ..Default::default()
        };
        let limits = SessionLimits::from(&server);
        assert_eq!(
            (limits.max_sessions, limits.idle_ttl),
            (8, Duration::from_secs(120))
        );
        assert_eq!(SessionLimits::default().max_sessions, 4096);
    }

    fn limits(max: usize, ttl_ms: u64) -> SessionLimits {
        SessionLimits {
            max_sessions: max,
            idle_ttl: Duration::from_millis(ttl_ms),
        }
    }

    fn table(max: usize, ttl_ms: u64) -> Arc<SessionTable> {
        Arc::new(SessionTable::new(Arc::new(MemorySessions::new(limits(
            max, ttl_ms,
        )))))
    }

    async fn open(t: &SessionTable, caller: &str) -> String {
        t.open_for(caller, "2025-11-25", McpClient::default())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_memory_store_passes_the_conformance_suite() {
        crate::surfaces::mcp::store::conformance::run(|limits| async move {
            let store: Arc<dyn McpSessionStore> = Arc::new(MemorySessions::new(limits));
            // One process: both replicas are the one store.
            (store.clone(), store)
        })
        .await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_postgres_store_passes_the_conformance_suite() {
        use crate::surfaces::mcp::store::postgres::PgMcpSessions;
        crate::surfaces::mcp::store::conformance::run(|limits| async move {
            // A fresh database per check, two stores on it: two replicas.
            let pg = crate::storage::postgres::test_database().await;
            let a: Arc<dyn McpSessionStore> =
                Arc::new(PgMcpSessions::open(pg.clone(), limits).await.unwrap());
            let b: Arc<dyn McpSessionStore> = Arc::new(PgMcpSessions::open(pg, limits).await.unwrap());
            (a, b)
        })
        .await;
    }

    #[tokio::test]
    async fn sessions_belong_to_their_caller_and_end_on_close() {
        let t = table(10, 60_000);
        let id = open(&t, "alice").await;
        assert!(id.starts_with("mcp_") && id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(
            t.touch(&id, "alice").await.unwrap(),
            Some(LiveSession {
                version: "2025-11-25",
                client: McpClient::default(),
            })
        );
        assert_eq!(
            t.touch(&id, "bob").await.unwrap(),
            None,
            "another token cannot use the session"
        );
        assert!(!t.close(&id, "bob").await.unwrap());
        assert!(t.close(&id, "alice").await.unwrap());
        assert_eq!(t.touch(&id, "alice").await.unwrap(), None);
        assert!(!t.close(&id, "alice").await.unwrap());
    }

    #[tokio::test]
    async fn churn_stays_within_the_cap_and_evicts_the_least_recently_used() {
        let store = Arc::new(MemorySessions::new(limits(8, 60_000)));
        let t = SessionTable::new(store.clone());
        let first = open(&t, "c").await;
        let second = open(&t, "c").await;
        for _ in 0..2_000 {
            t.touch(&first, "c").await.unwrap();
            open(&t, "c").await;
            assert!(store.len() <= 8);
        }
        assert!(
            t.touch(&first, "c").await.unwrap().is_some(),
            "a session in use survives churn"
        );
        assert!(
            t.touch(&second, "c").await.unwrap().is_none(),
            "an idle one is evicted"
        );
    }

    #[test]
    fn idle_sessions_expire_and_are_swept() {
        let store = MemorySessions::new(limits(100, 30));
        let start = Instant::now();
        let session = || StoredSession {
            caller: "c".into(),
            version: "2025-11-25",
            client: McpClient::default(),
        };
        store.open_at("idle", session(), start);
        for n in 0..20 {
            store.open_at(&format!("s{n}"), session(), start);
        }
        // Past the 30 ms idle TTL, without waiting for it.
        let later = start + Duration::from_millis(40);
        assert_eq!(store.touch_at("idle", "c", later), None);
        assert_eq!(store.open_at("new", session(), later).len(), 20);
        assert_eq!(store.len(), 1, "opening a session sweeps the expired ones");
    }

    #[tokio::test]
    async fn in_flight_requests_are_cancelled_by_id_close_or_eviction() {
        let t = table(1, 60_000);
        let id = open(&t, "c").await;
        let a = CancelToken::new();
        let guard = t.track(&id, "1".into(), a.clone());
        assert!(!t.cancel(&id, "2"));
        assert!(t.cancel(&id, "1"));
        assert!(a.is_cancelled());
        drop(guard);
        assert!(!t.cancel(&id, "1"), "finished requests are forgotten");
        assert_eq!(t.local_len(), 0, "nothing runs here for the session any more");

        let b = CancelToken::new();
        let _g = t.track(&id, "2".into(), b.clone());
        open(&t, "c").await; // evicts `id` (cap 1)
        assert!(b.is_cancelled(), "eviction cancels the evicted session's calls");

        let id = open(&t, "c").await;
        let c = CancelToken::new();
        let _g = t.track(&id, "3".into(), c.clone());
        assert!(t.close(&id, "c").await.unwrap());
        assert!(c.is_cancelled(), "closing cancels the session's calls");
    }

    #[tokio::test]
    async fn answers_reach_the_request_waiting_for_them_on_their_session() {
        let t = table(10, 60_000);
        let id = open(&t, "c").await;
        let (guard, rx) = t.expect_answer(&id, "q1".into());
        assert!(!t.answer(&id, "q2", Ok(Value::Null)), "an id we did not send");
        assert!(!t.answer("other", "q1", Ok(Value::Null)), "another session");
        assert!(t.answer(&id, "q1", Ok(serde_json::json!({"action": "decline"}))));
        assert_eq!(rx.await.unwrap(), Ok(serde_json::json!({"action": "decline"})));
        assert!(!t.answer(&id, "q1", Ok(Value::Null)), "answered once");
        drop(guard);
        let (_guard, rx) = t.expect_answer(&id, "q3".into());
        assert!(t.close(&id, "c").await.unwrap());
        assert!(rx.await.is_err(), "closing the session drops the question");
    }
}
