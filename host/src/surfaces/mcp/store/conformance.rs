//! The MCP session store conformance suite: every [`McpSessionStore`] passes it.
//! `open(limits)` answers two stores with those limits on one fresh database (two
//! replicas); a backend whose sessions live in one process passes the same
//! instance twice.

use super::SessionLimits;
use super::{McpSessionStore, StoredSession};
use crate::surfaces::mcp::approval::McpClient;
use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

type Pair = (Arc<dyn McpSessionStore>, Arc<dyn McpSessionStore>);

fn session(caller: &str) -> StoredSession {
    StoredSession {
        caller: caller.into(),
        version: "2025-06-18",
        client: McpClient {
            name: "inspector".into(),
            elicitation: true,
        },
    }
}

fn limits(max_sessions: usize, idle_ms: u64) -> SessionLimits {
    SessionLimits {
        max_sessions,
        idle_ttl: Duration::from_millis(idle_ms),
    }
}

/// Runs every check, each on stores from `open`.
pub(crate) async fn run<F, Fut>(open: F)
where
    F: Fn(SessionLimits) -> Fut,
    Fut: Future<Output = Pair>,
{
    sessions_are_seen_by_every_replica_and_belong_to_their_caller(open(limits(100, 600_000)).await).await;
    the_least_recently_used_session_is_evicted_at_the_bound(open(limits(3, 600_000)).await).await;
    concurrent_opens_stay_within_the_bound(open(limits(5, 600_000)).await).await;
    idle_sessions_expire(open(limits(100, 1_000)).await).await;
}

async fn sessions_are_seen_by_every_replica_and_belong_to_their_caller((a, b): Pair) {
    assert_eq!(
        a.open("mcp_1", session("alice")).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(b.touch("mcp_1", "alice").await.unwrap(), Some(session("alice")));
    assert_eq!(b.touch("mcp_1", "bob").await.unwrap(), None, "another caller's");
    assert_eq!(a.touch("mcp_2", "alice").await.unwrap(), None, "unknown");
    assert!(!b.close("mcp_1", "bob").await.unwrap());
    assert!(
        b.close("mcp_1", "alice").await.unwrap(),
        "closed on the other replica"
    );
    assert_eq!(a.touch("mcp_1", "alice").await.unwrap(), None);
    assert!(!a.close("mcp_1", "alice").await.unwrap());
    let key = a.state_key().await.unwrap();
    assert!(key.len() >= 32, "{} bytes", key.len());
    assert_eq!(
        b.state_key().await.unwrap(),
        key,
        "one requestState key for every replica"
    );
    assert_eq!(a.state_key().await.unwrap(), key, "and it stays");
}

async fn the_least_recently_used_session_is_evicted_at_the_bound((a, b): Pair) {
    for (n, store) in [(1, &a), (2, &b), (3, &a)] {
        assert_eq!(
            store.open(&format!("mcp_{n}"), session("c")).await.unwrap(),
            Vec::<String>::new()
        );
    }
    // mcp_1 is used again (on the other replica): mcp_2 is now the least recent.
    assert!(b.touch("mcp_1", "c").await.unwrap().is_some());
    assert_eq!(b.open("mcp_4", session("c")).await.unwrap(), ["mcp_2"]);
    assert!(a.touch("mcp_2", "c").await.unwrap().is_none());
    for n in [1, 3, 4] {
        assert!(
            a.touch(&format!("mcp_{n}"), "c").await.unwrap().is_some(),
            "mcp_{n}"
        );
    }
}

async fn concurrent_opens_stay_within_the_bound((a, b): Pair) {
    let mut tasks = Vec::new();
    for n in 0..24 {
        let store = if n % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            store.open(&format!("mcp_{n}"), session("c")).await.expect("open")
        }));
    }
    let mut removed = Vec::new();
    for t in tasks {
        removed.extend(t.await.expect("opener"));
    }
    let mut live = Vec::new();
    for n in 0..24 {
        let id = format!("mcp_{n}");
        if a.touch(&id, "c").await.unwrap().is_some() {
            live.push(id);
        }
    }
    assert!(!live.is_empty() && live.len() <= 5, "live: {live:?}");
    // Every session is either live or was evicted, by exactly one open.
    let evicted: HashSet<&String> = removed.iter().collect();
    assert_eq!(evicted.len(), removed.len(), "evicted twice: {removed:?}");
    assert!(live.iter().all(|id| !evicted.contains(id)));
    assert_eq!(live.len() + removed.len(), 24);
}

async fn idle_sessions_expire((a, b): Pair) {
    a.open("mcp_idle", session("c")).await.unwrap();
    a.open("mcp_used", session("c")).await.unwrap();
    // The idle TTL is 1 s: use one session every 0.6 s, the other not at all.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(
            b.touch("mcp_used", "c").await.unwrap().is_some(),
            "used within its TTL"
        );
    }
    assert_eq!(a.touch("mcp_idle", "c").await.unwrap(), None, "idle past its TTL");
    assert_eq!(b.touch("mcp_idle", "c").await.unwrap(), None, "and gone");
    // Opening a session sweeps the expired ones.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(b.open("mcp_new", session("c")).await.unwrap(), ["mcp_used"]);
}
