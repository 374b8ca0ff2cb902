//! What a long turn costs in memory when a client resumes it: a 10 MB answer
//! (1 KiB deltas) with a reload half way, once with `agent.resume_buffer_kb` at its
//! default (1024: the turn keeps a tail and a joiner gets a replay of the message)
//! and once at 1 GiB (every chunk kept, as before the budget). Each run is a
//! child process of this bench, so each has its own peak RSS (VmHWM); the two
//! alternate, three times each, and the medians and their ratio are printed.

use super::support::client;
use super::support::upstream::{Frame, Reply, Upstream};
use super::{chunk, median};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use wasmhub::config::Config;

const CHILD: &str = "WASMHUB_BENCH_RESUME_KB";
const HALF: usize = 5 << 20;
const ROUNDS: usize = 3;

/// In a child run: runs the scenario with the budget it was given and exits.
pub fn child_run() {
    let Some(kb) = std::env::var(CHILD).ok().and_then(|v| v.parse::<usize>().ok()) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let grew = runtime.block_on(scenario(kb));
    println!("GREW_KB={grew}");
    std::process::exit(0);
}

/// Runs both budgets side by side in child processes; the two medians (KiB of
/// peak RSS growth).
pub fn compare() -> (u64, u64) {
    let (mut bounded, mut unbounded) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        bounded.push(child(1024) as f64);
        unbounded.push(child(1 << 20) as f64);
    }
    let (b, u) = (median(bounded) as u64, median(unbounded) as u64);
    println!(
        "10 MB turn resumed half way, peak RSS growth (median of {ROUNDS}): {} MiB with \
         resume_buffer_kb = 1024, {} MiB keeping every chunk ({:.2}x)",
        b / 1024,
        u / 1024,
        u as f64 / b.max(1) as f64
    );
    (b, u)
}

fn child(kb: usize) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD, kb.to_string())
        .output()
        .expect("the bench runs itself");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("GREW_KB="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "the child run failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn rss_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The 10 MB turn with a reload half way; the peak RSS growth in KiB.
async fn scenario(kb: usize) -> u64 {
    let scratch = std::env::temp_dir().join(wasmhub::ids::new_id("wasmhub-resume-bench"));
    let upstream = Upstream::start().await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let piece = "x".repeat(1023) + " ";
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let half: Vec<Frame> = (0..HALF / 1024)
        .map(|_| chunk(json!({"content": piece}), None))
        .collect();
    frames.extend(half.iter().cloned());
    frames.push(Frame::Until(gate.clone()));
    frames.extend(half);
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(Frame::Data("[DONE]".into()));
    upstream.push(Reply::sse(frames));
    let mut config = Config {
        providers: vec![super::support::hub::provider(
            "scripted",
            &upstream.base_url(),
            &["m*"],
            "max_retries = 0",
        )],
        data_dir: scratch.clone(),
        ..Config::default()
    };
    config.agent.model = Some("scripted/m1".into());
    config.agent.resume_buffer_kb = kb;
    config.agent.lagging_watcher_kb = config.agent.lagging_watcher_kb.max(kb);
    let hub = super::support::hub::start_with(config).await;
    let before = rss_kb("VmRSS:");
    let body = json!({"id": "long", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]});
    let mut first = client::post(hub.addr, "/api/chat", &body).await;
    let mut got = 0;
    while got < HALF {
        let Some(event) = first.next_event().await else {
            panic!("the first half")
        };
        got += event.len().saturating_sub(40);
    }
    drop(first);
    let again = client::send(hub.addr, http::Method::GET, "/api/chat/long/stream", None, &[]).await;
    gate.notify_one();
    let (events, _) = again.events(Duration::from_secs(120)).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    drop(events);
    let grew = rss_kb("VmHWM:").saturating_sub(before);
    let _ = std::fs::remove_dir_all(&scratch);
    grew
}
