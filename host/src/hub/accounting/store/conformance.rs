//! The accounting store conformance suite: every [`AccountingStore`] passes it. `a`
//! and `b` are two writers on one database (two replicas); a backend that allows
//! one process per database (the embedded backend) passes the same instance twice.

use super::AccountingStore;
use crate::hub::accounting::{AccountingRecord, Entry, ModelStep, SessionUsage, Since, ToolCall};
use std::collections::HashSet;
use std::sync::Arc;

/// A tool-call record (also the fixture of `accounting::tests`).
pub(crate) fn call(session: Option<&str>, n: u64, time_ms: u64) -> AccountingRecord {
    AccountingRecord {
        agent: None,
        id: 0,
        time_ms,
        session: session.map(str::to_string),
        caller: "local".into(),
        client: None,
        entry: Entry::ToolCall(ToolCall {
            call_id: format!("call_{n}"),
            parent: None,
            tool: "calc.eval".into(),
            latency_us: 10,
            input_bytes: 5,
            output_bytes: 7,
            outcome: "ok".into(),
        }),
    }
}

fn step(session: &str, tokens: u64, cost: Option<f64>) -> AccountingRecord {
    AccountingRecord {
        agent: None,
        id: 0,
        time_ms: 1,
        session: Some(session.into()),
        caller: "local".into(),
        client: None,
        entry: Entry::ModelStep(ModelStep {
            message: None,
            step: 0,
            provider: "p".into(),
            model: "m".into(),
            input_tokens: Some(tokens),
            output_tokens: Some(1),
            cached_input_tokens: None,
            reasoning_tokens: Some(2),
            latency_ms: 3,
            cost,
            tokenizer: None,
        }),
    }
}

async fn all_ids(store: &Arc<dyn AccountingStore>) -> Vec<u64> {
    let page = store.page(Since::Start, 100_000, None).await.expect("page");
    page.records.iter().map(|r| r.id).collect()
}

/// Runs every check (on a fresh store: ids start at 1).
pub(crate) async fn run(a: Arc<dyn AccountingStore>, b: Arc<dyn AccountingStore>) {
    ids_increase_across_writers_and_pages_follow_them(&a, &b).await;
    concurrent_appends_get_unique_ids(&a, &b).await;
    sums_add_every_writer_and_survive_trimming(&a, &b).await;
    one_principals_page_skips_the_others(&a, &b).await;
}

async fn one_principals_page_skips_the_others(a: &Arc<dyn AccountingStore>, b: &Arc<dyn AccountingStore>) {
    a.trim(0, 0).await.unwrap();
    let of = |n: u64, caller: &str| AccountingRecord {
        caller: caller.into(),
        ..call(None, n, 1_000 + n)
    };
    let stored = a
        .append(vec![of(1, "alice"), of(2, "bob"), of(3, "alice")])
        .await
        .unwrap();
    assert_eq!(stored.len(), 3);
    b.append(vec![of(4, "bob"), of(5, "alice")]).await.unwrap();
    let page = |store: &Arc<dyn AccountingStore>, since, limit, p: &str| {
        let (store, p) = (store.clone(), p.to_string());
        async move {
            store
                .page(since, limit, Some(p))
                .await
                .expect("a principal's page")
        }
    };
    let alice = page(b, Since::Start, 10, "alice").await;
    let calls = |p: &crate::hub::accounting::Page| -> Vec<String> {
        p.records
            .iter()
            .map(|r| match &r.entry {
                Entry::ToolCall(c) => c.call_id.clone(),
                other => panic!("a call record, got {other:?}"),
            })
            .collect()
    };
    assert_eq!(calls(&alice), ["call_1", "call_3", "call_5"]);
    let first = page(a, Since::Start, 2, "alice").await;
    assert_eq!(
        calls(&first),
        ["call_1", "call_3"],
        "the limit counts that principal's records"
    );
    let rest = page(a, Since::Id(first.next), 10, "alice").await;
    assert_eq!(calls(&rest), ["call_5"], "next pages on past the others' records");
    assert_eq!(
        calls(&page(a, Since::Time(1_002), 10, "bob").await),
        ["call_2", "call_4"]
    );
    assert!(page(a, Since::Start, 10, "nobody").await.records.is_empty());
}

