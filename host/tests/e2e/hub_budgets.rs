//! Hard budgets of the call protocol (issue 14) through `Hub::invoke` with real
//! components: the per-request call budget over a whole call tree, bounded input
//! validation, and fair shares of the instance pool. Each bound is hit with its specific error while a benign call keeps
//! answering.

use crate::support::gate::Gate;
use crate::support::hub::{Server, TestHub, hub, plugins, serve};
use crate::support::runtime::Scratch;
use crate::support::wait::{PATIENCE, calls_in_flight, in_flight_at, until};
use crate::support::{binary, client};
use http::Method;
use serde_json::{Map, Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use wasmhub::config::{Limits, TokenConfig};
use wasmhub::hub::{CallContext, MetaToolRequest};

/// `hub_call` of one operation as the local operator, in a task of its own.
fn spawn_call(h: &TestHub, tool: &str, input: Value) -> tokio::task::JoinHandle<Value> {
    let hub = h.hub.clone();
    let args = json!({ "calls": [{ "tool": tool, "input": input }] });
    tokio::spawn(async move {
        let request = MetaToolRequest::parse("hub_call", args).unwrap();
        let mut out = hub
            .invoke(request, CallContext::new(hub.local_operator()))
            .await
            .expect("hub_call runs");
        out["results"][0].take()
    })
}

#[tokio::test]
async fn a_call_tree_is_cut_at_the_per_request_call_budget() {
    let gate = Gate::start().await;
    let dir = plugins(
        &[
            ("adversary", "a"),
            ("adversary", "b"),
            ("flood", "c"),
            ("adversary", "d"),
        ],
        &[],
    );
    std::fs::write(dir.path("c.toml"), gate.grant()).unwrap();
    let h = hub(&dir, |c| c.limits.tree.max_calls_per_request = 30).await;
    // a fans out to 10 b's, each fanning out to 10 c's: 111 calls, each level within
    // max_fanout and max_call_depth; only the tree's budget stops it. Each c is a GET
    // of the gate, so the tree waits at its first c until the gate opens.
    let leaf = json!({"authority": gate.authority(), "count": 1});
    let fanout =
        json!({"tool": "b.fanout", "times": 10, "input": {"tool": "c.burst", "times": 10, "input": leaf}});
    let attack = spawn_call(&h, "a.fanout", fanout);
    gate.holds(1).await;
    crate::support::wait::in_flight(&h.hub, 3).await;
    // A benign call answers while the tree is in progress, three calls deep.
    let benign = h.call("d.echo", json!({"x": 0})).await;
    assert_eq!(benign["result"], json!({"x": 0}), "{benign}");
    assert!(!attack.is_finished(), "the tree waits at the gate");
    gate.open();
    let r = attack.await.unwrap();
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
    let calls = h.hub.calls(1000, &wasmhub::hub::Visible::All).unwrap();
    let tree = calls.iter().filter(|c| c.tool != "d.echo");
    let ran = tree.filter(|c| c.outcome.as_str() == "ok").count();
    assert_eq!(ran, 30, "calls that ran");
    // The budget is per request: the next one starts afresh.
    let benign = h.call("b.echo", json!({"x": 1})).await;
    assert_eq!(benign["result"], json!({"x": 1}), "{benign}");
}

// Two workers, as a served hub has: the attack loop is one task calling the hub
// in-process back to back (see runtime_budgets' one-megabyte error test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_input_with_many_violations_gets_a_capped_error_list() {
    let dir = plugins(&[], &["calc"]);
    let h = hub(&dir, |c| c.limits.validation.max_violations = 5).await;
    // About 150 KiB: over validate_blocking_kb, so it is validated on the blocking pool.
    let mut input: Map<String, Value> = (0..8000).map(|i| (format!("field_{i:05}"), json!(i))).collect();
    input.insert("expression".into(), json!("1 + 1"));
    input.insert("digits".into(), json!("many"));
    let input = Value::Object(input);
    // The attack posts it back to back until told to stop; each answer is checked.
    let (stop, rounds) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let attack = {
        let (hub, stop, rounds) = (h.hub.clone(), stop.clone(), rounds.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let args = json!({ "calls": [{ "tool": "calc.eval", "input": input.clone() }] });
                let request = MetaToolRequest::parse("hub_call", args).unwrap();
                let out = hub.invoke(request, CallContext::new(hub.local_operator())).await;
                let r = &out.expect("hub_call runs")["results"][0];
                assert_eq!(r["error"]["code"], "invalid_input", "{r}");
                assert_eq!(r["error"]["violations"].as_array().unwrap().len(), 5, "{r}");
                let message = r["error"]["message"].as_str().unwrap();
                // 8000 unexpected properties and one wrong type, five of them listed.
                assert!(message.contains("; and 7996 more)"), "{message}");
                assert!(message.len() < 2000, "{message}");
                rounds.fetch_add(1, Ordering::SeqCst);
                // A client's next request comes over the network: let others run.
                tokio::task::yield_now().await;
            }
        })
    };
    let done = |n: usize| {
        let rounds = rounds.clone();
        async move { (rounds.load(Ordering::SeqCst) >= n).then_some(()) }
    };
    until("a capped error list", || done(1)).await;
    let benign = h.call("calc.eval", json!({"expression": "1 + 1"})).await;
    assert_eq!(benign["ok"], true, "{benign}");
    // The attack was still going: it answers once more after the benign call.
    let after = rounds.load(Ordering::SeqCst) + 1;
    until("one more capped error list", || done(after)).await;
    stop.store(true, Ordering::SeqCst);
    attack.await.unwrap();
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
        c.limits.pool.max_instances = 4;
        c.limits.shares.caller_percent = 100;
        c.limits.cpu.caller_percent = 100;
        c.limits.shares.queue_ms = 100;
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
        c.limits.pool.max_instances = 4;
        c.limits.shares.plugin_percent = 25;
        c.limits.shares.queue_ms = 8000;
    })
    .await;
    let quick = || ("a.slow", json!({"ms": 200}));
    let results = batch(&h, &[quick(), quick(), quick()]).await;
    // One slot for a: the calls ran one after another, none was refused.
    assert!(results.iter().all(|r| r["ok"] == true), "{results:?}");
}

