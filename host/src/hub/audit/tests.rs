use super::unwritten::SUMMARY_TOOL;
use super::*;
use crate::hub::auth::Visible;
use crate::hub::error::ErrorCode;
use crate::storage::Storage;
use crate::storage::log::BlockKey;
use serde_json::json;
use store::LogAudit;

fn embedded(storage: &Storage) -> Arc<dyn AuditStore> {
    Arc::new(LogAudit::open(storage).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_store_passes_the_conformance_suite() {
    // One process per database: two stores over it (two hubs in one process, as
    // the e2e tests run) share one log.
    let storage = Storage::temporary().unwrap();
    store::conformance::run(embedded(&storage), embedded(&storage)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_store_on_disk_passes_the_conformance_suite() {
    // The temporary database above keeps its log in memory; this one in files.
    let dir = crate::test_dir::TempDir::new("audit-conformance");
    let storage = Storage::open(&dir).unwrap();
    store::conformance::run(embedded(&storage), embedded(&storage)).await;
}

fn record(n: u64) -> CallRecord {
    store::conformance::record(format!("call_{n}"), 1_000 + n)
}

#[test]
fn outcomes_keep_the_stored_shape() {
    let mut failed = record(1);
    failed.outcome = CallOutcome::Failed {
        code: ErrorCode::Timeout,
        message: "too slow".into(),
    };
    let stored = serde_json::to_value(&failed).unwrap();
    assert_eq!(
        (&stored["outcome"], &stored["error"]),
        (&json!("timeout"), &json!("too slow"))
    );
    let ok = serde_json::to_value(record(2)).unwrap();
    assert_eq!(ok["outcome"], "ok");
    assert!(ok.get("error").is_none(), "{ok}");
    // Records as earlier versions stored them decode unchanged.
    let old = json!({"id": "call_1", "tool": "a.b", "caller": "local", "started_ms": 1,
            "duration_us": 2, "input_bytes": 3, "output_bytes": 4, "outcome": "timeout", "error": "too slow"});
    let decoded: CallRecord = serde_json::from_value(old.clone()).unwrap();
    assert_eq!(decoded.outcome, failed.outcome);
    assert_eq!(serde_json::to_value(&decoded).unwrap(), old);
}

#[test]
fn a_full_record_is_stored_with_its_members_in_order() {
    let record = CallRecord {
        id: "call_1".into(),
        tool: "a.b".into(),
        caller: "alice".into(),
        client: Some("client_1".into()),
        parent: Some("call_0".into()),
        agent: Some("helper".into()),
        started_ms: 1,
        duration_us: 2,
        input_bytes: 3,
        output_bytes: 4,
        outcome: CallOutcome::Failed {
            code: ErrorCode::ApprovalDenied,
            message: "no".into(),
        },
        input: Some(json!({"x": 1})),
        approval: Some(crate::hub::approval::ApprovalRecord {
            policy: Some("ask".into()),
            id: None,
            decision: "denied".into(),
            by: Some("bob".into()),
            reason: None,
            decided_ms: 5,
        }),
    };
    let text = serde_json::to_string(&record).unwrap();
    assert_eq!(
        text,
        r#"{"id":"call_1","tool":"a.b","caller":"alice","client":"client_1","parent":"call_0","agent":"helper","started_ms":1,"duration_us":2,"input_bytes":3,"output_bytes":4,"outcome":"approval_denied","error":"no","input":{"x":1},"approval":{"policy":"ask","decision":"denied","by":"bob","decided_ms":5}}"#
    );
    let decoded: CallRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(decoded, record);
}

#[test]
fn redacts_sensitive_fields_at_any_depth() {
    let fields = vec!["password".to_string(), "api_key".to_string()];
    let v = redact(
        &json!({"user": "a", "Password": "x", "nested": [{"api_key": "k", "n": 1}]}),
        &fields,
    );
    assert_eq!(
        v,
        json!({"user": "a", "Password": "[redacted]", "nested": [{"api_key": "[redacted]", "n": 1}]})
    );
}

#[test]
fn records_come_back_newest_first_and_retention_is_bounded() {
    let storage = Storage::temporary().unwrap();
    let config = AuditConfig {
        retention: 20,
        redact_fields: vec!["secret".into()],
        ..AuditConfig::default()
    };
    let log = AuditLog::start(embedded(&storage), &config).unwrap();
    for n in 0..100 {
        log.record(record(n));
    }
    let recent = log.recent(5, &Visible::All).unwrap();
    assert_eq!(
        recent.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["call_99", "call_98", "call_97", "call_96", "call_95"]
    );
    // Trimmed back to the retention once past it by more than the slack.
    assert!(log.recent(1000, &Visible::All).unwrap().len() <= 22);
    assert_eq!(
        log.excerpt(&json!({"secret": "s", "a": 1})),
        json!({"secret": "[redacted]", "a": 1})
    );
    let long = log.excerpt(&json!({"text": "x".repeat(5000)}));
    assert!(long.as_str().unwrap().len() <= EXCERPT_BYTES + 4);
}

fn ids(records: &[CallRecord]) -> Vec<String> {
    records.iter().map(|r| r.id.clone()).collect()
}

#[test]
fn records_an_earlier_version_kept_in_sled_are_moved_to_the_log_once() {
    // Only a database on disk has an earlier version's tables to move.
    let dir = crate::test_dir::TempDir::new("audit-migrate");
    let storage = Storage::open(&dir).unwrap();
    let table = storage.table("calls").unwrap();
    // Oldest: one record per 16-byte key; then blocks under 20-byte keys.
    for n in 0..3u64 {
        let mut key = (1_000 + n).to_be_bytes().to_vec();
        key.extend_from_slice(&n.to_be_bytes());
        table.put(&key, &record(n)).unwrap();
    }
    for (number, range) in [(0, 3..5), (1, 5..8)] {
        let batch: Vec<CallRecord> = range.map(record).collect();
        let key = BlockKey {
            ms: 2_000,
            number,
            records: batch.len() as u32,
        };
        table.put(&key.encode(), &batch).unwrap();
    }
    drop(table);
    let config = AuditConfig {
        retention: 5,
        redact_fields: Vec::new(),
        ..AuditConfig::default()
    };
    let log = AuditLog::start(embedded(&storage), &config).unwrap();
    assert!(!storage.has_table("calls"), "the table is dropped once moved");
    let moved: Vec<String> = (0..8).rev().map(|n| format!("call_{n}")).collect();
    assert_eq!(ids(&log.recent(10, &Visible::All).unwrap()), moved);
    // Past retention plus slack: the oldest moved records go first.
    log.record(record(8));
    assert_eq!(
        ids(&log.recent(10, &Visible::All).unwrap()),
        ["call_8", "call_7", "call_6", "call_5", "call_4"]
    );
    drop(log);
    // Reopened: nothing is moved twice.
    let store = embedded(&storage);
    let again = crate::hub::records::Driver::new()
        .unwrap()
        .run(store.recent(10, None));
    assert_eq!(again.unwrap().len(), 5);
}

#[test]
fn records_the_writer_has_no_room_for_are_summarised_not_lost() {
    let storage = Storage::temporary().unwrap();
    let config = AuditConfig {
        queue: 1,
        ..AuditConfig::default()
    };
    let log = AuditLog::start(embedded(&storage), &config).unwrap();
    // The writer gathers for GATHER after the first record: a one-record queue
    // is full long before 200 records are sent.
    for n in 0..200 {
        log.record(record(n));
    }
    assert!(log.dropped() > 0, "nothing was dropped");
    // What GET /api/calls reads (Hub::calls).
    let recent = log.recent(1000, &Visible::All).unwrap();
    let summaries: Vec<&CallRecord> = recent.iter().filter(|r| r.tool == SUMMARY_TOOL).collect();
    let not_written: u64 = summaries
        .iter()
        .map(|r| r.input.as_ref().unwrap()["not_written"].as_u64().unwrap())
        .sum();
    assert_eq!(not_written, log.dropped());
    assert_eq!(recent.len() as u64 - summaries.len() as u64 + not_written, 200);
    let CallOutcome::Failed { message, .. } = &summaries[0].outcome else {
        panic!("{:?}", summaries[0])
    };
    let first = summaries[0].input.as_ref().unwrap()["first_call"]
        .as_str()
        .unwrap();
    assert!(
        message.contains(" records not written, calls call_") && message.contains(first),
        "{message}"
    );
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_postgres_store_passes_the_conformance_suite() {
        let pg = crate::storage::postgres::test_database().await;
        // Two stores on one database: two replicas (the second migration is a no-op).
        let a = Arc::new(store::postgres::PgAudit::open(pg.clone()).await.unwrap());
        let b = Arc::new(store::postgres::PgAudit::open(pg).await.unwrap());
        store::conformance::run(a, b).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_replica_reads_every_replicas_records_through_its_writer() {
        let pg = crate::storage::postgres::test_database().await;
        let config = AuditConfig {
            retention: 1000,
            ..AuditConfig::default()
        };
        let mut logs = Vec::new();
        for _ in 0..2 {
            let store = Arc::new(store::postgres::PgAudit::open(pg.clone()).await.unwrap());
            logs.push(Arc::new(AuditLog::start(store, &config).unwrap()));
        }
        let (a, b) = (logs[0].clone(), logs[1].clone());
        let read = tokio::task::spawn_blocking(move || {
            for n in 0..40 {
                a.record(record(n));
                b.record(record(100 + n));
            }
            // Each reads after its own queue is stored; the other's may still be
            // queued, so read both, then each again.
            a.recent(1000, &Visible::All).unwrap();
            b.recent(1000, &Visible::All).unwrap();
            (
                a.recent(1000, &Visible::All).unwrap(),
                b.recent(1000, &Visible::All).unwrap(),
            )
        });
        let (from_a, from_b) = read.await.unwrap();
        assert_eq!(ids(&from_a), ids(&from_b));
        let mut all = ids(&from_a);
        all.sort();
        let mut expected: Vec<String> = (0..40).chain(100..140).map(|n| format!("call_{n}")).collect();
        expected.sort();
        assert_eq!(all, expected, "one record per call, from both replicas");
    }
}
