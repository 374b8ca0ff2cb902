use super::*;
use crate::hub::auth::Visible;
use crate::llm::Usage;
use crate::storage::Storage;
use std::time::Duration;
use store::conformance::call;

fn embedded(storage: &Storage) -> Arc<dyn AccountingStore> {
    Arc::new(store::LogAccounting::open(storage).unwrap())
}

fn log(storage: &Storage, config: &AccountingConfig) -> Accounting {
    Accounting::start(embedded(storage), config).unwrap()
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
    let dir = crate::test_dir::TempDir::new("accounting-conformance");
    let storage = Storage::open(&dir).unwrap();
    store::conformance::run(embedded(&storage), embedded(&storage)).await;
}

fn ids(page: &Page) -> Vec<u64> {
    page.records.iter().map(|r| r.id).collect()
}

#[test]
fn pages_start_after_an_id_or_at_a_time_oldest_first() {
    let storage = Storage::temporary().unwrap();
    let log = log(&storage, &AccountingConfig::default());
    // Three blocks: each page() waits for the writer, which stores what it has.
    for block in 0..3u64 {
        for n in 0..4 {
            log.record(call(None, block * 4 + n, 1_000 + block * 100 + n));
        }
        log.page(Since::Start, 1, &Visible::All).unwrap();
    }
    let all = log.page(Since::Start, 100, &Visible::All).unwrap();
    assert_eq!(ids(&all), (1..=12).collect::<Vec<_>>());
    assert_eq!(all.next, 12);
    let after = log.page(Since::Id(5), 3, &Visible::All).unwrap();
    assert_eq!((ids(&after), after.next), (vec![6, 7, 8], 8));
    let at = log.page(Since::Time(1_101), 100, &Visible::All).unwrap();
    assert_eq!(ids(&at), (6..=12).collect::<Vec<_>>());
    let none = log.page(Since::Id(12), 10, &Visible::All).unwrap();
    assert_eq!((ids(&none), none.next), (vec![], 12));
    let future = log.page(Since::Time(u64::MAX), 10, &Visible::All).unwrap();
    assert_eq!((ids(&future), future.next), (vec![], 12));
}

#[test]
fn ids_continue_after_a_restart_and_retention_drops_the_oldest() {
    let storage = Storage::temporary().unwrap();
    let config = AccountingConfig {
        retention: 5,
        ..AccountingConfig::default()
    };
    {
        let log = log(&storage, &config);
        for n in 0..4 {
            log.record(call(None, n, 1));
        }
    }
    let log = log(&storage, &config);
    for n in 4..8 {
        log.record(call(None, n, 2));
    }
    let page = log.page(Since::Start, 100, &Visible::All).unwrap();
    assert_eq!(ids(&page), [4, 5, 6, 7, 8], "trimmed to 5, ids kept");
}

#[test]
fn sessions_sum_steps_calls_and_cost_and_the_jsonl_file_gets_every_record() {
    let storage = Storage::temporary().unwrap();
    let dir = crate::test_dir::TempDir::new("accounting-jsonl");
    let path = dir.path().join("usage/records.jsonl");
    let mut config = AccountingConfig {
        jsonl: Some(path.clone()),
        ..AccountingConfig::default()
    };
    config.prices.insert(
        "p/m".into(),
        crate::config::ModelPrice {
            input: 1.0,
            output: 2.0,
            cached_input: None,
        },
    );
    let log = log(&storage, &config);
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 10,
        total_tokens: 110,
        reasoning_tokens: None,
        cached_input_tokens: Some(20),
    };
    for step in 0..2 {
        let measured = ModelStep::measured("p", "m", Some(usage), Duration::from_millis(30));
        let step = ModelStep {
            message: Some("msg_1".into()),
            step,
            ..measured
        };
        log.account(Some("s1"), "local", None, None, Entry::ModelStep(step));
    }
    log.record(call(Some("s1"), 1, 5));
    log.record(call(Some("s2"), 2, 5));
    let sums = log.session_usage(["s1", "s2", "s3"]).unwrap();
    assert_eq!(
        (
            sums[0].model_steps,
            sums[0].tool_calls,
            sums[0].input_tokens,
            sums[0].cached_input_tokens
        ),
        (2, 1, 200, 40)
    );
    assert!(
        (sums[0].cost.unwrap() - 2.0 * 120.0 / 1e6).abs() < 1e-12,
        "{:?}",
        sums[0]
    );
    assert_eq!((sums[1].tool_calls, sums[1].cost), (1, None));
    assert_eq!(sums[2], SessionUsage::default());
    log.forget_session("s1");
    assert_eq!(log.session_usage(["s1"]).unwrap()[0], SessionUsage::default());
    let lines: Vec<AccountingRecord> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, log.page(Since::Start, 100, &Visible::All).unwrap().records);
    assert_eq!(lines.len(), 4);
}

