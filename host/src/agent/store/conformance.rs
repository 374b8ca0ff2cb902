//! The conformance suite every [`SessionStore`] passes, run on sled and (with
//! the `postgres` feature) on PostgreSQL. `a` and `b` are two stores on one
//! database: two replicas.

use super::{IssuedApproval, Lease, SaveOutcome, SaveRequest, SessionInfo, SessionStore};
use crate::agent::message::{Part, Role, UiMessage};
use std::sync::Arc;
use std::time::Duration;

type Store = Arc<dyn SessionStore>;

pub(crate) fn user(id: &str, text: &str) -> UiMessage {
    let mut m = UiMessage::new(id.into(), Role::User);
    m.parts.push(Part::Text {
        text: text.into(),
        state: None,
    });
    m
}

pub(crate) fn fresh(id: &str) -> SessionInfo {
    SessionInfo {
        id: id.into(),
        title: String::new(),
        created_at: 1,
        updated_at: 1,
        message_count: 0,
        model: None,
        version: 0,
        principal: crate::config::LOCAL_PRINCIPAL.into(),
        client: None,
        stored_bytes: 0,
    }
}

fn owned(id: &str, principal: &str) -> SessionInfo {
    SessionInfo {
        principal: principal.into(),
        ..fresh(id)
    }
}

async fn save(
    store: &Store,
    info: &SessionInfo,
    head: &[UiMessage],
    tail: Option<&UiMessage>,
    from: usize,
) -> SaveOutcome {
    let req = SaveRequest {
        info,
        head,
        tail,
        from,
        durable: true,
    };
    store.save(req).await.expect("save")
}

async fn saved(store: &Store, info: &SessionInfo, head: &[UiMessage], from: usize) -> SessionInfo {
    match save(store, info, head, None, from).await {
        SaveOutcome::Saved(info) => info,
        SaveOutcome::Conflict(c) => panic!("unexpected conflict: {c}"),
    }
}

