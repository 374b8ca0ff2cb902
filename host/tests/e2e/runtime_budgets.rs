//! Per-call budgets and load bounds of the runtime (issue 14), each hit with its
//! own error: regular plugin files only, a `list()` that never returns, outgoing
//! HTTP requests at once and in total, lines in the hub log, and plugin-provided
//! text.

use crate::support::gate::Gate;
use crate::support::runtime::*;
use crate::support::wait::{PATIENCE, until};
use crate::support::{binary, client};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use wasmhub::config::Limits;
use wasmhub::runtime::{CallFailure, ErrorCode, FileKind, LoadProblem, PluginDir, PluginState, Runtime};

/// The states of the plugins in `dir` after the first load, by name.
async fn load_folder(runtime: Runtime, dir: &Scratch) -> BTreeMap<String, PluginState> {
    let watcher = PluginDir::start(runtime, dir.0.clone(), None, Arc::new(|_| {}))
        .await
        .expect("the folder loads");
    watcher.entries().into_iter().map(|e| (e.name, e.state)).collect()
}

fn rejection(states: &BTreeMap<String, PluginState>, name: &str) -> String {
    match &states[name] {
        PluginState::Rejected { reason, .. } => reason.clone(),
        _ => panic!("{name} was loaded"),
    }
}

fn special_files(s: &Scratch) {
    let made = Command::new("mkfifo").arg(s.path("pipe.wasm")).status().unwrap();
    assert!(made.success(), "mkfifo");
    std::os::unix::fs::symlink("/dev/zero", s.path("zero.wasm")).unwrap();
}

#[tokio::test]
async fn fifos_and_devices_are_rejected_by_type_without_blocking() {
    let s = Scratch::new("special-files");
    special_files(&s);
    s.plugin("flood", "flood", None);
    let rt = runtime();
    let problems = rt.load(&s.path("pipe.wasm")).await.unwrap_err().problems;
    assert!(
        matches!(problems[..], [LoadProblem::NotRegularFile(FileKind::Fifo)]),
        "{problems:?}"
    );
    let problems = rt.load(&s.path("zero.wasm")).await.unwrap_err().problems;
    assert!(
        matches!(problems[..], [LoadProblem::NotRegularFile(FileKind::CharDevice)]),
        "{problems:?}"
    );
    // A manifest that is a FIFO is refused too, never opened for a blocking read.
    s.plugin("flood", "piped", None);
    Command::new("mkfifo").arg(s.path("piped.toml")).status().unwrap();

    let states = load_folder(rt, &s).await;
    assert!(rejection(&states, "pipe").contains("a FIFO (named pipe), not a regular file"));
    assert!(rejection(&states, "zero").contains("a character device, not a regular file"));
    assert!(rejection(&states, "piped").contains("a manifest must be a regular file"));
    assert!(matches!(states["flood"], PluginState::Active(_)));
}

#[test]
fn plugin_check_and_lock_refuse_a_fifo_and_a_device() {
    let s = Scratch::new("check-special");
    special_files(&s);
    for file in ["pipe.wasm", "zero.wasm"] {
        let code = wasmhub::cli::plugin::check(&s.path(file));
        assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::from(1)), "{file}");
    }
    // `plugin lock` pins the regular files only, without reading the others.
    s.plugin("flood", "flood", None);
    let lock = wasmhub::runtime::LockFile::from_dir(&s.0).unwrap();
    assert!(lock.digest("flood.wasm").is_some());
    assert!(lock.digest("pipe.wasm").is_none() && lock.digest("zero.wasm").is_none());
    assert!(wasmhub::runtime::sha256_file(&s.path("zero.wasm")).is_err());
}

#[test]
fn plugin_lock_refuses_a_file_past_the_plugin_size_limit() {
    let s = Scratch::new("lock-huge");
    s.plugin("flood", "flood", None);
    // Sparse: 2 MiB on paper, against the operator's limit of 1 MiB.
    let huge = std::fs::File::create(s.path("huge.wasm")).unwrap();
    huge.set_len(2 << 20).unwrap();
    let cwd = Scratch::new("lock-huge-cwd");
    std::fs::write(cwd.path("wasmhub.toml"), "[limits]\nmax_plugin_mb = 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .current_dir(&cwd.0)
        .args(["plugin", "lock"])
        .arg(&s.0)
        .output()
        .expect("run wasmhub plugin lock");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("huge.wasm: larger than the limit of 1 MiB (limits.max_plugin_mb)"),
        "{stderr}"
    );
    assert!(!s.path("plugins.lock").exists(), "no lock was written");
}