#[tokio::test]
async fn the_memory_budget_error_names_its_key() {
    let dir = plugins(&[("flood", "f"), ("adversary", "a")], &[]);
    let h = hub(&dir, |c| c.limits.pool.memory_budget_mb = 24).await;
    // Two calls of 16 MiB each at once: the first to grow fits in the 24 MiB budget,
    // the other is refused (the first holds its memory long enough for that).
    let hold = json!({"tool": "f.hold", "input": {"mb": 16, "ms": 3000}});
    let attack = {
        let hub = h.hub.clone();
        let args = json!({ "calls": [hold.clone(), hold] });
        tokio::spawn(async move {
            let request = MetaToolRequest::parse("hub_call", args).unwrap();
            let out = hub.invoke(request, CallContext::new(hub.local_operator())).await;
            out.expect("hub_call runs")["results"].as_array().unwrap().clone()
        })
    };
    let runtime = h.hub.runtime().clone();
    until("16 MiB held", || {
        let runtime = runtime.clone();
        async move { (runtime.memory_in_use() >= 16 << 20).then_some(()) }
    })
    .await;
    // A small call of another plugin fits beside the holder and answers meanwhile.
    let benign = h.call("a.echo", json!({"x": 1})).await;
    assert_eq!(benign["result"], json!({"x": 1}), "{benign}");
    assert!(
        runtime.memory_in_use() >= 16 << 20,
        "the holder still held its 16 MiB when the benign call answered"
    );
    let results = attack.await.unwrap();
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

const CI: &str = "ci-secret-123";
const WEB: &str = "web-secret-456";

/// `POST /api/hub/call` of one operation at `addr` as `token`: the per-call result.
async fn call_as(addr: SocketAddr, token: &str, tool: &str, input: Value) -> Value {
    let body = json!({"calls": [{"tool": tool, "input": input}]});
    let auth = format!("Bearer {token}");
    let resp = client::send(
        addr,
        Method::POST,
        "/api/hub/call",
        Some(serde_json::to_vec(&body).unwrap().into()),
        &[("authorization", &auth)],
    )
    .await;
    let mut out = resp.json().await;
    out["results"][0].take()
}

/// The message of a call refused with `call_limit` naming `key`.
fn call_limit<'a>(result: &'a Value, key: &str) -> &'a str {
    let error = &result["error"];
    assert_eq!(
        (&error["code"], &error["limit"]),
        (&json!("call_limit"), &json!(key)),
        "{result}"
    );
    error["message"].as_str().unwrap()
}

