//! Stored chat sessions of the previous release read back:
//! `tests/fixtures/sessions/` holds an embedded (sled) data folder written by the
//! release before OAuth clients were recorded on sessions (`data/`: sessions of
//! three principals, one handed over, one deleted, messages with every part kind
//! the hub stores, issued approvals) and what that release read from it
//! (`expected.json`). The test opens a copy with this release's store and must
//! read the same, then keep writing to it.
//!
//! `WASMHUB_WRITE_SESSION_FIXTURE=<dir>` makes [`write_fixture`] write a new
//! folder there instead (it was run at 94b3ac8, with that release's store).

use super::{IssuedApproval, SaveOutcome, SaveRequest, SessionInfo, SessionStore};
use crate::agent::message::UiMessage;
use serde_json::{Value, json};
use std::sync::Arc;

const IDS: [&str; 5] = [
    "sess_plain",
    "sess_approval",
    "sess_handed",
    "sess_deleted",
    "sess_missing",
];

fn message(v: Value) -> UiMessage {
    serde_json::from_value(v).unwrap()
}

fn plain() -> Vec<UiMessage> {
    vec![
        message(json!({"id": "u1", "role": "user", "parts": [
            {"type": "text", "text": "What is 2+2, and how do I add fractions like 1/3 + 1/6 exactly?"}]})),
        message(json!({"id": "a1", "role": "assistant",
            "metadata": {"model": "scripted/m1", "usage": {"inputTokens": 120, "outputTokens": 30}},
            "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "Use calc.", "state": "done"},
                {"type": "tool-hub_call", "toolCallId": "tc1", "state": "output-available",
                 "input": {"tool": "calc.eval", "input": {"expression": "2+2"}},
                 "output": {"value": 4}},
                {"type": "step-start"},
                {"type": "text", "text": "2+2 = 4.", "state": "done"}]})),
    ]
}

fn approval() -> Vec<UiMessage> {
    vec![
        message(json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Delete x"}]})),
        message(json!({"id": "a1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "dynamic-tool", "toolName": "hub_call", "toolCallId": "tc9", "state": "approval-requested",
             "input": {"tool": "fs.delete", "input": {"path": "x"}},
             "approval": {"id": "apr_1", "requestReason": "fs.delete is destructive"}},
            {"type": "tool-hub_search", "toolCallId": "tc8", "state": "output-error",
             "input": {"query": "files"}, "errorText": "search failed"},
            {"type": "source-url", "sourceId": "s1", "url": "https://example.com/doc"},
            {"type": "data-note", "data": {"kept": true}}]})),
    ]
}

fn fresh(id: &str, principal: &str) -> SessionInfo {
    let mut info: SessionInfo = serde_json::from_value(json!({
        "id": id, "title": "", "createdAt": 1_700_000_000_000u64, "updatedAt": 1_700_000_000_000u64,
        "messageCount": 0, "version": 0, "storedBytes": 0}))
    .unwrap();
    info.principal = principal.into();
    info
}

async fn save(
    store: &Arc<dyn SessionStore>,
    info: &SessionInfo,
    head: &[UiMessage],
    from: usize,
) -> SessionInfo {
    let request = SaveRequest {
        info,
        head,
        tail: None,
        from,
        durable: true,
    };
    match store.save(request).await.unwrap() {
        SaveOutcome::Saved(info) => info,
        SaveOutcome::Conflict(c) => panic!("{c}"),
    }
}

/// What the store reads back, as JSON.
async fn reads(store: &Arc<dyn SessionStore>) -> Value {
    let mut loaded = serde_json::Map::new();
    for id in IDS {
        let session = store.load(id).await.unwrap();
        loaded.insert(id.into(), serde_json::to_value(session).unwrap());
    }
    let usage = |u: crate::hub::StoredUsage| json!({"sessions": u.sessions, "bytes": u.bytes});
    json!({
        "list": store.list(None).await.unwrap(),
        "list_alice": store.list(Some("alice")).await.unwrap(),
        "list_carol": store.list(Some("carol")).await.unwrap(),
        "info_plain": store.info("sess_plain").await.unwrap(),
        "loaded": loaded,
        "usage_alice": usage(store.stored_usage("alice").await.unwrap()),
        "usage_bob": usage(store.stored_usage("bob").await.unwrap()),
        "approval": store.issued_approval("sess_approval", "apr_1").await.unwrap(),
        "approval_elsewhere": store.issued_approval("sess_plain", "apr_1").await.unwrap(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_fixture() {
    let Some(out) = std::env::var_os("WASMHUB_WRITE_SESSION_FIXTURE") else {
        return;
    };
    let out = std::path::PathBuf::from(out);
    let storage = crate::storage::Storage::open(&out.join("data")).unwrap();
    let store = super::open_sled(&storage).unwrap();
    let messages = plain();
    let first = save(&store, &fresh("sess_plain", "alice"), &messages[..1], 0).await;
    save(&store, &first, &messages, 1).await;
    let asks = approval();
    let issued = IssuedApproval {
        id: "apr_1".into(),
        message_id: "a1".into(),
        tool_call_id: "tc9".into(),
        input_sha256: "9f2b".repeat(16),
        tools: vec!["fs.delete".into()],
        issued_ms: 1_700_000_000_500,
    };
    store.issue_approvals("sess_approval", &[issued]).await.unwrap();
    save(&store, &fresh("sess_approval", "bob"), &asks, 0).await;
    save(&store, &fresh("sess_handed", "local"), &messages[..1], 0).await;
    store.hand_over("sess_handed", "carol").await.unwrap().unwrap();
    save(&store, &fresh("sess_deleted", "alice"), &asks[..1], 0).await;
    assert!(store.delete("sess_deleted").await.unwrap());
    let expected = reads(&store).await;
    drop(store);
    storage.flush().unwrap();
    let text = serde_json::to_string_pretty(&expected).unwrap();
    std::fs::write(out.join("expected.json"), text + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_releases_sessions_read_back_and_take_new_saves() {
    let fixture = crate::test_dir::fixture("sessions");
    let dir = crate::test_dir::TempDir::new("stored_sessions");
    crate::test_dir::copy_tree(&fixture.join("data"), dir.path());
    let storage = crate::storage::Storage::open(dir.path()).unwrap();
    let store = super::open_sled(&storage).unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("expected.json")).unwrap()).unwrap();
    assert_eq!(reads(&store).await, expected);
    // What was written from, as this release builds it.
    let loaded = store.load("sess_plain").await.unwrap().unwrap();
    assert_eq!(loaded.messages, plain());
    assert_eq!(
        store.load("sess_approval").await.unwrap().unwrap().messages,
        approval()
    );
    assert_eq!(loaded.info.client, None);

    // An old session takes the next save as any other (its version goes on)...
    let mut next = plain();
    next.push(message(
        json!({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And 3+3?"}]}),
    ));
    let saved = save(&store, &loaded.info, &next, 2).await;
    assert_eq!((saved.version, saved.message_count), (3, 3));
    assert_eq!(store.load("sess_plain").await.unwrap().unwrap().messages, next);
    // ...and a new one sits beside the old ones, counted with them.
    save(&store, &fresh("sess_new", "alice"), &next[2..], 0).await;
    let alices: Vec<String> = store
        .list(Some("alice"))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(alices, ["sess_new", "sess_plain"]);
    assert_eq!(store.stored_usage("alice").await.unwrap().sessions, 2);
}