#[tokio::test]
async fn a_list_that_never_returns_is_rejected_while_the_others_load() {
    let s = Scratch::new("spinlist");
    s.plugin("spinlist", "spinner", None);
    s.plugin("flood", "flood", None);
    let rt = Runtime::new(
        &{
            let mut l = limits();
            l.load.timeout_ms = 300;
            l
        },
        None,
    )
    .unwrap();
    let states = load_folder(rt, &s).await;
    let reason = rejection(&states, "spinner");
    assert!(
        reason.contains("did not return within 300 ms (limits.load_timeout_ms"),
        "{reason}"
    );
    assert!(matches!(states["flood"], PluginState::Active(_)));
}

/// Each request's status, or its error text, from a `flood.burst` of `count`
/// requests to a fresh [`Gate`]: once `held` requests wait at the gate (the call is
/// in progress), a benign call of the same plugin answers, then the gate opens.
async fn burst(limits: Limits, count: u64, held: usize) -> Vec<Value> {
    let gate = Gate::start().await;
    let s = Scratch::new("burst");
    let wasm = s.plugin("flood", "flood", Some(&gate.grant()));
    let plugin = Runtime::new(&limits, None).unwrap().load(&wasm).await.unwrap();
    let input = json!({ "authority": gate.authority(), "count": count }).to_string();
    let attack = {
        let plugin = plugin.clone();
        tokio::spawn(async move { plugin.call("burst", &input, inv()).await })
    };
    gate.holds(held).await;
    let benign = plugin.call("hold", r#"{"mb": 0}"#, inv()).await.unwrap();
    assert_eq!(benign.json, r#"{"held":0}"#);
    assert!(!attack.is_finished(), "the burst is still waiting at the gate");
    gate.open();
    let out = attack.await.unwrap().unwrap();
    assert_eq!(gate.received(), held, "the refused requests never left the host");
    let out: Value = serde_json::from_str(&out.json).unwrap();
    out["results"].as_array().unwrap().clone()
}

#[tokio::test]
async fn outgoing_http_requests_are_bounded_at_once_and_per_call() {
    let at_once = {
        let mut l = limits();
        l.call.max_http_concurrent = 2;
        l
    };
    let results = burst(at_once, 4, 2).await;
    assert_eq!(
        results[..2],
        [json!({"status": 200}), json!({"status": 200})],
        "{results:?}"
    );
    for refused in &results[2..] {
        let text = refused["error"].as_str().unwrap();
        assert!(text.contains("limits.max_http_concurrent = 2"), "{text}");
    }

    let in_total = {
        let mut l = limits();
        l.call.max_http_requests = 3;
        l
    };
    let results = burst(in_total, 5, 3).await;
    assert_eq!(
        results.iter().filter(|r| r["status"] == 200).count(),
        3,
        "{results:?}"
    );
    for refused in &results[3..] {
        let text = refused["error"].as_str().unwrap();
        assert!(text.contains("limits.max_http_requests = 3"), "{text}");
    }
}

/// `wasmhub call flood.log` with `input` and a budget of 20 lines: its stderr.
fn logged(input: &str) -> String {
    called("flood.log", input)
}

/// `wasmhub call TOOL` (plugin `flood`, no grants) with `input` and a budget of 20
/// lines: its stderr.
fn called(tool: &str, input: &str) -> String {
    let s = Scratch::new("log-budget");
    s.plugin("flood", "flood", None);
    let data = Scratch::new("log-budget-data");
    let out = Command::new(env!("CARGO_BIN_EXE_wasmhub"))
        .env("WASMHUB_LOG", "info")
        .args(["call", tool, input, "--set", "limits.log_lines=20", "--plugins"])
        .arg(&s.0)
        .arg("--data")
        .arg(&data.0)
        .output()
        .expect("run wasmhub call");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_logging_in_a_loop_writes_its_budget_and_one_summary_line() {
    // The real `wasmhub serve`: the flood logs 500 lines, then waits at the gate
    // (its call is still in progress) while a benign call answers.
    let gate = Gate::start().await;
    let s = Scratch::new("log-budget-serve");
    s.plugin("flood", "flood", Some(&gate.grant()));
    s.plugin("adversary", "a", None);
    let data = Scratch::new("log-budget-serve-data");
    let mut hub = binary::serve(&s.0, &data.0, &["limits.log_lines=20"]);
    let addr = hub.addr;
    let flood =
        json!({"calls": [{"tool": "flood.log", "input": {"times": 500, "then_get": gate.authority()}}]});
    let attack = tokio::spawn(async move { client::post(addr, "/api/hub/call", &flood).await.json().await });
    gate.holds(1).await;
    let benign = json!({"calls": [{"tool": "a.echo", "input": {"x": 1}}]});
    let out = client::post(addr, "/api/hub/call", &benign).await.json().await;
    assert_eq!(out["results"][0]["result"], json!({"x": 1}), "{out}");
    assert!(!attack.is_finished(), "the flood's call is still in progress");
    gate.open();
    let out = attack.await.unwrap();
    assert_eq!(out["results"][0]["result"], json!({"logged": 500}), "{out}");
    // The summary is written when the call ends.
    hub.stderr.wait_for("lines suppressed", PATIENCE);
    let stderr = hub.stderr.seen().join("\n");
    let lines = stderr.lines().filter(|l| l.contains("flood line")).count();
    assert_eq!(lines, 20, "{stderr}");
    let summaries: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("lines suppressed"))
        .collect();
    assert_eq!(summaries.len(), 1, "{stderr}");
    assert!(
        summaries[0].contains("480 lines suppressed (limits.log_lines = 20 per call)"),
        "{stderr}"
    );
    drop(hub);

    // Lines the log level filters are neither written nor counted.
    let stderr = logged(r#"{"times": 500, "level": "debug"}"#);
    assert!(
        !stderr.contains("flood line") && !stderr.contains("suppressed"),
        "{stderr}"
    );
}

#[test]
fn host_written_lines_about_a_call_count_against_its_log_budget() {
    // 100 requests to a host the plugin was not granted: the host logs each denial
    // about the call, and those lines share the call's budget of 20.
    let stderr = called("flood.burst", r#"{"authority": "127.0.0.1:9", "count": 100}"#);
    let denied = stderr
        .lines()
        .filter(|l| l.contains("HTTP request denied"))
        .count();
    assert_eq!(denied, 20, "{stderr}");
    let summaries: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("lines suppressed"))
        .collect();
    assert_eq!(summaries.len(), 1, "{stderr}");
    assert!(
        summaries[0].contains("80 lines suppressed (limits.log_lines = 20 per call)"),
        "{stderr}"
    );
    // Nothing else was written about the call.
    let call_lines = stderr
        .lines()
        .filter(|l| l.contains("plugin flood call "))
        .count();
    assert_eq!(call_lines, 21, "{stderr}");
}

// Two workers, as a served hub has: the attack loop below is one task calling the
// hub in-process back to back, and a call that needs no wait never yields, so on
// one thread it could keep the test's own checks from running for minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_plugin_error_is_cut_at_the_runtime_boundary() {
    let s = Scratch::new("big-error");
    let plugin = runtime().load(&s.plugin("flood", "flood", None)).await.unwrap();
    let failure = plugin
        .call("fail", r#"{"bytes": 1048576}"#, inv())
        .await
        .unwrap_err();
    let CallFailure::Plugin { code, message } = failure else {
        panic!("{failure:?}");
    };
    assert_eq!(code, ErrorCode::PluginError);
    assert!(
        message.ends_with("… [truncated, 1048576 bytes]"),
        "{}",
        &message[message.len() - 60..]
    );
    assert_eq!(message.len(), 16 * 1024 + "… [truncated, 1048576 bytes]".len());

    // What the client, the model and the audit log get is that bounded text. The
    // attack posts 1 MB errors back to back while a benign call answers among them.
    let dir = crate::support::hub::plugins(&[("flood", "flood"), ("adversary", "a")], &[]);
    let h = crate::support::hub::hub(&dir, |c| c.limits.call.plugin_text_kb = 1).await;
    let (stop, rounds) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let attack = {
        let (hub, stop, rounds) = (h.hub.clone(), stop.clone(), rounds.clone());
        tokio::spawn(async move {
            let mut last = Value::Null;
            while !stop.load(Ordering::SeqCst) {
                last = hub_call(&hub, "flood.fail", json!({"bytes": 1048576})).await;
                assert_eq!(last["error"]["code"], "plugin_error", "{last}");
                rounds.fetch_add(1, Ordering::SeqCst);
                // A client's next request comes over the network: let others run.
                tokio::task::yield_now().await;
            }
            last
        })
    };
    let done = |n: usize| {
        let rounds = rounds.clone();
        async move { (rounds.load(Ordering::SeqCst) >= n).then_some(()) }
    };
    until("a 1 MB error", || done(1)).await;
    let benign = h.call("a.echo", json!({"x": 1})).await;
    assert_eq!(benign["result"], json!({"x": 1}), "{benign}");
    // The attack goes on after the benign call answered.
    let after = rounds.load(Ordering::SeqCst) + 1;
    until("one more 1 MB error", || done(after)).await;
    stop.store(true, Ordering::SeqCst);
    let r = attack.await.unwrap();
    let text = r.to_string();
    assert!(
        text.len() < 4096 && text.contains("[truncated, 1048576 bytes]"),
        "{}",
        text.len()
    );
    let records = h.hub.calls(10, &wasmhub::hub::Visible::All).unwrap();
    assert_eq!(records[0].tool, "flood.fail", "the newest record is the attack's");
    let stored = serde_json::to_string(&records[0]).unwrap();
    assert!(
        stored.len() < 4096 && stored.contains("[truncated, 1048576 bytes]"),
        "{}",
        stored.len()
    );
}

#[tokio::test]
async fn instances_together_stay_within_the_memory_budget() {
    let s = Scratch::new("memory-budget");
    let wasm = s.plugin("flood", "flood", None);
    let caps = {
        let mut l = limits();
        l.pool.memory_budget_mb = 24;
        l
    };
    let rt = Runtime::new(&caps, None).unwrap();
    let plugin = rt.load(&wasm).await.unwrap();
    // One call holds 16 MiB (within its own 64 MiB limit) for a while...
    let holder = {
        let plugin = plugin.clone();
        tokio::spawn(async move { plugin.call("hold", r#"{"mb": 16, "ms": 2000}"#, inv()).await })
    };
    while rt.memory_in_use() < 16 << 20 {
        assert!(!holder.is_finished(), "{:?}", holder.await);
        tokio::task::yield_now().await;
    }
    // ...so another 16 MiB do not fit in the 24 MiB budget: refused, retryable.
    let failure = plugin.call("hold", r#"{"mb": 16}"#, inv()).await.unwrap_err();
    assert_eq!(failure, CallFailure::MemoryBudget { budget_mb: 24 });
    assert_eq!(failure.code(), ErrorCode::CallLimit);
    assert!(
        failure.to_string().contains("limits.memory_budget_mb"),
        "{failure}"
    );
    // A small call still fits, and once the holder is done the budget is free again.
    assert!(plugin.call("hold", r#"{"mb": 1}"#, inv()).await.is_ok());
    holder.await.unwrap().unwrap();
    assert_eq!(rt.memory_in_use(), 0);
    assert!(plugin.call("hold", r#"{"mb": 16}"#, inv()).await.is_ok());
}

#[tokio::test]
async fn a_load_waits_for_the_memory_budget_then_is_rejected_naming_it() {
    let s = Scratch::new("memory-budget-load");
    let wasm = s.plugin("flood", "flood", None);
    let caps = {
        let mut l = limits();
        l.pool.memory_budget_mb = 22;
        l.load.timeout_ms = 5_000;
        l
    };
    let rt = Runtime::new(&caps, None).unwrap();
    let plugin = rt.load(&wasm).await.unwrap();
    // A call holds all but a few hundred KiB of the budget: too little for the
    // initial memory of another instance.
    let holder = {
        let plugin = plugin.clone();
        tokio::spawn(async move { plugin.call("hold", r#"{"mb": 20, "ms": 500}"#, inv()).await })
    };
    while rt.memory_in_use() < 20 << 20 {
        assert!(!holder.is_finished(), "{:?}", holder.await);
        tokio::task::yield_now().await;
    }
    assert!(
        plugin.call("hold", r#"{"mb": 0}"#, inv()).await.is_err(),
        "the budget is full"
    );
    // The load waits for the holder, then succeeds.
    let again = s.plugin("flood", "again", None);
    rt.load(&again).await.unwrap();
    assert!(holder.is_finished());

    // A budget no instance fits in: the load is rejected once its time is up.
    let none = {
        let mut l = limits();
        l.pool.memory_budget_mb = 0;
        l.load.timeout_ms = 200;
        l
    };
    let problems = Runtime::new(&none, None)
        .unwrap()
        .load(&wasm)
        .await
        .unwrap_err()
        .problems;
    let text = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("(0 MiB, limits.memory_budget_mb) was used up"),
        "{text}"
    );
}

/// `hub_call` of one operation on `hub` as the local operator: the per-call result.
async fn hub_call(hub: &wasmhub::hub::Hub, tool: &str, input: Value) -> Value {
    let args = json!({ "calls": [{ "tool": tool, "input": input }] });
    let request = wasmhub::hub::MetaToolRequest::parse("hub_call", args).unwrap();
    let context = wasmhub::hub::CallContext::new(hub.local_operator());
    let mut out = hub.invoke(request, context).await.expect("hub_call runs");
    out["results"][0].take()
}
