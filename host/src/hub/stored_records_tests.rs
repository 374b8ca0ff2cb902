//! Stored records of the previous release read back: `tests/fixtures/records/`
//! holds a data folder written by the release before the record pipeline
//! (`data/`: the record logs `calls` and `accounting` and the sled table
//! `accounting_sessions`) and what that release read from it (`expected.json`:
//! `GET /api/calls`, `GET /api/accounting` and the session sums). The test opens
//! a copy with this release's stores and must read the same.
//!
//! `WASMHUB_WRITE_RECORD_FIXTURE=<dir>` makes [`write_fixture`] write a new
//! folder there instead (it was run at the commit that added this file, with
//! the writers of that release).

use super::accounting::{
    self, AccountingRecord, ContextGuard, Entry, GuardOutcome, GuardTrigger, ModelStep, Since, ToolCall,
};
use super::approval::ApprovalRecord;
use super::audit::{self, CallOutcome, CallRecord};
use super::auth::Visible;
use super::error::ErrorCode;
use crate::config::{AccountingConfig, AuditConfig};
use crate::storage::{Backend, Storage};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The sessions whose sums the fixture keeps.
const SESSIONS: [&str; 3] = ["sess_a", "sess_b", "sess_none"];

fn fixture_dir() -> PathBuf {
    crate::test_dir::fixture("records")
}

fn call_records() -> Vec<CallRecord> {
    let ok = CallRecord {
        agent: None,
        id: "call_ok".into(),
        tool: "calc.eval".into(),
        caller: "local".into(),
        client: None,
        parent: None,
        started_ms: 1_700_000_000_000,
        duration_us: 1234,
        input_bytes: 17,
        output_bytes: 9,
        outcome: CallOutcome::Ok,
        input: Some(json!({"expr": "1+2", "token": "[redacted]"})),
        approval: None,
    };
    let nested = CallRecord {
        agent: None,
        id: "call_nested".into(),
        tool: "text.upper".into(),
        caller: "alice".into(),
        client: None,
        parent: Some("call_ok".into()),
        started_ms: 1_700_000_000_100,
        duration_us: 77,
        input_bytes: 3,
        output_bytes: 0,
        outcome: CallOutcome::Failed {
            code: ErrorCode::Timeout,
            message: "text.upper: ran past its deadline".into(),
        },
        input: None,
        approval: None,
    };
    let approved = CallRecord {
        agent: None,
        id: "call_approved".into(),
        tool: "fs.write".into(),
        caller: "bob".into(),
        client: None,
        parent: None,
        started_ms: 1_700_000_000_200,
        duration_us: 5_000_000,
        input_bytes: 40,
        output_bytes: 2,
        outcome: CallOutcome::Ok,
        input: Some(Value::String("{\"path\":\"x\"…".into())),
        approval: Some(ApprovalRecord {
            policy: Some("fs.*".into()),
            id: Some("appr_1".into()),
            decision: "approved".into(),
            by: Some("admin".into()),
            reason: Some("looks fine".into()),
            decided_ms: 1_700_000_004_000,
        }),
    };
    let summary = CallRecord {
        agent: None,
        id: "audit_gap".into(),
        tool: "hub.audit".into(),
        caller: "hub".into(),
        client: None,
        parent: None,
        started_ms: 1_700_000_000_300,
        duration_us: 2_000,
        input_bytes: 0,
        output_bytes: 0,
        outcome: CallOutcome::Failed {
            code: ErrorCode::CallLimit,
            message: "2 records not written, calls call_x..call_y".into(),
        },
        input: Some(json!({"not_written": 2, "first_call": "call_x", "last_call": "call_y"})),
        approval: None,
    };
    vec![ok, nested, approved, summary]
}