/// Saves, loads, truncates, lists (newest first) and deletes, with approvals.
pub(crate) async fn save_load_list_delete(a: Store) {
    let msgs = vec![
        user("u1", "first   question\nhere"),
        user("u2", "b"),
        user("u3", "c"),
    ];
    let first = match save(&a, &fresh("chat-a"), &msgs[..2], Some(&msgs[2]), 0).await {
        SaveOutcome::Saved(info) => info,
        other => panic!("{other:?}"),
    };
    assert_eq!((first.version, first.message_count), (1, 3));
    let other = saved(&a, &fresh("chat-ab"), &msgs[..1], 0).await;
    let loaded = a.load("chat-a").await.unwrap().unwrap();
    assert_eq!(loaded.messages, msgs);
    assert_eq!(loaded.info.title, "first question here");
    assert_eq!(a.info("chat-a").await.unwrap(), Some(first.clone()));
    // Truncate to two and rewrite only the last.
    let mut shorter = msgs[..2].to_vec();
    shorter[1] = user("u2", "edited");
    let second = saved(&a, &loaded.info, &shorter, 1).await;
    assert_eq!(second.version, 2);
    let loaded = a.load("chat-a").await.unwrap().unwrap();
    assert_eq!(loaded.messages, shorter);
    assert_eq!(loaded.info.message_count, 2);
    // Growing again after a truncation does not bring back the removed message.
    let grown = saved(&a, &loaded.info, &shorter, 2).await;
    assert_eq!(a.load("chat-a").await.unwrap().unwrap().messages, shorter);
    // The other session with a prefix-sharing id is untouched; newest first.
    assert_eq!(a.load("chat-ab").await.unwrap().unwrap().messages.len(), 1);
    let list = a.list(None).await.unwrap();
    assert_eq!(
        list.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["chat-a", "chat-ab"]
    );
    assert!(grown.updated_at >= other.updated_at);
    while crate::clock::now_ms() <= grown.updated_at {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let later = saved(&a, &other, &msgs[..1], 1).await;
    let list = a.list(None).await.unwrap();
    assert_eq!(list[0], later, "the session saved last comes first");
    let issued = IssuedApproval {
        id: "apr_1".into(),
        message_id: "a1".into(),
        tool_call_id: "c1".into(),
        input_sha256: "00".into(),
        tools: vec!["x.wipe".into()],
        issued_ms: 1,
    };
    a.issue_approvals("chat-a", std::slice::from_ref(&issued))
        .await
        .unwrap();
    assert_eq!(a.issued_approval("chat-a", "apr_1").await.unwrap(), Some(issued));
    assert_eq!(a.issued_approval("chat-ab", "apr_1").await.unwrap(), None);
    assert_eq!(
        a.issued_approval("chat-a", "../chat-a/apr_1").await.unwrap(),
        None
    );
    // Delete removes everything of that session and nothing else.
    assert!(a.delete("chat-a").await.unwrap());
    assert!(!a.delete("chat-a").await.unwrap());
    assert_eq!(a.issued_approval("chat-a", "apr_1").await.unwrap(), None);
    assert!(a.load("chat-a").await.unwrap().is_none());
    assert!(a.info("chat-a").await.unwrap().is_none());
    assert_eq!(a.list(None).await.unwrap().len(), 1);
    assert_eq!(a.load("chat-ab").await.unwrap().unwrap().messages.len(), 1);
    // A session created again under a deleted id starts empty, at version 1.
    let again = saved(&a, &fresh("chat-a"), &msgs[2..], 0).await;
    assert_eq!((again.version, again.message_count), (1, 1));
    assert_eq!(a.load("chat-a").await.unwrap().unwrap().messages, msgs[2..]);
}

/// Each session keeps the principal that created it through every save; a
/// principal's listing and stored sums count only its own; a hand-over moves one
/// session (a new version) and is seen by the other replica.
pub(crate) async fn principals_own_their_sessions(a: Store, b: Store) {
    let msgs = [user("u1", "alice's question"), user("u2", "and more")];
    let alice = saved(&a, &owned("own-1", "alice"), &msgs[..1], 0).await;
    let alice = saved(&a, &alice, &msgs, 1).await;
    assert_eq!(alice.principal, "alice", "a save keeps the owner");
    let bytes: u64 = msgs
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap().len() as u64)
        .sum();
    assert_eq!(
        alice.stored_bytes, bytes,
        "the whole history's JSON, not only what this save wrote"
    );
    saved(&b, &owned("own-2", "bob"), &msgs[..1], 0).await;
    saved(&b, &owned("own-3", "alice"), &msgs[..1], 0).await;
    let ids = |list: Vec<SessionInfo>| list.into_iter().map(|s| s.id).collect::<Vec<_>>();
    let mut of_alice = ids(b.list(Some("alice")).await.unwrap());
    of_alice.sort();
    assert_eq!(of_alice, ["own-1", "own-3"]);
    assert_eq!(ids(a.list(Some("bob")).await.unwrap()), ["own-2"]);
    assert!(a.list(Some("nobody")).await.unwrap().is_empty());
    let one = serde_json::to_vec(&msgs[0]).unwrap().len() as u64;
    let usage = b.stored_usage("alice").await.unwrap();
    assert_eq!((usage.sessions, usage.bytes), (2, bytes + one));
    let bob = a.stored_usage("bob").await.unwrap();
    assert_eq!((bob.sessions, bob.bytes), (1, one));
    // The hand-over: alice's first session goes to bob.
    let given = a
        .hand_over("own-1", "bob")
        .await
        .unwrap()
        .expect("the session exists");
    assert_eq!(
        (given.principal.as_str(), given.version),
        ("bob", alice.version + 1)
    );
    assert_eq!(b.info("own-1").await.unwrap().unwrap().principal, "bob");
    assert_eq!(
        b.load("own-1").await.unwrap().unwrap().messages,
        msgs,
        "the messages stay"
    );
    assert_eq!(a.stored_usage("bob").await.unwrap().sessions, 2);
    assert_eq!(a.stored_usage("alice").await.unwrap().sessions, 1);
    // The new owner's next save goes on from the new version.
    let after = saved(&b, &given, &msgs, 2).await;
    assert_eq!(after.principal, "bob");
    assert!(a.hand_over("own-none", "bob").await.unwrap().is_none());
    for id in ["own-1", "own-2", "own-3"] {
        assert!(a.delete(id).await.unwrap());
    }
    assert_eq!(b.stored_usage("bob").await.unwrap(), Default::default());
}

