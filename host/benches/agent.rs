//! The agent loop's own cost (`cargo bench -p wasmhub --bench agent`).
//!
//! 1. Overhead per step: an in-process hub (real router, loop, sled store on disk
//!    with a flush at every `finish-step`) runs turns of 10 steps against the
//!    scripted upstream of the e2e tests answering at once with a `hub_list` tool
//!    call (the registry is empty, so the tool costs next to nothing). A step's
//!    time is the turn's time divided by its steps; the model's share is measured
//!    by sending the same request straight to the upstream, and subtracted.
//! 2. 500 concurrent chats, each streaming a 20-chunk answer with 5 ms between
//!    chunks: every stream must end with `finish` and `[DONE]` and carry no error;
//!    peak RSS (VmHWM from /proc/self/status) is reported.
//! 3. Resume memory ([`resume`]): a 10 MB turn resumed half way, with and without
//!    the `agent.resume_buffer_kb` budget, peak RSS growth side by side.
//!
//! Prints medians; the `RESULT` lines are for scripts.

#[path = "agent/resume.rs"]
mod resume;
#[path = "../tests/e2e/support/mod.rs"]
#[allow(dead_code)]
mod support;

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::client;
use support::upstream::{CHAT, Frame, Reply, Upstream};
use wasmhub::config::Config;

const TURNS: usize = 40;
const STEPS: u32 = 10;
const CHATS: usize = 500;

