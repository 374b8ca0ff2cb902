//! The handshake era's sessions (`Mcp-Session-Id`): a bounded table with an idle
//! expiry, so sessions that clients never `DELETE` cannot pile up.
//!
//! Each session remembers the caller that opened it (another token's requests get
//! 404, as if the id did not exist), the negotiated protocol version, and its
//! in-flight requests so `notifications/cancelled` can cancel one. Expired
//! sessions are swept whenever a session is opened; when the table is still full
//! the least recently used session is evicted (its client gets 404 and
//! re-initializes, which is what the revision prescribes for a lost session).

use super::approval::ClientInfo;
use crate::hub::cancel::CancelToken;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Where the client's response to one of our requests goes.
type Answer = oneshot::Sender<Result<Value, Value>>;

/// Limits of the session table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionLimits {
    /// Most sessions kept at once.
    pub max_sessions: usize,
    /// A session unused for this long is dropped.
    pub idle_ttl: Duration,
}

impl From<&crate::config::ServerConfig> for SessionLimits {
    fn from(server: &crate::config::ServerConfig) -> Self {
        SessionLimits {
            max_sessions: server.mcp_max_sessions,
            idle_ttl: Duration::from_secs(server.mcp_session_idle_minutes.saturating_mul(60)),
        }
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits::from(&crate::config::ServerConfig::default())
    }
}

struct Session {
    caller: String,
    version: &'static str,
    last_used: Instant,
    /// In-flight requests by [`crate::surfaces::mcp::jsonrpc::id_key`].
    in_flight: HashMap<String, CancelToken>,
    /// What the client declared at `initialize`.
    client: ClientInfo,
    /// Our requests to the client (approval questions) waiting for its response,
    /// by the id key of our request.
    asks: HashMap<String, Answer>,
}

/// What a request learns about its session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LiveSession {
    pub version: &'static str,
    pub client: ClientInfo,
}

/// The session table. Cheap to share: clone the `Arc` it lives in.
pub(crate) struct SessionTable {
    limits: SessionLimits,
    sessions: Mutex<HashMap<String, Session>>,
}