fn accounting_records() -> Vec<AccountingRecord> {
    let record = |time_ms, session: Option<&str>, caller: &str, entry| AccountingRecord {
        agent: None,
        id: 0,
        time_ms,
        session: session.map(str::to_string),
        caller: caller.into(),
        client: None,
        entry,
    };
    let step = ModelStep {
        message: Some("msg_1".into()),
        step: 0,
        provider: "openai".into(),
        model: "gpt-4o".into(),
        input_tokens: Some(1200),
        output_tokens: Some(80),
        cached_input_tokens: Some(1000),
        reasoning_tokens: None,
        latency_ms: 950,
        cost: Some(0.0042),
        tokenizer: None,
    };
    let bare_step = ModelStep {
        message: None,
        step: 0,
        provider: "local".into(),
        model: "llama".into(),
        input_tokens: None,
        output_tokens: None,
        cached_input_tokens: None,
        reasoning_tokens: None,
        latency_ms: 12,
        cost: None,
        tokenizer: None,
    };
    let call = ToolCall {
        call_id: "call_ok".into(),
        parent: Some("call_parent".into()),
        tool: "calc.eval".into(),
        latency_us: 1234,
        input_bytes: 17,
        output_bytes: 9,
        outcome: "timeout".into(),
    };
    let guard = ContextGuard {
        message: Some("msg_1".into()),
        step: 1,
        provider: "openai".into(),
        model: "gpt-4o".into(),
        trigger: GuardTrigger::ToolResult,
        outcome: GuardOutcome::Replaced,
        projected_tokens: 130_000,
        limit_tokens: 120_000,
        remaining_tokens: 4_000,
        tokenizer: "estimate".into(),
    };
    vec![
        record(
            1_700_000_000_000,
            Some("sess_a"),
            "alice",
            Entry::ModelStep(step.clone()),
        ),
        record(1_700_000_000_010, Some("sess_a"), "alice", Entry::ToolCall(call)),
        record(
            1_700_000_000_020,
            Some("sess_a"),
            "alice",
            Entry::ContextGuard(guard),
        ),
        record(1_700_000_000_030, Some("sess_b"), "bob", Entry::ModelStep(step)),
        record(1_700_000_000_040, None, "bob", Entry::ModelStep(bare_step)),
    ]
}

/// The audit log and accounting over `storage`, with the default settings.
async fn writers(storage: &Storage) -> (audit::AuditLog, accounting::Accounting) {
    let backend = Backend::Embedded(storage.clone());
    let audit_store = audit::store::open(&backend).await.unwrap();
    let accounting_store = accounting::store::open(&backend).await.unwrap();
    (
        audit::AuditLog::start(audit_store, &AuditConfig::default()).unwrap(),
        accounting::Accounting::start(accounting_store, &AccountingConfig::default()).unwrap(),
    )
}

/// What the stores over `storage` read: the calls, the accounting records, the
/// sums of [`SESSIONS`].
async fn read_back(storage: &Storage) -> Value {
    let (audit, accounting) = writers(storage).await;
    tokio::task::spawn_blocking(move || {
        json!({
            "calls": audit.recent(100, &Visible::All).unwrap(),
            "calls_of_alice": audit.recent(100, &Visible::Only("alice".into())).unwrap(),
            "accounting": accounting.page(Since::Start, 100, &Visible::All).unwrap(),
            "accounting_after_2": accounting.page(Since::Id(2), 100, &Visible::Only("bob".into())).unwrap(),
            "sessions": accounting.session_usage(SESSIONS).unwrap(),
        })
    })
    .await
    .unwrap()
}

/// Writes the fixture with this release's writers, into
/// `$WASMHUB_WRITE_RECORD_FIXTURE` (a no-op without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_fixture() {
    let Some(out) = std::env::var_os("WASMHUB_WRITE_RECORD_FIXTURE") else {
        return;
    };
    let out = PathBuf::from(out);
    let storage = Storage::open(&out.join("data")).unwrap();
    {
        let (audit, accounting) = writers(&storage).await;
        for record in call_records() {
            audit.record(record);
        }
        for record in accounting_records() {
            accounting.record(record);
        }
        // Dropped on a blocking thread: they wait for their writers.
        tokio::task::spawn_blocking(move || drop((audit, accounting)))
            .await
            .unwrap();
    }
    let expected = read_back(&storage).await;
    storage.flush().unwrap();
    let text = serde_json::to_string_pretty(&expected).unwrap();
    std::fs::write(out.join("expected.json"), text + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_releases_records_read_back() {
    let fixture = fixture_dir();
    let dir = crate::test_dir::TempDir::new("stored_records");
    crate::test_dir::copy_tree(&fixture.join("data"), dir.path());
    let storage = Storage::open(dir.path()).unwrap();
    let mut read = read_back(&storage).await;
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("expected.json")).unwrap()).unwrap();
    // Fields added since that release read back with their documented defaults: a
    // context guard's `tokenizer` is `estimate` (the only counter then).
    let mut guards = 0;
    for record in read["accounting"]["records"].as_array_mut().unwrap() {
        if record["kind"] == "context_guard" {
            let obj = record.as_object_mut().unwrap();
            assert_eq!(obj.remove("tokenizer"), Some(Value::from("estimate")));
            guards += 1;
        }
    }
    assert_eq!(guards, 1, "the fixture holds one context guard record");
    assert_eq!(read, expected);
    // The records the fixture was written from, as this release builds them.
    assert_eq!(read["calls"].as_array().unwrap().len(), call_records().len());
    assert_eq!(
        read["accounting"]["records"].as_array().unwrap().len(),
        accounting_records().len()
    );
}