fn chunk(delta: Value, finish: Option<&str>) -> Frame {
    Frame::Data(json!({"id": "c", "object": "chat.completion.chunk", "model": "m1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
}

fn tool_step() -> Reply {
    Reply::sse(vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "hub_list", "arguments": "{}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        Frame::Data("[DONE]".into()),
    ])
}

fn streamed_answer(chunks: usize, gap: Duration) -> Reply {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for i in 0..chunks {
        frames.push(Frame::Delay(gap));
        frames.push(chunk(json!({"content": format!("word{i} ")}), None));
    }
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(Frame::Data("[DONE]".into()));
    Reply::sse(frames)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// A `/proc/self/status` figure in KiB (`VmRSS:`, `VmHWM:`); 0 when unknown.
fn status_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn body(chat: &str) -> Value {
    json!({"id": chat, "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]})
}

/// Runs one chat to its end; returns (chunk count, error text if any, saw finish).
async fn run_chat(addr: std::net::SocketAddr, chat: &str) -> (usize, Option<String>, bool) {
    let resp = client::post(addr, "/api/chat", &body(chat)).await;
    if resp.status != 200 {
        let status = resp.status;
        return (
            0,
            Some(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&resp.bytes().await)
            )),
            false,
        );
    }
    let (events, _) = resp.events(Duration::from_secs(300)).await;
    let mut error = None;
    let mut finished = false;
    for e in &events {
        let v: Value = match serde_json::from_str(e) {
            Ok(v) => v,
            Err(_) if e == "[DONE]" => continue,
            Err(err) => return (events.len(), Some(format!("bad chunk {e}: {err}")), false),
        };
        if let Err(err) = serde_json::from_value::<wasmhub::llm::UiChunk>(v.clone()) {
            error = Some(format!("a chunk the client rejects ({err}): {e}"));
        }
        match v["type"].as_str() {
            Some("error") => error = Some(v["errorText"].to_string()),
            Some("finish") => finished = true,
            _ => {}
        }
    }
    if events.last().map(String::as_str) != Some("[DONE]") {
        error = error.or(Some("no [DONE]".into()));
    }
    (events.len(), error, finished)
}

/// A hub on `data` whose default model is the scripted `upstream`, `tune`d.
async fn hub(
    upstream: &Upstream,
    data: &std::path::Path,
    tune: impl FnOnce(&mut Config),
) -> support::hub::Hub {
    let mut config = Config {
        providers: vec![support::hub::provider(
            "scripted",
            &upstream.base_url(),
            &["m*"],
            "max_retries = 0",
        )],
        data_dir: data.to_path_buf(),
        ..Config::default()
    };
    config.agent.model = Some("scripted/m1".into());
    tune(&mut config);
    support::hub::start_with(config).await
}

/// Turns of `STEPS` steps, and every one of the concurrent chats at once: the
/// bench measures the loop's cost under load, not the surface's admission limits.
fn loop_bench(config: &mut Config) {
    config.agent.max_steps = STEPS;
    config.concurrency.chat = CHATS;
    config.concurrency.queue = CHATS;
}

async fn step_overhead(scratch: &std::path::Path) -> f64 {
    let upstream = Upstream::start().await;
    upstream.set_default(CHAT, tool_step());
    let hub = hub(&upstream, &scratch.join("steps"), loop_bench).await;
    // Warm up the connection pool and the store.
    run_chat(hub.addr, "warm").await;
    let mut per_step = Vec::new();
    for i in 0..TURNS {
        let t = Instant::now();
        let (_, error, finished) = run_chat(hub.addr, &format!("turn-{i}")).await;
        assert!(error.is_none() && finished, "turn {i}: {error:?}");
        per_step.push(t.elapsed().as_secs_f64() * 1e3 / STEPS as f64);
    }
    // The model's share: the same request straight to the upstream, read to the end.
    let upstream_addr: std::net::SocketAddr = upstream
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .parse()
        .unwrap();
    let request = upstream.requests().last().unwrap().json();
    let mut direct = Vec::new();
    for _ in 0..TURNS * 5 {
        let t = Instant::now();
        let resp = client::post(upstream_addr, CHAT, &request).await;
        resp.bytes().await;
        direct.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (step, model) = (median(per_step), median(direct));
    println!("per step, median over {TURNS} turns of {STEPS} steps: {step:.3} ms (store flushed each step)");
    println!("the scripted model alone (direct request, median):       {model:.3} ms");
    let overhead = step - model;
    println!("loop overhead per step (median step - model):            {overhead:.3} ms");
    overhead
}

async fn concurrent(scratch: &std::path::Path) -> (usize, u64, f64) {
    let upstream = Upstream::start().await;
    upstream.set_default(CHAT, streamed_answer(20, Duration::from_millis(5)));
    let hub = hub(&upstream, &scratch.join("concurrent"), loop_bench).await;
    let before = status_kb("VmHWM:");
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..CHATS {
        let addr = hub.addr;
        tasks.spawn(async move { run_chat(addr, &format!("chat-{i}")).await });
    }
    let mut errors = Vec::new();
    let mut ok = 0;
    while let Some(r) = tasks.join_next().await {
        let (_, error, finished) = r.expect("chat task");
        match (error, finished) {
            (None, true) => ok += 1,
            (e, _) => errors.push(e.unwrap_or_else(|| "no finish chunk".into())),
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let peak = status_kb("VmHWM:");
    println!(
        "{CHATS} concurrent chats: {ok} complete, {} errors, {secs:.2} s wall; peak RSS {} MiB (before: {} MiB)",
        errors.len(),
        peak / 1024,
        before / 1024
    );
    if let Some(e) = errors.first() {
        println!("first error: {e}");
    }
    (errors.len(), peak, secs)
}

fn main() {
    resume::child_run();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let scratch = std::env::temp_dir().join(wasmhub::ids::new_id("wasmhub-agent-bench"));
    std::fs::create_dir_all(&scratch).unwrap();
    let (overhead, (errors, peak, secs)) =
        runtime.block_on(async { (step_overhead(&scratch).await, concurrent(&scratch).await) });
    let _ = std::fs::remove_dir_all(&scratch);
    let (bounded, unbounded) = resume::compare();
    println!("RESULT agent_resume_peak_growth_kb={bounded}");
    println!("RESULT agent_resume_unbounded_peak_growth_kb={unbounded}");
    println!("RESULT agent_step_overhead_ms={overhead:.3}");
    println!("RESULT agent_concurrent_errors={errors}");
    println!("RESULT agent_concurrent_peak_rss_kb={peak}");
    println!("RESULT agent_concurrent_wall_s={secs:.2}");
    assert_eq!(errors, 0, "concurrent chats failed");
}