/// The HTTP server with tokens `ci` and `web` (both allowed everything), plugin `a`
/// (the adversary) and plugin `f` (flood, allowed to reach `gate`).
async fn two_tokens(gate: &Gate, configure: impl FnOnce(&mut Limits)) -> (Scratch, Server) {
    let dir = plugins(&[("adversary", "a"), ("flood", "f")], &[]);
    std::fs::write(dir.path("f.toml"), gate.grant()).unwrap();
    std::fs::write(dir.path("ci.secret"), CI).unwrap();
    std::fs::write(dir.path("web.secret"), WEB).unwrap();
    let token = |name: &str| TokenConfig {
        name: name.into(),
        secret_env: None,
        secret_file: Some(dir.path(&format!("{name}.secret"))),
        allow: vec!["*".into()],
        ..TokenConfig::default()
    };
    let tokens = vec![token("ci"), token("web")];
    let s = serve(&dir, |c| {
        c.tokens = tokens;
        configure(&mut c.limits);
    })
    .await;
    (dir, s)
}

/// A call of `token` that stays in progress (a GET held at `gate`) until the gate opens.
fn held_call(addr: SocketAddr, token: &'static str, gate: &Gate) -> tokio::task::JoinHandle<Value> {
    let input = json!({"authority": gate.authority(), "count": 1});
    tokio::spawn(async move { call_as(addr, token, "f.burst", input).await })
}

/// The `/metrics` in-flight gauge of the server at `addr`, now.
async fn in_flight_now(addr: SocketAddr) -> i64 {
    let resp = client::send(addr, Method::GET, "/metrics", None, &[]).await;
    calls_in_flight(std::str::from_utf8(&resp.bytes().await).unwrap())
}

/// Opens the gate; each held call then answers with the gate's 200.
async fn release(gate: &Gate, held: Vec<tokio::task::JoinHandle<Value>>) {
    gate.open();
    for call in held {
        let r = call.await.unwrap();
        assert_eq!(r["result"]["results"], json!([{"status": 200}]), "{r}");
    }
}

#[tokio::test]
async fn one_token_cannot_take_the_instance_pool_from_the_others() {
    let gate = Gate::start().await;
    let (_dir, s) = two_tokens(&gate, |l| {
        l.pool.max_instances = 4;
        l.shares.caller_percent = 50;
        l.shares.plugin_percent = 100;
        // One plugin may take its token's whole share (this is about tokens).
        l.shares.caller_plugin_percent = 100;
        l.shares.queue_ms = 100;
    })
    .await;
    // ci fills its share (2 of the 4 slots) with calls that wait at the gate.
    let held = vec![held_call(s.addr, CI, &gate), held_call(s.addr, CI, &gate)];
    gate.holds(2).await;
    in_flight_at(s.addr, 2).await;
    // Its next call waits 100 ms for a slot of its share, then is refused naming it.
    let refused = call_as(s.addr, CI, "a.echo", json!({"x": 1})).await;
    let message = call_limit(&refused, "limits.caller_share_percent");
    assert!(
        message.contains("the token \"ci\" already runs 2 calls")
            && message.contains("limits.caller_share_percent = 50% of 4 slots"),
        "{message}"
    );
    // The other token's call answers meanwhile: ci's two calls are still running.
    let benign = call_as(s.addr, WEB, "a.echo", json!({"x": 2})).await;
    assert_eq!(benign["result"], json!({"x": 2}), "{benign}");
    assert!(held.iter().all(|c| !c.is_finished()), "ci's calls ended early");
    assert_eq!(in_flight_now(s.addr).await, 2, "ci's calls are in flight");
    release(&gate, held).await;
    // With its calls done, ci's share is free again.
    let again = call_as(s.addr, CI, "a.echo", json!({"x": 3})).await;
    assert_eq!(again["result"], json!({"x": 3}), "{again}");
}

