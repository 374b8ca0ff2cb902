//! The call protocol through `Hub::invoke` with real components: nested plugin →
//! plugin calls, cycles, depth, deadlines, cancellation cascading to children,
//! batches with mixed failures, allowlists on nested calls, the audit trail, and
//! hot reload. Uses the adversarial test guest under several plugin names.

use crate::support::hub::{hub, plugins};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wasmhub::hub::{Allowlist, CallContext, Caller, MetaToolRequest, ToolError};

fn code(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn nested_calls_run_through_the_protocol_with_a_parent_id() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |_| {}).await;
    let r = h
        .call("a.nested", json!({"tool": "b.echo", "input": {"x": 1}}))
        .await;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"], json!({"ok": {"x": 1}}));
    let calls = h.hub.calls(10, &wasmhub::hub::Visible::All).unwrap();
    let parent = calls
        .iter()
        .find(|c| c.tool == "a.nested")
        .expect("parent recorded");
    let child = calls.iter().find(|c| c.tool == "b.echo").expect("child recorded");
    assert_eq!(child.parent.as_deref(), Some(parent.id.as_str()));
    assert_eq!((parent.outcome.as_str(), child.outcome.as_str()), ("ok", "ok"));
    assert_eq!(parent.caller, "local");
    assert!(parent.input_bytes > 0 && parent.output_bytes > 0);
}

#[tokio::test]
async fn a_cycle_is_cut_with_call_limit_naming_the_chain() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |_| {}).await;
    let r = h
        .call(
            "a.nested",
            json!({"tool": "b.nested", "input": {"tool": "a.nested", "input": {"tool": "b.echo"}}}),
        )
        .await;
    // b.nested's host.call of a.nested failed; b reports the error as its output.
    let inner = &r["result"]["ok"];
    assert!(inner["error"].as_str().unwrap_or("").contains("CallLimit"), "{r}");
    assert!(
        inner["message"]
            .as_str()
            .unwrap()
            .contains("a.nested -> b.nested -> a.nested"),
        "{r}"
    );
}

#[tokio::test]
async fn depth_is_bounded_by_max_call_depth() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b"), ("adversary", "c")], &[]);
    let h = hub(&dir, |c| c.limits.tree.max_call_depth = 1).await;
    let r = h
        .call(
            "a.nested",
            json!({"tool": "b.nested", "input": {"tool": "c.echo"}}),
        )
        .await;
    let inner = &r["result"]["ok"];
    assert!(inner["error"].as_str().unwrap_or("").contains("CallLimit"), "{r}");
    assert!(
        inner["message"].as_str().unwrap().contains("max_call_depth = 1"),
        "{r}"
    );
}

#[tokio::test]
async fn nested_calls_use_the_original_callers_allowlist() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |_| {}).await;
    let caller = Caller::unchecked("ci", Allowlist::new(&["a.*".into()]));
    let args = json!({"calls": [
        {"tool": "a.nested", "input": {"tool": "b.echo", "input": {}}},
        {"tool": "b.echo", "input": {}}
    ]});
    let out = h
        .hub
        .invoke(
            MetaToolRequest::parse("hub_call", args).unwrap(),
            CallContext::new(caller),
        )
        .await
        .unwrap();
    assert!(
        out["results"][0]["result"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("Forbidden"),
        "{out}"
    );
    assert_eq!(code(&out["results"][1]), "forbidden");
    assert!(
        out["results"][1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"ci\"")
    );
}