#[test]
fn a_context_guard_activation_is_a_record_of_its_own_kind_outside_the_sums() {
    let storage = Storage::temporary().unwrap();
    let log = log(&storage, &AccountingConfig::default());
    let guard = ContextGuard {
        message: Some("msg_1".into()),
        step: 2,
        provider: "p".into(),
        model: "m".into(),
        trigger: GuardTrigger::ToolResult,
        outcome: GuardOutcome::Replaced,
        projected_tokens: 7250,
        limit_tokens: 7168,
        remaining_tokens: 18,
        tokenizer: "tiktoken:o200k_base".into(),
    };
    log.account(Some("s1"), "local", None, None, Entry::ContextGuard(guard));
    let page = log.page(Since::Start, 10, &Visible::All).unwrap();
    let mut json = serde_json::to_value(&page.records[0]).unwrap();
    assert!(json["time_ms"].as_u64().unwrap() > 0, "{json}");
    json.as_object_mut().unwrap().remove("time_ms");
    assert_eq!(
        json,
        serde_json::json!({
            "id": 1, "session": "s1", "caller": "local", "kind": "context_guard",
            "message": "msg_1", "step": 2, "provider": "p", "model": "m",
            "trigger": "tool_result", "outcome": "replaced",
            "projected_tokens": 7250, "limit_tokens": 7168, "remaining_tokens": 18,
            "tokenizer": "tiktoken:o200k_base"
        })
    );
    let back: AccountingRecord =
        serde_json::from_value(serde_json::to_value(&page.records[0]).unwrap()).unwrap();
    assert_eq!(back, page.records[0]);
    // A record from before the `tokenizer` field was counted by the estimate.
    json.as_object_mut().unwrap().remove("tokenizer");
    json["time_ms"] = 1.into();
    let old: AccountingRecord = serde_json::from_value(json).unwrap();
    let old = serde_json::to_value(&old).unwrap();
    assert_eq!(old["tokenizer"], "estimate", "{old}");
    assert_eq!(log.session_usage(["s1"]).unwrap()[0], SessionUsage::default());
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_postgres_store_passes_the_conformance_suite() {
        let pg = crate::storage::postgres::test_database().await;
        // Two stores on one database: two replicas (the second migration is a no-op).
        let a = Arc::new(store::postgres::PgAccounting::open(pg.clone()).await.unwrap());
        let b = Arc::new(store::postgres::PgAccounting::open(pg).await.unwrap());
        store::conformance::run(a, b).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_share_ids_pages_and_sums_but_each_writes_its_own_jsonl_file() {
        let pg = crate::storage::postgres::test_database().await;
        let dir = crate::test_dir::TempDir::new("accounting-pg");
        let mut logs = Vec::new();
        for n in 0..2 {
            let config = AccountingConfig {
                jsonl: Some(dir.path().join(format!("replica{n}.jsonl"))),
                ..AccountingConfig::default()
            };
            let store = Arc::new(store::postgres::PgAccounting::open(pg.clone()).await.unwrap());
            logs.push(Arc::new(Accounting::start(store, &config).unwrap()));
        }
        let (a, b) = (logs[0].clone(), logs[1].clone());
        let read = tokio::task::spawn_blocking(move || {
            for n in 0..10 {
                a.record(call(Some("s1"), n, 10 + n));
                b.record(call(Some("s1"), 100 + n, 10 + n));
            }
            a.page(Since::Start, 1, &Visible::All).unwrap();
            b.page(Since::Start, 1, &Visible::All).unwrap();
            (
                a.page(Since::Start, 100, &Visible::All).unwrap(),
                b.session_usage(["s1"]).unwrap(),
            )
        });
        let (page, sums) = read.await.unwrap();
        let ids = ids(&page);
        assert_eq!(ids.len(), 20, "{ids:?}");
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        assert_eq!(sums[0].tool_calls, 20, "both replicas' calls in one sum");
        for n in 0..2 {
            let path = dir.path().join(format!("replica{n}.jsonl"));
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            assert_eq!(lines, 10, "replica {n} writes its own records only");
        }
    }
}