#[tokio::test]
async fn one_plugin_holding_its_tokens_slots_leaves_room_for_the_tokens_other_plugins() {
    let gate = Gate::start().await;
    let (_dir, s) = two_tokens(&gate, |l| {
        l.pool.max_instances = 8;
        l.shares.caller_percent = 50;
        l.shares.plugin_percent = 100;
        l.shares.caller_plugin_percent = 50;
        l.shares.caller_reserve_percent = 25;
        l.shares.queue_ms = 100;
    })
    .await;
    // ci's share is 4 slots: f holds its part (2) and borrows one more, leaving
    // the reserve (1) free; its fourth call waits, then is refused naming the level.
    let held: Vec<_> = (0..3).map(|_| held_call(s.addr, CI, &gate)).collect();
    gate.holds(3).await;
    in_flight_at(s.addr, 3).await;
    let input = json!({"authority": gate.authority(), "count": 1});
    let refused = call_as(s.addr, CI, "f.burst", input).await;
    let message = call_limit(&refused, "limits.caller_plugin_share_percent");
    assert!(
        message.contains("the plugin \"f\" within token \"ci\"")
            && message.contains("limits.caller_reserve_percent = 25%"),
        "{message}"
    );
    // Another plugin of the same token answers meanwhile (the whole share went to
    // f's calls before, and this was refused with limits.caller_share_percent).
    let benign = call_as(s.addr, CI, "a.echo", json!({"x": 1})).await;
    assert_eq!(benign["result"], json!({"x": 1}), "{benign}");
    assert!(held.iter().all(|c| !c.is_finished()), "f's calls ended early");
    assert_eq!(in_flight_now(s.addr).await, 3, "f's calls are in flight");
    release(&gate, held).await;
}

#[tokio::test]
async fn the_whole_pool_bounds_the_tokens_together() {
    let gate = Gate::start().await;
    let (_dir, s) = two_tokens(&gate, |l| {
        l.pool.max_instances = 3;
        l.shares.caller_percent = 50;
        l.shares.plugin_percent = 100;
        // One plugin may take its token's whole share (this is about tokens).
        l.shares.caller_plugin_percent = 100;
        l.shares.queue_ms = 100;
    })
    .await;
    // Each token's share is 2 of the 3 slots: ci takes 2, web 1, and the pool is full.
    let held = vec![
        held_call(s.addr, CI, &gate),
        held_call(s.addr, CI, &gate),
        held_call(s.addr, WEB, &gate),
    ];
    gate.holds(3).await;
    in_flight_at(s.addr, 3).await;
    // web's share has room, the pool has none: refused naming the pool.
    let refused = call_as(s.addr, WEB, "a.echo", json!({"x": 1})).await;
    let error = &refused["error"];
    assert_eq!(
        (&error["code"], &error["limit"]),
        (&json!("call_limit"), &json!("limits.max_instances")),
        "{refused}"
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("all 3 plugin instance slots (limits.max_instances) are busy"),
        "{refused}"
    );
    // What needs no instance still answers meanwhile, for either token.
    for token in [CI, WEB] {
        let auth = format!("Bearer {token}");
        let resp = client::send(
            s.addr,
            Method::POST,
            "/api/hub/list",
            Some("{}".into()),
            &[("authorization", &auth)],
        )
        .await;
        assert_eq!(resp.status, 200);
        assert!(resp.json().await.to_string().contains("a.echo"));
    }
    assert!(
        held.iter().all(|c| !c.is_finished()),
        "the held calls ended early"
    );
    assert_eq!(in_flight_now(s.addr).await, 3, "the held calls are in flight");
    release(&gate, held).await;
    let benign = call_as(s.addr, WEB, "a.echo", json!({"x": 2})).await;
    assert_eq!(benign["result"], json!({"x": 2}), "{benign}");
}

#[tokio::test]
async fn records_the_audit_writer_had_no_room_for_become_one_summary_record() {
    let dir = plugins(&[("adversary", "a")], &[]);
    let data = Scratch::new("audit-queue-data");
    // A queue of one record: a batch of calls finds it full while the writer sleeps.
    let mut hub = binary::serve(&dir.0, &data.0, &["audit.queue=1"]);
    let addr = hub.addr;
    let batch = json!({"calls": vec![json!({"tool": "a.noop", "input": {}}); 32]});
    let (summary, calls) = until("a summary record in GET /api/calls", || {
        let batch = batch.clone();
        async move {
            let resp = client::post(addr, "/api/hub/call", &batch).await;
            assert_eq!(resp.status, 200);
            let calls = client::send(addr, Method::GET, "/api/calls?limit=1000", None, &[])
                .await
                .json()
                .await;
            let calls = calls["calls"].as_array().unwrap().clone();
            let summary = calls.iter().find(|c| c["tool"] == "hub.audit").cloned();
            summary.map(|s| (s, calls))
        }
    })
    .await;
    assert_eq!(
        (&summary["caller"], &summary["outcome"]),
        (&json!("hub"), &json!("call_limit")),
        "{summary}"
    );
    let input = &summary["input"];
    let n = input["not_written"].as_u64().unwrap();
    let (first, last) = (
        input["first_call"].as_str().unwrap(),
        input["last_call"].as_str().unwrap(),
    );
    assert!(n >= 1, "{summary}");
    let text = format!("{n} records not written, calls {first}..{last}");
    assert!(summary["error"].as_str().unwrap().starts_with(&text), "{summary}");
    // The span's calls are missing from the log; the summary stands in for them.
    assert!(
        calls.iter().all(|c| c["id"] != first && c["id"] != last),
        "{summary}"
    );
    // The hub log says the same, once, as a warning.
    let line = hub.stderr.saw_or_wait_for(&text, PATIENCE);
    assert!(line.contains(" WARN ") && line.contains("audit log: "), "{line}");
    // Calls keep answering.
    let benign = json!({"calls": [{"tool": "a.echo", "input": {"x": 1}}]});
    let out = client::post(addr, "/api/hub/call", &benign).await.json().await;
    assert_eq!(out["results"][0]["result"], json!({"x": 1}), "{out}");
}