#[tokio::test]
async fn a_slow_call_times_out_and_a_child_never_outlives_its_parent() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |c| c.limits.call.timeout_ms = 400).await;
    let started = Instant::now();
    let r = h.call("a.slow", json!({"ms": 10_000})).await;
    assert_eq!(code(&r), "timeout", "{r}");
    let r = h
        .call("a.nested", json!({"tool": "b.slow", "input": {"ms": 10_000}}))
        .await;
    assert_eq!(code(&r), "timeout", "{r}");
    // Far below the 10 s asked for: the limit, not the sleep, ended both (the exact
    // limit is the typed `timeout` above; the bound is loose for a loaded machine).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    let calls = h.hub.calls(10, &wasmhub::hub::Visible::All).unwrap();
    let child = calls.iter().find(|c| c.tool == "b.slow").expect("child recorded");
    assert!(
        child.outcome.as_str() == "timeout" || child.outcome.as_str() == "cancelled",
        "{child:?}"
    );
    assert!(
        child.duration_us < 5_000_000,
        "stopped long before its 10 s: {child:?}"
    );
}

#[tokio::test]
async fn cancelling_the_request_cancels_the_call_and_its_children() {
    let dir = plugins(&[("adversary", "a"), ("adversary", "b")], &[]);
    let h = hub(&dir, |_| {}).await;
    let ctx = CallContext::new(h.hub.local_operator());
    let cancel = ctx.cancel.clone();
    let hub = h.hub.clone();
    // Cancel once the parent and its child both run.
    tokio::spawn(async move {
        crate::support::wait::in_flight(&hub, 2).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let args = json!({"calls": [{"tool": "a.nested", "input": {"tool": "b.slow", "input": {"ms": 8_000}}}]});
    let err = h
        .hub
        .invoke(MetaToolRequest::parse("hub_call", args).unwrap(), ctx)
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
    // Well before the child's 8 s: the cancel stopped it (generous for a loaded machine).
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    let calls = h.hub.calls(10, &wasmhub::hub::Visible::All).unwrap();
    for tool in ["a.nested", "b.slow"] {
        let record = calls
            .iter()
            .find(|c| c.tool == tool)
            .unwrap_or_else(|| panic!("{tool} recorded"));
        assert_eq!(record.outcome.as_str(), "cancelled", "{record:?}");
    }
}

#[tokio::test]
async fn a_batch_runs_concurrently_and_keeps_order_whatever_fails() {
    let dir = plugins(&[("adversary", "a")], &[]);
    let h = hub(&dir, |_| {}).await;
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut ctx = CallContext::new(h.hub.local_operator());
    let sink = events.clone();
    ctx.progress = Some(std::sync::Arc::new(move |e| sink.lock().unwrap().push(e)));
    let args = json!({"calls": [
        {"tool": "a.slow", "input": {"ms": 2000}},
        {"tool": "a.echo", "input": {"n": 2}},
        {"tool": "a.fail", "input": {"kind": "not_found"}},
        {"tool": "a.ecko"},
        {"tool": "a.panic"},
        {"tool": "a.slow", "input": {"ms": 2000}},
        {"tool": "a.huge_output", "input": {"bytes": 5_000_000}}
    ]});
    let started = Instant::now();
    let out = h
        .hub
        .invoke(MetaToolRequest::parse("hub.call", args).unwrap(), ctx)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let results = out["results"].as_array().unwrap();
    let tools: Vec<&str> = results.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "a.slow",
            "a.echo",
            "a.fail",
            "a.ecko",
            "a.panic",
            "a.slow",
            "a.huge_output"
        ]
    );
    assert_eq!(results[0]["result"], json!({"slept_ms": 2000}));
    assert_eq!(results[1]["result"], json!({"n": 2}));
    assert_eq!(code(&results[2]), "not_found");
    assert_eq!(code(&results[3]), "not_found");
    assert!(
        results[3]["error"]["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "a.echo"),
        "{}",
        results[3]
    );
    assert_eq!(code(&results[4]), "trap");
    assert_eq!(code(&results[6]), "output_limit");
    // Two 2 s sleeps side by side, not one after the other (which takes 4 s); long
    // sleeps leave a loaded machine room for the rest of the batch.
    assert!(elapsed < Duration::from_millis(3900), "batch took {elapsed:?}");
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 7);
    assert!(events.iter().all(|e| e.total == 7));
}

