use super::*;
use crate::agent::store::conformance::{self, fresh, user};

fn store() -> (Storage, Arc<dyn SessionStore>) {
    let storage = Storage::temporary().unwrap();
    let store = Arc::new(SledSessions::open(&storage).unwrap());
    (storage, store)
}

#[tokio::test]
async fn conformance_save_load_list_delete() {
    conformance::save_load_list_delete(store().1).await;
}

#[tokio::test]
async fn conformance_compare_and_swap_between_two_stores() {
    let (storage, a) = store();
    let b = Arc::new(SledSessions::open(&storage).unwrap());
    conformance::saves_are_compare_and_swap(a, b).await;
}

// One process owns a sled database, so its two "replicas" are one store.
#[tokio::test]
async fn conformance_leases() {
    let (_storage, a) = store();
    conformance::leases(a.clone(), a).await;
}

#[tokio::test]
async fn the_key_layout_is_kept() {
    let (storage, s) = store();
    let info = s
        .save(SaveRequest {
            info: &fresh("k"),
            head: &[user("u1", "x")],
            tail: None,
            from: 0,
            durable: false,
        })
        .await
        .unwrap();
    assert!(matches!(info, SaveOutcome::Saved(_)));
    s.issue_approvals(
        "k",
        &[IssuedApproval {
            id: "apr_1".into(),
            message_id: "m".into(),
            tool_call_id: "c".into(),
            input_sha256: "00".into(),
            tools: vec![],
            issued_ms: 1,
        }],
    )
    .await
    .unwrap();
    let keys: Vec<String> = storage
        .table(TABLE)
        .unwrap()
        .keys()
        .unwrap()
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect();
    assert_eq!(keys, ["a/k/apr_1", "m/k/000000", "s/k"]);
}

#[tokio::test]
async fn records_stored_before_versions_read_as_version_0() {
    let (storage, s) = store();
    let table = storage.table(TABLE).unwrap();
    // A record as older hubs wrote it: no "version".
    let old =
        serde_json::json!({"id": "old", "title": "t", "createdAt": 1, "updatedAt": 2, "messageCount": 1});
    table.put(b"s/old", &old).unwrap();
    table.put(b"m/old/000000", &user("u1", "hi")).unwrap();
    let loaded = s.load("old").await.unwrap().unwrap();
    assert_eq!((loaded.info.version, loaded.messages.len()), (0, 1));
    // Stored before sessions had owners: the local operator's, size unknown.
    assert_eq!(
        (loaded.info.principal.as_str(), loaded.info.stored_bytes),
        ("local", 0)
    );
    assert_eq!(s.list(Some("local")).await.unwrap().len(), 1);
    let next = s
        .save(SaveRequest {
            info: &loaded.info,
            head: &loaded.messages,
            tail: None,
            from: 1,
            durable: true,
        })
        .await
        .unwrap();
    let SaveOutcome::Saved(next) = next else {
        panic!("{next:?}")
    };
    assert_eq!(next.version, 1);
    assert_eq!(next.principal, "local");
    assert!(next.stored_bytes > 0, "measured from its next save on");
}

#[tokio::test]
async fn conformance_principals_own_their_sessions() {
    let (storage, a) = store();
    let b = Arc::new(SledSessions::open(&storage).unwrap());
    conformance::principals_own_their_sessions(a, b).await;
}

#[tokio::test]
async fn a_record_claiming_more_messages_than_stored_is_reported() {
    let (storage, s) = store();
    let mut i = fresh("x");
    i.message_count = 3;
    storage.table(TABLE).unwrap().put(&info_key("x"), &i).unwrap();
    let err = s.load("x").await.unwrap_err().to_string();
    assert!(err.contains("records 3 messages"), "{err}");
}

#[test]
fn long_titles_are_cut() {
    let t = crate::agent::store::title_of(&[user("u", &"word ".repeat(40))]);
    assert_eq!(t.chars().count(), 81);
    assert!(t.ends_with('…'));
}