async fn ids_increase_across_writers_and_pages_follow_them(
    a: &Arc<dyn AccountingStore>,
    b: &Arc<dyn AccountingStore>,
) {
    let empty = a.page(Since::Start, 10, None).await.unwrap();
    assert_eq!((empty.records.len(), empty.next), (0, 0));
    let first = a
        .append(vec![call(None, 100, 100), call(None, 101, 101)])
        .await
        .unwrap();
    let second = b.append(vec![call(None, 200, 200)]).await.unwrap();
    let third = a
        .append(vec![call(None, 300, 300), call(None, 301, 301)])
        .await
        .unwrap();
    let given: Vec<u64> = [first, second, third].concat().iter().map(|r| r.id).collect();
    assert!(given.windows(2).all(|w| w[0] < w[1]), "increasing: {given:?}");
    assert_eq!(all_ids(b).await, given, "the other writer pages the same records");
    let after = b.page(Since::Id(given[1]), 2, None).await.unwrap();
    assert_eq!(
        after.records.iter().map(|r| r.id).collect::<Vec<_>>(),
        given[2..4]
    );
    assert_eq!(after.next, given[3]);
    let at = a.page(Since::Time(200), 10, None).await.unwrap();
    let times: Vec<u64> = at.records.iter().map(|r| r.time_ms).collect();
    assert_eq!(times, [200, 300, 301]);
    let none = a.page(Since::Id(given[4]), 10, None).await.unwrap();
    assert_eq!((none.records.len(), none.next), (0, given[4]));
    let future = a.page(Since::Time(u64::MAX / 2), 10, None).await.unwrap();
    assert_eq!((future.records.len(), future.next), (0, given[4]));
    a.trim(0, 0).await.unwrap();
    assert_eq!(all_ids(a).await, Vec::<u64>::new());
    let after_trim = b.append(vec![call(None, 400, 400)]).await.unwrap();
    assert!(
        after_trim[0].id > given[4],
        "ids are never given twice, even after a trim"
    );
}

async fn concurrent_appends_get_unique_ids(a: &Arc<dyn AccountingStore>, b: &Arc<dyn AccountingStore>) {
    a.trim(0, 0).await.unwrap();
    const TASKS: usize = 8;
    const BATCHES: usize = 15;
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in 0..BATCHES {
                let k = (t * 1000 + n) as u64;
                let batch = vec![call(None, k, k), call(None, 1, 1)];
                ids.extend(store.append(batch).await.expect("append").iter().map(|r| r.id));
            }
            ids
        }));
    }
    let mut given = Vec::new();
    for t in tasks {
        given.extend(t.await.expect("appender"));
    }
    let distinct: HashSet<u64> = given.iter().copied().collect();
    assert_eq!(distinct.len(), TASKS * BATCHES * 2, "every id given once");
    let stored = all_ids(a).await;
    assert_eq!(stored.len(), given.len(), "one record per append");
    assert_eq!(stored.iter().copied().collect::<HashSet<_>>(), distinct);
    assert!(stored.windows(2).all(|w| w[0] < w[1]), "pages in id order");
}

async fn sums_add_every_writer_and_survive_trimming(
    a: &Arc<dyn AccountingStore>,
    b: &Arc<dyn AccountingStore>,
) {
    a.append(vec![step("s1", 100, Some(0.5)), call(Some("s1"), 5, 5)])
        .await
        .unwrap();
    b.append(vec![step("s1", 10, None), step("s2", 7, None)])
        .await
        .unwrap();
    let sums = b
        .session_usage(vec!["s1".into(), "s2".into(), "s3".into()])
        .await
        .unwrap();
    let s1 = SessionUsage {
        input_tokens: 110,
        output_tokens: 2,
        cached_input_tokens: 0,
        reasoning_tokens: 4,
        model_steps: 2,
        tool_calls: 1,
        cost: Some(0.5),
    };
    assert_eq!(sums[0], s1);
    assert_eq!((sums[1].input_tokens, sums[1].cost), (7, None));
    assert_eq!(sums[2], SessionUsage::default());
    // Trimming counts both writers' records and keeps the sums.
    let before = all_ids(a).await;
    b.trim(2, 0).await.unwrap();
    assert_eq!(all_ids(a).await, before[before.len() - 2..]);
    assert_eq!(a.session_usage(vec!["s1".into()]).await.unwrap()[0], s1);
    a.forget_session("s1".into()).await.unwrap();
    let after = b.session_usage(vec!["s1".into(), "s2".into()]).await.unwrap();
    assert_eq!(after[0], SessionUsage::default());
    assert_eq!(after[1].model_steps, 1);
}