#[tokio::test]
async fn batches_over_the_limit_are_refused_whole() {
    let dir = plugins(&[("adversary", "a")], &[]);
    let h = hub(&dir, |c| c.limits.tree.max_batch = 2).await;
    let calls: Vec<Value> = (0..3).map(|_| json!({"tool": "a.noop"})).collect();
    let err = h
        .hub
        .invoke(
            MetaToolRequest::parse("hub_call", json!({"calls": calls})).unwrap(),
            CallContext::new(h.hub.local_operator()),
        )
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::BatchTooLarge { count: 3, limit: 2 });
    assert!(err.to_string().contains("at most 2"));
}

#[tokio::test]
async fn deprecated_plugins_are_callable_but_hidden_and_rejected_ones_say_why() {
    let dir = plugins(
        &[("adversary", "a"), ("adversary", "old"), ("badschema", "broken")],
        &[],
    );
    std::fs::write(dir.path("old.toml"), "deprecated = true\n").unwrap();
    let h = hub(&dir, |_| {}).await;
    let local = || CallContext::new(h.hub.local_operator());
    let listed = h
        .hub
        .invoke(MetaToolRequest::parse("hub_list", json!({})).unwrap(), local())
        .await
        .unwrap();
    let tools: Vec<&str> = listed["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["tool"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"a.echo") && !tools.iter().any(|t| t.starts_with("old.")),
        "{tools:?}"
    );
    let found = h
        .hub
        .invoke(
            MetaToolRequest::parse("hub_search", json!({"q": "returns its input unchanged"})).unwrap(),
            local(),
        )
        .await
        .unwrap();
    assert!(
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["tool"].as_str().unwrap().starts_with("old."))
    );
    // No query: every visible operation in name order, up to the limit.
    let all = h
        .hub
        .invoke(
            MetaToolRequest::parse("hub_search", json!({"limit": 3})).unwrap(),
            local(),
        )
        .await
        .unwrap();
    let names: Vec<&str> = all["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a.echo", "a.env", "a.fail"]);
    assert_eq!(
        h.call("old.echo", json!({"v": 1})).await["result"],
        json!({"v": 1})
    );
    let plugins = h.hub.plugins();
    let state = |name: &str| {
        plugins
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.state.as_str())
            .unwrap()
    };
    assert_eq!(
        (state("a"), state("old"), state("broken")),
        ("active", "deprecated", "rejected")
    );
    let broken = plugins.iter().find(|p| p.name == "broken").unwrap();
    assert!(
        broken.state.reason().unwrap_or("").contains("Bad-Name"),
        "{broken:?}"
    );
    assert!(broken.operations.is_empty());
}

#[tokio::test]
async fn a_reload_swaps_the_registry_while_calls_in_flight_finish() {
    let dir = plugins(&[("adversary", "a")], &[]);
    let h = hub(&dir, |_| {}).await;
    let slow = {
        let hub = h.hub.clone();
        tokio::spawn(async move {
            let args = json!({"calls": [{"tool": "a.slow", "input": {"ms": 700}}]});
            hub.invoke(
                MetaToolRequest::parse("hub_call", args).unwrap(),
                CallContext::new(hub.local_operator()),
            )
            .await
            .unwrap()
        })
    };
    crate::support::wait::in_flight(&h.hub, 1).await;
    std::fs::remove_file(dir.path("a.wasm")).unwrap();
    std::fs::copy(crate::support::runtime::guest("adversary"), dir.path("z.wasm")).unwrap();
    let hub = &h.hub;
    crate::support::wait::until_seen("the reload to leave only plugin z", || async move {
        let names: Vec<String> = hub.plugins().into_iter().map(|p| p.name).collect();
        if names == ["z"] { Ok(()) } else { Err(names) }
    })
    .await;
    // The call that started on the old snapshot still finished on it.
    assert_eq!(
        slow.await.unwrap()["results"][0]["result"],
        json!({"slept_ms": 700})
    );
    assert_eq!(code(&h.call("a.echo", json!({})).await), "not_found");
    assert_eq!(
        h.call("z.echo", json!({"k": true})).await["result"],
        json!({"k": true})
    );
}