/// The `wasmhub_low_priority_calls_total` counter of the server at `addr`, now.
async fn low_priority_calls(addr: SocketAddr) -> u64 {
    counter(addr, "wasmhub_low_priority_calls_total").await
}

/// The unlabelled counter `name` of the server at `addr`, now.
async fn counter(addr: SocketAddr, name: &str) -> u64 {
    let resp = client::send(addr, Method::GET, "/metrics", None, &[]).await;
    let text = String::from_utf8(resp.bytes().await.to_vec()).unwrap();
    let prefix = format!("{name} ");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    line.parse().unwrap()
}

#[tokio::test]
async fn a_busy_tokens_next_calls_run_at_low_priority_and_other_tokens_calls_do_not() {
    let gate = Gate::start().await;
    let (_dir, s) = two_tokens(&gate, |l| {
        l.call.timeout_ms = 300;
        // Busy for the whole test, however slow the machine.
        l.cpu.busy_ms = 600_000;
    })
    .await;
    let echo = |x: i64| json!({"tool": "a.echo", "input": {"x": x}});
    // Nobody is busy yet: calls run on the async workers.
    let r = call_as(s.addr, CI, "a.echo", json!({"x": 1})).await;
    assert_eq!(r["result"], json!({"x": 1}), "{r}");
    assert_eq!(low_priority_calls(s.addr).await, 0);
    // `ci` spins to its time limit, far past its free first tick: `ci` is busy.
    let r = call_as(s.addr, CI, "a.spin", json!({})).await;
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    // The spinning call itself moved there once it had overrun, mid-run.
    assert_eq!(low_priority_calls(s.addr).await, 1, "the spinning call moved");
    // There it gave its core away at epoch checks between the ticks too
    // (limits.busy_yield_us): it ran there for most of its 300 ms.
    let yields = counter(s.addr, "wasmhub_low_priority_yields_total").await;
    assert!(yields > 0, "the moved spinner never gave way");
    // Its next call runs on the low-priority threads, nested call and all, and
    // answers the same.
    let r = call_as(s.addr, CI, "a.nested", echo(2)).await;
    assert_eq!(r["result"], json!({"ok": {"x": 2}}), "{r}");
    assert_eq!(
        low_priority_calls(s.addr).await,
        2,
        "one top-level call, its nested call inside it"
    );
    // `web` is not busy: its calls stay on the workers.
    let r = call_as(s.addr, WEB, "a.nested", echo(3)).await;
    assert_eq!(r["result"], json!({"ok": {"x": 3}}), "{r}");
    assert_eq!(low_priority_calls(s.addr).await, 2);
    // A busy token's call is still cut at its time limit there.
    let r = call_as(s.addr, CI, "a.spin", json!({})).await;
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    assert_eq!(low_priority_calls(s.addr).await, 3);
}

#[tokio::test]
async fn with_busy_yield_us_0_a_moved_spinner_keeps_its_core_between_ticks() {
    let gate = Gate::start().await;
    let (_dir, s) = two_tokens(&gate, |l| {
        l.call.timeout_ms = 300;
        l.cpu.busy_ms = 600_000;
        l.cpu.busy_yield_us = 0;
    })
    .await;
    let r = call_as(s.addr, CI, "a.spin", json!({})).await;
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    assert_eq!(low_priority_calls(s.addr).await, 1, "the spinning call moved");
    assert_eq!(counter(s.addr, "wasmhub_low_priority_yields_total").await, 0);
}
