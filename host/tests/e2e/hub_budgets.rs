//! Hard budgets of the call protocol (issue 14) through `Hub::invoke` with real
//! components: the per-request call budget over a whole call tree, bounded input
//! validation, and fair shares of the instance pool. Each bound is hit with its specific error while a benign call keeps
//! answering.

use crate::support::hub::{hub, plugins};
use serde_json::{Map, Value, json};
use wasmhub::hub::{CallContext, MetaToolRequest};

#[tokio::test]
async fn a_call_tree_is_cut_at_the_per_request_call_budget() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b"), ("adversary", "c")], &[]);
    let h = hub(&dir, |c| c.limits.max_calls_per_request = 30).await;
    // a fans out to 10 b's, each fanning out to 10 c's: 111 calls, each level within
    // max_fanout and max_call_depth; only the tree's budget stops it.
    let fanout =
        json!({"tool": "b.fanout", "times": 10, "input": {"tool": "c.noop", "times": 10, "input": {}}});
    let r = h.call("a.fanout", fanout).await;
    assert_eq!(r["ok"], true, "{r}");
    // Calls 1 (a), 2 (b), 3-12 (c), 13 (b), 14-23 (c), 24 (b), 25-30 (c): the 4th b
    // is refused (as call 35: the 3rd b's refused c's were counted too), and every b
    // after it.
    assert_eq!(r["result"]["ok"], 3, "{r}");
    let refused = &r["result"]["first_error"];
    assert!(refused["error"].as_str().unwrap().contains("CallLimit"), "{r}");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("a.fanout -> b.fanout would be call 35 of one request")
            && message.contains("limits.max_calls_per_request = 30"),
        "{message}"
    );
    let calls = h.hub.calls(1000).unwrap();
    let ran = calls.iter().filter(|c| c.outcome.as_str() == "ok").count();
    assert_eq!(ran, 30, "calls that ran");
    // The budget is per request: the next one starts afresh.
    let benign = h.call("c.echo", json!({"x": 1})).await;
    assert_eq!(benign["result"], json!({"x": 1}), "{benign}");
}

#[tokio::test]
async fn a_large_input_with_many_violations_gets_a_capped_error_list() {
    let dir = plugins(&[], &["calc"]);
    let h = hub(&dir, |c| c.limits.max_violations = 5).await;
    // About 150 KiB: over validate_blocking_kb, so it is validated on the blocking pool.
    let mut input: Map<String, Value> = (0..8000).map(|i| (format!("field_{i:05}"), json!(i))).collect();
    input.insert("expression".into(), json!("1 + 1"));
    input.insert("digits".into(), json!("many"));
    let r = h.call("calc.eval", Value::Object(input)).await;
    assert_eq!(r["error"]["code"], "invalid_input", "{r}");
    assert_eq!(r["error"]["violations"].as_array().unwrap().len(), 5, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    // 8000 unexpected properties and one wrong type, five of them listed.
    assert!(message.contains("; and 7996 more)"), "{message}");
    assert!(message.len() < 2000, "{message}");
    let benign = h.call("calc.eval", json!({"expression": "1 + 1"})).await;
    assert_eq!(benign["ok"], true, "{benign}");
}

/// `hub_call` of `calls` (tool, input) as one batch: the per-call results, in order.
async fn batch(h: &crate::support::hub::TestHub, calls: &[(&str, Value)]) -> Vec<Value> {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(tool, input)| json!({"tool": tool, "input": input}))
        .collect();
    let out = h
        .hub
        .invoke(
            MetaToolRequest::parse("hub_call", json!({ "calls": calls })).unwrap(),
            CallContext::new(h.hub.local_operator()),
        )
        .await
        .expect("hub_call runs");
    out["results"].as_array().unwrap().clone()
}

#[tokio::test]
async fn one_plugin_cannot_take_the_instance_pool_from_the_others() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |c| {
        c.limits.max_instances = 4;
        c.limits.caller_share_percent = 100;
        c.limits.queue_ms = 100;
    })
    .await;
    let slow = || ("a.slow", json!({"ms": 3000}));
    let results = batch(&h, &[slow(), slow(), slow(), ("b.echo", json!({"x": 1}))]).await;
    // a's share is 2 of the 4 slots: its third call waited 100 ms, then was refused
    // naming the share; b's call ran beside them.
    let refused: Vec<&Value> = results[..3].iter().filter(|r| r["ok"] == false).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    let error = &refused[0]["error"];
    assert_eq!(
        (&error["code"], &error["limit"]),
        (&json!("call_limit"), &json!("limits.plugin_share_percent")),
        "{error}"
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("\"a\" already runs 2 calls"),
        "{error}"
    );
    assert_eq!(results[3]["result"], json!({"x": 1}), "{results:?}");
}

#[tokio::test]
async fn a_call_over_its_share_queues_briefly_instead_of_failing() {
    let dir = plugins(&[("adversary", "a")], &[]);
    let h = hub(&dir, |c| {
        c.limits.max_instances = 4;
        c.limits.plugin_share_percent = 25;
        c.limits.queue_ms = 8000;
    })
    .await;
    let quick = || ("a.slow", json!({"ms": 200}));
    let results = batch(&h, &[quick(), quick(), quick()]).await;
    // One slot for a: the calls ran one after another, none was refused.
    assert!(results.iter().all(|r| r["ok"] == true), "{results:?}");
}

#[tokio::test]
async fn the_memory_budget_error_names_its_key() {
    let dir = plugins(&[("flood", "f")], &[]);
    let h = hub(&dir, |c| c.limits.memory_budget_mb = 24).await;
    // Two calls of 16 MiB each at once: the first to grow fits in the 24 MiB budget,
    // the other is refused (the first holds its memory long enough for that).
    let hold = || ("f.hold", json!({"mb": 16, "ms": 1500}));
    let results = batch(&h, &[hold(), hold()]).await;
    let refused: Vec<&Value> = results.iter().filter(|r| r["ok"] == false).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    let error = &refused[0]["error"];
    assert_eq!(
        (&error["code"], &error["limit"]),
        (&json!("call_limit"), &json!("limits.memory_budget_mb")),
        "{error}"
    );
    let benign = h.call("f.hold", json!({"mb": 1})).await;
    assert_eq!(benign["ok"], true, "{benign}");
}