impl SessionTable {
    pub(crate) fn new(limits: SessionLimits) -> SessionTable {
        SessionTable {
            limits,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock leaves the map consistent (every update
        // is a single insert/remove), so a poisoned lock is still usable.
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `caller` at `version` and returns its id.
    #[cfg(test)]
    pub(crate) fn open(&self, caller: &str, version: &'static str) -> String {
        self.open_at(caller, version, ClientInfo::default(), Instant::now())
    }

    /// Opens a session for `caller`'s `client` at `version` and returns its id.
    pub(crate) fn open_for(&self, caller: &str, version: &'static str, client: ClientInfo) -> String {
        self.open_at(caller, version, client, Instant::now())
    }

    /// [`SessionTable::open_for`] at time `now` (the sweep and the new session's last use).
    fn open_at(&self, caller: &str, version: &'static str, client: ClientInfo, now: Instant) -> String {
        let id = crate::ids::new_id("mcp");
        let mut map = self.lock();
        let ttl = self.limits.idle_ttl;
        map.retain(|_, s| now.duration_since(s.last_used) < ttl);
        while map.len() >= self.limits.max_sessions.max(1) {
            let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(evicted) = map.remove(&oldest) {
                cancel_all(&evicted);
            }
        }
        map.insert(
            id.clone(),
            Session {
                caller: caller.to_string(),
                version,
                last_used: now,
                in_flight: HashMap::new(),
                client,
                asks: HashMap::new(),
            },
        );
        id
    }

    /// The live session `id` of `caller`, marked as used now. `None` when unknown,
    /// expired, or opened by another caller.
    pub(crate) fn touch(&self, id: &str, caller: &str) -> Option<LiveSession> {
        self.touch_at(id, caller, Instant::now())
    }

    /// [`SessionTable::touch`] at time `now` (the expiry check and the new last use).
    fn touch_at(&self, id: &str, caller: &str, now: Instant) -> Option<LiveSession> {
        let mut map = self.lock();
        let session = map.get_mut(id)?;
        if session.caller != caller {
            return None;
        }
        if now.duration_since(session.last_used) >= self.limits.idle_ttl {
            if let Some(expired) = map.remove(id) {
                cancel_all(&expired);
            }
            return None;
        }
        session.last_used = now;
        Some(LiveSession {
            version: session.version,
            client: session.client.clone(),
        })
    }

    /// Expects the client of session `id` to answer our request `key`: the
    /// receiver gets its response; `None` when the session is gone. Closing or
    /// evicting the session drops the sender (the receiver then errs).
    pub(crate) fn expect_answer(
        self: &Arc<Self>,
        id: &str,
        key: String,
    ) -> Option<(AwaitedAnswer, oneshot::Receiver<Result<Value, Value>>)> {
        let (tx, rx) = oneshot::channel();
        self.lock().get_mut(id)?.asks.insert(key.clone(), tx);
        let guard = AwaitedAnswer {
            table: self.clone(),
            session: id.to_string(),
            key,
        };
        Some((guard, rx))
    }

    /// Hands the response `key` that `caller` POSTed on session `id` to the
    /// request waiting for it. Whether one was.
    pub(crate) fn answer(&self, id: &str, caller: &str, key: &str, outcome: Result<Value, Value>) -> bool {
        let mut map = self.lock();
        let Some(session) = map.get_mut(id).filter(|s| s.caller == caller) else {
            return false;
        };
        match session.asks.remove(key) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Ends session `id` of `caller`, cancelling its in-flight requests. Whether it existed.
    pub(crate) fn close(&self, id: &str, caller: &str) -> bool {
        let mut map = self.lock();
        if map.get(id).is_none_or(|s| s.caller != caller) {
            return false;
        }
        if let Some(s) = map.remove(id) {
            cancel_all(&s);
        }
        true
    }

    /// Records that request `key` of session `id` runs under `cancel`; the returned
    /// guard forgets it when dropped.
    pub(crate) fn track(self: &Arc<Self>, id: &str, key: String, cancel: CancelToken) -> InFlight {
        if let Some(s) = self.lock().get_mut(id) {
            s.in_flight.insert(key.clone(), cancel);
        }
        InFlight {
            table: self.clone(),
            session: id.to_string(),
            key,
        }
    }

    /// Cancels in-flight request `key` of session `id` (`notifications/cancelled`).
    /// Whether one was running.
    pub(crate) fn cancel(&self, id: &str, caller: &str, key: &str) -> bool {
        let map = self.lock();
        match map.get(id) {
            Some(s) if s.caller == caller => s.in_flight.get(key).map(CancelToken::cancel).is_some(),
            _ => false,
        }
    }

    /// Number of live sessions (expired ones not yet swept included).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

fn cancel_all(s: &Session) {
    for token in s.in_flight.values() {
        token.cancel();
    }
}

/// Keeps a request registered as in flight until dropped.
pub(crate) struct InFlight {
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
        if let Some(s) = self.table.lock().get_mut(&self.session) {
            s.asks.remove(&self.key);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(s) = self.table.lock().get_mut(&self.session) {
            s.in_flight.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn table(max: usize, ttl_ms: u64) -> Arc<SessionTable> {
        Arc::new(SessionTable::new(SessionLimits {
            max_sessions: max,
            idle_ttl: Duration::from_millis(ttl_ms),
        }))
    }

    #[test]
    fn sessions_belong_to_their_caller_and_end_on_close() {
        let t = table(10, 60_000);
        let id = t.open("alice", "2025-11-25");
        assert!(id.starts_with("mcp_") && id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(
            t.touch(&id, "alice"),
            Some(LiveSession {
                version: "2025-11-25",
                client: ClientInfo::default(),
            })
        );
        assert_eq!(t.touch(&id, "bob"), None, "another token cannot use the session");
        assert!(!t.close(&id, "bob"));
        assert!(t.close(&id, "alice"));
        assert_eq!(t.touch(&id, "alice"), None);
        assert!(!t.close(&id, "alice"));
    }

    #[test]
    fn churn_stays_within_the_cap_and_evicts_the_least_recently_used() {
        let t = table(8, 60_000);
        let first = t.open("c", "2025-11-25");
        let second = t.open("c", "2025-11-25");
        for _ in 0..10_000 {
            t.touch(&first, "c");
            t.open("c", "2025-11-25");
            assert!(t.len() <= 8);
        }
        assert!(t.touch(&first, "c").is_some(), "a session in use survives churn");
        assert!(t.touch(&second, "c").is_none(), "an idle one is evicted");
    }

    #[test]
    fn idle_sessions_expire_and_are_swept() {
        let t = table(100, 30);
        let start = Instant::now();
        let idle = t.open_at("c", "2025-11-25", ClientInfo::default(), start);
        for _ in 0..20 {
            t.open_at("c", "2025-11-25", ClientInfo::default(), start);
        }
        // Past the 30 ms idle TTL, without waiting for it.
        let later = start + Duration::from_millis(40);
        assert_eq!(t.touch_at(&idle, "c", later), None);
        t.open_at("c", "2025-11-25", ClientInfo::default(), later);
        assert_eq!(t.len(), 1, "opening a session sweeps the expired ones");
    }

    #[test]
    fn in_flight_requests_are_cancelled_by_id_close_or_eviction() {
        let t = table(1, 60_000);
        let id = t.open("c", "2025-11-25");
        let a = CancelToken::new();
        let guard = t.track(&id, "1".into(), a.clone());
        assert!(!t.cancel(&id, "other", "1"));
        assert!(t.cancel(&id, "c", "1"));
        assert!(a.is_cancelled());
        drop(guard);
        assert!(!t.cancel(&id, "c", "1"), "finished requests are forgotten");

        let b = CancelToken::new();
        let _g = t.track(&id, "2".into(), b.clone());
        t.open("c", "2025-11-25"); // evicts `id` (cap 1)
        assert!(b.is_cancelled(), "eviction cancels the evicted session's calls");
    }

    #[tokio::test]
    async fn answers_reach_the_request_waiting_for_them_on_their_session() {
        let t = table(10, 60_000);
        let id = t.open("c", "2025-11-25");
        let (guard, rx) = t.expect_answer(&id, "q1".into()).unwrap();
        assert!(
            !t.answer(&id, "other", "q1", Ok(Value::Null)),
            "another caller's answer"
        );
        assert!(
            !t.answer(&id, "c", "q2", Ok(Value::Null)),
            "an id we did not send"
        );
        assert!(t.answer(&id, "c", "q1", Ok(serde_json::json!({"action": "decline"}))));
        assert_eq!(rx.await.unwrap(), Ok(serde_json::json!({"action": "decline"})));
        assert!(!t.answer(&id, "c", "q1", Ok(Value::Null)), "answered once");
        drop(guard);
        let (_guard, rx) = t.expect_answer(&id, "q3".into()).unwrap();
        assert!(t.close(&id, "c"));
        assert!(rx.await.is_err(), "closing the session drops the question");
        assert!(t.expect_answer("nope", "q".into()).is_none());
    }
}
