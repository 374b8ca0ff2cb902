//! The audit store conformance suite: every [`AuditStore`] passes it. `a` and `b`
//! are two writers on one database (two replicas); a backend that allows one
//! process per database (the embedded backend) passes the same instance twice.

use super::AuditStore;
use crate::hub::audit::{CallOutcome, CallRecord};
use std::collections::HashSet;
use std::sync::Arc;

/// A successful call record (also the fixture of `audit::tests`).
pub(crate) fn record(id: String, started_ms: u64) -> CallRecord {
    CallRecord {
        agent: None,
        id,
        tool: "text.slugify".into(),
        caller: "local".into(),
        client: None,
        parent: None,
        started_ms,
        duration_us: 5,
        input_bytes: 10,
        output_bytes: 20,
        outcome: CallOutcome::Ok,
        input: None,
        approval: None,
    }
}

fn batch(prefix: &str, range: std::ops::Range<usize>) -> Vec<CallRecord> {
    range.map(|n| record(format!("{prefix}{n}"), 1_000)).collect()
}

async fn ids(store: &Arc<dyn AuditStore>, limit: usize) -> Vec<String> {
    let records = store.recent(limit, None).await.expect("recent");
    records.into_iter().map(|r| r.id).collect()
}

/// Runs every check, each on an emptied store.
pub(crate) async fn run(a: Arc<dyn AuditStore>, b: Arc<dyn AuditStore>) {
    recent_is_newest_first_across_writers(&a, &b).await;
    one_principals_records_are_read_alone(&a, &b).await;
    concurrent_appends_keep_exactly_one_record_each(&a, &b).await;
    trim_counts_every_writer(&a, &b).await;
}

async fn empty(a: &Arc<dyn AuditStore>) {
    a.trim(0, 0).await.expect("trim to empty");
    assert_eq!(ids(a, 10).await, Vec::<String>::new());
}

async fn recent_is_newest_first_across_writers(a: &Arc<dyn AuditStore>, b: &Arc<dyn AuditStore>) {
    empty(a).await;
    a.append(batch("a", 0..3)).await.unwrap();
    b.append(batch("b", 0..2)).await.unwrap();
    a.append(batch("a", 3..4)).await.unwrap();
    let newest = ["a3", "b1", "b0", "a2", "a1", "a0"];
    assert_eq!(ids(a, 100).await, newest);
    assert_eq!(ids(b, 100).await, newest, "the other writer reads the same log");
    assert_eq!(ids(b, 4).await, newest[..4], "a limit inside a batch");
    assert_eq!(ids(a, 0).await, Vec::<String>::new());
    a.append(Vec::new()).await.expect("an empty batch is no error");
    assert_eq!(ids(a, 100).await.len(), 6);
}

async fn one_principals_records_are_read_alone(a: &Arc<dyn AuditStore>, b: &Arc<dyn AuditStore>) {
    empty(a).await;
    let of = |id: &str, caller: &str| CallRecord {
        caller: caller.into(),
        ..record(id.into(), 1_000)
    };
    a.append(vec![of("a0", "alice"), of("b0", "bob"), of("a1", "alice")])
        .await
        .unwrap();
    b.append(vec![of("b1", "bob"), of("a2", "alice")]).await.unwrap();
    let of_principal = |store: &Arc<dyn AuditStore>, p: &str, limit| {
        let (store, p) = (store.clone(), p.to_string());
        async move {
            let records = store
                .recent(limit, Some(p))
                .await
                .expect("recent of one principal");
            records.into_iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(of_principal(a, "alice", 10).await, ["a2", "a1", "a0"]);
    assert_eq!(of_principal(b, "bob", 10).await, ["b1", "b0"]);
    assert_eq!(
        of_principal(a, "alice", 2).await,
        ["a2", "a1"],
        "the limit counts that principal's"
    );
    assert_eq!(of_principal(a, "nobody", 10).await, Vec::<String>::new());
}

async fn concurrent_appends_keep_exactly_one_record_each(a: &Arc<dyn AuditStore>, b: &Arc<dyn AuditStore>) {
    empty(a).await;
    const TASKS: usize = 8;
    const BATCHES: usize = 20;
    const PER_BATCH: usize = 3;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            for n in 0..BATCHES {
                let prefix = format!("w{t}_{n}_");
                store.append(batch(&prefix, 0..PER_BATCH)).await.expect("append");
            }
        }));
    }
    for t in tasks {
        t.await.expect("appender");
    }
    let all = ids(b, 10_000).await;
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), TASKS * BATCHES * PER_BATCH, "one record per append");
    assert_eq!(distinct.len(), all.len(), "no record twice");
    // Each writer's own batches come back in the order it appended them.
    for t in 0..TASKS {
        let own: Vec<&String> = all
            .iter()
            .filter(|id| id.starts_with(&format!("w{t}_")))
            .collect();
        let expected: Vec<String> = (0..BATCHES)
            .rev()
            .flat_map(|n| (0..PER_BATCH).rev().map(move |i| format!("w{t}_{n}_{i}")))
            .collect();
        assert_eq!(own, expected.iter().collect::<Vec<_>>(), "writer {t}");
    }
}

async fn trim_counts_every_writer(a: &Arc<dyn AuditStore>, b: &Arc<dyn AuditStore>) {
    empty(a).await;
    a.append(batch("a", 0..4)).await.unwrap();
    b.append(batch("b", 0..4)).await.unwrap();
    a.append(batch("c", 0..4)).await.unwrap();
    // 12 stored: within 10 + 5 nothing goes.
    b.trim(10, 5).await.unwrap();
    assert_eq!(ids(a, 100).await.len(), 12);
    // Past it: down to 10, oldest first, whoever wrote them (inside a batch too).
    b.trim(10, 0).await.unwrap();
    let kept = ids(a, 100).await;
    assert_eq!(kept.len(), 10, "{kept:?}");
    assert_eq!(&kept[8..], ["a3", "a2"]);
    a.trim(5, 0).await.unwrap();
    assert_eq!(ids(b, 100).await, ["c3", "c2", "c1", "c0", "b3"]);
    // Appends after a trim still come newest.
    b.append(batch("d", 0..1)).await.unwrap();
    assert_eq!(ids(a, 2).await, ["d0", "c3"]);
}