/// Saves are a compare-and-swap on the version, across two stores.
pub(crate) async fn saves_are_compare_and_swap(a: Store, b: Store) {
    let msgs = vec![user("u1", "hello"), user("u2", "again")];
    let v1 = saved(&a, &fresh("cas"), &msgs[..1], 0).await;
    let seen_by_b = b.load("cas").await.unwrap().unwrap().info;
    assert_eq!(seen_by_b, v1);
    let v2 = saved(&b, &seen_by_b, &msgs, 1).await;
    assert_eq!(v2.version, 2);
    // `a` still holds version 1: its save is refused and changes nothing.
    match save(&a, &v1, &msgs[..1], Some(&user("u9", "lost")), 1).await {
        SaveOutcome::Conflict(c) => {
            assert_eq!((c.session_id.as_str(), c.expected, c.found), ("cas", 1, Some(2)));
            assert!(c.to_string().contains("lost its lease"), "{c}");
        }
        other => panic!("a stale save was not refused: {other:?}"),
    }
    let stored = a.load("cas").await.unwrap().unwrap();
    assert_eq!((stored.info.clone(), stored.messages), (v2.clone(), msgs.clone()));
    // A session created by both at once: exactly one creation wins.
    let new = fresh("race");
    let (x, y) = tokio::join!(
        save(&a, &new, &msgs[..1], None, 0),
        save(&b, &new, &msgs, None, 0)
    );
    let wins = [&x, &y]
        .iter()
        .filter(|o| matches!(o, SaveOutcome::Saved(_)))
        .count();
    assert_eq!(wins, 1, "{x:?} / {y:?}");
    // Many writers holding the same version: one succeeds.
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let info = v2.clone();
        let msgs = msgs.clone();
        tasks.push(tokio::spawn(async move {
            let extra = user(&format!("w{i}"), "writer");
            let req = SaveRequest {
                info: &info,
                head: &msgs,
                tail: Some(&extra),
                from: 2,
                durable: false,
            };
            store.save(req).await.expect("save")
        }));
    }
    let mut wins = 0;
    for t in tasks {
        wins += usize::from(matches!(t.await.unwrap(), SaveOutcome::Saved(_)));
    }
    assert_eq!(wins, 1);
    let stored = b.load("cas").await.unwrap().unwrap();
    assert_eq!((stored.info.version, stored.messages.len()), (3, 3));
    // Deleted under a writer: its save conflicts with "no record".
    assert!(b.delete("cas").await.unwrap());
    match save(&a, &stored.info, &msgs, None, 0).await {
        SaveOutcome::Conflict(c) => assert_eq!(c.found, None),
        other => panic!("{other:?}"),
    }
}

/// Leases between two owners on two stores: held, renewed, released, expired.
pub(crate) async fn leases(a: Store, b: Store) {
    let long = Duration::from_secs(60);
    assert!(matches!(
        a.acquire("s", "r1", long).await.unwrap(),
        Lease::Acquired { .. }
    ));
    match b.acquire("s", "r2", long).await.unwrap() {
        Lease::HeldBy { owner, expires_ms } => {
            assert_eq!(owner, "r1");
            assert!(expires_ms > crate::clock::now_ms());
        }
        other => panic!("a held lease was given away: {other:?}"),
    }
    // Not re-entrant: the holder cannot start a second turn either.
    assert!(matches!(
        a.acquire("s", "r1", long).await.unwrap(),
        Lease::HeldBy { .. }
    ));
    assert_eq!(b.leased().await.unwrap().into_iter().collect::<Vec<_>>(), ["s"]);
    assert!(!b.renew("s", "r2", long).await.unwrap());
    assert!(a.renew("s", "r1", long).await.unwrap());
    b.release("s", "r2").await.unwrap();
    assert!(matches!(
        b.acquire("s", "r2", long).await.unwrap(),
        Lease::HeldBy { .. }
    ));
    a.release("s", "r1").await.unwrap();
    assert!(b.leased().await.unwrap().is_empty());
    assert!(matches!(
        b.acquire("s", "r2", long).await.unwrap(),
        Lease::Acquired { .. }
    ));
    b.release("s", "r2").await.unwrap();
    // A lease that is not renewed lapses and another owner takes it.
    let short = Duration::from_millis(300);
    assert!(matches!(
        a.acquire("t", "r1", short).await.unwrap(),
        Lease::Acquired { .. }
    ));
    assert!(matches!(
        b.acquire("t", "r2", long).await.unwrap(),
        Lease::HeldBy { .. }
    ));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match b.acquire("t", "r2", long).await.unwrap() {
            Lease::Acquired { .. } => break,
            Lease::HeldBy { owner, .. } => assert_eq!(owner, "r1"),
        }
        assert!(std::time::Instant::now() < deadline, "the lease never lapsed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The old holder learns it lost the lease, and cannot release the new one.
    assert!(!a.renew("t", "r1", long).await.unwrap());
    a.release("t", "r1").await.unwrap();
    assert!(matches!(
        a.acquire("t", "r1", long).await.unwrap(),
        Lease::HeldBy { .. }
    ));
    // Leases are per session.
    assert!(matches!(
        a.acquire("u", "r1", long).await.unwrap(),
        Lease::Acquired { .. }
    ));
    let mut leased: Vec<String> = a.leased().await.unwrap().into_iter().collect();
    leased.sort();
    assert_eq!(leased, ["t", "u"]);
}
